//! Model providers: one small trait, so the service never knows which server it talks to.
//!
//! A provider takes a [`ChatRequest`] and returns the model's text with normalised token usage, or an
//! [`Error::Provider`](crate::Error::Provider) that names the server URL (never a key) and the fix. While it waits
//! it reports progress and honours cancellation through a [`Watch`].
//!
//! Adapters: [`openai::OpenAiChat`] (`/chat/completions`: llama.cpp, Hugging Face router, OpenRouter, any
//! OpenAI-compatible server) and [`responses::Responses`] (`/responses`: DeepSeek). [`http`] holds what they share:
//! the key, retries with backoff, and error messages; [`connect`] its TCP step, a connect that a cancel ends at
//! once. [`window`]: the context window (the policy's, or the one the
//! server reports) and the check that the server read the whole prompt.

mod connect;
pub mod http;
pub mod openai;
pub mod responses;
pub mod window;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::error::Result;
use crate::policy::{Effort, Policy, ProviderKind};

/// One message of a chat.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

/// What the service asks a model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The model id, as the provider spells it.
    pub model: String,
    /// The chat, in order.
    pub messages: Vec<Message>,
    /// The answer budget, in tokens.
    pub max_tokens: u32,
    /// The sampling temperature.
    pub temperature: f32,
    /// How hard a reasoning model should think (mapped per provider).
    pub reasoning: Effort,
    /// When set, the answer is constrained to this JSON schema (where the provider supports it).
    pub json_schema: Option<serde_json::Value>,
    /// When set, the sampling seed (chat completions servers; candidates get their own).
    pub seed: Option<u64>,
    /// When set, the start of the answer, written for the model: a server that continues an assistant message
    /// (llama.cpp) generates only the rest, under [`Prefill::grammar`], in place of `json_schema`; the completion's
    /// content is the whole answer, the start included. Other servers get `json_schema`.
    pub prefill: Option<Prefill>,
}

/// The start of an answer and the grammar of its rest (see [`ChatRequest::prefill`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefill {
    /// The answer's first bytes, sent as an assistant message the server continues.
    pub text: String,
    /// A GBNF grammar (llama.cpp's) that the rest of the answer must match.
    pub grammar: String,
}

/// Token usage, normalised across providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Both, as the server counted them.
    pub total_tokens: u64,
}

/// What a model answered.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The answer's text.
    pub content: String,
    /// `stop`, `length`, ... as the server reported it (`length` also for the Responses API's
    /// `max_output_tokens`).
    pub finish_reason: Option<String>,
    /// Its token usage.
    pub usage: Usage,
    /// The model name the server reported, else the one requested.
    pub model: String,
    /// Prompt tokens the server says it took from its prompt cache (`prompt_tokens_details.cached_tokens`), 0 when
    /// it does not say. Some servers leave these out of their prompt count.
    pub cached_input_tokens: u64,
    /// Where the provider key was found in what the server sent (`None`: nowhere). Such an answer's content and
    /// model name are already dropped; it is refused, never parsed.
    pub key_echoed: Option<&'static str>,
}

/// Progress reporting and cancellation for one request.
#[derive(Clone)]
pub struct Watch {
    /// Called with the number of answer chunks received so far (roughly tokens) while the answer streams.
    pub on_progress: Arc<dyn Fn(u64) + Send + Sync>,
    /// Set to abort the request: its connection is closed at once (see [`http`]), and the provider returns
    /// [`crate::Error::Cancelled`].
    pub cancelled: Arc<AtomicBool>,
}

impl Default for Watch {
    /// No progress reporting, never cancelled.
    fn default() -> Watch {
        Watch {
            on_progress: Arc::new(|_| {}),
            cancelled: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Watch {
    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// A model server.
pub trait Provider: Send + Sync {
    /// Short provider name for results and logs (`llamacpp`, `openrouter`...).
    fn name(&self) -> &str;
    /// Send one request and wait for the whole answer.
    fn complete(&self, request: &ChatRequest, watch: &Watch) -> Result<Completion>;
}

/// The provider a policy names.
pub fn for_policy(policy: &Policy) -> Result<Box<dyn Provider>> {
    Ok(match policy.provider.kind {
        ProviderKind::Deepseek => Box::new(responses::Responses::from_policy(policy)?),
        _ => Box::new(openai::OpenAiChat::from_policy(policy)?),
    })
}
