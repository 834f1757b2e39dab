//! The one error type every layer returns, and the one way it is shown.
//!
//! Each variant is a refusal a person (or the primary agent) reads: the message names what is wrong and, where there is
//! one, the fix. [`Error::kind`] names the variant for a program to branch on (the MCP server sends it as structured
//! content beside the text, the CLI's `--json` prints it); [`Error::render`] is the text both transports show.
//! I/O failures keep the path they happened at and the `io::Error` itself ([`IoContext`] attaches them), instead of
//! being flattened into a string where they happen. Nothing here ever carries a credential or file contents beyond a
//! bounded excerpt.

use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use thiserror::Error;

/// A refusal or failure, grouped by the part of the request that caused it.
#[derive(Debug, Error)]
pub enum Error {
    /// A tool or CLI argument is missing, empty or out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The policy file is missing, unreadable or invalid.
    #[error("policy: {0}")]
    Policy(String),
    /// The policy may not be used: owned or writable by another user, or not trusted (new or changed since
    /// `local-llm-worker trust`).
    #[error("trust: {0}")]
    Trust(String),
    /// A path is outside what the policy allows, or not a safe place to read or write.
    #[error("scope: {0}")]
    Scope(String),
    /// A selected file cannot be sent to the model (binary, too large, not UTF-8...).
    #[error("file: {0}")]
    File(String),
    /// The model server could not be reached or answered with an error.
    #[error("model: {0}")]
    Provider(String),
    /// The model answered, but the answer holds no edit we can use.
    #[error("model answer: {0}")]
    ModelAnswer(String),
    /// A patch (from the model or from a file) is malformed or does not apply.
    #[error("patch: {0}")]
    Patch(String),
    /// The proposal id is unknown, expired, already used or being applied.
    #[error("proposal: {0}")]
    Proposal(String),
    /// The digest given does not match the patch bytes: the caller approved other bytes (or none).
    #[error("digest: {0}")]
    Digest(String),
    /// The workspace changed since the proposal was made.
    #[error("stale: {0}")]
    Stale(String),
    /// The patch was applied but a validation command failed; the previous bytes were restored.
    #[error("validation failed, previous bytes restored: {0}")]
    ValidationFailed(String),
    /// The caller cancelled the request; nothing was written.
    #[error("cancelled by the caller; nothing was written")]
    Cancelled,
    /// An I/O failure while reading or writing the workspace or the worker's own files.
    #[error("io: {}", io_text(.message, .source.as_ref()))]
    Io {
        /// What was being done, with the path it was done to (`cannot read src/a.py`).
        message: String,
        /// The path it happened at, when there is one (workspace-relative for workspace files).
        path: Option<PathBuf>,
        /// The operating system's error, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
}

fn io_text(message: &str, source: Option<&std::io::Error>) -> String {
    match source {
        Some(s) => format!("{message}: {s}"),
        None => message.to_string(),
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The machine-readable kind of an [`Error`]: what a primary agent or a script branches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A tool or CLI argument is missing, empty or out of range: fix the call.
    InvalidArgument,
    /// The policy file is missing or invalid: fix `local-llm-worker.toml`.
    Policy,
    /// The policy is another user's, or not trusted as it is now: the user reads it and runs
    /// `local-llm-worker trust` (never the agent on its own).
    Trust,
    /// A path is outside the policy's scope or unsafe: select other files, or change `[paths]`.
    Scope,
    /// A selected file cannot be sent (binary, too large, not UTF-8): select another, or a line range.
    File,
    /// The model server failed or could not be reached: check `[provider]`, the key, the server.
    Provider,
    /// The model's answer holds no usable edit: retry, narrow the task, or do it yourself.
    ModelAnswer,
    /// A patch is malformed or does not apply.
    Patch,
    /// The proposal id is unknown, expired, used or being applied: propose again.
    Proposal,
    /// The digest does not match the patch: review the patch and pass the digest printed with it.
    Digest,
    /// The files changed since the proposal (or already hold it): re-read them and propose again.
    Stale,
    /// The patch was written, a validation command failed, and the previous bytes are back.
    ValidationFailed,
    /// The caller cancelled; nothing was written.
    Cancelled,
    /// An I/O failure (the path and the operating system's error are in the message).
    Io,
}

impl ErrorKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::InvalidArgument,
        ErrorKind::Policy,
        ErrorKind::Trust,
        ErrorKind::Scope,
        ErrorKind::File,
        ErrorKind::Provider,
        ErrorKind::ModelAnswer,
        ErrorKind::Patch,
        ErrorKind::Proposal,
        ErrorKind::Digest,
        ErrorKind::Stale,
        ErrorKind::ValidationFailed,
        ErrorKind::Cancelled,
        ErrorKind::Io,
    ];

    /// The kind's name as it appears in JSON (`invalid_argument`, `model_answer`...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Policy => "policy",
            ErrorKind::Trust => "trust",
            ErrorKind::Scope => "scope",
            ErrorKind::File => "file",
            ErrorKind::Provider => "provider",
            ErrorKind::ModelAnswer => "model_answer",
            ErrorKind::Patch => "patch",
            ErrorKind::Proposal => "proposal",
            ErrorKind::Digest => "digest",
            ErrorKind::Stale => "stale",
            ErrorKind::ValidationFailed => "validation_failed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Io => "io",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as both transports send it: `{kind, message}` (and the path of an I/O failure).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Refusal {
    /// What kind of refusal this is (see [`ErrorKind`]).
    pub kind: ErrorKind,
    /// The rendered message: what is wrong and the fix.
    pub message: String,
    /// For an I/O failure, the path it happened at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl Error {
    /// An I/O failure with no operating-system error behind it (a read-back that differs, a missing setting).
    pub fn io_message(message: impl Into<String>) -> Error {
        Error::Io {
            message: message.into(),
            path: None,
            source: None,
        }
    }

    /// The same error with every spelling of `secret` replaced in its message: applied to every error a provider
    /// returns, so no text a server sent (a body, a value quoted by a JSON parser) carries the key out.
    pub fn redacted(self, secret: &crate::secret::Secret) -> Error {
        if !secret.is_some() {
            return self;
        }
        let r = |m: String| secret.redact(&m);
        match self {
            Error::InvalidArgument(m) => Error::InvalidArgument(r(m)),
            Error::Policy(m) => Error::Policy(r(m)),
            Error::Trust(m) => Error::Trust(r(m)),
            Error::Scope(m) => Error::Scope(r(m)),
            Error::File(m) => Error::File(r(m)),
            Error::Provider(m) => Error::Provider(r(m)),
            Error::ModelAnswer(m) => Error::ModelAnswer(r(m)),
            Error::Patch(m) => Error::Patch(r(m)),
            Error::Proposal(m) => Error::Proposal(r(m)),
            Error::Digest(m) => Error::Digest(r(m)),
            Error::Stale(m) => Error::Stale(r(m)),
            Error::ValidationFailed(m) => Error::ValidationFailed(r(m)),
            Error::Cancelled => Error::Cancelled,
            Error::Io {
                message,
                path,
                source,
            } => {
                // The operating system's text could quote anything a server sent: it is kept only when clean.
                let source = source.filter(|s| !secret.found_in(&s.to_string()));
                Error::Io {
                    message: r(message),
                    path: path.filter(|p| !secret.found_in(&p.to_string_lossy())),
                    source,
                }
            }
        }
    }

    /// The machine-readable kind of the error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Policy(_) => ErrorKind::Policy,
            Error::Trust(_) => ErrorKind::Trust,
            Error::Scope(_) => ErrorKind::Scope,
            Error::File(_) => ErrorKind::File,
            Error::Provider(_) => ErrorKind::Provider,
            Error::ModelAnswer(_) => ErrorKind::ModelAnswer,
            Error::Patch(_) => ErrorKind::Patch,
            Error::Proposal(_) => ErrorKind::Proposal,
            Error::Digest(_) => ErrorKind::Digest,
            Error::Stale(_) => ErrorKind::Stale,
            Error::ValidationFailed(_) => ErrorKind::ValidationFailed,
            Error::Cancelled => ErrorKind::Cancelled,
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// The text both transports show: the message, prefixed by its kind's label (`stale: ...`).
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The error as both transports send it in JSON.
    pub fn refusal(&self) -> Refusal {
        Refusal {
            kind: self.kind(),
            message: self.render(),
            path: match self {
                Error::Io { path, .. } => path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                _ => None,
            },
        }
    }
}

/// Attach what was being done, and where, to an `io::Error` (`.at("cannot read", rel)`), keeping the error itself.
pub trait IoContext<T> {
    /// `what` is done to `path`: the message reads `{what} {path}`.
    fn at(self, what: &str, path: impl AsRef<Path>) -> Result<T>;
    /// A failure with no single path (`cannot read the current folder`).
    fn context(self, message: impl Into<String>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, what: &str, path: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| {
            let path = path.as_ref();
            Error::Io {
                message: format!("{what} {}", path.display()),
                path: Some(path.to_path_buf()),
                source: Some(e),
            }
        })
    }

    fn context(self, message: impl Into<String>) -> Result<T> {
        self.map_err(|e| Error::Io {
            message: message.into(),
            path: None,
            source: Some(e),
        })
    }
}

/// Cut `text` to at most `max` bytes on a char boundary, marking the cut, for excerpts in error messages.
pub fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_path_and_source() {
        let e = std::fs::read("/nonexistent/x")
            .at("cannot read", "src/x.py")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(e.render().starts_with("io: cannot read src/x.py: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(e.refusal().path.as_deref(), Some("src/x.py"));
    }

    #[test]
    fn the_readme_lists_every_kind_and_no_other() {
        let readme = include_str!("../README.md");
        let section = readme
            .split("## Refusals and their kinds")
            .nth(1)
            .expect("the README has a section on refusals")
            .split("\n## ")
            .next()
            .unwrap_or_default();
        let listed: Vec<&str> = section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(listed, kinds);
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        let names: std::collections::BTreeSet<_> =
            ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        for k in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
