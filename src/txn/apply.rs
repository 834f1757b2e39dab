//! Writing an apply: every target re-checked through folder handles, written in place (new files with `O_EXCL`),
//! read back, flushed; and the way back: restoring the pre-images of the files that still hold what the apply wrote
//! and removing created folders, always through handles opened from the root, never through a path string. Also
//! the crash injection points the crash tests use.

use std::fs;
use std::path::Path;
use std::rc::Rc;

use crate::error::{Error, Result, ValidationFailure};
use crate::workspace::Workspace;

use super::fsat;
use super::plan::{Planned, hard_link_refusal, in_lanes, permission_bits, split_rel};
use super::{Applied, Durability};

/// A failed apply: why, and whether every change was undone (when not, the journal must stay).
pub(super) struct Failure {
    pub(super) error: Error,
    pub(super) restored: bool,
}

pub(super) fn apply_planned<T>(
    ws: &Workspace,
    planned: &[Planned],
    durability: Durability,
    validate: impl FnOnce(&Path) -> std::result::Result<T, Box<ValidationFailure>>,
) -> std::result::Result<Applied<T>, Failure> {
    let mut undo = Undo::default();
    let written = match write_all(ws, planned, &mut undo) {
        Ok(written) => written,
        Err(e) => return Err(restore_after(ws, planned, &undo, e)),
    };
    for (p, w) in planned.iter().zip(&written) {
        // The post-image was checked against its promised blob id when planned: equal bytes are enough here (a
        // removed file must be gone).
        let want = (!p.removes).then_some(p.post.as_slice());
        if w.dir.read_file(&w.name).ok().flatten().as_deref() != want {
            let e = Error::io_message(format!("{} does not read back as the written bytes", p.rel));
            return Err(restore_after(ws, planned, &undo, e));
        }
    }
    crash_point();
    match validate(ws.root()) {
        Ok(validation) => {
            if durability == Durability::Flushed
                && let Err(e) = flush(ws.root(), planned, &written, &undo)
            {
                return Err(restore_after(ws, planned, &undo, e));
            }
            Ok(Applied {
                files: planned.iter().map(|p| p.rel.clone()).collect(),
                validation,
            })
        }
        Err(failure) => Err(restore_after(
            ws,
            planned,
            &undo,
            Error::ValidationFailed(failure),
        )),
    }
}

/// A target written by `write_all`, with the handle on its folder.
pub(super) struct Written {
    pub(super) dir: Rc<fsat::Dir>,
    pub(super) name: String,
    pub(super) file: fs::File,
    pub(super) created: bool,
    /// The apply removed it (its folder lost an entry).
    pub(super) removed: bool,
}

/// How many files are flushed at the same time (each lane but the first is a thread).
pub(super) const FLUSH_LANES: usize = 16;

/// Flush every written file (a created file with its metadata, so its mode too), then each folder that gained an
/// entry (the folder of a new file, the parent of a new folder), once: after this the apply survives a power loss,
/// and its journal may go. Until then the journal, flushed before the first write, can undo it. Folders are reached
/// through handles from `root` (one pass per new file), so a path longer than PATH_MAX is flushed like any other.
pub(super) fn flush(
    root: &Path,
    planned: &[Planned],
    written: &[Written],
    undo: &Undo,
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
    for w in written.iter().filter(|w| w.created || w.removed) {
        if !flushed.contains(&Rc::as_ptr(&w.dir)) {
            flushed.push(Rc::as_ptr(&w.dir));
            w.dir.sync().map_err(|e| {
                Error::io_message(format!("cannot flush the folder of {}: {e}", w.name))
            })?;
        }
    }
    for &(i, from) in &undo.created {
        let rel = &planned[i].rel;
        let folders: Vec<&str> = split_rel(rel).0.split('/').collect();
        fsat::sync_folders(root, &folders, from).map_err(|e| {
            Error::io_message(format!("cannot flush the folders created for {rel}: {e}"))
        })?;
    }
    Ok(())
}

/// What has been done so far, to undo it.
#[derive(Default)]
pub(super) struct Undo {
    /// Indexes into the plan of files already (perhaps partly) written.
    pub(super) written: Vec<usize>,
    /// For each new file whose folders this apply created: its index in the plan and the index of the first
    /// component of its folder the apply created (every one below it was created too).
    pub(super) created: Vec<(usize, usize)>,
}

/// Handles on the targets' folders (opened from the root one component at a time, without following symlinks), one
/// per folder by its workspace-relative path; `None` for a folder the apply creates (opened once it exists).
type Folders = Vec<(String, Option<Rc<fsat::Dir>>)>;

/// Write the planned files: every target checked first, then the missing folders created, then every file
/// written; `undo` says what was done, for [`restore_after`].
pub(super) fn write_all(
    ws: &Workspace,
    planned: &[Planned],
    undo: &mut Undo,
) -> Result<Vec<Written>> {
    let root = ws.root();
    let mut folders = Folders::new();
    let opened = check_targets(root, planned, &mut folders)?;
    create_dirs(root, planned, &mut folders, undo)?;
    write_targets(root, planned, opened, &mut folders, undo)
}

/// Step 1, before anything changes: every existing target is opened and must still hold exactly the bytes the plan
/// saw (and have one name); every file to create must still be absent. Returns the opened files, in plan order
/// (`None` for a file to create).
fn check_targets(
    root: &Path,
    planned: &[Planned],
    folders: &mut Folders,
) -> Result<Vec<Option<fs::File>>> {
    let mut opened = Vec::with_capacity(planned.len());
    for p in planned {
        let (folder, name) = split_rel(&p.rel);
        let dir = match folders.iter().find(|(f, _)| *f == folder) {
            Some((_, d)) => d.clone(),
            None => {
                let d = if p.created_from.is_some() {
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

/// Step 2: the folders for new files, outermost first, in one pass down from the root per new file (each folder
/// made and opened through the handle on its parent): linear in the depth. The handle on each new file's folder is
/// kept for step 3.
fn create_dirs(
    root: &Path,
    planned: &[Planned],
    folders: &mut Folders,
    undo: &mut Undo,
) -> Result<()> {
    for (i, p) in planned.iter().enumerate() {
        let Some(from) = p.created_from else { continue };
        let (folder, _) = split_rel(&p.rel);
        let Some(slot) = folders.iter().position(|(f, d)| f == folder && d.is_none()) else {
            // Made already for an earlier file of the patch.
            continue;
        };
        let fail = |e: std::io::Error| {
            Error::Scope(format!("cannot create the folders of {}: {e}", p.rel))
        };
        let mut dir = fsat::Dir::root(root).map_err(fail)?;
        let mut first_made = None;
        for (j, comp) in folder.split('/').enumerate() {
            if j >= from && dir.mkdir(comp).map_err(fail)? && first_made.is_none() {
                first_made = Some(j);
                undo.created.push((i, j));
            }
            if first_made.is_some() {
                crash_point();
            }
            dir = dir.open_plain(comp, &p.rel).map_err(fail)?;
        }
        folders[slot].1 = Some(Rc::new(dir));
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
            // Removed: its bytes stay in the journal (and in `p.pre`) until the apply is over.
            Some(file) if p.removes => dir.unlink(name).map(|_| file),
            Some(file) => fsat::rewrite(&file, &p.post).map(|_| file),
            None => dir.create_new(name, &p.post, permission_bits(p.mode)),
        };
        match step {
            Ok(file) => {
                undo.written.push(i);
                written.push(Written {
                    dir,
                    name: name.to_string(),
                    file,
                    created: p.pre.is_none(),
                    removed: p.removes,
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

/// A created folder that could not be removed, and why.
pub(super) struct Left {
    pub(super) folder: String,
    pub(super) error: std::io::Error,
}

impl Left {
    /// Whether it was left only because something else is in it now (a check's cache, someone's file): not a
    /// failure of the undo.
    pub(super) fn not_empty(&self) -> bool {
        matches!(
            self.error.raw_os_error(),
            Some(libc::ENOTEMPTY) | Some(libc::EEXIST)
        )
    }
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.not_empty() {
            write!(
                f,
                "{} (not empty: something else was put there)",
                self.folder
            )
        } else {
            write!(f, "{} ({})", self.folder, self.error)
        }
    }
}

/// Remove the folders created for the new file `rel` (its folder's components from `from` down), deepest first,
/// each through a handle on its parent opened from `root` without following symlinks (a folder swapped for a
/// symlink is never followed), in time linear in the depth; then flush the folder that held the topmost. A folder
/// that is not empty any more (someone put something there) is left, and so is every folder above it.
pub(super) fn remove_created(root: &Path, rel: &str, from: usize) -> std::result::Result<(), Left> {
    let folders: Vec<&str> = split_rel(rel).0.split('/').collect();
    let left = fsat::remove_folders(root, &folders, from);
    let _ = fsat::sync_folders(root, &folders[..=from.min(folders.len() - 1)], from);
    left.map_err(|(i, error)| Left {
        folder: folders[..=i].join("/"),
        error,
    })
}

/// What [`put_back`] found and did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PutBack {
    /// The file already held its previous bytes (or, for a new file, was not there).
    Unchanged,
    /// It held what the apply wrote (or part of it): its previous bytes are back (a new file: removed).
    Restored,
    /// It holds bytes the apply did not write: someone else changed it; left as it is.
    Kept,
}

/// Whether `now` is what an apply that wrote `post` over `pre` in place may have left: exactly `post`, or a write
/// cut off on the way (each byte from `pre`, from `post` or zero, as a kill between the write and the truncation or
/// a power loss leave them, and a length between the two). Anything else was written by someone else.
pub(super) fn from_this_apply(now: &[u8], pre: &[u8], post: &[u8]) -> bool {
    if now == post {
        return true;
    }
    let (short, long) = (pre.len().min(post.len()), pre.len().max(post.len()));
    (short..=long).contains(&now.len())
        && now
            .iter()
            .enumerate()
            .all(|(i, b)| *b == 0 || pre.get(i) == Some(b) || post.get(i) == Some(b))
}

/// Make `root/rel` hold exactly `pre` again (or not exist, for `None`), flushed and read back, when it holds what the
/// apply wrote (`post`, or a write of it cut off; with `post` unknown, anything but `pre`). A file that holds other
/// bytes is left as it is ([`PutBack::Kept`]); a file that is gone is created again with the permission bits of
/// the git mode `mode` (0644 or 0755); the mode of an existing file is never changed. Never through a symlink, never
/// blocking on a file that is not a regular one (refused).
pub(super) fn put_back(
    root: &Path,
    rel: &str,
    pre: Option<&[u8]>,
    post: Option<&[u8]>,
    mode: u32,
) -> std::io::Result<PutBack> {
    let (dir, name) = fsat::open_parent(root, rel)?;
    let ours =
        |now: &[u8]| post.is_none_or(|post| from_this_apply(now, pre.unwrap_or_default(), post));
    match (dir.look(&name, pre.is_some())?, pre) {
        (fsat::Found::Other(kind), _) => Err(fsat::not_regular(&name, kind)),
        (fsat::Found::Absent, None) => Ok(PutBack::Unchanged),
        (fsat::Found::File { bytes, .. }, None) => {
            if !ours(&bytes) {
                return Ok(PutBack::Kept);
            }
            dir.unlink(&name)?;
            dir.sync()?;
            Ok(PutBack::Restored)
        }
        (fsat::Found::File { file, bytes, links }, Some(pre)) => {
            if bytes == pre {
                return Ok(PutBack::Unchanged);
            }
            if !ours(&bytes) {
                return Ok(PutBack::Kept);
            }
            if links > 1 {
                return Err(std::io::Error::other(format!(
                    "it has {links} hard links now; writing it would change the file behind its other names"
                )));
            }
            // Rewritten in place, like the apply wrote it: same inode, owner, mode and hard links.
            let was = file.metadata().and_then(|m| m.modified()).ok();
            fsat::rewrite(&file, pre)?;
            file.sync_data()?;
            if let Some(was) = was {
                drop_stale_bytecode(&dir, &name, (was, bytes.len()), &file, pre.len());
            }
            read_back(&dir, &name, pre)
        }
        // Gone: created again beside, then renamed into place.
        (fsat::Found::Absent, Some(pre)) => {
            let (tmp, file) = dir.write_temp(pre, permission_bits(mode))?;
            if let Err(e) = file.sync_all().and_then(|_| dir.rename(&tmp, &name)) {
                let _ = dir.unlink(&tmp);
                return Err(e);
            }
            dir.sync()?;
            read_back(&dir, &name, pre)
        }
    }
}

/// After the Python file `name` was put back: remove the bytecode Python cached from the bytes it held (`held`: when
/// they were written and their size), when the file put back has the same size and its mtime the same whole second,
/// since Python checks only these two and would run that bytecode for the restored source. Best effort: a cache that
/// cannot be read or removed is left as it is; a hash-checked one is never stale.
fn drop_stale_bytecode(
    dir: &fsat::Dir,
    name: &str,
    held: (std::time::SystemTime, usize),
    file: &fs::File,
    size: usize,
) {
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    };
    let now = file
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(secs);
    let (Some(stem), Some(was)) = (name.strip_suffix(".py"), secs(held.0)) else {
        return;
    };
    if size != held.1 || now != Some(was) {
        return;
    }
    let Ok(cache) = dir.open_sub("__pycache__") else {
        return;
    };
    let prefix = format!("{stem}.");
    for n in cache.names().unwrap_or_default() {
        if !n.starts_with(&prefix) || !n.ends_with(".pyc") {
            continue;
        }
        let Ok(Some(b)) = cache.read_file(&n) else {
            continue;
        };
        // The header: magic (4 bytes), flags (4; 0 when checked by mtime and size), the source's mtime and size (4
        // each, little-endian, both cut to 32 bits).
        let recorded = |at: usize, v: u64| b.get(at..at + 4) == Some(&(v as u32).to_le_bytes()[..]);
        if b.get(4..8) == Some(&[0u8; 4][..]) && recorded(8, was) && recorded(12, held.1 as u64) {
            let _ = cache.unlink(&n);
        }
    }
}

/// Make `root/rel`, which the apply removed, hold exactly `pre` again with the permission bits `perm` (created
/// beside, flushed, renamed into place, read back), unless something is there now: the same bytes
/// ([`PutBack::Unchanged`]) or others, someone else's, left as they are ([`PutBack::Kept`]).
pub(super) fn put_back_removed(
    root: &Path,
    rel: &str,
    pre: &[u8],
    perm: u32,
) -> std::io::Result<PutBack> {
    use std::os::unix::fs::PermissionsExt;
    let (dir, name) = fsat::open_parent(root, rel)?;
    match dir.look(&name, false)? {
        fsat::Found::Other(kind) => Err(fsat::not_regular(&name, kind)),
        fsat::Found::File { bytes, .. } if bytes == pre => Ok(PutBack::Unchanged),
        fsat::Found::File { .. } => Ok(PutBack::Kept),
        fsat::Found::Absent => {
            let (tmp, file) = dir.write_temp(pre, perm & 0o777)?;
            let placed = file
                .set_permissions(fs::Permissions::from_mode(perm & 0o777))
                .and_then(|_| file.sync_all())
                .and_then(|_| dir.rename(&tmp, &name));
            if let Err(e) = placed {
                let _ = dir.unlink(&tmp);
                return Err(e);
            }
            dir.sync()?;
            read_back(&dir, &name, pre)
        }
    }
}

fn read_back(dir: &fsat::Dir, name: &str, pre: &[u8]) -> std::io::Result<PutBack> {
    if dir.read_file(name)?.as_deref() != Some(pre) {
        return Err(std::io::Error::other(
            "does not read back as its previous bytes",
        ));
    }
    Ok(PutBack::Restored)
}

/// Put back every file already written that still holds what the apply wrote, remove created files and folders,
/// and return `cause` with what happened: one message that says what was restored, what was kept because someone
/// else changed it, and what could not be put back (then the journal must stay: `restored: false`).
pub(super) fn restore_after(
    ws: &Workspace,
    planned: &[Planned],
    undo: &Undo,
    cause: Error,
) -> Failure {
    let mut problems = Vec::new();
    let (mut restored, mut removed, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for &i in undo.written.iter().rev() {
        let p = &planned[i];
        let back = match (p.removes, p.pre.as_deref()) {
            (true, Some(pre)) => put_back_removed(
                ws.root(),
                &p.rel,
                pre,
                p.perm.unwrap_or(permission_bits(p.mode)),
            ),
            _ => put_back(ws.root(), &p.rel, p.pre.as_deref(), Some(&p.post), p.mode),
        };
        match back {
            Ok(PutBack::Restored) if p.pre.is_none() => removed.push(p.rel.as_str()),
            Ok(PutBack::Restored) => restored.push(p.rel.as_str()),
            Ok(PutBack::Unchanged) => {}
            Ok(PutBack::Kept) => kept.push(p.rel.as_str()),
            Err(e) => problems.push(format!("{}: {e}", p.rel)),
        }
        crash_point();
    }
    let mut left_folders = Vec::new();
    for &(i, from) in undo.created.iter().rev() {
        match remove_created(ws.root(), &planned[i].rel, from) {
            Ok(()) => {}
            Err(left) if left.not_empty() => left_folders.push(left.to_string()),
            Err(left) => {
                problems.push(format!("the folder {left} it created could not be removed"))
            }
        }
    }
    restored.reverse();
    removed.reverse();
    kept.reverse();
    let list = |v: &[&str]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let mut done = format!("restored: {}; removed: {}", list(&restored), list(&removed));
    if !left_folders.is_empty() {
        done.push_str(&format!("; folders kept: {}", left_folders.join(", ")));
    }
    let kept_note = (!kept.is_empty()).then(|| {
        format!(
            "{} (changed by someone else after the apply wrote {}: {} neither the patch's bytes nor the previous \
             ones), whose newer bytes were kept",
            list(&kept),
            if kept.len() == 1 { "it" } else { "them" },
            if kept.len() == 1 { "it holds" } else { "they hold" },
        )
    });
    if problems.is_empty() {
        let error = match (cause, kept_note) {
            (cause, None) => cause,
            // "validation failed, previous bytes restored: except for ...": one message, true as a whole.
            (Error::ValidationFailed(mut v), Some(note)) => {
                v.kept = Some(format!("{note} ({done})"));
                Error::ValidationFailed(v)
            }
            (cause, Some(note)) => Error::io_message(format!(
                "{cause}; the previous bytes were restored except for {note} ({done})"
            )),
        };
        return Failure {
            error,
            restored: true,
        };
    }
    let cause = match cause {
        // Its message would say the previous bytes were restored.
        Error::ValidationFailed(v) => format!("validation failed: {v}"),
        cause => cause.to_string(),
    };
    Failure {
        error: Error::io_message(format!(
            "{cause}; RESTORING FAILED for {} in {} ({done}{}): the journal keeps the previous bytes; run \
             `local-llm-worker recover` or check these files by hand",
            problems.join("; "),
            ws.root().display(),
            kept_note.map(|n| format!("; {n}")).unwrap_or_default(),
        )),
        restored: false,
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
