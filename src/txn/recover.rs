//! Recovery after a kill: every interrupted apply recorded in the state folder is finished (every file already
//! holds its post-image: flushed and kept) or undone (the pre-images put back through folder handles, into files
//! that still hold what the apply wrote). A journal is acted on only once every entry in it passed [`validate`],
//! as strictly as a patch; nothing here blocks on a file that is not a regular one, and a recovery that is stuck
//! anyway (a file system that does not answer) is given up on after [`recover_timeout`] by `recover`, and runs in
//! the background of the MCP server, whose applies to a workspace it has not reached yet wait for it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::digest::git_blob_id;
use crate::policy::POLICY_FILE;
use crate::workspace::Workspace;

use super::TEMP_PREFIX;
use super::apply::{PutBack, put_back, put_back_removed, remove_created};
use super::fsat;
use super::journal_doc::{FoundJournal, JOURNAL_VERSION, JournalDoc, parse_journal};
use super::journal_v1::read_journal_v1;
use super::lock::{WorkspaceLock, workspace_key};
use super::plan::permission_bits;
use super::plan::split_rel;
use crate::error::{Error, Result};

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

/// How long `local-llm-worker recover` waits for a recovery, and how long the MCP server lets one run before it
/// logs that it is stuck: 30 s (in debug builds, `LLW_RECOVER_TIMEOUT_MS` sets it, for the tests).
pub fn recover_timeout() -> Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("LLW_RECOVER_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Duration::from_millis(ms);
    }
    Duration::from_secs(30)
}

/// What the recovery running in this process is looking at, for the message when it is stuck.
static DOING: Mutex<String> = Mutex::new(String::new());

fn doing(what: String) {
    *DOING.lock().unwrap_or_else(|e| e.into_inner()) = what;
}

fn now_doing() -> String {
    DOING.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Finish or undo every interrupted apply recorded in the state folder's journals. The journal of a workspace
/// whose lock another process holds (an apply still running) is left alone.
pub fn recover_all(state: &Path) -> Vec<Recovery> {
    let mut out = Vec::new();
    recover_each(state, |r| out.push(r));
    out
}

/// [`recover_all`] on a thread of its own, waited for at most `timeout`: what was recovered, and, when it did not
/// finish in time, the message that says what it is stuck on (the thread is left where it blocked).
pub fn recover_all_within(state: &Path, timeout: Duration) -> (Vec<Recovery>, Option<String>) {
    use std::sync::mpsc::RecvTimeoutError;
    let (tx, rx) = std::sync::mpsc::channel();
    let st = state.to_path_buf();
    let started = std::thread::Builder::new()
        .name("recovery".into())
        .spawn(move || {
            recover_each(&st, |r| {
                let _ = tx.send(r);
            })
        });
    if let Err(e) = started {
        return (Vec::new(), Some(format!("cannot start the recovery: {e}")));
    }
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(r) => out.push(r),
            Err(RecvTimeoutError::Disconnected) => return (out, None),
            Err(RecvTimeoutError::Timeout) => return (out, Some(stuck_message(timeout))),
        }
    }
}

fn stuck_message(after: Duration) -> String {
    format!(
        "the recovery of interrupted applies did not finish within {} s: it is stuck on {} (a file on a file system \
         that does not answer?). What it finished is above; nothing after that was looked at. Find out why that \
         cannot be read, then run `local-llm-worker recover` again",
        after.as_secs_f64().round(),
        match now_doing() {
            d if d.is_empty() => "the state folder".to_string(),
            d => d,
        }
    )
}

/// The recovery the MCP server runs in the background when it starts.
struct Background {
    state: PathBuf,
    /// The keys of the workspaces with an interrupted apply; `None`: not known (a version 1 journal folder).
    pending: Option<Vec<String>>,
    started: Instant,
    finished: bool,
    reports: Vec<Recovery>,
}

static BACKGROUND: Mutex<Option<Background>> = Mutex::new(None);
static FINISHED: Condvar = Condvar::new();

/// How long an apply waits for the background recovery of its workspace before it is refused.
const APPLY_WAITS_FOR_RECOVERY: Duration = Duration::from_secs(5);

/// Start recovering every interrupted apply in `state` on a thread of its own and return at once (the MCP server
/// answers `initialize` meanwhile). Each recovery is logged to stderr as it ends; one still running after
/// [`recover_timeout`] is logged as stuck. An apply to a workspace the recovery has not finished with waits a few
/// seconds, then is refused with what it is waiting for; one whose recovery needs attention is refused naming the
/// problem. When no apply was interrupted this costs one `readdir` and one `stat` per workspace ever applied to.
pub fn recover_in_background(state: PathBuf) {
    let Some(pending) = pending_journals(&state) else {
        return;
    };
    *BACKGROUND.lock().unwrap_or_else(|e| e.into_inner()) = Some(Background {
        state: state.clone(),
        pending,
        started: Instant::now(),
        finished: false,
        reports: Vec::new(),
    });
    let finish = || {
        if let Some(b) = BACKGROUND
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            b.finished = true;
        }
        FINISHED.notify_all();
    };
    let st = state.clone();
    let spawned = std::thread::Builder::new()
        .name("recovery".into())
        .spawn(move || {
            recover_each(&st, |r| {
                eprintln!(
                    "local-llm-worker: recovered an interrupted apply: {}",
                    crate::screen::text(&r.to_string())
                );
                if let Some(b) = BACKGROUND
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_mut()
                {
                    b.reports.push(r);
                }
            });
            finish();
        });
    if let Err(e) = spawned {
        eprintln!("local-llm-worker: cannot start the recovery of interrupted applies: {e}");
        finish();
        return;
    }
    let _ = std::thread::Builder::new()
        .name("recovery-watch".into())
        .spawn(|| {
            let timeout = recover_timeout();
            let guard = BACKGROUND.lock().unwrap_or_else(|e| e.into_inner());
            let (guard, _) = FINISHED
                .wait_timeout_while(guard, timeout, |b| b.as_ref().is_some_and(|b| !b.finished))
                .unwrap_or_else(|e| e.into_inner());
            if guard.as_ref().is_some_and(|b| !b.finished) {
                drop(guard);
                eprintln!(
                    "local-llm-worker: {}; until it does, applies to the workspaces it has not finished are refused",
                    stuck_message(timeout)
                );
            }
        });
}

/// The keys of the workspaces whose journal holds an interrupted apply (`Some(None)`: a version 1 journal folder,
/// whose workspace is known only once read); `None` when there is nothing to recover.
fn pending_journals(state: &Path) -> Option<Option<Vec<String>>> {
    // A symlinked `journals/` is never read here; the next apply refuses it, naming it.
    if journals_is_a_symlink(state) {
        return None;
    }
    let mut keys = Vec::new();
    for e in fs::read_dir(state.join("journals")).ok()?.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            return Some(None);
        }
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(key) = name.strip_suffix(".journal")
            && (meta.len() > 0 || !meta.is_file())
        {
            keys.push(key.to_string());
        }
    }
    (!keys.is_empty()).then_some(Some(keys))
}

/// Before an apply to `root` with the state folder `state`, or a proposal's reading of its files (`what` names which):
/// wait (a few seconds at most) while the background recovery has not finished with that workspace, so nothing is
/// read or written half recovered; then refuse, saying what it waits for.
pub fn wait_for_recovery(state: &Path, root: &Path, what: &str) -> Result<()> {
    let key = workspace_key(root);
    let waits = |b: &Option<Background>| {
        b.as_ref().is_some_and(|b| {
            !b.finished
                && b.state == state
                && b.pending.as_ref().is_none_or(|keys| keys.contains(&key))
        })
    };
    let guard = BACKGROUND.lock().unwrap_or_else(|e| e.into_inner());
    let (guard, _) = FINISHED
        .wait_timeout_while(guard, APPLY_WAITS_FOR_RECOVERY, |b| waits(b))
        .unwrap_or_else(|e| e.into_inner());
    match guard.as_ref() {
        Some(b) if waits(&guard) => Err(Error::io_message(format!(
            "an interrupted apply to {} is still being recovered (for {} s now; at {}): this {what} waited {} s and \
             was refused, nothing was read or written. Retry in a moment; if the recovery stays stuck (the server's log says \
             so after {} s), restart the server or run `local-llm-worker recover` and see what it says",
            root.display(),
            b.started.elapsed().as_secs(),
            now_doing(),
            APPLY_WAITS_FOR_RECOVERY.as_secs(),
            recover_timeout().as_secs()
        ))),
        _ => Ok(()),
    }
}

/// The problems the background recovery of this process reported for `root`, if it reported any.
pub(super) fn recovery_problems(state: &Path, root: &Path) -> Option<Vec<String>> {
    let guard = BACKGROUND.lock().unwrap_or_else(|e| e.into_inner());
    let b = guard.as_ref().filter(|b| b.state == state)?;
    let shown = root.display().to_string();
    let problems: Vec<String> = b
        .reports
        .iter()
        .filter(|r| r.workspace == shown)
        .flat_map(|r| r.problems.iter().cloned())
        .collect();
    (!problems.is_empty()).then_some(problems)
}

/// Whether the state folder `state` lies inside (or is) the folder `root`, comparing canonical paths (a state
/// folder that does not exist yet by its nearest existing ancestor).
pub(super) fn state_inside(state: &Path, root: &Path) -> bool {
    let mut rest = Vec::new();
    let mut cur = state;
    loop {
        if let Ok(mut canonical) = cur.canonicalize() {
            canonical.extend(rest.iter().rev());
            return canonical.starts_with(root);
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                cur = parent;
            }
            _ => return state.starts_with(root),
        }
    }
}

/// A recovery that could not look at the journal `path` at all.
fn unreadable(path: &Path, problem: String) -> Recovery {
    Recovery {
        workspace: path.display().to_string(),
        outcome: Outcome::Incomplete,
        files: Vec::new(),
        problems: vec![problem],
    }
}

/// Whether the state folder's `journals/` is a symlink (never followed: recovery would read and truncate files
/// wherever it leads).
fn journals_is_a_symlink(state: &Path) -> bool {
    fs::symlink_metadata(state.join("journals")).is_ok_and(|m| m.file_type().is_symlink())
}

/// Recover every journal of `state`, handing each result to `each` as it is made.
fn recover_each(state: &Path, mut each: impl FnMut(Recovery)) {
    if journals_is_a_symlink(state) {
        eprintln!(
            "local-llm-worker: {} is a symlink; nothing is recovered through it: remove it (journals are never kept \
             elsewhere)",
            state.join("journals").display()
        );
        return;
    }
    let Ok(entries) = fs::read_dir(state.join("journals")) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        doing(format!("the journal {}", path.display()));
        if ft.is_dir() {
            recover_v1_folder(&path, state, &mut each);
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(key) = name.strip_suffix(".journal") else {
            continue;
        };
        if !ft.is_file() {
            each(unreadable(
                &path,
                format!(
                    "{} is not a regular file (the worker never makes one there): it was not opened; remove it",
                    path.display()
                ),
            ));
            continue;
        }
        if e.metadata().is_ok_and(|m| m.len() == 0) {
            // The usual case: no apply of that workspace was interrupted.
            continue;
        }
        recover_journal_file(&path, key, state, &mut each);
    }
    doing(String::new());
}

/// A version-1 journal (a folder per apply): read once to learn the workspace, then again under its lock.
fn recover_v1_folder(path: &Path, state: &Path, each: &mut impl FnMut(Recovery)) {
    let Some(first) = read_journal_v1(path) else {
        let _ = fs::remove_dir_all(path);
        return;
    };
    let key = workspace_key(&first.doc.workspace);
    let _lock = match WorkspaceLock::try_take(state, &key) {
        Ok(Some(lock)) => lock,
        Ok(None) => return,
        Err(e) => return each(unreadable(path, e.to_string())),
    };
    if let Some(found) = read_journal_v1(path) {
        let r = recover_one(&found, path, state, None);
        if r.problems.is_empty() {
            let _ = fs::remove_dir_all(path);
        }
        each(r);
    }
}

/// A journal file of the workspace `key` that is not empty: recovered under the workspace's lock (skipped while an
/// apply holds it), opened without following a symlink or blocking, emptied once nothing is left to do.
fn recover_journal_file(path: &Path, key: &str, state: &Path, each: &mut impl FnMut(Recovery)) {
    let _lock = match WorkspaceLock::try_take(state, key) {
        Ok(Some(lock)) => lock,
        // An apply is running: its journal is not for recovery.
        Ok(None) => return,
        Err(e) => return each(unreadable(path, e.to_string())),
    };
    let opened = {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
    };
    let file = match opened {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
        Ok(_) => return,
        Err(e) => {
            return each(unreadable(
                path,
                format!("cannot open {}: {e}", path.display()),
            ));
        }
    };
    let mut bytes = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(&mut &file, &mut bytes) {
        return each(unreadable(
            path,
            format!("cannot read {}: {e}", path.display()),
        ));
    }
    if bytes.is_empty() {
        return;
    }
    let clear = || {
        let _ = file.set_len(0).and_then(|_| file.sync_data());
    };
    let Some(found) = parse_journal(&bytes) else {
        // Killed before the journal was complete: nothing in the workspace had changed yet.
        clear();
        return;
    };
    let r = recover_one(&found, path, state, Some(key));
    if r.problems.is_empty() {
        clear();
    }
    each(r);
}

/// The longest path and name the worker handles (Linux's PATH_MAX, with its NUL, and NAME_MAX).
const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// Why the workspace-relative path `rel` of a journal may not be acted on, if it may not: the rules of a patch's
/// paths (relative, plain, nothing git would quote, within PATH_MAX and NAME_MAX) and never a `.git` folder or the
/// policy file, in any case, at any depth.
fn bad_path(rel: &str) -> Option<String> {
    if rel.is_empty() {
        return Some("the path is empty".into());
    }
    if rel.starts_with('/') {
        return Some("the path is absolute".into());
    }
    if rel.len() >= PATH_MAX {
        return Some(format!("the path is {} bytes, over PATH_MAX", rel.len()));
    }
    if rel
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '"' | '\\' | '\''))
    {
        return Some("the path holds whitespace, quotes, backslashes or control characters".into());
    }
    for comp in rel.split('/') {
        match comp {
            "" => return Some("the path has an empty component".into()),
            "." | ".." => return Some("the path uses `.` or `..`".into()),
            c if c.len() > NAME_MAX => {
                return Some(format!("a name is {} bytes, over NAME_MAX", c.len()));
            }
            c if c.eq_ignore_ascii_case(".git") => {
                return Some("the path is inside a .git folder".into());
            }
            c if c.eq_ignore_ascii_case(POLICY_FILE) => {
                return Some("the path is the policy file".into());
            }
            _ => {}
        }
    }
    None
}

/// Why the mode `mode` of a journal entry may not be used, if it may not. Version 3 writes the git mode, 0o100644 or
/// 0o100755 (the plain 0644 and 0755 are accepted too); versions 1 and 2 wrote the file's `st_mode`, accepted when
/// it is a regular file's without setuid, setgid, sticky or world-writable bits. Either way recovery never changes
/// the mode of an existing file, and a file it must create again gets 0644 or 0755.
fn bad_mode(mode: u32, version: u32) -> Option<String> {
    let ok = match version {
        3.. => matches!(mode, 0o100644 | 0o100755 | 0o644 | 0o755),
        _ => matches!(mode & 0o170000, 0 | 0o100000) && mode & 0o7002 == 0 && mode & !0o177777 == 0,
    };
    (!ok).then(|| format!("mode {mode:o} is not a regular file's 0644 or 0755"))
}

fn is_blob_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Check every entry of a journal as strictly as a patch, before anything in it is acted on: the workspace (an
/// absolute canonical folder path, the one the journal's file name belongs to, not holding the state folder, with a
/// policy), every path (plain, relative, never `.git` or the policy file in any case, and accepted by the
/// workspace's policy like a patch's path) and mode, the blob ids, and the folders to create (inside the workspace,
/// folders of the journal's new files only). Returns, for each file, the index of the first folder component the apply created; or every reason the
/// journal is refused.
pub(super) fn validate(
    found: &FoundJournal,
    state: &Path,
    key: Option<&str>,
) -> std::result::Result<Vec<Option<usize>>, String> {
    let doc = &found.doc;
    let root = &doc.workspace;
    let mut why = Vec::new();
    let plain_root = root.is_absolute()
        && root.components().all(|c| {
            matches!(
                c,
                std::path::Component::RootDir | std::path::Component::Normal(_)
            )
        });
    if !plain_root || root.canonicalize().ok().as_deref() != Some(root.as_path()) {
        why.push(format!(
            "its workspace {} is not an existing folder's canonical absolute path",
            root.display()
        ));
    } else if state_inside(state, root) {
        why.push(format!(
            "its workspace {} holds the state folder {}",
            root.display(),
            state.display()
        ));
    }
    // The workspace's policy, as a patch would be checked against it: a journal is acted on only in a workspace
    // that has one, and only for paths it allows.
    let scope = match why.is_empty() {
        true => crate::policy::load_untrusted(root)
            .and_then(|l| Workspace::new(root.clone(), &l.policy.paths, l.path.as_deref()))
            .map_err(|e| {
                why.push(format!(
                    "its workspace {} has no policy the worker can read ({e})",
                    root.display()
                ))
            })
            .ok(),
        false => None,
    };
    if let Some(key) = key
        && workspace_key(root) != key
    {
        why.push(format!(
            "its file name belongs to another workspace than the one it names ({})",
            root.display()
        ));
    }
    if !(1..=JOURNAL_VERSION).contains(&doc.version) {
        why.push(format!("its version {} is unknown", doc.version));
    }
    let mut created: Vec<Option<usize>> = Vec::with_capacity(doc.files.len());
    for (i, f) in doc.files.iter().enumerate() {
        let bad = entry_problems(doc, i, scope.as_ref());
        if !bad.is_empty() {
            why.push(format!("entry {} ({:?}): {}", i + 1, f.rel, bad.join(", ")));
        }
        created.push(f.created_from);
    }
    why.extend(created_dirs_problems(doc, &mut created));
    if why.is_empty() {
        Ok(created)
    } else {
        Err(why.join("; "))
    }
}

/// What is wrong with the journal's entry `i` (its path against the workspace's policy `scope`, mode, blob ids,
/// removal, folders to create); empty when nothing is.
fn entry_problems(doc: &JournalDoc, i: usize, scope: Option<&Workspace>) -> Vec<String> {
    let f = &doc.files[i];
    let mut bad = Vec::new();
    bad.extend(bad_path(&f.rel));
    if bad.is_empty()
        && let Some(Err(e)) = scope.map(|ws| ws.check_path(&f.rel))
    {
        bad.push(e.to_string());
    }
    bad.extend(bad_mode(f.mode, doc.version));
    if doc.files[..i].iter().any(|g| g.rel == f.rel) {
        bad.push("the file is listed twice".into());
    }
    if !is_blob_id(&f.post_id) || f.pre_id.as_deref().is_some_and(|id| !is_blob_id(id)) {
        bad.push("a blob id is not one".into());
    }
    if f.removes && (!f.existed || f.post_id != crate::digest::NULL_BLOB_ID) {
        bad.push("it removes a file that did not exist, or keeps a post-image of it".into());
    }
    if f.perm.is_some_and(|p| p & !0o777 != 0) || (f.perm.is_some() && !f.removes) {
        bad.push("its permission bits are not those of a plain file it removes".into());
    }
    if f.existed != f.pre_id.is_some() {
        bad.push("it says the file existed without its blob id, or the reverse".into());
    }
    let folders = split_rel(&f.rel)
        .0
        .split('/')
        .filter(|c| !c.is_empty())
        .count();
    if let Some(from) = f.created_from
        && (f.existed || from >= folders)
    {
        bad.push("its folders to create are not folders of a new file".into());
    }
    bad
}

/// Versions 1 and 2: the folders to create as absolute paths, each one a folder of a new file of the journal. Sets
/// `created` (the first created folder component of each file) from them; returns each folder that is not one.
fn created_dirs_problems(doc: &JournalDoc, created: &mut [Option<usize>]) -> Vec<String> {
    let root = &doc.workspace;
    let mut why = Vec::new();
    for d in &doc.created_dirs {
        let rel = d
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .filter(|r| bad_path(r).is_none());
        let mut used = false;
        if let Some(rel) = rel {
            let depth = rel.split('/').count() - 1;
            for (f, c) in doc.files.iter().zip(created.iter_mut()) {
                let folder = split_rel(&f.rel).0;
                if !f.existed && (folder == rel || folder.starts_with(&format!("{rel}/"))) {
                    used = true;
                    *c = Some(c.map_or(depth, |c| c.min(depth)));
                }
            }
        }
        if !used {
            why.push(format!(
                "the folder to create {} is not a folder of a new file of the journal inside its workspace",
                d.display()
            ));
        }
    }
    why
}

/// What is at a journaled path now.
fn look(root: &Path, rel: &str) -> std::io::Result<fsat::Found> {
    match fsat::open_parent(root, rel) {
        Ok((dir, name)) => dir.look(&name, false),
        // Its folder is not there (not created yet, or removed): neither is the file.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(fsat::Found::Absent),
        Err(e) => Err(e),
    }
}

pub(super) fn recover_one(
    found: &FoundJournal,
    journal: &Path,
    state: &Path,
    key: Option<&str>,
) -> Recovery {
    let doc = &found.doc;
    let root = &doc.workspace;
    let report = |outcome, problems| Recovery {
        workspace: root.display().to_string(),
        outcome,
        files: doc.files.iter().map(|f| f.rel.clone()).collect(),
        problems,
    };
    let created = match validate(found, state, key) {
        Ok(created) => created,
        Err(why) => {
            return report(
                Outcome::Incomplete,
                vec![format!(
                    "the journal {} was refused and nothing in it was acted on: {why}. The worker never writes such \
                     a journal: find out who wrote it (anyone who can write to {} can), then delete it",
                    journal.display(),
                    state.display()
                )],
            );
        }
    };
    doing(format!(
        "the journal {} of {}",
        journal.display(),
        root.display()
    ));
    #[cfg(debug_assertions)]
    if std::env::var_os("LLW_RECOVERY_STALL").is_some() {
        // For the tests: a recovery stuck as on a file system that does not answer.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let mut problems = Vec::new();
    remove_staged_temporaries(doc);
    let mut now = Vec::with_capacity(doc.files.len());
    for f in &doc.files {
        doing(format!("{} in {}", f.rel, root.display()));
        now.push(look(root, &f.rel));
    }
    let all_post = now.iter().zip(&doc.files).all(|(n, f)| match n {
        Ok(fsat::Found::Absent) => f.removes,
        Ok(fsat::Found::File { bytes, .. }) => !f.removes && git_blob_id(bytes) == f.post_id,
        _ => false,
    });
    let outcome = match all_post {
        true => complete(doc, &now, &created, &mut problems),
        false => restore(found, journal, now, &created, &mut problems),
    };
    report(outcome, problems)
}

/// Temporary files staged by the interrupted apply, removed through a handle on their folder.
fn remove_staged_temporaries(doc: &JournalDoc) {
    for f in &doc.files {
        let Ok((dir, _)) = fsat::open_parent(&doc.workspace, &f.rel) else {
            continue;
        };
        for name in dir.names().unwrap_or_default() {
            if name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp") {
                let _ = dir.unlink(&name);
            }
        }
    }
}

/// Every file holds its post-image (`now`): the apply had finished writing. The post-images may still be only in
/// memory (killed before the apply's flush): flush them before the journal goes.
fn complete(
    doc: &JournalDoc,
    now: &[std::io::Result<fsat::Found>],
    created: &[Option<usize>],
    problems: &mut Vec<String>,
) -> Outcome {
    let root = &doc.workspace;
    for ((n, f), from) in now.iter().zip(&doc.files).zip(created) {
        if let Ok(fsat::Found::File { file, .. }) = n
            && let Err(e) = file
                .sync_all()
                .and_then(|_| sync_folders_of(root, &f.rel, *from))
        {
            problems.push(format!("{}: cannot flush it to disk: {e}", f.rel));
        }
        // A removal lasts once its folder is flushed.
        if f.removes
            && let Err(e) = fsat::open_parent(root, &f.rel).and_then(|(dir, _)| dir.sync())
        {
            problems.push(format!("{}: cannot flush its removal to disk: {e}", f.rel));
        }
    }
    match problems.is_empty() {
        true => Outcome::Completed,
        false => Outcome::Incomplete,
    }
}

/// Not every file holds its post-image: put every file that holds what the apply wrote back to its pre-image, and
/// remove the folders the apply created; a file someone else changed meanwhile keeps its bytes and is reported.
fn restore(
    found: &FoundJournal,
    journal: &Path,
    now: Vec<std::io::Result<fsat::Found>>,
    created: &[Option<usize>],
    problems: &mut Vec<String>,
) -> Outcome {
    let doc = &found.doc;
    let root = &doc.workspace;
    for (i, n) in now.into_iter().enumerate() {
        doing(format!("{} in {}", doc.files[i].rel, root.display()));
        if let Some(problem) = restore_file(found, journal, i, n) {
            problems.push(problem);
        }
    }
    for (f, from) in doc.files.iter().zip(created).rev() {
        if let Some(from) = from
            && let Err(left) = remove_created(root, &f.rel, *from)
            && !left.not_empty()
        {
            problems.push(format!(
                "the folder {left} the apply created could not be removed"
            ));
        }
    }
    match problems.is_empty() {
        true => Outcome::Restored,
        false => Outcome::Incomplete,
    }
}

/// Put the journal's file `i`, found as `n`, back to its pre-image where it holds what the apply wrote; the problem
/// when it cannot or may not be.
fn restore_file(
    found: &FoundJournal,
    journal: &Path,
    i: usize,
    n: std::io::Result<fsat::Found>,
) -> Option<String> {
    let f = &found.doc.files[i];
    let root = &found.doc.workspace;
    match n {
        Err(e) => return Some(format!("{}: {e}", f.rel)),
        Ok(fsat::Found::Other(kind)) => {
            return Some(format!(
                "{} is {kind}, not a regular file: the worker never opens one, and left it as it is. Remove \
                 it (the journal {} keeps the previous bytes), then run `local-llm-worker recover` again",
                f.rel,
                journal.display()
            ));
        }
        Ok(fsat::Found::File { bytes, .. })
            if f.existed && Some(git_blob_id(&bytes)) == f.pre_id =>
        {
            return None;
        }
        Ok(fsat::Found::Absent) if !f.existed => return None,
        Ok(_) => {}
    }
    let pre = match &found.pres[i] {
        Ok(pre) => pre.as_deref(),
        Err(e) => return Some(e.clone()),
    };
    if pre.map(git_blob_id) != f.pre_id {
        return Some(format!(
            "{}: the journal's copy is damaged (its blob id is not the recorded one); the file was left as it is: \
             put it right by hand, then delete {}",
            f.rel,
            journal.display()
        ));
    }
    let post = found.posts[i]
        .as_deref()
        .filter(|post| git_blob_id(post) == f.post_id);
    let back = match (f.removes, pre) {
        (true, Some(pre)) => {
            put_back_removed(root, &f.rel, pre, f.perm.unwrap_or(permission_bits(f.mode)))
        }
        _ => put_back(root, &f.rel, pre, post, f.mode),
    };
    match back {
        Ok(PutBack::Kept) => Some(format!(
            "{} was changed by someone else after the interrupted apply (it holds neither its previous bytes \
             nor the patch's), so it was left as it is; the journal {} keeps its previous bytes. To keep the \
             newer bytes, empty the journal (`: > {}`); to have the previous ones back, put them there by \
             hand (or undo the newer edit) and run `local-llm-worker recover` again",
            f.rel,
            journal.display(),
            journal.display()
        )),
        Ok(_) => None,
        Err(e) => Some(format!("{}: {e}", f.rel)),
    }
}

/// Flush the folder of `rel` and, when the apply created folders for it (from the component `from` down), the
/// folder each of them was created in.
fn sync_folders_of(root: &Path, rel: &str, from: Option<usize>) -> std::io::Result<()> {
    fsat::open_parent(root, rel)?.0.sync()?;
    match from {
        Some(from) => {
            fsat::sync_folders(root, &split_rel(rel).0.split('/').collect::<Vec<_>>(), from)
        }
        None => Ok(()),
    }
}
