//! One apply at a time per workspace: an exclusive `flock` on `locks/<key>.lock` in the worker's state folder.

use std::fs;
use std::path::Path;

use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::workspace::fs::OFlags;

/// The name a workspace's lock and journal files share in the state folder.
pub(super) fn workspace_key(root: &Path) -> String {
    sha256_hex(root.as_os_str().as_encoded_bytes())[..24].to_string()
}

/// An exclusive `flock` on a per-workspace lock file in the state folder (`locks/<key>.lock`), released on drop.
pub(super) struct WorkspaceLock {
    pub(super) _file: fs::File,
}

impl WorkspaceLock {
    /// Wait for the workspace's lock.
    pub(super) fn take(state: &Path, root: &Path) -> Result<WorkspaceLock> {
        WorkspaceLock::open(state, &workspace_key(root), true)?.ok_or_else(|| {
            Error::io_message(format!(
                "the apply lock of {} could not be taken; retry",
                root.display()
            ))
        })
    }

    /// The lock of the workspace whose key is `key`, or `None` when another process holds it.
    pub(super) fn try_take(state: &Path, key: &str) -> Result<Option<WorkspaceLock>> {
        WorkspaceLock::open(state, key, false)
    }

    pub(super) fn open(state: &Path, key: &str, wait: bool) -> Result<Option<WorkspaceLock>> {
        let dir_path = state.join("locks");
        let name = format!("{key}.lock");
        let path = dir_path.join(&name);
        // The folder and the file through handles: never through a symlink, never blocking on a FIFO planted there.
        let file = crate::workspace::state::sub(state, "locks")
            .and_then(|dir| dir.open_file(&name, OFlags::WRONLY | OFlags::CREATE, 0o600))
            .map_err(|e| {
                Error::io_message(format!(
                    "cannot open the apply lock {}: {e}; remove what is there (the folder and the lock must be \
                     plain, never symlinks), then retry",
                    path.display()
                ))
            })?;
        use rustix::fs::{FlockOperation, flock};
        let op = if wait {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        let locked = match flock(&file, op) {
            Ok(()) => Ok(true),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(false),
            Err(e) => Err(std::io::Error::from(e)),
        };
        match locked {
            Ok(true) => Ok(Some(WorkspaceLock { _file: file })),
            Ok(false) => Ok(None),
            Err(e) => Err(Error::io_message(format!(
                "cannot lock {}: {e}",
                path.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::journal::Journal;
    use super::*;

    /// A state folder whose `name/` is a symlink to another folder, and that folder.
    fn planted(name: &str) -> (tempfile::TempDir, tempfile::TempDir) {
        let state = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), state.path().join(name)).unwrap();
        (state, elsewhere)
    }

    #[test]
    fn a_symlinked_lock_folder_is_refused() {
        let (state, elsewhere) = planted("locks");
        let e = WorkspaceLock::take(state.path(), Path::new("/w"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symlink") && e.contains("locks"), "{e}");
        assert!(fs::read_dir(elsewhere.path()).unwrap().next().is_none());
    }

    #[test]
    fn a_symlinked_journal_folder_is_refused() {
        let (state, elsewhere) = planted("journals");
        let e = Journal::open(state.path(), Path::new("/w"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symlink") && e.contains("journals"), "{e}");
        assert!(fs::read_dir(elsewhere.path()).unwrap().next().is_none());
    }

    #[test]
    fn a_symlinked_lock_or_journal_file_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("victim");
        fs::write(&target, "mine").unwrap();
        let key = workspace_key(Path::new("/w"));
        for (folder, file) in [
            ("locks", format!("{key}.lock")),
            ("journals", format!("{key}.journal")),
        ] {
            fs::create_dir_all(state.path().join(folder)).unwrap();
            std::os::unix::fs::symlink(&target, state.path().join(folder).join(file)).unwrap();
        }
        let e = WorkspaceLock::take(state.path(), Path::new("/w"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symlink"), "{e}");
        let e = Journal::open(state.path(), Path::new("/w"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symlink"), "{e}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "mine");
    }
}
