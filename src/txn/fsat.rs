//! Folder handles: every component opened with `O_NOFOLLOW`, so a symlink swapped in anywhere on the path (a file
//! or a parent folder) makes the operation fail instead of following it. The only `unsafe` of the transaction.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::apply::TEMP_PREFIX;

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
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => self.open_sub(name).map(|_| false),
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

    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        // SAFETY: renameat within the folder we hold.
        check(unsafe { libc::renameat(self.fd(), a.as_ptr(), self.fd(), b.as_ptr()) }).map(|_| ())
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
