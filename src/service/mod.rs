//! The service: propose, apply and delegate, orchestrated once for both transports (MCP and CLI).
//!
//! - [`propose`](Service::propose) runs as stages (`prepare -> ask -> read -> validate -> maybe repair -> record`,
//!   in `propose.rs`): it checks the request, reads the selected files through [`workspace`](crate::workspace), asks the
//!   [`provider`], turns the answer into a canonical patch with the pure [`patch`](crate::patch) engine, dry-runs it
//!   in memory with the transaction's own parser, limits and applier, validates it in a
//!   [`sandbox`](crate::sandbox) copy when the policy says so, and holds it in the [`proposal`] store.
//! - [`apply_proposal`](Service::apply_proposal) and [`apply_bytes`] (`apply.rs`) go through
//!   [`txn::apply`](crate::txn::apply) alone, the only writer of a workspace.
//! - [`delegate`](Service::delegate) (`delegate.rs`) is read-only.
//!
//! With `[repair] attempts = 1`, one failure (on propose, or after an apply whose previous bytes were restored) earns
//! one more model call with the previous edit and the failing output; never more than one per task (the budget is
//! spent when that call is made, whatever it answers), and the result is always a proposal to approve, never a write.

mod apply;
mod delegate;
mod pin_bounds;
mod propose;
mod verdicts;

pub(crate) use propose::check_copy;

use std::time::Instant;

pub use apply::{ApplyRequest, ApplyResult, apply_bytes, apply_bytes_watched};
pub use delegate::{DelegateRequest, DelegateResult, MAX_DELEGATE_OUTPUT_TOKENS};
pub use propose::{CandidatesReport, PROBE_RUNS, at_once};
pub use propose::{FileStatus, FileSummary, ProposeRequest, ProposeResult};

use crate::error::{Error, Result};
use crate::ledger;
use crate::policy::{self, LoadedPolicy};
use crate::proposal::ProposalStore;
use crate::provider::{self, ChatRequest, Provider, Usage, Watch, window};
use crate::txn::PatchLimits;
use crate::workspace::{self, Workspace};

/// The service both transports share: it holds the proposals made through it.
#[derive(Debug, Default)]
pub struct Service {
    store: ProposalStore<propose::Origin>,
}

/// How one call is made: a provider override (the CLI's `--provider`), progress reporting and cancellation.
#[derive(Clone, Default)]
pub struct Call {
    /// Talk to this provider (with its defaults) instead of the policy's.
    pub provider: Option<policy::ProviderKind>,
    /// Progress reporting and cancellation.
    pub watch: Watch,
    /// Keep this call out of the ledger: `calibrate` measures in throwaway workspaces, and its proposals are not
    /// work that `stats` should count.
    pub unrecorded: bool,
}

impl Call {
    /// Whether this call goes into the ledger.
    fn record(&self) -> Record {
        if self.unrecorded {
            Record::Skip
        } else {
            Record::Ledger
        }
    }

    fn policy_for(&self, policy: &policy::Policy) -> policy::Policy {
        match self.provider {
            Some(kind) => policy.clone().with_provider(kind),
            None => policy.clone(),
        }
    }
}

impl Service {
    /// A service holding no proposal.
    pub fn new() -> Service {
        Service::default()
    }
}

/// A rough token count of `text`: 3 bytes per token, on the safe side for code.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

/// The tokens `chat`'s prompt is estimated at: its messages and its JSON schema ([`estimate_tokens`]).
fn prompt_estimate(chat: &ChatRequest) -> u64 {
    let sent: u64 = chat
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content))
        .sum();
    sent + chat
        .json_schema
        .as_ref()
        .map(|s| estimate_tokens(&s.to_string()))
        .unwrap_or(0)
}

/// What one model call answered, and how long it took.
#[derive(Clone)]
struct Answer {
    provider: String,
    completion: provider::Completion,
    ms: u64,
}

/// The stage every model call goes through: check that `chat` fits the context window, send it, and refuse an answer
/// that echoed the key, dropped part of the prompt or was cut off. Tokens spent are recorded in `entry` even when the
/// answer is refused afterwards; the ledger keeps the configured model name, never what the server echoed.
fn ask(
    policy: &policy::Policy,
    provider: &dyn Provider,
    chat: &ChatRequest,
    call: &Call,
    entry: &mut ledger::Entry,
) -> Result<Answer> {
    let sent: u64 = chat
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content))
        .sum();
    let prompt_tokens = prompt_estimate(chat);
    let window = window::for_model(policy, &chat.model);
    if prompt_tokens + u64::from(chat.max_tokens) > window.tokens {
        return Err(Error::InvalidArgument(format!(
            "the prompt is about {prompt_tokens} tokens and the answer may take {}: over the context window of \
             {window}; select fewer or smaller files, or a line range of a large file (PATH:START-END) (a model \
             that silently drops context returns confident, destructive edits)",
            chat.max_tokens
        )));
    }
    let start = Instant::now();
    entry.provider = provider.name().to_string();
    entry.model = chat.model.clone();
    entry.priced(policy);
    // One redaction point for everything a provider reports: server text may be quoted in any error.
    let completion = provider
        .complete(chat, &call.watch)
        .map_err(|e| e.redacted(&policy.secret()))?;
    let ms = start.elapsed().as_millis() as u64;
    entry.usage = completion.usage;
    if let Some(place) = completion.key_echoed {
        return Err(Error::Provider(format!(
            "the model server sent the provider key from {} back (in {place}); the answer was refused unread and \
             nothing was proposed. Check that [provider] base_url is the provider you mean, and rotate the key if \
             that server is not yours",
            policy.api_key_env().unwrap_or_default()
        )));
    }
    // A server that counts only the prompt tokens it did not take from its cache still read the cached ones.
    let read = completion.usage.input_tokens + completion.cached_input_tokens;
    if let Some(e) = window::dropped_prompt(sent, read) {
        return Err(e);
    }
    if completion.finish_reason.as_deref() == Some("length") {
        return Err(Error::ModelAnswer(format!(
            "the answer was cut off at {} output tokens ({} used), so it cannot be trusted; raise the limit or \
             narrow the task",
            chat.max_tokens, completion.usage.output_tokens
        )));
    }
    Ok(Answer {
        provider: provider.name().to_string(),
        completion,
        ms,
    })
}

fn open_workspace(root_arg: &str) -> Result<(Workspace, LoadedPolicy)> {
    let root = workspace::root_from_arg(root_arg)?;
    let loaded = policy::load(&root)?;
    let ws = Workspace::new(root, &loaded.policy.paths, loaded.path.as_deref())?;
    // Files an interrupted apply is putting back are read once they are back.
    if let Some(state) = ledger::state_dir() {
        crate::txn::wait_for_recovery(&state, ws.root(), "request")?;
    }
    Ok((ws, loaded))
}

fn patch_limits(p: &policy::Policy) -> PatchLimits {
    PatchLimits {
        max_patch_bytes: p.limits.max_patch_bytes,
        max_files: p.limits.max_files_per_patch,
        max_hunks: p.limits.max_hunks_per_patch,
        allow_delete: p.paths.allow_delete,
        allow_move: p.paths.allow_move,
    }
}

fn add_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// Whether a call's entry is written to the ledger.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Record {
    /// Into the ledger, for `stats`.
    Ledger,
    /// Kept out of it ([`Call::unrecorded`]).
    Skip,
}

/// Record one call (as `record` says): its duration, and its refusal's kind when it was refused.
fn logged<T>(
    kind: &str,
    workspace_root: &str,
    record: Record,
    f: impl FnOnce(&mut ledger::Entry) -> Result<T>,
    digest: impl Fn(&T) -> Option<String>,
) -> Result<T> {
    let started = Instant::now();
    let mut entry = ledger::Entry::new(kind, workspace_root, started);
    let result = f(&mut entry);
    entry.duration_ms = started.elapsed().as_millis() as u64;
    match &result {
        Ok(r) => entry.digest = digest(r).or(entry.digest.take()),
        Err(e) => entry.outcome = format!("refused:{}", e.kind()),
    }
    if record == Record::Ledger {
        ledger::record(&entry);
    }
    result
}
