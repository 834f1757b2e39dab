//! Model providers: one small trait, so the service never knows which server it talks to.
//!
//! A provider takes a [`ChatRequest`] and returns the model's text with normalised token usage, or an
//! [`Error::Provider`](crate::Error::Provider) that names the server URL (never a key) and the fix.

pub mod openai;

use serde::Serialize;

use crate::config::Policy;
use crate::error::Result;

/// One message of a chat.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

/// What the service asks a model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    pub temperature: f32,
    /// When set, the answer is constrained to this JSON schema (where the provider supports it).
    pub json_schema: Option<serde_json::Value>,
}

/// Token usage, normalised across providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

/// What a model answered.
#[derive(Debug, Clone)]
pub struct Completion {
    pub content: String,
    /// `stop`, `length`, ... as the server reported it.
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// The model name the server reported, else the one requested.
    pub model: String,
}

/// A model server.
pub trait Provider: Send + Sync {
    /// Short provider name for results and logs (`llamacpp`, `openrouter`...).
    fn name(&self) -> &str;
    /// Send one chat request and wait for the whole answer.
    fn complete(&self, request: &ChatRequest) -> Result<Completion>;
}

/// The provider a policy names.
pub fn for_policy(policy: &Policy) -> Result<Box<dyn Provider>> {
    Ok(Box::new(openai::OpenAiChat::from_policy(policy)?))
}
