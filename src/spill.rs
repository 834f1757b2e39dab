//! Large results kept whole: a patch or a delegation's answer longer than hosts show in one tool result is also
//! written, byte for byte, to a file in the worker's state folder, and the result says so and names the file.
//!
//! Claude Code cuts a tool result at about 25,000 tokens unless the server asks for more (the tools carry the
//! `anthropic/maxResultSizeChars` hint, see `mcp.rs`); other hosts have their own limits. A patch is never cut: the
//! result holds all of it, and the file is there for a host that shows less. The files live in `<state>/results/`
//! (never in a workspace), are readable by their owner only, and the oldest are removed beyond [`MAX_KEPT`].

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::workspace::fs::Dir;

/// A result longer than this many characters is also written to a file (about 25,000 tokens of code, with room).
pub const HOST_RESULT_CHARS: usize = 80_000;

/// At most this many result files are kept; the oldest go first.
pub const MAX_KEPT: usize = 64;

/// The size hint the MCP tools carry for hosts that read one (`anthropic/maxResultSizeChars`): room for the largest
/// patch the default limits allow, twice (the text and the structured copy of the result).
pub const SIZE_HINT_CHARS: u64 = 2_500_000;

/// When `text` is longer than [`HOST_RESULT_CHARS`]: write it to `<state>/results/<name>` and return the path.
/// `results/` and the file are reached through folder handles that never follow a symlink: a symlinked `results/`
/// is refused (nothing is written or pruned through it).
pub fn keep_if_large(state: Option<&Path>, name: &str, text: &str) -> Result<Option<PathBuf>> {
    if text.chars().count() <= HOST_RESULT_CHARS {
        return Ok(None);
    }
    let Some(state) = state else {
        return Ok(None);
    };
    let dir_path = state.join("results");
    let dir = results_dir(state).map_err(|e| refused(&dir_path, e))?;
    prune(&dir);
    let path = dir_path.join(name);
    dir.create_new(name, text.as_bytes(), 0o600)
        .at("cannot create", &path)?;
    Ok(Some(path))
}

/// `<state>/results/` through a handle (created 0700), never through a symlink.
fn results_dir(state: &Path) -> std::io::Result<Dir> {
    crate::workspace::state::sub(state, "results")
}

fn refused(path: &Path, e: std::io::Error) -> crate::error::Error {
    crate::error::Error::io_message(format!(
        "cannot use {}: {e}; it must be a plain folder (never a symlink): remove it, the worker makes it again",
        path.display()
    ))
}

/// The note a large result carries.
pub fn note(chars: usize, path: &Path) -> String {
    format!(
        "this result holds {chars} characters, more than some hosts show in one tool result (Claude Code: about \
         25,000 tokens); nothing was cut, and the same bytes are in {} (the digest covers exactly them)",
        path.display()
    )
}

/// Remove the oldest regular files beyond [`MAX_KEPT`] (best effort), through the folder's handle.
fn prune(dir: &Dir) {
    let Ok(names) = dir.names() else {
        return;
    };
    let mut files: Vec<((i64, i64), String)> = names
        .into_iter()
        .filter_map(|n| Some((dir.file_mtime(&n).ok()??, n)))
        .collect();
    if files.len() < MAX_KEPT {
        return;
    }
    files.sort();
    for (_, n) in &files[..files.len() + 1 - MAX_KEPT] {
        let _ = dir.unlink(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn only_a_large_text_is_kept_and_the_oldest_go() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(keep_if_large(Some(d.path()), "a", "small").unwrap(), None);
        let big = "x".repeat(HOST_RESULT_CHARS + 1);
        let p = keep_if_large(Some(d.path()), "b.patch", &big)
            .unwrap()
            .unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), big);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        for i in 0..MAX_KEPT + 3 {
            keep_if_large(Some(d.path()), &format!("f{i}"), &big).unwrap();
        }
        assert_eq!(
            fs::read_dir(d.path().join("results")).unwrap().count(),
            MAX_KEPT
        );
    }

    #[test]
    fn a_symlinked_results_folder_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // Files of someone else's folder, which pruning through the symlink would delete.
        for i in 0..MAX_KEPT + 2 {
            fs::write(elsewhere.path().join(format!("keep{i}")), "mine").unwrap();
        }
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join("results")).unwrap();
        let big = "x".repeat(HOST_RESULT_CHARS + 1);
        let e = keep_if_large(Some(d.path()), "b.patch", &big)
            .unwrap_err()
            .to_string();
        assert!(e.contains("symlink") && e.contains("results"), "{e}");
        assert_eq!(
            fs::read_dir(elsewhere.path()).unwrap().count(),
            MAX_KEPT + 2
        );
        assert!(!elsewhere.path().join("b.patch").exists());
    }
}
