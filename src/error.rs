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

/// A refusal or failure, grouped by the part of the request that caused it.
#[derive(Debug)]
pub enum Error {
    /// A tool or CLI argument is missing, empty or out of range.
    InvalidArgument(String),
    /// The policy file is missing, unreadable or invalid.
    Policy(String),
    /// The policy may not be used: owned or writable by another user, or not trusted (new or changed since
    /// `local-llm-worker trust`).
    Trust(String),
    /// A path is outside what the policy allows, or not a safe place to read or write.
    Scope(String),
    /// A selected file cannot be sent to the model (binary, too large, not UTF-8...).
    File(String),
    /// The model server could not be reached or answered with an error.
    Provider(String),
    /// The model answered, but the answer holds no edit we can use.
    ModelAnswer(String),
    /// A patch (from the model or from a file) is malformed or does not apply.
    Patch(String),
    /// The proposal id is unknown, expired, already used or being applied.
    Proposal(String),
    /// The digest given does not match the patch bytes: the caller approved other bytes (or none).
    Digest(String),
    /// The workspace changed since the proposal was made.
    Stale(String),
    /// The patch was applied but a validation command failed; the previous bytes were restored. What failed and
    /// the repair proposal made from it are fields, sent to a client as structured data (see [`Refusal`]).
    ValidationFailed(Box<ValidationFailure>),
    /// The caller cancelled the request; nothing was written.
    Cancelled,
    /// An I/O failure while reading or writing the workspace or the worker's own files.
    Io {
        /// What was being done, with the path it was done to (`cannot read src/a.py`).
        message: String,
        /// The path it happened at, when there is one (workspace-relative for workspace files).
        path: Option<PathBuf>,
        /// The operating system's error, when there is one.
        source: Option<std::io::Error>,
    },
}

/// The variants that hold only their message, as one pattern binding it (`plain!(m) => ...`): listed once, here.
macro_rules! plain {
    ($m:ident) => {
        Error::InvalidArgument($m)
            | Error::Policy($m)
            | Error::Trust($m)
            | Error::Scope($m)
            | Error::File($m)
            | Error::Provider($m)
            | Error::ModelAnswer($m)
            | Error::Patch($m)
            | Error::Proposal($m)
            | Error::Digest($m)
            | Error::Stale($m)
    };
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io {
                source: Some(s), ..
            } => Some(s),
            _ => None,
        }
    }
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
        self.names().0
    }

    /// The label a message of this kind starts with (`stale: ...`); a cancellation is the label alone.
    pub fn label(self) -> &'static str {
        self.names().1
    }

    /// The one table of what each kind is called: (its JSON name, its message label).
    fn names(self) -> (&'static str, &'static str) {
        match self {
            ErrorKind::InvalidArgument => ("invalid_argument", "invalid argument"),
            ErrorKind::Policy => ("policy", "policy"),
            ErrorKind::Trust => ("trust", "trust"),
            ErrorKind::Scope => ("scope", "scope"),
            ErrorKind::File => ("file", "file"),
            ErrorKind::Provider => ("provider", "model"),
            ErrorKind::ModelAnswer => ("model_answer", "model answer"),
            ErrorKind::Patch => ("patch", "patch"),
            ErrorKind::Proposal => ("proposal", "proposal"),
            ErrorKind::Digest => ("digest", "digest"),
            ErrorKind::Stale => ("stale", "stale"),
            ErrorKind::ValidationFailed => (
                "validation_failed",
                "validation failed, previous bytes restored",
            ),
            ErrorKind::Cancelled => ("cancelled", "cancelled by the caller; nothing was written"),
            ErrorKind::Io => ("io", "io"),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as both transports send it: `{kind, message}` (and the path of an I/O failure; and, for a failed
/// validation, the failed check and the repair proposal made from it, as data).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    /// What kind of refusal this is (see [`ErrorKind`]).
    pub kind: ErrorKind,
    /// The rendered message: what is wrong and the fix.
    pub message: String,
    /// For an I/O failure, the path it happened at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For `validation_failed`: the validation command that failed after the patch was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckFailure>,
    /// For `validation_failed`, when the policy allows the one repair round: the NEW proposal made from the failure,
    /// held for its own approval and not applied (apply it with its `proposal_id` and `digest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairProposal>,
    /// For `validation_failed`, when the repair round was made but gave no proposal: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_error: Option<String>,
}

/// A validation command that failed, as a client reads it (the CLI shows it as one sentence and the output).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckFailure {
    /// The command, as the policy file gives it.
    pub command: String,
    /// Its exit code; `None` when it was killed (timeout, cancellation) or could not start.
    pub exit_code: Option<i32>,
    /// Whether it was killed at its timeout.
    pub timed_out: bool,
    /// How long it ran.
    pub duration_ms: u64,
    /// Its stdout and stderr together as kept: the first and the last bytes, with a line saying how many between
    /// them were left out.
    pub output: String,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ended = match (self.timed_out, self.exit_code) {
            (true, _) => "timed out".to_string(),
            (false, Some(c)) => format!("exited with {c}"),
            (false, None) => "was stopped before it exited".to_string(),
        };
        write!(
            f,
            "`{}` {ended} after {} ms. Output:\n{}",
            self.command, self.duration_ms, self.output
        )
    }
}

/// The proposal the one apply-time repair round made from a failed validation: held, NOT applied.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairProposal {
    /// Opaque id to pass to apply_patch with the digest.
    pub proposal_id: String,
    /// SHA-256 (hex) of exactly the bytes of `patch`.
    pub digest: String,
    /// Canonical git-style unified diff against the restored files.
    pub patch: String,
    /// Whether the validation commands passed on it in a sandbox copy; null when they did not run there.
    pub validation_passed: Option<bool>,
    /// Unix time (seconds) after which it can no longer be applied.
    pub expires_at_unix: u64,
}

/// What failed in a validation: a command, or the run itself before every command ran.
#[derive(Debug, Clone)]
pub enum Failed {
    /// This command failed.
    Check(CheckFailure),
    /// No command failed, but not every one ran (the call was cancelled): why.
    Unfinished(String),
}

/// What the apply-time repair round gave.
#[derive(Debug, Clone)]
pub enum Repair {
    /// A new proposal, held for its own approval.
    Proposed(RepairProposal),
    /// No proposal: why (the round is used either way).
    Failed(String),
}

/// A validation that failed after the patch was written: what failed, which files kept someone else's newer bytes
/// instead of the restored ones, and the repair round's outcome when one was made.
#[derive(Debug, Clone)]
pub struct ValidationFailure {
    /// What failed.
    pub failed: Failed,
    /// When a file was changed by someone else after the apply wrote it and so kept its newer bytes: which, and
    /// what was restored and removed (`a.py (changed by someone else ...) (restored: ...; removed: ...)`).
    pub kept: Option<String>,
    /// The apply-time repair round, when one was made.
    pub repair: Option<Repair>,
}

impl ValidationFailure {
    /// `check` failed.
    pub fn check(check: CheckFailure) -> ValidationFailure {
        ValidationFailure::of(Failed::Check(check))
    }

    /// No command failed, but not every one ran: `why`.
    pub fn unfinished(why: impl Into<String>) -> ValidationFailure {
        ValidationFailure::of(Failed::Unfinished(why.into()))
    }

    fn of(failed: Failed) -> ValidationFailure {
        ValidationFailure {
            failed,
            kept: None,
            repair: None,
        }
    }

    /// What failed, as one text: the check's sentence and output (what a repair round shows the model).
    pub fn report(&self) -> String {
        match &self.failed {
            Failed::Check(c) => c.to_string(),
            Failed::Unfinished(why) => why.clone(),
        }
    }

    fn redact(&mut self, r: impl Fn(&str) -> String) {
        match &mut self.failed {
            Failed::Check(c) => {
                c.command = r(&c.command);
                c.output = r(&c.output);
            }
            Failed::Unfinished(why) => *why = r(why),
        }
        if let Some(k) = &mut self.kept {
            *k = r(k);
        }
        match &mut self.repair {
            Some(Repair::Proposed(p)) => p.patch = r(&p.patch),
            Some(Repair::Failed(why)) => *why = r(why),
            None => {}
        }
    }
}

/// The message after the label: `except for ...` (when files kept newer bytes), the report, then the repair round.
impl fmt::Display for ValidationFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(kept) = &self.kept {
            write!(f, "except for {kept}\n\n")?;
        }
        f.write_str(&self.report())?;
        match &self.repair {
            None => Ok(()),
            Some(Repair::Failed(why)) => write!(
                f,
                "\n\nNo repair proposal could be made (the one repair round is used): {why}"
            ),
            Some(Repair::Proposed(r)) => write!(
                f,
                "\n\nREPAIR PROPOSAL (the one repair round, built from this failure; NOT applied: review the patch, \
                 then call apply_patch with this proposal_id and digest to apply it)\n\
                 proposal_id: {}\ndigest: {}\nvalidation_passed: {}\nexpires_at_unix: {}\npatch:\n{}",
                r.proposal_id,
                r.digest,
                match r.validation_passed {
                    Some(true) => "true (in a sandbox copy)",
                    Some(false) =>
                        "false (in a sandbox copy; see the output above for the previous edit)",
                    None =>
                        "not run (set [validation] on_propose = true to check repairs before you see them)",
                },
                r.expires_at_unix,
                r.patch
            ),
        }
    }
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
        let mut e = self;
        match &mut e {
            Error::Cancelled => {}
            Error::ValidationFailed(v) => v.redact(|m| secret.redact(m)),
            Error::Io {
                message,
                path,
                source,
            } => {
                *message = secret.redact(message);
                // The operating system's text could quote anything a server sent: it is kept only when clean.
                if path
                    .as_ref()
                    .is_some_and(|p| secret.found_in(&p.to_string_lossy()))
                {
                    *path = None;
                }
                if source
                    .as_ref()
                    .is_some_and(|s| secret.found_in(&s.to_string()))
                {
                    *source = None;
                }
            }
            plain!(m) => *m = secret.redact(m),
        }
        e
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

    /// `Display`: the kind's label, then what the variant holds (a cancellation is its label alone).
    fn shown(&self) -> String {
        let label = self.kind().label();
        match self {
            Error::Cancelled => label.to_string(),
            Error::ValidationFailed(v) => format!("{label}: {v}"),
            Error::Io {
                message, source, ..
            } => format!("{label}: {}", io_text(message, source.as_ref())),
            plain!(m) => format!("{label}: {m}"),
        }
    }

    /// A validation failure (boxed: it is the largest variant).
    pub fn validation_failed(v: ValidationFailure) -> Error {
        Error::ValidationFailed(Box::new(v))
    }

    /// The text both transports show: the message, prefixed by its kind's label (`stale: ...`).
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The error as both transports send it in JSON.
    pub fn refusal(&self) -> Refusal {
        let mut r = Refusal {
            kind: self.kind(),
            message: self.render(),
            path: None,
            check: None,
            repair: None,
            repair_error: None,
        };
        match self {
            Error::Io { path, .. } => {
                r.path = path.as_ref().map(|p| p.to_string_lossy().into_owned());
            }
            Error::ValidationFailed(v) => {
                if let Failed::Check(c) = &v.failed {
                    r.check = Some(c.clone());
                }
                match &v.repair {
                    Some(Repair::Proposed(p)) => r.repair = Some(p.clone()),
                    Some(Repair::Failed(why)) => r.repair_error = Some(why.clone()),
                    None => {}
                }
            }
            _ => {}
        }
        r
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

    /// `pytest -q` failed with `output`.
    fn failed_check_with(output: &str) -> ValidationFailure {
        ValidationFailure::check(CheckFailure {
            command: "pytest -q".into(),
            exit_code: Some(1),
            timed_out: false,
            duration_ms: 12,
            output: output.into(),
        })
    }

    fn failed_check() -> ValidationFailure {
        failed_check_with("1 failed")
    }

    #[test]
    fn a_validation_failure_renders_the_text_the_cli_always_showed() {
        let mut v = failed_check();
        v.kept = Some("a.py (changed by someone else) (restored: none; removed: none)".into());
        v.repair = Some(Repair::Proposed(RepairProposal {
            proposal_id: "p_1".into(),
            digest: "d1".into(),
            patch: "diff --git a/a.py b/a.py\n".into(),
            validation_passed: None,
            expires_at_unix: 7,
        }));
        assert_eq!(
            Error::validation_failed(v).render(),
            "validation failed, previous bytes restored: except for a.py (changed by someone else) (restored: none; \
             removed: none)\n\n`pytest -q` exited with 1 after 12 ms. Output:\n1 failed\n\nREPAIR PROPOSAL (the one \
             repair round, built from this failure; NOT applied: review the patch, then call apply_patch with this \
             proposal_id and digest to apply it)\nproposal_id: p_1\ndigest: d1\nvalidation_passed: not run (set \
             [validation] on_propose = true to check repairs before you see them)\nexpires_at_unix: 7\npatch:\n\
             diff --git a/a.py b/a.py\n"
        );
        let mut v = failed_check();
        v.repair = Some(Repair::Failed("model: down".into()));
        assert_eq!(
            Error::validation_failed(v).render(),
            "validation failed, previous bytes restored: `pytest -q` exited with 1 after 12 ms. Output:\n1 failed\n\n\
             No repair proposal could be made (the one repair round is used): model: down"
        );
    }

    #[test]
    fn a_validation_refusal_carries_its_check_and_repair_as_fields() {
        let mut v = failed_check();
        v.repair = Some(Repair::Proposed(RepairProposal {
            proposal_id: "p_2".into(),
            digest: "d2".into(),
            patch: String::new(),
            validation_passed: Some(true),
            expires_at_unix: 9,
        }));
        let r = serde_json::to_value(Error::validation_failed(v).refusal()).unwrap();
        assert_eq!(r["kind"], "validation_failed");
        assert_eq!(r["check"]["command"], "pytest -q");
        assert_eq!(r["check"]["exit_code"], 1);
        assert_eq!(r["repair"]["proposal_id"], "p_2");
        assert_eq!(r["repair"]["digest"], "d2");
        assert!(r.get("repair_error").is_none() && r.get("path").is_none());
        let mut v = failed_check();
        v.repair = Some(Repair::Failed("no edit".into()));
        let r = serde_json::to_value(Error::validation_failed(v).refusal()).unwrap();
        assert_eq!(r["repair_error"], "no edit");
        assert!(r.get("repair").is_none());
        let r = serde_json::to_value(Error::Stale("x".into()).refusal()).unwrap();
        assert_eq!(
            r,
            serde_json::json!({"kind": "stale", "message": "stale: x"})
        );
    }

    #[test]
    fn a_redacted_validation_failure_holds_no_key() {
        let secret = crate::secret::Secret::new("sk-topsecret-123");
        let mut v = failed_check_with("key sk-topsecret-123");
        v.repair = Some(Repair::Failed("echoed sk-topsecret-123".into()));
        let shown = Error::validation_failed(v).redacted(&secret).render();
        assert!(!shown.contains("sk-topsecret-123"), "{shown}");
        assert!(
            shown.contains("`pytest -q` exited with 1 after 12 ms"),
            "{shown}"
        );
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
