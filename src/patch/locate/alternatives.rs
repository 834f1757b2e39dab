//! Conflicting edits of one region, split into alternatives. Pure.
//!
//! A model unsure of the right edit sometimes offers two (or more) for the same lines: hunks whose old sides
//! overlap in the file, which [`super::locate_all`] refuses ("hunks overlap"). [`split`] turns such an answer into
//! alternative edit sets instead: each hunk is placed alone, the hunks of a file whose places overlap form a group
//! (overlap is transitive: hunks chained by overlaps are one group), and each set keeps every hunk outside the
//! groups and ONE hunk of each group, in the order the model wrote them (the first hunk of every group first). Each
//! set then goes through the normal locate and canonical diff, like any answer; the caller chooses among them.
//!
//! At most [`MAX_ALTERNATIVES`] sets (the first ones of the product of the groups' choices). A hunk that cannot be
//! placed alone is kept in every set (it is then refused there, as it would be anyway). Not split: whole-file
//! answers, deletions and moves.

use std::collections::BTreeMap;

use super::{Cancel, EditOp, FileEdit, PreImage, focus, locate_one, old_side};
use crate::error::Result;

/// The most alternative edit sets one answer gives.
pub const MAX_ALTERNATIVES: usize = 4;

/// An answer's edits as alternatives: the sets, and the regions they disagree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternatives {
    /// The alternative edit sets, at least two (none when the answer has no conflicting hunks).
    pub sets: Vec<Vec<FileEdit>>,
    /// Each region edited in conflicting ways, as `path:START-END` (1-based lines of the file as it is), and how
    /// many hunks offered an edit of it.
    pub regions: Vec<(String, usize)>,
}

/// A group of hunks of one file whose places overlap: the file's index among the edits, the hunks' indexes.
struct Group {
    edit: usize,
    hunks: Vec<usize>,
}

/// Split `edits` into alternatives where hunks of one file overlap (see the module doc); `None` when none do.
pub fn split(
    edits: &[FileEdit],
    pre_images: &BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
    cancel: Cancel<'_>,
) -> Result<Option<Alternatives>> {
    let mut groups = Vec::new();
    let mut regions = Vec::new();
    for (e, edit) in edits.iter().enumerate() {
        let Some(Some(pre)) = pre_images.get(&edit.path) else {
            continue;
        };
        if edit.op != EditOp::Edit || edit.hunks.len() < 2 {
            continue;
        }
        let ranges = focus.get(&edit.path).map(Vec::as_slice).unwrap_or(&[]);
        for (hunks, (start, end)) in overlapping(edit, pre, ranges, cancel)? {
            regions.push((
                format!("{}:{start}-{end}", crate::names::shown(&edit.path)),
                hunks.len(),
            ));
            groups.push(Group { edit: e, hunks });
        }
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let mut sets: Vec<Vec<FileEdit>> = Vec::new();
    for choice in choices(&groups) {
        let set = with_choice(edits, &groups, &choice);
        if !sets.contains(&set) {
            sets.push(set);
        }
    }
    Ok((sets.len() > 1).then_some(Alternatives { sets, regions }))
}

/// Hunks of one file whose places overlap (their indexes, in the order written) and the lines they cover (1-based,
/// inclusive; during the grouping, 0-based with the end exclusive).
type Overlap = (Vec<usize>, (usize, usize));

/// The groups of overlapping hunks of `edit`, each with at least two hunks.
fn overlapping(
    edit: &FileEdit,
    pre: &PreImage,
    ranges: &[focus::LineRange],
    cancel: Cancel<'_>,
) -> Result<Vec<Overlap>> {
    // (start, end) of each placed hunk's old side: 0-based line indexes, end exclusive.
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    for (i, hunk) in edit.hunks.iter().enumerate() {
        cancel.check()?;
        let alone = FileEdit {
            path: edit.path.clone(),
            creates: false,
            hunks: vec![hunk.clone()],
            op: EditOp::Edit,
        };
        let placed = match locate_one(&alone, Some(pre), ranges, cancel) {
            Ok(c) => c,
            Err(crate::Error::Cancelled) => return Err(crate::Error::Cancelled),
            Err(_) => continue,
        };
        let (Some(report), false) = (placed.hunks.first(), placed.hunks.len() > 1) else {
            continue;
        };
        let start = report.old_start.saturating_sub(1);
        spans.push((start, start + old_side(hunk).count(), i));
    }
    spans.sort();
    // Sorted by start, a hunk joins the group before it when it starts before that group's end.
    let mut groups: Vec<Overlap> = Vec::new();
    for (start, end, i) in spans {
        match groups.last_mut() {
            Some((hunks, span)) if start < span.1 => {
                hunks.push(i);
                span.1 = span.1.max(end);
            }
            _ => groups.push((vec![i], (start, end))),
        }
    }
    Ok(groups
        .into_iter()
        .filter(|(h, _)| h.len() > 1)
        .map(|(mut h, (s, e))| {
            h.sort_unstable();
            (h, (s + 1, e.max(s + 1)))
        })
        .collect())
}

/// The choices of one hunk per group, as positions within each group, in order (the first of every group first),
/// at most [`MAX_ALTERNATIVES`] of them.
fn choices(groups: &[Group]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for g in groups {
        out = out
            .iter()
            .flat_map(|prefix| {
                (0..g.hunks.len()).map(move |k| {
                    let mut c = prefix.clone();
                    c.push(k);
                    c
                })
            })
            .take(MAX_ALTERNATIVES)
            .collect();
    }
    out
}

/// `edits` with, of each group, only the hunk `choice` picks.
fn with_choice(edits: &[FileEdit], groups: &[Group], choice: &[usize]) -> Vec<FileEdit> {
    let mut set = edits.to_vec();
    for (e, edit) in set.iter_mut().enumerate() {
        let dropped: Vec<usize> = groups
            .iter()
            .zip(choice)
            .filter(|(g, _)| g.edit == e)
            .flat_map(|(g, &k)| g.hunks.iter().enumerate().filter(move |(j, _)| *j != k))
            .map(|(_, &h)| h)
            .collect();
        let mut i = 0;
        edit.hunks.retain(|_| {
            i += 1;
            !dropped.contains(&(i - 1))
        });
    }
    set
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::patch::reader::{AnswerFormat, read_answer};

    const FILE: &str = "a = 1\nb = 2\nc = 3\n";

    fn pre() -> BTreeMap<String, Option<PreImage>> {
        BTreeMap::from([(
            "a.py".to_string(),
            Some(PreImage {
                text: FILE.into(),
                mode: crate::patch::MODE_REGULAR,
            }),
        )])
    }

    /// The edits of a JSON answer replacing each `(old, new)` in a.py, in order.
    fn edits(pairs: &[(&str, &str)]) -> Vec<FileEdit> {
        let list: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(old, new)| serde_json::json!({"path": "a.py", "old": old, "new": new}))
            .collect();
        let answer = serde_json::json!({ "edits": list }).to_string();
        read_answer(&answer, AnswerFormat::Json, &["a.py"]).unwrap()
    }

    fn split_of(edits: &[FileEdit]) -> Option<Alternatives> {
        split(edits, &pre(), &focus::Focus::new(), Cancel::NEVER).unwrap()
    }

    /// What each alternative set makes of a.py.
    fn posts(alt: &Alternatives) -> Vec<String> {
        alt.sets
            .iter()
            .map(|set| {
                let c = super::super::locate_all(set, &pre()).unwrap();
                String::from_utf8(c[0].post.clone()).unwrap()
            })
            .collect()
    }

    #[test]
    fn conflicting_edits_of_one_line_split_into_one_set_each_keeping_the_other_hunks() {
        let e = edits(&[("a = 1", "a = 2"), ("c = 3", "c = 30"), ("a = 1", "a = 3")]);
        // One answer, refused as it is.
        assert!(super::super::locate_all(&e, &pre()).is_err());
        let alt = split_of(&e).unwrap();
        assert_eq!(
            posts(&alt),
            ["a = 2\nb = 2\nc = 30\n", "a = 3\nb = 2\nc = 30\n"]
        );
        assert_eq!(alt.regions, vec![("a.py:1-1".to_string(), 2)]);
    }

    #[test]
    fn hunks_that_do_not_overlap_are_not_split() {
        assert_eq!(
            split_of(&edits(&[("a = 1", "a = 2"), ("c = 3", "c = 4")])),
            None
        );
    }

    #[test]
    fn hunks_whose_lines_partly_overlap_form_one_group() {
        let e = edits(&[
            ("a = 1\nb = 2", "a = 1\nb = 20"),
            ("b = 2\nc = 3", "b = 21\nc = 3"),
        ]);
        let alt = split_of(&e).unwrap();
        assert_eq!(
            posts(&alt),
            ["a = 1\nb = 20\nc = 3\n", "a = 1\nb = 21\nc = 3\n"]
        );
        assert_eq!(alt.regions, vec![("a.py:1-3".to_string(), 2)]);
    }

    #[test]
    fn an_exact_repeat_gives_no_alternatives() {
        assert_eq!(
            split_of(&edits(&[("a = 1", "a = 2"), ("a = 1", "a = 2")])),
            None
        );
    }

    #[test]
    fn alternatives_are_capped() {
        let news: Vec<String> = (0..9).map(|n| format!("a = {}", n + 10)).collect();
        let pairs: Vec<(&str, &str)> = news.iter().map(|n| ("a = 1", n.as_str())).collect();
        let alt = split_of(&edits(&pairs)).unwrap();
        assert_eq!(alt.sets.len(), MAX_ALTERNATIVES);
        assert_eq!(alt.regions, vec![("a.py:1-1".to_string(), 9)]);
    }
}
