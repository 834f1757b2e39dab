//! Finding and reading a workspace's policy: `LOCAL_LLM_CONFIG`, the file at the root, the default of an allowed
//! root; one handle whose owner and mode are checked, the bytes parsed being the bytes digested; and the trust
//! hand-off: [`load`] is [`load_untrusted`] and then `trust::require`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::policy::Policy;

pub use crate::names::POLICY_FILE;

/// A policy and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The policy, checked.
    pub policy: Policy,
    /// The file it was read from (canonical); `None` for the default of an allowed root.
    pub path: Option<PathBuf>,
    /// The SHA-256 of the exact bytes parsed (what `local-llm-worker trust` records); `None` with no file.
    pub digest: Option<String>,
}

/// Find and read the policy for the workspace at `root` (already made absolute and canonical), and refuse it unless
/// the user may use it: [`load_untrusted`], then [`crate::trust::require`] (a policy that names commands or a key
/// variable must have been trusted with `local-llm-worker trust`, exactly as it is now).
pub fn load(root: &Path) -> Result<LoadedPolicy> {
    let loaded = load_untrusted(root)?;
    crate::trust::require(&loaded, root)?;
    Ok(loaded)
}

/// Find and read the policy for the workspace at `root` without the trust step (its owner and mode are checked):
/// for `doctor`, `trust` and recovery (which only narrows what it may touch by the policy's `[paths]`).
///
/// Order: `LOCAL_LLM_CONFIG` (a file that must exist; it applies only to a `root` that holds a policy file or lies
/// under `LOCAL_LLM_ALLOWED_ROOTS`), then `<root>/local-llm-worker.toml`, then the default policy when `root` lies
/// under one of the `:`-separated `LOCAL_LLM_ALLOWED_ROOTS`. Otherwise the workspace is refused.
pub fn load_untrusted(root: &Path) -> Result<LoadedPolicy> {
    if let Some(forced) = std::env::var_os("LOCAL_LLM_CONFIG").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(forced);
        if !path.is_file() {
            return Err(Error::Policy(format!(
                "LOCAL_LLM_CONFIG names {}, which is not a file; fix or unset the variable",
                path.display()
            )));
        }
        // A forced policy makes no folder a workspace by itself: the folder must be one already.
        let own = std::fs::symlink_metadata(root.join(POLICY_FILE)).is_ok_and(|m| m.is_file());
        if !own && !under_allowed_roots(root) {
            return Err(Error::Policy(format!(
                "LOCAL_LLM_CONFIG names {}, but {} holds no {POLICY_FILE} and is not under LOCAL_LLM_ALLOWED_ROOTS, \
                 so it is not a workspace; run `local-llm-worker init-project --workspace-root {}` there, or list \
                 the folder (or one above it) in LOCAL_LLM_ALLOWED_ROOTS",
                path.display(),
                root.display(),
                root.display()
            )));
        }
        return read_policy_file(&path.canonicalize().unwrap_or(path));
    }
    let path = root.join(POLICY_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => return read_policy_file(&path),
        Ok(_) => {
            return Err(Error::Policy(format!(
                "{} is not a regular file (a symlink or folder); make it a plain file",
                path.display()
            )));
        }
        Err(_) => {}
    }
    if under_allowed_roots(root) {
        return Ok(LoadedPolicy {
            policy: Policy::default_for_allowed_root(),
            path: None,
            digest: None,
        });
    }
    Err(Error::Policy(format!(
        "{} has no {POLICY_FILE}; run `local-llm-worker init-project --workspace-root {}` to write one \
         (or list the folder in LOCAL_LLM_ALLOWED_ROOTS)",
        root.display(),
        root.display()
    )))
}

fn under_allowed_roots(root: &Path) -> bool {
    let Some(list) = std::env::var_os("LOCAL_LLM_ALLOWED_ROOTS") else {
        return false;
    };
    std::env::split_paths(&list)
        .filter(|p| p.is_absolute())
        .filter_map(|p| p.canonicalize().ok())
        .any(|allowed| root.starts_with(allowed))
}

/// Parse a policy from the text of `path`.
pub fn parse(text: &str, path: &Path) -> Result<Policy> {
    let policy: Policy = toml::from_str(text).map_err(|e| {
        Error::Policy(format!(
            "{} is not a valid policy: {}",
            path.display(),
            e.to_string().trim_end()
        ))
    })?;
    policy.check(&path.display().to_string())?;
    let mut policy = policy;
    crate::policy::defaults::resolve(&mut policy, text);
    Ok(policy)
}

/// Read and parse the policy file at `path` through one handle: its owner and mode are checked on that handle
/// ([`crate::trust::check_owner`]) and the bytes parsed are the bytes digested.
pub fn read_policy_file(path: &Path) -> Result<LoadedPolicy> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| Error::Policy(format!("cannot read {}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        // `path` is canonical or checked not to be a symlink: one swapped in since is not followed.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(cannot)?;
    let meta = f.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::Policy(format!(
            "{} is not a regular file; make it a plain file",
            path.display()
        )));
    }
    crate::trust::check_owner(path, &meta)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(cannot)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::Policy(format!(
            "cannot read {}: it is not UTF-8 text",
            path.display()
        ))
    })?;
    Ok(LoadedPolicy {
        policy: parse(&text, path)?,
        path: Some(path.to_path_buf()),
        digest: Some(crate::digest::sha256_hex(text.as_bytes())),
    })
}
