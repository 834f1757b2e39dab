//! Deleting and moving a file: the guards on each, and the located change. A deleted file must exist and, when the
//! answer shows its lines (a unified diff's `+++ /dev/null` hunks), those hunks must empty it; a moved file must
//! exist, its destination must be a selected file that does not exist yet, and the hunks of a move and update are
//! placed in the moved file as any other. No path may be touched by two changes of one answer.
//!
//! What it is not: whether the policy allows deleting or moving is the service's call (`[paths] allow_delete`,
//! `allow_move`), made on the located changes; writing them is the transaction's.

use std::collections::HashSet;

use super::{Cancel, locate_one};
use crate::error::{Error, Result};
use crate::names::shown;
use crate::patch::focus::{self, LineRange};
use crate::patch::{ChangeOp, FileChange, FileEdit, PreImage};

/// The deletion of `edit.path` (pre-image `pre`), checked.
pub(super) fn delete(
    edit: &FileEdit,
    pre: Option<&PreImage>,
    ranges: &[LineRange],
    cancel: Cancel<'_>,
) -> Result<FileChange> {
    let path = shown(&edit.path);
    let Some(pre) = pre else {
        return Err(Error::ModelAnswer(format!(
            "the answer deletes {path}, which does not exist; propose again without that deletion"
        )));
    };
    if !ranges.is_empty() {
        return Err(Error::ModelAnswer(format!(
            "the answer deletes {path}, but it was shown only the lines {}; select the whole file to delete it",
            focus::describe(ranges)
        )));
    }
    let hunks = if edit.hunks.is_empty() {
        Vec::new()
    } else {
        let emptied = locate_one(edit, Some(pre), ranges, cancel)?;
        if !emptied.post.is_empty() {
            return Err(Error::ModelAnswer(format!(
                "the answer deletes {path}, but its hunks leave lines in it, so what it meant is unclear; propose \
                 again (a deletion removes every line, or names the file alone: `*** Delete File: {path}`)"
            )));
        }
        emptied.hunks
    };
    Ok(FileChange {
        path: edit.path.clone(),
        pre: Some(pre.text.as_bytes().to_vec()),
        post: Vec::new(),
        mode: pre.mode,
        hunks,
        op: ChangeOp::Delete,
    })
}

/// The move of `edit.path` (pre-image `pre`) to `to` (its pre-image `dest`, which must be `None`), after the
/// edit's hunks, checked. A move to the same path is an edit.
pub(super) fn move_to(
    edit: &FileEdit,
    pre: Option<&PreImage>,
    to: &str,
    dest: Option<&PreImage>,
    ranges: &[LineRange],
    cancel: Cancel<'_>,
) -> Result<FileChange> {
    let (from_shown, to_shown) = (shown(&edit.path), shown(to));
    if to == edit.path {
        return locate_one(edit, pre, ranges, cancel);
    }
    let Some(pre) = pre else {
        return Err(Error::ModelAnswer(format!(
            "the answer moves {from_shown}, which does not exist; propose again without that move"
        )));
    };
    if dest.is_some() {
        return Err(Error::ModelAnswer(format!(
            "the answer moves {from_shown} to {to_shown}, which already exists; a move never replaces a file: \
             delete or rename {to_shown} first, or propose again with another destination"
        )));
    }
    let (post, hunks) = if edit.hunks.is_empty() {
        (pre.text.as_bytes().to_vec(), Vec::new())
    } else {
        let c = locate_one(edit, Some(pre), ranges, cancel)?;
        (c.post, c.hunks)
    };
    Ok(FileChange {
        path: to.to_string(),
        pre: Some(pre.text.as_bytes().to_vec()),
        post,
        mode: pre.mode,
        hunks,
        op: ChangeOp::MoveFrom(edit.path.clone()),
    })
}

/// Refuse changes of which two touch one path (an edit of a file another change deletes, moves away or moves onto).
pub(super) fn touched_once(changes: &[FileChange]) -> Result<()> {
    let mut seen: HashSet<&str> = HashSet::new();
    for path in changes.iter().flat_map(FileChange::paths) {
        if !seen.insert(path) {
            return Err(Error::ModelAnswer(format!(
                "the answer changes {} twice (an edit, a deletion or a move, and another of them), so what it \
                 meant is unclear; propose again, touching each file once",
                shown(path)
            )));
        }
    }
    Ok(())
}
