//! Whose policy: the rules that decide whether a `local-llm-worker.toml` may be used at all, and the trust step.
//!
//! A policy names commands the worker runs and the variable whose value it sends to a URL, so it is used only when
//! the person running the worker may have written it (git's `safe.directory` rule, CVE-2022-24765):
//! - the upward search for a policy ([`search_up`]) stops at a folder owned by neither the user nor root;
//! - a policy file owned by another user, or writable by others or by a group other than the owner's private group,
//!   is refused ([`check_owner`]), naming its owner and the fix;
//! - a policy that names validation commands or a key variable ([`needs_trust`]) is used only once the user has
//!   trusted that exact content with `local-llm-worker trust`: its SHA-256 is recorded under the policy's canonical
//!   path in the user's state folder's `trust/` ([`records_state`]; never in the repository), and a changed policy must be trusted again
//!   ([`require`]). A policy with neither may be used untrusted: it can only read the allowed files and send them,
//!   without a key, to its own URL.
//!
//! Records are read and written through folder handles that never follow a symlink (`workspace::fs`): a symlinked
//! `trust/` or record is refused. Not here: what the policy says (`policy`), how commands run (`checks`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::policy::{LoadedPolicy, Policy};
use crate::workspace::fs::Dir;
use crate::workspace::state;

/// The state folder's sub-folder that holds the trust records.
pub const TRUST_DIR: &str = "trust";

/// The folder whose `trust/` holds the records: `LOCAL_LLM_STATE_DIR`, else `$XDG_STATE_HOME/local-llm-delegator`,
/// else `~/.local/state/local-llm-delegator`: the user's, the same for the worker started from a shell, by Claude
/// Code or by Codex (unlike [`crate::ledger::state_dir`], never the Claude plugin's own data folder, so that what
/// `local-llm-worker trust` records in a shell is what the plugin's server reads).
pub fn records_state() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("LOCAL_LLM_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("local-llm-delegator")))
        .or_else(|| var("HOME").map(|d| d.join(".local/state/local-llm-delegator")))
}

/// The user the worker runs as (its effective uid).
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether `uid` is the user or root: the only owners a policy (or a folder the search looks in) may have.
fn acceptable_owner(uid: u32) -> bool {
    uid == me() || uid == 0
}

/// A uid as a person reads it: `nobody (uid 65534)`, or `uid 1234` when `/etc/passwd` does not name it.
pub fn owner_name(uid: u32) -> String {
    match user_name(uid) {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// The name `/etc/passwd` gives `uid`, if any.
fn user_name(uid: u32) -> Option<String> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id = f.nth(1)?;
        (id.parse::<u32>().ok()? == uid).then(|| name.to_string())
    })
}

/// Whether `gid` is the private group of the user `uid` (the user-private-group scheme of Debian, Ubuntu and
/// Fedora, where the umask 002 makes every file group-writable): a group named like the user, with no other member.
/// Group write there gives no one else the file.
fn private_group(gid: u32, uid: u32) -> bool {
    let Some(user) = user_name(uid) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string("/etc/group") else {
        return false;
    };
    text.lines().any(|l| {
        let f: Vec<&str> = l.split(':').collect();
        f.len() >= 4
            && f[2].parse::<u32>().ok() == Some(gid)
            && f[0] == user
            && f[3].split(',').all(|m| m.is_empty() || m == user)
    })
}

/// Refuse the policy file at `path` (whose open handle's metadata is `meta`) unless it is owned by the user or root
/// and writable by nobody else; the refusal names the owner and the fix.
pub fn check_owner(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if !acceptable_owner(meta.uid()) {
        return Err(Error::Trust(format!(
            "{} is owned by {}, not by you ({}) or root, so it is not used: another user may have planted it (its \
             commands would run as you, its key variable go to its URL). If you wrote it, take it back with \
             `chown {} {}`; otherwise remove it and run `local-llm-worker init-project` in your project",
            path.display(),
            owner_name(meta.uid()),
            owner_name(me()),
            me(),
            path.display()
        )));
    }
    let group_writable = meta.mode() & 0o020 != 0 && !private_group(meta.gid(), meta.uid());
    if meta.mode() & 0o002 != 0 || group_writable {
        return Err(Error::Trust(format!(
            "{} is writable by {} (mode {:o}), so anyone there could change the commands it runs; make it yours \
             only with `chmod go-w {}`",
            path.display(),
            if meta.mode() & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            },
            meta.mode() & 0o7777,
            path.display()
        )));
    }
    Ok(())
}

/// The nearest folder from `start` up that holds a policy file, as git finds `.git`; the search stops (and finds
/// nothing) at a folder owned by neither the user nor root: a policy in it or above it is never picked up.
pub fn search_up(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        match std::fs::metadata(dir) {
            Ok(m) if acceptable_owner(m.uid()) => {}
            _ => return None,
        }
        if std::fs::symlink_metadata(dir.join(crate::policy::POLICY_FILE)).is_ok() {
            return Some(dir.to_path_buf());
        }
    }
    None
}

/// Whether a policy must be trusted before it is used: it names validation commands, or a key variable (its own
/// `[provider] api_key_env` or its provider kind's) whose value would be sent to its URL.
pub fn needs_trust(policy: &Policy) -> bool {
    !policy.validation.commands.is_empty() || policy.api_key_env().is_some()
}

/// Policies trusted for this process only (`calibrate`'s throwaway workspaces, derived from a trusted policy):
/// canonical path and digest. Never written anywhere.
static IN_PROCESS: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// Trust the policy at `path` with content digest `digest` for the rest of this process (nothing is recorded).
pub fn allow_in_process(path: &Path, digest: &str) {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if let Ok(mut v) = IN_PROCESS.lock() {
        v.retain(|(p, _)| p != &path);
        v.push((path, digest.to_string()));
    }
}

/// The record's file name for a policy path: the SHA-256 of the canonical path (any path fits in one name).
fn record_name(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    format!(
        "{}.trusted",
        crate::digest::sha256_hex(path.as_os_str().as_bytes())
    )
}

/// The state folder's `trust/` through a handle (created 0700 when `create`); `None` when it does not exist.
fn trust_dir(state: &Path, create: bool) -> Result<Option<Dir>> {
    let io = |e: std::io::Error| {
        Error::Trust(format!(
            "cannot open the trust records {}: {e}; remove what is there (it must be a plain folder, never a \
             symlink)",
            state.join(TRUST_DIR).display()
        ))
    };
    match create {
        true => state::sub(state, TRUST_DIR).map(Some).map_err(io),
        false => state::existing_sub(state, TRUST_DIR).map_err(io),
    }
}

/// Whether the policy at canonical `path` with content `digest` was trusted (recorded, or allowed in-process).
pub fn is_trusted(state: Option<&Path>, path: &Path, digest: &str) -> Result<bool> {
    if let Ok(v) = IN_PROCESS.lock()
        && v.iter().any(|(p, d)| p == path && d == digest)
    {
        return Ok(true);
    }
    let Some(state) = state else {
        return Ok(false);
    };
    let Some(dir) = trust_dir(state, false)? else {
        return Ok(false);
    };
    let name = record_name(path);
    let bytes = dir.read_file(&name).map_err(|e| {
        Error::Trust(format!(
            "cannot read the trust record {}: {e}; remove it and run `local-llm-worker trust` again",
            state.join(TRUST_DIR).join(&name).display()
        ))
    })?;
    Ok(bytes.is_some_and(|b| {
        let text = String::from_utf8_lossy(&b);
        let mut f = text.splitn(2, ' ');
        f.next() == Some(digest) && f.next().map(|p| p.trim_end_matches('\n')) == path.to_str()
    }))
}

/// Record that the policy at canonical `path` with content `digest` is trusted; returns the record's path.
pub fn record(state: &Path, path: &Path, digest: &str) -> Result<PathBuf> {
    let dir = trust_dir(state, true)?.ok_or_else(|| {
        Error::Trust(format!("cannot create {}", state.join(TRUST_DIR).display()))
    })?;
    let name = record_name(path);
    let at = state.join(TRUST_DIR).join(&name);
    let line = format!("{digest} {}\n", path.display());
    let io = |e: std::io::Error| {
        Error::Trust(format!(
            "cannot write the trust record {}: {e}",
            at.display()
        ))
    };
    // Written beside and renamed over: a reader sees the old record or the new one, never a part.
    let (tmp, file) = dir.write_temp(line.as_bytes(), 0o600).map_err(io)?;
    let done = file
        .sync_all()
        .and_then(|()| dir.rename(&tmp, &name))
        .map_err(io);
    if done.is_err() {
        let _ = dir.unlink(&tmp);
    }
    done?;
    Ok(at)
}

/// Refuse `loaded` (the policy of the workspace at `root`) when it needs trust and its exact content was not
/// trusted: the refusal holds the command to run and what the policy would do.
pub fn require(loaded: &LoadedPolicy, root: &Path) -> Result<()> {
    let (Some(path), Some(digest)) = (&loaded.path, &loaded.digest) else {
        return Ok(());
    };
    if !needs_trust(&loaded.policy) {
        return Ok(());
    }
    if is_trusted(records_state().as_deref(), path, digest)? {
        return Ok(());
    }
    Err(untrusted(&loaded.policy, path, root))
}

/// The refusal for an untrusted policy.
pub fn untrusted(policy: &Policy, path: &Path, root: &Path) -> Error {
    Error::Trust(format!(
        "{} is not trusted (new, or changed since it was trusted), so nothing it says is used: {}. Read it; if \
         that is what you want, run `{}` (an agent must not run it for you)",
        path.display(),
        summary(policy).join("; "),
        trust_command(path, root)
    ))
}

/// The command that trusts the policy at `path` for the workspace at `root`.
pub fn trust_command(path: &Path, root: &Path) -> String {
    let own = root.join(crate::policy::POLICY_FILE);
    let forced = path != own && path != own.canonicalize().unwrap_or_default();
    match forced {
        true => format!(
            "LOCAL_LLM_CONFIG={} local-llm-worker trust --workspace-root {}",
            path.display(),
            root.display()
        ),
        false => format!("local-llm-worker trust --workspace-root {}", root.display()),
    }
}

/// What the policy would do, one line per item: commands, URL, key variable (its name), isolation.
pub fn summary(policy: &Policy) -> Vec<String> {
    let v = &policy.validation;
    let mut out = vec![format!(
        "provider {} at {}",
        policy.provider.kind.name(),
        policy.base_url()
    )];
    out.push(policy.key_destination());
    if v.commands.is_empty() {
        out.push("runs no commands".into());
    } else {
        let list: Vec<String> = v.commands.iter().map(|c| format!("`{c}`")).collect();
        out.push(format!(
            "runs with `sh -c` in the workspace after every apply: {}",
            list.join(", ")
        ));
        if v.on_propose {
            out.push(format!(
                "also on every proposal before approval, isolation = \"{}\"{}",
                v.isolation.name(),
                match v.isolation {
                    crate::confine::Isolation::Copy =>
                        " (UNCONFINED: the model's code runs with your rights and network)",
                    crate::confine::Isolation::Confined =>
                        " (no network, no home, no view of the worker)",
                }
            ));
        }
    }
    out
}

/// What `local-llm-worker trust` did: the policy trusted, what it would do, where the record is.
#[derive(Debug, Clone)]
pub struct Trusted {
    /// The policy file (canonical).
    pub path: PathBuf,
    /// Its content's SHA-256.
    pub digest: String,
    /// [`summary`] of it.
    pub summary: Vec<String>,
    /// The record written in the state folder.
    pub record: PathBuf,
}

/// Check ownership and trust the policy that `root`'s commands would use (`LOCAL_LLM_CONFIG`'s file when set).
pub fn trust_workspace(root: &Path) -> Result<Trusted> {
    let loaded = crate::policy::load_untrusted(root)?;
    trust_loaded(&loaded, root)
}

/// Check ownership and trust the policy file at `path` as it is now (what `init-project` and `calibrate --write`
/// wrote).
pub fn trust_file(path: &Path) -> Result<Trusted> {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let loaded = crate::policy::read_policy_file(&path)?;
    trust_loaded(&loaded, path.parent().unwrap_or(Path::new("/")))
}

fn trust_loaded(loaded: &LoadedPolicy, root: &Path) -> Result<Trusted> {
    let (Some(path), Some(digest)) = (&loaded.path, &loaded.digest) else {
        return Err(Error::Policy(format!(
            "{} has no {} to trust (the default policy of LOCAL_LLM_ALLOWED_ROOTS needs no trust)",
            root.display(),
            crate::policy::POLICY_FILE
        )));
    };
    let state = records_state().ok_or_else(|| {
        Error::io_message(
            "no state folder to keep the trust record in: set LOCAL_LLM_STATE_DIR or HOME",
        )
    })?;
    let record = record(&state, path, digest)?;
    Ok(Trusted {
        path: path.clone(),
        digest: digest.clone(),
        summary: summary(&loaded.policy),
        record,
    })
}

#[cfg(test)]
mod tests;
