//! The workspace: its root and the checks of every path in it ([`Workspace`]), the `[paths]` globs (`glob`), the
//! selection reads (`read`), the worker's state folder ([`state`]), and [`fs`], the one handle-based file layer every
//! read and write in a workspace goes through.
//!
//! A path is accepted only when it is workspace-relative, plain (no `..`, no `.`, no empty component, no
//! whitespace, quotes, backslashes or unseen characters; see below), matched by `paths.allowed`, not matched by a denied glob (built-in: `.git/`, the policy
//! file, secret-looking files; plus `paths.denied`), and when no component of it on disk is a symlink. The check is
//! repeated at write time by the transaction ([`Workspace::resolve`] calls [`Workspace::check_path`]); nothing here
//! but [`fs`] opens a file, and only the transaction ([`crate::txn`]) writes to a workspace through it.
//!
//! Names a person could misread are refused, each by its code point (never printed raw): control characters,
//! Unicode format characters (category Cf: bidi controls such as U+202E that reorder what follows, zero-width
//! characters, the byte-order mark) and the other default-ignorable code points (U+034F, variation selectors,
//! Hangul fillers) anywhere in a path; and a component that reads as `.git` or the policy file's name through
//! non-ASCII characters (`.gіt` with a Cyrillic і, a Kelvin sign K, fullwidth letters; some filesystems fold such
//! characters to ASCII, so they may even be the same file) or through trailing dots (which Windows and vfat drop).
//! Other UTF-8 names (`café.py`, `日本語.md`) stay ordinary names: refusing every character git quotes with
//! `core.quotePath` would refuse them all, while the look-alike rule needs no confusables table to catch every
//! spelling of the two names that matter.
//!
//! Denials (the built-in ones and `paths.denied`) match names in any case, whatever the filesystem: on a
//! case-insensitive one (macOS and Windows by default, case-folding mounts on Linux) `.GIT/config` IS `.git/config`.
//! `paths.allowed` and `paths.unlock_secrets` match exactly as written, so that no case widens what they let through.
//!
//! Reading never walks the workspace: only the named files are touched, so its cost does not grow with the tree.

#![forbid(unsafe_code)]

pub mod fs;
pub mod glob;
pub mod near_name;
mod read;
pub mod state;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use globset::GlobSet;

use crate::error::{Error, Result};
use crate::names::{
    ALWAYS_DENIED, POLICY_FILE, SECRET_DENIED, code_point, escaped, lookalike, shown_glob, unseen,
};
use crate::patch::{MODE_EXECUTABLE, MODE_REGULAR};
use crate::policy::Paths;

use glob::{BUILT_IN, compile_list};
pub use glob::{PathList, pattern_globs, sandbox_include};
pub use read::{MAX_SELECTED_FILES, Selection};
pub use state::state_dir;

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
    /// `[paths] allow_hard_links`: read files with more than one link (never written all the same).
    allow_hard_links: bool,
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

/// Turn a `workspace_root` argument into a canonical absolute folder path. The filesystem's root and the home folder
/// itself are refused: neither is ever a workspace.
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
    if canon == Path::new("/") {
        return Err(Error::InvalidArgument(format!(
            "workspace_root {arg} is the filesystem's root, which is never a workspace (whatever LOCAL_LLM_CONFIG or \
             LOCAL_LLM_ALLOWED_ROOTS say); pass the project's folder"
        )));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| PathBuf::from(h).canonicalize().ok());
    if home.as_deref() == Some(canon.as_path()) {
        return Err(Error::InvalidArgument(format!(
            "workspace_root {arg} is the home folder itself, which is never a workspace (it holds ~/.ssh, ~/.aws and \
             every project); pass the project's folder inside it"
        )));
    }
    Ok(canon)
}

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
        Ok(Workspace {
            allowed: compile_list(&paths.allowed, PathList::Allowed)?,
            policy_rel,
            unlocked: compile_list(&paths.unlock_secrets, PathList::UnlockSecrets)?,
            denied: compile_list(&paths.denied, PathList::Denied)?,
            extra_denied: paths.denied.clone(),
            allow_hard_links: paths.allow_hard_links,
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
        if let Some((c, what)) = rel.chars().find_map(|c| unseen(c).map(|what| (c, what))) {
            return Err(Error::Scope(format!(
                "path \"{}\" holds {}, {what}: a name shown with it is not the name it is; rename the file with \
                 visible characters",
                escaped(rel),
                code_point(c)
            )));
        }
        if rel
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\\' | '\''))
        {
            return refuse("holds whitespace, quotes or backslashes, which are not supported");
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
            if let Some(why) = lookalike(comp) {
                return Err(Error::Scope(format!("path \"{}\" {why}", escaped(rel))));
            }
        }
        if let Some(why) = too_long(rel) {
            return refuse(&why);
        }
        let (always_denied, secrets) = &*BUILT_IN;
        let matched = always_denied.matches(rel);
        if self.is_policy_file(rel) {
            return refuse(&format!(
                "is always denied: it is a policy file ({POLICY_FILE} at any depth and in any case, or the file \
                 LOCAL_LLM_CONFIG names), whose validation commands run on the next apply; the worker never reads \
                 or writes it, edit it yourself"
            ));
        }
        if !matched.is_empty() {
            return refuse(
                "is always denied (.git, at any depth and in any case); the worker never reads or writes it",
            );
        }
        if let Some(&first) = secrets.matches(rel).first()
            && !self.unlocked.is_match(rel)
        {
            return refuse(&format!(
                "looks like a secret ({}, matched in any case), so it is not sent to the model; if the model really \
                 must see it, name it in [paths] unlock_secrets",
                shown_glob(SECRET_DENIED[first])
            ));
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

    /// Whether `rel` is a policy file: named like one at any depth and in any case, or the file `LOCAL_LLM_CONFIG`
    /// names when it lies inside.
    fn is_policy_file(&self, rel: &str) -> bool {
        BUILT_IN.0.matches(rel).contains(&(ALWAYS_DENIED.len() - 1))
            || self
                .policy_rel
                .as_deref()
                .is_some_and(|p| p.to_lowercase() == rel.to_lowercase())
    }

    /// Whether a validation sandbox leaves the file at `rel` out of its copy, where the model's code runs and can
    /// print what it reads into output the repair round shows the model: a file the model may not see (denied by
    /// `[paths] denied`, a policy file, a secret: [`Workspace::is_secret`]) unless `include`
    /// ([`sandbox_include`]) names it, or a file with more than one hard link that the policy does not allow to be
    /// read (its other name may be `~/.ssh/id_rsa`). One `lstat`.
    pub fn kept_from_sandbox(&self, rel: &str, include: &GlobSet) -> bool {
        use std::os::unix::fs::MetadataExt;
        let unseen = self.is_secret(rel) || self.is_policy_file(rel) || self.denied.is_match(rel);
        (unseen && !include.is_match(rel))
            || (!self.allow_hard_links
                && std::fs::symlink_metadata(self.root.join(rel))
                    .is_ok_and(|m| m.is_file() && m.nlink() > 1))
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
}

#[cfg(test)]
mod tests;
