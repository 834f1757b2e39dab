//! The selection reads: the selected files (whole, or narrowed to line ranges) read at propose time as UTF-8 text
//! within the limits, each through a handle of the file layer ([`fs`]), never by a path string.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::patch::focus::{self, Focus};
use crate::patch::{MODE_EXECUTABLE, MODE_REGULAR, PreImage};
use crate::policy::Limits;

use super::{OnDisk, Workspace, fs};

/// At most this many files may be selected for one request.
pub const MAX_SELECTED_FILES: usize = 100;

impl Workspace {
    /// Read the selected files. Each must exist, except those `create` names, which must not: they map to `None`
    /// (the model writes them). A missing file that is not declared as created is refused, with the file of that name
    /// elsewhere in the allowed tree as a hint ([`super::near_name`]); a declared one that exists is refused too.
    pub fn read_selected(
        &self,
        files: &[String],
        create: &[String],
        limits: &Limits,
    ) -> Result<BTreeMap<String, Option<PreImage>>> {
        if files.is_empty() {
            return Err(Error::InvalidArgument(
                "files is empty; select the file(s) the model should see and edit".into(),
            ));
        }
        if files.len() > MAX_SELECTED_FILES {
            return Err(Error::InvalidArgument(format!(
                "{} files selected; at most {MAX_SELECTED_FILES}: select only what the change needs",
                files.len()
            )));
        }
        let mut out = BTreeMap::new();
        let mut total: u64 = 0;
        for rel in files {
            if out.contains_key(rel) {
                continue;
            }
            let created = create.contains(rel);
            let pre = match self.resolve(rel)? {
                OnDisk::Absent { .. } if created => None,
                OnDisk::Absent { .. } => return Err(self.missing(rel)),
                OnDisk::File { .. } if created => {
                    return Err(Error::Scope(format!(
                        "{rel} is listed in create but exists already; to change it, select it in files (CLI: \
                         --file {rel}) and leave it out of create"
                    )));
                }
                OnDisk::File { .. } => {
                    #[cfg(test)]
                    BEFORE_READ.with(|hook| {
                        if let Some(hook) = &*hook.borrow() {
                            hook(&self.root.join(rel))
                        }
                    });
                    let (text, mode) = read_text(
                        &self.root,
                        rel,
                        limits.max_file_bytes,
                        self.allow_hard_links,
                    )?;
                    total += text.len() as u64;
                    if total > limits.max_total_bytes {
                        return Err(Error::File(format!(
                            "the selected files hold more than [limits] max_total_bytes = {} bytes; select fewer files",
                            limits.max_total_bytes
                        )));
                    }
                    Some(PreImage { text, mode })
                }
            };
            out.insert(rel.clone(), pre);
        }
        Ok(out)
    }

    /// The refusal of a selected file that does not exist and is not declared as created, with the likely meant
    /// file when there is one (a bounded walk of the tree: this path only).
    fn missing(&self, rel: &str) -> Error {
        let hint = match super::near_name::did_you_mean(self, rel) {
            Some(near) => format!(" (did you mean {near}?)"),
            None => String::new(),
        };
        Error::Scope(format!(
            "{rel} does not exist{hint}: select files that exist; to create {rel} as a new file with propose_patch, \
             list it in create (CLI: propose --create {rel}) instead"
        ))
    }
}

/// The selected files as read, and the line ranges some of them are narrowed to.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Path -> content (`None`: does not exist yet), whole files even when narrowed.
    pub files: BTreeMap<String, Option<PreImage>>,
    /// The narrowed files' ranges, merged; a file absent here is selected whole.
    pub focus: Focus,
}

impl Selection {
    /// Bytes the model is shown: whole files, or the narrowed files' ranges with their context lines.
    pub fn bytes_shown(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|(path, pre)| pre.as_ref().map(|p| (path, p)))
            .map(|(path, p)| match self.focus.get(path) {
                Some(ranges) => focus::shown_bytes(&p.text, ranges) as u64,
                None => p.text.len() as u64,
            })
            .sum()
    }
}

impl Workspace {
    /// Read a selection whose entries are paths or `PATH:START-END` (1-based, inclusive lines; see
    /// [`crate::patch::focus`]). An entry that names an existing file as written is that file, so a name holding `:`
    /// keeps its meaning. Otherwise, when the part before the last `:` is an existing file, the rest must be a range
    /// inside it; when it is not, a `START-END` suffix is refused (a file that does not exist has no lines) and any
    /// other entry is a path (a new file whose name holds `:`). Several ranges of one file merge; a file also
    /// selected whole is whole.
    pub fn read_selection(&self, specs: &[String], limits: &Limits) -> Result<Selection> {
        self.read_selection_creating(specs, &[], limits)
    }

    /// [`Workspace::read_selection`], where `create` names the new files the request creates: each must not exist
    /// and is selected as `None` (listed in `specs` too or not), never as a range.
    pub fn read_selection_creating(
        &self,
        specs: &[String],
        create: &[String],
        limits: &Limits,
    ) -> Result<Selection> {
        if specs.len() > MAX_SELECTED_FILES {
            return Err(Error::InvalidArgument(format!(
                "{} files selected; at most {MAX_SELECTED_FILES}: select only what the change needs",
                specs.len()
            )));
        }
        let mut whole: Vec<String> = Vec::new();
        let mut ranged: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for spec in specs {
            // A file that exists under the whole name wins; otherwise `PATH:SUFFIX` may be a range of PATH.
            let whole_is_file = matches!(self.resolve(spec), Ok(OnDisk::File { .. }));
            match focus::split_spec(spec).filter(|_| !whole_is_file) {
                None => whole.push(spec.clone()),
                Some((path, suffix)) => {
                    // Written like a range (or a try at one: digits and dashes), it is one: the prefix must be a
                    // file that may be read, and its own refusal is the reason when it is not.
                    let range_like = focus::looks_like_range(suffix)
                        || (suffix.bytes().any(|c| c.is_ascii_digit())
                            && suffix.bytes().all(|c| c.is_ascii_digit() || c == b'-'));
                    match self.resolve(path) {
                        Ok(OnDisk::File { .. }) => {
                            ranged.entry(path.to_string()).or_default().push(suffix)
                        }
                        Ok(OnDisk::Absent { .. }) if range_like => {
                            return Err(Error::InvalidArgument(format!(
                                "{spec}: {path} does not exist, so it has no lines {suffix} to select; name an \
                                 existing file, or select a new file without a range"
                            )));
                        }
                        Err(e) if range_like => return Err(e),
                        // Not a range: the whole name is the path (a new file with `:` in its name), checked as such.
                        _ => whole.push(spec.clone()),
                    }
                }
            }
        }
        if let Some(path) = create.iter().find(|p| ranged.contains_key(*p)) {
            return Err(Error::InvalidArgument(format!(
                "{path} is listed in create and selected with a line range; a new file has no lines to select"
            )));
        }
        let mut paths = whole.clone();
        paths.extend(ranged.keys().filter(|p| !whole.contains(p)).cloned());
        paths.extend(
            create
                .iter()
                .filter(|p| !paths.contains(p))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let files = self.read_selected(&paths, create, limits)?;
        let mut out = Focus::new();
        for (path, suffixes) in ranged {
            let text = files
                .get(&path)
                .and_then(|p| p.as_ref())
                .map(|p| p.text.as_str())
                .unwrap_or("");
            let lines = focus::line_count(text);
            // Every range is checked, also for a file that is selected whole as well (which is then sent whole).
            let ranges = suffixes
                .into_iter()
                .map(|s| focus::parse_range(&path, s, lines))
                .collect::<Result<Vec<_>>>()?;
            if !whole.contains(&path) {
                out.insert(path, focus::merge(ranges));
            }
        }
        Ok(Selection { files, focus: out })
    }
}

/// Read the selected file `rel` through the file layer ([`fs`]): its folder opened one component at a time from
/// `root`, the file itself `O_NOFOLLOW | O_NONBLOCK` and its type and mode asked of the open handle, so a symlink, a
/// FIFO or a device swapped in after the scope check is refused, never followed and never waited on. Its content
/// as UTF-8 text within a size limit, refusing binary content, and a file with more than one hard link unless
/// `hard_links` (`[paths] allow_hard_links`): its bytes are also another file's, which may lie outside the workspace
/// or under a denied name, and no path check sees that name. Returns the text and the git mode.
fn read_text(root: &Path, rel: &str, max: u64, hard_links: bool) -> Result<(String, u32)> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let opened = fs::open_parent(root, rel)
        .and_then(|(dir, name)| dir.open(&name, false))
        .at("cannot read", rel)?;
    let f = match opened {
        fs::Opened::File(f) => f,
        fs::Opened::Absent => {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound)).at("cannot read", rel);
        }
        fs::Opened::Other(kind) => {
            return Err(Error::Scope(format!(
                "{rel} is {kind} now, not a regular file (it changed after the scope check); the worker never reads \
                 through a symlink or from a FIFO or a device: put a regular file there, then retry"
            )));
        }
    };
    let meta = f.metadata().at("cannot inspect", rel)?;
    let links = meta.nlink();
    if links > 1 && !hard_links {
        return Err(Error::Scope(format!(
            "{rel} has {links} hard links: its bytes are also another file's, which may lie outside the workspace or \
             under a denied name (a link named notes.txt can be ~/.ssh/id_rsa), so it is not read; give it a name \
             of its own (`cp {rel} {rel}.tmp && mv {rel}.tmp {rel}`), or set [paths] allow_hard_links = true to \
             read such files (they are never written all the same)"
        )));
    }
    let mode = match meta.permissions().mode() & 0o111 != 0 {
        true => MODE_EXECUTABLE,
        false => MODE_REGULAR,
    };
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .at("cannot read", rel)?;
    if bytes.len() as u64 > max {
        return Err(Error::File(format!(
            "{rel} is larger than [limits] max_file_bytes = {max}; select a smaller file or raise the limit"
        )));
    }
    if bytes.contains(&0) {
        return Err(Error::File(format!(
            "{rel} holds NUL bytes (a binary file); only text files can be edited"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::File(format!(
            "{rel} is not valid UTF-8 (at byte {}); only UTF-8 text can be edited",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok((text, mode))
}

/// What a unit test runs between the scope check and the read.
#[cfg(test)]
type Hook = Box<dyn Fn(&Path)>;

#[cfg(test)]
thread_local! {
    /// A unit test's hook, run with the selected file's absolute path after it passed the scope check and before it
    /// is opened: where a file can be swapped for a symlink or a FIFO.
    pub(super) static BEFORE_READ: std::cell::RefCell<Option<Hook>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::policy::Paths;

    /// Read `rel` of a fresh workspace holding `rel` = "ok\n" (and `outside.txt` next to the workspace), with `swap`
    /// run on it between the scope check and the read, on a thread of its own: its result, or `None` when it did not
    /// answer in a minute (it hangs).
    fn read_swapped(rel: &str, swap: fn(&Path, &Path)) -> Option<Result<Selection>> {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(rel), "ok\n").unwrap();
        std::fs::write(base.join("outside.txt"), "outside secret\n").unwrap();
        let paths = Paths {
            allowed: vec!["**".into()],
            ..Paths::default()
        };
        let ws = Workspace::new(root.clone(), &paths, None).unwrap();
        let (tx, rx) = mpsc::channel();
        let rel = rel.to_string();
        let outside: PathBuf = base.join("outside.txt");
        std::thread::spawn(move || {
            BEFORE_READ.with(|h| *h.borrow_mut() = Some(Box::new(move |abs| swap(abs, &outside))));
            let _ = tx.send(ws.read_selection(&[rel], &Limits::default()));
        });
        let got = rx.recv_timeout(Duration::from_secs(60)).ok();
        if got.is_none() {
            // Let the thread that hangs in `open` go: a writer on the FIFO releases it.
            let fifo = base.join("ws/src/a.txt");
            let _ = std::fs::OpenOptions::new().write(true).open(fifo);
        }
        got
    }

    fn to_fifo(abs: &Path, _: &Path) {
        std::fs::remove_file(abs).unwrap();
        let mode = rustix::fs::Mode::from_raw_mode(0o644);
        rustix::fs::mknodat(rustix::fs::CWD, abs, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    }

    fn to_symlink(abs: &Path, outside: &Path) {
        std::fs::remove_file(abs).unwrap();
        std::os::unix::fs::symlink(outside, abs).unwrap();
    }

    #[test]
    fn a_selected_file_swapped_for_a_fifo_after_the_scope_check_is_refused_without_hanging() {
        let got = read_swapped("src/a.txt", to_fifo).expect("the read hung on a FIFO swapped in");
        let err = got.unwrap_err().to_string();
        assert!(err.contains("src/a.txt is a FIFO now"), "{err}");
    }

    #[test]
    fn a_selected_file_swapped_for_a_symlink_after_the_scope_check_is_not_followed() {
        let got = read_swapped("src/a.txt", to_symlink).expect("the read hung");
        match got {
            Ok(sel) => panic!("the symlink was followed: {:?}", sel.files),
            Err(e) => assert!(e.to_string().contains("src/a.txt is a symlink now"), "{e}"),
        }
    }

    #[test]
    fn a_selected_folder_swapped_for_a_symlink_after_the_scope_check_is_not_followed() {
        fn folder_to_symlink(abs: &Path, outside: &Path) {
            let folder = abs.parent().unwrap();
            let elsewhere = outside.parent().unwrap().join("elsewhere");
            std::fs::create_dir_all(&elsewhere).unwrap();
            std::fs::copy(outside, elsewhere.join("a.txt")).unwrap();
            std::fs::remove_dir_all(folder).unwrap();
            std::os::unix::fs::symlink(&elsewhere, folder).unwrap();
        }
        let got = read_swapped("src/a.txt", folder_to_symlink).expect("the read hung");
        match got {
            Ok(sel) => panic!("the symlinked folder was followed: {:?}", sel.files),
            Err(e) => assert!(
                e.to_string().contains("src is a symlink or not a folder"),
                "{e}"
            ),
        }
    }
}
