//! Re-indentation of the lines a hunk adds when it matched with indentation ignored: from the model's indentation
//! (its widths, its step) to the file's (its columns or tabs, its step), guided by the pairs of indentation the
//! hunk's matched lines give.
//!
//! What it is not: it does not decide that a hunk matched with indentation ignored ([`super::search`]), and it
//! touches only added lines: context lines keep the file's bytes, whatever tier matched them ([`super::render`]).

use std::collections::HashSet;

use super::old_side;
use crate::patch::{Hunk, HunkLine, MatchTier};

/// The leading whitespace of `s`.
fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// The width in columns of the whitespace `ws`, a tab counting `tab` columns.
fn width(ws: &str, tab: usize) -> usize {
    ws.chars().map(|c| if c == '\t' { tab } else { 1 }).sum()
}

/// The file's indentation step in columns: the smallest positive indentation of its space-indented lines (4 if none).
pub(super) fn indent_unit(keys: &[&str]) -> usize {
    keys.iter()
        .filter(|k| !k.trim().is_empty())
        .map(|k| leading_ws(k))
        .filter(|w| !w.is_empty() && !w.contains('\t'))
        .map(str::len)
        .min()
        .unwrap_or(4)
}

/// Maps the model's indentation to the file's for the added lines of a hunk matched with indentation ignored.
///
/// Every matched non-blank line gives a pair (the model's indentation width, the file's indentation). An added
/// line indented like one of the model's matched lines gets that line's file indentation; otherwise the nearest
/// pair is shifted by the difference in levels (the model's level step is the gcd of its indentation widths).
pub(super) struct Reindent {
    /// (model width, file indentation): the first pair of each model width, removed lines' pairs first.
    pairs: Vec<(usize, String)>,
    model_unit: usize,
    file_unit: usize,
    use_tabs: bool,
}

/// The greatest common divisor of `a` and `b` (`a` when `b` is 0).
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Reindent {
    /// The mapping for `hunk`, whose old side matched the file's lines `matched` at `tier`, in a file indented by
    /// `file_unit` columns; `None` when the added lines are to be kept as written (a tier that compared indentation,
    /// or the model's indentation is the file's, or is off by only a lost prefix space).
    pub(super) fn new(
        hunk: &Hunk,
        matched: &[&str],
        tier: MatchTier,
        file_unit: usize,
    ) -> Option<Reindent> {
        if matches!(tier, MatchTier::Exact | MatchTier::TrailingWhitespace) {
            return Reindent::lost_on_added(hunk, matched, file_unit);
        }
        if !matches!(tier, MatchTier::Indentation | MatchTier::UnicodeFolded) {
            return None;
        }
        let matched_pairs: Vec<(&str, &str)> = old_side(hunk)
            .zip(matched.iter().copied())
            .filter(|(m, _)| !m.trim().is_empty())
            .collect();
        if matched_pairs
            .iter()
            .all(|(m, f)| leading_ws(m) == leading_ws(f))
        {
            return None;
        }
        // Every matched line one space short, in a file indented with spaces: the model dropped the ' ' prefix of
        // its context lines (the hunk's own lines are in file columns already). No indentation style differs by
        // exactly one column everywhere.
        if matched_pairs.iter().all(|(m, f)| {
            let (mw, fw) = (leading_ws(m), leading_ws(f));
            !fw.contains('\t') && !mw.contains('\t') && fw.len() == mw.len() + 1
        }) {
            return None;
        }
        // Removed lines first: they are written with the same prefix discipline as the added lines, so when the
        // context lines drifted differently (a lost prefix space), an added line still finds its true level.
        let removed: HashSet<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Remove(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        let (mut ordered, others): (Vec<_>, Vec<_>) =
            matched_pairs.iter().partition(|(m, _)| removed.contains(m));
        ordered.extend(others);
        let mut pairs: Vec<(usize, String)> = ordered
            .iter()
            .map(|(m, f)| (width(leading_ws(m), 4), leading_ws(f).to_string()))
            .collect();
        let model_widths = hunk.lines.iter().filter_map(|l| match l {
            HunkLine::Context(s) | HunkLine::Remove(s) | HunkLine::Add(s)
                if !s.trim().is_empty() =>
            {
                Some(width(leading_ws(s), 4))
            }
            _ => None,
        });
        let model_unit = model_widths.fold(0, gcd);
        let use_tabs = pairs.iter().any(|(_, f)| f.contains('\t'));
        // `apply` only ever uses the first pair of each model width.
        let mut widths = HashSet::new();
        pairs.retain(|(w, _)| widths.insert(*w));
        Some(Reindent {
            pairs,
            model_unit: if model_unit == 0 { 4 } else { model_unit },
            file_unit: file_unit.max(1),
            use_tabs,
        })
    }

    /// The mapping for a hunk of removed and added lines only (a JSON edit's, a search/replace block's), matched
    /// with its indentation, whose first removed line is indented and whose added lines start at column 0: the
    /// model wrote the new text without the indentation of the line it replaces (`"old": "    return a + b"`,
    /// `"new": "return a - b"`), which leaves a line outside its block in any language that reads indentation.
    /// The added lines are shifted by that removed line's indentation, their own levels kept. `None` otherwise: a
    /// hunk with context lines says where its added lines go, and one whose added lines are indented at all is
    /// kept as written.
    fn lost_on_added(hunk: &Hunk, matched: &[&str], file_unit: usize) -> Option<Reindent> {
        if hunk.lines.iter().any(|l| matches!(l, HunkLine::Context(_))) {
            return None;
        }
        let first_removed = matched.iter().find(|l| !l.trim().is_empty())?;
        let indent = leading_ws(first_removed);
        let added: Vec<usize> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Add(s) if !s.trim().is_empty() => Some(width(leading_ws(s), 4)),
                _ => None,
            })
            .collect();
        if indent.is_empty() || added.first() != Some(&0) {
            return None;
        }
        let model_unit = added.iter().copied().fold(0, gcd);
        Some(Reindent {
            pairs: vec![(0, indent.to_string())],
            model_unit: if model_unit == 0 { 4 } else { model_unit },
            file_unit: file_unit.max(1),
            use_tabs: indent.contains('\t'),
        })
    }

    /// The added line `line` (as the model wrote it) with the file's indentation; blank lines become empty.
    pub(super) fn apply(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return String::new();
        }
        let w = width(leading_ws(line), 4);
        let text = line.trim_start();
        if let Some((_, f)) = self.pairs.iter().find(|(mw, _)| *mw == w) {
            return format!("{f}{text}");
        }
        let Some((mw, f)) = self
            .pairs
            .iter()
            .min_by_key(|(mw, _)| (mw.abs_diff(w), *mw))
        else {
            return line.to_string();
        };
        let delta = (w as f64 - *mw as f64) / self.model_unit as f64;
        let indent = if self.use_tabs {
            let levels = (f.chars().filter(|&c| c == '\t').count() as f64 + delta)
                .round()
                .max(0.0);
            "\t".repeat(levels as usize)
        } else {
            let cols = (width(f, self.file_unit) as f64 + delta * self.file_unit as f64)
                .round()
                .max(0.0);
            " ".repeat(cols as usize)
        };
        format!("{indent}{text}")
    }
}

#[cfg(test)]
mod tests {
    use crate::patch::HunkLine::{Add, Context as C, Remove as R};
    use crate::patch::MatchTier;
    use crate::patch::locate::locate_file;
    use crate::patch::locate::tests::{edit, pre};

    #[test]
    fn indentation_drift_is_reindented_to_the_file() {
        // The file uses tabs; the model wrote 4 spaces per level.
        let e = edit(
            "a",
            vec![
                C("def f():".into()),
                R("    return 1".into()),
                Add("    if x:".into()),
                Add("        return 2".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n\treturn 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n\tif x:\n\t\treturn 2\n"
        );
        assert_eq!(c.hunks[0].tier, MatchTier::Indentation);
        // The file uses 2 spaces; the model wrote none.
        let e = edit(
            "a",
            vec![
                R("x = 1".into()),
                Add("x = 2".into()),
                Add("if x:".into()),
                Add("    y()".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n  x = 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n  x = 2\n  if x:\n    y()\n"
        );
    }

    #[test]
    fn new_text_written_without_the_indentation_of_the_line_it_replaces_is_shifted_to_it() {
        // A JSON edit's hunk: the old line exact, the new one at column 0.
        let e = edit(
            "a",
            vec![R("    return a + b".into()), Add("return a - b".into())],
        );
        let c = locate_file(&e, Some(&pre("def f(a, b):\n    return a + b\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f(a, b):\n    return a - b\n"
        );
        assert_eq!(c.hunks[0].tier, MatchTier::Exact);
        // Its own levels kept, in tabs where the file has them.
        let e = edit(
            "a",
            vec![
                R("\treturn 1".into()),
                Add("if x:".into()),
                Add("    return 2".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n\treturn 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n\tif x:\n\t\treturn 2\n"
        );
        // Kept as written: a hunk with context says where its lines go, and an added line indented at all is the
        // model's choice; a line at column 0 replacing one at column 0 has nothing lost.
        for (lines, file, post) in [
            (
                vec![
                    C("def f():".into()),
                    R("    x = 1".into()),
                    Add("x = 1".into()),
                ],
                "def f():\n    x = 1\n",
                "def f():\nx = 1\n",
            ),
            (
                vec![R("    x = 1".into()), Add("  x = 2".into())],
                "def f():\n    x = 1\n",
                "def f():\n  x = 2\n",
            ),
            (
                vec![R("x = 1".into()), Add("x = 2".into())],
                "x = 1\n",
                "x = 2\n",
            ),
        ] {
            let c = locate_file(&edit("a", lines), Some(&pre(file))).unwrap();
            assert_eq!(String::from_utf8(c.post).unwrap(), post);
        }
    }

    #[test]
    fn reindenting_prefers_the_removed_lines_and_the_first_pair_of_a_width() {
        // The context line and the removed line have the same model width but different file indentation: added
        // lines follow the removed line's, also when shifted by a level (2 columns, the file's step).
        let e = edit(
            "a",
            vec![
                C("def f():".into()),
                C("\tx = 0".into()),
                R("\ty = 1".into()),
                Add("\tz = 2".into()),
                Add("\t\tw = 3".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n  x = 0\n   y = 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n  x = 0\n   z = 2\n     w = 3\n"
        );
        assert_eq!(c.hunks[0].tier, MatchTier::Indentation);
    }
}
