//! The file layer: folder handles, every component opened with `O_NOFOLLOW`, so a symlink swapped in anywhere on the
//! path (a file or a parent folder) makes the operation fail instead of following it, and every file opened
//! `O_NOFOLLOW | O_NONBLOCK` and checked on the open handle (`fstat`) before a byte is read. Each component is opened
//! with `openat2` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it, else with `openat`. Every read
//! and write in a workspace goes through it. Built on `rustix`: no `unsafe` (forbidden in `workspace/`).

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, ResolveFlags};
use rustix::io::Errno;

pub use rustix::fs::OFlags;

/// The start of the name of every temporary file the worker writes in a workspace (a leftover one is removed by
/// recovery).
pub const TEMP_PREFIX: &str = ".llw-";

/// An open folder: every name is looked up in it, never through a path string.
pub struct Dir(OwnedFd);

/// Whether the kernel has `openat2` (Linux 5.6 and later); cleared the first time it answers `ENOSYS`.
static HAS_OPENAT2: AtomicBool = AtomicBool::new(true);

/// Open the single component `name` in the folder `dir`: with `openat2` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
/// RESOLVE_NO_MAGICLINKS` where the kernel has it (nothing it resolves may leave `dir` or pass a symlink), else with
/// `openat`; `flags` always hold `O_NOFOLLOW` and `O_CLOEXEC`.
fn open_beneath<Fd: AsFd>(dir: Fd, name: &str, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if HAS_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&dir, name, flags, mode, resolve) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOSYS) => HAS_OPENAT2.store(false, Ordering::Relaxed),
            // A seccomp filter (an older container runtime) may refuse the call itself: ask `openat`.
            Err(Errno::PERM) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(rustix::fs::openat(&dir, name, flags, mode)?)
}

/// The error for `name` being `kind` where a regular file was expected.
pub fn not_regular(name: &str, kind: &'static str) -> io::Error {
    if kind == "a symlink" {
        return io::Error::other(format!(
            "{name} is a symlink or not a folder; the worker never reads or writes through one"
        ));
    }
    io::Error::other(format!(
        "{name} is {kind}, not a regular file; the worker never opens one"
    ))
}

fn symlink_error(e: io::Error, name: &str) -> io::Error {
    match Errno::from_io_error(&e) {
        Some(Errno::LOOP) | Some(Errno::NOTDIR) => io::Error::other(format!(
            "{name} is a symlink or not a folder; the worker never reads or writes through one"
        )),
        _ => e,
    }
}

/// The folder that holds `rel`, opened from `root` one component at a time, and the file's name in it.
pub fn open_parent(root: &Path, rel: &str) -> io::Result<(Dir, String)> {
    let mut dir = Dir::root(root)?;
    let comps: Vec<&str> = rel.split('/').collect();
    let (name, folders) = comps
        .split_last()
        .ok_or_else(|| io::Error::other("empty path"))?;
    for comp in folders {
        dir = dir.open_plain(comp, rel)?;
    }
    Ok((dir, name.to_string()))
}

/// What is at a name in a folder, looked at without following a symlink and without blocking.
pub enum Found {
    /// Nothing.
    Absent,
    /// A regular file: the open file (read-only, or read-write when asked), its bytes, its number of hard links.
    File {
        /// The open file.
        file: std::fs::File,
        /// Its bytes.
        bytes: Vec<u8>,
        /// Its number of hard links.
        links: u64,
    },
    /// Something that is not a regular file: what it is ("a FIFO", "a folder", "a symlink"...).
    Other(&'static str),
}

/// What is at a name in a folder, opened without following a symlink and without blocking, nothing read yet.
pub enum Opened {
    /// Nothing.
    Absent,
    /// A regular file (its type asked of the open handle).
    File(std::fs::File),
    /// Something that is not a regular file: what it is.
    Other(&'static str),
}

/// What a file type is, in words.
fn kind_of(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a folder",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    }
}

/// The type of the open file `fd`, asked of the handle itself.
fn kind(fd: impl AsFd) -> io::Result<FileType> {
    Ok(FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode as _))
}

/// The flags every workspace file is opened with (besides `O_NOFOLLOW` and `O_CLOEXEC`, always added): never
/// blocking in `open` (a FIFO or a device swapped in opens at once and is then refused by its type).
const FILE_FLAGS: OFlags = OFlags::NONBLOCK;

/// Open the file at the absolute `path` for reading, never following a symlink at its last component and never
/// blocking (`O_NOFOLLOW | O_NONBLOCK`), and check on the open handle that it is a regular file: for a file whose
/// folder the caller has already made sure of (the state folder; a sandbox copy's source).
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    let flags = OFlags::RDONLY | FILE_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP => not_regular(&path.display().to_string(), "a symlink"),
        e => e.into(),
    })?;
    let found = kind(&fd)?;
    if found != FileType::RegularFile {
        return Err(io::Error::other(format!(
            "{} is {}, not a regular file",
            path.display(),
            kind_of(found)
        )));
    }
    Ok(std::fs::File::from(fd))
}

/// How many handles a [`remove_folders`] keeps open between its checkpoints.
const SEGMENT: usize = 32;

/// Remove the folders `root/folders[..=i]` for `i` from the last down to `from` (the deepest first), each through a
/// handle on its parent opened from `root` one component at a time without following symlinks. Linear in the depth
/// and with at most `depth / SEGMENT + SEGMENT` descriptors open: the handles are kept at every `SEGMENT`-th
/// folder on the way down, and each segment between two of them is opened again once on the way up. Stops at the
/// first folder that cannot be removed (not empty: someone put something there; a symlink): returns it and why.
/// A folder already gone is skipped.
pub fn remove_folders(
    root: &Path,
    folders: &[&str],
    from: usize,
) -> Result<(), (usize, io::Error)> {
    let n = folders.len();
    if from >= n {
        return Ok(());
    }
    let rel = folders.join("/");
    // The parent of `folders[from]`.
    let mut dir = Dir::root(root).map_err(|e| (from, e))?;
    for (i, comp) in folders[..from].iter().enumerate() {
        dir = dir.open_plain(comp, &rel).map_err(|e| (i, e))?;
    }
    // checkpoints[k]: the parent of `folders[from + k * SEGMENT]`.
    let mut checkpoints = vec![dir];
    let mut start = from;
    while start + SEGMENT < n {
        let mut d = checkpoints[checkpoints.len() - 1].open_plain(folders[start], &rel);
        for comp in &folders[start + 1..start + SEGMENT] {
            d = d.and_then(|d| d.open_plain(comp, &rel));
        }
        match d {
            Ok(d) => checkpoints.push(d),
            // Deeper than a folder that cannot be opened, nothing can be reached: remove what can be.
            Err(_) => break,
        }
        start += SEGMENT;
    }
    for (k, top) in checkpoints.iter().enumerate().rev() {
        let seg = from + k * SEGMENT;
        let end = (seg + SEGMENT).min(n);
        // parents[j]: the parent of `folders[seg + j]`.
        let mut parents: Vec<Dir> = Vec::with_capacity(end - seg);
        for i in seg..end {
            if i > seg {
                match parents[parents.len() - 1].open_plain(folders[i - 1], &rel) {
                    Ok(d) => parents.push(d),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(e) => return Err((i - 1, e)),
                }
            } else {
                parents.push(top.dup().map_err(|e| (i, e))?);
            }
        }
        for (j, parent) in parents.iter().enumerate().rev() {
            match parent.rmdir(folders[seg + j]) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err((seg + j, e)),
            }
        }
    }
    Ok(())
}

/// Flush (fsync) the parent of each of `root/folders[..=i]` for `i` from `from` to the last: the folders whose
/// entries an apply changed when it created or removed `folders[from..]`. One pass from `root`, one handle at a
/// time; the last folder itself is not opened.
pub fn sync_folders(root: &Path, folders: &[&str], from: usize) -> io::Result<()> {
    let rel = folders.join("/");
    let mut dir = Dir::root(root)?;
    for (i, comp) in folders.iter().enumerate() {
        if i >= from {
            dir.sync()?;
        }
        if i + 1 == folders.len() {
            break;
        }
        dir = dir.open_plain(comp, &rel)?;
    }
    Ok(())
}

impl Dir {
    /// The workspace's root folder (canonical, so following it is following nothing the worker did not resolve).
    pub fn root(root: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(Dir(rustix::fs::open(root, flags, Mode::empty())?))
    }

    /// Another handle on the same folder.
    pub fn dup(&self) -> io::Result<Dir> {
        Ok(Dir(self.0.try_clone()?))
    }

    /// [`Dir::open_sub`] for one component of the path `rel`, refusing `.`, `..` and empty components.
    pub fn open_plain(&self, comp: &str, rel: &str) -> io::Result<Dir> {
        if comp.is_empty() || comp == "." || comp == ".." {
            return Err(io::Error::other(format!(
                "{rel} is not a plain relative path"
            )));
        }
        self.open_sub(comp)
    }

    /// What is at `name`: opened without following a symlink and without blocking, its type checked on the open
    /// handle before a byte is read; read-write when `write` (for a rewrite in place).
    pub fn look(&self, name: &str, write: bool) -> io::Result<Found> {
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let mut file = match self.open(name, write)? {
            Opened::File(file) => file,
            Opened::Absent => return Ok(Found::Absent),
            Opened::Other(kind) => return Ok(Found::Other(kind)),
        };
        let meta = file.metadata()?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)?;
        Ok(Found::File {
            file,
            bytes,
            links: meta.nlink(),
        })
    }

    /// [`Dir::look`] without reading: the open regular file, or what is there instead.
    pub fn open(&self, name: &str, write: bool) -> io::Result<Opened> {
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let fd = match open_beneath(&self.0, name, access | FILE_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                return match Errno::from_io_error(&e) {
                    Some(Errno::NOENT) => Ok(Opened::Absent),
                    Some(Errno::LOOP) => Ok(Opened::Other("a symlink")),
                    // Opening a folder for writing.
                    Some(Errno::ISDIR) => Ok(Opened::Other("a folder")),
                    // A FIFO without a reader, opened for writing without blocking.
                    Some(Errno::NXIO) => Ok(Opened::Other("a FIFO")),
                    _ => Err(symlink_error(e, name)),
                };
            }
        };
        let found = kind(&fd)?;
        if found != FileType::RegularFile {
            return Ok(Opened::Other(kind_of(found)));
        }
        Ok(Opened::File(std::fs::File::from(fd)))
    }

    /// The sub-folder `name`, never through a symlink.
    pub fn open_sub(&self, name: &str) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        open_beneath(&self.0, name, flags, Mode::empty())
            .map(Dir)
            .map_err(|e| symlink_error(e, name))
    }

    /// Create the folder `name`; `false` when a folder (not a symlink) is already there.
    pub fn mkdir(&self, name: &str) -> io::Result<bool> {
        self.mkdir_mode(name, 0o755)
    }

    /// [`Dir::mkdir`] with the mode `mode` (less the umask) for a folder it creates.
    pub fn mkdir_mode(&self, name: &str, mode: u32) -> io::Result<bool> {
        match rustix::fs::mkdirat(&self.0, name, Mode::from_raw_mode(mode as _)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => self.open_sub(name).map(|_| false),
            Err(e) => Err(e.into()),
        }
    }

    /// The bytes of the file `name` (`None` if absent); a symlink or anything but a regular file there is an error.
    pub fn read_file(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match self.look(name, false)? {
            Found::Absent => Ok(None),
            Found::File { bytes, .. } => Ok(Some(bytes)),
            Found::Other(kind) => Err(not_regular(name, kind)),
        }
    }

    /// Open the existing regular file `name` for reading and writing (never through a symlink, never blocking): the
    /// file, its number of hard links, its bytes.
    pub fn open_for_rewrite(&self, name: &str) -> io::Result<(std::fs::File, u64, Vec<u8>)> {
        match self.look(name, true)? {
            Found::Absent => Err(io::Error::from(io::ErrorKind::NotFound)),
            Found::File { file, bytes, links } => Ok((file, links, bytes)),
            Found::Other(kind) => Err(not_regular(name, kind)),
        }
    }

    /// What is at `name`, looked at without following a symlink: `None` for nothing.
    fn stat(&self, name: &str) -> io::Result<Option<rustix::fs::Stat>> {
        match rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether anything (a file, a folder, a symlink) is at `name`.
    pub fn exists(&self, name: &str) -> io::Result<bool> {
        Ok(self.stat(name)?.is_some())
    }

    /// Open `name` in this folder with `flags` (`O_NOFOLLOW`, `O_NONBLOCK` and `O_CLOEXEC` always added) and `mode`
    /// for a file it creates; the result must be a regular file.
    pub fn open_file(&self, name: &str, flags: OFlags, mode: u32) -> io::Result<std::fs::File> {
        let mode = match flags.contains(OFlags::CREATE) {
            true => Mode::from_raw_mode(mode as _),
            false => Mode::empty(),
        };
        let fd = open_beneath(&self.0, name, flags | FILE_FLAGS, mode).map_err(|e| {
            match Errno::from_io_error(&e) {
                Some(Errno::LOOP) => not_regular(name, "a symlink"),
                _ => e,
            }
        })?;
        let found = kind(&fd)?;
        if found != FileType::RegularFile {
            return Err(not_regular(name, kind_of(found)));
        }
        Ok(std::fs::File::from(fd))
    }

    /// When `name` is a regular file (looked at without following a symlink): its modification time (seconds and
    /// nanoseconds since the epoch); `None` for anything else or nothing.
    pub fn file_mtime(&self, name: &str) -> io::Result<Option<(i64, i64)>> {
        let Some(st) = self.stat(name)? else {
            return Ok(None);
        };
        #[allow(
            clippy::unnecessary_cast,
            reason = "the stat fields' types differ between targets (i64 here, a C long elsewhere)"
        )]
        let when = (st.st_mtime as i64, st.st_mtime_nsec as i64);
        Ok((FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile).then_some(when))
    }

    /// Create the file `name` (which must not exist, not even as a symlink) holding `bytes`, with `mode`; on a
    /// failure after creating it, it is removed again.
    pub fn create_new(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<std::fs::File> {
        use std::io::Write;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        // O_EXCL refuses anything already there, a symlink too.
        let fd = open_beneath(&self.0, name, flags, Mode::from_raw_mode(0o600))?;
        let mut f = std::fs::File::from(fd);
        let written = f.write_all(bytes).and_then(|_| {
            rustix::fs::fchmod(&f, Mode::from_raw_mode((mode & 0o7777) as _))
                .map_err(io::Error::from)
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

    /// Rename `from` to `to` within this folder.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.0, from, &self.0, to)?)
    }

    /// Remove the file (or symlink) `name`.
    pub fn unlink(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?)
    }

    /// Remove the empty folder `name` (never a symlink: `unlinkat` with `AT_REMOVEDIR` does not follow one).
    pub fn rmdir(&self, name: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::REMOVEDIR)?)
    }

    /// The names in this folder, read through the handle itself (its `/proc/self/fd` entry), not a path.
    pub fn names(&self) -> io::Result<Vec<String>> {
        use std::os::fd::AsRawFd;
        Ok(
            std::fs::read_dir(format!("/proc/self/fd/{}", self.0.as_raw_fd()))?
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect(),
        )
    }

    /// Flush the folder's entries to disk.
    pub fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.0)?)
    }
}

/// Make the open file `file` hold exactly `bytes`: written over from the start, then cut to their length.
pub fn rewrite(file: &std::fs::File, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)
}
