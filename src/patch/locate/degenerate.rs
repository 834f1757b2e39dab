//! Degenerate edits: what a weak model's answer does to lines the task is not about. Pure.
//!
//! Each change block of a hunk (removed lines followed by as many added lines) is read pair by pair, the n-th removed
//! line with the n-th added one:
//! - a line with content replaced by whitespace only, longer than the line's own indentation (a message turned into
//!   a thousand spaces), is refused: no task asks for that, and a line to be emptied is written empty;
//! - a line whose words stay and only the spacing between them changes (a docstring double-spaced), in a file whose
//!   edit also changes something real, is put back as it was (the pair becomes a context line): the model's noise,
//!   set aside as `tidy` sets aside hunks that change nothing. When every change of the file is such a spacing
//!   change, the task is about spacing, and the edit stays as written.
//!
//! What stays as written: a change of indentation (a re-indent), of trailing whitespace, an emptied line, and blocks
//! whose removed and added counts differ (no pairs to read).

use std::borrow::Cow;

use super::{Hunk, HunkLine};
use crate::error::{Error, Result, excerpt};

/// How one removed/added pair changes its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// Something real changes (or nothing at all).
    Real,
    /// Only the spacing inside the line (its indentation and its end aside).
    Spacing,
    /// A line with content became whitespace only, longer than its indentation.
    Blanked,
}

fn indentation(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

fn pair(removed: &str, added: &str) -> Pair {
    let (r, a) = (removed.trim(), added.trim());
    if !r.is_empty() && a.is_empty() && added.len() > indentation(removed).len() {
        return Pair::Blanked;
    }
    let squeezed = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    if r != a && squeezed(r) == squeezed(a) {
        return Pair::Spacing;
    }
    Pair::Real
}

/// Every change block of `hunk` with its pairs: (index of the block's first removed line, removed count, pairs).
fn blocks(hunk: &Hunk) -> Vec<(usize, usize, Vec<Pair>)> {
    let lines = &hunk.lines;
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        while i < lines.len() && matches!(lines[i], HunkLine::Remove(_)) {
            i += 1;
        }
        let removed = i - start;
        let adds = i;
        while i < lines.len() && matches!(lines[i], HunkLine::Add(_)) {
            i += 1;
        }
        let added = i - adds;
        if removed > 0 && removed == added {
            let pairs = (0..removed)
                .map(|k| match (&lines[start + k], &lines[adds + k]) {
                    (HunkLine::Remove(r), HunkLine::Add(a)) => pair(r, a),
                    _ => Pair::Real,
                })
                .collect();
            out.push((start, removed, pairs));
        }
        if i == start {
            i += 1;
        }
    }
    out
}

/// Whether a hunk changes anything besides its paired lines (an insertion, a deletion, an unpaired block).
fn changes_unpaired(hunk: &Hunk, paired: usize) -> bool {
    let changed = hunk
        .lines
        .iter()
        .filter(|l| matches!(l, HunkLine::Remove(_) | HunkLine::Add(_)))
        .count();
    changed > 2 * paired
}

/// The hunks of one file's edit with its degenerate pairs dealt with: refused when a line is blanked; spacing-only
/// pairs put back when something real also changes in the file. Borrowed as they are when nothing changes.
pub fn screen<'h>(path: &str, hunks: Cow<'h, [Hunk]>) -> Result<Cow<'h, [Hunk]>> {
    let found: Vec<Vec<(usize, usize, Vec<Pair>)>> = hunks.iter().map(blocks).collect();
    for (h, bl) in hunks.iter().zip(&found) {
        for (start, _, pairs) in bl {
            if let Some(k) = pairs.iter().position(|p| *p == Pair::Blanked) {
                let (HunkLine::Remove(r), Some(HunkLine::Add(a))) =
                    (&h.lines[start + k], h.lines.get(start + pairs.len() + k))
                else {
                    continue;
                };
                return Err(Error::ModelAnswer(format!(
                    "the answer turns the line {:?} of {path} into whitespace only ({} characters): a degenerate \
                     edit, not a patch; propose again (a line to be emptied is written empty)",
                    excerpt(r.trim(), 80),
                    a.len()
                )));
            }
        }
    }
    let spacing = found
        .iter()
        .flatten()
        .flat_map(|b| &b.2)
        .any(|p| *p == Pair::Spacing);
    let real = found
        .iter()
        .flatten()
        .flat_map(|b| &b.2)
        .any(|p| *p == Pair::Real)
        || hunks
            .iter()
            .zip(&found)
            .any(|(h, bl)| changes_unpaired(h, bl.iter().map(|b| b.1).sum()));
    if !spacing || !real {
        return Ok(hunks);
    }
    let mut out: Vec<Hunk> = Vec::with_capacity(hunks.len());
    for (h, bl) in hunks.iter().zip(&found) {
        out.push(put_back(h, bl));
    }
    Ok(Cow::Owned(out))
}

/// `hunk` with each spacing-only pair turned back into a context line of its removed side.
fn put_back(hunk: &Hunk, blocks: &[(usize, usize, Vec<Pair>)]) -> Hunk {
    let mut lines = Vec::with_capacity(hunk.lines.len());
    let mut i = 0;
    for (start, n, pairs) in blocks {
        lines.extend_from_slice(&hunk.lines[i..*start]);
        for (k, p) in pairs.iter().enumerate() {
            let (r, a) = (&hunk.lines[start + k], &hunk.lines[start + n + k]);
            match (p, r) {
                (Pair::Spacing, HunkLine::Remove(text)) => {
                    lines.push(HunkLine::Context(text.clone()))
                }
                _ => {
                    lines.push(r.clone());
                    lines.push(a.clone());
                }
            }
        }
        i = start + 2 * n;
    }
    lines.extend_from_slice(&hunk.lines[i..]);
    Hunk {
        lines,
        ..hunk.clone()
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

    fn screened(hunks: Vec<Hunk>) -> Result<Vec<Hunk>> {
        screen("a.py", Cow::Owned(hunks)).map(Cow::into_owned)
    }

    #[test]
    fn a_line_of_text_turned_into_spaces_is_refused() {
        let h = hunk(vec![
            C("def greet():".into()),
            R("    print(\"Hello, world\")".into()),
            Add(" ".repeat(1000)),
        ]);
        let e = screened(vec![h]).unwrap_err().to_string();
        assert!(e.contains("into whitespace only (1000 characters)"), "{e}");
        assert!(e.contains("print(\\\"Hello, world\\\")"), "{e}");
    }

    #[test]
    fn an_emptied_line_or_one_left_with_its_indentation_is_an_edit() {
        for blank in ["", "    "] {
            let h = hunk(vec![R("    x = 1".into()), Add(blank.into())]);
            assert_eq!(screened(vec![h.clone()]).unwrap(), vec![h]);
        }
    }

    #[test]
    fn spacing_changed_beside_a_real_change_is_put_back() {
        let h = hunk(vec![
            R("def add(a, b):".into()),
            R("    \"\"\"Return the sum.\"\"\"".into()),
            Add("def plus(a, b):".into()),
            Add("    \"\"\"Return  the  sum.\"\"\"".into()),
            C("    return a + b".into()),
        ]);
        assert_eq!(
            screened(vec![h]).unwrap(),
            vec![hunk(vec![
                R("def add(a, b):".into()),
                Add("def plus(a, b):".into()),
                C("    \"\"\"Return the sum.\"\"\"".into()),
                C("    return a + b".into()),
            ])]
        );
    }

    #[test]
    fn an_edit_that_only_changes_spacing_is_about_spacing_and_stays() {
        let h = hunk(vec![R("x=a+b".into()), Add("x = a + b".into())]);
        assert_eq!(screened(vec![h.clone()]).unwrap(), vec![h]);
    }

    #[test]
    fn a_reindent_or_trailing_whitespace_is_not_spacing_inside_a_line() {
        let h = hunk(vec![
            R("  if x:".into()),
            R("  y = 1  ".into()),
            Add("    if x:".into()),
            Add("        y = 1".into()),
            Add("z = 2".into()),
        ]);
        assert_eq!(screened(vec![h.clone()]).unwrap(), vec![h]);
        let h = hunk(vec![
            R("if x:".into()),
            R("    y = 1".into()),
            Add("    if x:".into()),
            Add("        y = 2".into()),
        ]);
        assert_eq!(screened(vec![h.clone()]).unwrap(), vec![h]);
    }
}
