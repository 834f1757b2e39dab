//! Recovery after a kill: every interrupted apply recorded in the state folder is finished (every file already
//! holds its post-image: flushed and kept) or undone (the pre-images put back through folder handles).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::digest::git_blob_id;

use super::*;

/// How an interrupted apply ended after recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every file is back to its pre-image.
    Restored,
    /// Every file already held its post-image: the apply is complete (and flushed).
    Completed,
    /// Some file could not be put right: see `problems`.
    Incomplete,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Restored => "restored",
            Outcome::Completed => "completed",
            Outcome::Incomplete => "incomplete",
        })
    }
}

/// What recovery did for one interrupted apply.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Recovery {
    /// The workspace the apply was in.
    pub workspace: String,
    /// What became of the apply.
    pub outcome: Outcome,
    /// The files the apply was writing, workspace-relative.
    pub files: Vec<String>,
    /// What could not be put back, one line per file.
    pub problems: Vec<String>,
}

/// One line (`restored /ws: a.txt, b.txt`), then one `  problem: ...` line per problem: the one rendering the CLI
/// and the MCP server's log share.
impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.outcome,
            self.workspace,
            self.files.join(", ")
        )?;
        for p in &self.problems {
            write!(f, "\n  problem: {p}")?;
        }
        Ok(())
    }
}

/// Finish or undo every interrupted apply recorded in the state folder's journals. The journal of a workspace
/// whose lock another process holds (an apply still running) is left alone.
pub fn recover_all(state: &Path) -> Vec<Recovery> {
    let Ok(entries) = fs::read_dir(state.join("journals")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            // Version 1: a folder per apply. Read once to learn the workspace, then again under its lock.
            let Some(first) = read_journal_v1(&path) else {
                let _ = fs::remove_dir_all(&path);
                continue;
            };
            let _lock = WorkspaceLock::take(state, &first.doc.workspace).ok();
            if let Some(found) = read_journal_v1(&path) {
                let r = recover_one(&found, &path);
                if r.problems.is_empty() {
                    let _ = fs::remove_dir_all(&path);
                }
                out.push(r);
            }
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(key) = name.strip_suffix(".journal") else {
            continue;
        };
        if e.metadata().is_ok_and(|m| m.len() == 0) {
            // The usual case: no apply of that workspace was interrupted.
            continue;
        }
        let Ok(Some(_lock)) = WorkspaceLock::try_take(state, key) else {
            continue;
        };
        let Ok(file) = fs::OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        let bytes = {
            use std::io::Read;
            let mut bytes = Vec::new();
            if (&file).read_to_end(&mut bytes).is_err() {
                continue;
            }
            bytes
        };
        if bytes.is_empty() {
            continue;
        }
        let clear = || {
            let _ = file.set_len(0).and_then(|_| file.sync_data());
        };
        let Some(found) = parse_journal(&bytes) else {
            // Killed before the journal was complete: nothing in the workspace had changed yet.
            clear();
            continue;
        };
        let r = recover_one(&found, &path);
        if r.problems.is_empty() {
            clear();
        }
        out.push(r);
    }
    out
}

/// `root/rel`, refusing any symlink on the way (recovery never writes through one).
pub(super) fn plain_path(root: &Path, rel: &str) -> std::result::Result<PathBuf, String> {
    let mut cur = root.to_path_buf();
    let comps: Vec<&str> = rel.split('/').collect();
    for (i, c) in comps.iter().enumerate() {
        if c.is_empty() || *c == "." || *c == ".." {
            return Err(format!("{rel}: not a plain relative path"));
        }
        cur.push(c);
        if let Ok(m) = fs::symlink_metadata(&cur)
            && (m.file_type().is_symlink() || (i + 1 < comps.len() && !m.is_dir()))
        {
            return Err(format!(
                "{rel}: {} is a symlink or not a folder",
                cur.display()
            ));
        }
    }
    Ok(cur)
}

/// Flush (best effort) each of `folders` once.
pub(super) fn sync_folders<'a>(folders: impl Iterator<Item = &'a Path>) {
    let mut done: Vec<&Path> = Vec::new();
    for dir in folders {
        if !done.contains(&dir) {
            done.push(dir);
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }
}

pub(super) fn recover_one(found: &FoundJournal, journal: &Path) -> Recovery {
    let doc = &found.doc;
    let root = &doc.workspace;
    let mut problems = Vec::new();
    let mut paths = Vec::new();
    for f in &doc.files {
        match plain_path(root, &f.rel) {
            Ok(p) => paths.push(Some(p)),
            Err(e) => {
                problems.push(e);
                paths.push(None);
            }
        }
    }
    // Temporary files staged by the interrupted apply, removed through a handle on their folder.
    for (f, _) in doc.files.iter().zip(&paths).filter(|(_, p)| p.is_some()) {
        let Ok((dir, _)) = fsat::open_parent(root, &f.rel) else {
            continue;
        };
        for name in dir.names().unwrap_or_default() {
            if name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp") {
                let _ = dir.unlink(&name);
            }
        }
    }
    let current_id = |p: &Path| fs::read(p).ok().map(|b| git_blob_id(&b));
    let all_post = doc.files.iter().zip(&paths).all(|(f, p)| {
        p.as_ref()
            .is_some_and(|p| current_id(p).as_deref() == Some(f.post_id.as_str()))
    });
    let outcome = if all_post && problems.is_empty() {
        // The post-images may still be only in memory (killed before the apply's flush): flush them before the
        // journal goes.
        for (f, p) in doc.files.iter().zip(paths.iter().flatten()) {
            if let Err(e) = fs::File::open(p).and_then(|file| file.sync_all()) {
                problems.push(format!("{}: cannot flush it to disk: {e}", f.rel));
            }
        }
        sync_folders(
            paths
                .iter()
                .flatten()
                .filter_map(|p| p.parent())
                .chain(doc.created_dirs.iter().filter_map(|d| d.parent())),
        );
        if problems.is_empty() {
            Outcome::Completed
        } else {
            Outcome::Incomplete
        }
    } else {
        for (i, (f, p)) in doc.files.iter().zip(&paths).enumerate() {
            let Some(p) = p else { continue };
            if current_id(p) == f.pre_id && (f.existed || !p.exists()) {
                continue;
            }
            let pre = match &found.pres[i] {
                Ok(pre) => pre.as_deref(),
                Err(e) => {
                    problems.push(e.clone());
                    continue;
                }
            };
            if pre.map(git_blob_id) != f.pre_id {
                problems.push(format!(
                    "{}: the journal's copy is damaged (its blob id is not the recorded one); the file was left as it is: put it right by hand, then delete {}",
                    f.rel,
                    journal.display()
                ));
                continue;
            }
            if let Err(e) = put_back(root, &f.rel, pre, &fs::Permissions::from_mode(f.mode)) {
                problems.push(format!("{}: {e}", f.rel));
            }
        }
        remove_created_dirs(root, &doc.created_dirs);
        sync_folders(doc.created_dirs.iter().filter_map(|d| d.parent()));
        if problems.is_empty() {
            Outcome::Restored
        } else {
            Outcome::Incomplete
        }
    };
    Recovery {
        workspace: root.display().to_string(),
        outcome,
        files: doc.files.iter().map(|f| f.rel.clone()).collect(),
        problems,
    }
}
