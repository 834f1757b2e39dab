//! The apply transaction: the ONLY code that writes to a workspace.
//!
//! Given the exact canonical patch bytes the primary approved, it:
//! 1. takes the workspace's lock (an `flock` in the worker's state folder), so two applies never interleave;
//! 2. parses the patch strictly and re-resolves every target under the current policy (component by component, no
//!    symlinks, inside `paths.allowed`, never `.git/`);
//! 3. checks every pre-image: the file's current git blob id and mode must equal the patch's (a file to create must
//!    still be absent); computes every post-image in memory and checks its promised blob id;
//! 4. writes a journal (the pre-images, the promised post-image ids, the folders it will create) to the state
//!    folder as one file and flushes it and its folder, before the first byte of the workspace changes;
//! 5. opens every existing target through a handle on its folder (never through a symlink) and re-reads it: it must
//!    still hold exactly the planned pre-image and have no other hard link; every file to create must still be
//!    absent; then creates the new folders, rewrites existing files in place and creates new ones (`O_EXCL`); any
//!    failure puts back what was written;
//! 6. reads every target back and compares it with the post-image;
//! 7. runs the caller's validation; when it fails, restores the exact previous bytes in place (and removes created
//!    files and folders) and reports it;
//! 8. flushes every written file, then each folder that gained an entry, and only then empties the journal (and
//!    flushes that): until then, a power loss is undone from the journal like a kill. When a restore fails, the
//!    journal is kept for `recover`.
//!
//! All files or none: a refusal in steps 1-5 before the first write changes nothing; a failure after it restores
//! the pre-images. A kill at any moment leaves a journal; [`recover_all`] (run when the MCP server starts, and by
//! `local-llm-worker recover`) then puts the workspace back to exactly the pre-images, or, when every file already
//! holds its post-image, flushes and keeps that, and says which. Leftover temporary files are removed.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
    /// The git blob id of `pre`, checked against the file when planned.
    pre_id: Option<String>,
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

/// Parse `patch` strictly and check it against `limits`, without looking at any file.
pub fn parse_within(patch: &[u8], limits: PatchLimits) -> Result<Vec<CanonicalFile>> {
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
    Ok(files)
}

fn plan_files(ws: &Workspace, patch: &[u8], limits: PatchLimits) -> Result<Vec<Planned>> {
    let files = parse_within(patch, limits)?;
    // Reading, checking and applying are independent per file: with several files, on every core.
    let lanes = match files.len() {
        0..PARALLEL_PLAN_FROM => 1,
        n => std::thread::available_parallelism().map_or(1, |p| p.get().min(n).min(8)),
    };
    in_lanes(&files, lanes, |chunk| {
        chunk.iter().map(|f| plan_one(ws, f)).collect()
    })
}

/// From how many files on planning runs on several threads.
const PARALLEL_PLAN_FROM: usize = 4;

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
            if !f.creates() && mode != f.mode {
                return Err(Error::Stale(format!(
                    "{rel} has mode {mode:o} but the patch was made for {:o}; make a new proposal",
                    f.mode
                )));
            }
            let read = || -> std::io::Result<(Vec<u8>, fs::Permissions, u64)> {
                use std::io::Read;
                use std::os::unix::fs::MetadataExt;
                let mut file = fs::File::open(&abs)?;
                let meta = file.metadata()?;
                let mut bytes = Vec::with_capacity(meta.len() as usize);
                file.read_to_end(&mut bytes)?;
                Ok((bytes, meta.permissions(), meta.nlink()))
            };
            let (bytes, perms, links) =
                read().map_err(|e| Error::Io(format!("cannot read {rel}: {e}")))?;
            if links > 1 {
                return Err(Error::Scope(hard_link_refusal(&rel, links)));
            }
            (abs, Some(bytes), perms)
        }
    };
    let post = canonical::apply_file(f, current.as_deref())?;
    Ok(Planned {
        rel,
        abs,
        pre: current,
        // `apply_file` has just checked the current bytes against it.
        pre_id: f.old_id.clone(),
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
    let mut journal = Journal::open(state, ws.root())?;
    let planned = plan_files(ws, patch, limits)?;
    journal.write(ws.root(), &planned)?;
    crash_point();
    let result = apply_planned(
        ws,
        &planned,
        &journal.created_dirs,
        Durability::Flushed,
        validate,
    );
    crash_point();
    if let Err(f) = &result
        && !f.restored
    {
        // The journal holds the only copy of what could not be put back: it stays for `recover`.
        return result.map_err(|f| f.error);
    }
    let result = result.map_err(|f| f.error);
    match journal.clear() {
        Ok(()) => result,
        Err(e) => Err(Error::Io(format!(
            "{}; then its journal could not be cleared ({e}): run `local-llm-worker recover`",
            match &result {
                Ok(_) => "the patch was applied".to_string(),
                Err(cause) => format!("the apply failed ({cause})"),
            }
        ))),
    }
}

/// Whether an apply flushes what it wrote before it reports success.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// The workspace: every written file and changed folder is flushed before the journal goes.
    Flushed,
    /// A throwaway copy: nothing of value is at stake, and nothing is flushed.
    Throwaway,
}

/// Apply `patch` to a throwaway copy (the validation sandbox) and run `validate` there: the same steps
/// and checks, without lock or journal, since nothing of value is at stake in a copy.
pub fn apply_throwaway<T>(
    ws: &Workspace,
    patch: &[u8],
    limits: PatchLimits,
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> Result<Applied<T>> {
    let planned = plan_files(ws, patch, limits)?;
    let dirs = missing_dirs(ws.root(), &planned);
    apply_planned(ws, &planned, &dirs, Durability::Throwaway, validate).map_err(|f| f.error)
}

/// A failed apply: why, and whether every change was undone (when not, the journal must stay).
struct Failure {
    error: Error,
    restored: bool,
}

fn apply_planned<T>(
    ws: &Workspace,
    planned: &[Planned],
    dirs: &[PathBuf],
    durability: Durability,
    validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
) -> std::result::Result<Applied<T>, Failure> {
    let mut undo = Undo::default();
    let written = match write_all(ws, planned, dirs, &mut undo) {
        Ok(written) => written,
        Err(e) => return Err(restore_after(ws, planned, &undo, e)),
    };
    for (p, w) in planned.iter().zip(&written) {
        // The post-image was checked against its promised blob id when planned: equal bytes are enough here.
        if w.dir.read_file(&w.name).ok().flatten().as_deref() != Some(p.post.as_slice()) {
            let e = Error::Io(format!("{} does not read back as the written bytes", p.rel));
            return Err(restore_after(ws, planned, &undo, e));
        }
    }
    crash_point();
    match validate(ws.root()) {
        Ok(validation) => {
            if durability == Durability::Flushed
                && let Err(e) = flush(planned, &written, &undo.created_dirs)
            {
                return Err(restore_after(ws, planned, &undo, e));
            }
            Ok(Applied {
                files: planned.iter().map(|p| p.rel.clone()).collect(),
                validation,
            })
        }
        Err(report) => Err(restore_after(
            ws,
            planned,
            &undo,
            Error::ValidationFailed(report),
        )),
    }
}

/// A target written by `write_all`, with the handle on its folder.
struct Written {
    dir: Rc<beneath::Dir>,
    name: String,
    file: fs::File,
    created: bool,
}

/// How many files are flushed at the same time (each lane but the first is a thread).
const FLUSH_LANES: usize = 16;

/// Run `work` over `items` in up to `lanes` chunks at once (the first on this thread), in order; the first error in
/// item order wins. Every chunk finishes before this returns, whatever happened to the others.
fn in_lanes<I: Sync, O: Send>(
    items: &[I],
    lanes: usize,
    work: impl Fn(&[I]) -> Result<Vec<O>> + Sync,
) -> Result<Vec<O>> {
    let per_lane = items.len().div_ceil(lanes.max(1)).max(1);
    let mut chunks = items.chunks(per_lane);
    let Some(first) = chunks.next() else {
        return Ok(Vec::new());
    };
    let results: Vec<Result<Vec<O>>> = std::thread::scope(|s| {
        let others: Vec<_> = chunks.map(|c| s.spawn(|| work(c))).collect();
        let mut results = vec![work(first)];
        for h in others {
            results.push(
                h.join()
                    .unwrap_or_else(|_| Err(Error::Io("a worker thread panicked".into()))),
            );
        }
        results
    });
    let mut out = Vec::with_capacity(items.len());
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

/// Flush every written file (a created file with its metadata, so its mode too), then each folder that gained an
/// entry (the folder of a new file, the parent of a new folder), once: after this the apply survives a power loss,
/// and its journal may go. Until then the journal, flushed before the first write, can undo it.
fn flush(planned: &[Planned], written: &[Written], created_dirs: &[PathBuf]) -> Result<()> {
    let files: Vec<(&str, &fs::File, bool)> = planned
        .iter()
        .zip(written)
        .map(|(p, w)| (p.rel.as_str(), &w.file, w.created))
        .collect();
    in_lanes(&files, FLUSH_LANES, |chunk| {
        for (rel, f, created) in chunk {
            // A rewritten file keeps its metadata but for times and length; the length is what `sync_data` adds.
            let synced = if *created {
                f.sync_all()
            } else {
                f.sync_data()
            };
            synced.map_err(|e| Error::Io(format!("cannot flush {rel} to disk: {e}")))?;
        }
        Ok(Vec::<()>::new())
    })?;
    let mut flushed: Vec<*const beneath::Dir> = Vec::new();
    for w in written.iter().filter(|w| w.created) {
        if !flushed.contains(&Rc::as_ptr(&w.dir)) {
            flushed.push(Rc::as_ptr(&w.dir));
            w.dir
                .sync()
                .map_err(|e| Error::Io(format!("cannot flush the folder of {}: {e}", w.name)))?;
        }
    }
    for d in created_dirs {
        if let Some(parent) = d.parent() {
            fs::File::open(parent)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::Io(format!("cannot flush {}: {e}", parent.display())))?;
        }
    }
    Ok(())
}

/// What has been done so far, to undo it.
#[derive(Default)]
struct Undo {
    /// Indexes into the plan of files already (perhaps partly) written.
    written: Vec<usize>,
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

/// The refusal for a file that now has more than one name.
fn hard_link_refusal(rel: &str, links: u64) -> String {
    format!(
        "{rel} has {links} hard links; writing it would change the file behind its other names too, which the policy \
         cannot see. Give it a name of its own (for example `cp {rel} {rel}.tmp && mv {rel}.tmp {rel}`) and propose again"
    )
}

/// A workspace-relative path as (its folder, "" at the root; its file name).
fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

fn write_all(
    ws: &Workspace,
    planned: &[Planned],
    dirs: &[PathBuf],
    undo: &mut Undo,
) -> Result<Vec<Written>> {
    let root = ws.root();
    // Handles on the targets' folders (opened from the root one component at a time, without following symlinks),
    // one per folder; `None` for a folder the apply creates.
    let mut folders: Vec<(String, Option<Rc<beneath::Dir>>)> = Vec::new();
    let new_dirs: Vec<String> = dirs
        .iter()
        .filter_map(|d| d.strip_prefix(root).ok()?.to_str().map(str::to_string))
        .collect();
    // 1. Before anything changes: every existing target is opened and must still hold exactly the bytes the plan saw
    //    (and have one name); every file to create must still be absent.
    let mut opened: Vec<Option<fs::File>> = Vec::with_capacity(planned.len());
    for p in planned {
        let (folder, name) = split_rel(&p.rel);
        let dir = match folders.iter().find(|(f, _)| *f == folder) {
            Some((_, d)) => d.clone(),
            None => {
                let d = if new_dirs.iter().any(|n| n == folder) {
                    None
                } else {
                    let (d, _) = beneath::open_parent(root, &p.rel).map_err(|e| {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            Error::Stale(format!(
                                "the folder of {} was removed while the patch was being applied",
                                p.rel
                            ))
                        } else {
                            Error::Scope(format!("{}: {e}", p.rel))
                        }
                    })?;
                    Some(Rc::new(d))
                };
                folders.push((folder.to_string(), d.clone()));
                d
            }
        };
        let file = match (&p.pre, &dir) {
            (Some(pre), Some(dir)) => {
                let (file, links, now) =
                    dir.open_for_rewrite(name).map_err(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Error::Stale(format!(
                            "{} was removed while the patch was being applied",
                            p.rel
                        )),
                        _ => Error::Scope(format!("{}: {e}", p.rel)),
                    })?;
                if now != *pre {
                    return Err(Error::Stale(format!(
                        "{} changed while the patch was being applied",
                        p.rel
                    )));
                }
                if links > 1 {
                    return Err(Error::Scope(hard_link_refusal(&p.rel, links)));
                }
                Some(file)
            }
            (Some(_), None) => {
                return Err(Error::Stale(format!(
                    "{} was removed while the patch was being applied",
                    p.rel
                )));
            }
            (None, Some(dir)) => {
                if dir
                    .exists(name)
                    .map_err(|e| Error::Scope(format!("{}: {e}", p.rel)))?
                {
                    return Err(Error::Stale(format!(
                        "{} was created while the patch was being applied",
                        p.rel
                    )));
                }
                None
            }
            (None, None) => None,
        };
        opened.push(file);
    }
    // 2. The folders for new files, outermost first.
    for (d, rel) in dirs.iter().zip(&new_dirs) {
        let (parent, name) = beneath::open_parent(root, rel)
            .map_err(|e| Error::Scope(format!("cannot create {rel}: {e}")))?;
        if parent
            .mkdir(&name)
            .map_err(|e| Error::Io(format!("cannot create {rel}: {e}")))?
        {
            undo.created_dirs.push(d.clone());
            crash_point();
        }
    }
    // 3. Write. Existing files are rewritten in place (same inode, owner and permissions); new files are created
    //    under their final name, never over anything. Nothing is flushed one by one: until `flush` has run, the
    //    journal can undo any of it.
    let mut written = Vec::with_capacity(planned.len());
    for (i, (p, file)) in planned.iter().zip(opened).enumerate() {
        let (folder, name) = split_rel(&p.rel);
        let slot = folders
            .iter_mut()
            .find(|(f, _)| *f == folder)
            .expect("every target's folder was looked at in step 1");
        let dir = match &slot.1 {
            Some(d) => Rc::clone(d),
            None => {
                let (d, _) = beneath::open_parent(root, &p.rel)
                    .map_err(|e| Error::Scope(format!("{}: {e}", p.rel)))?;
                let d = Rc::new(d);
                slot.1 = Some(Rc::clone(&d));
                d
            }
        };
        let step = match file {
            Some(file) => beneath::rewrite(&file, &p.post).map(|_| file),
            None => dir.create_new(name, &p.post, p.perms.mode()),
        };
        match step {
            Ok(file) => {
                undo.written.push(i);
                written.push(Written {
                    dir,
                    name: name.to_string(),
                    file,
                    created: p.pre.is_none(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::Stale(format!(
                    "{} was created while the patch was being applied",
                    p.rel
                )));
            }
            Err(e) => {
                // A partial write may have changed the file: it is put back with the others.
                if p.pre.is_some() {
                    undo.written.push(i);
                }
                return Err(Error::Io(format!("cannot write {}: {e}", p.rel)));
            }
        }
        crash_point();
    }
    Ok(written)
}

/// The prefix of every temporary file the transaction stages in a workspace.
pub const TEMP_PREFIX: &str = ".llw-";

/// Remove the folders an apply created (`dirs`, absolute, below `root`), deepest first, each through a handle on its
/// parent opened from `root` without following symlinks: a folder swapped for a symlink is never followed. Folders
/// that are not empty any more (someone put something there) are left.
fn remove_created_dirs(root: &Path, dirs: &[PathBuf]) {
    for d in dirs.iter().rev() {
        let Some(rel) = d.strip_prefix(root).ok().and_then(Path::to_str) else {
            continue;
        };
        if let Ok((parent, name)) = beneath::open_parent(root, rel) {
            let _ = parent.rmdir(&name);
        }
    }
}

/// Put back every file already written, remove created files and folders, and return `cause` with what happened
/// (and whether everything was put back).
fn restore_after(ws: &Workspace, planned: &[Planned], undo: &Undo, cause: Error) -> Failure {
    let mut problems = Vec::new();
    for &i in undo.written.iter().rev() {
        let p = &planned[i];
        if let Err(e) = put_back(ws.root(), &p.rel, p.pre.as_deref(), &p.perms) {
            problems.push(format!("{}: {e}", p.rel));
        }
        crash_point();
    }
    remove_created_dirs(ws.root(), &undo.created_dirs);
    sync_folders(
        planned
            .iter()
            .filter_map(|p| p.abs.parent())
            .chain(undo.created_dirs.iter().filter_map(|d| d.parent())),
    );
    if problems.is_empty() {
        return Failure {
            error: cause,
            restored: true,
        };
    }
    Failure {
        error: Error::Io(format!(
            "{cause}; RESTORING FAILED for {} in {}: the journal keeps the previous bytes; run `local-llm-worker recover` or check these files by hand",
            problems.join("; "),
            ws.root().display()
        )),
        restored: false,
    }
}

/// Make `root/rel` hold exactly `pre` again (or not exist, for `None`), flushed, checking it reads back; never
/// through a symlink.
fn put_back(
    root: &Path,
    rel: &str,
    pre: Option<&[u8]>,
    perms: &fs::Permissions,
) -> std::io::Result<()> {
    let (dir, name) = beneath::open_parent(root, rel)?;
    match pre {
        Some(pre) => {
            match dir.open_for_rewrite(&name) {
                // Rewritten in place, like the apply wrote it: same inode, owner and hard links.
                Ok((file, _, now)) => {
                    if now != pre {
                        beneath::rewrite(&file, pre)?;
                    }
                    if file.metadata()?.permissions().mode() & 0o7777 != perms.mode() & 0o7777 {
                        file.set_permissions(perms.clone())?;
                        file.sync_all()?;
                    } else {
                        file.sync_data()?;
                    }
                }
                // Gone: created again beside, then renamed into place.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let (tmp, file) = dir.write_temp(pre, perms.mode())?;
                    if let Err(e) = file.sync_all().and_then(|_| dir.rename(&tmp, &name)) {
                        let _ = dir.unlink(&tmp);
                        return Err(e);
                    }
                    dir.sync()?;
                }
                Err(e) => return Err(e),
            }
            if dir.read_file(&name)?.as_deref() != Some(pre) {
                return Err(std::io::Error::other(
                    "does not read back as its previous bytes",
                ));
            }
            Ok(())
        }
        None => match dir.unlink(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => dir.sync(),
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

        /// Open the existing regular file `name` for reading and writing (never through a symlink): the file, its
        /// number of hard links, its bytes.
        pub fn open_for_rewrite(&self, name: &str) -> io::Result<(std::fs::File, u64, Vec<u8>)> {
            use std::io::Read;
            use std::os::unix::fs::MetadataExt;
            let c = cstr(name.as_bytes())?;
            let flags = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: openat on a descriptor we own with a valid name.
            let fd = check(unsafe { libc::openat(self.fd(), c.as_ptr(), flags) })
                .map_err(|e| symlink_error(e, name))?;
            // SAFETY: fresh descriptor, owned by the File.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            let meta = f.metadata()?;
            if !meta.is_file() {
                return Err(io::Error::other(format!("{name} is not a regular file")));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            f.read_to_end(&mut bytes)?;
            Ok((f, meta.nlink(), bytes))
        }

        /// Whether anything (a file, a folder, a symlink) is at `name`.
        pub fn exists(&self, name: &str) -> io::Result<bool> {
            let c = cstr(name.as_bytes())?;
            // SAFETY: fstatat on a descriptor we own into a zeroed stat buffer we own.
            let rc = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                libc::fstatat(self.fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW)
            };
            match check(rc) {
                Ok(_) => Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
                Err(e) => Err(e),
            }
        }

        /// Create the file `name` (which must not exist, not even as a symlink) holding `bytes`, with `mode`; on a
        /// failure after creating it, it is removed again.
        pub fn create_new(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<std::fs::File> {
            use std::io::Write;
            let c = cstr(name.as_bytes())?;
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: openat on a descriptor we own; O_EXCL refuses anything already there.
            let fd = check(unsafe {
                libc::openat(self.fd(), c.as_ptr(), flags, 0o600 as libc::c_uint)
            })?;
            // SAFETY: fresh descriptor, owned by the File.
            let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
            let written = f.write_all(bytes).and_then(|_| {
                // SAFETY: fchmod on the descriptor the File owns.
                check(unsafe { libc::fchmod(f.as_raw_fd(), (mode & 0o7777) as libc::mode_t) })
                    .map(|_| ())
            });
            if let Err(e) = written {
                let _ = self.unlink(name);
                return Err(e);
            }
            Ok(f)
        }

        /// Write `bytes` to a new temporary file in this folder with `mode` (not flushed); returns its name and the
        /// open file.
        pub fn write_temp(&self, bytes: &[u8], mode: u32) -> io::Result<(String, std::fs::File)> {
            let mut rnd = [0u8; 8];
            getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
            let name = format!(
                "{TEMP_PREFIX}{}.tmp",
                rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
            let f = self.create_new(&name, bytes, mode)?;
            Ok((name, f))
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

        /// Remove the empty folder `name` (never a symlink: `unlinkat` with `AT_REMOVEDIR` does not follow one).
        pub fn rmdir(&self, name: &str) -> io::Result<()> {
            let c = cstr(name.as_bytes())?;
            // SAFETY: unlinkat within the folder we hold.
            check(unsafe { libc::unlinkat(self.fd(), c.as_ptr(), libc::AT_REMOVEDIR) }).map(|_| ())
        }

        /// The names in this folder, read through the handle itself (its `/proc/self/fd` entry), not a path.
        pub fn names(&self) -> io::Result<Vec<String>> {
            Ok(std::fs::read_dir(format!("/proc/self/fd/{}", self.fd()))?
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect())
        }

        pub fn sync(&self) -> io::Result<()> {
            // SAFETY: fsync on a descriptor we own.
            check(unsafe { libc::fsync(self.fd()) }).map(|_| ())
        }
    }

    /// Make the open file `file` hold exactly `bytes`: written over from the start, then cut to their length.
    pub fn rewrite(file: &std::fs::File, bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, 0)?;
        file.set_len(bytes.len() as u64)
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

/// The name a workspace's lock and journal files share in the state folder.
fn workspace_key(root: &Path) -> String {
    sha256_hex(root.as_os_str().as_encoded_bytes())[..24].to_string()
}

/// An exclusive `flock` on a per-workspace lock file in the state folder (`locks/<key>.lock`), released on drop.
struct WorkspaceLock {
    _file: fs::File,
}

impl WorkspaceLock {
    /// Wait for the workspace's lock.
    fn take(state: &Path, root: &Path) -> Result<WorkspaceLock> {
        Ok(WorkspaceLock::open(state, &workspace_key(root), true)?
            .expect("a blocking lock is always taken"))
    }

    /// The lock of the workspace whose key is `key`, or `None` when another process holds it.
    fn try_take(state: &Path, key: &str) -> Result<Option<WorkspaceLock>> {
        WorkspaceLock::open(state, key, false)
    }

    fn open(state: &Path, key: &str, wait: bool) -> Result<Option<WorkspaceLock>> {
        let dir = state.join("locks");
        fs::create_dir_all(&dir)
            .map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join(format!("{key}.lock"));
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::Io(format!("cannot open {}: {e}", path.display())))?;
        use std::os::fd::AsRawFd;
        let op = if wait {
            libc::LOCK_EX
        } else {
            libc::LOCK_EX | libc::LOCK_NB
        };
        // SAFETY: flock on a file descriptor we own; no memory is shared.
        let locked = match unsafe { libc::flock(file.as_raw_fd(), op) } {
            0 => Ok(true),
            _ => match std::io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
                e => Err(e),
            },
        };
        match locked {
            Ok(true) => Ok(Some(WorkspaceLock { _file: file })),
            Ok(false) => Ok(None),
            Err(e) => Err(Error::Io(format!("cannot lock {}: {e}", path.display()))),
        }
    }
}

/// The journal document: enough to restore the pre-images or confirm the post-images after a crash.
///
/// Version 2 (written now): each workspace has one journal file, `journals/<key>.journal` beside its lock
/// `locks/<key>.lock`, empty between applies. An apply, holding the lock, writes this document as one line of JSON,
/// a newline, then the pre-image of every file that existed, in order, `len` bytes each, and flushes it before the
/// first byte of the workspace changes; once the written files are flushed it empties the file and flushes that.
/// A file shorter or longer than its document says is a journal cut off while being written, when nothing had
/// changed yet. Version 1 (read for recovery only) was a folder `journals/apply-*` holding `journal.json` and a
/// `pre-<index>` file per pre-image.
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
    /// Whether the file existed (its bytes are then in the journal).
    existed: bool,
    pre_id: Option<String>,
    post_id: String,
    mode: u32,
    /// Version 2: the length of the pre-image's bytes in the journal file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    len: Option<u64>,
}

/// A workspace's journal file, opened by an apply that holds the workspace's lock.
struct Journal {
    file: fs::File,
    path: PathBuf,
    created_dirs: Vec<PathBuf>,
}

impl Journal {
    /// Open (creating it the first time) the workspace's journal; refuses when it still holds an interrupted apply.
    fn open(state: &Path, root: &Path) -> Result<Journal> {
        let journals = state.join("journals");
        let path = journals.join(format!("{}.journal", workspace_key(root)));
        let io = |e: std::io::Error| {
            Error::Io(format!(
                "cannot open the apply journal {}: {e}",
                path.display()
            ))
        };
        let file = match fs::OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use std::os::unix::fs::OpenOptionsExt;
                fs::create_dir_all(&journals).map_err(io)?;
                // It will hold copies of the workspace's files: readable by their owner only.
                let file = fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
                    .map_err(io)?;
                // The file's name must survive a power loss as much as what will be written in it.
                fs::File::open(&journals)
                    .and_then(|d| d.sync_all())
                    .map_err(io)?;
                file
            }
            Err(e) => return Err(io(e)),
        };
        let pending = if file.metadata().map_err(io)?.len() > 0 {
            Some(path.clone())
        } else {
            version_1_journal_of(&journals, root)
        };
        if let Some(pending) = pending {
            return Err(Error::Io(format!(
                "an earlier apply to {} was interrupted and has not been recovered yet ({}); run `local-llm-worker recover` (the MCP server does it when it starts), then apply again",
                root.display(),
                pending.display()
            )));
        }
        Ok(Journal {
            file,
            path,
            created_dirs: Vec::new(),
        })
    }

    /// Record `planned` and flush it: from here on a crash can be undone.
    fn write(&mut self, root: &Path, planned: &[Planned]) -> Result<()> {
        let io = |e: std::io::Error| {
            Error::Io(format!(
                "cannot write the apply journal {}: {e}",
                self.path.display()
            ))
        };
        self.created_dirs = missing_dirs(root, planned);
        let files = planned
            .iter()
            .map(|p| JournalFile {
                rel: p.rel.clone(),
                existed: p.pre.is_some(),
                pre_id: p.pre_id.clone(),
                post_id: p.new_id.clone(),
                mode: p.perms.mode(),
                len: Some(p.pre.as_ref().map_or(0, |b| b.len() as u64)),
            })
            .collect();
        let doc = JournalDoc {
            version: 2,
            workspace: root.to_path_buf(),
            files,
            created_dirs: self.created_dirs.clone(),
        };
        let mut header = serde_json::to_vec(&doc).map_err(|e| Error::Io(e.to_string()))?;
        header.push(b'\n');
        let mut file = &self.file;
        let written = (|| {
            file.write_all(&header)?;
            crash_point();
            for p in planned {
                if let Some(pre) = &p.pre {
                    file.write_all(pre)?;
                }
            }
            file.sync_data()
        })();
        if let Err(e) = written {
            let _ = self.file.set_len(0);
            return Err(io(e));
        }
        Ok(())
    }

    /// Empty the journal and flush that: the apply is over, whatever happens next.
    fn clear(self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.sync_data()
    }
}

/// A version 1 journal folder (left by an older worker) that records an apply to `root`, if any.
fn version_1_journal_of(journals: &Path, root: &Path) -> Option<PathBuf> {
    fs::read_dir(journals)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .find(|p| read_journal_v1(p).is_some_and(|j| j.doc.workspace == root))
}

/// A journal found in the state folder, with the pre-image bytes of every file (`None`: it did not exist; an
/// error: the journal's copy cannot be read).
struct FoundJournal {
    doc: JournalDoc,
    pres: Vec<std::result::Result<Option<Vec<u8>>, String>>,
}

/// Read a version 1 journal folder; `None` when it is incomplete (killed before its document was written, when
/// nothing in the workspace had changed yet).
fn read_journal_v1(dir: &Path) -> Option<FoundJournal> {
    let doc: JournalDoc = serde_json::from_slice(&fs::read(dir.join("journal.json")).ok()?).ok()?;
    let pres = doc
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| match f.existed {
            false => Ok(None),
            true => fs::read(dir.join(format!("pre-{i}")))
                .map(Some)
                .map_err(|e| format!("{}: the journal's copy is unreadable: {e}", f.rel)),
        })
        .collect();
    Some(FoundJournal { doc, pres })
}

/// Parse the bytes of a version 2 journal file; `None` when they are not a whole journal (cut off while written).
fn parse_journal(bytes: &[u8]) -> Option<FoundJournal> {
    let split = bytes.iter().position(|&b| b == b'\n')?;
    let doc: JournalDoc = serde_json::from_slice(&bytes[..split]).ok()?;
    let mut rest = &bytes[split + 1..];
    let mut pres = Vec::with_capacity(doc.files.len());
    for f in &doc.files {
        let len = usize::try_from(f.len?).ok()?;
        if !f.existed {
            pres.push(Ok(None));
            continue;
        }
        if rest.len() < len {
            return None;
        }
        let (pre, tail) = rest.split_at(len);
        pres.push(Ok(Some(pre.to_vec())));
        rest = tail;
    }
    rest.is_empty().then_some(FoundJournal { doc, pres })
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

/// Flush (best effort) each of `folders` once.
fn sync_folders<'a>(folders: impl Iterator<Item = &'a Path>) {
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

fn recover_one(found: &FoundJournal, journal: &Path) -> Recovery {
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
        let Ok((dir, _)) = beneath::open_parent(root, &f.rel) else {
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
            "completed"
        } else {
            "incomplete"
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
        let (tmp, _) = dir.write_temp(b"x", 0o644).unwrap();
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

    fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let root = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = root.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        let ws = Workspace::new(
            root.path().canonicalize().unwrap(),
            &crate::config::Paths::default(),
            None,
        )
        .unwrap();
        (root, ws)
    }

    fn limits() -> PatchLimits {
        PatchLimits {
            max_patch_bytes: 1 << 20,
            max_files: 10,
            max_hunks: 100,
        }
    }

    /// Apply [`two_file_patch`] to `ws` with the state folder `state`.
    fn apply_two<T>(
        ws: &Workspace,
        state: &Path,
        validate: impl FnOnce(&Path) -> std::result::Result<T, String>,
    ) -> Result<Applied<T>> {
        apply(ws, &two_file_patch(), limits(), Some(state), validate)
    }

    fn two_file_patch() -> Vec<u8> {
        use crate::patch::{FileChange, MODE_REGULAR};
        let change = |path: &str, pre: Option<&str>, post: &str| FileChange {
            path: path.into(),
            pre: pre.map(|s| s.as_bytes().to_vec()),
            post: post.as_bytes().to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
        };
        canonical::render(&[
            change("a.txt", Some("a\n"), "A\n"),
            change("new/b.txt", None, "B\n"),
        ])
    }

    /// Simulate a kill right after the journal is flushed and the first file is written: the journal is kept and
    /// one target holds its post-image. Returns the workspace, its journal's path and the lock the "killed" apply
    /// held (drop it to end that apply).
    fn interrupted(state: &Path) -> (tempfile::TempDir, PathBuf, WorkspaceLock) {
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        let lock = WorkspaceLock::take(state, ws.root()).unwrap();
        let mut journal = Journal::open(state, ws.root()).unwrap();
        let planned = plan_files(&ws, &two_file_patch(), limits()).unwrap();
        journal.write(ws.root(), &planned).unwrap();
        fs::write(root.path().join("a.txt"), "A\n").unwrap();
        let path = journal.path.clone();
        (root, path, lock)
    }

    fn journal_len(path: &Path) -> u64 {
        fs::metadata(path).unwrap().len()
    }

    #[test]
    fn recovery_restores_from_the_journal_and_empties_it() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        // The process died: its lock is gone with it.
        drop(lock);
        let done = recover_all(state.path());
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].outcome, "restored", "{:?}", done[0].problems);
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
        assert!(!root.path().join("new").exists());
        assert_eq!(journal_len(&path), 0);
        assert!(recover_all(state.path()).is_empty());
    }

    #[test]
    fn recovery_leaves_the_journal_of_a_live_apply_alone() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        assert!(recover_all(state.path()).is_empty());
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
        assert!(journal_len(&path) > 0);
        drop(lock);
        assert_eq!(recover_all(state.path())[0].outcome, "restored");
    }

    #[test]
    fn an_apply_refuses_while_an_interrupted_one_is_not_recovered() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        drop(lock);
        let ws = Workspace::new(
            root.path().canonicalize().unwrap(),
            &crate::config::Paths::default(),
            None,
        )
        .unwrap();
        let before = fs::read(root.path().join("a.txt")).unwrap();
        let err = apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap_err();
        assert!(
            err.to_string().contains("local-llm-worker recover"),
            "{err}"
        );
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), before);
        assert!(journal_len(&path) > 0);
    }

    #[test]
    fn a_journal_cut_off_while_written_is_dropped_without_touching_the_workspace() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        drop(lock);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(recover_all(state.path()).is_empty());
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
        assert_eq!(journal_len(&path), 0);
    }

    #[test]
    fn a_damaged_copy_in_the_journal_is_never_written_back() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        drop(lock);
        let bytes = damage_last_copy(&path);
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "incomplete");
        assert!(
            done[0].problems[0].contains("damaged"),
            "{:?}",
            done[0].problems
        );
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
        // Kept for a person to look at.
        assert_eq!(fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn a_finished_apply_leaves_an_empty_journal_and_the_inode_in_place() {
        use std::os::unix::fs::MetadataExt;
        let state = tempfile::tempdir().unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        let target = root.path().join("a.txt");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        let ino = fs::metadata(&target).unwrap().ino();
        let applied = apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap();
        assert_eq!(applied.files, ["a.txt", "new/b.txt"]);
        assert_eq!(fs::read(&target).unwrap(), b"A\n");
        assert_eq!(fs::read(root.path().join("new/b.txt")).unwrap(), b"B\n");
        let meta = fs::metadata(&target).unwrap();
        assert_eq!((meta.ino(), meta.mode() & 0o777), (ino, 0o640));
        let journal = state
            .path()
            .join(format!("journals/{}.journal", workspace_key(ws.root())));
        assert_eq!(journal_len(&journal), 0);
        assert!(recover_all(state.path()).is_empty());
    }

    #[test]
    fn a_failed_validation_restores_in_place_and_removes_what_it_created() {
        use std::os::unix::fs::MetadataExt;
        let state = tempfile::tempdir().unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        let target = root.path().join("a.txt");
        let ino = fs::metadata(&target).unwrap().ino();
        let err = apply_two(&ws, state.path(), |root: &Path| {
            assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"A\n");
            Err::<(), String>("the check failed".into())
        })
        .unwrap_err();
        assert!(matches!(err, Error::ValidationFailed(_)), "{err}");
        assert_eq!(fs::read(&target).unwrap(), b"a\n");
        assert_eq!(fs::metadata(&target).unwrap().ino(), ino);
        assert!(!root.path().join("new").exists());
        let journal = state
            .path()
            .join(format!("journals/{}.journal", workspace_key(ws.root())));
        assert_eq!(journal_len(&journal), 0);
    }

    #[test]
    fn a_created_folder_swapped_for_a_symlink_is_not_followed_by_the_undo() {
        use crate::patch::{FileChange, MODE_REGULAR};
        let state = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(outside.path().join("deep")).unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        let patch = canonical::render(&[FileChange {
            path: "new/deep/b.txt".into(),
            pre: None,
            post: b"B\n".to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
        }]);
        let swap_to = outside.path().to_path_buf();
        let err = apply(&ws, &patch, limits(), Some(state.path()), |r: &Path| {
            // While the check runs, someone swaps the created folder for a symlink to a folder outside.
            fs::rename(r.join("new"), r.join("new-moved")).unwrap();
            std::os::unix::fs::symlink(&swap_to, r.join("new")).unwrap();
            Err::<(), String>("the check failed".into())
        })
        .unwrap_err();
        assert!(
            outside.path().join("deep").is_dir(),
            "the undo followed the symlink and removed a folder outside the workspace"
        );
        let text = err.to_string();
        assert!(text.contains("RESTORING FAILED"), "{text}");
        assert!(
            fs::symlink_metadata(root.path().join("new"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    fn journal_of(state: &Path, ws: &Workspace) -> PathBuf {
        state.join(format!("journals/{}.journal", workspace_key(ws.root())))
    }

    /// A version 1 journal folder (as older workers wrote them) recording an apply of `a\n` -> `A\n` to a.txt.
    fn write_v1_journal(state: &Path, workspace: &Path) -> PathBuf {
        let dir = state.join("journals/apply-old");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("pre-0"), "a\n").unwrap();
        let doc = serde_json::json!({
            "version": 1,
            "workspace": workspace,
            "files": [{"rel": "a.txt", "existed": true, "pre_id": git_blob_id(b"a\n"),
                       "post_id": git_blob_id(b"A\n"), "mode": 0o100644}],
            "created_dirs": [],
        });
        fs::write(dir.join("journal.json"), doc.to_string()).unwrap();
        dir
    }

    /// Change a byte of the last pre-image copy in a journal file; returns the new bytes.
    fn damage_last_copy(path: &Path) -> Vec<u8> {
        let mut bytes = fs::read(path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] = b'Z';
        fs::write(path, &bytes).unwrap();
        bytes
    }

    #[test]
    fn a_restore_that_fails_keeps_the_journal_for_recover() {
        let state = tempfile::tempdir().unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        let err = apply_two(&ws, state.path(), |root: &Path| {
            // Something replaces the file by a folder while the checks run: it cannot be put back.
            fs::remove_file(root.join("a.txt")).unwrap();
            fs::create_dir(root.join("a.txt")).unwrap();
            Err::<(), String>("the check failed".into())
        })
        .unwrap_err();
        assert!(err.to_string().contains("RESTORING FAILED"), "{err}");
        let journal = journal_of(state.path(), &ws);
        assert!(journal_len(&journal) > 0, "the only copy of a.txt is gone");
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "incomplete");
        fs::remove_dir(root.path().join("a.txt")).unwrap();
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "restored", "{:?}", done[0].problems);
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
        assert_eq!(journal_len(&journal), 0);
    }

    #[test]
    fn the_journal_is_readable_by_its_owner_only() {
        let state = tempfile::tempdir().unwrap();
        let (_root, ws) = workspace_with(&[("a.txt", "a\n")]);
        apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap();
        let mode = fs::metadata(journal_of(state.path(), &ws))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_version_1_journal_of_the_workspace_blocks_applies_until_recovered() {
        let state = tempfile::tempdir().unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        write_v1_journal(state.path(), ws.root());
        let err = apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap_err();
        assert!(err.to_string().contains("apply-old"), "{err}");
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
        assert_eq!(recover_all(state.path())[0].outcome, "restored");
        apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap();
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
    }

    #[test]
    fn a_file_to_create_that_appears_stops_the_apply_before_any_write() {
        let (root, ws) = workspace_with(&[("a.txt", "a\n"), ("new/keep", "")]);
        let planned = plan_files(&ws, &two_file_patch(), limits()).unwrap();
        let before = fs::metadata(root.path().join("a.txt"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(root.path().join("new/b.txt"), "someone else's\n").unwrap();
        let err = match apply_planned(&ws, &planned, &[], Durability::Throwaway, |_| {
            Ok::<(), String>(())
        }) {
            Err(f) => f.error,
            Ok(_) => panic!("applied over a file that appeared"),
        };
        assert!(matches!(err, Error::Stale(_)), "{err}");
        let after = fs::metadata(root.path().join("a.txt"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after, "a.txt was written before the check");
        assert_eq!(
            fs::read(root.path().join("new/b.txt")).unwrap(),
            b"someone else's\n"
        );
    }

    #[test]
    fn a_file_with_another_hard_link_is_refused_before_anything_is_written() {
        let state = tempfile::tempdir().unwrap();
        let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
        fs::hard_link(root.path().join("a.txt"), root.path().join("linked.txt")).unwrap();
        let err = apply_two(&ws, state.path(), |_| Ok::<(), String>(())).unwrap_err();
        assert!(err.to_string().contains("2 hard links"), "{err}");
        assert_eq!(fs::read(root.path().join("linked.txt")).unwrap(), b"a\n");
        assert!(!root.path().join("new").exists());
        assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
    }

    #[test]
    fn a_damaged_copy_of_an_untouched_file_does_not_block_recovery() {
        let state = tempfile::tempdir().unwrap();
        let (root, path, lock) = interrupted(state.path());
        drop(lock);
        // a.txt is back to its pre-image by other means; its copy in the journal is damaged.
        fs::write(root.path().join("a.txt"), "a\n").unwrap();
        damage_last_copy(&path);
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "restored", "{:?}", done[0].problems);
        assert_eq!(journal_len(&path), 0);
    }

    #[test]
    fn recovery_still_reads_a_version_1_journal_folder() {
        let state = tempfile::tempdir().unwrap();
        let (root, _) = workspace_with(&[("a.txt", "A\n")]);
        let workspace = root.path().canonicalize().unwrap();
        let dir = write_v1_journal(state.path(), &workspace);
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "completed", "{:?}", done[0].problems);
        assert!(!dir.exists());
        fs::write(root.path().join("a.txt"), "half\n").unwrap();
        write_v1_journal(state.path(), &workspace);
        let done = recover_all(state.path());
        assert_eq!(done[0].outcome, "restored", "{:?}", done[0].problems);
        assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
    }
}
