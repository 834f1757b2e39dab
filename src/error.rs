//! The one error type every layer returns.
//!
//! Each variant is a refusal a person (or the primary agent) reads: the message names what is wrong and, where there is
//! one, the fix. Transports print `Display` as is; nothing here ever carries a credential or file contents beyond a
//! bounded excerpt.

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
    /// The proposal id is unknown, expired or already used, or the digest does not match.
    #[error("proposal: {0}")]
    Proposal(String),
    /// The workspace changed since the proposal was made.
    #[error("stale: {0}")]
    Stale(String),
    /// The patch was applied but a validation command failed; the previous bytes were restored.
    #[error("validation failed, previous bytes restored: {0}")]
    ValidationFailed(String),
    /// The caller cancelled the request; nothing was written.
    #[error("cancelled by the caller; nothing was written")]
    Cancelled,
    /// An I/O failure while reading or writing the workspace.
    #[error("io: {0}")]
    Io(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
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
            Error::Scope(m) => Error::Scope(r(m)),
            Error::File(m) => Error::File(r(m)),
            Error::Provider(m) => Error::Provider(r(m)),
            Error::ModelAnswer(m) => Error::ModelAnswer(r(m)),
            Error::Patch(m) => Error::Patch(r(m)),
            Error::Proposal(m) => Error::Proposal(r(m)),
            Error::Stale(m) => Error::Stale(r(m)),
            Error::ValidationFailed(m) => Error::ValidationFailed(r(m)),
            Error::Cancelled => Error::Cancelled,
            Error::Io(m) => Error::Io(r(m)),
        }
    }

    /// A short machine-readable name of the variant, for JSON output and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidArgument(_) => "invalid_argument",
            Error::Policy(_) => "policy",
            Error::Scope(_) => "scope",
            Error::File(_) => "file",
            Error::Provider(_) => "provider",
            Error::ModelAnswer(_) => "model_answer",
            Error::Patch(_) => "patch",
            Error::Proposal(_) => "proposal",
            Error::Stale(_) => "stale",
            Error::ValidationFailed(_) => "validation_failed",
            Error::Cancelled => "cancelled",
            Error::Io(_) => "io",
        }
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
