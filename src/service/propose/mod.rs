//! Making a proposal, as stages: [`prepare`] (check the request, read the selection, build the prompt: no model call),
//! [`ask`](super::ask), [`read`] (the answer into a dry-run canonical patch), [`validate`] (in a sandbox copy, when
//! the policy says so), [`repair`] (the one repair round, when validation failed) and [`Service::record`] (hold the
//! proposal and say what it is). Nothing here writes to the workspace.
//!
//! One stage a file, imported downward only: `prepare` (imports no other stage) < `read` < `validate` <
//! `candidates` (several answers at once, each read and validated) < this file (the draft, the repair round, the
//! record and the result types).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Serialize;

mod alternatives;
mod candidates;
mod prepare;
mod read;
mod validate;

pub use candidates::{CandidatesReport, PROBE_RUNS, at_once};
pub use prepare::ProposeRequest;
pub(crate) use validate::check_copy;

use crate::checks::{self, CheckResult};
use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::ledger;
use crate::locate_rank;
use crate::patch::{self, HunkReport};
use crate::policy;
use crate::prompt;
use crate::proposal::NewProposal;
use crate::provider::window::ContextWindow;
use crate::provider::{self, Provider, Usage};
use crate::service::pin_bounds;
use crate::service::{Answer, Call, Service, add_usage, ask, logged};
#[cfg(test)]
use alternatives::read;
use prepare::{Prepared, prepare};
use read::Candidate;
#[cfg(test)]
use validate::validate;

/// Whether a file of a proposal exists today or is created, deleted or moved there by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// The file exists and the patch changes it.
    Modified,
    /// The file does not exist yet; the patch creates it.
    Created,
    /// The patch deletes the file (only where `[paths] allow_delete` says so).
    Deleted,
    /// The patch moves a file to this path (only where `[paths] allow_move` says so); the patch names its source.
    Moved,
}

impl std::fmt::Display for FileStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileStatus::Modified => "modified",
            FileStatus::Created => "created",
            FileStatus::Deleted => "deleted",
            FileStatus::Moved => "moved",
        })
    }
}

/// How one file changes in a proposal.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileSummary {
    /// The workspace-relative path.
    pub path: String,
    /// Whether the file is changed or created.
    pub status: FileStatus,
    /// Lines the patch adds to it.
    pub added_lines: usize,
    /// Lines the patch removes from it.
    pub removed_lines: usize,
    /// Where each hunk landed and which tolerance located it.
    pub hunks: Vec<HunkReport>,
}

/// Output of `propose_patch`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProposeResult {
    /// Present only when this patch FAILS the project's checks (validation on propose): what failed and what to do.
    /// The patch is returned for you to read, not to apply as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks_failed: Option<String>,
    /// Opaque id to pass to apply_patch with the digest.
    pub proposal_id: String,
    /// SHA-256 (hex) of exactly the bytes of `patch`.
    pub digest: String,
    /// Canonical git-style unified diff; `git apply --check` accepts it on the current files.
    pub patch: String,
    /// How each file changes.
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
    /// The provider that answered.
    pub provider: String,
    /// The model that answered, as the server named it.
    pub model: String,
    /// Tokens spent on this proposal, repair round included.
    pub usage: Usage,
    /// Time the proposal took.
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
    /// When the patch is longer than hosts show in one tool result: a file holding exactly the same bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_file: Option<String>,
    /// What the caller should know about this result's size (the patch is never cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What to look at before approving, one sentence each: the patch adds control or invisible characters (the
    /// CLI shows them as `<U+001B>`; the patch holds the characters themselves), or a diff section's `---` and `+++`
    /// lines named different paths that were read as one file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// With `[sampling] candidates` above 1: how many answers were asked, parsed, distinct, validated and passed,
    /// which one was chosen and why. `usage` and `model_ms` then sum every candidate's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<CandidatesReport>,
}

/// What a held proposal was made from: enough to make the apply-time repair round.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    pub(super) request: ProposeRequest,
    pub(super) provider: Option<policy::ProviderKind>,
}

/// How a proposal's first model call opens: with the task alone, or (the apply-time repair round) with a previous
/// edit and how it failed.
#[derive(Clone, Copy)]
enum Opening<'a> {
    /// The task alone; a failed validation may still earn the one repair round.
    Task,
    /// The repair round itself: the failed edit is shown first, and no further round follows.
    RepairOf(&'a Failure<'a>),
}

/// A previous edit and how it failed validation, for the repair round.
pub(super) struct Failure<'a> {
    pub(super) patch: &'a str,
    pub(super) report: &'a str,
}

/// A proposal in the making: the chosen candidate and what was learnt about it.
struct Draft {
    cand: Candidate,
    provider: String,
    served_by: String,
    usage: Usage,
    model_ms: u64,
    validation: Vec<CheckResult>,
    validation_passed: Option<bool>,
    repaired: bool,
    /// The task's one repair round is spent when its model call is made, whatever the answer.
    repair_spent: bool,
    repair_reason: Option<String>,
    repair_error: Option<String>,
    candidates: Option<CandidatesReport>,
}

impl Draft {
    /// A draft of a first answer (not from a repair round).
    fn new(cand: Candidate, answer: Answer) -> Draft {
        Draft {
            cand,
            provider: answer.provider,
            served_by: answer.completion.model,
            usage: answer.completion.usage,
            model_ms: answer.ms,
            validation: Vec::new(),
            validation_passed: None,
            repaired: false,
            repair_spent: false,
            repair_reason: None,
            repair_error: None,
            candidates: None,
        }
    }

    /// The draft made of the candidate [`candidates::gather`] chose, with every candidate's tokens and time.
    fn chosen(g: candidates::Gathered) -> Draft {
        let validation = g.chosen.validation.clone().unwrap_or_default();
        let mut d = Draft::new(g.chosen.cand, g.chosen.answer);
        d.usage = g.usage;
        d.model_ms = g.model_ms;
        d.validation = validation;
        d.candidates = Some(g.report);
        d
    }

    fn passed(&self) -> bool {
        self.validation.iter().all(|r| r.passed)
    }
}

/// The notice a proposal carries when it fails the project's checks: the first failing command and what to do.
pub fn checks_failed_notice(validation: &[CheckResult]) -> Option<String> {
    let failed = validation.iter().find(|c| !c.passed)?;
    Some(format!(
        "THIS PATCH FAILS THE PROJECT'S CHECKS: `{}` failed on it in a sandbox copy of the workspace. Do not apply \
         it as it is: read that command's output in `validation`, then propose again with the failure in `context` \
         (or a sharper task), or make the change yourself.",
        failed.command
    ))
}

/// Stage 5, the one repair round on propose: the previous edit and its failing output, one more model call. Its
/// answer replaces the draft's candidate only when it reads as a patch; either way the round is spent.
fn repair(
    p: &Prepared,
    provider: &dyn Provider,
    d: &mut Draft,
    call: &Call,
    workspace_root: &str,
) -> Result<()> {
    let report = d
        .validation
        .iter()
        .find(|r| !r.passed)
        .map(checks::failure_report)
        .unwrap_or_default();
    let msgs = prompt::repair_messages(&p.messages, &d.cand.patch_text, &report);
    d.repair_reason = Some(prompt::tail(&report, prompt::REPAIR_OUTPUT_BYTES));
    d.repair_spent = true;
    let mut chat = p.chat(msgs);
    // Pinned to the line the failing output names, when it names one in a selected file.
    if p.schema.is_some()
        && let Some(s) = locate_rank::failing_place(
            &report,
            &p.selection.files,
            &p.selection.focus,
            &d.cand.changes,
        )
    {
        let bounds = prompt::SchemaBounds::for_complexity(&p.task.complexity);
        let pin = pin_bounds::pin(
            prompt::pinned_schema(&s.path, &s.text, false, bounds),
            p.policy.limits.max_output_tokens,
        );
        chat.json_schema = Some(pin.schema);
        chat.max_tokens = pin.max_tokens;
        chat.prefill = pin.prefill;
    }
    let mut scratch = ledger::Entry::new("propose", workspace_root, Instant::now());
    let attempt = ask(&p.policy, provider, &chat, call, &mut scratch).and_then(|a| {
        d.model_ms += a.ms;
        alternatives::read_and_choose(p, &a.completion.content, &call.watch, true)
            .map(|c| (c, a.completion.model))
    });
    // Tokens spent count even when the repair answer is refused.
    d.usage = add_usage(d.usage, scratch.usage);
    match attempt {
        Ok(((cand, validation), model)) => {
            d.cand = cand;
            d.served_by = model;
            d.repaired = true;
            d.validation = validation.unwrap_or_default();
            Ok(())
        }
        Err(Error::Cancelled) => Err(Error::Cancelled),
        Err(e) => {
            d.repair_error = Some(e.to_string());
            Ok(())
        }
    }
}

/// A large text kept whole in the state folder (see [`crate::spill`]): the file's path and the note saying so.
pub(super) fn keep_if_large(name: &str, text: &str) -> (Option<String>, Option<String>) {
    match crate::spill::keep_if_large(ledger::state_dir().as_deref(), name, text) {
        Ok(Some(path)) => (
            Some(path.display().to_string()),
            Some(crate::spill::note(text.chars().count(), &path)),
        ),
        Ok(None) => (None, None),
        Err(e) => (
            None,
            Some(format!(
                "this result holds {} characters, more than some hosts show in one tool result; nothing was cut, \
                 but it could not also be kept in a file ({e})",
                text.chars().count()
            )),
        ),
    }
}

fn summarise(changes: &[patch::FileChange]) -> Vec<FileSummary> {
    changes
        .iter()
        .map(|c| FileSummary {
            path: c.path.clone(),
            status: match (&c.op, &c.pre) {
                (patch::ChangeOp::Delete, _) => FileStatus::Deleted,
                (patch::ChangeOp::MoveFrom(_), _) => FileStatus::Moved,
                (patch::ChangeOp::Edit, Some(_)) => FileStatus::Modified,
                (patch::ChangeOp::Edit, None) => FileStatus::Created,
            },
            added_lines: c.hunks.iter().map(|h| h.added).sum(),
            removed_lines: c.hunks.iter().map(|h| h.removed).sum(),
            hunks: c.hunks.clone(),
        })
        .collect()
}

impl Service {
    /// Propose a patch: never writes to the workspace.
    pub fn propose(&self, req: &ProposeRequest, call: &Call) -> Result<ProposeResult> {
        self.propose_logged(req, call, Opening::Task)
    }

    /// The apply-time repair round: a proposal whose first model call already shows the edit that `failure` names,
    /// and after which no further round follows.
    pub(super) fn propose_repair(
        &self,
        req: &ProposeRequest,
        call: &Call,
        failure: &Failure<'_>,
    ) -> Result<ProposeResult> {
        self.propose_logged(req, call, Opening::RepairOf(failure))
    }

    fn propose_logged(
        &self,
        req: &ProposeRequest,
        call: &Call,
        opening: Opening<'_>,
    ) -> Result<ProposeResult> {
        logged(
            "propose",
            &req.workspace_root,
            call.record(),
            |entry| self.propose_in_stages(req, call, entry, opening),
            |r: &ProposeResult| Some(r.digest.clone()),
        )
    }

    /// The stages in order.
    fn propose_in_stages(
        &self,
        req: &ProposeRequest,
        call: &Call,
        entry: &mut ledger::Entry,
        opening: Opening<'_>,
    ) -> Result<ProposeResult> {
        let started = Instant::now();
        let p = prepare(req, call)?;
        entry.bytes_read = p.selection.bytes_shown();
        entry.format = Some(p.format.name().to_string());
        let first = match opening {
            Opening::RepairOf(f) => {
                entry.repair_of = Some(sha256_hex(f.patch.as_bytes()));
                prompt::repair_messages(&p.messages, f.patch, f.report)
            }
            Opening::Task => p.messages.clone(),
        };
        let provider = provider::for_policy(&p.policy)?;
        let mut d = if p.policy.candidates() > 1 {
            let check_first = matches!(opening, Opening::Task);
            let g = candidates::gather(
                &p,
                &*provider,
                &first,
                call,
                entry,
                p.validates(),
                check_first,
            )?;
            Draft::chosen(g)
        } else {
            let answer = ask(&p.policy, &*provider, &p.chat(first), call, entry)?;
            let (cand, validation) = alternatives::read_and_choose(
                &p,
                &answer.completion.content,
                &call.watch,
                p.validates(),
            )?;
            let mut d = Draft::new(cand, answer);
            d.validation = validation.unwrap_or_default();
            d
        };
        if let Opening::RepairOf(_) = opening {
            d.repaired = true;
            d.repair_spent = true;
        }
        if p.validates() {
            if !d.passed()
                && !d.repair_spent
                && p.policy.repair.attempts == policy::RepairAttempts::Once
            {
                repair(&p, &*provider, &mut d, call, &req.workspace_root)?;
            }
            d.validation_passed = Some(d.passed());
        }
        entry.usage = d.usage;
        entry.validation_passed = d.validation_passed;
        entry.repaired = d.repaired;
        let r = self.record(&p, req, call, d, started);
        entry.expires = Some(r.expires_at_unix);
        Ok(r)
    }

    /// Stage 6: hold the proposal (patch, digest, origin and repair budget in one store entry) and say what it is.
    fn record(
        &self,
        p: &Prepared,
        req: &ProposeRequest,
        call: &Call,
        d: Draft,
        started: Instant,
    ) -> ProposeResult {
        let digest = sha256_hex(&d.cand.patch_bytes);
        let ttl = Duration::from_secs(p.policy.limits.proposal_ttl_secs);
        let proposal_id = self.store.insert(NewProposal {
            root: p.ws.root().to_path_buf(),
            patch: d.cand.patch_bytes.clone(),
            digest: digest.clone(),
            ttl,
            origin: Origin {
                request: req.clone(),
                provider: call.provider,
            },
            repair_left: !d.repair_spent,
        });
        let (patch_file, note) = keep_if_large(&format!("{proposal_id}.patch"), &d.cand.patch_text);
        ProposeResult {
            checks_failed: checks_failed_notice(&d.validation),
            patch_file,
            note,
            warnings: d.cand.warnings,
            proposal_id,
            digest,
            files: summarise(&d.cand.changes),
            patch: d.cand.patch_text,
            dry_run_ok: true,
            validation_commands: p.policy.validation.commands.clone(),
            validation: d.validation,
            validation_passed: d.validation_passed,
            repaired: d.repaired,
            repair_reason: d.repair_reason,
            repair_error: d.repair_error,
            candidates: d.candidates,
            provider: d.provider,
            model: d.served_by,
            usage: d.usage,
            elapsed_ms: started.elapsed().as_millis() as u64,
            model_ms: d.model_ms,
            bytes_read: p.selection.bytes_shown(),
            context_window: p.context_window.clone(),
            expires_at_unix: (SystemTime::now() + ttl)
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests;
