//! OpenAI-compatible `POST {base_url}/chat/completions` over ureq: llama.cpp, the Hugging Face router, OpenRouter.
//!
//! The key, when the policy names a variable for it, is read from the environment once and sent only in the
//! `Authorization` header; no error message here can contain it.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{ChatRequest, Completion, Provider, Usage};
use crate::config::Policy;
use crate::error::{Error, Result, excerpt};

/// The largest answer body read from a server.
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

pub struct OpenAiChat {
    name: &'static str,
    base_url: String,
    key: Option<String>,
    key_env: Option<String>,
    timeout: Duration,
    agent: ureq::Agent,
}

impl OpenAiChat {
    pub fn from_policy(policy: &Policy) -> Result<OpenAiChat> {
        let key_env = policy.api_key_env();
        let key = match &key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
                _ => {
                    return Err(Error::Provider(format!(
                        "the environment variable {var} (named by [provider] api_key_env) is not set; \
                         export it in the environment that starts the worker"
                    )));
                }
            },
        };
        let timeout = Duration::from_secs(policy.limits.request_timeout_secs);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(OpenAiChat {
            name: policy.provider.kind.name(),
            base_url: policy.base_url(),
            key,
            key_env,
            timeout,
            agent,
        })
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        self.name
    }

    fn complete(&self, req: &ChatRequest) -> Result<Completion> {
        let url = self.url();
        let mut body = json!({
            "model": req.model,
            "messages": req.messages,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "stream": false,
        });
        if let Some(schema) = &req.json_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "edits", "strict": true, "schema": schema},
            });
        }
        let mut call = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.key {
            call = call.header("Authorization", format!("Bearer {key}"));
        }
        let mut resp = call
            .send_json(&body)
            .map_err(|e| self.transport_error(&url, e))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_string()
            .map_err(|e| self.transport_error(&url, e))?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(&url, status, &req.model, &text));
        }
        let parsed: ChatResponse = serde_json::from_str(&text).map_err(|e| {
            Error::Provider(format!(
                "{url} answered with JSON that is not a chat completion ({e}): {:?}; check [provider] base_url",
                excerpt(&self.redact(&text), 200)
            ))
        })?;
        let choice = parsed.choices.into_iter().next().ok_or_else(|| {
            Error::Provider(format!(
                "{url} answered with no choices: {:?}",
                excerpt(&self.redact(&text), 200)
            ))
        })?;
        let content = choice.message.and_then(|m| m.content).unwrap_or_default();
        let usage = parsed
            .usage
            .map(|u| Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                total_tokens: u
                    .total_tokens
                    .unwrap_or(u.prompt_tokens + u.completion_tokens),
            })
            .unwrap_or_default();
        Ok(Completion {
            content,
            finish_reason: choice.finish_reason,
            usage,
            model: parsed
                .model
                .filter(|m| !m.is_empty() && m != "-")
                .unwrap_or_else(|| req.model.clone()),
        })
    }
}

impl OpenAiChat {
    fn transport_error(&self, url: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => Error::Provider(format!(
                "{url} did not answer within [limits] request_timeout_secs = {}; the model may be overloaded, \
                 or raise the limit",
                self.timeout.as_secs()
            )),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound | ureq::Error::Io(_) => {
                Error::Provider(format!(
                    "cannot reach the model server at {url} ({e}); start it, or fix [provider] base_url in the policy"
                ))
            }
            ureq::Error::BodyExceedsLimit(n) => Error::Provider(format!(
                "{url} sent an answer larger than {n} bytes; refused"
            )),
            other => Error::Provider(format!("request to {url} failed: {other}")),
        }
    }

    fn status_error(&self, url: &str, status: u16, model: &str, body: &str) -> Error {
        let hint = match status {
            401 | 403 => match &self.key_env {
                Some(var) => format!("the key in {var} was rejected; check that variable"),
                None => "the server wants a key; name its variable in [provider] api_key_env"
                    .to_string(),
            },
            404 => format!(
                "model {model:?} or the endpoint was not found; check [models] and [provider] base_url"
            ),
            429 => "rate limited; wait and retry".to_string(),
            500..=599 => "the server failed; retry later".to_string(),
            _ => "unexpected status".to_string(),
        };
        let body = self.redact(body);
        Error::Provider(format!(
            "{url} answered HTTP {status}: {hint}. Body: {:?}",
            excerpt(body.trim(), 300)
        ))
    }

    /// A server that echoes the request must not make us print the key.
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(k) if k.len() >= 4 => text.replace(k.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }
}
