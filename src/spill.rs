//! Large results kept whole: a patch or a delegation's answer longer than hosts show in one tool result is also
//! written, byte for byte, to a file in the worker's state folder, and the result says so and names the file.
//!
//! Claude Code cuts a tool result at about 25,000 tokens unless the server asks for more (the tools carry the
//! `anthropic/maxResultSizeChars` hint, see `mcp.rs`); other hosts have their own limits. A patch is never cut: the
//! result holds all of it, and the file is there for a host that shows less. The files live in `<state>/results/`
//! (never in a workspace), are readable by their owner only, and the oldest are removed beyond [`MAX_KEPT`].

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// A result longer than this many characters is also written to a file (about 25,000 tokens of code, with room).
pub const HOST_RESULT_CHARS: usize = 80_000;

/// At most this many result files are kept; the oldest go first.
pub const MAX_KEPT: usize = 64;

/// The size hint the MCP tools carry for hosts that read one (`anthropic/maxResultSizeChars`): room for the largest
/// patch the default limits allow, twice (the text and the structured copy of the result).
pub const SIZE_HINT_CHARS: u64 = 2_500_000;

/// When `text` is longer than [`HOST_RESULT_CHARS`]: write it to `<state>/results/<name>` and return the path.
pub fn keep_if_large(state: Option<&Path>, name: &str, text: &str) -> Result<Option<PathBuf>> {
    if text.chars().count() <= HOST_RESULT_CHARS {
        return Ok(None);
    }
    let Some(state) = state else {
        return Ok(None);
    };
    let dir = state.join("results");
    fs::create_dir_all(&dir).at("cannot create", &dir)?;
    prune(&dir);
    let path = dir.join(name);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .at("cannot create", &path)?;
    f.write_all(text.as_bytes()).at("cannot write", &path)?;
    Ok(Some(path))
}

/// The note a large result carries.
pub fn note(chars: usize, path: &Path) -> String {
    format!(
        "this result holds {chars} characters, more than some hosts show in one tool result (Claude Code: about \
         25,000 tokens); nothing was cut, and the same bytes are in {} (the digest covers exactly them)",
        path.display()
    )
}

/// Remove the oldest files beyond [`MAX_KEPT`] (best effort).
fn prune(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok().filter(|m| m.is_file())?;
            Some((m.modified().ok()?, e.path()))
        })
        .collect();
    if files.len() < MAX_KEPT {
        return;
    }
    files.sort();
    for (_, p) in &files[..files.len() + 1 - MAX_KEPT] {
        let _ = fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
