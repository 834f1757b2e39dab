//! The worker's state folder (ledger, apply journals, workspace locks, trust records, large results), outside every
//! workspace, and its sub-folders, each opened through a handle that never follows a symlink.

use std::io;
use std::path::{Path, PathBuf};

use super::fs::Dir;

/// The worker's own state folder (ledger, apply journals, workspace locks), outside every workspace:
/// `LOCAL_LLM_STATE_DIR`, else `$CLAUDE_PLUGIN_DATA`, else `$XDG_STATE_HOME/local-llm-delegator`, else
/// `~/.local/state/local-llm-delegator`.
pub fn state_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if cfg!(test) {
        // The crate's own unit tests never touch the user's state: only a folder they name.
        return var("LOCAL_LLM_STATE_DIR");
    }
    var("LOCAL_LLM_STATE_DIR")
        .or_else(|| var("CLAUDE_PLUGIN_DATA"))
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("local-llm-delegator")))
        .or_else(|| var("HOME").map(|d| d.join(".local/state/local-llm-delegator")))
}

/// The state folder's sub-folder `name` (created with mode 0700 when missing) through a handle that never follows a
/// symlink: a symlinked `journals/`, `locks/`, `results/` or `trust/` is refused.
pub fn sub(state: &Path, name: &str) -> io::Result<Dir> {
    std::fs::create_dir_all(state)?;
    let root = Dir::root(state)?;
    root.mkdir_mode(name, 0o700)?;
    root.open_sub(name)
}

/// The state folder's existing sub-folder `name` through a handle that never follows a symlink; `None` when it (or
/// the state folder) does not exist.
pub fn existing_sub(state: &Path, name: &str) -> io::Result<Option<Dir>> {
    let found = Dir::root(state).and_then(|root| root.open_sub(name));
    match found {
        Ok(d) => Ok(Some(d)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read a file of the state folder by path (never following a symlink at its last component, never blocking on a
/// FIFO): its bytes, or an error naming what is there instead of a regular file.
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    super::fs::open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}
