//! Scope: which paths of a workspace the worker may read and write, and reading the selected files safely.
//!
//! A path is accepted only when it is workspace-relative, plain (no `..`, no `.`, no empty component, no characters
//! that git would quote), matched by `paths.allowed`, not matched by a denied glob (built-in: `.git/`, the policy
//! file, secret-looking files; plus `paths.denied`), and when no component of it on disk is a symlink. The check is
//! repeated at write time by the transaction; nothing here writes.
//!
//! Reading never walks the workspace: only the named files are touched, so its cost does not grow with the tree.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::config::{Limits, POLICY_FILE, Paths};
use crate::digest::git_blob_id;
use crate::error::{Error, IoContext, Result};
use crate::patch::focus::{self, Focus};
use crate::patch::{MODE_EXECUTABLE, MODE_REGULAR, PreImage};

/// Globs that are never read or written, whatever the policy says.
pub const ALWAYS_DENIED: &[&str] = &[".git", ".git/**", "**/.git", "**/.git/**", POLICY_FILE];

/// Secret-looking files: denied unless `[paths] unlock_secrets` names them explicitly.
pub const SECRET_DENIED: &[&str] = &[
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/id_rsa*",
    "**/id_ed25519*",
    "**/*credentials*",
    "**/.aws/**",
    "**/.ssh/**",
];

/// At most this many files may be selected for one request.
pub const MAX_SELECTED_FILES: usize = 100;

/// The built-in denials, compiled once per process: (always denied, secret-looking).
#[allow(
    clippy::expect_used,
    reason = "the built-in globs are constants, compiled in a unit test"
)]
static BUILT_IN: std::sync::LazyLock<(GlobSet, GlobSet)> = std::sync::LazyLock::new(|| {
    (
        compile(ALWAYS_DENIED, "built-in denied").expect("the built-in denied globs compile"),
        compile(SECRET_DENIED, "built-in secret").expect("the built-in secret globs compile"),
    )
});

/// A workspace root with its compiled path policy.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    allowed: GlobSet,
    /// The policy file's workspace-relative path, when it lies inside the workspace: always denied too.
    policy_rel: Option<String>,
    unlocked: GlobSet,
    denied: GlobSet,
    extra_denied: Vec<String>,
}

/// What is on disk at a checked path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnDisk {
    /// A regular file with this git mode.
    File {
        /// Its absolute path.
        abs: PathBuf,
        /// Its git mode: [`crate::patch::MODE_EXECUTABLE`] when executable, else
        /// [`crate::patch::MODE_REGULAR`].
        mode: u32,
    },
    /// Nothing there (a parent folder may be missing too).
    Absent {
        /// The absolute path it would have.
        abs: PathBuf,
    },
}

/// Turn a `workspace_root` argument into a canonical absolute folder path.
pub fn root_from_arg(arg: &str) -> Result<PathBuf> {
    if arg.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "workspace_root is empty; pass the absolute path of the project".into(),
        ));
    }
    let p = Path::new(arg);
    if !p.is_absolute() {
        return Err(Error::InvalidArgument(format!(
            "workspace_root {arg:?} is relative; pass an absolute path (the worker's own folder is not the project)"
        )));
    }
    let canon = p.canonicalize().map_err(|e| {
        Error::InvalidArgument(format!("workspace_root {arg} cannot be opened: {e}"))
    })?;
    if !canon.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "workspace_root {arg} is not a folder"
        )));
    }
    Ok(canon)
}

/// The longest path a file system call takes (Linux's PATH_MAX, its NUL included) and the longest name in it
/// (NAME_MAX).
const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// Why the workspace-relative path `rel` is too long for the file system, if it is: a path of PATH_MAX bytes or more,
/// or a name over NAME_MAX. Such a path could be created folder by folder, but never opened, read or removed again
/// by its name.
fn too_long(rel: &str) -> Option<String> {
    if rel.len() >= PATH_MAX {
        return Some(format!(
            "is {} bytes long, over the {} bytes a path may have (PATH_MAX); choose a shorter path",
            rel.len(),
            PATH_MAX - 1
        ));
    }
    let name = rel.split('/').find(|c| c.len() > NAME_MAX)?;
    Some(format!(
        "has a name of {} bytes ({}...), over the {NAME_MAX} bytes a file system allows (NAME_MAX); choose a shorter \
         name",
        name.len(),
        name.chars().take(24).collect::<String>()
    ))
}

fn compile(globs: &[&str], what: &str) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = GlobBuilder::new(g)
            .literal_separator(true)
            .build()
            .map_err(|e| Error::Policy(format!("{what} glob {g:?} is invalid: {e}")))?;
        b.add(glob);
    }
    b.build()
        .map_err(|e| Error::Policy(format!("{what} globs cannot be compiled: {e}")))
}

impl Workspace {
    /// `root` must come from [`root_from_arg`]. `policy_file` is denied too when it lies inside the workspace.
    pub fn new(root: PathBuf, paths: &Paths, policy_file: Option<&Path>) -> Result<Workspace> {
        let policy_rel = policy_file
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| {
                p.strip_prefix(&root)
                    .ok()
                    .and_then(|r| r.to_str().map(str::to_string))
            });
        fn strs(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        let (allowed, denied, unlocked) = (&paths.allowed, &paths.denied, &paths.unlock_secrets);
        Ok(Workspace {
            allowed: compile(&strs(allowed), "[paths] allowed")?,
            policy_rel,
            unlocked: compile(&strs(unlocked), "[paths] unlock_secrets")?,
            denied: compile(&strs(denied), "[paths] denied")?,
            extra_denied: paths.denied.clone(),
            root,
        })
    }

    /// The workspace's root folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Check a workspace-relative path against the syntax rules and the globs. Returns it unchanged when accepted.
    pub fn check_path<'a>(&self, rel: &'a str) -> Result<&'a str> {
        let refuse = |why: &str| Err(Error::Scope(format!("path {rel:?} {why}")));
        if rel.is_empty() {
            return refuse("is empty; name a workspace-relative file such as \"src/lib.rs\"");
        }
        if rel.starts_with('/') {
            return refuse("is absolute; paths are relative to workspace_root");
        }
        if rel
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '"' | '\\' | '\''))
        {
            return refuse(
                "holds whitespace, quotes, backslashes or control characters, which are not supported",
            );
        }
        for comp in rel.split('/') {
            match comp {
                "" => {
                    return refuse("has an empty component (`//` or a trailing `/`); name a file");
                }
                "." | ".." => {
                    return refuse("uses `.` or `..`; give the plain path inside the workspace");
                }
                _ => {}
            }
        }
        if let Some(why) = too_long(rel) {
            return refuse(&why);
        }
        let (always_denied, secrets) = &*BUILT_IN;
        if always_denied.is_match(rel) || self.policy_rel.as_deref() == Some(rel) {
            return refuse(
                "is always denied (.git or the policy file); the worker never reads or writes it",
            );
        }
        if secrets.is_match(rel) && !self.unlocked.is_match(rel) {
            return refuse(
                "looks like a secret (.env*, *.pem, *.key, id_rsa*, *credentials*, .aws/, .ssh/...), so it is not \
                 sent to the model; if the model really must see it, name it in [paths] unlock_secrets",
            );
        }
        if self.denied.is_match(rel) {
            return refuse(&format!(
                "is denied by [paths] denied {:?} in the policy",
                self.extra_denied
            ));
        }
        if !self.allowed.is_match(rel) {
            return refuse(
                "is not matched by [paths] allowed in the policy; add a glob there if the model should see it",
            );
        }
        Ok(rel)
    }

    /// Whether a workspace-relative path looks like a secret (the built-in secret denials) and the policy did not
    /// unlock it: never sent to the model, never copied into a validation sandbox.
    pub fn is_secret(&self, rel: &str) -> bool {
        BUILT_IN.1.is_match(rel) && !self.unlocked.is_match(rel)
    }

    /// Resolve a checked path on disk, one component at a time, refusing symlinks and non-folders on the way.
    pub fn resolve(&self, rel: &str) -> Result<OnDisk> {
        self.check_path(rel)?;
        let comps: Vec<&str> = rel.split('/').collect();
        let mut abs = self.root.clone();
        for (i, comp) in comps.iter().enumerate() {
            abs.push(comp);
            let last = i + 1 == comps.len();
            let meta = match std::fs::symlink_metadata(&abs) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(OnDisk::Absent {
                        abs: self.root.join(rel),
                    });
                }
                Err(e) => {
                    return Err(Error::io_message(format!(
                        "cannot inspect {}: {e}",
                        abs.display()
                    )));
                }
            };
            let ft = meta.file_type();
            if ft.is_symlink() {
                let shown = comps[..=i].join("/");
                return Err(Error::Scope(format!(
                    "{shown} is a symlink; the worker never reads or writes through symlinks (path {rel:?})"
                )));
            }
            if !last && !ft.is_dir() {
                return Err(Error::Scope(format!(
                    "{} is not a folder (path {rel:?})",
                    comps[..=i].join("/")
                )));
            }
            if last {
                if !ft.is_file() {
                    return Err(Error::Scope(format!("{rel} is not a regular file")));
                }
                let mode = if meta.permissions().mode() & 0o111 != 0 {
                    MODE_EXECUTABLE
                } else {
                    MODE_REGULAR
                };
                return Ok(OnDisk::File { abs, mode });
            }
        }
        unreachable!("a path has at least one component")
    }

    /// Read the selected files. A file that does not exist maps to `None` (the model may create it).
    pub fn read_selected(
        &self,
        files: &[String],
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
            let pre = match self.resolve(rel)? {
                OnDisk::Absent { abs } => {
                    if let Some(name) = near_miss(&abs) {
                        let near = match rel.rsplit_once('/') {
                            Some((dir, _)) => format!("{dir}/{name}"),
                            None => name,
                        };
                        return Err(Error::Scope(format!(
                            "{rel} does not exist, but {near} does next to it: check the path (a path that does not \
                             exist is sent to the model as a new file to create); to create {rel} anyway, create it \
                             empty first"
                        )));
                    }
                    None
                }
                OnDisk::File { abs, mode } => {
                    let text = read_text(&abs, rel, limits.max_file_bytes)?;
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
}

/// A file next to `abs` (which does not exist) whose name is one or two letters off, or the same in another case:
/// what a misspelled selection most likely meant. Reads that one folder only.
fn near_miss(abs: &Path) -> Option<String> {
    let name = abs.file_name()?.to_str()?;
    let dir = abs.parent()?;
    let mut best: Option<(usize, String)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten().take(10_000) {
        let Some(other) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let d = if other.eq_ignore_ascii_case(name) {
            0
        } else {
            strsim::damerau_levenshtein(&other, name)
        };
        let close = d == 0 || (d <= 2 && name.chars().count() > 3 * d);
        if close && best.as_ref().is_none_or(|(b, o)| (d, &other) < (*b, o)) {
            best = Some((d, other));
        }
    }
    best.map(|(_, other)| other)
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
        let mut paths = whole.clone();
        paths.extend(ranged.keys().filter(|p| !whole.contains(p)).cloned());
        let files = self.read_selected(&paths, limits)?;
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

/// Read a file as UTF-8 text within a size limit, refusing binary content.
fn read_text(abs: &Path, rel: &str, max: u64) -> Result<String> {
    use std::io::Read;
    let f = std::fs::File::open(abs).at("cannot read", rel)?;
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
    String::from_utf8(bytes).map_err(|e| {
        Error::File(format!(
            "{rel} is not valid UTF-8 (at byte {}); only UTF-8 text can be edited",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The git blob id and git mode of what is at `rel` now (`None` if absent): the pre-image identity at apply time.
pub fn current_identity(ws: &Workspace, rel: &str) -> Result<Option<(String, u32, Vec<u8>)>> {
    match ws.resolve(rel)? {
        OnDisk::Absent { .. } => Ok(None),
        OnDisk::File { abs, mode } => {
            let bytes = std::fs::read(&abs).at("cannot read", rel)?;
            Ok(Some((git_blob_id(&bytes), mode, bytes)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(allowed: &[&str], denied: &[&str]) -> Workspace {
        let paths = Paths {
            allowed: allowed.iter().map(|s| s.to_string()).collect(),
            denied: denied.iter().map(|s| s.to_string()).collect(),
            unlock_secrets: vec![],
        };
        Workspace::new(std::env::temp_dir(), &paths, None).unwrap()
    }

    #[test]
    fn accepts_plain_allowed_paths() {
        let w = ws(&["src/**", "*.md"], &[]);
        assert!(w.check_path("src/a/b.rs").is_ok());
        assert!(w.check_path("README.md").is_ok());
    }

    #[test]
    fn refuses_escapes_odd_syntax_and_unlisted_paths() {
        let w = ws(&["**"], &[]);
        for (p, why) in [
            ("../x", "`..`"),
            ("a/../../x", "`..`"),
            ("/etc/passwd", "absolute"),
            ("", "empty"),
            ("a//b", "empty component"),
            ("a b", "whitespace"),
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains(why), "{p}: {err}");
        }
        let err = ws(&["src/**"], &[])
            .check_path("docs/x.md")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not matched by [paths] allowed"), "{err}");
        let err = ws(&["src/*"], &[])
            .check_path("src/a/b.rs")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not matched"),
            "`*` must not cross folders: {err}"
        );
    }

    #[test]
    fn paths_over_path_max_or_names_over_name_max_are_refused() {
        let w = ws(&["**"], &[]);
        let deep = "a/".repeat(2048) + "f.txt";
        let err = w.check_path(&deep).unwrap_err().to_string();
        assert!(
            err.contains("PATH_MAX") && err.contains("4101 bytes"),
            "{err}"
        );
        let err = w
            .check_path(&format!("src/{}.rs", "n".repeat(256)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("NAME_MAX") && err.contains("259 bytes"),
            "{err}"
        );
        // Right at the limits: accepted.
        assert!(w.check_path(&("a/".repeat(2045) + "f.txt")).is_ok());
        assert!(w.check_path(&"n".repeat(255)).is_ok());
    }

    #[test]
    fn a_policy_file_inside_the_workspace_under_another_name_is_always_denied() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("conf")).unwrap();
        std::fs::write(root.path().join("conf/policy.toml"), "").unwrap();
        let root = root.path().canonicalize().unwrap();
        let paths = Paths {
            allowed: vec!["**".into()],
            ..Paths::default()
        };
        let w = Workspace::new(root.clone(), &paths, Some(&root.join("conf/policy.toml"))).unwrap();
        let err = w.check_path("conf/policy.toml").unwrap_err().to_string();
        assert!(err.contains("always denied"), "{err}");
        assert!(w.check_path("conf/policy.toml.bak").is_ok());
        assert!(w.check_path("conf/other.toml").is_ok());
    }

    #[test]
    fn built_in_and_policy_denials_win_over_allowed() {
        let w = ws(&["**"], &["secret/**"]);
        for p in [
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/x",
            "local-llm-worker.toml",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains("always denied"), "{p}: {err}");
        }
        let err = w.check_path("secret/a.txt").unwrap_err().to_string();
        assert!(err.contains("denied by [paths] denied"), "{err}");
        for p in [
            ".env",
            "a/.env.local",
            "k.pem",
            "deploy/id_rsa",
            ".aws/config",
            "my-credentials.json",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(
                err.contains("looks like a secret") && err.contains("unlock_secrets"),
                "{p}: {err}"
            );
        }
    }

    #[test]
    fn secrets_need_an_explicit_unlock_and_git_never_unlocks() {
        let paths = Paths {
            allowed: vec!["**".into()],
            denied: vec![],
            unlock_secrets: vec!["**/.env.example".into(), ".git/**".into()],
        };
        let w = Workspace::new(std::env::temp_dir(), &paths, None).unwrap();
        assert!(w.check_path("app/.env.example").is_ok());
        assert!(
            w.check_path("app/.env").is_err(),
            "only the named file is unlocked"
        );
        assert!(
            w.check_path(".git/config")
                .unwrap_err()
                .to_string()
                .contains("always denied")
        );
    }

    #[test]
    fn a_bad_glob_is_a_policy_error() {
        let paths = Paths {
            allowed: vec!["src/[".into()],
            denied: vec![],
            unlock_secrets: vec![],
        };
        let err = Workspace::new(std::env::temp_dir(), &paths, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("[paths] allowed glob \"src/[\" is invalid"),
            "{err}"
        );
    }
}
