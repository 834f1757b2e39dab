//! The apply transaction: the ONLY code that writes to a workspace.
//!
//! Given the exact canonical patch bytes the primary approved, it:
//! 1. takes the workspace's lock (an `flock` in the worker's state folder), so two applies never interleave;
//! 2. parses the patch strictly and re-resolves every target under the current policy (component by component, no
//!    symlinks, inside `paths.allowed`, never `.git/`);
//! 3. checks every pre-image: the file's current git blob id and mode must equal the patch's (a file to create must
//!    still be absent); computes every post-image in memory and checks its promised blob id;
//! 4. writes a journal (the pre-images, the promised post-image ids, the folders it will create) to the state
//!    folder and flushes it, before the first byte of the workspace changes;
//! 5. writes each post-image to a temporary file beside its target (same folder, same permissions, fsynced), then
//!    renames them over the targets; any failure puts back the files already renamed;
//! 6. reads every target back and checks its blob id;
//! 7. runs the caller's validation; when it fails, restores the exact previous bytes (and removes created files and
//!    folders) and reports it;
//! 8. deletes the journal.
//!
//! All files or none: a refusal in steps 1-3 writes nothing; a failure in 5-7 restores the pre-images. A kill at any
//! moment leaves a journal; [`recover_all`] (run when the MCP server starts, and by `local-llm-worker recover`)
//! then puts the workspace back to exactly the pre-images, or, when every file already holds its post-image, keeps
//! that, and says which. Leftover temporary files are removed.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::digest::{git_blob_id, sha256_hex};
use crate::error::{Error, Result};
use crate::patch::MODE_EXECUTABLE;
use crate::patch::canonical::{self, CanonicalFile};
use crate::scope::{OnDisk, Workspace};

/// One file the transaction will write.
struct Planned {
    rel: String,
    abs: PathBuf,
    pre: Option<Vec<u8>>,
    post: Vec<u8>,
    new_id: String,
    perms: fs::Permissions,
}

/// What a finished transaction changed, and what its validation reported.
#[derive(Debug)]
pub struct Applied<T> {
    pub files: Vec<String>,
    pub validation: T,
}

/// Limits the transaction enforces on the patch itself.
#[derive(Debug, Clone, Copy)]
pub struct PatchLimits {
    pub max_patch_bytes: u64,
    pub max_files: usize,
    pub max_hunks: usize,
}

/// Parse and check `patch` against the workspace without writing anything: the post-image of every file.
pub fn plan(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<(String, Vec<u8>)>> {
    Ok(plan_files(ws, patch, limits)?
        .into_iter()
        .map(|p| (p.rel, p.post))
        .collect())
}

fn plan_files(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<Planned>> {
    if patch.len() as u64 > limits.max_patch_bytes {
        return Err(Error::Patch(format!(
            "the patch is {} bytes, over [limits] max_patch_bytes = {}",
            patch.len(),
            limits.max_patch_bytes
        )));
    }
    let files = canonical::parse(patch)?;
    let hunks = patch
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"@@ "))
        .count();
    if hunks > limits.max_hunks {
        return Err(Error::Patch(format!(
            "the patch has {hunks} hunks, over [limits] max_hunks_per_patch = {}",
            limits.max_hunks
        )));
    }
    if files.len() > limits.max_files {
        return Err(Error::Patch(format!(
            "the patch touches {} files, over [limits] max_files_per_patch = {}",
            files.len(),
            limits.max_files
        )));
    }
    files.iter().map(|f| plan_one(ws, f)).collect()
}

fn plan_one(ws: &Workspace, f: &CanonicalFile) -> Result<Planned> {
    let rel = f.path.clone();
    let (abs, current, perms) = match ws.resolve(&rel)? {
        OnDisk::Absent { abs } => {
            let perms = fs::Permissions::from_mode(if f.mode == MODE_EXECUTABLE {
                0o755
            } else {
                0o644
            });
            (abs, None, perms)
        }
        OnDisk::File { abs, mode } => {
            let bytes = fs::read(&abs).map_err(|e| Error::Io(format!("cannot read {rel}: {e}")))?;
            if !f.creates() && mode != f.mode {
                return Err(Error::Stale(format!(
                    "{rel} has mode {mode:o} but the patch was made for {:o}; make a new proposal",
                    f.mode
                )));
            }
            let perms = fs::metadata(&abs)
                .map_err(|e| Error::Io(format!("cannot inspect {rel}: {e}")))?
                .permissions();
            (abs, Some(bytes), perms)
        }
    };
    let post = canonical::apply_file(f, current.as_deref())?;
    Ok(Planned {
        rel,
        abs,
        pre: current,
        post,
        new_id: f.new_id.clone(),
        perms,
    })
}

/// Apply `patch` to the workspace durably (lock, journal), then run `validate` (given the workspace root).
/// `state` is the worker's state folder; without one (no HOME), the apply is refused rather than made unrecoverable.
pub fn apply<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    state: Option<&Path>,
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> Result<Applied<T>> {
    let state = state.ok_or_else(|| {
        Error::Io(
            "no state folder for the apply journal: set LOCAL_LLM_STATE_DIR (or HOME) so a crash stays recoverable"
                .into(),
        )
    })?;
    let _lock = WorkspaceLock::take(state, ws.root())?;
    let planned = plan_files(ws, patch, limits)?;
    let journal = Journal::write(state, ws.root(), &planned)?;
    crash_point();
    let result = apply_planned(ws, &planned, &journal.created_dirs, validate);
    journal.finish();
    result
}

/// Apply `patch` to a scratch copy (the dry run): the same steps, without lock or journal.
pub fn apply_scratch(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<String>> {
    apply_throwaway(ws, patch, limits, |_| Ok::<(), String>(())).map(|a| a.files)
}

/// Apply `patch` to a throwaway copy (the dry run, the validation sandbox) and run `validate` there: the same steps
/// and checks, without lock or journal, since nothing of value is at stake in a copy.
pub fn apply_throwaway<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> Result<Applied<T>> {
    let planned = plan_files(ws, patch, limits)?;
    let dirs = missing_dirs(ws.root(), &planned);
    apply_planned(ws, &planned, &dirs, validate)
}

fn apply_planned<T>(
    ws: &Workspace,
    planned: &[Planned],
    dirs: &[PathBuf],
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> Result<Applied<T>> {
    let mut undo = Undo::default();
    if let Err(e) = write_all(ws, planned, dirs, &mut undo) {
        return Err(restore_after(ws, planned, &undo, e));
    }
    for p in planned {
        let back = fs::read(&p.abs)
            .map(|b| git_blob_id(&b))
            .unwrap_or_default();
        if back != p.new_id {
            let e = Error::Io(format!("{} does not read back as the written bytes", p.rel));
            return Err(restore_after(ws, planned, &undo, e));
        }
    }
    crash_point();
    match validate(ws.root()) {
        Ok(validation) => Ok(Applied {
            files: planned.iter().map(|p| p.rel.clone()).collect(),
            validation,
        }),
        Err(report) => Err(restore_after(
            ws,
            planned,
            &undo,
            Error::ValidationFailed(report),
        )),
    }
}

/// What has been done so far, to undo it.
#[derive(Default)]
struct Undo {
    /// Indexes into the plan of files already renamed into place.
    renamed: Vec<usize>,
    /// Folders created for new files, outermost first.
    created_dirs: Vec<PathBuf>,
}

/// The folders (outermost first) that must be created for the planned files.
fn missing_dirs(root: &Path, planned: &[Planned]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in planned {
        let Some(dir) = p.abs.parent() else { continue };
        let Ok(rel) = dir.strip_prefix(root) else {
            continue;
        };
        let mut cur = root.to_path_buf();
        for comp in rel.components() {
            cur.push(comp);
            if fs::symlink_metadata(&cur).is_err() && !out.contains(&cur) {
                out.push(cur.clone());
            }
        }
    }
    out
}

fn write_all(ws: &Workspace, planned: &[Planned], dirs: &[PathBuf], undo: &mut Undo) -> Result<()> {
    let root = ws.root();
    let rel_of = |p: &Path| -> Result<String> {
        p.strip_prefix(root)
            .ok()
            .and_then(|r| r.to_str())
            .map(str::to_string)
            .ok_or_else(|| Error::Scope(format!("{} is outside the workspace", p.display())))
    };
    for d in dirs {
        let rel = rel_of(d)?;
        let (parent, name) = beneath::open_parent(root, &rel)
            .map_err(|e| Error::Scope(format!("cannot create {rel}: {e}")))?;
        if parent
            .mkdir(&name)
            .map_err(|e| Error::Io(format!("cannot create {rel}: {e}")))?
        {
            undo.created_dirs.push(d.clone());
            crash_point();
        }
    }
    // Stage every post-image beside its target first, so a failure here changes no target. Every write goes
    // through a handle on the target's folder, opened component by component without following symlinks.
    let mut staged: Vec<(beneath::Dir, String, String)> = Vec::with_capacity(planned.len());
    let cleanup = |staged: &[(beneath::Dir, String, String)]| {
        for (dir, _, tmp) in staged {
            let _ = dir.unlink(tmp);
        }
    };
    for p in planned {
        let step = beneath::open_parent(root, &p.rel).and_then(|(dir, name)| {
            let tmp = dir.write_temp(&p.post, p.perms.mode())?;
            Ok((dir, name, tmp))
        });
        match step {
            Ok(s) => staged.push(s),
            Err(e) => {
                cleanup(&staged);
                return Err(Error::Io(format!("cannot stage {}: {e}", p.rel)));
            }
        }
        crash_point();
    }
    for (i, p) in planned.iter().enumerate() {
        let (dir, name, tmp) = &staged[i];
        // Re-check right before the rename, through the same folder handle: the target must still be what the plan
        // saw, and not a symlink.
        let now = dir
            .read_file(name)
            .map_err(|e| Error::Scope(format!("{}: {e}", p.rel)));
        let fresh = match now {
            Ok(now) => now.as_ref() == p.pre.as_ref(),
            Err(e) => {
                cleanup(&staged[i..]);
                return Err(e);
            }
        };
        if !fresh {
            cleanup(&staged[i..]);
            return Err(Error::Stale(format!(
                "{} changed while the patch was being applied",
                p.rel
            )));
        }
        if let Err(e) = dir.rename(tmp, name) {
            cleanup(&staged[i..]);
            return Err(Error::Io(format!("cannot write {}: {e}", p.rel)));
        }
        undo.renamed.push(i);
        crash_point();
    }
    for (dir, _, _) in &staged {
        dir.sync();
    }
    Ok(())
}

/// The prefix of every temporary file the transaction stages in a workspace.
pub const TEMP_PREFIX: &str = ".llw-";

fn sync_dirs(planned: &[Planned]) {
    for p in planned {
        if let Some(dir) = p.abs.parent()
            && let Ok(d) = fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }
}

/// Put back every file already renamed, remove created files and folders, and return `cause` with what happened.
fn restore_after(ws: &Workspace, planned: &[Planned], undo: &Undo, cause: Error) -> Error {
    let mut problems = Vec::new();
    for &i in undo.renamed.iter().rev() {
        let p = &planned[i];
        if let Err(e) = put_back(ws.root(), &p.rel, p.pre.as_deref(), &p.perms) {
            problems.push(format!("{}: {e}", p.rel));
        }
        crash_point();
    }
    for d in undo.created_dirs.iter().rev() {
        let _ = fs::remove_dir(d);
    }
    sync_dirs(planned);
    if problems.is_empty() {
        return cause;
    }
    Error::Io(format!(
        "{cause}; RESTORING FAILED for {} in {}: run `local-llm-worker recover` or check these files by hand",
        problems.join("; "),
        ws.root().display()
    ))
}

/// Make `root/rel` hold exactly `pre` again (or not exist, for `None`), checking it reads back; never through a
/// symlink.
fn put_back(
    root: &Path,
    rel: &str,
    pre: Option<&[u8]>,
    perms: &fs::Permissions,
) -> std::io::Result<()> {
    let (dir, name) = beneath::open_parent(root, rel)?;
    match pre {
        Some(pre) => {
            let tmp = dir.write_temp(pre, perms.mode())?;
            if let Err(e) = dir.rename(&tmp, &name) {
                let _ = dir.unlink(&tmp);
                return Err(e);
            }
            dir.sync();
            if dir.read_file(&name)?.as_deref() != Some(pre) {
                return Err(std::io::Error::other(
                    "does not read back as its previous bytes",
                ));
            }
            Ok(())
        }
        None => match dir.unlink(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

/// Writes relative to folder handles: every component opened with `O_NOFOLLOW`, so a symlink swapped in anywhere
/// on the path (a file or a parent folder) makes the write fail instead of following it.
mod beneath {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use super::TEMP_PREFIX;

    pub struct Dir(OwnedFd);

    fn cstr(s: &[u8]) -> io::Result<CString> {
        CString::new(s).map_err(|_| io::Error::other("a path holds a NUL byte"))
    }

    fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    }

    fn symlink_error(e: io::Error, name: &str) -> io::Error {
        match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::other(format!(
                "{name} is a symlink or not a folder; the worker never writes through one"
            )),
            _ => e,
        }
    }

    /// The folder that holds `rel`, opened from `root` one component at a time, and the file's name in it.
    pub fn open_parent(root: &Path, rel: &str) -> io::Result<(Dir, String)> {
        let c = cstr(root.as_os_str().as_bytes())?;
        // SAFETY: a valid NUL-terminated path; the fd returned is owned below.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let mut dir = Dir(unsafe { OwnedFd::from_raw_fd(fd) });
        let comps: Vec<&str> = rel.split('/').collect();
        let (name, folders) = comps
            .split_last()
            .ok_or_else(|| io::Error::other("empty path"))?;
        for comp in folders {
            if comp.is_empty() || *comp == "." || *comp == ".." {
                return Err(io::Error::other(format!(
                    "{rel} is not a plain relative path"
                )));
            }
            dir = dir.open_sub(comp)?;
        }
        Ok((dir, name.to_string()))
    }

    impl Dir {
        fn fd(&self) -> libc::c_int {
            self.0.as_raw_fd()
        }

        pub fn open_sub(&self, name: &str) -> io::Result<Dir> {
            let c = cstr(name.as_bytes())?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: openat on a descriptor we own with a valid name.
            let fd = check(unsafe { libc::openat(self.fd(), c.as_ptr(), flags) })
                .map_err(|e| symlink_error(e, name))?;
            // SAFETY: fresh descriptor.
            Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
        }

        /// Create the folder `name`; `false` when a folder (not a symlink) is already there.
        pub fn mkdir(&self, name: &str) -> io::Result<bool> {
            let c = cstr(name.as_bytes())?;
            // SAFETY: mkdirat on a descriptor we own.
            match check(unsafe { libc::mkdirat(self.fd(), c.as_ptr(), 0o755) }) {
                Ok(_) => Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    self.open_sub(name).map(|_| false)
                }
                Err(e) => Err(e),
            }
        }

        /// The bytes of the file `name` (`None` if absent); a symlink there is an error.
        pub fn read_file(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
            use std::io::Read;
            let c = cstr(name.as_bytes())?;
            // SAFETY: openat on a descriptor we own.
            let fd = match check(unsafe {
                libc::openat(
                    self.fd(),
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            }) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
                Err(e) => return Err(symlink_error(e, name)),
            };
            // SAFETY: fresh descriptor, owned by the File.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            if !f.metadata()?.is_file() {
                return Err(io::Error::other(format!("{name} is not a regular file")));
            }
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }

        /// Write `bytes` to a new temporary file in this folder with `mode`, flushed; returns its name.
        pub fn write_temp(&self, bytes: &[u8], mode: u32) -> io::Result<String> {
            use std::io::Write;
            let mut rnd = [0u8; 8];
            getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
            let name = format!(
                "{TEMP_PREFIX}{}.tmp",
                rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
            let c = cstr(name.as_bytes())?;
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: openat on a descriptor we own; a fresh name that must not exist yet.
            let fd = check(unsafe {
                libc::openat(self.fd(), c.as_ptr(), flags, 0o600 as libc::c_uint)
            })?;
            // SAFETY: fresh descriptor, owned by the File.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            let written = f
                .write_all(bytes)
                .and_then(|_| {
                    // SAFETY: fchmod on the descriptor the File owns.
                    check(unsafe { libc::fchmod(f.as_raw_fd(), (mode & 0o7777) as libc::mode_t) })
                        .map(|_| ())
                })
                .and_then(|_| f.sync_all());
            if let Err(e) = written {
                let _ = self.unlink(&name);
                return Err(e);
            }
            Ok(name)
        }

        pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
            let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
            // SAFETY: renameat within the folder we hold.
            check(unsafe { libc::renameat(self.fd(), a.as_ptr(), self.fd(), b.as_ptr()) })
                .map(|_| ())
        }

        pub fn unlink(&self, name: &str) -> io::Result<()> {
            let c = cstr(name.as_bytes())?;
            // SAFETY: unlinkat within the folder we hold.
            check(unsafe { libc::unlinkat(self.fd(), c.as_ptr(), 0) }).map(|_| ())
        }

        pub fn sync(&self) {
            // SAFETY: fsync on a descriptor we own.
            unsafe { libc::fsync(self.fd()) };
        }
    }
}

/// Crash injection for the crash tests: in debug builds only, `LLW_CRASH_AT=N` aborts the process at the N-th
/// write step of an apply (counted across this process). Release builds compile this to nothing.
fn crash_point() {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicU32, Ordering};
        static STEP: AtomicU32 = AtomicU32::new(0);
        if let Some(at) = std::env::var("LLW_CRASH_AT")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
        {
            let n = STEP.fetch_add(1, Ordering::SeqCst) + 1;
            if n == at {
                eprintln!("local-llm-worker: crash injected at write step {n}");
                std::process::abort();
            }
        }
    }
}

/// An exclusive `flock` on a per-workspace lock file in the state folder, released on drop.
struct WorkspaceLock {
    _file: fs::File,
}

impl WorkspaceLock {
    fn take(state: &Path, root: &Path) -> Result<WorkspaceLock> {
        let dir = state.join("locks");
        fs::create_dir_all(&dir)
            .map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join(format!(
            "{}.lock",
            &sha256_hex(root.as_os_str().as_encoded_bytes())[..24]
        ));
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::Io(format!("cannot open {}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor we own; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error::Io(format!(
                "cannot lock {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(WorkspaceLock { _file: file })
    }
}

/// The journal document: enough to restore the pre-images or confirm the post-images after a crash.
#[derive(Serialize, Deserialize)]
struct JournalDoc {
    version: u32,
    workspace: PathBuf,
    files: Vec<JournalFile>,
    /// Folders the apply creates, outermost first.
    created_dirs: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize)]
struct JournalFile {
    rel: String,
    /// Whether the file existed; its bytes are in `pre-<index>` beside the document.
    existed: bool,
    pre_id: Option<String>,
    post_id: String,
    mode: u32,
}

/// A written journal; deleted by [`Journal::finish`].
struct Journal {
    dir: PathBuf,
    created_dirs: Vec<PathBuf>,
}

impl Journal {
    fn write(state: &Path, root: &Path, planned: &[Planned]) -> Result<Journal> {
        let io = |e: std::io::Error| {
            Error::Io(format!(
                "cannot write the apply journal in {}: {e}",
                state.display()
            ))
        };
        let journals = state.join("journals");
        fs::create_dir_all(&journals).map_err(io)?;
        let dir = tempfile::Builder::new()
            .prefix("apply-")
            .tempdir_in(&journals)
            .map_err(io)?
            .keep();
        let created_dirs = missing_dirs(root, planned);
        let mut files = Vec::new();
        for (i, p) in planned.iter().enumerate() {
            if let Some(pre) = &p.pre {
                write_synced(&dir.join(format!("pre-{i}")), pre).map_err(io)?;
            }
            files.push(JournalFile {
                rel: p.rel.clone(),
                existed: p.pre.is_some(),
                pre_id: p.pre.as_deref().map(git_blob_id),
                post_id: p.new_id.clone(),
                mode: p.perms.mode(),
            });
        }
        let doc = JournalDoc {
            version: 1,
            workspace: root.to_path_buf(),
            files,
            created_dirs: created_dirs.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Io(e.to_string()))?;
        // The journal counts only once `journal.json` exists: written aside, then renamed.
        write_synced(&dir.join("journal.json.tmp"), &bytes).map_err(io)?;
        fs::rename(dir.join("journal.json.tmp"), dir.join("journal.json")).map_err(io)?;
        if let Ok(d) = fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(Journal { dir, created_dirs })
    }

    fn finish(self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// What recovery did for one interrupted apply.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Recovery {
    pub workspace: String,
    /// `restored` (every file back to its pre-image), `completed` (every file already held its post-image) or
    /// `incomplete` (some file could not be restored: see `problems`).
    pub outcome: String,
    pub files: Vec<String>,
    pub problems: Vec<String>,
}

/// Finish or undo every interrupted apply recorded in the state folder's journals.
pub fn recover_all(state: &Path) -> Vec<Recovery> {
    let Ok(entries) = fs::read_dir(state.join("journals")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let dir = e.path();
        if !dir.is_dir() {
            continue;
        }
        let doc: Option<JournalDoc> = fs::read(dir.join("journal.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let Some(doc) = doc else {
            // Killed before the journal was complete: nothing in the workspace had changed yet.
            let _ = fs::remove_dir_all(&dir);
            continue;
        };
        let _lock = WorkspaceLock::take(state, &doc.workspace).ok();
        let r = recover_one(&dir, &doc);
        if r.problems.is_empty() {
            let _ = fs::remove_dir_all(&dir);
        }
        out.push(r);
    }
    out
}

/// `root/rel`, refusing any symlink on the way (recovery never writes through one).
fn plain_path(root: &Path, rel: &str) -> std::result::Result<PathBuf, String> {
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

fn recover_one(dir: &Path, doc: &JournalDoc) -> Recovery {
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
    // Temporary files staged by the interrupted apply.
    for p in paths.iter().flatten() {
        let Some(parent) = p.parent() else { continue };
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let current_id = |p: &Path| fs::read(p).ok().map(|b| git_blob_id(&b));
    let all_post = doc.files.iter().zip(&paths).all(|(f, p)| {
        p.as_ref()
            .is_some_and(|p| current_id(p).as_deref() == Some(f.post_id.as_str()))
    });
    let outcome = if all_post && problems.is_empty() {
        "completed"
    } else {
        for (i, (f, p)) in doc.files.iter().zip(&paths).enumerate() {
            let Some(p) = p else { continue };
            let pre = if f.existed {
                match fs::read(dir.join(format!("pre-{i}"))) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        problems.push(format!("{}: the journal's copy is unreadable: {e}", f.rel));
                        continue;
                    }
                }
            } else {
                None
            };
            if current_id(p) == f.pre_id && (f.existed || !p.exists()) {
                continue;
            }
            if let Err(e) = put_back(
                root,
                &f.rel,
                pre.as_deref(),
                &fs::Permissions::from_mode(f.mode),
            ) {
                problems.push(format!("{}: {e}", f.rel));
            }
        }
        for d in doc.created_dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
        if problems.is_empty() {
            "restored"
        } else {
            "incomplete"
        }
    };
    Recovery {
        workspace: root.display().to_string(),
        outcome: outcome.to_string(),
        files: doc.files.iter().map(|f| f.rel.clone()).collect(),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_handles_never_follow_a_symlink_on_the_way() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.path().join("real/f")).unwrap();
        let err = beneath::open_parent(root.path(), "link/f").err().unwrap();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        let (dir, name) = beneath::open_parent(root.path(), "real/f").unwrap();
        assert!(
            dir.read_file(&name)
                .unwrap_err()
                .to_string()
                .contains("is a symlink")
        );
        // Writing beside it is fine; the symlink itself is never written through.
        let tmp = dir.write_temp(b"x", 0o644).unwrap();
        dir.rename(&tmp, "g").unwrap();
        assert_eq!(fs::read(root.path().join("real/g")).unwrap(), b"x");
        assert!(
            fs::read_dir(outside.path()).unwrap().next().is_none(),
            "nothing was written outside"
        );
    }

    #[test]
    fn put_back_refuses_a_symlinked_parent() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("src")).unwrap();
        let err = put_back(
            root.path(),
            "src/a.py",
            Some(b"x"),
            &fs::Permissions::from_mode(0o644),
        )
        .unwrap_err();
        assert!(err.to_string().contains("is a symlink"), "{err}");
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}
