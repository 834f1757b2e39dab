//! The journal's document as it lies on disk (version 3, and version 2 read back) and its parser: the format an apply
//! writes ([`super::journal`]) and recovery reads ([`super::recover`]), pure.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The journal document: enough to restore the pre-images or confirm the post-images after a crash.
///
/// Version 3 (written now): each workspace has one journal file, `journals/<key>.journal` beside its lock
/// `locks/<key>.lock`, empty between applies. An apply, holding the lock, writes this document as one line of JSON,
/// a newline, then for every file, in order, its pre-image (`len` bytes, when it existed) and its post-image
/// (`post_len` bytes), and flushes it before the first byte of the workspace changes; once the written files are
/// flushed it empties the file and flushes that. A file shorter or longer than its document says is a journal cut
/// off while being written, when nothing had changed yet. `mode` is the git mode (0o100644 or 0o100755); the folders
/// a new file needs are `created_from` (the index of the first component of its folder the apply creates).
/// Version 2 had no post-images and listed the folders to create as absolute paths in `created_dirs`, and `mode`
/// was the file's `st_mode`; version 1 (read for recovery only) was a folder `journals/apply-*` holding
/// `journal.json` and a `pre-<index>` file per pre-image. Recovery reads all three, and acts on none before
/// [`validate`](super::recover) accepted every entry.
#[derive(Serialize, Deserialize)]
pub(super) struct JournalDoc {
    pub(super) version: u32,
    pub(super) workspace: PathBuf,
    pub(super) files: Vec<JournalFile>,
    /// Versions 1 and 2: folders the apply creates, outermost first (written empty by version 3, so that an older
    /// worker still reads the document).
    #[serde(default)]
    pub(super) created_dirs: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct JournalFile {
    pub(super) rel: String,
    /// Whether the file existed (its bytes are then in the journal).
    pub(super) existed: bool,
    pub(super) pre_id: Option<String>,
    pub(super) post_id: String,
    pub(super) mode: u32,
    /// Versions 2 and 3: the length of the pre-image's bytes in the journal file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) len: Option<u64>,
    /// Version 3: the length of the post-image's bytes in the journal file, after the pre-image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) post_len: Option<u64>,
    /// Version 3, a new file whose folder did not exist: the index of the first component of its folder the apply
    /// creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) created_from: Option<usize>,
    /// Version 3, a file the apply removes (a deletion, a move's source): its post-image is its absence
    /// (`post_id` 40 zeros, `post_len` 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) removes: bool,
    /// Version 3, a file the apply removes: its permission bits, to create it again as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) perm: Option<u32>,
}

/// The version of the journal this worker writes.
pub(super) const JOURNAL_VERSION: u32 = 3;

/// A journal found in the state folder, with the pre-image bytes of every file (`None`: it did not exist; an
/// error: the journal's copy cannot be read) and, from version 3, its post-image bytes.
pub(super) struct FoundJournal {
    pub(super) doc: JournalDoc,
    pub(super) pres: Vec<std::result::Result<Option<Vec<u8>>, String>>,
    pub(super) posts: Vec<Option<Vec<u8>>>,
}

/// Parse the bytes of a version 2 or 3 journal file; `None` when they are not a whole journal (cut off while
/// written).
pub(super) fn parse_journal(bytes: &[u8]) -> Option<FoundJournal> {
    let split = bytes.iter().position(|&b| b == b'\n')?;
    let doc: JournalDoc = serde_json::from_slice(&bytes[..split]).ok()?;
    let mut rest = &bytes[split + 1..];
    let mut take = |len: u64| -> Option<Vec<u8>> {
        let len = usize::try_from(len).ok()?;
        if rest.len() < len {
            return None;
        }
        let (taken, tail) = rest.split_at(len);
        rest = tail;
        Some(taken.to_vec())
    };
    let mut pres = Vec::with_capacity(doc.files.len());
    let mut posts = Vec::with_capacity(doc.files.len());
    for f in &doc.files {
        let len = f.len?;
        pres.push(Ok(if f.existed { Some(take(len)?) } else { None }));
        posts.push(match f.post_len {
            Some(n) => Some(take(n)?),
            None => None,
        });
    }
    rest.is_empty().then_some(FoundJournal { doc, pres, posts })
}
