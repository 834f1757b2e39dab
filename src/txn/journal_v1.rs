//! The version 1 journal folders older workers left (`journals/apply-*`): read for recovery only. Delete this file
//! once no such folder can be left anywhere.

use std::fs;
use std::path::{Path, PathBuf};

use super::journal_doc::{FoundJournal, JournalDoc};

/// A version 1 journal folder (left by an older worker) that records an apply to `root`, if any.
pub(super) fn version_1_journal_of(journals: &Path, root: &Path) -> Option<PathBuf> {
    fs::read_dir(journals)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .find(|p| read_journal_v1(p).is_some_and(|j| j.doc.workspace == root))
}

/// Read a version 1 journal folder; `None` when it is incomplete (killed before its document was written, when
/// nothing in the workspace had changed yet).
pub(super) fn read_journal_v1(dir: &Path) -> Option<FoundJournal> {
    let doc: JournalDoc = serde_json::from_slice(
        &crate::workspace::state::read_file(&dir.join("journal.json")).ok()?,
    )
    .ok()?;
    let pres = doc
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| match f.existed {
            false => Ok(None),
            true => crate::workspace::state::read_file(&dir.join(format!("pre-{i}")))
                .map(Some)
                .map_err(|e| format!("{}: the journal's copy is unreadable: {e}", f.rel)),
        })
        .collect();
    let posts = doc.files.iter().map(|_| None).collect();
    Some(FoundJournal { doc, pres, posts })
}
