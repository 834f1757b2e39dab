//! The journal an apply writes before its first byte (version 3: one file per workspace, empty between applies)
//! and the parser recovery reads it with.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::workspace::fs::OFlags;

use super::apply::crash_point;
use super::journal_doc::{JOURNAL_VERSION, JournalDoc, JournalFile};
use super::journal_v1::version_1_journal_of;
use super::lock::workspace_key;
use super::plan::Planned;
use super::recover::recovery_problems;

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
