//! Globs: the `[paths]` patterns read the way `.gitignore` reads them ([`pattern_globs`]), compiled (denials in any
//! case, what lets paths through exactly as written), and the built-in denials of [`crate::names`] compiled once.
//! Below the policy: it knows the patterns, not the policy file (the policy checks its `[paths]` with
//! [`check_paths`] as it is loaded).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};
use crate::names::{ALWAYS_DENIED, SECRET_DENIED};

/// The built-in denials, compiled once per process: (always denied, secret-looking).
#[allow(
    clippy::expect_used,
    reason = "the built-in globs are constants, compiled in a unit test"
)]
pub(super) static BUILT_IN: std::sync::LazyLock<(GlobSet, GlobSet)> =
    std::sync::LazyLock::new(|| {
        (
            compile(ALWAYS_DENIED, "built-in denied", AnyCase::Yes)
                .expect("the built-in denied globs compile"),
            compile(SECRET_DENIED, "built-in secret", AnyCase::Yes)
                .expect("the built-in secret globs compile"),
        )
    });

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AnyCase {
    Yes,
    No,
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
pub fn check_paths(
    allowed: &[String],
    denied: &[String],
    unlock_secrets: &[String],
) -> std::result::Result<(), String> {
    for (list, patterns) in [
        (PathList::Allowed, allowed),
        (PathList::Denied, denied),
        (PathList::UnlockSecrets, unlock_secrets),
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
pub(super) fn compile_list(patterns: &[String], list: PathList) -> Result<GlobSet> {
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
