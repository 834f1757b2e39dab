//! Making a proposal, as stages: [`prepare`] (check the request, read the selection, build the prompt: no model call),
//! [`ask`](super::ask), [`read`] (the answer into a dry-run canonical patch), [`validate`] (in a sandbox copy, when
//! the policy says so), [`repair`] (the one repair round, when validation failed) and [`Service::record`] (hold the
//! proposal and say what it is). Nothing here writes to the workspace.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::candidates::{self, CandidatesReport};
use super::{Answer, Call, Service, add_usage, ask, invalid, logged, open_workspace, patch_limits};
use crate::checks::{self, CheckResult};
use crate::config;
use crate::confine;
use crate::digest::sha256_hex;
use crate::error::{Error, Result};
use crate::ledger;
use crate::locate_rank;
use crate::patch::{self, HunkReport, PreImage, reader::AnswerFormat};
use crate::prompt;
use crate::proposal::NewProposal;
use crate::provider::window::{self, ContextWindow};
use crate::provider::{self, ChatRequest, Message, Provider, Usage, Watch};
use crate::sandbox;
use crate::scope::{Selection, Workspace};
use crate::task::{Task, UnknownFields};
use crate::txn;

/// Input of `propose_patch` / `local-llm-worker propose`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[schemars(transform = files_required)]
pub struct ProposeRequest {
    /// Absolute path of the project; it must hold local-llm-worker.toml (or lie under LOCAL_LLM_ALLOWED_ROOTS).
    pub workspace_root: String,
    /// The scoped task.
    #[serde(flatten)]
    pub task: Task,
    /// Fields no tool takes, refused by name.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: UnknownFields,
}

/// A proposal needs files (a delegation may have none): the schema says so, and an empty list is refused by name.
fn files_required(schema: &mut schemars::Schema) {
    if let Some(serde_json::Value::Array(required)) = schema.get_mut("required")
        && !required.iter().any(|v| v == "files")
    {
        required.push("files".into());
    }
}

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
    pub(super) provider: Option<config::ProviderKind>,
}

/// A previous edit and how it failed validation, for the repair round.
pub(super) struct Failure<'a> {
    pub(super) patch: &'a str,
    pub(super) report: &'a str,
}

/// A checked request, read and turned into a prompt: what every model call of one proposal shares.
pub(super) struct Prepared {
    ws: Workspace,
    task: Task,
    pub(super) policy: config::Policy,
    pub(super) model: String,
    selection: Selection,
    format: AnswerFormat,
    schema: Option<serde_json::Value>,
    /// For candidates after the first (JSON edits only): schemas pinned each to one likely line.
    pinned: Vec<serde_json::Value>,
    messages: Vec<Message>,
    context_window: ContextWindow,
}

/// The temperatures of candidates after the first (which takes the policy's), in turn: hotter, for other answers.
const CANDIDATE_TEMPERATURES: [f32; 7] = [0.7, 1.0, 0.5, 0.9, 0.6, 1.1, 0.8];

impl Prepared {
    fn chat(&self, messages: Vec<Message>) -> ChatRequest {
        self.chat_for(messages, 0)
    }

    /// The request of candidate `n` (0 first): the policy's temperature for the first, then each its own
    /// temperature and seed, so the answers differ.
    pub(super) fn chat_for(&self, messages: Vec<Message>, n: usize) -> ChatRequest {
        let (temperature, seed) = match n {
            0 => (self.policy.provider.temperature, None),
            n => (
                CANDIDATE_TEMPERATURES[(n - 1) % CANDIDATE_TEMPERATURES.len()],
                Some(n as u64),
            ),
        };
        ChatRequest {
            model: self.model.clone(),
            messages,
            max_tokens: self.policy.limits.max_output_tokens,
            temperature,
            reasoning: self.policy.provider.reasoning_effort,
            json_schema: match n {
                0 => self.schema.clone(),
                n => self
                    .pinned
                    .get(n - 1)
                    .cloned()
                    .or_else(|| self.schema.clone()),
            },
            seed,
        }
    }

    /// Whether proposals are validated in a sandbox copy before they are returned.
    fn validates(&self) -> bool {
        self.policy.validation.on_propose && !self.policy.validation.commands.is_empty()
    }
}

/// One model answer turned into a checked, dry-run canonical patch.
pub(super) struct Candidate {
    pub(super) changes: Vec<patch::FileChange>,
    pub(super) patch_bytes: Vec<u8>,
    pub(super) patch_text: String,
    /// What the primary should look at before approving (the result's `warnings`).
    pub(super) warnings: Vec<String>,
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
    fn new(cand: Candidate, answer: Answer, repair_round: bool) -> Draft {
        Draft {
            cand,
            provider: answer.provider,
            served_by: answer.completion.model,
            usage: answer.completion.usage,
            model_ms: answer.ms,
            validation: Vec::new(),
            validation_passed: None,
            repaired: repair_round,
            repair_spent: repair_round,
            repair_reason: None,
            repair_error: None,
            candidates: None,
        }
    }

    /// The draft made of the candidate [`candidates::gather`] chose, with every candidate's tokens and time.
    fn chosen(g: candidates::Gathered, repair_round: bool) -> Draft {
        let validation = g.chosen.validation.clone().unwrap_or_default();
        let mut d = Draft::new(g.chosen.cand, g.chosen.answer, repair_round);
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

/// Stage 1: check the request, open the workspace, route the model, read the selection and build the prompt. Every
/// refusal a request can earn before a model call is made here.
pub(super) fn prepare(req: &ProposeRequest, call: &Call) -> Result<Prepared> {
    req.unknown.refuse("propose_patch")?;
    let medium = req.task.check()?;
    if req.task.files.is_empty() && req.task.create.is_empty() {
        return Err(invalid(
            "files is empty; select the file(s) the model should see and edit, or name the new files in create",
        ));
    }
    let (ws, loaded) = open_workspace(&req.workspace_root)?;
    let policy = call.policy_for(&loaded.policy);
    let model = policy.route(medium, req.task.model.as_deref())?;
    if policy.validation.on_propose && !policy.validation.commands.is_empty() {
        // Before any model call: validation on propose runs the model's code, confined or (when the policy says
        // so) not at all confined.
        confine::check_available(policy.validation.isolation)?;
    }
    let selection =
        ws.read_selection_creating(&req.task.files, &req.task.create, &policy.limits)?;
    let (format, schema) = answer_format(&policy, &selection, &req.task.complexity);
    let messages = prompt::messages(&req.task, &selection.files, &selection.focus, format);
    let pinned = match (&schema, policy.candidates()) {
        (Some(_), k) if k > 1 => {
            let bounds = prompt::SchemaBounds::for_complexity(&req.task.complexity);
            locate_rank::rank(
                &req.task,
                &selection.files,
                &selection.focus,
                locate_rank::Signals::ALL,
                k as usize - 1,
            )
            .iter()
            .map(|s| prompt::pinned_schema(&s.path, &s.text, s.insert, bounds))
            .collect()
        }
        _ => Vec::new(),
    };
    let context_window = window::for_model(&policy, &model);
    Ok(Prepared {
        ws,
        task: req.task.clone(),
        policy,
        model,
        selection,
        format,
        schema,
        pinned,
        messages,
        context_window,
    })
}

/// The edit format to ask for, and its JSON schema when it has one: the policy's, unless the selection rules it out.
fn answer_format(
    policy: &config::Policy,
    selection: &Selection,
    complexity: &crate::task::Complexity,
) -> (AnswerFormat, Option<serde_json::Value>) {
    let mut format = policy.answer_format();
    if format == AnswerFormat::WholeFile && !selection.focus.is_empty() {
        // A file shown in part cannot be rewritten whole.
        format = AnswerFormat::Udiff;
    }
    if format != AnswerFormat::Json {
        return (format, None);
    }
    let bounds = prompt::SchemaBounds::for_complexity(complexity);
    match prompt::edit_schema_within(&selection.files, &selection.focus, bounds) {
        Some(s) => (format, Some(s)),
        // Only new files are selected: a line-replacing JSON edit cannot create them.
        None => (AnswerFormat::Udiff, None),
    }
}

/// Stage 3: read one answer into a checked canonical patch, dry-run in memory; a cancellation stops the reading.
pub(super) fn read(p: &Prepared, answer: &str, watch: &Watch) -> Result<Candidate> {
    let pre_images = &p.selection.files;
    let cancelled = || watch.is_cancelled();
    let (changes, mut warnings) = patch::changes_and_notes(
        answer,
        p.format,
        pre_images,
        &p.selection.focus,
        patch::Cancel::new(&cancelled),
    )?;
    if let Some(line) = prompt::copied_example(p.format, &changes, &p.task) {
        return Err(Error::ModelAnswer(format!(
            "the answer copied the prompt's worked example (it adds `{line}`, which neither the files nor the task \
             hold) instead of doing the task; retry, or state the change more concretely"
        )));
    }
    if changes.len() > p.policy.limits.max_files_per_patch {
        return Err(Error::ModelAnswer(format!(
            "the answer edits {} files, over [limits] max_files_per_patch = {}",
            changes.len(),
            p.policy.limits.max_files_per_patch
        )));
    }
    let patch_bytes = patch::canonical::render(&changes);
    dry_run(&p.ws, &p.policy, pre_images, &changes, &patch_bytes)?;
    let patch_text = String::from_utf8(patch_bytes.clone())
        .map_err(|_| Error::Patch("the rendered patch is not UTF-8".into()))?;
    warnings.extend(hidden_added(&changes));
    Ok(Candidate {
        changes,
        patch_bytes,
        patch_text,
        warnings,
    })
}

/// The most places [`hidden_added`] names.
const HIDDEN_PLACES_SHOWN: usize = 10;

/// The warning for a patch that adds lines holding control or invisible characters ([`crate::screen`]): where
/// (`a.py:3`, the line in the new file) and which code points. A line the file already held is not added.
pub(super) fn hidden_added(changes: &[patch::FileChange]) -> Option<String> {
    let mut places = Vec::new();
    let mut seen: Vec<char> = Vec::new();
    for c in changes {
        let pre = String::from_utf8_lossy(c.pre.as_deref().unwrap_or_default());
        let old: std::collections::HashSet<&str> = pre.split_inclusive('\n').collect();
        let post = String::from_utf8_lossy(&c.post);
        for (n, line) in post.split_inclusive('\n').enumerate() {
            let hidden = crate::screen::hidden_chars(line);
            if hidden.is_empty() || old.contains(line) {
                continue;
            }
            let points: Vec<String> = hidden
                .iter()
                .map(|&h| crate::screen::code_point(h))
                .collect();
            places.push(format!(
                "{}:{} ({})",
                crate::scope::shown(&c.path),
                n + 1,
                points.join(", ")
            ));
            for h in hidden {
                if !seen.contains(&h) {
                    seen.push(h);
                }
            }
        }
    }
    let first = *seen.first()?;
    let more = match places.len().saturating_sub(HIDDEN_PLACES_SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more line(s)"),
    };
    places.truncate(HIDDEN_PLACES_SHOWN);
    Some(format!(
        "this patch adds control or invisible characters at {}{more}: the patch and its digest hold the characters \
         themselves; the CLI shows each as its code point (<{}>); look at those lines before approving",
        places.join(", "),
        crate::screen::code_point(first)
    ))
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
        ws.check_path(f.source())?;
        let change = changes.iter().find(|c| c.path == f.path).ok_or_else(|| {
            bug(format!(
                "the canonical patch names {}, which no change does",
                f.path
            ))
        })?;
        let pre = pre_images.get(f.source()).and_then(|p| p.as_ref());
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

/// Stage 4, validation on propose: copy the workspace into a [`sandbox`], put the selected files there exactly as the
/// patch was made against them, apply the patch there through the same transaction as a real apply, and run the
/// validation commands there, confined around the copy ([`confine::for_proposal`]: no network, no view of the
/// workspace, the worker or the home folder; an allowlisted environment). The workspace is only read; the copy is
/// removed when this returns, whatever happened.
pub(super) fn validate(p: &Prepared, cand: &Candidate, watch: &Watch) -> Result<Vec<CheckResult>> {
    Validator::new(p, watch)?.check(cand, watch)
}

/// One sandbox copy for every candidate of a proposal: made once, and between two candidates reset by putting
/// back only the selected files (what a patch can touch) as the model saw them. Removed when dropped.
pub(super) struct Validator<'p> {
    p: &'p Prepared,
    /// Held for its `Drop`, which removes the copy.
    _copy: sandbox::Sandbox,
    sws: Workspace,
    launch: confine::Launch,
    owner: Option<u32>,
}

impl<'p> Validator<'p> {
    /// Copy the workspace (the only cost that grows with it) and prepare the confinement around the copy.
    pub(super) fn new(p: &'p Prepared, watch: &Watch) -> Result<Validator<'p>> {
        let c = check_copy(&p.ws, &p.policy, watch)?;
        let sws = Workspace::new(c.copy.root().to_path_buf(), &p.policy.paths, None)?;
        Ok(Validator {
            p,
            _copy: c.copy,
            sws,
            launch: c.launch,
            owner: c.owner,
        })
    }

    /// Run the validation commands on `cand` in the copy: the selected files are first put back as the model saw
    /// them (the copy may lack one or hold newer bytes, and a previous candidate may have changed them).
    pub(super) fn check(&self, cand: &Candidate, watch: &Watch) -> Result<Vec<CheckResult>> {
        let policy = &self.p.policy;
        sandbox::stage_pre_images(&self.sws, &self.p.selection.files)?;
        let secret = policy.secret();
        let run = checks::Run {
            launch: &self.launch,
            timeout: Duration::from_secs(policy.validation.timeout_secs),
            secret: &secret,
        };
        let commands = &policy.validation.commands;
        let touched: Vec<&str> = self.p.selection.files.keys().map(String::as_str).collect();
        let owner = self.owner;
        let applied = txn::apply_throwaway(
            &self.sws,
            &cand.patch_bytes,
            patch_limits(policy),
            |root: &std::path::Path| {
                if let Some(uid) = owner {
                    sandbox::hand_over(root, &touched, uid);
                }
                Ok::<_, String>(checks::run_all(commands, root, &run, watch))
            },
        )?;
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(applied.validation)
    }
}

/// A sandbox copy of a workspace and how checks run in it, as validation on propose runs them.
pub(crate) struct CheckCopy {
    /// The copy, removed when dropped.
    pub(crate) copy: sandbox::Sandbox,
    /// The confinement around it (or, with `isolation = "copy"`, none).
    pub(crate) launch: confine::Launch,
    /// The user the copy was handed to (a worker running as root drops confined checks to an unprivileged user).
    pub(crate) owner: Option<u32>,
}

/// Copy the workspace `ws` as validation on propose does (what the model may not see left out: denied and policy
/// files, secrets, unless `[validation] sandbox_include` names them) and prepare the launch of its checks there:
/// confined around the copy ([`confine::for_proposal`]) with the project's own environment and the policy's bounds.
pub(crate) fn check_copy(
    ws: &Workspace,
    policy: &config::Policy,
    watch: &Watch,
) -> Result<CheckCopy> {
    const MIB: u64 = 1024 * 1024;
    let v = &policy.validation;
    // As root, a confined check runs as an unprivileged user, who must own the copy.
    let owner = match v.isolation {
        confine::Isolation::Confined => confine::sandbox_owner(),
        confine::Isolation::Copy => None,
    };
    let include = crate::scope::sandbox_include(&v.sandbox_include)?;
    let copy = sandbox::create(
        ws.root(),
        &v.sandbox_skip,
        &|rel| ws.kept_from_sandbox(rel, &include),
        owner,
        watch,
    )?;
    let launch = confine::for_proposal(
        v.isolation,
        copy.root(),
        &confine::Private {
            workspace: ws.root().to_path_buf(),
            state: ledger::state_dir(),
        },
        &confine::Project {
            sandbox_read: &v.sandbox_read,
            commands: &v.commands,
            tmp_bytes: v.sandbox_tmp_mib * MIB,
            write_bytes: v.sandbox_write_mib * MIB,
            copy_bytes: copy.report().bytes,
        },
        &policy.check_env(),
    )?;
    Ok(CheckCopy {
        copy,
        launch,
        owner,
    })
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
        chat.json_schema = Some(prompt::pinned_schema(&s.path, &s.text, false, bounds));
    }
    let mut scratch = ledger::Entry::new("propose", workspace_root, Instant::now());
    let attempt = ask(&p.policy, provider, &chat, call, &mut scratch).and_then(|a| {
        d.model_ms += a.ms;
        read(p, &a.completion.content, &call.watch).map(|c| (c, a.completion.model))
    });
    // Tokens spent count even when the repair answer is refused.
    d.usage = add_usage(d.usage, scratch.usage);
    match attempt {
        Ok((cand, model)) => {
            d.cand = cand;
            d.served_by = model;
            d.repaired = true;
            d.validation = validate(p, &d.cand, &call.watch)?;
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
        self.propose_logged(req, call, None)
    }

    pub(super) fn propose_logged(
        &self,
        req: &ProposeRequest,
        call: &Call,
        repair_of: Option<&Failure<'_>>,
    ) -> Result<ProposeResult> {
        logged(
            "propose",
            &req.workspace_root,
            call.unrecorded,
            |entry| self.propose_in_stages(req, call, entry, repair_of),
            |r: &ProposeResult| Some(r.digest.clone()),
        )
    }

    /// The stages in order. `repair_of`: the apply-time repair round (the first model call already shows the failed
    /// edit, and no further round follows).
    fn propose_in_stages(
        &self,
        req: &ProposeRequest,
        call: &Call,
        entry: &mut ledger::Entry,
        repair_of: Option<&Failure<'_>>,
    ) -> Result<ProposeResult> {
        let started = Instant::now();
        let p = prepare(req, call)?;
        entry.bytes_read = p.selection.bytes_shown();
        entry.format = Some(p.format.name().to_string());
        entry.repair_of = repair_of.map(|f| sha256_hex(f.patch.as_bytes()));
        let provider = provider::for_policy(&p.policy)?;
        let first = match repair_of {
            Some(f) => prompt::repair_messages(&p.messages, f.patch, f.report),
            None => p.messages.clone(),
        };
        let mut d = if p.policy.candidates() > 1 {
            let g = candidates::gather(&p, &*provider, &first, call, entry, p.validates())?;
            Draft::chosen(g, repair_of.is_some())
        } else {
            let answer = ask(&p.policy, &*provider, &p.chat(first), call, entry)?;
            let cand = read(&p, &answer.completion.content, &call.watch)?;
            let mut d = Draft::new(cand, answer, repair_of.is_some());
            if p.validates() {
                d.validation = validate(&p, &d.cand, &call.watch)?;
            }
            d
        };
        if p.validates() {
            if !d.passed()
                && !d.repair_spent
                && p.policy.repair.attempts == config::RepairAttempts::Once
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
