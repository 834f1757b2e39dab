//! The service: propose and apply, orchestrated once for both transports (MCP and CLI).
//!
//! It checks the request, reads the selected files through [`scope`], asks the [`provider`], turns the answer into a
//! canonical patch with the pure [`patch`] engine, dry-runs it through [`txn::plan`] on a temporary copy, and holds
//! it in the [`proposal`] store. Applying goes through [`txn::apply`] alone.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checks::{self, CheckResult};
use crate::config::{self, LoadedPolicy};
use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::ledger;
use crate::patch::{self, HunkReport, PreImage};
use crate::prompt::{self, TaskSpec};
use crate::proposal::ProposalStore;
use crate::provider::{self, ChatRequest, Usage, Watch};
use crate::scope::{self, Workspace};
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
    /// The patch was applied to a temporary copy of the touched files and gave exactly the intended post-images.
    pub dry_run_ok: bool,
    /// The validation commands that apply_patch will run after writing (from the policy file).
    pub validation_commands: Vec<String>,
    /// Whether a repair round was used (never, in this version).
    pub repaired: bool,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub elapsed_ms: u64,
    /// Time spent waiting for the model, included in elapsed_ms.
    pub model_ms: u64,
    /// Unix time (seconds) after which the proposal can no longer be applied.
    pub expires_at_unix: u64,
    /// Bytes of the selected files the worker read and sent (the primary did not have to read them).
    pub bytes_read: u64,
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
    let window = policy.context_window();
    if prompt_tokens + u64::from(chat.max_tokens) > window {
        return Err(Error::InvalidArgument(format!(
            "the prompt is about {prompt_tokens} tokens and the answer may take {}: over [models] context_window = \
             {window}; select fewer or smaller files (a model that silently drops context returns confident, \
             destructive edits)",
            chat.max_tokens
        )));
    }
    let provider = provider::for_policy(policy)?;
    let start = Instant::now();
    entry.provider = provider.name().to_string();
    entry.model = chat.model.clone();
    let completion = provider.complete(chat, &call.watch)?;
    let ms = start.elapsed().as_millis() as u64;
    // Tokens spent are recorded even when the answer is refused afterwards.
    entry.model = completion.model.clone();
    entry.usage = completion.usage;
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
    }
}

impl Service {
    pub fn new() -> Service {
        Service::default()
    }

    /// Propose a patch: never writes to the workspace.
    pub fn propose(&self, req: &ProposeRequest, call: &Call) -> Result<ProposeResult> {
        let started = Instant::now();
        let mut entry = ledger::Entry::new("propose", &req.workspace_root, started);
        let result = self.propose_inner(req, call, &mut entry);
        entry.duration_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(r) => entry.digest = Some(r.digest.clone()),
            Err(e) => entry.outcome = format!("refused:{}", e.kind()),
        }
        ledger::record(&entry);
        result
    }

    fn propose_inner(
        &self,
        req: &ProposeRequest,
        call: &Call,
        entry: &mut ledger::Entry,
    ) -> Result<ProposeResult> {
        let started = Instant::now();
        let medium = check_request(req)?;
        let (ws, loaded) = open_workspace(&req.workspace_root)?;
        let policy = &call.policy_for(&loaded.policy);
        let model = policy.route(medium, req.model.as_deref())?;
        let pre_images = ws.read_selected(&req.files, &policy.limits)?;
        let bytes_read: u64 = pre_images
            .values()
            .flatten()
            .map(|p| p.text.len() as u64)
            .sum();

        let mut format = policy.answer_format();
        let schema = match format {
            patch::reader::AnswerFormat::Json => {
                let s = prompt::edit_schema(&pre_images);
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
        let chat = ChatRequest {
            model,
            messages: prompt::messages(&spec, &pre_images, format),
            max_tokens: policy.limits.max_output_tokens,
            temperature: policy.provider.temperature,
            reasoning: policy.provider.reasoning_effort,
            json_schema: schema,
        };
        entry.bytes_read = bytes_read;
        let (provider_name, completion, model_ms) = ask(policy, &chat, call, entry)?;

        let changes = patch::changes_from_answer(&completion.content, format, &pre_images)?;
        if changes.len() > policy.limits.max_files_per_patch {
            return Err(Error::ModelAnswer(format!(
                "the answer edits {} files, over [limits] max_files_per_patch = {}",
                changes.len(),
                policy.limits.max_files_per_patch
            )));
        }
        let patch_bytes = patch::canonical::render(&changes);
        dry_run(&loaded, &pre_images, &changes, &patch_bytes)?;

        let digest = sha256_hex(&patch_bytes);
        let ttl = Duration::from_secs(policy.limits.proposal_ttl_secs);
        let files = changes
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
        let patch_text = String::from_utf8(patch_bytes.clone())
            .map_err(|_| Error::Patch("the rendered patch is not UTF-8".into()))?;
        let proposal_id =
            self.store
                .insert(ws.root().to_path_buf(), patch_bytes, digest.clone(), ttl);
        Ok(ProposeResult {
            proposal_id,
            digest,
            patch: patch_text,
            files,
            dry_run_ok: true,
            validation_commands: policy.validation.commands.clone(),
            repaired: false,
            provider: provider_name,
            model: completion.model,
            usage: completion.usage,
            elapsed_ms: started.elapsed().as_millis() as u64,
            model_ms,
            bytes_read,
            expires_at_unix: (SystemTime::now() + ttl)
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        })
    }

    /// Apply a held proposal, only with its digest.
    pub fn apply_proposal(&self, req: &ApplyRequest) -> Result<ApplyResult> {
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
        let result = apply_bytes(&root, &claimed.patch, &req.digest);
        let used = match &result {
            Ok(_) => Some("applied"),
            Err(Error::ValidationFailed(_)) => Some("applied, validation failed, rolled back"),
            Err(_) => None,
        };
        self.store.finish(id, used);
        result
    }
}

/// Apply exact patch bytes (from a proposal or a saved file) whose digest the caller approved.
pub fn apply_bytes(workspace_root: &str, patch_bytes: &[u8], digest: &str) -> Result<ApplyResult> {
    let started = Instant::now();
    let result = apply_bytes_inner(workspace_root, patch_bytes, digest);
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
) -> Result<ApplyResult> {
    let started = Instant::now();
    let actual = sha256_hex(patch_bytes);
    if !crate::digest::digests_equal(&actual, digest.trim()) {
        return Err(Error::Proposal(format!(
            "the patch bytes have digest {actual}, not the approved {}; the patch was altered or the digest belongs to another patch",
            digest.trim()
        )));
    }
    let (ws, loaded) = open_workspace(workspace_root)?;
    let policy = &loaded.policy;
    let commands = policy.validation.commands.clone();
    let timeout = Duration::from_secs(policy.validation.timeout_secs);
    let hidden: Vec<String> = policy.api_key_env().into_iter().collect();
    let state = ledger::state_dir();
    let applied = txn::apply(
        &ws,
        patch_bytes,
        patch_limits(policy),
        state.as_deref(),
        |root: &Path| {
            let results = checks::run_all(&commands, root, timeout, &hidden);
            match results.iter().find(|r| !r.passed) {
                None => Ok(results),
                Some(f) => Err(format!(
                    "`{}` {} after {} ms. Output tail:\n{}",
                    f.command,
                    if f.timed_out {
                        "timed out".to_string()
                    } else {
                        format!("exited with {:?}", f.exit_code)
                    },
                    f.duration_ms,
                    f.output_tail
                )),
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

/// The dry run: write the touched files' pre-images to a temporary folder, apply the canonical patch there through
/// the same transaction that applies for real, and check that every file then holds exactly the intended post-image.
fn dry_run(
    loaded: &LoadedPolicy,
    pre_images: &BTreeMap<String, Option<PreImage>>,
    changes: &[patch::FileChange],
    patch_bytes: &[u8],
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| Error::Io(format!("dry run in a temporary folder: {e}"));
    let tmp = tempfile::tempdir().map_err(io)?;
    let troot = tmp.path().canonicalize().map_err(io)?;
    for c in changes {
        if let Some(Some(pre)) = pre_images.get(&c.path) {
            let dst = troot.join(&c.path);
            if let Some(d) = dst.parent() {
                std::fs::create_dir_all(d).map_err(io)?;
            }
            std::fs::write(&dst, pre.text.as_bytes()).map_err(io)?;
            let mode = if pre.mode == patch::MODE_EXECUTABLE {
                0o755
            } else {
                0o644
            };
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode)).map_err(io)?;
        }
    }
    let tws = Workspace::new(troot.clone(), &loaded.policy.paths, None)?;
    txn::apply_scratch(&tws, patch_bytes, patch_limits(&loaded.policy))?;
    for c in changes {
        let got = std::fs::read(troot.join(&c.path)).map_err(io)?;
        if got != c.post {
            return Err(Error::Patch(format!(
                "dry run: the canonical patch does not reproduce the intended {}; this is a bug, please report it",
                c.path
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
    /// Workspace-relative files the model reads (may be empty).
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
    let files = if req.files.is_empty() {
        BTreeMap::new()
    } else {
        ws.read_selected(&req.files, &policy.limits)?
    };
    if let Some((missing, _)) = files.iter().find(|(_, f)| f.is_none()) {
        return Err(Error::Scope(format!(
            "{missing} does not exist; delegate_task only reads existing files"
        )));
    }
    let bytes_read: u64 = files.values().flatten().map(|p| p.text.len() as u64).sum();
    let spec = TaskSpec {
        task: &req.task,
        acceptance_criteria: &req.acceptance_criteria,
        constraints: &req.constraints,
        plan: &req.plan,
        context: req.context.as_deref(),
    };
    let chat = ChatRequest {
        model,
        messages: prompt::delegate_messages(req.task_kind.trim(), &format, &spec, &files),
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
    })
}
