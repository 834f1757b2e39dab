//! What weak models write around a good edit, set aside before anything is placed: a hunk repeated exactly (the same
//! lines, and the same line number or none), which would otherwise be refused as overlapping itself, and, in an
//! answer that changes something, hunks that change nothing (their new side equals their old side), which would
//! otherwise fail to match or overlap the real change. Pure.
//!
//! What stays refused: two different hunks on one region (a conflict: which one was meant is unknown), an answer
//! whose every hunk changes nothing, a hunk that changes nothing and matches nowhere in its file (the caller places
//! each one alone: it is a sign of a garbled answer), and a hunk that may be cut off (never set aside). Whole-file
//! answers are left as they are. The corpus bench keeps its counts with this (0 wrong, every intent-destroying
//! answer refused); dropping no-ops unchecked had let 236 cut-off answers and one garbled one through.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{EditOp, FileEdit, Hunk, HunkLine};

/// What [`tidy`] set aside.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tidied {
    /// Exact repeats of an earlier hunk of the same file.
    pub duplicates: usize,
    /// Hunks that change nothing, in an answer that changes something, with their file's path. The caller still
    /// places each one alone in its file: a hunk that changes nothing AND matches nowhere is a sign of a garbled
    /// answer (a diff inside a file's text that lost its leading spaces), which must stay a refusal.
    pub no_ops: Vec<(String, Hunk)>,
}

/// Whether `hunk` leaves its lines as they are (its new side equals its old side). A hunk that may be cut off is
/// never one: the cut-off guard must see it.
fn changes_nothing(hunk: &Hunk) -> bool {
    if hunk.maybe_cut_off
        || hunk
            .lines
            .iter()
            .any(|l| matches!(l, HunkLine::WholeFile(_)))
    {
        return false;
    }
    let old = hunk.lines.iter().filter_map(|l| match l {
        HunkLine::Context(s) | HunkLine::Remove(s) => Some(s),
        _ => None,
    });
    let new = hunk.lines.iter().filter_map(|l| match l {
        HunkLine::Context(s) | HunkLine::Add(s) => Some(s),
        _ => None,
    });
    old.eq(new)
}

/// Whether `b` repeats `a`: the same lines, and line numbers that do not tell them apart (two equal hunks the model
/// numbered differently may be meant for two equal places, which the line number then chooses between).
fn repeats(a: &Hunk, b: &Hunk) -> bool {
    a.lines == b.lines
        && match (a.old_start_hint, b.old_start_hint) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        }
}

/// The edits without repeated hunks and, when some hunk changes something, without the hunks that change nothing;
/// an edit left without hunks (and not creating its file) is left out. Borrowed as they are when nothing was set
/// aside.
pub fn tidy(edits: &[FileEdit]) -> (Cow<'_, [FileEdit]>, Tidied) {
    let something_changes = edits
        .iter()
        .any(|e| e.creates || e.op != EditOp::Edit || e.hunks.iter().any(|h| !changes_nothing(h)));
    let mut t = Tidied::default();
    let mut out: Vec<FileEdit> = Vec::with_capacity(edits.len());
    for e in edits {
        let mut kept: Vec<Hunk> = Vec::with_capacity(e.hunks.len());
        // The kept hunks by their lines, so that finding a repeat costs one lookup, not a pass over every hunk kept
        // (an answer of 100,000 hunks is read in linear time).
        let mut by_lines: HashMap<&[HunkLine], Vec<usize>> = HashMap::new();
        for h in &e.hunks {
            if something_changes && changes_nothing(h) {
                t.no_ops.push((e.path.clone(), h.clone()));
                continue;
            }
            let same = by_lines.entry(h.lines.as_slice()).or_default();
            if !h.maybe_cut_off && same.iter().any(|&k| repeats(&kept[k], h)) {
                t.duplicates += 1;
            } else {
                same.push(kept.len());
                kept.push(h.clone());
            }
        }
        if kept.is_empty() && !e.creates && e.op == EditOp::Edit && !e.hunks.is_empty() {
            continue;
        }
        out.push(FileEdit {
            path: e.path.clone(),
            creates: e.creates,
            hunks: kept,
            op: e.op.clone(),
        });
    }
    if t == Tidied::default() {
        (Cow::Borrowed(edits), t)
    } else {
        (Cow::Owned(out), t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HunkLine::{Add, Context as C, Remove as R};

    fn hunk(lines: Vec<HunkLine>) -> Hunk {
        Hunk {
            old_start_hint: None,
            lines,
            maybe_cut_off: false,
            anchor: Default::default(),
        }
    }

    fn edit(path: &str, hunks: Vec<Hunk>) -> FileEdit {
        FileEdit {
            path: path.into(),
            creates: false,
            hunks,
            op: EditOp::Edit,
        }
    }

    fn fix() -> Hunk {
        hunk(vec![R("x = 1".into()), Add("x = 2".into())])
    }

    #[test]
    fn an_exact_repeat_is_merged_into_the_first() {
        let edits = vec![edit("a.py", vec![fix(), fix(), fix()])];
        let (out, t) = tidy(&edits);
        assert_eq!(out[0].hunks, vec![fix()]);
        assert_eq!(t.duplicates, 2);
    }

    #[test]
    fn a_hunk_that_changes_nothing_is_dropped_when_another_changes_something() {
        let same = hunk(vec![R("y = 1".into()), Add("y = 1".into())]);
        let context_only = hunk(vec![C("z".into())]);
        let edits = vec![
            edit("a.py", vec![same.clone(), fix()]),
            edit("b.py", vec![context_only]),
        ];
        let (out, t) = tidy(&edits);
        assert_eq!(out.len(), 1, "b.py only had a hunk that changes nothing");
        assert_eq!(out[0].hunks, vec![fix()]);
        assert_eq!(t.no_ops.len(), 2);
    }

    #[test]
    fn an_answer_that_changes_nothing_is_left_for_its_refusal() {
        let same = hunk(vec![R("y = 1".into()), Add("y = 1".into())]);
        let edits = vec![edit("a.py", vec![same])];
        let (out, t) = tidy(&edits);
        assert_eq!(&*out, edits.as_slice());
        assert_eq!(t, Tidied::default());
    }

    #[test]
    fn different_edits_of_one_region_and_equal_hunks_numbered_apart_stay() {
        let other = hunk(vec![R("x = 1".into()), Add("x = 3".into())]);
        let edits = vec![edit("a.py", vec![fix(), other])];
        let (out, t) = tidy(&edits);
        assert_eq!(
            &*out,
            edits.as_slice(),
            "a conflict is for the locator to refuse"
        );
        assert_eq!(t, Tidied::default());
        let numbered = |n| Hunk {
            old_start_hint: Some(n),
            ..fix()
        };
        let edits = vec![edit("a.py", vec![numbered(10), numbered(20), numbered(10)])];
        let (out, t) = tidy(&edits);
        assert_eq!(out[0].hunks, vec![numbered(10), numbered(20)]);
        assert_eq!(t.duplicates, 1);
    }
}
