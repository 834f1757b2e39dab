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
use crate::patch::{self, HunkReport, PreImage};
use crate::prompt::{self, TaskSpec};
use crate::proposal::ProposalStore;
use crate::provider::{self, ChatRequest, Usage};
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
    /// Optional model alias: "flash" or "pro". Low complexity always uses flash.
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
    if let Some(m) = &r.model
        && !matches!(m.as_str(), "flash" | "pro")
    {
        return Err(invalid(format!(
            "model {m:?} is not an alias this worker knows; use \"flash\" or \"pro\""
        )));
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
    pub fn propose(&self, req: &ProposeRequest) -> Result<ProposeResult> {
        let started = Instant::now();
        let medium = check_request(req)?;
        let (ws, loaded) = open_workspace(&req.workspace_root)?;
        let policy = &loaded.policy;
        let pre_images = ws.read_selected(&req.files, &policy.limits)?;

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
        let use_pro = medium && req.model.as_deref() != Some("flash");
        let chat = ChatRequest {
            model: policy.model_for(use_pro),
            messages: prompt::messages(&spec, &pre_images, format),
            max_tokens: policy.limits.max_output_tokens,
            temperature: policy.provider.temperature,
            json_schema: schema,
        };
        let provider = provider::for_policy(policy)?;
        let model_start = Instant::now();
        let completion = provider.complete(&chat)?;
        let model_ms = model_start.elapsed().as_millis() as u64;
        if completion.finish_reason.as_deref() == Some("length") {
            return Err(Error::ModelAnswer(format!(
                "the answer was cut off at [limits] max_output_tokens = {} ({} tokens used), so it cannot be trusted; \
                 raise the limit or narrow the task",
                policy.limits.max_output_tokens, completion.usage.output_tokens
            )));
        }

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
            provider: provider.name().to_string(),
            model: completion.model,
            usage: completion.usage,
            elapsed_ms: started.elapsed().as_millis() as u64,
            model_ms,
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
    let applied = txn::apply(&ws, patch_bytes, patch_limits(policy), |root: &Path| {
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
    })?;
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
    txn::apply(&tws, patch_bytes, patch_limits(&loaded.policy), |_| {
        Ok::<(), String>(())
    })?;
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
