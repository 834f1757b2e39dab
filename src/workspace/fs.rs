//! The file layer: folder handles, every component opened with `O_NOFOLLOW`, so a symlink swapped in anywhere on the
//! path (a file or a parent folder) makes the operation fail instead of following it, and every file opened
//! `O_NOFOLLOW | O_NONBLOCK` and checked on the open handle. Every read and write in a workspace goes through it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The start of the name of every temporary file the worker writes in a workspace (a leftover one is removed by
/// recovery).
pub const TEMP_PREFIX: &str = ".llw-";

/// An open folder: every name is looked up in it, never through a path string.
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

/// The error for `name` being `kind` where a regular file was expected.
pub fn not_regular(name: &str, kind: &'static str) -> io::Error {
    if kind == "a symlink" {
        return io::Error::other(format!(
            "{name} is a symlink or not a folder; the worker never writes through one"
        ));
    }
    io::Error::other(format!(
        "{name} is {kind}, not a regular file; the worker never opens one"
    ))
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

/// What a file type is, in words.
pub(super) fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a folder",
        libc::S_IFLNK => "a symlink",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "not a regular file",
    }
}

/// The flags every workspace file is opened with: never through a symlink, never blocking in `open` (a FIFO or a
/// device swapped in opens at once and is then refused by its type).
pub(super) const FILE_FLAGS: libc::c_int = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

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
        let c = cstr(root.as_os_str().as_bytes())?;
        // SAFETY: a valid NUL-terminated path; the fd returned is owned below.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn fd(&self) -> libc::c_int {
        self.0.as_raw_fd()
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
        let c = cstr(name.as_bytes())?;
        let access = if write { libc::O_RDWR } else { libc::O_RDONLY };
        // SAFETY: openat on a descriptor we own with a valid name.
        let fd = match check(unsafe { libc::openat(self.fd(), c.as_ptr(), access | FILE_FLAGS) }) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Found::Absent),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Ok(Found::Other("a symlink"));
            }
            // Opening a folder for writing.
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
                return Ok(Found::Other("a folder"));
            }
            // A FIFO without a reader, opened for writing without blocking.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Ok(Found::Other("a FIFO")),
            Err(e) => return Err(symlink_error(e, name)),
        };
        // SAFETY: fresh descriptor, owned by the File.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(Found::Other(kind_of(meta.mode() as libc::mode_t)));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)?;
        Ok(Found::File {
            file,
            bytes,
            links: meta.nlink(),
        })
    }

    /// The sub-folder `name`, never through a symlink.
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
        self.mkdir_mode(name, 0o755)
    }

    /// [`Dir::mkdir`] with the mode `mode` (less the umask) for a folder it creates.
    pub fn mkdir_mode(&self, name: &str, mode: u32) -> io::Result<bool> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: mkdirat on a descriptor we own.
        match check(unsafe { libc::mkdirat(self.fd(), c.as_ptr(), mode as libc::mode_t) }) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => self.open_sub(name).map(|_| false),
            Err(e) => Err(e),
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

    /// Open `name` in this folder with `flags` (`O_NOFOLLOW`, `O_NONBLOCK` and `O_CLOEXEC` always added) and `mode`
    /// for a file it creates; the result must be a regular file.
    pub fn open_file(
        &self,
        name: &str,
        flags: libc::c_int,
        mode: u32,
    ) -> io::Result<std::fs::File> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: openat on a descriptor we own with a valid name.
        let fd = check(unsafe {
            libc::openat(
                self.fd(),
                c.as_ptr(),
                flags | FILE_FLAGS,
                mode as libc::c_uint,
            )
        })
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => not_regular(name, "a symlink"),
            _ => e,
        })?;
        // SAFETY: fresh descriptor, owned by the File.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        let meta = file.metadata()?;
        if !meta.is_file() {
            use std::os::unix::fs::MetadataExt;
            return Err(not_regular(name, kind_of(meta.mode() as libc::mode_t)));
        }
        Ok(file)
    }

    /// When `name` is a regular file (looked at without following a symlink): its modification time (seconds and
    /// nanoseconds since the epoch); `None` for anything else or nothing.
    pub fn file_mtime(&self, name: &str) -> io::Result<Option<(i64, i64)>> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: fstatat on a descriptor we own into a zeroed stat buffer we own.
        let (rc, st) = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            let rc = libc::fstatat(self.fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW);
            (rc, st)
        };
        match check(rc) {
            Ok(_) if st.st_mode & libc::S_IFMT == libc::S_IFREG => {
                Ok(Some((st.st_mtime, st.st_mtime_nsec)))
            }
            Ok(_) => Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
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
        let fd =
            check(unsafe { libc::openat(self.fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) })?;
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

    /// Rename `from` to `to` within this folder.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        // SAFETY: renameat within the folder we hold.
        check(unsafe { libc::renameat(self.fd(), a.as_ptr(), self.fd(), b.as_ptr()) }).map(|_| ())
    }

    /// Remove the file (or symlink) `name`.
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

    /// Flush the folder's entries to disk.
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
