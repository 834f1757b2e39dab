//! The provider catalogue: the kinds of model server the policy can name (`[provider] kind`), and what each uses
//! where the policy says nothing (its URL, key variable, models, context window, the field that constrains JSON).

use serde::Deserialize;

/// Which kind of model server the policy talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A local llama.cpp server (OpenAI-compatible chat completions, no key).
    Llamacpp,
    /// The Hugging Face inference router (OpenAI-compatible chat completions, GPT-OSS).
    Huggingface,
    /// OpenRouter (OpenAI-compatible chat completions, GLM).
    Openrouter,
    /// DeepSeek (the Responses API).
    Deepseek,
    /// Any other OpenAI-compatible chat completions server (a LiteLLM proxy, ...): `base_url` required.
    Openai,
    /// A local Ollama server (its OpenAI-compatible API at `/v1`, no key).
    Ollama,
    /// A local LM Studio server (its OpenAI-compatible API at `/v1`, no key).
    Lmstudio,
    /// A vLLM server (OpenAI-compatible chat completions, no key by default).
    Vllm,
}

impl ProviderKind {
    /// Its name in the policy file (`[provider] kind`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Llamacpp => "llamacpp",
            ProviderKind::Huggingface => "huggingface",
            ProviderKind::Openrouter => "openrouter",
            ProviderKind::Deepseek => "deepseek",
            ProviderKind::Openai => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Lmstudio => "lmstudio",
            ProviderKind::Vllm => "vllm",
        }
    }

    /// Whether it is a model server on the user's own machine (or network): no key, no price per token, the
    /// local defaults of `[sampling]`.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            ProviderKind::Llamacpp
                | ProviderKind::Ollama
                | ProviderKind::Lmstudio
                | ProviderKind::Vllm
        )
    }

    /// The request field through which this kind's server constrains an answer to a JSON schema, when `[edit]
    /// format = "auto"` asks for JSON edits there; `None`: auto asks for a unified diff (the schema is still sent,
    /// as `response_format`, when the policy asks for JSON edits).
    pub fn schema_field(self) -> Option<&'static str> {
        match self {
            ProviderKind::Llamacpp | ProviderKind::Lmstudio => Some("response_format"),
            // Ollama's /v1 layer hands `response_format.json_schema.schema` to its native `format`.
            ProviderKind::Ollama => Some("response_format (Ollama's format)"),
            ProviderKind::Vllm => Some("structured_outputs.json"),
            _ => None,
        }
    }

    /// Default base URL, key variable and (flash, pro) models of each provider.
    pub fn defaults(self) -> ProviderDefaults {
        match self {
            ProviderKind::Llamacpp => ProviderDefaults {
                base_url: "http://127.0.0.1:8080/v1",
                api_key_env: None,
                flash: "local",
                pro: "local",
            },
            ProviderKind::Huggingface => ProviderDefaults {
                base_url: "https://router.huggingface.co/v1",
                api_key_env: Some("HF_INFERENCE_TOKEN"),
                flash: "openai/gpt-oss-20b",
                pro: "openai/gpt-oss-120b",
            },
            ProviderKind::Openrouter => ProviderDefaults {
                base_url: "https://openrouter.ai/api/v1",
                api_key_env: Some("OPENROUTER_API_KEY"),
                flash: "z-ai/glm-5.3-flash",
                pro: "z-ai/glm-5.3",
            },
            ProviderKind::Deepseek => ProviderDefaults {
                base_url: "https://api.deepseek.com/v1",
                api_key_env: Some("DEEPSEEK_API_KEY"),
                flash: "deepseek-v4-flash",
                pro: "deepseek-v4-pro",
            },
            ProviderKind::Openai => ProviderDefaults {
                base_url: "http://127.0.0.1:8000/v1",
                api_key_env: None,
                flash: "local",
                pro: "local",
            },
            ProviderKind::Ollama => ProviderDefaults {
                base_url: "http://127.0.0.1:11434/v1",
                api_key_env: None,
                flash: "qwen2.5-coder:7b",
                pro: "qwen2.5-coder:14b",
            },
            ProviderKind::Lmstudio => ProviderDefaults {
                base_url: "http://127.0.0.1:1234/v1",
                api_key_env: None,
                flash: "qwen2.5-coder-7b-instruct",
                pro: "qwen2.5-coder-14b-instruct",
            },
            ProviderKind::Vllm => ProviderDefaults {
                base_url: "http://127.0.0.1:8000/v1",
                api_key_env: None,
                flash: "Qwen/Qwen2.5-Coder-7B-Instruct",
                pro: "Qwen/Qwen2.5-Coder-7B-Instruct",
            },
        }
    }

    /// The context window assumed when `[models] context_window` is not set, in tokens.
    pub fn default_context_window(self) -> u64 {
        match self {
            ProviderKind::Llamacpp | ProviderKind::Openai | ProviderKind::Vllm => 8192,
            // Both load a model with a 4,096-token window unless told otherwise (Ollama on less than 24 GiB of
            // VRAM, LM Studio by default).
            ProviderKind::Ollama | ProviderKind::Lmstudio => 4096,
            _ => 128_000,
        }
    }
}

/// What a provider kind uses where the policy says nothing (see [`ProviderKind::defaults`]).
pub struct ProviderDefaults {
    /// The base URL of its API.
    pub base_url: &'static str,
    /// The environment variable that holds its key; `None` when it needs none.
    pub api_key_env: Option<&'static str>,
    /// The model for `complexity = "low"`.
    pub flash: &'static str,
    /// The model for `complexity = "medium"`.
    pub pro: &'static str,
}

/// Every provider kind, for the tests that go through them all.
#[cfg(test)]
pub(super) const ALL_PROVIDERS: [ProviderKind; 8] = [
    ProviderKind::Llamacpp,
    ProviderKind::Huggingface,
    ProviderKind::Openrouter,
    ProviderKind::Deepseek,
    ProviderKind::Openai,
    ProviderKind::Ollama,
    ProviderKind::Lmstudio,
    ProviderKind::Vllm,
];
