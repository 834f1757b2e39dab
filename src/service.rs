//! The service: propose and apply, orchestrated once for both transports (MCP and CLI).
//!
//! It checks the request, reads the selected files through [`scope`], asks the [`provider`], turns the answer into a
//! canonical patch with the pure [`patch`] engine, dry-runs it in memory with the transaction's own parser, limits and
//! applier, and holds it in the [`proposal`] store. Applying goes through [`txn::apply`] alone.
//!
//! With `[validation] on_propose`, a proposal is also applied in a [`sandbox`] copy of the workspace (through the
//! same transaction) and the validation commands run there. With `[repair] attempts = 1`, one failure (on propose,
//! or after an apply whose previous bytes were restored) earns one more model call with the previous edit and the
//! failing output; never more than one per task, and the result is always a proposal to approve, never a write.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checks::{self, CheckResult};
use crate::config::{self, LoadedPolicy};
use crate::confine;
use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::ledger;
use crate::patch::{self, HunkReport, PreImage};
use crate::prompt::{self, TaskSpec};
use crate::proposal::{self, ProposalStore};
use crate::provider::window::{self, ContextWindow};
use crate::provider::{self, ChatRequest, Message, Usage, Watch};
use crate::sandbox;
use crate::scope::{self, OnDisk, Workspace};
use crate::txn::{self, PatchLimits};

/// Limits on the request itself.
pub const MAX_ACCEPTANCE_CRITERIA: usize = 20;
pub const MAX_CONSTRAINTS: usize = 20;
pub const MAX_PLAN_STEPS: usize = 30;

/// Input of `propose_patch` / `local-llm-worker propose`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeRequest {
    /// Absolute path of the project; it must hold local-llm-worker.toml (or lie under LOCAL_LLM_ALLOWED_ROOTS).
    pub workspace_root: String,
    /// What to change, self-contained: the model sees nothing but this request and the selected files.
    pub task: String,
    /// 1-20 checkable statements the result must satisfy.
    pub acceptance_criteria: Vec<String>,
    /// 0-20 things the change must not do.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// 0-30 steps; required when complexity is "medium".
    #[serde(default)]
    pub plan: Vec<String>,
    /// "low" or "medium". High-complexity work stays with the primary agent.
    pub complexity: String,
    /// Workspace-relative paths the model sees and may edit (a path that does not exist yet may be created).
    /// `PATH:START-END` (1-based, inclusive line numbers, e.g. "src/big.py:120-180") sends only those lines, with 3
    /// lines of context each side, and the edit must stay inside them: use it for large files. Repeat a path for
    /// several ranges (overlapping ones merge). A file whose name really is "x:1-2" is that file.
    pub files: Vec<String>,
    /// Optional extra context for the model (conventions, related signatures...).
    #[serde(default)]
    pub context: Option<String>,
    /// Optional model: the alias "flash" or "pro", or a full model id (checked against [models] active).
    /// Low complexity always uses flash.
    #[serde(default)]
    pub model: Option<String>,
}

/// How one file changes in a proposal.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileSummary {
    pub path: String,
    /// "modified" or "created".
    pub status: String,
    pub added_lines: usize,
    pub removed_lines: usize,
    /// Where each hunk landed and which tolerance located it.
    pub hunks: Vec<HunkReport>,
}

/// Output of `propose_patch`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProposeResult {
    /// Opaque id to pass to apply_patch with the digest.
    pub proposal_id: String,
    /// SHA-256 (hex) of exactly the bytes of `patch`.
    pub digest: String,
    /// Canonical git-style unified diff; `git apply --check` accepts it on the current files.
    pub patch: String,
    pub files: Vec<FileSummary>,
    /// The patch was applied to in-memory copies of the touched files (with the apply's own parser and applier) and
    /// gave exactly the intended post-images.
    pub dry_run_ok: bool,
    /// The validation commands that apply_patch will run after writing (from the policy file).
    pub validation_commands: Vec<String>,
    /// With `[validation] on_propose = true`: the commands' results on this patch in a sandbox copy of the workspace
    /// (stopping at the first failure). Empty when they did not run.
    pub validation: Vec<CheckResult>,
    /// Whether those commands passed; null when they did not run. False: the patch is returned anyway, with the
    /// output above, for you to decide (after the one repair round, when `[repair] attempts = 1`).
    pub validation_passed: Option<bool>,
    /// Whether this patch came from the one repair round (the model was shown a previous edit and its failing
    /// validation output). The round is never repeated.
    pub repaired: bool,
    /// When the one repair round was made on propose: how the first answer failed validation (the command, how it
    /// ended, its output), which the repair round was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_reason: Option<String>,
    /// When a repair round was tried but gave no usable edit: why (the patch returned is then the unrepaired one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_error: Option<String>,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub elapsed_ms: u64,
    /// Time spent waiting for the model, included in elapsed_ms.
    pub model_ms: u64,
    /// Unix time (seconds) after which the proposal can no longer be applied.
    pub expires_at_unix: u64,
    /// Bytes of the selected files the worker read and sent (the primary did not have to read them); for a file
    /// narrowed to line ranges, the bytes of the lines shown.
    pub bytes_read: u64,
    /// The context window the request was checked against, and where that figure came from.
    pub context_window: ContextWindow,
}

/// Input of `apply_patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// The proposal_id returned by propose_patch.
    pub proposal_id: String,
    /// The digest returned with it: you approve exactly those patch bytes.
    pub digest: String,
}

/// Output of `apply_patch` and `local-llm-worker apply`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApplyResult {
    pub applied: bool,
    pub digest: String,
    pub files_written: Vec<String>,
    pub validation: Vec<CheckResult>,
    pub elapsed_ms: u64,
    /// Applying calls no model: always zero.
    pub usage: Usage,
}

/// How one call is made: a provider override (the CLI's `--provider`), progress reporting and cancellation.
#[derive(Clone, Default)]
pub struct Call {
    pub provider: Option<crate::config::ProviderKind>,
    pub watch: Watch,
}

impl Call {
    fn policy_for(&self, policy: &config::Policy) -> config::Policy {
        match self.provider {
            Some(kind) => policy.clone().with_provider(kind),
            None => policy.clone(),
        }
    }
}

/// A rough token count of `text`: 3 bytes per token, on the safe side for code.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

/// Send `chat` after checking it fits the context window; refuse a cut-off answer. Returns (provider name,
/// completion, milliseconds waited).
fn ask(
    policy: &config::Policy,
    chat: &ChatRequest,
    call: &Call,
    entry: &mut ledger::Entry,
) -> Result<(String, provider::Completion, u64)> {
    let prompt_tokens: u64 = chat
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content))
        .sum::<u64>()
        + chat
            .json_schema
            .as_ref()
            .map(|s| estimate_tokens(&s.to_string()))
            .unwrap_or(0);
    let window = window::for_model(policy, &chat.model);
    if prompt_tokens + u64::from(chat.max_tokens) > window.tokens {
        return Err(Error::InvalidArgument(format!(
            "the prompt is about {prompt_tokens} tokens and the answer may take {}: over the context window of \
             {window}; select fewer or smaller files, or a line range of a large file (PATH:START-END) (a model \
             that silently drops context returns confident, destructive edits)",
            chat.max_tokens
        )));
    }
    let provider = provider::for_policy(policy)?;
    let start = Instant::now();
    entry.provider = provider.name().to_string();
    entry.model = chat.model.clone();
    // One redaction point for everything a provider reports: server text may be quoted in any error.
    let completion = provider
        .complete(chat, &call.watch)
        .map_err(|e| e.redacted(&policy.secret()))?;
    let ms = start.elapsed().as_millis() as u64;
    // Tokens spent are recorded even when the answer is refused afterwards; the ledger keeps the configured model
    // name, never what the server echoed.
    entry.usage = completion.usage;
    if let Some(place) = completion.key_echoed {
        return Err(Error::Provider(format!(
            "the model server sent the provider key from {} back (in {place}); the answer was refused unread and \
             nothing was proposed. Check that [provider] base_url is the provider you mean, and rotate the key if \
             that server is not yours",
            policy.api_key_env().unwrap_or_default()
        )));
    }
    let sent: u64 = chat
        .messages
        .iter()
        .map(|m| estimate_tokens(&m.content))
        .sum();
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
    Ok((provider.name().to_string(), completion, ms))
}

/// The service both transports share.
#[derive(Debug, Default)]
pub struct Service {
    store: ProposalStore,
    /// The request behind each held proposal, for the repair round at apply time.
    origins: Mutex<HashMap<String, Origin>>,
}

/// What a held proposal was made from.
#[derive(Debug, Clone)]
struct Origin {
    req: ProposeRequest,
    provider: Option<config::ProviderKind>,
    /// Repair rounds left for this task: 0 once one was used (on propose or at apply time).
    repairs_left: u8,
    expires: Instant,
}

/// A previous edit and how it failed validation, for the repair round.
struct Failure<'a> {
    patch: &'a str,
    report: &'a str,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

fn check_list(name: &str, items: &[String], min: usize, max: usize) -> Result<()> {
    if items.len() < min {
        return Err(invalid(format!(
            "{name} needs at least {min} item(s): say how the result will be checked"
        )));
    }
    if items.len() > max {
        return Err(invalid(format!(
            "{name} has {} items; at most {max}",
            items.len()
        )));
    }
    if let Some(i) = items.iter().position(|s| s.trim().is_empty()) {
        return Err(invalid(format!("{name} item {} is empty", i + 1)));
    }
    Ok(())
}

/// Check a propose request's own fields; returns whether it is medium complexity.
pub fn check_request(r: &ProposeRequest) -> Result<bool> {
    if r.task.trim().is_empty() {
        return Err(invalid(
            "task is empty; describe the change in a self-contained way",
        ));
    }
    check_list(
        "acceptance_criteria",
        &r.acceptance_criteria,
        1,
        MAX_ACCEPTANCE_CRITERIA,
    )?;
    check_list("constraints", &r.constraints, 0, MAX_CONSTRAINTS)?;
    check_list("plan", &r.plan, 0, MAX_PLAN_STEPS)?;
    let medium = match r.complexity.trim() {
        "low" => false,
        "medium" => true,
        "high" => {
            return Err(invalid(
                "complexity \"high\" cannot be delegated: keep high-complexity work with the primary agent, \
                 or split it into low/medium steps",
            ));
        }
        other => {
            return Err(invalid(format!(
                "complexity {other:?} is not one of \"low\", \"medium\""
            )));
        }
    };
    if medium && r.plan.is_empty() {
        return Err(invalid(
            "complexity \"medium\" needs a plan: give the steps the model should follow",
        ));
    }
    if r.files.is_empty() {
        return Err(invalid(
            "files is empty; select the file(s) the model should see and edit",
        ));
    }
    Ok(medium)
}

fn open_workspace(root_arg: &str) -> Result<(Workspace, LoadedPolicy)> {
    let root = scope::root_from_arg(root_arg)?;
    let loaded = config::load(&root)?;
    let ws = Workspace::new(root, &loaded.policy.paths, loaded.path.as_deref())?;
    Ok((ws, loaded))
}

fn patch_limits(p: &config::Policy) -> PatchLimits {
    PatchLimits {
        max_patch_bytes: p.limits.max_patch_bytes,
        max_files: p.limits.max_files_per_patch,
        max_hunks: p.limits.max_hunks_per_patch,
    }
}

impl Service {
    pub fn new() -> Service {
        Service::default()
    }

    /// Propose a patch: never writes to the workspace.
    pub fn propose(&self, req: &ProposeRequest, call: &Call) -> Result<ProposeResult> {
        self.propose_logged(req, call, None)
    }

    fn propose_logged(
        &self,
        req: &ProposeRequest,
        call: &Call,
        repair_of: Option<&Failure<'_>>,
    ) -> Result<ProposeResult> {
        let started = Instant::now();
        let mut entry = ledger::Entry::new("propose", &req.workspace_root, started);
        let result = self.propose_inner(req, call, &mut entry, repair_of);
        entry.duration_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(r) => entry.digest = Some(r.digest.clone()),
            Err(e) => entry.outcome = format!("refused:{}", e.kind()),
        }
        ledger::record(&entry);
        result
    }

    /// Make a proposal. `repair_of`: the apply-time repair round (the first model call already shows the failed
    /// edit, and no further round follows).
    fn propose_inner(
        &self,
        req: &ProposeRequest,
        call: &Call,
        entry: &mut ledger::Entry,
        repair_of: Option<&Failure<'_>>,
    ) -> Result<ProposeResult> {
        let started = Instant::now();
        let medium = check_request(req)?;
        let (ws, loaded) = open_workspace(&req.workspace_root)?;
        let policy = &call.policy_for(&loaded.policy);
        let model = policy.route(medium, req.model.as_deref())?;
        if policy.validation.on_propose && !policy.validation.commands.is_empty() {
            // Before any model call: validation on propose runs the model's code, confined or (when the policy
            // says so) not at all confined.
            confine::check_available(policy.validation.isolation)?;
        }
        let selection = ws.read_selection(&req.files, &policy.limits)?;
        let bytes_read = selection.bytes_shown();
        let (pre_images, focus) = (&selection.files, &selection.focus);
        let context_window = window::for_model(policy, &model);

        let mut format = policy.answer_format();
        if format == patch::reader::AnswerFormat::WholeFile && !focus.is_empty() {
            // A file shown in part cannot be rewritten whole.
            format = patch::reader::AnswerFormat::Udiff;
        }
        let schema = match format {
            patch::reader::AnswerFormat::Json => {
                let s = prompt::edit_schema_within(pre_images, focus);
                if s.is_none() {
                    // Only new files are selected: a line-replacing JSON edit cannot create them.
                    format = patch::reader::AnswerFormat::Udiff;
                }
                s
            }
            _ => None,
        };
        let spec = TaskSpec {
            task: &req.task,
            acceptance_criteria: &req.acceptance_criteria,
            constraints: &req.constraints,
            plan: &req.plan,
            context: req.context.as_deref(),
        };
        let messages = prompt::messages(&spec, pre_images, focus, format);
        let chat = |messages: Vec<Message>| ChatRequest {
            model: model.clone(),
            messages,
            max_tokens: policy.limits.max_output_tokens,
            temperature: policy.provider.temperature,
            reasoning: policy.provider.reasoning_effort,
            json_schema: schema.clone(),
        };
        entry.bytes_read = bytes_read;
        let first = match repair_of {
            Some(f) => prompt::repair_messages(&messages, f.patch, f.report),
            None => messages.clone(),
        };
        let (provider_name, completion, mut model_ms) = ask(policy, &chat(first), call, entry)?;
        let mut usage = completion.usage;
        let mut served_by = completion.model.clone();
        let mut cand = candidate(&completion.content, format, &selection, policy, &ws)?;
        let mut repaired = repair_of.is_some();
        // The task's one repair round is spent when its model call is made, whatever the answer.
        let mut repair_spent = repair_of.is_some();
        let mut repair_error = None;
        let mut repair_reason = None;

        let commands = &policy.validation.commands;
        let mut validation = Vec::new();
        let mut validation_passed = None;
        if policy.validation.on_propose && !commands.is_empty() {
            validation =
                validate_in_sandbox(&ws, policy, pre_images, &cand.patch_bytes, &call.watch)?;
            let mut passed = validation.iter().all(|r| r.passed);
            if !passed && repair_of.is_none() && policy.repair.attempts == 1 {
                // The one repair round: the previous edit and its failing output, one more model call.
                let report = validation
                    .iter()
                    .find(|r| !r.passed)
                    .map(checks::failure_report)
                    .unwrap_or_default();
                let msgs = prompt::repair_messages(&messages, &cand.patch_text, &report);
                repair_reason = Some(prompt::tail(&report, prompt::REPAIR_OUTPUT_BYTES));
                let mut second = ledger::Entry::new("propose", &req.workspace_root, started);
                repair_spent = true;
                let attempt = ask(policy, &chat(msgs), call, &mut second).and_then(|(_, c, ms)| {
                    model_ms += ms;
                    candidate(&c.content, format, &selection, policy, &ws).map(|k| (k, c.model))
                });
                // Tokens spent count even when the repair answer is refused.
                usage = add_usage(usage, second.usage);
                entry.usage = usage;
                match attempt {
                    Ok((c, m)) => {
                        cand = c;
                        served_by = m;
                        repaired = true;
                        validation = validate_in_sandbox(
                            &ws,
                            policy,
                            pre_images,
                            &cand.patch_bytes,
                            &call.watch,
                        )?;
                        passed = validation.iter().all(|r| r.passed);
                    }
                    Err(Error::Cancelled) => return Err(Error::Cancelled),
                    Err(e) => repair_error = Some(e.to_string()),
                }
            }
            validation_passed = Some(passed);
        }
        entry.usage = usage;

        let digest = sha256_hex(&cand.patch_bytes);
        let ttl = Duration::from_secs(policy.limits.proposal_ttl_secs);
        let files = cand
            .changes
            .iter()
            .map(|c| FileSummary {
                path: c.path.clone(),
                status: if c.pre.is_some() {
                    "modified"
                } else {
                    "created"
                }
                .into(),
                added_lines: c.hunks.iter().map(|h| h.added).sum(),
                removed_lines: c.hunks.iter().map(|h| h.removed).sum(),
                hunks: c.hunks.clone(),
            })
            .collect();
        let proposal_id = self.store.insert(
            ws.root().to_path_buf(),
            cand.patch_bytes.clone(),
            digest.clone(),
            ttl,
        );
        self.remember(
            &proposal_id,
            Origin {
                req: req.clone(),
                provider: call.provider,
                repairs_left: if repair_spent { 0 } else { 1 },
                expires: Instant::now() + ttl,
            },
        );
        Ok(ProposeResult {
            proposal_id,
            digest,
            patch: cand.patch_text,
            files,
            dry_run_ok: true,
            validation_commands: commands.clone(),
            validation,
            validation_passed,
            repaired,
            repair_reason,
            repair_error,
            provider: provider_name,
            model: served_by,
            usage,
            elapsed_ms: started.elapsed().as_millis() as u64,
            model_ms,
            bytes_read,
            context_window,
            expires_at_unix: (SystemTime::now() + ttl)
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        })
    }

    /// Keep what a held proposal was made from (bounded like the proposal store).
    fn remember(&self, id: &str, origin: Origin) {
        let mut map = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        map.retain(|_, o| o.expires > now);
        while map.len() >= proposal::MAX_HELD {
            let oldest = map
                .iter()
                .min_by_key(|(_, o)| o.expires)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => map.remove(&k),
                None => break,
            };
        }
        map.insert(id.to_string(), origin);
    }

    /// Take the origin of a proposal when it still has its repair round.
    fn take_repair(&self, id: &str) -> Option<Origin> {
        let mut map = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        let o = map.get_mut(id)?;
        if o.repairs_left == 0 {
            return None;
        }
        o.repairs_left = 0;
        Some(o.clone())
    }

    /// Apply a held proposal, only with its digest. When validation fails after the approved bytes were written, the
    /// previous bytes are restored; then, when the policy has `[repair] attempts = 1` and the proposal's task has its
    /// repair round left, one model call with the failing output makes a NEW proposal (new id, new digest, a patch
    /// against the restored files), held for its own approval and returned inside the refusal. The original stays
    /// used.
    pub fn apply_proposal(&self, req: &ApplyRequest, call: &Call) -> Result<ApplyResult> {
        let id = req.proposal_id.trim();
        if id.is_empty() {
            return Err(invalid(
                "proposal_id is empty; pass the id propose_patch returned",
            ));
        }
        if req.digest.trim().is_empty() {
            return Err(invalid(
                "digest is empty; pass the digest propose_patch returned with the proposal",
            ));
        }
        let claimed = self.store.claim(id, &req.digest)?;
        let root = claimed.root.to_string_lossy().into_owned();
        let mut result = apply_bytes_watched(&root, &claimed.patch, &req.digest, &call.watch);
        if matches!(result, Err(Error::ValidationFailed(_))) && call.watch.is_cancelled() {
            // The checks were stopped by the cancellation and the previous bytes are back: nothing changed.
            result = Err(Error::Cancelled);
        }
        let used = match &result {
            Ok(_) => Some("applied"),
            Err(Error::ValidationFailed(_)) => Some("applied, validation failed, rolled back"),
            Err(_) => None,
        };
        self.store.finish(id, used);
        match result {
            Err(Error::ValidationFailed(report)) => {
                let note = self.repair_after_apply(id, &claimed, &report, call);
                Err(Error::ValidationFailed(match note {
                    Some(note) => format!("{report}\n\n{note}"),
                    None => report,
                }))
            }
            other => other,
        }
    }

    /// The apply-time repair round; returns the text to add to the refusal, `None` when no round is due.
    fn repair_after_apply(
        &self,
        id: &str,
        claimed: &proposal::Claimed,
        report: &str,
        call: &Call,
    ) -> Option<String> {
        let attempts = config::load(&claimed.root)
            .map(|l| l.policy.repair.attempts)
            .unwrap_or(0);
        if attempts != 1 {
            return None;
        }
        let origin = self.take_repair(id)?;
        let patch_text = String::from_utf8_lossy(&claimed.patch).into_owned();
        let failure = Failure {
            patch: &patch_text,
            report,
        };
        let repair_call = Call {
            provider: origin.provider,
            watch: call.watch.clone(),
        };
        Some(
            match self.propose_logged(&origin.req, &repair_call, Some(&failure)) {
                Ok(r) => format!(
                    "REPAIR PROPOSAL (the one repair round, built from this failure; NOT applied: review the patch, \
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
                Err(e) => {
                    format!("No repair proposal could be made (the one repair round is used): {e}")
                }
            },
        )
    }
}

/// Apply exact patch bytes (from a proposal or a saved file) whose digest the caller approved.
pub fn apply_bytes(workspace_root: &str, patch_bytes: &[u8], digest: &str) -> Result<ApplyResult> {
    apply_bytes_watched(workspace_root, patch_bytes, digest, &Watch::default())
}

/// [`apply_bytes`] whose validation commands are killed when `watch` is cancelled (the previous bytes are then
/// restored as for any failed check).
pub fn apply_bytes_watched(
    workspace_root: &str,
    patch_bytes: &[u8],
    digest: &str,
    watch: &Watch,
) -> Result<ApplyResult> {
    let started = Instant::now();
    let result = apply_bytes_inner(workspace_root, patch_bytes, digest, watch);
    let mut entry = ledger::Entry::new("apply", workspace_root, started);
    entry.digest = Some(digest.trim().to_string());
    if let Err(e) = &result {
        entry.outcome = format!("refused:{}", e.kind());
    }
    ledger::record(&entry);
    result
}

fn apply_bytes_inner(
    workspace_root: &str,
    patch_bytes: &[u8],
    digest: &str,
    watch: &Watch,
) -> Result<ApplyResult> {
    let started = Instant::now();
    let actual = sha256_hex(patch_bytes);
    if !crate::digest::digests_equal(&actual, digest.trim()) {
        return Err(Error::Digest(format!(
            "the patch bytes do not match the approved digest {}: the patch file was altered, or the digest belongs to \
             another patch; review the patch and use the digest propose printed with it",
            digest.trim()
        )));
    }
    let (ws, loaded) = open_workspace(workspace_root)?;
    let policy = &loaded.policy;
    let commands = policy.validation.commands.clone();
    let state = ledger::state_dir();
    let applied = txn::apply(
        &ws,
        patch_bytes,
        patch_limits(policy),
        state.as_deref(),
        |root: &Path| {
            if commands.is_empty() {
                return Ok(Vec::new());
            }
            // Only when there is a check to run: finding and probing bubblewrap costs a few milliseconds.
            let launch = confine::for_apply(root, &policy.check_env());
            let secret = policy.secret();
            let run = checks::Run {
                launch: &launch,
                timeout: Duration::from_secs(policy.validation.timeout_secs),
                secret: &secret,
            };
            let results = checks::run_all(&commands, root, &run, watch);
            match results.iter().find(|r| !r.passed) {
                None if results.len() == commands.len() => Ok(results),
                None => {
                    Err("the call was cancelled before every validation command ran".to_string())
                }
                Some(f) => Err(checks::failure_report(f)),
            }
        },
    )?;
    Ok(ApplyResult {
        applied: true,
        digest: actual,
        files_written: applied.files,
        validation: applied.validation,
        elapsed_ms: started.elapsed().as_millis() as u64,
        usage: Usage::default(),
    })
}

fn add_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
    }
}

/// One model answer turned into a checked, dry-run canonical patch.
struct Candidate {
    changes: Vec<patch::FileChange>,
    patch_bytes: Vec<u8>,
    patch_text: String,
}

fn candidate(
    answer: &str,
    format: patch::reader::AnswerFormat,
    selection: &scope::Selection,
    policy: &config::Policy,
    ws: &Workspace,
) -> Result<Candidate> {
    let pre_images = &selection.files;
    let changes = patch::changes_from_answer_within(answer, format, pre_images, &selection.focus)?;
    if changes.len() > policy.limits.max_files_per_patch {
        return Err(Error::ModelAnswer(format!(
            "the answer edits {} files, over [limits] max_files_per_patch = {}",
            changes.len(),
            policy.limits.max_files_per_patch
        )));
    }
    let patch_bytes = patch::canonical::render(&changes);
    dry_run(ws, policy, pre_images, &changes, &patch_bytes)?;
    let patch_text = String::from_utf8(patch_bytes.clone())
        .map_err(|_| Error::Patch("the rendered patch is not UTF-8".into()))?;
    Ok(Candidate {
        changes,
        patch_bytes,
        patch_text,
    })
}

/// Validation on propose: copy the workspace into a [`sandbox`], put the selected files there exactly as the patch
/// was made against them, apply the patch there through the same transaction as a real apply, and run the
/// validation commands there, confined around the copy ([`confine::for_proposal`]: no network, no view of the
/// workspace, the worker or the home folder; an allowlisted environment). The workspace is only read; the copy is removed when
/// this returns, whatever happened.
fn validate_in_sandbox(
    ws: &Workspace,
    policy: &config::Policy,
    pre_images: &BTreeMap<String, Option<PreImage>>,
    patch_bytes: &[u8],
    watch: &Watch,
) -> Result<Vec<CheckResult>> {
    use std::os::unix::fs::PermissionsExt;
    // As root, a confined check runs as an unprivileged user, who must own the copy.
    let owner = match policy.validation.isolation {
        confine::Isolation::Confined => confine::sandbox_owner(),
        confine::Isolation::Copy => None,
    };
    let sb = sandbox::create(
        ws.root(),
        &policy.validation.sandbox_skip,
        &|rel| ws.is_secret(rel),
        owner,
        watch,
    )?;
    let sws = Workspace::new(sb.root().to_path_buf(), &policy.paths, None)?;
    let io = |e: std::io::Error| Error::io_message(format!("validation sandbox: {e}"));
    // The copy may lack a selected file (ignored, skipped) or hold a newer one: the patch is checked against the
    // bytes the model saw.
    for (rel, pre) in pre_images {
        match (sws.resolve(rel)?, pre) {
            (OnDisk::File { abs, .. }, Some(p)) => {
                if std::fs::read(&abs).map_err(io)? != p.text.as_bytes() {
                    std::fs::write(&abs, p.text.as_bytes()).map_err(io)?;
                }
            }
            (OnDisk::Absent { abs }, Some(p)) => {
                if let Some(d) = abs.parent() {
                    std::fs::create_dir_all(d).map_err(io)?;
                }
                std::fs::write(&abs, p.text.as_bytes()).map_err(io)?;
                let mode = if p.mode == patch::MODE_EXECUTABLE {
                    0o755
                } else {
                    0o644
                };
                std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(mode))
                    .map_err(io)?;
            }
            (OnDisk::File { abs, .. }, None) => std::fs::remove_file(&abs).map_err(io)?,
            (OnDisk::Absent { .. }, None) => {}
        }
    }
    let launch = confine::for_proposal(
        policy.validation.isolation,
        sb.root(),
        &confine::Private {
            workspace: ws.root().to_path_buf(),
            state: ledger::state_dir(),
        },
        &policy.validation.sandbox_read,
        &policy.check_env(),
    )?;
    let secret = policy.secret();
    let run = checks::Run {
        launch: &launch,
        timeout: Duration::from_secs(policy.validation.timeout_secs),
        secret: &secret,
    };
    let commands = &policy.validation.commands;
    let touched: Vec<&str> = pre_images.keys().map(String::as_str).collect();
    let applied = txn::apply_throwaway(&sws, patch_bytes, patch_limits(policy), |root: &Path| {
        if let Some(uid) = owner {
            sandbox::hand_over(root, &touched, uid);
        }
        Ok::<_, String>(checks::run_all(commands, root, &run, watch))
    })?;
    if watch.is_cancelled() {
        return Err(Error::Cancelled);
    }
    Ok(applied.validation)
}

/// The dry run, in memory: parse the canonical patch with the transaction's strict parser and limits, check its paths
/// against the policy, apply it to copies of the pre-images already read with the same applier (pre- and post-image
/// blob ids included), and check that every file then holds exactly the intended post-image. Nothing touches a
/// disk; the transaction repeats all of it against the files themselves at apply time.
fn dry_run(
    ws: &Workspace,
    policy: &config::Policy,
    pre_images: &BTreeMap<String, Option<PreImage>>,
    changes: &[patch::FileChange],
    patch_bytes: &[u8],
) -> Result<()> {
    let bug =
        |what: String| Error::Patch(format!("dry run: {what}; this is a bug, please report it"));
    let files = txn::parse_within(patch_bytes, patch_limits(policy))?;
    if files.len() != changes.len() {
        return Err(bug(format!(
            "the canonical patch has {} files for {} changes",
            files.len(),
            changes.len()
        )));
    }
    for f in &files {
        ws.check_path(&f.path)?;
        let change = changes.iter().find(|c| c.path == f.path).ok_or_else(|| {
            bug(format!(
                "the canonical patch names {}, which no change does",
                f.path
            ))
        })?;
        let pre = pre_images.get(&f.path).and_then(|p| p.as_ref());
        if let Some(pre) = pre
            && !f.creates()
            && pre.mode != f.mode
        {
            return Err(bug(format!(
                "the canonical patch gives {} another mode",
                f.path
            )));
        }
        let post = patch::canonical::apply_file(f, pre.map(|p| p.text.as_bytes()))?;
        if post != change.post {
            return Err(bug(format!(
                "the canonical patch does not reproduce the intended {}",
                f.path
            )));
        }
    }
    Ok(())
}

/// The kinds of read-only work `delegate_task` takes.
pub const TASK_KINDS: &[&str] = &[
    "summarize",
    "extract",
    "classify",
    "routine_transform",
    "draft_documentation",
    "draft_tests",
    "routine_code_draft",
    "routine_review",
];

/// The most output tokens a delegation may ask for.
pub const MAX_DELEGATE_OUTPUT_TOKENS: u32 = 16_000;

/// Input of `delegate_task` / `local-llm-worker delegate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateRequest {
    /// Absolute path of the project; it must hold local-llm-worker.toml (or lie under LOCAL_LLM_ALLOWED_ROOTS).
    pub workspace_root: String,
    /// summarize | extract | classify | routine_transform | draft_documentation | draft_tests |
    /// routine_code_draft | routine_review
    pub task_kind: String,
    /// What to do, self-contained: the model sees nothing but this request and the selected files.
    pub task: String,
    /// 1-20 checkable statements the result must satisfy.
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Required when complexity is "medium".
    #[serde(default)]
    pub plan: Vec<String>,
    /// "low" or "medium".
    pub complexity: String,
    /// Workspace-relative files the model reads (may be empty). `PATH:START-END` (1-based, inclusive line numbers,
    /// e.g. "src/big.py:120-180") sends only those lines, with 3 lines of context each side; repeat a path for
    /// several ranges.
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub context: Option<String>,
    /// text (default) | markdown | json (checked to parse) | patch (text for you to read; never applied)
    #[serde(default)]
    pub output_format: Option<String>,
    /// Answer budget, at most 16000 (default: the policy's max_output_tokens).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Optional model: "flash", "pro" or a full id. Low complexity always uses flash.
    #[serde(default)]
    pub model: Option<String>,
}

/// Output of `delegate_task`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DelegateResult {
    /// The model's answer: an untrusted draft to verify.
    pub content: String,
    pub output_format: String,
    pub files_read: Vec<String>,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub elapsed_ms: u64,
    pub model_ms: u64,
    /// The context window the request was checked against, and where that figure came from.
    pub context_window: ContextWindow,
}

impl Service {
    /// Read-only delegation of non-patch work. Never writes to the workspace.
    pub fn delegate(&self, req: &DelegateRequest, call: &Call) -> Result<DelegateResult> {
        let started = Instant::now();
        let mut entry = ledger::Entry::new("delegate", &req.workspace_root, started);
        let result = delegate_inner(req, call, &mut entry);
        entry.duration_ms = started.elapsed().as_millis() as u64;
        if let Err(e) = &result {
            entry.outcome = format!("refused:{}", e.kind());
        }
        ledger::record(&entry);
        result
    }
}

fn delegate_inner(
    req: &DelegateRequest,
    call: &Call,
    entry: &mut ledger::Entry,
) -> Result<DelegateResult> {
    let started = Instant::now();
    if !TASK_KINDS.contains(&req.task_kind.trim()) {
        return Err(invalid(format!(
            "task_kind {:?} is not one of {}; code changes go through propose_patch",
            req.task_kind,
            TASK_KINDS.join(", ")
        )));
    }
    let format = req
        .output_format
        .as_deref()
        .unwrap_or("text")
        .trim()
        .to_string();
    if !matches!(format.as_str(), "text" | "markdown" | "json" | "patch") {
        return Err(invalid(format!(
            "output_format {format:?} is not one of text, markdown, json, patch"
        )));
    }
    if let Some(n) = req.max_output_tokens
        && (n == 0 || n > MAX_DELEGATE_OUTPUT_TOKENS)
    {
        return Err(invalid(format!(
            "max_output_tokens {n} is out of range 1..={MAX_DELEGATE_OUTPUT_TOKENS}"
        )));
    }
    // The shared checks of a propose request (task, criteria, plan, complexity), files aside.
    let as_propose = ProposeRequest {
        workspace_root: req.workspace_root.clone(),
        task: req.task.clone(),
        acceptance_criteria: req.acceptance_criteria.clone(),
        constraints: req.constraints.clone(),
        plan: req.plan.clone(),
        complexity: req.complexity.clone(),
        files: vec![String::from("-")],
        context: None,
        model: None,
    };
    let medium = check_request(&as_propose)?;
    let (ws, loaded) = open_workspace(&req.workspace_root)?;
    let policy = &call.policy_for(&loaded.policy);
    let model = policy.route(medium, req.model.as_deref())?;
    let selection = if req.files.is_empty() {
        scope::Selection::default()
    } else {
        ws.read_selection(&req.files, &policy.limits)?
    };
    let files = &selection.files;
    if let Some((missing, _)) = files.iter().find(|(_, f)| f.is_none()) {
        return Err(Error::Scope(format!(
            "{missing} does not exist; delegate_task only reads existing files"
        )));
    }
    let bytes_read = selection.bytes_shown();
    let context_window = window::for_model(policy, &model);
    let spec = TaskSpec {
        task: &req.task,
        acceptance_criteria: &req.acceptance_criteria,
        constraints: &req.constraints,
        plan: &req.plan,
        context: req.context.as_deref(),
    };
    let chat = ChatRequest {
        model,
        messages: prompt::delegate_messages(
            req.task_kind.trim(),
            &format,
            &spec,
            files,
            &selection.focus,
        ),
        max_tokens: req
            .max_output_tokens
            .unwrap_or(policy.limits.max_output_tokens),
        temperature: policy.provider.temperature,
        reasoning: policy.provider.reasoning_effort,
        json_schema: None,
    };
    entry.bytes_read = bytes_read;
    let (provider_name, completion, model_ms) = ask(policy, &chat, call, entry)?;
    let mut content = completion.content.trim().to_string();
    if content.is_empty() {
        return Err(Error::ModelAnswer(
            "the model returned an empty answer; retry or rephrase the task".into(),
        ));
    }
    if format == "json" {
        let body = content
            .strip_prefix("```json")
            .or_else(|| content.strip_prefix("```"))
            .and_then(|s| s.trim_end().strip_suffix("```"))
            .unwrap_or(&content)
            .trim()
            .to_string();
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&body) {
            return Err(Error::ModelAnswer(format!(
                "output_format is json but the answer does not parse ({e}): {:?}",
                crate::error::excerpt(&content, 300)
            )));
        }
        content = body;
    }
    Ok(DelegateResult {
        content,
        output_format: format,
        files_read: files.keys().cloned().collect(),
        provider: provider_name,
        model: completion.model,
        usage: completion.usage,
        elapsed_ms: started.elapsed().as_millis() as u64,
        model_ms,
        context_window,
    })
}
