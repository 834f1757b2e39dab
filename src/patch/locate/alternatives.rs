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
                format!("{}:{start}-{end}", crate::scope::shown(&edit.path)),
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

/// The groups of overlapping hunks of `edit` (each with at least two hunks, in the order written) and the lines
/// each group covers (1-based, inclusive).
fn overlapping(
    edit: &FileEdit,
    pre: &PreImage,
    ranges: &[focus::LineRange],
    cancel: Cancel<'_>,
) -> Result<Vec<(Vec<usize>, (usize, usize))>> {
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
    let mut groups: Vec<(Vec<usize>, (usize, usize))> = Vec::new();
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
    use crate::patch::{Hunk, HunkLine};

    fn hunk(lines: Vec<HunkLine>) -> Hunk {
        Hunk {
            old_start_hint: None,
            lines,
            maybe_cut_off: false,
            anchor: Default::default(),
        }
    }

    fn replace(old: &str, new: &str) -> Hunk {
        hunk(vec![
            HunkLine::Remove(old.into()),
            HunkLine::Add(new.into()),
        ])
    }

    fn pre(text: &str) -> BTreeMap<String, Option<PreImage>> {
        BTreeMap::from([(
            "a.py".to_string(),
            Some(PreImage {
                text: text.into(),
                mode: crate::patch::MODE_REGULAR,
            }),
        )])
    }

    fn edit(hunks: Vec<Hunk>) -> Vec<FileEdit> {
        vec![FileEdit {
            path: "a.py".into(),
            creates: false,
            hunks,
            op: EditOp::Edit,
        }]
    }

    fn split_of(edits: &[FileEdit], text: &str) -> Option<Alternatives> {
        split(edits, &pre(text), &focus::Focus::new(), Cancel::NEVER).unwrap()
    }

    #[test]
    fn conflicting_edits_of_one_line_split_into_one_set_each_keeping_the_other_hunks() {
        let other = replace("c = 3", "c = 30");
        let edits = edit(vec![
            replace("a = 1", "a = 2"),
            other.clone(),
            replace("a = 1", "a = 3"),
        ]);
        let alt = split_of(&edits, "a = 1\nb = 2\nc = 3\n").unwrap();
        assert_eq!(alt.sets.len(), 2);
        assert_eq!(
            alt.sets[0][0].hunks,
            vec![replace("a = 1", "a = 2"), other.clone()]
        );
        assert_eq!(alt.sets[1][0].hunks, vec![other, replace("a = 1", "a = 3")]);
        assert_eq!(alt.regions, vec![("a.py:1-1".to_string(), 2)]);
        // Each set now locates like any answer.
        for set in &alt.sets {
            super::super::locate_all(set, &pre("a = 1\nb = 2\nc = 3\n")).unwrap();
        }
    }

    #[test]
    fn hunks_that_do_not_overlap_are_not_split() {
        let edits = edit(vec![replace("a = 1", "a = 2"), replace("c = 3", "c = 4")]);
        assert_eq!(split_of(&edits, "a = 1\nb = 2\nc = 3\n"), None);
    }

    #[test]
    fn overlapping_hunks_with_context_form_one_group() {
        let first = hunk(vec![
            HunkLine::Context("a = 1".into()),
            HunkLine::Remove("b = 2".into()),
            HunkLine::Add("b = 20".into()),
        ]);
        let second = hunk(vec![
            HunkLine::Remove("b = 2".into()),
            HunkLine::Add("b = 21".into()),
            HunkLine::Context("c = 3".into()),
        ]);
        let alt = split_of(&edit(vec![first, second]), "a = 1\nb = 2\nc = 3\n").unwrap();
        assert_eq!(alt.sets.len(), 2);
        assert_eq!(alt.regions, vec![("a.py:1-3".to_string(), 2)]);
    }

    #[test]
    fn an_exact_repeat_gives_no_alternatives() {
        let edits = edit(vec![replace("a = 1", "a = 2"), replace("a = 1", "a = 2")]);
        assert_eq!(split_of(&edits, "a = 1\n"), None);
    }

    #[test]
    fn alternatives_are_capped() {
        let hunks = (0..9)
            .map(|n| replace("a = 1", &format!("a = {n}")))
            .collect();
        let alt = split_of(&edit(hunks), "a = 1\n").unwrap();
        assert_eq!(alt.sets.len(), MAX_ALTERNATIVES);
    }
}
