//! Applying approved bytes: a held proposal by id and digest ([`Service::apply_proposal`]), or saved patch bytes
//! whose digest the caller approved ([`apply_bytes`]). Both go through [`txn::apply`] alone, which writes, runs the
//! validation commands and restores the previous bytes when one fails; a failure may then earn the task's one repair
//! round, whose answer is a new proposal to approve, never a write.

use std::path::Path;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::propose::Failure;
use super::{Call, Record, Service, invalid, logged, open_workspace, patch_limits};
use crate::checks::{self, CheckResult};
use crate::confine;
use crate::digest::sha256_hex;
use crate::error::{Error, Repair, RepairProposal, Result, ValidationFailure};
use crate::ledger;
use crate::policy;
use crate::proposal;
use crate::provider::{Usage, Watch};
use crate::txn;

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
    /// Always true: a refusal is an error, never `applied: false`.
    pub applied: bool,
    /// The digest of the bytes written.
    pub digest: String,
    /// The files written, workspace-relative.
    pub files_written: Vec<String>,
    /// The validation commands' results after writing (all passed).
    pub validation: Vec<CheckResult>,
    /// Time the apply took, checks included.
    pub elapsed_ms: u64,
    /// Applying calls no model: always zero.
    pub usage: Usage,
}

impl Service {
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
            Err(Error::ValidationFailed(mut v)) => {
                v.repair = self.repair_after_apply(id, &claimed, &v.report(), call);
                Err(Error::ValidationFailed(v))
            }
            other => other,
        }
    }

    /// The apply-time repair round: its outcome for the refusal, `None` when no round is due.
    fn repair_after_apply(
        &self,
        id: &str,
        claimed: &proposal::Claimed,
        report: &str,
        call: &Call,
    ) -> Option<Repair> {
        let attempts = policy::load(&claimed.root)
            .map(|l| l.policy.repair.attempts)
            .unwrap_or_default();
        if attempts != policy::RepairAttempts::Once {
            return None;
        }
        let origin = self.store.take_repair(id)?;
        let patch_text = String::from_utf8_lossy(&claimed.patch).into_owned();
        let failure = Failure {
            patch: &patch_text,
            report,
        };
        let repair_call = Call {
            provider: origin.provider,
            watch: call.watch.clone(),
            unrecorded: call.unrecorded,
        };
        Some(
            match self.propose_repair(&origin.request, &repair_call, &failure) {
                Ok(r) => Repair::Proposed(RepairProposal {
                    proposal_id: r.proposal_id,
                    digest: r.digest,
                    patch: r.patch,
                    validation_passed: r.validation_passed,
                    expires_at_unix: r.expires_at_unix,
                }),
                Err(e) => Repair::Failed(e.to_string()),
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
    logged(
        "apply",
        workspace_root,
        Record::Ledger,
        |entry| {
            entry.digest = Some(digest.trim().to_string());
            apply_checked(workspace_root, patch_bytes, digest, watch)
        },
        |_| None,
    )
}

fn apply_checked(
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
    let state = ledger::state_dir();
    let applied = txn::apply(
        &ws,
        patch_bytes,
        patch_limits(policy),
        state.as_deref(),
        |root: &Path| run_checks(policy, root, watch),
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

/// The validation commands after an apply, in the workspace, with the allowlisted environment; `Err` holds the first
/// failure (the transaction then restores the previous bytes).
fn run_checks(
    policy: &policy::Policy,
    root: &Path,
    watch: &Watch,
) -> std::result::Result<Vec<CheckResult>, Box<ValidationFailure>> {
    let commands = &policy.validation.commands;
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
    let results = checks::run_all(commands, root, &run, watch);
    match results.iter().find(|r| !r.passed) {
        None if results.len() == commands.len() => Ok(results),
        None => Err(ValidationFailure::unfinished(
            "the call was cancelled before every validation command ran",
        )
        .into()),
        Some(f) => Err(ValidationFailure::check(checks::failure(f)).into()),
    }
}
