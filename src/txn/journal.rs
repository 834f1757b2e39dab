//! The journal an apply writes before its first byte (version 3: one file per workspace, empty between applies)
//! and the parser recovery reads it with.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::workspace::fs::OFlags;

use super::apply::crash_point;
use super::journal_v1::version_1_journal_of;
use super::lock::workspace_key;
use super::plan::Planned;
use super::recover::recovery_problems;

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

/// A workspace's journal file, opened by an apply that holds the workspace's lock.
pub(super) struct Journal {
    pub(super) file: fs::File,
    pub(super) path: PathBuf,
}

impl Journal {
    /// Open (creating it the first time) the workspace's journal; refuses when it still holds an interrupted apply.
    pub(super) fn open(state: &Path, root: &Path) -> Result<Journal> {
        let journals = state.join("journals");
        let name = format!("{}.journal", workspace_key(root));
        let path = journals.join(&name);
        let io = |e: std::io::Error| {
            Error::io_message(format!(
                "cannot open the apply journal {}: {e}; the folder and the journal must be plain (never symlinks)",
                path.display()
            ))
        };
        // The folder and the file through handles: never through a symlink, never blocking on a FIFO planted there.
        let dir = crate::workspace::state::sub(state, "journals").map_err(io)?;
        let file = match dir.open_file(&name, OFlags::RDWR, 0) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // It will hold copies of the workspace's files: readable by their owner only.
                let file = dir
                    .open_file(&name, OFlags::RDWR | OFlags::CREATE | OFlags::EXCL, 0o600)
                    .map_err(io)?;
                // The file's name must survive a power loss as much as what will be written in it.
                dir.sync().map_err(io)?;
                file
            }
            Err(e) => return Err(io(e)),
        };
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(Error::io_message(format!(
                "the apply journal {} is not a regular file; remove it (nothing the worker wrote is there), then \
                 apply again",
                path.display()
            )));
        }
        let pending = if meta.len() > 0 {
            Some(path.clone())
        } else {
            version_1_journal_of(&journals, root)
        };
        if let Some(pending) = pending {
            return Err(Error::io_message(match recovery_problems(state, root) {
                Some(problems) => format!(
                    "an earlier apply to {} was interrupted and its recovery needs attention ({}): {}; put that \
                     right, then run `local-llm-worker recover` and apply again",
                    root.display(),
                    pending.display(),
                    problems.join("; ")
                ),
                None => format!(
                    "an earlier apply to {} was interrupted and has not been recovered yet ({}); run \
                     `local-llm-worker recover` (the MCP server does it when it starts), then apply again",
                    root.display(),
                    pending.display()
                ),
            }));
        }
        Ok(Journal { file, path })
    }

    /// Record `planned` and flush it: from here on a crash can be undone.
    pub(super) fn write(&mut self, root: &Path, planned: &[Planned]) -> Result<()> {
        let io = |e: std::io::Error| {
            Error::io_message(format!(
                "cannot write the apply journal {}: {e}",
                self.path.display()
            ))
        };
        let files = planned
            .iter()
            .map(|p| JournalFile {
                rel: p.rel.clone(),
                existed: p.pre.is_some(),
                pre_id: p.pre_id.clone(),
                post_id: p.new_id.clone(),
                mode: p.mode,
                len: Some(p.pre.as_ref().map_or(0, |b| b.len() as u64)),
                post_len: Some(p.post.len() as u64),
                created_from: p.created_from,
                removes: p.removes,
                perm: p.perm,
            })
            .collect();
        let doc = JournalDoc {
            version: JOURNAL_VERSION,
            workspace: root.to_path_buf(),
            files,
            created_dirs: Vec::new(),
        };
        let mut header = serde_json::to_vec(&doc)
            .map_err(|e| Error::io_message(format!("cannot encode the apply journal: {e}")))?;
        header.push(b'\n');
        let mut file = &self.file;
        let written = (|| {
            file.write_all(&header)?;
            crash_point();
            for p in planned {
                if let Some(pre) = &p.pre {
                    file.write_all(pre)?;
                }
                file.write_all(&p.post)?;
            }
            file.sync_data()
        })();
        if let Err(e) = written {
            let _ = self.file.set_len(0);
            return Err(io(e));
        }
        Ok(())
    }

    /// Empty the journal and flush that: the apply is over, whatever happens next.
    pub(super) fn clear(self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.sync_data()
    }
}

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
