//! The confinement of a file narrowed to line ranges ([`crate::patch::focus`]): the model was shown only those
//! ranges and their context lines, so an old side must lie inside one shown block, every removed line and every
//! insertion point must lie inside a range (context lines may be quoted, never changed), and the refusals say which
//! line broke the rule.
//!
//! What it is not: ranges are parsed, merged and turned into shown blocks in [`crate::patch::focus`]; the search
//! itself is [`super::search`]'s, which only asks here which places count.

use crate::error::Error;
use crate::patch::focus::{self, LineRange};
use crate::patch::{Hunk, HunkLine};

/// The line ranges a narrowed file may be edited in, and the blocks (0-based, half-open) it was shown.
pub(super) struct Within<'a> {
    /// The ranges (merged, inside the file) the file may be edited in.
    pub(super) ranges: &'a [LineRange],
    blocks: Vec<(usize, usize)>,
}

impl<'a> Within<'a> {
    /// The confinement of a file of `file_len` lines to `ranges`; `None` when there are no ranges (the whole file
    /// was shown).
    pub(super) fn new(ranges: &'a [LineRange], file_len: usize) -> Option<Within<'a>> {
        (!ranges.is_empty()).then(|| Within {
            ranges,
            blocks: focus::shown_blocks(ranges, file_len)
                .iter()
                .map(|b| (b.from, b.to))
                .collect(),
        })
    }
}

impl Within<'_> {
    /// Whether the `len` lines from line index `start` lie inside one shown block.
    pub(super) fn shows(&self, start: usize, len: usize) -> bool {
        self.blocks
            .iter()
            .any(|&(from, to)| from <= start && start + len <= to)
    }

    /// The refusal of an answer that does `what` (a verb phrase) to line index `line` of `path`, outside the ranges.
    pub(super) fn refusal(&self, path: &str, what: &str, line: usize) -> Error {
        Error::ModelAnswer(format!(
            "the answer {what} line {} of {path}, outside the lines {} it was shown; widen the range or select the \
             whole file",
            line + 1,
            focus::describe(self.ranges)
        ))
    }

    /// The refusal of `hunk`, placed at `start` in a file of `file_len` lines, when it changes a line outside the
    /// ranges; `None` when every change lies inside them.
    pub(super) fn changes_outside(
        &self,
        hunk: &Hunk,
        start: usize,
        file_len: usize,
        path: &str,
    ) -> Option<Error> {
        changed_outside(hunk, start, file_len, self.ranges)
            .map(|line| self.refusal(path, "edits", line))
    }

    /// The refusal of hunk `n` (`hunk`, with an old side of `old_len` lines) whose old side matches only outside
    /// the shown blocks, first at line index `at` of a file of `file_len` lines.
    pub(super) fn refuse_elsewhere(
        &self,
        hunk: &Hunk,
        n: usize,
        at: usize,
        old_len: usize,
        file_len: usize,
        path: &str,
    ) -> Error {
        match changed_outside(hunk, at, file_len, self.ranges) {
            Some(line) => self.refusal(path, "edits", line),
            // Every change is inside the ranges, but the hunk quotes lines beyond what the model was shown.
            None if first_changed(hunk, at).is_some_and(|l| focus::contains(self.ranges, l)) => {
                Error::ModelAnswer(format!(
                    "hunk {} of {path} quotes lines {}-{}, beyond the lines it was shown ({} with their context); \
                     widen the range or select the whole file",
                    n + 1,
                    at + 1,
                    at + old_len,
                    focus::describe(self.ranges)
                ))
            }
            None => self.refusal(path, "edits", first_changed(hunk, at).unwrap_or(at)),
        }
    }
}

/// The first line index, for `hunk` placed at `start` in a file of `file_len` lines, that the hunk changes outside
/// `ranges`: a removed line outside them, or an insertion whose neighbours in the file both lie outside them.
fn changed_outside(
    hunk: &Hunk,
    start: usize,
    file_len: usize,
    ranges: &[LineRange],
) -> Option<usize> {
    let mut at = 0;
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => at += 1,
            HunkLine::Remove(_) => {
                if !focus::contains(ranges, start + at) {
                    return Some(start + at);
                }
                at += 1;
            }
            HunkLine::Add(_) => {
                // The insertion's neighbours in the file (not only within the hunk's own lines).
                let p = start + at;
                let before = p.checked_sub(1);
                let after = (p < file_len).then_some(p);
                let inside = |l: Option<usize>| l.is_some_and(|l| focus::contains(ranges, l));
                if !inside(before) && !inside(after) {
                    return after.or(before);
                }
            }
            HunkLine::WholeFile(_) => {}
        }
    }
    None
}

/// The first line index `hunk`, placed at `start`, changes (or inserts before).
fn first_changed(hunk: &Hunk, start: usize) -> Option<usize> {
    let mut at = 0;
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => at += 1,
            HunkLine::Remove(_) | HunkLine::Add(_) => return Some(start + at),
            HunkLine::WholeFile(_) => {}
        }
    }
    None
}
