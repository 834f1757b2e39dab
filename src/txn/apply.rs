//! Writing an apply: every target re-checked through folder handles, written in place (new files with `O_EXCL`),
//! read back, flushed; and the way back: restoring the pre-images and removing created folders, always through
//! handles. Also the crash injection points the crash tests use.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, IoContext, Result};
use crate::scope::Workspace;

use super::*;

/// A failed apply: why, and whether every change was undone (when not, the journal must stay).
pub(super) struct Failure {
    pub(super) error: Error,
    pub(super) restored: bool,
}

pub(super) fn apply_planned<T>(
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
            let e = Error::io_message(format!("{} does not read back as the written bytes", p.rel));
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
pub(super) struct Written {
    pub(super) dir: Rc<fsat::Dir>,
    pub(super) name: String,
    pub(super) file: fs::File,
    pub(super) created: bool,
}

/// How many files are flushed at the same time (each lane but the first is a thread).
pub(super) const FLUSH_LANES: usize = 16;

/// Run `work` over `items` in up to `lanes` chunks at once (the first on this thread), in order; the first error in
/// item order wins. Every chunk finishes before this returns, whatever happened to the others.
pub(super) fn in_lanes<I: Sync, O: Send>(
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
                    .unwrap_or_else(|_| Err(Error::io_message("a worker thread panicked"))),
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
pub(super) fn flush(
    planned: &[Planned],
    written: &[Written],
    created_dirs: &[PathBuf],
) -> Result<()> {
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
            synced.map_err(|e| Error::io_message(format!("cannot flush {rel} to disk: {e}")))?;
        }
        Ok(Vec::<()>::new())
    })?;
    let mut flushed: Vec<*const fsat::Dir> = Vec::new();
    for w in written.iter().filter(|w| w.created) {
        if !flushed.contains(&Rc::as_ptr(&w.dir)) {
            flushed.push(Rc::as_ptr(&w.dir));
            w.dir.sync().map_err(|e| {
                Error::io_message(format!("cannot flush the folder of {}: {e}", w.name))
            })?;
        }
    }
    for d in created_dirs {
        if let Some(parent) = d.parent() {
            fs::File::open(parent)
                .and_then(|f| f.sync_all())
                .at("cannot flush", parent)?;
        }
    }
    Ok(())
}

/// What has been done so far, to undo it.
#[derive(Default)]
pub(super) struct Undo {
    /// Indexes into the plan of files already (perhaps partly) written.
    pub(super) written: Vec<usize>,
    /// Folders created for new files, outermost first.
    pub(super) created_dirs: Vec<PathBuf>,
}

/// The folders (outermost first) that must be created for the planned files.
pub(super) fn missing_dirs(root: &Path, planned: &[Planned]) -> Vec<PathBuf> {
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
pub(super) fn hard_link_refusal(rel: &str, links: u64) -> String {
    format!(
        "{rel} has {links} hard links; writing it would change the file behind its other names too, which the policy \
         cannot see. Give it a name of its own (for example `cp {rel} {rel}.tmp && mv {rel}.tmp {rel}`) and propose again"
    )
}

/// A workspace-relative path as (its folder, "" at the root; its file name).
pub(super) fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// Handles on the targets' folders (opened from the root one component at a time, without following symlinks), one
/// per folder by its workspace-relative path; `None` for a folder the apply creates (opened once it exists).
type Folders = Vec<(String, Option<Rc<fsat::Dir>>)>;

/// Write the planned files: every target checked first, then the missing folders `dirs` created, then every file
/// written; `undo` says what was done, for [`restore_after`].
pub(super) fn write_all(
    ws: &Workspace,
    planned: &[Planned],
    dirs: &[PathBuf],
    undo: &mut Undo,
) -> Result<Vec<Written>> {
    let root = ws.root();
    let mut folders = Folders::new();
    let new_dirs: Vec<String> = dirs
        .iter()
        .filter_map(|d| d.strip_prefix(root).ok()?.to_str().map(str::to_string))
        .collect();
    let opened = check_targets(root, planned, &new_dirs, &mut folders)?;
    create_dirs(root, dirs, &new_dirs, undo)?;
    write_targets(root, planned, opened, &mut folders, undo)
}

/// Step 1, before anything changes: every existing target is opened and must still hold exactly the bytes the plan
/// saw (and have one name); every file to create must still be absent. Returns the opened files, in plan order
/// (`None` for a file to create).
fn check_targets(
    root: &Path,
    planned: &[Planned],
    new_dirs: &[String],
    folders: &mut Folders,
) -> Result<Vec<Option<fs::File>>> {
    let mut opened = Vec::with_capacity(planned.len());
    for p in planned {
        let (folder, name) = split_rel(&p.rel);
        let dir = match folders.iter().find(|(f, _)| *f == folder) {
            Some((_, d)) => d.clone(),
            None => {
                let d = if new_dirs.iter().any(|n| n == folder) {
                    None
                } else {
                    Some(Rc::new(open_target_folder(root, &p.rel)?))
                };
                folders.push((folder.to_string(), d.clone()));
                d
            }
        };
        opened.push(check_target(p, name, dir.as_deref())?);
    }
    Ok(opened)
}

/// The folder of the existing target `rel`, opened from `root`.
fn open_target_folder(root: &Path, rel: &str) -> Result<fsat::Dir> {
    let (d, _) = fsat::open_parent(root, rel).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Stale(format!(
                "the folder of {rel} was removed while the patch was being applied"
            ))
        } else {
            Error::Scope(format!("{rel}: {e}"))
        }
    })?;
    Ok(d)
}

/// One target of step 1, `name` in the folder `dir` (`None`: a folder the apply creates): the file opened for its
/// rewrite when it must exist, `None` when it must not (and does not).
fn check_target(p: &Planned, name: &str, dir: Option<&fsat::Dir>) -> Result<Option<fs::File>> {
    match (&p.pre, dir) {
        (Some(pre), Some(dir)) => {
            let (file, links, now) = dir.open_for_rewrite(name).map_err(|e| match e.kind() {
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
            Ok(Some(file))
        }
        (Some(_), None) => Err(Error::Stale(format!(
            "{} was removed while the patch was being applied",
            p.rel
        ))),
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
            Ok(None)
        }
        (None, None) => Ok(None),
    }
}

/// Step 2: the folders for new files (`dirs`, absolute, and `new_dirs`, the same workspace-relative), outermost
/// first.
fn create_dirs(root: &Path, dirs: &[PathBuf], new_dirs: &[String], undo: &mut Undo) -> Result<()> {
    for (d, rel) in dirs.iter().zip(new_dirs) {
        let (parent, name) = fsat::open_parent(root, rel)
            .map_err(|e| Error::Scope(format!("cannot create {rel}: {e}")))?;
        if parent.mkdir(&name).at("cannot create", rel)? {
            undo.created_dirs.push(d.clone());
            crash_point();
        }
    }
    Ok(())
}

/// Step 3: write. Existing files are rewritten in place (same inode, owner and permissions); new files are created
/// under their final name, never over anything. Nothing is flushed one by one: until `flush` has run, the journal
/// can undo any of it.
fn write_targets(
    root: &Path,
    planned: &[Planned],
    opened: Vec<Option<fs::File>>,
    folders: &mut Folders,
    undo: &mut Undo,
) -> Result<Vec<Written>> {
    let mut written = Vec::with_capacity(planned.len());
    for (i, (p, file)) in planned.iter().zip(opened).enumerate() {
        let (folder, name) = split_rel(&p.rel);
        let slot = folders
            .iter_mut()
            .find(|(f, _)| *f == folder)
            .ok_or_else(|| {
                Error::io_message(format!(
                    "internal: the folder of {} was not looked at before writing; nothing was written to it",
                    p.rel
                ))
            })?;
        let dir = match &slot.1 {
            Some(d) => Rc::clone(d),
            None => {
                let (d, _) = fsat::open_parent(root, &p.rel)
                    .map_err(|e| Error::Scope(format!("{}: {e}", p.rel)))?;
                let d = Rc::new(d);
                slot.1 = Some(Rc::clone(&d));
                d
            }
        };
        let step = match file {
            Some(file) => fsat::rewrite(&file, &p.post).map(|_| file),
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
                return Err(Error::io_message(format!("cannot write {}: {e}", p.rel)));
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
pub(super) fn remove_created_dirs(root: &Path, dirs: &[PathBuf]) {
    for d in dirs.iter().rev() {
        let Some(rel) = d.strip_prefix(root).ok().and_then(Path::to_str) else {
            continue;
        };
        if let Ok((parent, name)) = fsat::open_parent(root, rel) {
            let _ = parent.rmdir(&name);
        }
    }
}

/// Put back every file already written, remove created files and folders, and return `cause` with what happened
/// (and whether everything was put back).
pub(super) fn restore_after(
    ws: &Workspace,
    planned: &[Planned],
    undo: &Undo,
    cause: Error,
) -> Failure {
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
        error: Error::io_message(format!(
            "{cause}; RESTORING FAILED for {} in {}: the journal keeps the previous bytes; run `local-llm-worker recover` or check these files by hand",
            problems.join("; "),
            ws.root().display()
        )),
        restored: false,
    }
}

/// Make `root/rel` hold exactly `pre` again (or not exist, for `None`), flushed, checking it reads back; never
/// through a symlink.
pub(super) fn put_back(
    root: &Path,
    rel: &str,
    pre: Option<&[u8]>,
    perms: &fs::Permissions,
) -> std::io::Result<()> {
    let (dir, name) = fsat::open_parent(root, rel)?;
    match pre {
        Some(pre) => {
            match dir.open_for_rewrite(&name) {
                // Rewritten in place, like the apply wrote it: same inode, owner and hard links.
                Ok((file, _, now)) => {
                    if now != pre {
                        fsat::rewrite(&file, pre)?;
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

/// Crash injection for the crash tests: in debug builds only, `LLW_CRASH_AT=N` aborts the process at the N-th
/// write step of an apply (counted across this process). Release builds compile this to nothing.
pub(super) fn crash_point() {
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
