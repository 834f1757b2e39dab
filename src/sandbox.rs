//! The validation sandbox: a temporary copy of what validation needs, made fast, removed afterwards.
//!
//! [`create`] walks the workspace with the `ignore` crate (`.gitignore` files and `.git/info/exclude` are respected,
//! the global git ignore file is not, hidden files are kept), skips the folders `[validation] sandbox_skip` names,
//! and copies every regular file with its permission bits: a copy-on-write clone (Linux `FICLONE`) where the
//! filesystem has them, else an ordinary copy (the kernel's `copy_file_range`). A file is never hard-linked: a
//! check that writes in the sandbox would otherwise write into the workspace.
//!
//! Files the caller names as secrets (the scope's built-in secret denials: `.env*`, `*.pem`, keys...) are left out
//! too, unless the policy unlocked them.
//!
//! Symlinks are copied as symlinks only when following them from where they are never leaves the workspace, at any
//! step (each symlink met on the way is followed, `..` included); an absolute one is rewritten as the equivalent
//! relative link, so no link in the sandbox leads back into the workspace or anywhere else. Every other symlink,
//! and every special file (fifo, socket, device), is left out.
//!
//! The copy lives in a folder named `llw-sandbox-*` under `LOCAL_LLM_SANDBOX_DIR` (default: the system's temporary
//! folder; point it at the workspace's filesystem for copy-on-write clones). The [`Sandbox`] value owns it and
//! deletes it when dropped: after success, on error, on cancellation and on panic.

use std::fs::{self, OpenOptions, Permissions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::provider::Watch;

/// The prefix of every sandbox folder's name.
pub const PREFIX: &str = "llw-sandbox-";

/// The environment variable naming the folder sandboxes are made in.
pub const DIR_ENV: &str = "LOCAL_LLM_SANDBOX_DIR";

/// At most this many symlinks are followed while checking where one symlink leads (as Linux's `MAXSYMLINKS`).
const MAX_LINK_HOPS: usize = 40;

/// What making a sandbox did.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// Regular files copied.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files copied as copy-on-write clones (0 when the filesystem has none).
    pub cloned: u64,
    /// Symlinks copied (they lead inside the workspace).
    pub symlinks: u64,
    /// Symlinks and special files left out.
    pub left_out: u64,
    /// Time spent walking the workspace and making folders and symlinks, included in `elapsed_ms`.
    pub walk_ms: u64,
    /// Time spent making the copy in all.
    pub elapsed_ms: u64,
}

/// A temporary copy of a workspace; the folder is deleted when this is dropped.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    report: Report,
}

impl Sandbox {
    /// The copy's root folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What making the copy did.
    pub fn report(&self) -> &Report {
        &self.report
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        remove_tree(&self.root);
    }
}

/// Remove the sandboxes in `parent` left by workers that were killed: folders named `llw-sandbox-<pid>-*`, owned by
/// this user, whose process no longer runs. A folder of a running worker, of another user, or without a pid in its
/// name (made before names carried one) is left alone. Returns how many were removed. One `readdir` when there are
/// none: the server's start and `recover` call it.
pub fn remove_orphans(parent: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = fs::read_dir(parent) else {
        return 0;
    };
    let me = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let path = e.path();
        let ours = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            remove_tree(&path);
            removed += usize::from(fs::symlink_metadata(&path).is_err());
        }
    }
    removed
}

/// Delete `dir` and everything in it, making read-only folders writable first when that is what stops it.
fn remove_tree(dir: &Path) {
    if fs::remove_dir_all(dir).is_ok() || fs::symlink_metadata(dir).is_err() {
        return;
    }
    // A check may have left read-only folders (a Go module cache does): open them up, then try again.
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let _ = fs::set_permissions(&d, Permissions::from_mode(0o700));
        if let Ok(rd) = fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
    let _ = fs::remove_dir_all(dir);
}

/// The folder sandboxes are made in: `LOCAL_LLM_SANDBOX_DIR`, else the system's temporary folder.
pub fn parent_dir() -> Result<PathBuf> {
    match std::env::var_os(DIR_ENV).filter(|v| !v.is_empty()) {
        Some(d) => {
            let p = PathBuf::from(d);
            if !p.is_absolute() || !p.is_dir() {
                return Err(Error::io_message(format!(
                    "{DIR_ENV} names {}, which is not an absolute path to an existing folder; fix or unset it",
                    p.display()
                )));
            }
            Ok(p)
        }
        None => Ok(std::env::temp_dir()),
    }
}

/// One regular file to copy.
struct Job {
    src: PathBuf,
    dst: PathBuf,
    mode: u32,
}

/// Make a sandbox copy of the workspace at `root` (canonical), leaving out the entries named in `skip` (a name
/// matches an entry of that name at any depth; a name with `/` matches that workspace-relative path) and every file
/// whose workspace-relative path `secret` says is a secret (the code a check runs on a proposal is the model's: it
/// must find no credentials to print). Stops with [`Error::Cancelled`] when `watch` is cancelled; the partial copy
/// is deleted.
pub fn create(
    root: &Path,
    skip: &[String],
    secret: &dyn Fn(&str) -> bool,
    owner: Option<u32>,
    watch: &Watch,
) -> Result<Sandbox> {
    let sb = create_in(&parent_dir()?, root, skip, secret, watch)?;
    if let Some(uid) = owner {
        hand_over_tree(sb.root(), uid)?;
    }
    Ok(sb)
}

/// Give the copy at `root` (every folder, file and symlink in it) to the user `uid`, who runs the checks there
/// (a worker running as root drops confined checks to an unprivileged user).
fn hand_over_tree(root: &Path, uid: u32) -> Result<()> {
    let io = |e: std::io::Error| {
        Error::io_message(format!(
            "validation sandbox: cannot hand the copy to uid {uid}: {e}"
        ))
    };
    let mut stack = vec![root.to_path_buf()];
    std::os::unix::fs::lchown(root, Some(uid), Some(uid)).map_err(io)?;
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).map_err(io)?.flatten() {
            let p = e.path();
            std::os::unix::fs::lchown(&p, Some(uid), Some(uid)).map_err(io)?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    Ok(())
}

/// Give the files `rels` of the copy at `root`, and the folders that lead to them, to the user `uid` (what the
/// patch wrote into the copy after it was handed over).
pub fn hand_over(root: &Path, rels: &[&str], uid: u32) {
    for rel in rels {
        let mut p = root.to_path_buf();
        for c in rel.split('/') {
            p.push(c);
            let _ = std::os::unix::fs::lchown(&p, Some(uid), Some(uid));
        }
    }
}

/// [`create`] in the folder `parent`.
pub fn create_in(
    parent: &Path,
    root: &Path,
    skip: &[String],
    secret: &dyn Fn(&str) -> bool,
    watch: &Watch,
) -> Result<Sandbox> {
    let started = Instant::now();
    let mut sandbox = new_folder(parent)?;
    let tree = copy_tree(
        root,
        &sandbox.root,
        skip,
        secret,
        watch,
        &mut sandbox.report,
    )?;
    sandbox.report.walk_ms = started.elapsed().as_millis() as u64;
    let cloned = copy_all(&tree.jobs, watch)?;
    sandbox.report.files = tree.jobs.len() as u64;
    sandbox.report.cloned = cloned;
    set_folder_modes(&tree.dirs)?;
    sandbox.report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(sandbox)
}

/// The error for a sandbox step `what` that failed with `e`, with the fix.
fn sandbox_error(what: &str, e: std::io::Error) -> Error {
    Error::io_message(format!(
        "validation sandbox: {what}: {e} (set {DIR_ENV} to a writable folder with room for a copy of the workspace)"
    ))
}

/// A new, empty sandbox folder in `parent`, owned by the returned guard from the moment it exists.
fn new_folder(parent: &Path) -> Result<Sandbox> {
    // The owner's pid in the name: a folder whose worker was killed is recognised and removed later
    // ([`remove_orphans`]).
    let made = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(parent)
        .map_err(|e| sandbox_error(&format!("cannot make a folder in {}", parent.display()), e))?
        .keep();
    // From here on the folder is owned by the guard, whatever happens.
    let mut sandbox = Sandbox {
        root: made.clone(),
        report: Report::default(),
    };
    sandbox.root = made
        .canonicalize()
        .map_err(|e| sandbox_error("cannot resolve its folder", e))?;
    Ok(sandbox)
}

/// What the walk leaves to do once the folders and symlinks exist: the files to copy, and each folder's mode.
struct Tree {
    jobs: Vec<Job>,
    dirs: Vec<(PathBuf, u32)>,
}

/// Walk the workspace at `root` and make its folders and its symlinks that lead inside under `dst_root`, leaving
/// out what `skip` names and the files `secret` says are secrets; the regular files are returned as jobs.
fn copy_tree(
    root: &Path,
    dst_root: &Path,
    skip: &[String],
    secret: &dyn Fn(&str) -> bool,
    watch: &Watch,
    report: &mut Report,
) -> Result<Tree> {
    let mut tree = Tree {
        jobs: Vec::new(),
        dirs: Vec::new(),
    };
    for entry in walker(root, skip, dst_root) {
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let entry = entry.map_err(|e| {
            Error::io_message(format!(
                "validation sandbox: cannot read the workspace: {e}; fix its permissions, or leave it out of the \
                 copy with [validation] sandbox_skip"
            ))
        })?;
        if entry.depth() == 0 {
            continue;
        }
        let src = entry.path();
        let Ok(rel) = src.strip_prefix(root) else {
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_dir()) && rel.to_str().is_some_and(secret) {
            report.left_out += 1;
            continue;
        }
        copy_entry(root, src, rel, &dst_root.join(rel), &mut tree, report)?;
    }
    Ok(tree)
}

/// The walk of the workspace at `root`: `.gitignore` files and `.git/info/exclude` respected, hidden files kept,
/// symlinks not followed, the entries `skip` names left out, and so is the sandbox folder `own`.
fn walker(root: &Path, skip: &[String], own: &Path) -> ignore::Walk {
    let skip_names: Vec<String> = skip
        .iter()
        .map(|s| s.trim().trim_end_matches('/').to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let filter_root = root.to_path_buf();
    // When the sandbox folder lies inside the workspace (LOCAL_LLM_SANDBOX_DIR there, or a workspace holding the
    // temporary folder), the walk must not copy the copy into itself.
    let own = own.to_path_buf();
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            if e.path() == own {
                return false;
            }
            let rel = e.path().strip_prefix(&filter_root).unwrap_or(e.path());
            let name = e.file_name().to_string_lossy();
            !skip_names.iter().any(|s| {
                if s.contains('/') {
                    rel == Path::new(s)
                } else {
                    name == s.as_str()
                }
            })
        })
        .build()
}

/// One entry of the walk, `src` (workspace-relative `rel`), to `dst`: a folder is made, a regular file becomes a job,
/// a symlink that leads inside is made again; anything else is counted as left out.
fn copy_entry(
    root: &Path,
    src: &Path,
    rel: &Path,
    dst: &Path,
    tree: &mut Tree,
    report: &mut Report,
) -> Result<()> {
    let meta = fs::symlink_metadata(src)
        .map_err(|e| sandbox_error(&format!("cannot inspect {}", rel.display()), e))?;
    let ft = meta.file_type();
    if ft.is_dir() {
        fs::create_dir(dst)
            .map_err(|e| sandbox_error(&format!("cannot make {}", rel.display()), e))?;
        tree.dirs
            .push((dst.to_path_buf(), meta.permissions().mode() & 0o777));
    } else if ft.is_file() {
        report.bytes += meta.len();
        tree.jobs.push(Job {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            mode: meta.permissions().mode() & 0o777,
        });
    } else if ft.is_symlink() {
        let target = fs::read_link(src)
            .map_err(|e| sandbox_error(&format!("cannot read the link {}", rel.display()), e))?;
        match inside_link(root, rel, &target) {
            Some(link) => {
                std::os::unix::fs::symlink(&link, dst).map_err(|e| {
                    sandbox_error(&format!("cannot make the link {}", rel.display()), e)
                })?;
                report.symlinks += 1;
            }
            None => report.left_out += 1,
        }
    } else {
        report.left_out += 1;
    }
    Ok(())
}

/// Give the copied folders their modes, deepest first (last, so that a read-only folder could still be filled).
fn set_folder_modes(dirs: &[(PathBuf, u32)]) -> Result<()> {
    for (d, mode) in dirs.iter().rev() {
        if *mode != 0o755 {
            fs::set_permissions(d, Permissions::from_mode(*mode)).map_err(|e| {
                sandbox_error(&format!("cannot set the mode of {}", d.display()), e)
            })?;
        }
    }
    Ok(())
}

/// Copy every job on a few threads; returns how many were cloned.
fn copy_all(jobs: &[Job], watch: &Watch) -> Result<u64> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(jobs.len().div_ceil(64).max(1));
    let next = AtomicUsize::new(0);
    let cloned = AtomicU64::new(0);
    let try_clone = AtomicBool::new(cfg!(target_os = "linux"));
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    if watch.is_cancelled() {
                        stop.store(true, Ordering::Relaxed);
                        let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert(Error::Cancelled);
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { return };
                    match copy_file(&job.src, &job.dst, job.mode, &try_clone) {
                        Ok(true) => {
                            cloned.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(false) => {}
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                            f.get_or_insert(Error::io_message(format!("validation sandbox: {e}")));
                            return;
                        }
                    }
                }
            });
        }
    });
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(cloned.into_inner()),
    }
}

/// Copy one regular file to a new file `dst` with permission bits `mode`: a copy-on-write clone when the filesystem
/// has them (and `try_clone` still says so), else a plain copy. Returns whether it was cloned. Never a hard link.
fn copy_file(src: &Path, dst: &Path, mode: u32, try_clone: &AtomicBool) -> Result<bool, String> {
    // Never through a symlink swapped in after the walk, never blocking on a FIFO: a regular file or refused.
    let mut from = crate::workspace::fs::open_regular(src).map_err(|e| {
        format!(
            "cannot read {}: {e}; fix its permissions, or leave it out of the copy with [validation] sandbox_skip",
            src.display()
        )
    })?;
    let write_err = |e: std::io::Error| {
        format!(
            "cannot write {}: {e}; set {DIR_ENV} to a writable folder with room for a copy of the workspace",
            dst.display()
        )
    };
    let mut to = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dst)
        .map_err(write_err)?;
    let mut cloned = false;
    #[cfg(target_os = "linux")]
    if try_clone.load(Ordering::Relaxed) {
        use rustix::io::Errno;
        match rustix::fs::ioctl_ficlone(&to, &from) {
            Ok(()) => cloned = true,
            // The filesystem (or the pair of filesystems) has no clones: stop asking for the rest of this copy.
            Err(Errno::OPNOTSUPP | Errno::XDEV | Errno::INVAL | Errno::NOTTY | Errno::NOSYS) => {
                try_clone.store(false, Ordering::Relaxed)
            }
            Err(_) => {}
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = try_clone;
    if !cloned {
        std::io::copy(&mut from, &mut to).map_err(write_err)?;
    }
    to.set_permissions(Permissions::from_mode(mode))
        .map_err(write_err)?;
    Ok(cloned)
}

/// Where the symlink at workspace-relative `rel` (target `target`) may be recreated in the sandbox: `Some(link)`
/// when following it from where it is never leaves the workspace at any step, `None` otherwise (outside, dangling
/// through a missing folder, a loop, or an absolute path that does not start with the workspace root).
fn inside_link(root: &Path, rel: &Path, target: &Path) -> Option<PathBuf> {
    let dir: Vec<String> = rel.parent().map(components).unwrap_or(Some(Vec::new()))?;
    let mut hops = 0;
    resolve(root, dir.clone(), target, &mut hops)?;
    if target.is_absolute() {
        // Rewrite as the equivalent relative link: up to the copy's root, then down the same names.
        let below = target.strip_prefix(root).ok()?;
        let mut link = PathBuf::new();
        for _ in 0..dir.len() {
            link.push("..");
        }
        link.push(below);
        if link.as_os_str().is_empty() {
            link.push(".");
        }
        Some(link)
    } else {
        Some(target.to_path_buf())
    }
}

/// The plain names of a relative path; `None` when it holds anything else.
fn components(p: &Path) -> Option<Vec<String>> {
    p.components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

/// Follow `target` from the workspace folder `dir` (names below `root`) the way the kernel would, following every
/// symlink met on the way, and return where it ends; `None` as soon as a step would leave the workspace.
fn resolve(root: &Path, dir: Vec<String>, target: &Path, hops: &mut usize) -> Option<Vec<String>> {
    *hops += 1;
    if *hops > MAX_LINK_HOPS {
        return None;
    }
    // An absolute target leads inside only through the workspace root's own spelling.
    let (mut at, rest): (Vec<String>, &Path) = if target.is_absolute() {
        (Vec::new(), target.strip_prefix(root).ok()?)
    } else {
        (dir, target)
    };
    for c in rest.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop()?;
            }
            Component::Normal(name) => {
                at.push(name.to_str()?.to_string());
                let here = root.join(at.join("/"));
                match fs::symlink_metadata(&here) {
                    Ok(m) if m.file_type().is_symlink() => {
                        let next = fs::read_link(&here).ok()?;
                        at.pop();
                        at = resolve(root, at, &next, hops)?;
                    }
                    Ok(_) => {}
                    // A missing step cannot be followed further; `..` after it fails in the kernel too.
                    Err(_) => {}
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(at)
}

/// Put the selected files into a sandbox copy exactly as the model saw them: the copy may lack one (ignored, skipped
/// as secret-looking, not yet created) or hold newer bytes, and a patch is checked against the bytes it was made from.
/// `None` means the file did not exist. Only ever called on a sandbox's own copy, never on a workspace.
pub fn stage_pre_images(
    copy: &crate::workspace::Workspace,
    pre_images: &std::collections::BTreeMap<String, Option<crate::patch::PreImage>>,
) -> Result<()> {
    use crate::error::IoContext;
    use crate::workspace::OnDisk;
    for (rel, pre) in pre_images {
        let place = format!("validation sandbox: {rel}");
        match (copy.resolve(rel)?, pre) {
            (OnDisk::File { abs, .. }, Some(p)) => {
                if fs::read(&abs).at("cannot read", &place)? != p.text.as_bytes() {
                    fs::write(&abs, p.text.as_bytes()).at("cannot write", &place)?;
                }
            }
            (OnDisk::Absent { abs }, Some(p)) => {
                if let Some(d) = abs.parent() {
                    fs::create_dir_all(d).at("cannot create the folder of", &place)?;
                }
                fs::write(&abs, p.text.as_bytes()).at("cannot write", &place)?;
                let mode = if p.mode == crate::patch::MODE_EXECUTABLE {
                    0o755
                } else {
                    0o644
                };
                fs::set_permissions(&abs, Permissions::from_mode(mode))
                    .at("cannot set the mode of", &place)?;
            }
            (OnDisk::File { abs, .. }, None) => {
                fs::remove_file(&abs).at("cannot remove", &place)?
            }
            (OnDisk::Absent { .. }, None) => {}
        }
    }
    Ok(())
}

/// The tracer in a sandbox copy ([`crate::locate_rank::executed`]): staged for the one run of the checks before
/// any edit in the folder [`TRACE_FOLDER`](crate::locate_rank::executed::TRACE_FOLDER) at the copy's top, read
/// and removed right after it (and removed when dropped, whatever happened), so that no later check sees it.
pub struct Tracer {
    staged: Staged,
}

impl Tracer {
    /// Put the tracer into the copy at `root`, writable by `owner` (the user confined checks run as, if not this
    /// one). `None` when the copy already has an entry of that name: the project's own is left alone.
    pub fn stage(root: &Path, owner: Option<u32>) -> Result<Option<Tracer>> {
        use crate::locate_rank::executed::{TRACE_FOLDER, TRACER};
        let files = [("sitecustomize.py", TRACER.as_bytes())];
        Ok(Staged::new(root, TRACE_FOLDER, &files, owner)?.map(|staged| Tracer { staged }))
    }

    /// The folder the tracer is in and writes into.
    pub fn folder(&self) -> &Path {
        &self.staged.folder
    }

    /// What the run's Python processes wrote (`trace-<pid>.txt`), each at most
    /// [`MAX_TRACE`](crate::locate_rank::executed::MAX_TRACE) bytes, at most
    /// [`MAX_TRACES`](crate::locate_rank::executed::MAX_TRACES) of them; the folder is removed. A check may have put
    /// anything there: the folder and each file are opened without following a symlink and without blocking, and
    /// only regular files are read.
    pub fn take(self) -> Vec<String> {
        use crate::locate_rank::executed::{MAX_TRACE, MAX_TRACES};
        written(&self.staged.folder, "trace-", MAX_TRACE, MAX_TRACES)
    }
}

/// What a run wrote into `folder`: the regular files named `<prefix>...txt`, each at most `most_bytes`, at most
/// `most_files` of them. A check may have put anything there: the folder and each file are opened without
/// following a symlink and without blocking, and only regular files are read.
fn written(folder: &Path, prefix: &str, most_bytes: usize, most_files: usize) -> Vec<String> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read;
    let mut out = Vec::new();
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(dir) = rustix::fs::open(folder, dir_flags, Mode::empty()) else {
        return out;
    };
    let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
        return out;
    };
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    for entry in entries.flatten() {
        if out.len() >= most_files {
            break;
        }
        let name = entry.file_name().to_string_lossy();
        if !(name.starts_with(prefix) && name.ends_with(".txt")) {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(&dir, entry.file_name(), file_flags, Mode::empty()) else {
            continue;
        };
        if !rustix::fs::fstat(&fd).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
        }) {
            continue;
        }
        let mut bytes = Vec::new();
        if std::fs::File::from(fd)
            .take(most_bytes as u64)
            .read_to_end(&mut bytes)
            .is_ok()
        {
            out.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    out
}

/// A folder staged at the top of a sandbox copy for one run of the checks (the tracer, the prober), removed when
/// dropped, whatever happened.
struct Staged {
    folder: PathBuf,
}

impl Staged {
    /// Create the folder `name` at the copy's top `root` holding `files` (name, bytes), handed to `owner` (the user
    /// confined checks run as, if not this one) with them. `None` when the copy already has an entry of that
    /// name: the project's own is left alone.
    fn new(
        root: &Path,
        name: &str,
        files: &[(&str, &[u8])],
        owner: Option<u32>,
    ) -> Result<Option<Staged>> {
        use crate::error::IoContext;
        let folder = root.join(name);
        if fs::symlink_metadata(&folder).is_ok() {
            return Ok(None);
        }
        let place = format!("validation sandbox: {name}");
        fs::create_dir(&folder).at("cannot create", &place)?;
        let staged = Staged { folder };
        for (file, bytes) in files {
            fs::write(staged.folder.join(file), bytes).at("cannot write", &place)?;
        }
        if let Some(uid) = owner {
            let mut rels = vec![name.to_string()];
            rels.extend(files.iter().map(|(file, _)| format!("{name}/{file}")));
            let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
            hand_over(root, &rels, uid);
        }
        Ok(Some(staged))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        remove_tree(&self.folder);
    }
}

/// The prober in a sandbox copy ([`crate::locate_rank::batch`]): staged with its mutants for the probe's one run
/// of the failing check in the folder [`PROBE_FOLDER`](crate::locate_rank::batch::PROBE_FOLDER) at the copy's top,
/// read and removed right after it (and removed when dropped, whatever happened), so that no later check sees it.
pub struct Prober {
    staged: Staged,
}

impl Prober {
    /// Put the prober and the encoded `mutants` into the copy at `root`, readable by `owner` (the user confined
    /// checks run as, if not this one). `None` when the copy already has an entry of that name: the project's own
    /// is left alone.
    pub fn stage(root: &Path, owner: Option<u32>, mutants: &[u8]) -> Result<Option<Prober>> {
        use crate::locate_rank::batch::{MUTANTS_FILE, PROBE_FOLDER, PROBER};
        let files = [
            ("sitecustomize.py", PROBER.as_bytes()),
            (MUTANTS_FILE, mutants),
        ];
        Ok(Staged::new(root, PROBE_FOLDER, &files, owner)?.map(|staged| Prober { staged }))
    }

    /// The folder the prober is in and writes into.
    pub fn folder(&self) -> &Path {
        &self.staged.folder
    }

    /// What the run wrote (`probe-<pid>.txt`, at most
    /// [`MAX_VERDICTS`](crate::locate_rank::batch::MAX_VERDICTS) bytes each, at most 4 of them); the folder is
    /// removed.
    pub fn take(self) -> Vec<String> {
        written(
            &self.staged.folder,
            "probe-",
            crate::locate_rank::batch::MAX_VERDICTS,
            4,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, symlink};

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        (d, root)
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn skip() -> Vec<String> {
        vec!["target".into(), "node_modules".into(), ".git".into()]
    }

    #[test]
    fn copies_files_with_modes_and_respects_gitignore_and_skips() {
        let (_d, root) = ws();
        write(&root, "src/lib.rs", "fn a() {}\n");
        write(&root, ".gitignore", "/build/\n*.log\n");
        write(&root, "build/out.bin", "x");
        write(&root, "debug.log", "x");
        write(&root, "target/debug/big", "x");
        write(&root, "web/node_modules/m/index.js", "x");
        write(&root, ".git/HEAD", "ref: x\n");
        write(&root, ".hidden/keep.txt", "kept\n");
        write(&root, "run.sh", "#!/bin/sh\n");
        fs::set_permissions(root.join("run.sh"), Permissions::from_mode(0o750)).unwrap();
        let sb = create(&root, &skip(), &|_| false, None, &Watch::default()).unwrap();
        let s = sb.root();
        assert!(s.file_name().unwrap().to_string_lossy().starts_with(PREFIX));
        assert_eq!(
            fs::read_to_string(s.join("src/lib.rs")).unwrap(),
            "fn a() {}\n"
        );
        assert_eq!(
            fs::read_to_string(s.join(".hidden/keep.txt")).unwrap(),
            "kept\n"
        );
        assert!(s.join(".gitignore").is_file());
        for gone in ["build", "debug.log", "target", "web/node_modules", ".git"] {
            assert!(!s.join(gone).exists(), "{gone} was copied");
        }
        let m = fs::metadata(s.join("run.sh")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o750);
        // Never a hard link: a separate inode, one link.
        let orig = fs::metadata(root.join("src/lib.rs")).unwrap();
        let copy = fs::metadata(s.join("src/lib.rs")).unwrap();
        assert_ne!(orig.ino(), copy.ino());
        assert_eq!(copy.nlink(), 1);
        fs::write(s.join("src/lib.rs"), "changed").unwrap();
        assert_eq!(
            fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            "fn a() {}\n"
        );
        let path = s.to_path_buf();
        drop(sb);
        assert!(!path.exists(), "the sandbox was not removed");
    }

    #[test]
    fn files_named_secret_are_left_out() {
        let (_d, root) = ws();
        write(&root, "app.py", "x\n");
        write(&root, ".env", "PASSWORD=1\n");
        write(&root, "deploy/tls.key", "k\n");
        let secret = |rel: &str| rel == ".env" || rel.ends_with(".key");
        let sb = create(&root, &skip(), &secret, None, &Watch::default()).unwrap();
        assert!(sb.root().join("app.py").is_file());
        assert!(!sb.root().join(".env").exists());
        assert!(!sb.root().join("deploy/tls.key").exists());
        assert_eq!(sb.report().left_out, 2);
    }

    #[test]
    fn symlinks_are_kept_only_when_they_lead_inside() {
        let (_d, root) = ws();
        let (_o, outside) = ws();
        write(&outside, "secret.txt", "outside\n");
        write(&root, "data.txt", "data\n");
        write(&root, "a/b/c.txt", "c\n");
        symlink("data.txt", root.join("rel-in")).unwrap();
        symlink(root.join("data.txt"), root.join("abs-in")).unwrap();
        symlink("../b/c.txt", root.join("a/b/up-in")).unwrap();
        symlink(outside.join("secret.txt"), root.join("abs-out")).unwrap();
        symlink("../../etc/passwd", root.join("rel-out")).unwrap();
        // `hop` leads to the root; `hop/..` then leaves it, although the text alone looks inside.
        symlink("../..", root.join("a/b/hop")).unwrap();
        symlink("b/hop/..", root.join("a/trick")).unwrap();
        // Out of the workspace and back in by its folder name: physically it lands inside, in the sandbox it
        // would not.
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        symlink(format!("../{name}/data.txt"), root.join("via-parent")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        let sb = create(&root, &skip(), &|_| false, None, &Watch::default()).unwrap();
        let s = sb.root();
        assert_eq!(fs::read_to_string(s.join("rel-in")).unwrap(), "data\n");
        assert_eq!(fs::read_to_string(s.join("a/b/up-in")).unwrap(), "c\n");
        // The absolute link is rewritten to stay in the sandbox.
        assert_eq!(
            fs::read_link(s.join("abs-in")).unwrap(),
            Path::new("data.txt")
        );
        fs::write(s.join("abs-in"), "written in the sandbox\n").unwrap();
        assert_eq!(fs::read_to_string(root.join("data.txt")).unwrap(), "data\n");
        assert!(fs::symlink_metadata(s.join("a/b/hop")).is_ok());
        for gone in [
            "abs-out",
            "rel-out",
            "a/trick",
            "via-parent",
            "loop1",
            "loop2",
        ] {
            assert!(
                fs::symlink_metadata(s.join(gone)).is_err(),
                "{gone} was copied"
            );
        }
        assert_eq!(sb.report().left_out, 6);
    }

    #[test]
    fn a_sandbox_left_by_a_killed_worker_is_removed_and_others_are_kept() {
        let parent = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let orphan = parent.path().join(format!("{PREFIX}{dead}-abc"));
        fs::create_dir_all(orphan.join("deep/er")).unwrap();
        fs::write(orphan.join("deep/er/f.txt"), "x").unwrap();
        fs::set_permissions(orphan.join("deep"), Permissions::from_mode(0o500)).unwrap();
        let kept = [
            format!("{PREFIX}{}-mine", std::process::id()),
            format!("{PREFIX}1-running"),
            format!("{PREFIX}oldname"),
            "other-folder".to_string(),
        ];
        for k in &kept {
            fs::create_dir(parent.path().join(k)).unwrap();
        }
        assert_eq!(remove_orphans(parent.path()), 1);
        assert!(
            fs::symlink_metadata(&orphan).is_err(),
            "the orphan is still there"
        );
        for k in &kept {
            assert!(parent.path().join(k).is_dir(), "{k} was removed");
        }
    }

    #[test]
    fn a_sandbox_is_named_after_its_owner() {
        let (_d, root) = ws();
        write(&root, "a.txt", "x");
        let parent = tempfile::tempdir().unwrap();
        let sb = create_in(parent.path(), &root, &skip(), &|_| false, &Watch::default()).unwrap();
        let name = sb.root().file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with(&format!("{PREFIX}{}-", std::process::id())),
            "{name}"
        );
        assert_eq!(
            remove_orphans(parent.path()),
            0,
            "a live worker's sandbox is kept"
        );
    }

    #[test]
    fn a_sandbox_folder_inside_the_workspace_is_not_copied_into_itself() {
        let (_d, root) = ws();
        write(&root, "a.txt", "x");
        let parent = root.join("tmp");
        fs::create_dir(&parent).unwrap();
        let sb = create_in(&parent, &root, &skip(), &|_| false, &Watch::default()).unwrap();
        let s = sb.root();
        assert_eq!(fs::read_to_string(s.join("a.txt")).unwrap(), "x");
        let own = s.strip_prefix(&root).unwrap();
        assert!(!s.join(own).exists(), "the sandbox holds a copy of itself");
        assert_eq!(sb.report().files, 1);
    }

    #[test]
    fn cancellation_stops_and_removes_the_copy() {
        let (_d, root) = ws();
        for i in 0..50 {
            write(&root, &format!("f{i}.txt"), "x");
        }
        let parent = tempfile::tempdir().unwrap();
        let w = Watch::default();
        w.cancelled.store(true, Ordering::Relaxed);
        let r = create_in(parent.path(), &root, &skip(), &|_| false, &w);
        assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
        assert_eq!(fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn read_only_folders_left_by_a_check_are_removed_too() {
        let (_d, root) = ws();
        write(&root, "a.txt", "x");
        let sb = create(&root, &skip(), &|_| false, None, &Watch::default()).unwrap();
        let ro = sb.root().join("cache/mod");
        fs::create_dir_all(&ro).unwrap();
        fs::write(ro.join("f"), "x").unwrap();
        fs::set_permissions(&ro, Permissions::from_mode(0o555)).unwrap();
        let path = sb.root().to_path_buf();
        drop(sb);
        assert!(!path.exists());
    }

    /// Run `python3 -c code` in `root` with the tracer in `t` on for the selected `files`, and `path` as the
    /// project's own PYTHONPATH.
    fn traced_python(root: &Path, t: &Tracer, files: &[&str], path: &Path, code: &str) -> String {
        use crate::locate_rank::executed;
        let vars = executed::environment(root, t.folder(), files, Some(path.as_os_str()));
        let out = std::process::Command::new("python3")
            .args(["-c", code])
            .current_dir(root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(vars)
            .output()
            .expect("python3 runs");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    #[test]
    fn the_tracer_records_the_failing_call_hands_over_to_the_projects_sitecustomize_and_is_then_gone()
     {
        let (_d, root) = ws();
        write(
            &root,
            "scale.py",
            "def ounces(g):\n    return g / 28.35\n\n\ndef grams(oz):\n    return oz / 28.35\n",
        );
        write(&root, "lib/sitecustomize.py", "print('theirs ran')\n");
        let t = Tracer::stage(&root, None)
            .unwrap()
            .expect("no entry of its name");
        let said = traced_python(
            &root,
            &t,
            &["scale.py"],
            &root.join("lib"),
            "import sys, scale\nscale.ounces(1)\nprint(any('local-llm-trace' in p for p in sys.path))\n\
             v = scale.grams(2)\nassert v == 56.7",
        );
        assert!(said.contains("theirs ran"), "{said}");
        assert!(
            said.contains("False"),
            "the tracer's folder stays on sys.path: {said}"
        );
        assert!(said.contains("AssertionError"), "{said}");
        let folder = t.folder().to_path_buf();
        let traces = t.take();
        assert!(!folder.exists(), "the tracer's folder is left in the copy");
        assert_eq!(traces.len(), 1, "{traces:?}");
        let e = crate::locate_rank::executed::Executed::read(&traces, &["scale.py"]);
        let ran = &e.files["scale.py"];
        assert_eq!(ran.body.iter().copied().collect::<Vec<_>>(), [2, 6]);
        assert_eq!(ran.module.iter().copied().collect::<Vec<_>>(), [1, 5]);
        assert_eq!(
            ran.failing.iter().copied().collect::<Vec<_>>(),
            [6],
            "grams' call failed"
        );
        assert!(ran.failing_before.is_empty());
    }

    /// Every mutant of the selected `file` (its name, its one function's first line and body; each mutant another
    /// body) through the prober, in one run of the check (written as `check_file`) by `python3 args`: what the
    /// prober wrote, read.
    fn probed_further(
        file: (&str, &str, &str),
        bodies: &[&str],
        check_file: (&str, &str),
        args: &[&str],
    ) -> crate::locate_rank::batch::Outcomes {
        use crate::locate_rank::batch;
        let (_d, root) = ws();
        let (name, head, body) = file;
        write(&root, name, &format!("{head}\n    {body}\n"));
        let path = root.join(name);
        let mutants: Vec<(std::path::PathBuf, String)> = bodies
            .iter()
            .map(|body| (path.clone(), format!("{head}\n    {body}\n")))
            .collect();
        let listed: Vec<(std::path::PathBuf, &str)> = mutants
            .iter()
            .map(|(p, t)| (p.clone(), t.as_str()))
            .collect();
        let p = Prober::stage(&root, None, &batch::encode(&listed, true))
            .unwrap()
            .expect("no entry of its name");
        let vars = batch::environment(p.folder(), None, 2000, 10000, 2);
        write(&root, check_file.0, check_file.1);
        let out = std::process::Command::new("python3")
            .args(args)
            .current_dir(&root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(vars)
            .output()
            .expect("python3 runs");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        batch::read(&p.take(), mutants.len())
            .unwrap_or_else(|| panic!("the prober wrote its verdicts: {said}"))
    }

    #[test]
    fn the_prober_tells_which_mutants_got_the_check_past_its_first_failing_assertion() {
        let got = probed_further(
            ("scale.py", "def grams(oz):", "return oz / 28.35"),
            &[
                // The first assertion passes, the second fails: further on.
                "return 28.35",
                // Fails where the unmutated program does: at the first assertion, or in the call it makes.
                "return oz + 28.35",
                "raise ValueError(oz)",
                // Passes: not "further", it passed.
                "return oz * 28.35",
            ],
            (
                "check.py",
                "import scale\nassert scale.grams(1) == 28.35\nassert scale.grams(2) == 56.7\n",
            ),
            &["check.py"],
        );
        assert_eq!(
            got.passed,
            [Some(false), Some(false), Some(false), Some(true)]
        );
        assert_eq!(got.further, [true, false, false, false]);
    }

    /// `double` returns `x + 2`; the tests pass for 2, fail for 3 (and 5) and 10. Each mutant below, in order: the
    /// failing test's second assertion fails instead (further); the failing test passes and a later one fails
    /// (further); a test that passed fails (not); every test passes; the first test fails (not).
    const DOUBLES: [&str; 5] = [
        "return x * 2 if x < 5 else 0",
        "return x * 2 if x < 10 else 0",
        "return x + 3",
        "return x * 2",
        "return x - 2",
    ];

    /// What the prober says of [`DOUBLES`]: only `return x * 2` passes; the first two got further.
    fn doubles_read(got: &crate::locate_rank::batch::Outcomes) {
        let passed: Vec<Option<bool>> =
            DOUBLES.iter().map(|m| Some(*m == "return x * 2")).collect();
        assert_eq!(got.passed, passed);
        assert_eq!(got.further, [true, true, false, false, false]);
    }

    #[test]
    fn under_unittest_the_prober_counts_the_tests_in_their_run_order() {
        // unittest runs its tests by name: `test_c_ten`, first in the file, runs last.
        let check = "import unittest\nimport double\n\n\nclass Doubles(unittest.TestCase):\n    \
                     def test_c_ten(self):\n        self.assertEqual(double.double(10), 20)\n\n    \
                     def test_a_two(self):\n        self.assertEqual(double.double(2), 4)\n\n    \
                     def test_b_three_and_five(self):\n        self.assertEqual(double.double(3), 6)\n        \
                     self.assertEqual(double.double(5), 10)\n\n\nunittest.main()\n";
        let got = probed_further(
            ("double.py", "def double(x):", "return x + 2"),
            &DOUBLES,
            ("test_double.py", check),
            &["test_double.py"],
        );
        doubles_read(&got);
    }

    #[test]
    fn under_pytest_the_prober_hears_the_first_failing_test_through_its_plugin() {
        let has = std::process::Command::new("python3")
            .args(["-c", "import pytest"])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            has,
            "this test runs a real pytest: `python3 -m pip install pytest` (.ci/run installs it)"
        );
        let check = "import double\n\n\ndef test_a_two():\n    assert double.double(2) == 4\n\n\n\
                     def test_b_three_and_five():\n    assert double.double(3) == 6\n    \
                     assert double.double(5) == 10\n\n\ndef test_c_ten():\n    assert double.double(10) == 20\n";
        let got = probed_further(
            ("double.py", "def double(x):", "return x + 2"),
            &DOUBLES,
            ("test_double.py", check),
            &[
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "test_double.py",
            ],
        );
        doubles_read(&got);
    }

    #[test]
    fn the_prober_runs_every_mutant_in_one_run_stops_at_the_first_pass_and_is_then_gone() {
        use crate::locate_rank::batch;
        let (_d, root) = ws();
        let source = "def grams(oz):\n    return oz / 28.35\n";
        write(&root, "scale.py", source);
        write(&root, "lib/sitecustomize.py", "print('theirs ran')\n");
        let loops = "def grams(oz):\n    while True:\n        pass\n";
        let fixed = "def grams(oz):\n    return oz * 28.35\n";
        let path = root.join("scale.py");
        let mutants = [
            (path.clone(), "def grams(oz):\n    return oz + 28.35\n"),
            (path.clone(), loops),
            (
                path.clone(),
                "def grams(oz):\n    raise SystemExit(0 if oz else 1)\n",
            ),
            (path.clone(), fixed),
            (path.clone(), "def grams(oz):\n    return 56.7\n"),
        ];
        let p = Prober::stage(&root, None, &batch::encode(&mutants, false))
            .unwrap()
            .expect("no entry of its name");
        let mut vars =
            batch::environment(p.folder(), Some(root.join("lib").as_os_str()), 300, 5000, 2);
        vars.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import scale\nassert scale.grams(2) == 56.7\nprint('checked')",
            ])
            .current_dir(&root)
            .envs(vars)
            .output()
            .expect("python3 runs");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(said.contains("theirs ran"), "{said}");
        assert!(
            !said.contains("checked"),
            "the check itself went on: {said}"
        );
        let folder = p.folder().to_path_buf();
        let wrote = p.take();
        assert!(!folder.exists(), "the prober's folder is left in the copy");
        let verdicts = batch::read(&wrote, mutants.len())
            .expect("the prober wrote its verdicts")
            .passed;
        // The loop is killed and fails; a `SystemExit(0)` passes as a check's exit 0 does; the run stops at that
        // first pass, before the fixed text and the one after it.
        assert_eq!(verdicts[0], Some(false));
        assert_eq!(verdicts[1], Some(false));
        assert_eq!(verdicts[2], Some(true));
        assert_eq!(verdicts[4], None);
        // Nothing was written to the file itself.
        assert_eq!(fs::read_to_string(&path).unwrap(), source);
        // A check that never imports the file (it runs it as a script) says nothing.
        let p = Prober::stage(&root, None, &batch::encode(&mutants[3..4], false))
            .unwrap()
            .unwrap();
        let vars = batch::environment(p.folder(), None, 300, 5000, 2);
        std::process::Command::new("python3")
            .arg("scale.py")
            .current_dir(&root)
            .envs(vars)
            .output()
            .expect("python3 runs");
        assert_eq!(batch::read(&p.take(), 1), None);
        // Asked to run every mutant, it goes on past a pass: the fixed text and the one after it pass as well.
        let p = Prober::stage(&root, None, &batch::encode(&mutants, true))
            .unwrap()
            .unwrap();
        let vars = batch::environment(p.folder(), Some(root.join("lib").as_os_str()), 300, 5000, 2);
        std::process::Command::new("python3")
            .args(["-B", "-c", "import scale\nassert scale.grams(2) == 56.7"])
            .current_dir(&root)
            .envs(vars)
            .output()
            .expect("python3 runs");
        let verdicts =
            batch::read(&p.take(), mutants.len()).expect("the prober wrote its verdicts");
        assert_eq!(
            verdicts.passed,
            [Some(false), Some(false), Some(true), Some(true), Some(true)]
        );
    }

    #[test]
    fn the_tracer_leaves_a_projects_own_entry_alone_and_reads_nothing_a_check_swapped_in() {
        let (_d, root) = ws();
        write(&root, ".local-llm-trace/keep.txt", "theirs");
        assert!(Tracer::stage(&root, None).unwrap().is_none());
        assert_eq!(
            fs::read_to_string(root.join(".local-llm-trace/keep.txt")).unwrap(),
            "theirs"
        );
        fs::remove_dir_all(root.join(".local-llm-trace")).unwrap();

        let t = Tracer::stage(&root, None).unwrap().unwrap();
        write(&root, "secret.txt", "local-llm-trace 1\nhit 0 1 1 body\n");
        symlink(root.join("secret.txt"), t.folder().join("trace-1.txt")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            t.folder().join("trace-2.txt"),
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        write(
            &root,
            ".local-llm-trace/trace-3.txt",
            "local-llm-trace 1\nhit 0 2 1 body\n",
        );
        let traces = t.take();
        assert_eq!(
            traces,
            ["local-llm-trace 1\nhit 0 2 1 body\n"],
            "only the regular file is read"
        );
        assert!(!root.join(".local-llm-trace").exists());
        assert!(
            root.join("secret.txt").exists(),
            "removing the folder followed a symlink"
        );
    }
}
