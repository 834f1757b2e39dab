//! Line ranges: the part of a file the model is shown and may edit (`PATH:START-END`). Pure.
//!
//! A selected file may be narrowed to one or more ranges of 1-based, inclusive line numbers. The model then sees only
//! those lines plus [`CONTEXT_LINES`] lines of context each side (marked as such), an edit must change lines inside
//! the ranges only, and a hunk's place is searched for only where the model could have read it (a range and its
//! context): a line that repeats elsewhere in the file but once in the shown lines is not ambiguous. Everything
//! else (the canonical patch, its digest, the dry run, the stale check, the apply) works on the whole file.
//!
//! Not here: deciding whether `PATH:START-END` names a range or a file whose name holds a `:` (that needs the
//! disk: see `workspace::Workspace::read_selection`).

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Lines of context shown on each side of a range (they may be quoted to locate an edit, never changed).
pub const CONTEXT_LINES: usize = 3;

/// A range of lines, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineRange {
    /// First line, 1-based.
    pub start: usize,
    /// Last line, 1-based and inclusive.
    pub end: usize,
}

impl std::fmt::Display for LineRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// The ranges each narrowed file may be edited in (merged, sorted). A selected file absent here is whole.
pub type Focus = BTreeMap<String, Vec<LineRange>>;

/// The ranges as people read them: `120-180, 300-310`.
pub fn describe(ranges: &[LineRange]) -> String {
    ranges
        .iter()
        .map(LineRange::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Split `spec` at its last `:` into a path and what may be a range suffix; `None` when it holds no `:` (or starts
/// with its only one). Nothing is checked here.
pub fn split_spec(spec: &str) -> Option<(&str, &str)> {
    let (path, suffix) = spec.rsplit_once(':')?;
    if path.is_empty() {
        return None;
    }
    Some((path, suffix))
}

/// Whether a suffix is written like a range (`DIGITS-DIGITS`), whatever the numbers.
pub fn looks_like_range(suffix: &str) -> bool {
    let Some((a, b)) = suffix.split_once('-') else {
        return false;
    };
    !a.is_empty()
        && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit())
}

/// The number of lines of `text` (a last line without a newline counts; an empty text has none).
pub fn line_count(text: &str) -> usize {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .split_inclusive('\n')
        .count()
}

/// Parse the range suffix of `path` (a file of `lines` lines), refusing anything but `START-END` with
/// `1 <= START <= END <= lines`.
pub fn parse_range(path: &str, suffix: &str, lines: usize) -> Result<LineRange> {
    let fix = format!(
        "give PATH:START-END with 1 <= START <= END <= {lines} ({path} has {lines} line{})",
        if lines == 1 { "" } else { "s" }
    );
    let bad = |what: String| {
        Err(Error::InvalidArgument(format!(
            "{path}:{suffix}: {what}; {fix}"
        )))
    };
    if !looks_like_range(suffix) {
        return bad("the part after the last `:` is not a line range".into());
    }
    let (a, b) = suffix.split_once('-').unwrap_or_default();
    let (Ok(start), Ok(end)) = (a.parse::<usize>(), b.parse::<usize>()) else {
        return bad("a line number is too large".into());
    };
    if start == 0 || end == 0 {
        return bad("line numbers start at 1".into());
    }
    if start > end {
        return bad(format!("the range starts after it ends ({start} > {end})"));
    }
    if end > lines {
        return bad(format!(
            "the range ends past the end of the file (line {end})"
        ));
    }
    Ok(LineRange { start, end })
}

/// Sort ranges and merge those that overlap or touch.
pub fn merge(mut ranges: Vec<LineRange>) -> Vec<LineRange> {
    ranges.sort();
    let mut out: Vec<LineRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end + 1 => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// One block of lines the model is shown: a range widened by the context lines (clipped to the file), as 0-based
/// half-open line indexes. Ranges whose blocks would overlap or touch are shown as one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// First and one-past-last line index of the block, context included.
    pub from: usize,
    /// One past the last line index of the block.
    pub to: usize,
    /// The ranges inside the block (1-based, inclusive).
    pub ranges: Vec<LineRange>,
}

/// The blocks shown for `ranges` (merged) of a file of `lines` lines.
pub fn shown_blocks(ranges: &[LineRange], lines: usize) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    for r in ranges {
        let from = (r.start - 1).saturating_sub(CONTEXT_LINES);
        let to = (r.end + CONTEXT_LINES).min(lines);
        match out.last_mut() {
            Some(last) if from <= last.to => {
                last.to = last.to.max(to);
                last.ranges.push(*r);
            }
            _ => out.push(Shown {
                from,
                to,
                ranges: vec![*r],
            }),
        }
    }
    out
}

/// The lines of `text` (BOM removed), each with its terminator.
pub fn lines_of(text: &str) -> Vec<&str> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .split_inclusive('\n')
        .collect()
}

/// Bytes of `text` shown for `ranges`: the blocks' lines.
pub fn shown_bytes(text: &str, ranges: &[LineRange]) -> usize {
    let lines = lines_of(text);
    shown_blocks(ranges, lines.len())
        .iter()
        .map(|b| lines[b.from..b.to].iter().map(|l| l.len()).sum::<usize>())
        .sum()
}

/// Whether 0-based line index `i` lies in one of `ranges`.
pub fn contains(ranges: &[LineRange], i: usize) -> bool {
    ranges.iter().any(|r| r.start <= i + 1 && i < r.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: usize, end: usize) -> LineRange {
        LineRange { start, end }
    }

    #[test]
    fn a_range_is_start_dash_end_within_the_file() {
        assert_eq!(parse_range("a.py", "2-4", 10).unwrap(), r(2, 4));
        assert_eq!(parse_range("a.py", "10-10", 10).unwrap(), r(10, 10));
        for (suffix, want) in [
            ("0-3", "line numbers start at 1"),
            ("5-3", "starts after it ends (5 > 3)"),
            ("3-11", "past the end of the file (line 11)"),
            ("3", "not a line range"),
            ("3-", "not a line range"),
            ("-3", "not a line range"),
            ("a-b", "not a line range"),
            (" 1-2", "not a line range"),
            ("1-99999999999999999999999", "too large"),
        ] {
            let e = parse_range("a.py", suffix, 10).unwrap_err().to_string();
            assert!(e.contains(want), "{suffix}: {e}");
            assert!(e.contains("a.py has 10 lines"), "{suffix}: {e}");
        }
        let e = parse_range("e.py", "1-1", 0).unwrap_err().to_string();
        assert!(e.contains("e.py has 0 lines"), "{e}");
    }

    #[test]
    fn overlapping_and_touching_ranges_merge() {
        assert_eq!(
            merge(vec![r(10, 20), r(1, 3), r(15, 30), r(31, 31), r(40, 41)]),
            vec![r(1, 3), r(10, 31), r(40, 41)]
        );
    }

    #[test]
    fn blocks_widen_by_the_context_and_join_when_they_meet() {
        assert_eq!(
            shown_blocks(&[r(1, 2), r(8, 9), r(30, 30)], 31),
            vec![
                Shown {
                    from: 0,
                    to: 12,
                    ranges: vec![r(1, 2), r(8, 9)]
                },
                Shown {
                    from: 26,
                    to: 31,
                    ranges: vec![r(30, 30)]
                },
            ]
        );
    }

    #[test]
    fn counts_lines_like_the_locator() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("\u{feff}a\r\nb"), 2);
        assert!(contains(&[r(2, 3)], 1) && contains(&[r(2, 3)], 2) && !contains(&[r(2, 3)], 3));
    }
}
