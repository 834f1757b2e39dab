//! One apply at a time per workspace: an exclusive `flock` on `locks/<key>.lock` in the worker's state folder.

use std::fs;
use std::path::Path;

use crate::digest::sha256_hex;
use crate::error::{Error, IoContext, Result};

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
        let dir = state.join("locks");
        fs::create_dir_all(&dir).at("cannot create", &dir)?;
        let path = dir.join(format!("{key}.lock"));
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a symlink, never blocking on a FIFO planted there.
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .at("cannot open", &path)?;
        if !file.metadata().at("cannot inspect", &path)?.is_file() {
            return Err(Error::io_message(format!(
                "the apply lock {} is not a regular file; remove it, then retry",
                path.display()
            )));
        }
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
