//! The Responses API (`POST {base_url}/responses`), as DeepSeek serves it.
//!
//! Sent: `model`, `input` (the chat messages), `max_output_tokens`, `temperature`, `reasoning.effort` (none is not
//! sent; max is sent as high), and `text.format` with the JSON schema when the answer is constrained. Read: the
//! `output_text` items of the `message` outputs, `usage.{input,output,total}_tokens`, and `status: incomplete` with
//! `incomplete_details.reason = max_output_tokens` as a cut-off answer (`finish_reason: length`).

use serde::Deserialize;
use serde_json::{Value, json};

use super::http::Endpoint;
use super::openai::reported_model;
use super::{ChatRequest, Completion, Provider, Usage, Watch};
use crate::error::{Error, Result, excerpt};
use crate::policy::{Effort, Policy};

/// A Responses API server (see the module's doc).
pub struct Responses {
    endpoint: Endpoint,
}

impl Responses {
    /// The server `policy` names.
    pub fn from_policy(policy: &Policy) -> Result<Responses> {
        Ok(Responses {
            endpoint: Endpoint::from_policy(policy)?,
        })
    }

    /// The exact request body (tests pin it).
    pub fn body(&self, req: &ChatRequest) -> Value {
        let mut body = json!({
            "model": req.model,
            "input": req.messages,
            "max_output_tokens": req.max_tokens,
            "temperature": req.temperature,
        });
        let effort = match req.reasoning {
            Effort::None => None,
            Effort::Low => Some("low"),
            Effort::Medium => Some("medium"),
            Effort::High | Effort::Max => Some("high"),
        };
        if let Some(e) = effort {
            body["reasoning"] = json!({"effort": e});
        }
        if let Some(schema) = &req.json_schema {
            body["text"] = json!({"format": {"type": "json_schema", "name": "edits", "strict": true, "schema": schema}});
        }
        body
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    output: Vec<Output>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct Output {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    content: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl Provider for Responses {
    fn name(&self) -> &str {
        "deepseek"
    }

    fn complete(&self, req: &ChatRequest, watch: &Watch) -> Result<Completion> {
        let mut answer = self
            .endpoint
            .post("responses", &self.body(req), &req.model, watch)?;
        let text = self.endpoint.read_all(&mut answer)?;
        let parsed: Response = serde_json::from_str(&text).map_err(|e| {
            Error::Provider(self.endpoint.redact(&format!(
                "{} answered with JSON that is not a Responses API result ({e}): {:?}; check [provider] base_url",
                answer.url,
                excerpt(&text, 200)
            )))
        })?;
        let content: String = parsed
            .output
            .iter()
            .filter(|o| o.kind == "message")
            .flat_map(|o| o.content.iter())
            .filter(|p| p.kind == "output_text")
            .filter_map(|p| p.text.as_deref())
            .collect();
        (watch.on_progress)(1);
        let cut = parsed.status.as_deref() == Some("incomplete")
            && parsed
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref())
                == Some("max_output_tokens");
        let cached_input_tokens = parsed
            .usage
            .as_ref()
            .and_then(|u| u.input_tokens_details.as_ref())
            .map_or(0, |d| d.cached_tokens);
        let usage = parsed
            .usage
            .map(|u| Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                total_tokens: u.total_tokens.unwrap_or(u.input_tokens + u.output_tokens),
            })
            .unwrap_or_default();
        let mut completion = Completion {
            content,
            finish_reason: Some(if cut { "length" } else { "stop" }.to_string()),
            usage,
            model: reported_model(parsed.model, &req.model),
            cached_input_tokens,
            key_echoed: None,
        };
        let raw_echo = self.endpoint.secret.found_in(&text);
        self.endpoint.screen(&mut completion, raw_echo, &req.model);
        Ok(completion)
    }
}
