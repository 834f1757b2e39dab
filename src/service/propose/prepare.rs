//! Stage 1 of a proposal: the request, checked, its workspace opened, its model routed, its selection read and
//! its prompt built, before any model call. Imports nothing of the other stages.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::confine;
use crate::error::Result;
use crate::locate_rank;
use crate::patch::reader::AnswerFormat;
use crate::policy;
use crate::prompt;
use crate::provider::window::{self, ContextWindow};
use crate::provider::{ChatRequest, Message};
use crate::service::pin_bounds;
use crate::service::verdicts::Verdicts;
use crate::service::{Call, invalid, open_workspace};
use crate::task::{Task, UnknownFields};
use crate::workspace::{Selection, Workspace};

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

/// A checked request, read and turned into a prompt: what every model call of one proposal shares.
pub(super) struct Prepared {
    pub(super) ws: Workspace,
    pub(super) task: Task,
    pub(super) policy: policy::Policy,
    pub(super) model: String,
    pub(super) selection: Selection,
    pub(super) format: AnswerFormat,
    pub(super) schema: Option<serde_json::Value>,
    /// For candidates after the first (JSON edits only): schemas pinned each to one likely line, each with its
    /// tight answer budget ([`pin_bounds`]). Set once, before the first pinned request ([`Prepared::pin`]): at once,
    /// or once the checks have run on the files before any edit, from what their failure names.
    pub(super) pinned: std::sync::OnceLock<Vec<pin_bounds::Pin>>,
    /// The patches known to fail validation, with their results: never validated twice.
    pub(super) verdicts: Verdicts,
    pub(super) messages: Vec<Message>,
    pub(super) context_window: ContextWindow,
}

/// The temperatures of candidates after the first (which takes the policy's), in turn: hotter, for other answers.
const CANDIDATE_TEMPERATURES: [f32; 7] = [0.7, 1.0, 0.5, 0.9, 0.6, 1.1, 0.8];

impl Prepared {
    pub(super) fn chat(&self, messages: Vec<Message>) -> ChatRequest {
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
        let messages = match n {
            0 => messages,
            n => self
                .pins()
                .get(n - 1)
                .and_then(|p| p.messages.clone())
                .unwrap_or(messages),
        };
        ChatRequest {
            model: self.model.clone(),
            messages,
            max_tokens: match n {
                0 => None,
                n => self.pins().get(n - 1).map(|p| p.max_tokens),
            }
            .unwrap_or(self.policy.limits.max_output_tokens),
            temperature,
            reasoning: self.policy.provider.reasoning_effort,
            json_schema: match n {
                0 => self.schema.clone(),
                n => self
                    .pins()
                    .get(n - 1)
                    .map(|p| p.schema.clone())
                    .or_else(|| self.schema.clone()),
            },
            seed,
            prefill: match n {
                0 => None,
                n => self.pins().get(n - 1).and_then(|p| p.prefill.clone()),
            },
        }
    }

    /// The pinned schemas, once set (none before).
    pub(super) fn pins(&self) -> &[pin_bounds::Pin] {
        self.pinned.get().map_or(&[], Vec::as_slice)
    }

    /// Set the pinned schemas of candidates after the first: each pinned to one of the places
    /// [`locate_rank::rank`] ranks first ([`spread`]), with `failing` what the checks said before any edit (empty
    /// when they did not run). Only the first call sets them; none without a JSON schema or with one candidate.
    pub(super) fn pin(&self, failing: &locate_rank::Failing) {
        let k = self.policy.candidates() as usize;
        let pins = match &self.schema {
            Some(_) if k > 1 => {
                let bounds = prompt::SchemaBounds::for_complexity(&self.task.complexity);
                // A slip of the ranking's heuristics must not cost the proposal: a panic there pins nothing.
                let spots = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    locate_rank::rank(
                        &self.task,
                        &self.selection.files,
                        &self.selection.focus,
                        failing,
                        locate_rank::Signals::ALL,
                        k - 1,
                    )
                }))
                .unwrap_or_default();
                spread(&spots, k - 1)
                    .iter()
                    .map(|s| pin_bounds::Pin {
                        messages: Some(self.messages_at(s)),
                        ..pin_bounds::pin(
                            prompt::pinned_schema(&s.path, &s.text, s.insert, bounds),
                            self.policy.limits.max_output_tokens,
                        )
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        // A second call finds them set and changes nothing.
        let _ = self.pinned.set(pins);
    }

    /// The prompt of a candidate pinned to `spot`: the proposal's, with the pinned file shown only around that line
    /// (the line and [`crate::patch::focus::CONTEXT_LINES`] lines each side, as a primary's `PATH:N-N` shows it),
    /// so that a small model's answer is not drawn to the rest of the file; the proposal's own when that window is the whole file. Its instructions and
    /// example, the start of every prompt, stay the same, and so do the prompts of pins to one place.
    fn messages_at(&self, spot: &locate_rank::Spot) -> Vec<crate::provider::Message> {
        let lines = self
            .selection
            .files
            .get(&spot.path)
            .and_then(Option::as_ref);
        let lines = lines.map_or(0, |p| crate::patch::focus::lines_of(&p.text).len());
        let context = crate::patch::focus::CONTEXT_LINES;
        let whole = spot.line <= 1 + context && spot.line + context >= lines;
        if whole && !self.selection.focus.contains_key(&spot.path) {
            // The window would show the whole file: the proposal's own prompt, whose every byte the server has.
            return self.messages.clone();
        }
        let mut focus = self.selection.focus.clone();
        let at = crate::patch::focus::LineRange {
            start: spot.line,
            end: spot.line,
        };
        focus.insert(spot.path.clone(), vec![at]);
        prompt::messages(&self.task, &self.selection.files, &focus, self.format)
    }

    /// Whether proposals are validated in a sandbox copy before they are returned.
    pub(super) fn validates(&self) -> bool {
        self.policy.validation.on_propose && !self.policy.validation.commands.is_empty()
    }
}

/// The places `n` pinned candidates go to, from the ranked `spots`: one in four of them (rounded down) to the next
/// places in order, each once, and the rest to the first place (with the default 4 candidates: all 3 pins on the
/// first place); when fewer places are ranked, the first takes the rest. A small model writes the right line in few
/// of its samples even when handed it (the solve bench, BENCHMARKS.md section 17c: SmolLM2 solved 2 of 22 with
/// three distinct pins, 3 and 1 with two on the first and one on the second, 6 and 6 with all three on the first
/// place, 8 handed the line), and the first place is right more often than the second and third together on three
/// of the four held-out sets; so the first place gets the samples, and only a large budget buys other places.
pub(super) fn spread(spots: &[locate_rank::Spot], n: usize) -> Vec<locate_rank::Spot> {
    let Some(first) = spots.first() else {
        return Vec::new();
    };
    let others = spots.iter().skip(1).take(n / 4);
    let mut out: Vec<locate_rank::Spot> = others.cloned().collect();
    let firsts = n - out.len();
    out.splice(0..0, std::iter::repeat_n(first.clone(), firsts));
    out
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
    let context_window = window::for_model(&policy, &model);
    Ok(Prepared {
        ws,
        task: req.task.clone(),
        policy,
        model,
        selection,
        format,
        schema,
        pinned: std::sync::OnceLock::new(),
        verdicts: Verdicts::default(),
        messages,
        context_window,
    })
}

/// The edit format to ask for, and its JSON schema when it has one: the policy's, unless the selection rules it out.
fn answer_format(
    policy: &policy::Policy,
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
