//! Read-only delegation of non-patch work (`delegate_task`): the same task checks, scope and model call as a proposal,
//! and the model's text returned as an untrusted draft. Nothing is written anywhere but the ledger.

use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, Service, ask, invalid, logged, open_workspace};
use crate::error::{Error, Result};
use crate::ledger;
use crate::prompt;
use crate::provider::window::{self, ContextWindow};
use crate::provider::{self, ChatRequest, Usage};
use crate::task::{OutputFormat, Task, TaskKind, UnknownFields};
use crate::workspace;

/// The most output tokens a delegation may ask for.
pub const MAX_DELEGATE_OUTPUT_TOKENS: u32 = 16_000;

/// Input of `delegate_task` / `local-llm-worker delegate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DelegateRequest {
    /// Absolute path of the project; it must hold local-llm-worker.toml (or lie under LOCAL_LLM_ALLOWED_ROOTS).
    pub workspace_root: String,
    /// The kind of read-only work.
    pub task_kind: TaskKind,
    /// The scoped task (its files may be empty: the model then sees only the request).
    #[serde(flatten)]
    pub task: Task,
    /// text (default) | markdown | json (checked to parse) | patch (text for you to read; never applied)
    #[serde(default)]
    pub output_format: Option<OutputFormat>,
    /// Answer budget, at most 16000 (default: the policy's max_output_tokens).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Fields no tool takes, refused by name.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: UnknownFields,
}

/// Output of `delegate_task`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DelegateResult {
    /// The model's answer: an untrusted draft to verify.
    pub content: String,
    /// The format the answer was asked in.
    pub output_format: OutputFormat,
    /// The files the model was shown.
    pub files_read: Vec<String>,
    /// The provider that answered.
    pub provider: String,
    /// The model that answered, as the server named it.
    pub model: String,
    /// Tokens spent.
    pub usage: Usage,
    /// Time the delegation took.
    pub elapsed_ms: u64,
    /// Time spent waiting for the model, included in elapsed_ms.
    pub model_ms: u64,
    /// The context window the request was checked against, and where that figure came from.
    pub context_window: ContextWindow,
    /// When the answer is longer than hosts show in one tool result: a file holding exactly the same text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_file: Option<String>,
    /// What the caller should know about this result's size (the answer is never cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Service {
    /// Read-only delegation of non-patch work. Never writes to the workspace.
    pub fn delegate(&self, req: &DelegateRequest, call: &Call) -> Result<DelegateResult> {
        logged(
            "delegate",
            &req.workspace_root,
            call.record(),
            |entry| delegate_checked(req, call, entry),
            |_| None,
        )
    }
}

/// The request's own checks, before the workspace is opened: returns the output format and whether the task is
/// medium complexity.
fn check(req: &DelegateRequest) -> Result<(OutputFormat, bool)> {
    req.unknown.refuse("delegate_task")?;
    if let TaskKind::Unknown(k) = &req.task_kind {
        return Err(invalid(format!(
            "task_kind {k:?} is not one of {}; code changes go through propose_patch",
            TaskKind::VALUES.join(", ")
        )));
    }
    if let Some(path) = req.task.create.first() {
        return Err(invalid(format!(
            "delegate_task creates no files (create names {path}); new files come from propose_patch"
        )));
    }
    let format = req.output_format.clone().unwrap_or(OutputFormat::Text);
    format.known()?;
    if let Some(n) = req.max_output_tokens
        && (n == 0 || n > MAX_DELEGATE_OUTPUT_TOKENS)
    {
        return Err(invalid(format!(
            "max_output_tokens {n} is out of range 1..={MAX_DELEGATE_OUTPUT_TOKENS}"
        )));
    }
    let medium = req.task.check()?;
    Ok((format, medium))
}

fn delegate_checked(
    req: &DelegateRequest,
    call: &Call,
    entry: &mut ledger::Entry,
) -> Result<DelegateResult> {
    let started = Instant::now();
    let (format, medium) = check(req)?;
    let (ws, loaded) = open_workspace(&req.workspace_root)?;
    let policy = &call.policy_for(&loaded.policy);
    let model = policy.route(medium, req.task.model.as_deref())?;
    let selection = if req.task.files.is_empty() {
        workspace::Selection::default()
    } else {
        ws.read_selection(&req.task.files, &policy.limits)?
    };
    let files = &selection.files;
    let context_window = window::for_model(policy, &model);
    let chat = ChatRequest {
        model,
        messages: prompt::delegate_messages(
            req.task_kind.as_str(),
            format.as_str(),
            &req.task,
            files,
            &selection.focus,
        ),
        max_tokens: req
            .max_output_tokens
            .unwrap_or(policy.limits.max_output_tokens),
        temperature: policy.provider.temperature,
        reasoning: policy.provider.reasoning_effort,
        // A local server enforces a schema as a grammar: a JSON answer then parses and ends when its object closes.
        json_schema: (format == OutputFormat::Json
            && policy.provider.kind.schema_field().is_some())
        .then(prompt::bounded_json_schema),
        seed: None,
        prefill: None,
    };
    entry.bytes_read = selection.bytes_shown();
    let provider = provider::for_policy(policy)?;
    let answer = ask(policy, &*provider, &chat, call, entry)?;
    let content = checked_content(&answer.completion.content, &format)?;
    let (content_file, note) =
        super::propose::keep_if_large(&format!("{}.txt", crate::proposal::new_id()), &content);
    Ok(DelegateResult {
        content_file,
        note,
        content,
        output_format: format,
        files_read: files.keys().cloned().collect(),
        provider: answer.provider,
        model: answer.completion.model,
        usage: answer.completion.usage,
        elapsed_ms: started.elapsed().as_millis() as u64,
        model_ms: answer.ms,
        context_window,
    })
}

/// The answer as returned: trimmed, not empty, and for JSON, parsed (a fence around it taken off).
fn checked_content(answer: &str, format: &OutputFormat) -> Result<String> {
    let content = answer.trim();
    if content.is_empty() {
        return Err(Error::ModelAnswer(
            "the model returned an empty answer; retry or rephrase the task".into(),
        ));
    }
    if *format != OutputFormat::Json {
        return Ok(content.to_string());
    }
    let body = content
        .strip_prefix("```json")
        .or_else(|| content.strip_prefix("```"))
        .and_then(|s| s.trim_end().strip_suffix("```"))
        .unwrap_or(content)
        .trim();
    if let Err(e) = serde_json::from_str::<serde_json::Value>(body) {
        return Err(Error::ModelAnswer(format!(
            "output_format is json but the answer does not parse ({e}): {:?}",
            crate::error::excerpt(content, 300)
        )));
    }
    Ok(body.to_string())
}
