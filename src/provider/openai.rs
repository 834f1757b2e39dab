//! OpenAI-compatible `POST {base_url}/chat/completions`: llama.cpp, Ollama and LM Studio (their `/v1` APIs), vLLM,
//! the Hugging Face router, OpenRouter, and any OpenAI-compatible server (a LiteLLM proxy...).
//!
//! The answer is streamed (`stream: true` with `stream_options.include_usage`), so progress can be reported; a
//! cancellation closes the connection at once (see [`super::http`]); a server that answers with one JSON body
//! instead is read as such.
//! Reasoning effort is sent where the provider takes it: OpenRouter `reasoning.effort` (low, high or max only:
//! none→low, medium→high), Hugging Face `reasoning_effort` (low, medium, high: none→low, max→high). A JSON schema
//! that constrains the answer goes in `response_format` (`json_schema`), on vLLM in `structured_outputs.json`.
//! llama.cpp gets `cache_prompt: true` (its slots reuse the prompt prefix a previous request left).

use std::io::{BufRead, BufReader};

use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{Answer, Endpoint};
use super::{ChatRequest, Completion, Message, Prefill, Provider, Usage, Watch};
use crate::error::{Error, Result, excerpt};
use crate::policy::{Effort, Policy, ProviderKind};

/// An OpenAI-compatible chat completions server (see the module's doc).
pub struct OpenAiChat {
    kind: ProviderKind,
    endpoint: Endpoint,
}

impl OpenAiChat {
    /// The server `policy` names.
    pub fn from_policy(policy: &Policy) -> Result<OpenAiChat> {
        Ok(OpenAiChat {
            kind: policy.provider.kind,
            endpoint: Endpoint::from_policy(policy)?,
        })
    }

    /// The exact request body (tests pin it).
    pub fn body(&self, req: &ChatRequest) -> Value {
        self.body_for(req, self.prefill_of(req))
    }

    /// The request's prefill, where this server continues an assistant message: llama.cpp (verified with its
    /// server: a streamed answer holds only the rest, a whole one the prefill too).
    fn prefill_of<'r>(&self, req: &'r ChatRequest) -> Option<&'r Prefill> {
        req.prefill
            .as_ref()
            .filter(|_| self.kind == ProviderKind::Llamacpp)
    }

    /// The body of `req`, with `prefill` as the answer's start and its grammar in place of the schema.
    fn body_for(&self, req: &ChatRequest, prefill: Option<&Prefill>) -> Value {
        let mut messages = req.messages.clone();
        if let Some(p) = prefill {
            messages.push(Message {
                role: "assistant",
                content: p.text.clone(),
            });
        }
        let mut body = json!({
            "model": req.model,
            "messages": messages,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        match (self.kind, req.reasoning) {
            (ProviderKind::Openrouter, e) => {
                let effort = match e {
                    Effort::None | Effort::Low => "low",
                    Effort::Medium | Effort::High => "high",
                    Effort::Max => "max",
                };
                body["reasoning"] = json!({"effort": effort});
            }
            (ProviderKind::Huggingface, e) => {
                let effort = match e {
                    Effort::None | Effort::Low => "low",
                    Effort::Medium => "medium",
                    Effort::High | Effort::Max => "high",
                };
                body["reasoning_effort"] = json!(effort);
            }
            _ => {}
        }
        if let Some(seed) = req.seed {
            body["seed"] = json!(seed);
        }
        // llama.cpp keeps a slot's prompt and reuses its longest common prefix with the next request: the
        // candidates of one proposal and its repair round share every prompt byte but their tail.
        if self.kind == ProviderKind::Llamacpp {
            body["cache_prompt"] = json!(true);
        }
        if let Some(p) = prefill {
            body["grammar"] = json!(p.grammar);
            return body;
        }
        match (self.kind, &req.json_schema) {
            (_, None) => {}
            // vLLM's own field (its `guided_json` before v0.12).
            (ProviderKind::Vllm, Some(schema)) => {
                body["structured_outputs"] = json!({"json": schema});
            }
            // OpenAI's shape: llama.cpp and LM Studio enforce it as a grammar, Ollama's /v1 layer hands
            // `json_schema.schema` to its native `format`.
            (_, Some(schema)) => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": "edits", "strict": true, "schema": schema},
                });
            }
        }
        body
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
    #[serde(default)]
    message: Option<Content>,
    #[serde(default)]
    delta: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
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
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl RawUsage {
    fn cached(&self) -> u64 {
        self.prompt_tokens_details
            .as_ref()
            .map_or(0, |d| d.cached_tokens)
    }

    fn normalise(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            total_tokens: self
                .total_tokens
                .unwrap_or(self.prompt_tokens + self.completion_tokens),
        }
    }
}

impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn complete(&self, req: &ChatRequest, watch: &Watch) -> Result<Completion> {
        let path = "chat/completions";
        let prefill = self.prefill_of(req);
        let prefilled = match prefill {
            Some(p) => {
                let body = self.body_for(req, Some(p));
                self.endpoint
                    .post_unless(path, &body, &req.model, watch, 400)?
            }
            None => None,
        };
        let (mut answer, prefill) = match prefilled {
            Some(answer) => (answer, prefill),
            // No prefill asked, or a server or chat template that will not continue an assistant message
            // (llama.cpp with thinking on refuses a prefill with HTTP 400): the request with its schema.
            None => {
                let body = self.body_for(req, None);
                (self.endpoint.post(path, &body, &req.model, watch)?, None)
            }
        };
        let mut completion = self.read_answer(&mut answer, req, watch)?;
        if let Some(p) = prefill {
            completion.content = whole_answer(&p.text, completion.content);
        }
        Ok(completion)
    }
}

impl OpenAiChat {
    /// The completion of an answer, streamed or whole.
    fn read_answer(
        &self,
        answer: &mut Answer,
        req: &ChatRequest,
        watch: &Watch,
    ) -> Result<Completion> {
        if answer.is_event_stream {
            return self.read_stream(answer, req, watch);
        }
        let text = self.endpoint.read_all(answer)?;
        let parsed: ChatResponse =
            serde_json::from_str(&text).map_err(|e| self.not_chat(&answer.url, &e, &text))?;
        let usage = parsed
            .usage
            .as_ref()
            .map(RawUsage::normalise)
            .unwrap_or_default();
        let cached_input_tokens = parsed.usage.as_ref().map_or(0, RawUsage::cached);
        let choice = parsed.choices.into_iter().next().ok_or_else(|| {
            Error::Provider(format!(
                "{} answered with no choices: {:?}",
                answer.url,
                excerpt(&self.endpoint.redact(&text), 200)
            ))
        })?;
        let mut completion = Completion {
            content: choice.message.and_then(|m| m.content).unwrap_or_default(),
            finish_reason: choice.finish_reason,
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

impl OpenAiChat {
    fn not_chat(&self, url: &str, e: &serde_json::Error, text: &str) -> Error {
        // The parser's message quotes values from the text (decoded): redact the whole message, not just the text.
        Error::Provider(self.endpoint.redact(&format!(
            "{url} answered with JSON that is not a chat completion ({e}): {:?}; check [provider] base_url",
            excerpt(text, 200)
        )))
    }

    /// Read a server-sent event stream of chat completion chunks.
    fn read_stream(
        &self,
        answer: &mut Answer,
        req: &ChatRequest,
        watch: &Watch,
    ) -> Result<Completion> {
        let url = answer.url.clone();
        let reader = BufReader::new(&mut answer.body);
        let mut content = String::new();
        let mut finish_reason = None;
        let mut usage = None;
        let mut model = None;
        let mut chunks = 0u64;
        let mut raw_echo = false;
        let mut cached_input_tokens = 0;
        for line in reader.lines() {
            if watch.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let line = line.map_err(|e| {
                if watch.is_cancelled() {
                    Error::Cancelled
                } else if e.kind() == std::io::ErrorKind::TimedOut || e.to_string().contains("timeout") {
                    Error::Provider(format!(
                        "the model server at {url} did not finish its answer within [limits] request_timeout_secs \
                         ({chunks} chunks received); raise the limit, narrow the task, or check the server"
                    ))
                } else {
                    Error::Provider(format!("the answer stream of {url} broke off: {e}"))
                }
            })?;
            raw_echo |= self.endpoint.secret.found_in(&line);
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            let chunk: ChatResponse =
                serde_json::from_str(data).map_err(|e| self.not_chat(&url, &e, data))?;
            if let Some(u) = &chunk.usage {
                usage = Some(u.normalise());
                cached_input_tokens = u.cached();
            }
            if chunk.model.is_some() {
                model = chunk.model;
            }
            for c in chunk.choices {
                if let Some(text) = c
                    .delta
                    .and_then(|d| d.content)
                    .or_else(|| c.message.and_then(|m| m.content))
                {
                    content.push_str(&text);
                    chunks += 1;
                    (watch.on_progress)(chunks);
                }
                if c.finish_reason.is_some() {
                    finish_reason = c.finish_reason;
                }
            }
        }
        // A stream cut short by a cancel ends like a finished one: the flag tells them apart.
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let mut completion = Completion {
            content,
            finish_reason,
            usage: usage.unwrap_or(Usage {
                input_tokens: 0,
                output_tokens: chunks,
                total_tokens: chunks,
            }),
            model: reported_model(model, &req.model),
            cached_input_tokens,
            key_echoed: None,
        };
        self.endpoint.screen(&mut completion, raw_echo, &req.model);
        Ok(completion)
    }
}

/// The whole answer to a request with a prefill: llama.cpp streams only what it generated (the prefill goes in
/// front), and answers a request that is not streamed with the prefill included; a server that ignored the prefill
/// and wrote a whole JSON answer of its own is taken at its word.
fn whole_answer(prefill: &str, content: String) -> String {
    if content.starts_with(prefill) {
        return content;
    }
    let joined = format!("{prefill}{content}");
    let parses = |t: &str| serde_json::from_str::<Value>(t).is_ok();
    if !parses(&joined) && parses(&content) {
        return content;
    }
    joined
}

/// The longest model name taken from a server; a longer one is replaced by the requested name.
const MAX_MODEL_NAME: usize = 200;

/// The model name the server reported, unless it is empty, a placeholder, over [`MAX_MODEL_NAME`] bytes or holds
/// control characters (a name is shown to people; the server is not trusted).
pub fn reported_model(reported: Option<String>, requested: &str) -> String {
    reported
        .filter(|m| {
            !m.is_empty()
                && m != "-"
                && m.len() <= MAX_MODEL_NAME
                && !m.chars().any(char::is_control)
        })
        .unwrap_or_else(|| requested.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn chat(kind: &str) -> OpenAiChat {
        let text = format!("[provider]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:9/v1\"\n");
        OpenAiChat::from_policy(&crate::policy::parse(&text, Path::new("p.toml")).unwrap()).unwrap()
    }

    fn pinned_request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![Message {
                role: "user",
                content: "fix it".into(),
            }],
            max_tokens: 100,
            temperature: 0.5,
            reasoning: Effort::None,
            json_schema: Some(json!({"type": "object"})),
            seed: None,
            prefill: Some(Prefill {
                text: r#"{"edits":[{"path":"a.py","old":"x = 1","new":""#.into(),
                grammar: "root ::= \"x\"\n".into(),
            }),
        }
    }

    #[test]
    fn llamacpp_continues_the_prefill_under_its_grammar_and_others_get_the_schema() {
        let b = chat("llamacpp").body(&pinned_request());
        let messages = b["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "{b}");
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(
            messages[1]["content"],
            r#"{"edits":[{"path":"a.py","old":"x = 1","new":""#
        );
        assert_eq!(b["grammar"], "root ::= \"x\"\n");
        assert!(b.get("response_format").is_none(), "{b}");
        for kind in ["openai", "ollama", "lmstudio"] {
            let b = chat(kind).body(&pinned_request());
            assert_eq!(b["messages"].as_array().unwrap().len(), 1, "{kind}: {b}");
            assert!(b.get("grammar").is_none(), "{kind}: {b}");
            assert_eq!(
                b["response_format"]["json_schema"]["schema"],
                json!({"type": "object"})
            );
        }
    }

    #[test]
    fn the_whole_answer_is_the_prefill_and_its_rest_whatever_the_server_sent_back() {
        let prefill = r#"{"edits":[{"path":"a.py","old":"x = 1","new":""#;
        let whole = r#"{"edits":[{"path":"a.py","old":"x = 1","new":"x = 2"}]}"#;
        // Streamed: only what was generated.
        assert_eq!(whole_answer(prefill, r#"x = 2"}]}"#.into()), whole);
        // Not streamed: llama.cpp includes the prefill.
        assert_eq!(whole_answer(prefill, whole.into()), whole);
        // A server that ignored the prefill and wrote its own whole answer.
        let own = r#"{"edits":[{"path":"a.py","old":"x = 1","new":"x = 3"}]}"#;
        assert_eq!(whole_answer(prefill, own.into()), own);
        // A rest that does not finish the JSON is still joined: the reader refuses it as cut off.
        assert_eq!(
            whole_answer(prefill, "x = ".into()),
            format!("{prefill}x = ")
        );
        // A rest that starts like an object is part of `new`, not an answer of its own.
        assert_eq!(
            whole_answer(prefill, r#"{"}]}"#.into()),
            format!(r#"{prefill}{{"}}]}}"#)
        );
    }
}
