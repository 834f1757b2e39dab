//! Scope: which paths of a workspace the worker may read and write, and reading the selected files safely.
//!
//! A path is accepted only when it is workspace-relative, plain (no `..`, no `.`, no empty component, no
//! whitespace, quotes, backslashes or unseen characters; see below), matched by `paths.allowed`, not matched by a denied glob (built-in: `.git/`, the policy
//! file, secret-looking files; plus `paths.denied`), and when no component of it on disk is a symlink. The check is
//! repeated at write time by the transaction ([`Workspace::resolve`] calls [`Workspace::check_path`]); nothing here
//! writes.
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

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::digest::git_blob_id;
use crate::error::{Error, IoContext, Result};
use crate::patch::focus::{self, Focus};
use crate::patch::{MODE_EXECUTABLE, MODE_REGULAR, PreImage};
use crate::policy::{Limits, POLICY_FILE, Paths};
use crate::screen::{code_point, unseen};

/// Globs that are never read or written, whatever the policy says (matched in any case): `.git` at any depth, and
/// every file named like the policy file at any depth (a nested project's policy decides what the next apply there
/// runs). The last entry is the policy file's name ([`POLICY_FILE`], checked in a unit test).
pub const ALWAYS_DENIED: &[&str] = &["**/.git", "**/.git/**", "**/local-llm-worker.toml"];

/// Secret-looking files: denied unless `[paths] unlock_secrets` names them explicitly (matched in any case). The
/// names secret scanners treat as secrets (gitleaks', trufflehog's and detect-secrets' file rules, GitHub's and
/// gitrob's sensitive-file lists), kept to names that ordinary source files do not have: `secrets.py` and
/// `key.rs` are not here, `secrets.yml` and `tls.key` are. README's "Always denied" paragraph lists them as
/// [`secret_names`] writes them (a test compares the two).
pub const SECRET_DENIED: &[&str] = &[
    // Environment files: .env, .env.local, .env-prod, .env_prod, .envrc; prod.env.
    "**/.env*",
    "**/*.env",
    // Private keys, keystores and certificates bundled with their key.
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.pkcs12",
    "**/*.keystore",
    "**/*.jks",
    "**/*.ppk",
    "**/*.ovpn",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    // Password databases.
    "**/*.kdbx",
    "**/*.kdb",
    "**/*.psafe3",
    // Tools' credential files (`.git-credentials` is `*credentials*`).
    "**/*credentials*",
    "**/.netrc",
    "**/_netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.pgpass",
    "**/.htpasswd",
    "**/.s3cfg",
    "**/.dockercfg",
    "**/.docker/config.json",
    "**/.kube/config",
    "**/*.tfstate",
    "**/*.tfstate.*",
    "**/secrets.{yml,yaml,json,toml,ini,env,txt}",
    "**/.*_history",
    // Folders of credentials.
    "**/.aws/**",
    "**/.ssh/**",
    "**/.gnupg/**",
    "**/.azure/**",
    "**/.config/gcloud/**",
];

/// A built-in glob as people read it: `**/` left off (every built-in name matches at any depth), a folder's `/**`
/// written `/`.
pub fn shown_glob(glob: &str) -> String {
    let g = glob.strip_prefix("**/").unwrap_or(glob);
    match g.strip_suffix("/**") {
        Some(folder) => format!("{folder}/"),
        None => g.to_string(),
    }
}

/// The secret-looking names ([`SECRET_DENIED`]) as README and the `init-project` template list them.
pub fn secret_names() -> Vec<String> {
    SECRET_DENIED.iter().map(|g| shown_glob(g)).collect()
}

/// A path as a refusal about its characters shows it: every non-ASCII or control character as `<U+XXXX>`.
fn escaped(rel: &str) -> String {
    rel.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_control() {
                c.to_string()
            } else {
                format!("<{}>", code_point(c))
            }
        })
        .collect()
}

/// A path that came from outside (a model's answer) as a message may show it: every character a path may not hold
/// (controls, bidi controls, invisible characters, odd spaces) as `<U+XXXX>`, the rest as it is (`café.py` stays).
pub fn shown(path: &str) -> String {
    path.chars()
        .map(|c| match unseen(c) {
            Some(_) => format!("<{}>", code_point(c)),
            None => c.to_string(),
        })
        .collect()
}

/// The names a component must not merely look like: `.git` and the policy file's.
const LOOKALIKE_GUARDED: &[&str] = &[".git", POLICY_FILE];

/// Whether `comp` spells `name` when each of its non-ASCII characters stands for one character of `name` or for
/// none (a look-alike letter, a fullwidth form, a letter some filesystem folds to ASCII, an added combining mark),
/// and each ASCII character is the one at its place in any case.
fn reads_as(comp: &str, name: &str) -> bool {
    let name = name.as_bytes();
    // at[j]: whether the characters of `comp` read so far can spell the first j bytes of `name`.
    let mut at = vec![false; name.len() + 1];
    at[0] = true;
    for c in comp.chars() {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            if !at[j] {
                continue;
            }
            if c.is_ascii() {
                if j < name.len() && name[j].eq_ignore_ascii_case(&(c as u8)) {
                    next[j + 1] = true;
                }
            } else {
                next[j] = true;
                if j < name.len() {
                    next[j + 1] = true;
                }
            }
        }
        at = next;
    }
    at[name.len()]
}

/// Why a component would be read as `.git` or the policy file without being it: the refusal's words, or `None`.
fn lookalike(comp: &str) -> Option<String> {
    let trimmed = comp.trim_end_matches('.');
    for name in LOOKALIKE_GUARDED {
        if let Some(c) = comp.chars().find(|c| !c.is_ascii())
            && reads_as(trimmed, name)
        {
            return Some(format!(
                "has a component {:?} that reads as {name:?}: {} stands where a letter of it is (some filesystems \
                 even fold it to that letter), so it is refused like {name} itself; rename it with ASCII letters",
                escaped(comp),
                code_point(c)
            ));
        }
        if trimmed.len() < comp.len() && trimmed.eq_ignore_ascii_case(name) {
            return Some(format!(
                "has a component {comp:?} that is {name:?} with trailing dots, which Windows and vfat drop (it is \
                 {name} there), so it is refused like {name} itself"
            ));
        }
    }
    if comp.eq_ignore_ascii_case("git~1") {
        return Some(
            "has a component \"git~1\", the short (8.3) name of .git on Windows and vfat, so it is refused like \
             .git itself"
                .into(),
        );
    }
    None
}

/// At most this many files may be selected for one request.
pub const MAX_SELECTED_FILES: usize = 100;

/// The built-in denials, compiled once per process: (always denied, secret-looking).
#[allow(
    clippy::expect_used,
    reason = "the built-in globs are constants, compiled in a unit test"
)]
static BUILT_IN: std::sync::LazyLock<(GlobSet, GlobSet)> = std::sync::LazyLock::new(|| {
    (
        compile(ALWAYS_DENIED, "built-in denied", AnyCase::Yes)
            .expect("the built-in denied globs compile"),
        compile(SECRET_DENIED, "built-in secret", AnyCase::Yes)
            .expect("the built-in secret globs compile"),
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

/// Whether a glob set matches names in any case (denials) or exactly as written (what lets paths through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnyCase {
    Yes,
    No,
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

fn compile(globs: &[&str], what: &str, any_case: AnyCase) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(
            glob(g, any_case)
                .map_err(|e| Error::Policy(format!("{what} glob {g:?} is invalid: {e}")))?,
        );
    }
    b.build()
        .map_err(|e| Error::Policy(format!("{what} globs cannot be compiled: {e}")))
}

/// One of the `[paths]` glob lists: it decides how a pattern matches (see [`pattern_globs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathList {
    /// `[paths] allowed`: what the model may see and edit.
    Allowed,
    /// `[paths] denied`: never read or written.
    Denied,
    /// `[paths] unlock_secrets`: secret-looking files let through anyway.
    UnlockSecrets,
    /// `[validation] sandbox_include`: files the sandbox copy keeps although the model may not see them.
    SandboxInclude,
}

impl PathList {
    /// The list's key in the policy file.
    pub fn key(self) -> &'static str {
        match self {
            PathList::Allowed => "[paths] allowed",
            PathList::Denied => "[paths] denied",
            PathList::UnlockSecrets => "[paths] unlock_secrets",
            PathList::SandboxInclude => "[validation] sandbox_include",
        }
    }
}

/// The globs a `[paths]` pattern matches as, read the way `.gitignore` reads it (so that the forms people write there
/// do what they say here), or why it is refused.
///
/// - A leading `/` anchors the pattern at the workspace root: `/config/**`.
/// - A pattern without any other `/` matches at any depth: `*.secret`, `secret`, `.venv`.
/// - A trailing `/` names a folder and everything under it: `secret/`.
/// - A pattern whose last component is a plain name (`src/secret`, `Private`) also covers everything under a folder
///   of that name. In `denied` every pattern does (`src/*` denies `src/a/b.rs`, as `.gitignore` would ignore it); in
///   `allowed` and `unlock_secrets` a `*` stays within its folder, so that `src/*` lets through only the files
///   directly in `src`.
/// - `*` stays within a folder, `**` crosses folders, `?`, `[...]` and `{a,b}` as usual.
/// - A leading `!` (re-including in `.gitignore`) is refused: nothing here re-includes; the refusal says to list the
///   files in `denied` (or in `allowed`). So are an empty pattern, spaces at its ends, `//`, and `.` or `..`
///   components, which no checked path holds.
pub fn pattern_globs(pattern: &str, list: PathList) -> std::result::Result<Vec<String>, String> {
    let refuse = |why: String| Err(format!("{} pattern {pattern:?} {why}", list.key()));
    if pattern.trim().is_empty() {
        return refuse("is empty; remove it".into());
    }
    if pattern.trim() != pattern {
        return refuse("has spaces at its ends, which no path has; remove them".into());
    }
    if let Some(rest) = pattern.strip_prefix('!') {
        return refuse(format!(
            "starts with `!`, but nothing here re-includes or excludes as in .gitignore: to keep those files from the \
             model list {rest:?} in [paths] denied; to let them through list it in [paths] allowed"
        ));
    }
    let (anchored, body) = match pattern.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (folder, body) = match body.strip_suffix('/') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    if body.is_empty() || body.split('/').any(str::is_empty) {
        return refuse(
            "has an empty component (`//`, or nothing but `/`); write a path such as \"src/**\""
                .into(),
        );
    }
    if body.split('/').any(|c| c == "." || c == "..") {
        return refuse(
            "uses `.` or `..`, which no checked path holds; write it relative to the workspace root, such as \
             \"src/**\""
                .into(),
        );
    }
    let body = if !anchored && !body.contains('/') && body != "**" {
        format!("**/{body}")
    } else {
        body.to_string()
    };
    let under = format!("{body}/**");
    if folder {
        return Ok(vec![under]);
    }
    let last = body.rsplit('/').next().unwrap_or_default();
    let covers_under =
        last != "**" && (list == PathList::Denied || !last.contains(['*', '?', '[', '{']));
    Ok(if covers_under {
        vec![body, under]
    } else {
        vec![body]
    })
}

/// Check every pattern of `[paths]` as the policy is loaded: each reads as a glob ([`pattern_globs`]) that compiles.
pub fn check_paths(paths: &Paths) -> std::result::Result<(), String> {
    for (list, patterns) in [
        (PathList::Allowed, &paths.allowed),
        (PathList::Denied, &paths.denied),
        (PathList::UnlockSecrets, &paths.unlock_secrets),
    ] {
        compile_list(patterns, list).map_err(|e| match e {
            Error::Policy(m) => m,
            other => other.to_string(),
        })?;
    }
    Ok(())
}

/// `[validation] sandbox_include` compiled (patterns read as `[paths] allowed` reads them, matched exactly), for
/// [`Workspace::kept_from_sandbox`]; a bad pattern is refused by name when the policy is loaded.
pub fn sandbox_include(patterns: &[String]) -> Result<GlobSet> {
    compile_list(patterns, PathList::SandboxInclude)
}

/// A `[paths]` list compiled: each pattern as [`pattern_globs`] reads it; denials match in any case.
fn compile_list(patterns: &[String], list: PathList) -> Result<GlobSet> {
    let any_case = match list {
        PathList::Denied => AnyCase::Yes,
        PathList::Allowed | PathList::UnlockSecrets | PathList::SandboxInclude => AnyCase::No,
    };
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        for g in pattern_globs(p, list).map_err(Error::Policy)? {
            b.add(glob(&g, any_case).map_err(|e| {
                Error::Policy(format!("{} glob {p:?} is invalid: {e}", list.key()))
            })?);
        }
    }
    b.build()
        .map_err(|e| Error::Policy(format!("{} globs cannot be compiled: {e}", list.key())))
}

fn glob(g: &str, any_case: AnyCase) -> std::result::Result<globset::Glob, globset::Error> {
    GlobBuilder::new(g)
        .literal_separator(true)
        .case_insensitive(any_case == AnyCase::Yes)
        .build()
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

    /// Read the selected files. Each must exist, except those `create` names, which must not: they map to `None`
    /// (the model writes them). A missing file that is not declared as created is refused, with the file of that name
    /// elsewhere in the allowed tree as a hint ([`crate::near_name`]); a declared one that exists is refused too.
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
                OnDisk::File { abs, mode } => {
                    let text = read_text(&abs, rel, limits.max_file_bytes, self.allow_hard_links)?;
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
        let hint = match crate::near_name::did_you_mean(self, rel) {
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

/// Read a file as UTF-8 text within a size limit, refusing binary content, and a file with more than one hard link
/// unless `hard_links` (`[paths] allow_hard_links`): its bytes are also another file's, which may lie outside the
/// workspace or under a denied name, and no path check sees that name.
fn read_text(abs: &Path, rel: &str, max: u64, hard_links: bool) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let f = std::fs::File::open(abs).at("cannot read", rel)?;
    let links = f.metadata().at("cannot inspect", rel)?.nlink();
    if links > 1 && !hard_links {
        return Err(Error::Scope(format!(
            "{rel} has {links} hard links: its bytes are also another file's, which may lie outside the workspace or \
             under a denied name (a link named notes.txt can be ~/.ssh/id_rsa), so it is not read; give it a name \
             of its own (`cp {rel} {rel}.tmp && mv {rel}.tmp {rel}`), or set [paths] allow_hard_links = true to \
             read such files (they are never written all the same)"
        )));
    }
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
            ..Paths::default()
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
    fn case_insensitive_filesystems_denials_match_in_any_case() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("policy.toml"), "").unwrap();
        let root = root.path().canonicalize().unwrap();
        let paths = Paths {
            allowed: vec!["**".into()],
            denied: vec!["private/**".into()],
            unlock_secrets: vec!["**/.env.example".into()],
            ..Paths::default()
        };
        let w = Workspace::new(root.clone(), &paths, Some(&root.join("policy.toml"))).unwrap();
        for p in [
            ".GIT/config",
            ".Git/hooks/pre-commit",
            "sub/.gIT/HEAD",
            "LOCAL-LLM-WORKER.TOML",
            "Local-Llm-Worker.toml",
            "POLICY.TOML",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains("always denied"), "{p}: {err}");
        }
        for p in [
            ".ENV",
            "app/.Env.Local",
            "server.PEM",
            "deploy/ID_RSA",
            ".AWS/config",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains("looks like a secret"), "{p}: {err}");
        }
        let err = w.check_path("Private/notes.txt").unwrap_err().to_string();
        assert!(err.contains("denied by [paths] denied"), "{err}");
        // What lets a path through matches exactly: another case unlocks nothing.
        assert!(w.check_path("app/.env.example").is_ok());
        assert!(w.check_path("app/.ENV.EXAMPLE").is_err());
        assert!(
            ws(&["src/**"], &[]).check_path("SRC/a.rs").is_err(),
            "allowed must not widen by case"
        );
    }

    #[test]
    fn policy_files_of_nested_projects_are_denied_at_any_depth_in_any_case() {
        assert_eq!(
            ALWAYS_DENIED.last(),
            Some(&format!("**/{POLICY_FILE}").as_str())
        );
        let w = ws(&["**"], &[]);
        for p in [
            "local-llm-worker.toml",
            "svc/local-llm-worker.toml",
            "a/b/c/LOCAL-LLM-WORKER.TOML",
            "svc/Local-Llm-Worker.Toml",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(
                err.contains("always denied: it is a policy file"),
                "{p}: {err}"
            );
        }
        assert!(w.check_path("svc/local-llm-worker.toml.example").is_ok());
        assert!(w.check_path("svc/local-llm-worker.toml.d/x").is_ok());
    }

    #[test]
    fn secrets_by_other_spellings_are_secrets_and_ordinary_sources_are_not() {
        let w = ws(&["**"], &[]);
        for p in [
            ".env-prod",
            ".env_prod",
            ".envrc",
            ".ENV",
            "docker/prod.env",
            "server.PEM",
            "tls.Key",
            "deploy/ID_RSA",
            "Credentials.json",
            ".AWS/config",
            "id_ecdsa",
            "id_dsa.pub",
            ".npmrc",
            ".netrc",
            ".pypirc",
            "a.p12",
            "a.pfx",
            "release.keystore",
            "app.jks",
            ".git-credentials",
            ".docker/config.json",
            "db.kdbx",
            ".htpasswd",
            "config/secrets.yml",
            ".streamlit/secrets.toml",
            ".pgpass",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            ".kube/config",
            ".gnupg/pubring.kbx",
            ".bash_history",
            ".config/gcloud/credentials.db",
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains("looks like a secret ("), "{p}: {err}");
            assert!(w.is_secret(p), "{p} is copied into a sandbox");
        }
        let err = w.check_path("deploy/tls.Key").unwrap_err().to_string();
        assert!(err.contains("(*.key, matched in any case)"), "{err}");
        for p in [
            "src/secrets.py",
            "src/secret.rs",
            "src/key.rs",
            "src/keys/mod.rs",
            "src/env.rs",
            "src/environment.py",
            "src/pem.rs",
            "src/keystore.rs",
            "src/history.rs",
            "docs/secrets.md",
            "config/settings.yml",
            ".github/workflows/ci.yml",
            ".gitignore",
            "src/npmrc_parser.js",
            "kube/config.yaml",
        ] {
            assert!(w.check_path(p).is_ok(), "{p} is an ordinary file");
            assert!(!w.is_secret(p), "{p}");
        }
    }

    #[test]
    fn invisible_and_confusable_characters_in_paths_are_refused_by_code_point() {
        use unicode_general_category::{GeneralCategory, get_general_category};
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if get_general_category(c) == GeneralCategory::Format {
                assert!(
                    unseen(c).is_some(),
                    "{} is a format character",
                    code_point(c)
                );
            }
        }
        let w = ws(&["**"], &[]);
        for (p, needle) in [
            (
                "src/\u{202E}yp.txt",
                "holds U+202E, a bidirectional control",
            ),
            ("a\u{200B}.py", "holds U+200B, an invisible character"),
            ("a\u{FEFF}.py", "U+FEFF"),
            ("a\u{034F}.py", "U+034F"),
            ("a\u{E0041}.py", "U+E0041"),
            ("a\tb", "holds U+0009, a control character"),
            ("a\u{00A0}b", "holds U+00A0, a space"),
            (".g\u{0456}t/config", "reads as \".git\": U+0456"),
            ("x/.\u{0261}it/HEAD", "U+0261"),
            (".g\u{0131}t/config", "U+0131"),
            (".gi\u{0307}t/config", "U+0307"),
            ("\u{FF0E}\u{FF47}\u{FF49}\u{FF54}/config", "U+FF0E"),
            ("\u{FF0E}git/config", "U+FF0E"),
            (
                "local-llm-w\u{043E}rker.toml",
                "reads as \"local-llm-worker.toml\": U+043E",
            ),
            ("svc/local-llm-wor\u{212A}er.toml", "U+212A"),
            (".git./config", "trailing dots"),
            ("svc/LOCAL-LLM-WORKER.TOML..", "trailing dots"),
            ("GIT~1/config", "short (8.3) name of .git"),
        ] {
            let err = w.check_path(p).unwrap_err().to_string();
            assert!(err.contains(needle), "{}: {err}", escaped(p));
            assert!(err.is_ascii(), "a refusal printed a character raw: {err}");
        }
        for p in [
            "src/café.py",
            "docs/日本語.md",
            "src/naïve.rs",
            ".github/x.yml",
            ".gitignore",
            "src/.gitkeep",
            "a.b./c",
            "git~2/x",
            "src/gité.rs",
        ] {
            assert!(w.check_path(p).is_ok(), "{p}");
        }
    }

    #[test]
    fn secrets_need_an_explicit_unlock_and_git_never_unlocks() {
        let paths = Paths {
            allowed: vec!["**".into()],
            denied: vec![],
            unlock_secrets: vec!["**/.env.example".into(), ".git/**".into()],
            ..Paths::default()
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
    fn globs_that_silently_do_less_read_as_in_gitignore_or_are_refused() {
        let w = ws(
            &["src/**", "*.md", "/Makefile", "tools/", "scripts/*"],
            &[
                "src/secret",
                "vault/",
                "*.secret",
                "/config/**",
                "Private",
                "src/gen/*",
            ],
        );
        for (p, ok) in [
            ("src/a.rs", true),
            ("src/secret", false),
            ("src/secret/a.rs", false),
            ("src/x/vault/b.rs", false),
            ("src/deep/c.secret", false),
            ("src/private/d.rs", false),
            ("src/gen/e.rs", false),
            ("src/gen/sub/f.rs", false),
            ("src/secretary.rs", true),
            ("docs/deep/g.md", true),
            ("Makefile", true),
            ("sub/Makefile", false),
            ("tools/a/b.sh", true),
            ("scripts/run.sh", true),
            ("scripts/sub/run.sh", false),
        ] {
            assert_eq!(w.check_path(p).is_ok(), ok, "{p}: {:?}", w.check_path(p));
        }
        let w = ws(&["**"], &["/config/**"]);
        assert!(w.check_path("config/a.py").is_err());
        assert!(
            w.check_path("sub/config/a.py").is_ok(),
            "a leading / anchors"
        );
        for (pattern, needle) in [
            ("!src/secret/**", "starts with `!`"),
            ("", "is empty"),
            (" src/**", "has spaces at its ends"),
            ("src//a", "has an empty component"),
            ("/", "has an empty component"),
            ("./src/**", "uses `.` or `..`"),
        ] {
            let paths = Paths {
                allowed: vec![pattern.into()],
                ..Paths::default()
            };
            let err = check_paths(&paths).unwrap_err();
            assert!(
                err.contains(&format!("[paths] allowed pattern {pattern:?} {needle}")),
                "{err}"
            );
            assert!(Workspace::new(std::env::temp_dir(), &paths, None).is_err());
        }
        let err = pattern_globs("!src/keep.py", PathList::Denied).unwrap_err();
        assert!(
            err.contains("list \"src/keep.py\" in [paths] denied"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_glob_is_a_policy_error() {
        let paths = Paths {
            allowed: vec!["src/[".into()],
            denied: vec![],
            unlock_secrets: vec![],
            ..Paths::default()
        };
        let err = Workspace::new(std::env::temp_dir(), &paths, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("[paths] allowed glob \"src/[\" is invalid"),
            "{err}"
        );
    }
}
