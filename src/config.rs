//! The per-project policy file `local-llm-worker.toml`: where it is found, what it may say, and the commented
//! templates `init-project` writes.
//!
//! The policy file is trusted (the user wrote it); everything else the worker reads is not. Unknown keys are refused
//! so that a typo never silently weakens a limit.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, IoContext, Result};

/// The variable the Claude Code plugin sets from its user configuration (the provider key the user entered, kept in
/// the host's keychain or credentials file): read when the policy's own key variable is unset or empty.
pub const PLUGIN_KEY_ENV: &str = "LOCAL_LLM_API_KEY";

/// The file name looked for at the workspace root.
pub use crate::names::POLICY_FILE;

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

/// How hard a reasoning model should think; mapped per provider (`provider::reasoning_field`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// No reasoning asked for.
    None,
    /// A little reasoning.
    Low,
    /// Some reasoning.
    Medium,
    /// Much reasoning (the default).
    #[default]
    High,
    /// The most the model offers; sent as `high` to providers that have no more.
    Max,
}

impl Effort {
    /// Its name in the policy file (`[provider] reasoning_effort`).
    pub fn name(self) -> &'static str {
        match self {
            Effort::None => "none",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

/// One `{provider, model}` pair of `[models] active`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivePair {
    /// The provider kind of the pair.
    pub provider: ProviderKind,
    /// The model id, as that provider spells it.
    pub model: String,
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

/// How the model is asked to write its edit (see `patch::reader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// `json` where the server constrains its output by a JSON schema ([`ProviderKind::schema_field`]), `udiff`
    /// elsewhere.
    #[default]
    Auto,
    /// A unified diff.
    Udiff,
    /// SEARCH/REPLACE blocks.
    SearchReplace,
    /// The whole new content of each file it changes (small files only).
    WholeFile,
    /// JSON edits of whole lines (constrained by a schema where the server supports one).
    Json,
    /// OpenAI's V4A patch (`*** Begin Patch`), the format of Codex's and GPT-OSS's `apply_patch`.
    ApplyPatch,
}

impl EditFormat {
    /// Its name in the policy file (`[edit] format`).
    pub fn name(self) -> &'static str {
        match self {
            EditFormat::Auto => "auto",
            EditFormat::Udiff => "udiff",
            EditFormat::SearchReplace => "search_replace",
            EditFormat::WholeFile => "whole_file",
            EditFormat::Json => "json",
            EditFormat::ApplyPatch => "apply_patch",
        }
    }
}

/// The policy file of a workspace, as read (see the module's doc); [`load`] finds and checks it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// `[provider]`: which model server, how to reach it, how to sample.
    pub provider: ProviderSection,
    /// `[models]`: which models, their context window, the pairs that may be called.
    #[serde(default)]
    pub models: Models,
    /// `[paths]`: which files the model may see and edit.
    #[serde(default)]
    pub paths: Paths,
    /// `[limits]`: the sizes, counts and times the worker keeps to.
    #[serde(default)]
    pub limits: Limits,
    /// `[validation]`: the commands that check an edit, and how they run.
    #[serde(default)]
    pub validation: Validation,
    /// `[edit]`: how the model is asked to write its edit.
    #[serde(default)]
    pub edit: Edit,
    /// `[repair]`: the one bounded repair round.
    #[serde(default)]
    pub repair: Repair,
    /// `[sampling]`: how many answers one proposal asks for, and how.
    #[serde(default)]
    pub sampling: Sampling,
    /// `[ledger]`: what `stats` needs to put a price on what delegation saved.
    #[serde(default)]
    pub ledger: LedgerSettings,
}

/// `[ledger]`: the primary model's price, so `stats` can value the tokens it did not have to read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerSettings {
    /// What a million prompt tokens of the PRIMARY model cost (same currency as `[provider]`'s prices).
    pub primary_price_input_per_mtok: Option<f64>,
}

/// `[sampling]`: candidates. Each key unset takes the default [`Policy::candidates`] and its neighbours describe.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sampling {
    /// How many answers (1 to 8) one proposal asks for; identical patches are merged, and with validation on
    /// propose the first that passes is chosen.
    pub candidates: Option<u64>,
    /// How many of them are asked at once (1 to 8).
    pub parallel: Option<u64>,
    /// The model tokens all candidates of one proposal may spend together: no new answer is asked once reached.
    pub max_total_tokens: Option<u64>,
    /// What `calibrate --write` measured, with its date (kept as a record; `doctor` reads it).
    pub calibrated: Option<String>,
}

/// Candidates per proposal for a local llama.cpp server with validation on propose, when the policy does not say:
/// chosen by the solve bench (BENCHMARKS.md section 12): tokens cost only time there, and validation picks the
/// answer that passes.
pub const LOCAL_DEFAULT_CANDIDATES: u64 = 4;

/// Answers asked at once for a local server when the policy does not say (its slots answer them side by side).
pub const LOCAL_DEFAULT_PARALLEL: u64 = 4;

/// The largest `[sampling] candidates` and `parallel`.
pub const MAX_CANDIDATES: u64 = 8;

/// `[provider]`: the model server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// Which kind of server; it decides the API spoken and the defaults.
    pub kind: ProviderKind,
    /// The server's base URL; `None`: the kind's default (see [`Policy::base_url`]).
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key; never the key itself.
    pub api_key_env: Option<String>,
    /// Sampling temperature sent with every request.
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    /// Reasoning effort for models that reason: none | low | medium | high | max.
    #[serde(default)]
    pub reasoning_effort: Effort,
    /// What a million prompt tokens cost at this provider (any currency; `stats` turns tokens into money with it).
    pub price_input_per_mtok: Option<f64>,
    /// What a million answer tokens cost.
    pub price_output_per_mtok: Option<f64>,
}

/// `[provider] temperature` when the policy does not set it.
pub const DEFAULT_TEMPERATURE: f32 = 0.2;

fn default_temperature() -> f32 {
    DEFAULT_TEMPERATURE
}

/// `[models]`: the models called and their context window.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Models {
    /// Used for `complexity = "low"`.
    pub flash: Option<String>,
    /// Used for `complexity = "medium"`.
    pub pro: Option<String>,
    /// The model's context window in tokens; a request whose estimated prompt plus output budget exceeds it is
    /// refused before sending. `None`: asked from the server (`provider::window`), else the provider's default.
    pub context_window: Option<u64>,
    /// When set, only these {provider, model} pairs may be called; anything else is refused before any request.
    pub active: Option<Vec<ActivePair>>,
}

/// `[paths]`: what the model may see and edit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    /// Patterns of files the model may see and edit: workspace-relative globs read as in `.gitignore` (a leading
    /// `/` anchors, no other `/` matches at any depth, a trailing `/` or a plain name covers a folder; `*` stays within
    /// a folder, `**` crosses folders; a leading `!` is refused). See [`crate::workspace::glob::pattern_globs`].
    #[serde(default = "default_allowed")]
    pub allowed: Vec<String>,
    /// Patterns that are never read or written, on top of the built-in ones (`.git/`, the policy file, secrets); read
    /// like `allowed`, but matched in any case and also covering everything under a folder any of them matches.
    #[serde(default)]
    pub denied: Vec<String>,
    /// The explicit override of the built-in secret denials: globs of secret-looking files that may be read and
    /// written anyway (for example `"**/.env.example"`). `.git/` and the policy file can never be unlocked.
    #[serde(default)]
    pub unlock_secrets: Vec<String>,
    /// Read (and send) files that have more than one hard link. Off by default: such a file's bytes are also another
    /// file's, which may lie outside the workspace or under a denied name. They are never written either way.
    #[serde(default)]
    pub allow_hard_links: bool,
    /// Let a patch delete a file (a diff to `/dev/null`, V4A's `*** Delete File`). Off by default: a deletion is
    /// journaled and undone like any write, but it is destructive work the primary should choose to allow.
    #[serde(default)]
    pub allow_delete: bool,
    /// Let a patch move a file (git's `rename from`/`rename to`, V4A's `*** Move to`); both paths must be allowed
    /// and selected, the destination new. Off by default.
    #[serde(default)]
    pub allow_move: bool,
}

fn default_allowed() -> Vec<String> {
    vec!["**".into()]
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            allowed: default_allowed(),
            denied: Vec::new(),
            unlock_secrets: Vec::new(),
            allow_hard_links: false,
            allow_delete: false,
            allow_move: false,
        }
    }
}

/// `[limits]`: every value positive; what the policy does not set is [`Limits::DEFAULT`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The largest file that may be selected, in bytes.
    pub max_file_bytes: u64,
    /// The selected files together, in bytes.
    pub max_total_bytes: u64,
    /// The largest patch, in bytes.
    pub max_patch_bytes: u64,
    /// The most files one patch may change.
    pub max_files_per_patch: usize,
    /// The most hunks one patch may hold.
    pub max_hunks_per_patch: usize,
    /// The model's answer budget: an answer cut there is refused as truncated.
    pub max_output_tokens: u32,
    /// How long one request to the model server may take, in seconds.
    pub request_timeout_secs: u64,
    /// A proposal not applied within this many seconds expires.
    pub proposal_ttl_secs: u64,
}

impl Limits {
    /// The limits a policy gets for what it does not set (and what `init-project` writes).
    pub const DEFAULT: Limits = Limits {
        max_file_bytes: 1_000_000,
        max_total_bytes: 4_000_000,
        max_patch_bytes: 1_000_000,
        max_files_per_patch: 20,
        max_hunks_per_patch: 200,
        max_output_tokens: 2048,
        request_timeout_secs: 300,
        proposal_ttl_secs: 900,
    };
}

/// The range of a number in the policy: 1 to `max`.
pub struct Bound {
    /// Its section, without brackets.
    pub section: &'static str,
    /// Its key.
    pub key: &'static str,
    /// The largest value accepted.
    pub max: u64,
    /// What it counts, for the refusal.
    pub unit: &'static str,
    /// Its value in a policy (`None`: not set, nothing to check).
    pub get: fn(&Policy) -> Option<u64>,
}

/// Every duration and size of the policy, with its range (from 1). Durations stay within a day (a proposal's life
/// within a week), sizes far above any real use and far below what overflows a deadline or a buffer.
pub const BOUNDS: &[Bound] = &[
    Bound {
        section: "limits",
        key: "max_file_bytes",
        max: 100_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_file_bytes),
    },
    Bound {
        section: "limits",
        key: "max_total_bytes",
        max: 1_000_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_total_bytes),
    },
    Bound {
        section: "limits",
        key: "max_patch_bytes",
        max: 100_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_patch_bytes),
    },
    Bound {
        section: "limits",
        key: "max_files_per_patch",
        max: 10_000,
        unit: "files",
        get: |p| Some(p.limits.max_files_per_patch as u64),
    },
    Bound {
        section: "limits",
        key: "max_hunks_per_patch",
        max: 1_000_000,
        unit: "hunks",
        get: |p| Some(p.limits.max_hunks_per_patch as u64),
    },
    Bound {
        section: "limits",
        key: "max_output_tokens",
        max: 1_000_000,
        unit: "tokens",
        get: |p| Some(u64::from(p.limits.max_output_tokens)),
    },
    Bound {
        section: "limits",
        key: "request_timeout_secs",
        max: 86_400,
        unit: "seconds (a day)",
        get: |p| Some(p.limits.request_timeout_secs),
    },
    Bound {
        section: "limits",
        key: "proposal_ttl_secs",
        max: 604_800,
        unit: "seconds (7 days)",
        get: |p| Some(p.limits.proposal_ttl_secs),
    },
    Bound {
        section: "validation",
        key: "timeout_secs",
        max: 86_400,
        unit: "seconds (a day)",
        get: |p| Some(p.validation.timeout_secs),
    },
    Bound {
        section: "validation",
        key: "sandbox_tmp_mib",
        max: 1_048_576,
        unit: "MiB (1 TiB)",
        get: |p| Some(p.validation.sandbox_tmp_mib),
    },
    Bound {
        section: "validation",
        key: "sandbox_write_mib",
        max: 1_048_576,
        unit: "MiB (1 TiB)",
        get: |p| Some(p.validation.sandbox_write_mib),
    },
    Bound {
        section: "sampling",
        key: "candidates",
        max: MAX_CANDIDATES,
        unit: "answers",
        get: |p| p.sampling.candidates,
    },
    Bound {
        section: "sampling",
        key: "parallel",
        max: MAX_CANDIDATES,
        unit: "requests at once",
        get: |p| p.sampling.parallel,
    },
    Bound {
        section: "sampling",
        key: "max_total_tokens",
        max: 100_000_000,
        unit: "tokens",
        get: |p| p.sampling.max_total_tokens,
    },
    Bound {
        section: "models",
        key: "context_window",
        max: 1_000_000_000,
        unit: "tokens",
        get: |p| p.models.context_window,
    },
];

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// `[validation]`: the commands that check an edit, and how they run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Validation {
    /// Commands run with `sh -c` in the workspace after an apply; any non-zero exit restores the previous bytes.
    pub commands: Vec<String>,
    /// Per command.
    pub timeout_secs: u64,
    /// Also run the commands on every proposal before returning it, in a sandbox copy of the workspace.
    pub on_propose: bool,
    /// Left out of the sandbox copy: a name matches a file or folder of that name at any depth, a name with `/` that
    /// workspace-relative path.
    pub sandbox_skip: Vec<String>,
    /// How validation on propose runs the model's code: `confined` (bubblewrap; refused when unavailable) or
    /// `copy` (an unconfined temporary copy: the model's code runs with the worker's rights).
    pub isolation: crate::confine::Isolation,
    /// Names of environment variables passed to the commands, besides PATH, LANG, LANGUAGE, LC_*, TZ, USER,
    /// LOGNAME, HOME and TMPDIR. Nothing else of the worker's environment reaches them.
    pub env: Vec<String>,
    /// Folders outside the workspace that a confined check may read (read-only; `~/` is the home folder):
    /// toolchains installed in the home folder, which is otherwise hidden. Missing ones are skipped.
    pub sandbox_read: Vec<String>,
    /// Files the sandbox copy keeps although it leaves them out by default (`[paths] denied`, policy files, secret
    /// names): patterns read as `[paths]` reads them. What a check reads there can reach the model in the repair
    /// round.
    pub sandbox_include: Vec<String>,
    /// The size of each fresh folder a confined check may write besides the copy (`/tmp`, HOME, `/dev/shm`), in MiB.
    pub sandbox_tmp_mib: u64,
    /// What the checks of one proposal may add to the filesystem holding the sandbox copy, in MiB (and never more
    /// than half of its free space).
    pub sandbox_write_mib: u64,
}

/// The variables passed to validation commands by default: where toolchains live, never credentials.
pub const DEFAULT_CHECK_ENV: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
];

/// The toolchain folders a confined check may read by default (those that exist).
pub const DEFAULT_SANDBOX_READ: &[&str] = &[
    "~/.cargo",
    "~/.rustup",
    "~/.pyenv",
    "~/.local/bin",
    "~/.local/lib",
    "~/.nvm",
    "~/.volta",
    "~/.asdf",
    "~/.sdkman",
    "~/.deno",
    "~/.bun",
    "~/go",
];

/// `[validation] sandbox_tmp_mib` by default: 512 MiB for each of `/tmp`, HOME and `/dev/shm` (memory-backed).
pub const DEFAULT_SANDBOX_TMP_MIB: u64 = 512;

/// `[validation] sandbox_write_mib` by default: 4 GiB (a build from scratch in the copy), and never more than half
/// of the free space of the filesystem holding it.
pub const DEFAULT_SANDBOX_WRITE_MIB: u64 = 4096;

/// `[validation] timeout_secs` when the policy does not set it: seconds per command.
pub const DEFAULT_CHECK_TIMEOUT_SECS: u64 = 300;

/// The folders a sandbox copy leaves out by default.
pub const DEFAULT_SANDBOX_SKIP: &[&str] = &["target", "node_modules", ".git"];

impl Default for Validation {
    fn default() -> Self {
        Validation {
            commands: Vec::new(),
            timeout_secs: DEFAULT_CHECK_TIMEOUT_SECS,
            on_propose: false,
            sandbox_skip: DEFAULT_SANDBOX_SKIP.iter().map(|s| s.to_string()).collect(),
            isolation: crate::confine::Isolation::Confined,
            env: DEFAULT_CHECK_ENV.iter().map(|s| s.to_string()).collect(),
            sandbox_read: DEFAULT_SANDBOX_READ.iter().map(|s| s.to_string()).collect(),
            sandbox_include: Vec::new(),
            sandbox_tmp_mib: DEFAULT_SANDBOX_TMP_MIB,
            sandbox_write_mib: DEFAULT_SANDBOX_WRITE_MIB,
        }
    }
}

/// The one bounded repair round.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Repair {
    /// 0: never; 1: when validation fails, the model sees its edit and the failing output once and may fix it.
    pub attempts: RepairAttempts,
}

/// `[repair] attempts`: 0 or 1. Any other number is kept, to be refused by name when the policy is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RepairAttempts {
    /// `0`: no repair round.
    #[default]
    Never,
    /// `1`: one bounded repair round per task.
    Once,
    /// Any other number: refused.
    Unsupported(i64),
}

impl RepairAttempts {
    /// The number as the policy writes it.
    pub fn count(self) -> i64 {
        match self {
            RepairAttempts::Never => 0,
            RepairAttempts::Once => 1,
            RepairAttempts::Unsupported(n) => n,
        }
    }
}

impl<'de> Deserialize<'de> for RepairAttempts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match i64::deserialize(d)? {
            0 => RepairAttempts::Never,
            1 => RepairAttempts::Once,
            n => RepairAttempts::Unsupported(n),
        })
    }
}

/// `[edit]`: how the model writes its edit.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The format asked for.
    #[serde(default)]
    pub format: EditFormat,
}

impl Policy {
    /// The policy used for a workspace under `LOCAL_LLM_ALLOWED_ROOTS` that has no policy file: a local llama.cpp
    /// server, every non-secret path allowed, no validation commands.
    pub fn default_for_allowed_root() -> Policy {
        Policy {
            provider: ProviderSection {
                kind: ProviderKind::Llamacpp,
                base_url: None,
                api_key_env: None,
                temperature: default_temperature(),
                reasoning_effort: Effort::default(),
                price_input_per_mtok: None,
                price_output_per_mtok: None,
            },
            models: Models::default(),
            paths: Paths::default(),
            limits: Limits::default(),
            validation: Validation::default(),
            edit: Edit::default(),
            repair: Repair::default(),
            sampling: Sampling::default(),
            ledger: LedgerSettings::default(),
        }
    }

    /// How many answers one proposal asks for: `[sampling] candidates`, else [`LOCAL_DEFAULT_CANDIDATES`] for a
    /// local llama.cpp server whose proposals are validated (nothing else could choose among them), else 1.
    pub fn candidates(&self) -> u64 {
        self.sampling.candidates.unwrap_or(
            if self.provider.kind.is_local()
                && self.validation.on_propose
                && !self.validation.commands.is_empty()
            {
                LOCAL_DEFAULT_CANDIDATES
            } else {
                1
            },
        )
    }

    /// How many answers are asked at once: `[sampling] parallel`, else all of them for a hosted provider (it takes
    /// concurrent requests) and up to [`LOCAL_DEFAULT_PARALLEL`] for a local one; never more than the candidates.
    pub fn parallel(&self) -> u64 {
        let default = if self.provider.kind.is_local() {
            LOCAL_DEFAULT_PARALLEL
        } else {
            MAX_CANDIDATES
        };
        self.sampling
            .parallel
            .unwrap_or(default)
            .min(self.candidates())
            .max(1)
    }

    /// The server's base URL without a trailing `/`: `[provider] base_url`, else the kind's default.
    pub fn base_url(&self) -> String {
        let url = self
            .provider
            .base_url
            .clone()
            .unwrap_or_else(|| self.provider.kind.defaults().base_url.to_string());
        url.trim_end_matches('/').to_string()
    }

    /// The name of the variable that holds the key: `[provider] api_key_env`, else the kind's default; `None`
    /// when there is no key.
    pub fn api_key_env(&self) -> Option<String> {
        self.provider.api_key_env.clone().or_else(|| {
            self.provider
                .kind
                .defaults()
                .api_key_env
                .map(str::to_string)
        })
    }

    /// The provider key and the variable it was read from: the variable [`Policy::api_key_env`] names, else (when
    /// that one is unset or empty, and only when [`Policy::plugin_key_allowed`]) [`PLUGIN_KEY_ENV`], which the Claude
    /// Code plugin fills from its user configuration. `None` when the provider takes no key or no variable that may
    /// be used holds one.
    pub fn api_key(&self) -> Option<(String, String)> {
        self.api_key_from(|name| std::env::var(name).ok())
    }

    /// [`Policy::api_key`] with the variables read by `env` (pure, for the tests).
    fn api_key_from(&self, env: impl Fn(&str) -> Option<String>) -> Option<(String, String)> {
        let var = self.api_key_env()?;
        let read = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        read(&var).map(|k| (var.clone(), k)).or_else(|| {
            self.plugin_key_allowed()
                .then(|| read(PLUGIN_KEY_ENV).map(|k| (PLUGIN_KEY_ENV.to_string(), k)))
                .flatten()
        })
    }

    /// Whether the plugin's key ([`PLUGIN_KEY_ENV`], stored for a hosted provider) may stand in for the policy's
    /// unset variable: only for a hosted kind (Hugging Face, OpenRouter, DeepSeek) at its official endpoint, never
    /// for `llamacpp`, the generic `openai` kind or a changed `base_url`. A policy that names `LOCAL_LLM_API_KEY` as
    /// its `api_key_env` reads it as its own variable, wherever its URL.
    pub fn plugin_key_allowed(&self) -> bool {
        let kind = self.provider.kind;
        matches!(
            kind,
            ProviderKind::Huggingface | ProviderKind::Openrouter | ProviderKind::Deepseek
        ) && self.base_url() == kind.defaults().base_url.trim_end_matches('/')
    }

    /// Which variable's value goes to which URL, in words (the variable's NAME only, never its value): for `doctor`
    /// and the trust summary.
    pub fn key_destination(&self) -> String {
        let url = self.base_url();
        let Some(var) = self.api_key_env() else {
            return format!("sends no key to {url} (no [provider] api_key_env)");
        };
        let plugin = match (var == PLUGIN_KEY_ENV, self.plugin_key_allowed()) {
            (true, _) => String::new(),
            (false, true) => format!(" (when {var} is unset: {PLUGIN_KEY_ENV}, the plugin's key)"),
            (false, false) => format!(
                " ({PLUGIN_KEY_ENV}, the plugin's key, is never sent here: it goes only to a hosted provider at its \
                 official endpoint)"
            ),
        };
        format!("sends the value of {var} to {url}{plugin}")
    }

    /// The provider key ([`Policy::api_key`]) as a [`Secret`](crate::secret::Secret) to look for in what servers
    /// send and to redact from what is shown; none when there is no key.
    pub fn secret(&self) -> crate::secret::Secret {
        self.api_key()
            .map(|(_, k)| crate::secret::Secret::new(&k))
            .unwrap_or_default()
    }

    /// The variables `[validation] env` passes to validation commands; never a key's variable.
    pub fn check_env(&self) -> Vec<String> {
        let key = self.api_key_env();
        self.validation
            .env
            .iter()
            .filter(|n| key.as_deref() != Some(n.as_str()) && n.as_str() != PLUGIN_KEY_ENV)
            .cloned()
            .collect()
    }

    /// The model for a complexity: `low` always uses flash, `medium` uses pro.
    pub fn model_for(&self, medium: bool) -> String {
        let d = self.provider.kind.defaults();
        if medium {
            self.models.pro.clone().unwrap_or_else(|| d.pro.to_string())
        } else {
            self.models
                .flash
                .clone()
                .unwrap_or_else(|| d.flash.to_string())
        }
    }

    /// Route a request to a model: complexity `low` always uses flash, whatever was asked; `medium` uses pro, or
    /// the alias (`flash`, `pro`) or full model id asked for. The pair must be in `[models] active` when that is set.
    pub fn route(&self, medium: bool, requested: Option<&str>) -> Result<String> {
        let model = match (medium, requested.map(str::trim).filter(|m| !m.is_empty())) {
            (false, _) | (true, Some("flash")) => self.model_for(false),
            (true, None | Some("pro")) => self.model_for(true),
            (true, Some(id)) => id.to_string(),
        };
        if let Some(active) = &self.models.active
            && !active
                .iter()
                .any(|p| p.provider == self.provider.kind && p.model == model)
        {
            return Err(Error::Policy(format!(
                "model {model:?} of provider {} is not in [models] active; add {{ provider = \"{}\", model = \"{model}\" }} \
                 there, or ask for a listed model",
                self.provider.kind.name(),
                self.provider.kind.name()
            )));
        }
        Ok(model)
    }

    /// `[models] context_window`, or the provider kind's default when it is not set. Requests are checked against
    /// `provider::window::for_model`, which asks the server before falling back to that default.
    pub fn context_window(&self) -> u64 {
        self.models
            .context_window
            .unwrap_or_else(|| self.provider.kind.default_context_window())
    }

    /// The same policy talking to another provider with that provider's defaults (the CLI's `--provider`).
    pub fn with_provider(mut self, kind: ProviderKind) -> Policy {
        if kind != self.provider.kind {
            self.provider.kind = kind;
            self.provider.base_url = None;
            self.provider.api_key_env = None;
            self.models.flash = None;
            self.models.pro = None;
            self.models.context_window = None;
        }
        self
    }

    /// The answer format to ask for.
    pub fn answer_format(&self) -> crate::patch::reader::AnswerFormat {
        use crate::patch::reader::AnswerFormat;
        match (self.edit.format, self.provider.kind) {
            (EditFormat::Udiff, _) => AnswerFormat::Udiff,
            (EditFormat::SearchReplace, _) => AnswerFormat::SearchReplace,
            (EditFormat::WholeFile, _) => AnswerFormat::WholeFile,
            (EditFormat::Json, _) => AnswerFormat::Json,
            (EditFormat::ApplyPatch, _) => AnswerFormat::ApplyPatch,
            (EditFormat::Auto, k) if k.schema_field().is_some() => AnswerFormat::Json,
            (EditFormat::Auto, _) => AnswerFormat::Udiff,
        }
    }

    /// Refuse what the policy file at `source` says that cannot work or would weaken a limit, with the fix.
    fn check(&self, source: &str) -> Result<()> {
        self.check_required()
            .and_then(|()| {
                crate::workspace::glob::check_paths(
                    &self.paths.allowed,
                    &self.paths.denied,
                    &self.paths.unlock_secrets,
                )
            })
            .and_then(|()| self.check_limits())
            .and_then(|()| self.check_provider())
            .and_then(|()| self.check_validation())
            .and_then(|()| self.check_command_environment())
            .and_then(|()| self.check_repair())
            .map_err(|what| Error::Policy(format!("{source}: {what}")))
    }

    /// What must be given: a base URL for a generic server, a path to read.
    fn check_required(&self) -> std::result::Result<(), String> {
        if self.provider.kind == ProviderKind::Openai && self.provider.base_url.is_none() {
            return Err("[provider] kind = \"openai\" needs base_url (for example \"http://127.0.0.1:8000/v1\")".into());
        }
        if self.paths.allowed.is_empty() {
            return Err(
                "[paths] allowed is empty, so no file could be read; list globs such as \"src/**\""
                    .into(),
            );
        }
        Ok(())
    }

    /// Every duration and size of the policy lies in its range ([`BOUNDS`]): above 0, and small enough that no
    /// deadline or buffer computed from it overflows.
    fn check_limits(&self) -> std::result::Result<(), String> {
        for b in BOUNDS {
            if let Some(v) = (b.get)(self)
                && !(1..=b.max).contains(&v)
            {
                return Err(format!(
                    "[{}] {} = {v} is out of range: give 1 to {} {}, or remove the line for the default",
                    b.section, b.key, b.max, b.unit
                ));
            }
        }
        Ok(())
    }

    /// `[provider] api_key_env` is a variable's name (never a key), `base_url` an http(s) URL.
    fn check_provider(&self) -> std::result::Result<(), String> {
        for (key, v) in [
            (
                "[provider] price_input_per_mtok",
                self.provider.price_input_per_mtok,
            ),
            (
                "[provider] price_output_per_mtok",
                self.provider.price_output_per_mtok,
            ),
            (
                "[ledger] primary_price_input_per_mtok",
                self.ledger.primary_price_input_per_mtok,
            ),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && (0.0..=1_000_000.0).contains(&v))
            {
                return Err(format!(
                    "{key} = {v} is not a price: give what a million tokens cost, 0 to 1000000, or remove the line"
                ));
            }
        }
        if let Some(env) = &self.provider.api_key_env
            && (env.is_empty() || !env.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return Err(
                "[provider] api_key_env must be the NAME of an environment variable (letters, digits, _); \
                 never put a key in this file"
                    .to_string(),
            );
        }
        if let Some(url) = &self.provider.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "[provider] base_url {url:?} must start with http:// or https://"
            ));
        }
        Ok(())
    }

    /// `[validation]`: no empty command, sandbox skips that stay in the workspace (the timeout: [`BOUNDS`]).
    fn check_validation(&self) -> std::result::Result<(), String> {
        for c in &self.validation.commands {
            if c.trim().is_empty() {
                return Err("[validation] commands holds an empty command; remove it".into());
            }
        }
        crate::workspace::glob::sandbox_include(&self.validation.sandbox_include).map_err(|e| {
            match e {
                Error::Policy(m) => m,
                other => other.to_string(),
            }
        })?;
        for s in &self.validation.sandbox_skip {
            let t = s.trim().trim_end_matches('/');
            if t.is_empty() || t.starts_with('/') || t.split('/').any(|c| c == ".." || c == ".") {
                return Err(format!(
                    "[validation] sandbox_skip entry {s:?} is not a name or a workspace-relative path; write a \
                     folder name such as \"target\" or a path such as \"web/dist\""
                ));
            }
        }
        Ok(())
    }

    /// What validation commands get: `[validation] env` names variables (never the key's), `sandbox_read` absolute
    /// folders or folders under `~/`.
    fn check_command_environment(&self) -> std::result::Result<(), String> {
        for name in &self.validation.env {
            if name.is_empty()
                || name.as_bytes()[0].is_ascii_digit()
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "[validation] env entry {name:?} is not the name of an environment variable (letters, digits, _)"
                ));
            }
            if self.api_key_env().as_deref() == Some(name.as_str()) || name == PLUGIN_KEY_ENV {
                return Err(format!(
                    "[validation] env names {name}, the provider key's variable: the key never reaches validation \
                     commands; remove it"
                ));
            }
        }
        for entry in &self.validation.sandbox_read {
            let rest = entry.strip_prefix("~/").unwrap_or(entry);
            if !(entry.starts_with('/') || entry.starts_with("~/"))
                || rest.split('/').any(|c| c == ".." || c == ".")
                || entry == "/"
            {
                return Err(format!(
                    "[validation] sandbox_read entry {entry:?} is not an absolute folder or one under ~/ (such as \
                     \"~/.cargo\" or \"/opt/sdk\"); write it that way"
                ));
            }
        }
        Ok(())
    }

    /// `[repair] attempts` is 0 or 1.
    fn check_repair(&self) -> std::result::Result<(), String> {
        if let RepairAttempts::Unsupported(n) = self.repair.attempts {
            return Err(format!(
                "[repair] attempts = {n} is not supported: use 0 (no repair) or 1 (one bounded repair round); more \
                 rounds are never made"
            ));
        }
        Ok(())
    }
}

/// A policy and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The policy, checked.
    pub policy: Policy,
    /// The file it was read from (canonical); `None` for the default of an allowed root.
    pub path: Option<PathBuf>,
    /// The SHA-256 of the exact bytes parsed (what `local-llm-worker trust` records); `None` with no file.
    pub digest: Option<String>,
}

/// Find and read the policy for the workspace at `root` (already made absolute and canonical), and refuse it unless
/// the user may use it: [`load_untrusted`], then [`crate::trust::require`] (a policy that names commands or a key
/// variable must have been trusted with `local-llm-worker trust`, exactly as it is now).
pub fn load(root: &Path) -> Result<LoadedPolicy> {
    let loaded = load_untrusted(root)?;
    crate::trust::require(&loaded, root)?;
    Ok(loaded)
}

/// Find and read the policy for the workspace at `root` without the trust step (its owner and mode are checked):
/// for `doctor`, `trust` and recovery (which only narrows what it may touch by the policy's `[paths]`).
///
/// Order: `LOCAL_LLM_CONFIG` (a file that must exist; it applies only to a `root` that holds a policy file or lies
/// under `LOCAL_LLM_ALLOWED_ROOTS`), then `<root>/local-llm-worker.toml`, then the default policy when `root` lies
/// under one of the `:`-separated `LOCAL_LLM_ALLOWED_ROOTS`. Otherwise the workspace is refused.
pub fn load_untrusted(root: &Path) -> Result<LoadedPolicy> {
    if let Some(forced) = std::env::var_os("LOCAL_LLM_CONFIG").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(forced);
        if !path.is_file() {
            return Err(Error::Policy(format!(
                "LOCAL_LLM_CONFIG names {}, which is not a file; fix or unset the variable",
                path.display()
            )));
        }
        // A forced policy makes no folder a workspace by itself: the folder must be one already.
        let own = std::fs::symlink_metadata(root.join(POLICY_FILE)).is_ok_and(|m| m.is_file());
        if !own && !under_allowed_roots(root) {
            return Err(Error::Policy(format!(
                "LOCAL_LLM_CONFIG names {}, but {} holds no {POLICY_FILE} and is not under LOCAL_LLM_ALLOWED_ROOTS, \
                 so it is not a workspace; run `local-llm-worker init-project --workspace-root {}` there, or list \
                 the folder (or one above it) in LOCAL_LLM_ALLOWED_ROOTS",
                path.display(),
                root.display(),
                root.display()
            )));
        }
        return read_policy_file(&path.canonicalize().unwrap_or(path));
    }
    let path = root.join(POLICY_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => return read_policy_file(&path),
        Ok(_) => {
            return Err(Error::Policy(format!(
                "{} is not a regular file (a symlink or folder); make it a plain file",
                path.display()
            )));
        }
        Err(_) => {}
    }
    if under_allowed_roots(root) {
        return Ok(LoadedPolicy {
            policy: Policy::default_for_allowed_root(),
            path: None,
            digest: None,
        });
    }
    Err(Error::Policy(format!(
        "{} has no {POLICY_FILE}; run `local-llm-worker init-project --workspace-root {}` to write one \
         (or list the folder in LOCAL_LLM_ALLOWED_ROOTS)",
        root.display(),
        root.display()
    )))
}

fn under_allowed_roots(root: &Path) -> bool {
    let Some(list) = std::env::var_os("LOCAL_LLM_ALLOWED_ROOTS") else {
        return false;
    };
    std::env::split_paths(&list)
        .filter(|p| p.is_absolute())
        .filter_map(|p| p.canonicalize().ok())
        .any(|allowed| root.starts_with(allowed))
}

/// Parse a policy from the text of `path`.
pub fn parse(text: &str, path: &Path) -> Result<Policy> {
    let policy: Policy = toml::from_str(text).map_err(|e| {
        Error::Policy(format!(
            "{} is not a valid policy: {}",
            path.display(),
            e.to_string().trim_end()
        ))
    })?;
    policy.check(&path.display().to_string())?;
    Ok(policy)
}

/// Read and parse the policy file at `path` through one handle: its owner and mode are checked on that handle
/// ([`crate::trust::check_owner`]) and the bytes parsed are the bytes digested.
pub fn read_policy_file(path: &Path) -> Result<LoadedPolicy> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = |e: std::io::Error| Error::Policy(format!("cannot read {}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        // `path` is canonical or checked not to be a symlink: one swapped in since is not followed.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(cannot)?;
    let meta = f.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::Policy(format!(
            "{} is not a regular file; make it a plain file",
            path.display()
        )));
    }
    crate::trust::check_owner(path, &meta)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(cannot)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::Policy(format!(
            "cannot read {}: it is not UTF-8 text",
            path.display()
        ))
    })?;
    Ok(LoadedPolicy {
        policy: parse(&text, path)?,
        path: Some(path.to_path_buf()),
        digest: Some(crate::digest::sha256_hex(text.as_bytes())),
    })
}

/// What kind of project a folder holds, from its marker files; it decides the suggested paths and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectKind {
    /// A Cargo project (`Cargo.toml`).
    Rust,
    /// A Node.js project (`package.json`).
    Node,
    /// A Python project (`pyproject.toml`, `setup.py`, `requirements.txt`, or `.py` files at the top).
    Python,
    /// Plain Python files with `test_*.py` tests beside them, and no packaging file.
    PythonTests,
    /// A Go module (`go.mod`).
    Go,
    /// None of these.
    Other,
}

impl ProjectKind {
    /// The kind of the project at `root`: the first of Cargo, Node.js, Python and Go whose marker file it holds,
    /// else what its top-level `.py` files say.
    pub fn detect(root: &Path) -> ProjectKind {
        let has = |f: &str| root.join(f).is_file();
        if has("Cargo.toml") {
            ProjectKind::Rust
        } else if has("package.json") {
            ProjectKind::Node
        } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
            ProjectKind::Python
        } else if has("go.mod") {
            ProjectKind::Go
        } else {
            // A plain Python project: `.py` files at the top (one read of that folder, nothing deeper).
            let names: Vec<String> = std::fs::read_dir(root)
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                        .filter_map(|e| e.file_name().to_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let py = |n: &String| n.ends_with(".py");
            if names.iter().any(|n| py(n) && n.starts_with("test_")) {
                ProjectKind::PythonTests
            } else if names.iter().any(py) {
                ProjectKind::Python
            } else {
                ProjectKind::Other
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            ProjectKind::Rust => "Rust (Cargo.toml)",
            ProjectKind::Node => "Node.js (package.json)",
            ProjectKind::Python => {
                "Python (pyproject.toml, setup.py, requirements.txt or .py files)"
            }
            ProjectKind::PythonTests => "Python (.py files with test_*.py tests)",
            ProjectKind::Go => "Go (go.mod)",
            ProjectKind::Other => "unrecognised",
        }
    }

    fn allowed(self) -> &'static [&'static str] {
        match self {
            ProjectKind::Rust => &["src/**", "tests/**", "benches/**", "examples/**"],
            ProjectKind::Node => &["src/**", "lib/**", "test/**", "tests/**"],
            ProjectKind::Python | ProjectKind::PythonTests => &["**/*.py"],
            ProjectKind::Go => &["**/*.go"],
            ProjectKind::Other => &["**"],
        }
    }

    /// The check a project of this kind gets when nothing more is known ([`crate::project::Project::detect`] knows
    /// more: the project's own test command, its virtualenv).
    pub fn check(self) -> Option<&'static str> {
        match self {
            ProjectKind::Rust => Some("cargo test --quiet --offline"),
            ProjectKind::Node => Some("npm test --silent"),
            ProjectKind::Python => Some("python3 -m compileall -q ."),
            // unittest finds the test_*.py files of the folder and runs them (an import error fails too).
            ProjectKind::PythonTests => Some("python3 -m unittest -q"),
            ProjectKind::Go => Some("go test ./..."),
            ProjectKind::Other => None,
        }
    }
}

fn toml_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// The commented policy file `init-project` writes for a provider and a project kind. Every value it sets is the
/// default a policy gets without it (`Limits::DEFAULT`, `Validation::default()`...), but for the provider's URL, key
/// variable and models, and the project's paths and check.
pub fn template(kind: ProviderKind, project: ProjectKind) -> String {
    template_for(kind, &crate::project::Project::of(project))
}

/// [`template`] for a project as [`crate::project::Project::detect`] found it: its own test command, and its
/// virtualenvs and gitignored folders denied.
pub fn template_for(kind: ProviderKind, project: &crate::project::Project) -> String {
    [
        template_header(project.kind),
        template_provider(kind),
        template_models(kind),
        template_paths(project, &Paths::default()),
        template_limits(&Limits::DEFAULT),
        template_validation(project, &Validation::default()),
        template_repair(&Repair::default()),
        template_edit(&Edit::default()),
        template_sampling(kind),
        template_ledger(),
    ]
    .join("\n")
}

/// What the file is, for which project.
fn template_header(project: ProjectKind) -> String {
    format!(
        r#"# local-llm-worker policy for this workspace. Project detected: {project}.
# The worker reads only the files a request names AND these globs allow, asks the model for an edit, and writes
# only the exact patch bytes the primary agent approved.
"#,
        project = project.name(),
    )
}

/// `[provider]`: the kind, its URL and key variable, the sampling temperature and the reasoning effort.
fn template_provider(kind: ProviderKind) -> String {
    let d = kind.defaults();
    let key_line = match d.api_key_env {
        Some(env) => format!(
            "# The NAME of the environment variable that holds the API key. Never put the key itself in this file.\napi_key_env = \"{env}\"\n"
        ),
        None => "# No key: a local server needs none. Name a variable here if yours does.\n# api_key_env = \"LLAMA_API_KEY\"\n".to_string(),
    };
    format!(
        r#"[provider]
kind = "{kind}"
base_url = "{base_url}"
{key_line}# Sampling temperature for edits.
temperature = {temperature}
# For models that reason: none | low | medium | high | max ({effort_note}).
reasoning_effort = "{effort}"
# What a million tokens cost here, for `stats` to turn tokens into money ({price_note}).
# price_input_per_mtok = {price_in}
# price_output_per_mtok = {price_out}
"#,
        price_note = match kind {
            k if k.is_local() => "a local server: only electricity",
            _ =>
                "an example: the list price of the default flash model when this template was written, in USD; check the provider's price page",
        },
        price_in = list_price(kind).0,
        price_out = list_price(kind).1,
        kind = kind.name(),
        base_url = d.base_url,
        temperature = DEFAULT_TEMPERATURE,
        effort_note = match kind {
            ProviderKind::Openrouter =>
                "GLM accepts low, high or max: none is sent as low, medium as high",
            ProviderKind::Huggingface => "sent as reasoning_effort; max is sent as high",
            ProviderKind::Deepseek => "sent as reasoning.effort; max is sent as high",
            ProviderKind::Llamacpp
            | ProviderKind::Openai
            | ProviderKind::Ollama
            | ProviderKind::Lmstudio
            | ProviderKind::Vllm => "not sent to this provider",
        },
        effort = Effort::default().name(),
    )
}

/// Example list prices (input, output; USD per million tokens) of each kind's default flash model, for the
/// template's commented example; the provider's price page is the authority.
fn list_price(kind: ProviderKind) -> (f64, f64) {
    match kind {
        ProviderKind::Llamacpp
        | ProviderKind::Ollama
        | ProviderKind::Lmstudio
        | ProviderKind::Vllm => (0.0, 0.0),
        ProviderKind::Deepseek => (0.28, 0.42),
        ProviderKind::Openrouter => (0.6, 2.2),
        ProviderKind::Huggingface => (0.1, 0.5),
        ProviderKind::Openai => (0.25, 2.0),
    }
}

/// `[models]`: the provider's flash and pro models, the context window and the active pairs (commented out).
fn template_models(kind: ProviderKind) -> String {
    let d = kind.defaults();
    let model_note = match kind {
        ProviderKind::Llamacpp => {
            "# llama.cpp serves whichever model it loaded and accepts any name here.\n"
        }
        ProviderKind::Ollama => {
            "# Ollama's model names, as `ollama list` shows them (pull them first).\n"
        }
        ProviderKind::Lmstudio => "# LM Studio's model identifiers, as `lms ls` shows them.\n",
        ProviderKind::Vllm => {
            "# The name vLLM serves (`vllm serve MODEL`, or its --served-model-name).\n"
        }
        _ => "",
    };
    let discovery = match kind {
        ProviderKind::Llamacpp => "llama.cpp /props, else /slots, else its model list",
        ProviderKind::Ollama => "POST /api/show (context_length, num_ctx) and GET /api/ps",
        ProviderKind::Lmstudio => "GET /api/v0/models (max_context_length, loaded_context_length)",
        ProviderKind::Vllm => "its model list (max_model_len)",
        ProviderKind::Openai => "llama.cpp /props, a LiteLLM proxy's /model/info, a model list",
        ProviderKind::Deepseek => "never (DeepSeek's API does not report it)",
        ProviderKind::Huggingface | ProviderKind::Openrouter => "its model list (context_length)",
    };
    format!(
        r#"[models]
{model_note}# complexity = "low" always uses flash; "medium" uses pro.
flash = "{flash}"
pro = "{pro}"
# Requests whose estimated prompt plus output budget exceed the context window are refused before sending.
# Unset, the window is asked from the server: {discovery}.
# The smaller of the model's trained window and the window it is loaded with wins; failing that, {context_window}
# tokens. Set it to override what the server says.
# context_window = {context_window}
# Uncomment to allow only these pairs; any other is refused before a request is made.
# active = [{{ provider = "{kind}", model = "{flash}" }}, {{ provider = "{kind}", model = "{pro}" }}]
"#,
        kind = kind.name(),
        flash = d.flash,
        pro = d.pro,
        context_window = kind.default_context_window(),
    )
}

/// `[paths]`: the project's globs, its folders to leave out, no unlock, and `p`'s hard-link rule.
fn template_paths(project: &crate::project::Project, p: &Paths) -> String {
    let denied_note = if project.denied.is_empty() {
        ""
    } else {
        "# init-project left out the project's virtualenvs, tool environments and the folders .gitignore names.\n"
    };
    format!(
        r#"[paths]
# Files the model may see and edit. Patterns read as in .gitignore: a leading / anchors at the workspace root, a
# pattern with no other / matches at any depth ("*.py"), a trailing / or a plain name ("src/gen") covers a folder and
# all under it; `*` stays within a folder, `**` crosses folders; a leading ! is refused (list exclusions in denied).
allowed = {allowed}
# Never read or written (a pattern there also covers all under a folder it matches), on top of the built-in denials
# (.git/, every local-llm-worker.toml, any path through a symlink, and the secret-looking names below); denials
# match in any case.
{denied_note}denied = {denied}
# Secret-looking files stay denied unless listed here explicitly, e.g. ["**/.env.example"]. At any depth:
{secret_names}
unlock_secrets = []
# true: also read files that have more than one hard link. Their bytes are also another file's, which may lie outside
# the workspace or under a denied name (~/.ssh/id_rsa linked as notes.txt), so they are refused by default; they are
# never written either way.
allow_hard_links = {allow_hard_links}
# true: a patch may delete a selected file (a diff to /dev/null, `*** Delete File`), or move one to a selected new
# path inside `allowed` (git's rename, `*** Move to`). Journaled and undone like every write; off by default.
allow_delete = {allow_delete}
allow_move = {allow_move}
"#,
        allowed = toml_list(project.kind.allowed()),
        denied = toml_list(
            &project
                .denied
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        ),
        allow_hard_links = p.allow_hard_links,
        allow_delete = p.allow_delete,
        allow_move = p.allow_move,
        secret_names = comment_lines(&crate::names::secret_names().join(", ")),
    )
}

/// `text` as `# ` comment lines of at most 118 columns, broken at spaces.
fn comment_lines(text: &str) -> String {
    let mut lines: Vec<String> = vec![];
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= 118 => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(format!("# {word}")),
        }
    }
    lines.join("\n")
}

/// A `key = value` line with its comment in the column the other commented lines use.
fn commented(key: &str, value: impl std::fmt::Display, comment: &str) -> String {
    format!("{:<29} # {comment}", format!("{key} = {value}"))
}

/// `[limits]`, every one of `l`.
fn template_limits(l: &Limits) -> String {
    format!(
        r#"[limits]
{}
{}
max_patch_bytes = {}
max_files_per_patch = {}
max_hunks_per_patch = {}
{}
request_timeout_secs = {}
{}
"#,
        commented("max_file_bytes", l.max_file_bytes, "per selected file"),
        commented(
            "max_total_bytes",
            l.max_total_bytes,
            "all selected files together"
        ),
        l.max_patch_bytes,
        l.max_files_per_patch,
        l.max_hunks_per_patch,
        commented(
            "max_output_tokens",
            l.max_output_tokens,
            "the model's answer is cut here (and then refused as truncated)"
        ),
        l.request_timeout_secs,
        commented(
            "proposal_ttl_secs",
            l.proposal_ttl_secs,
            "a proposal not applied within this time expires"
        ),
    )
}

/// `[validation]`: the project's check, and every other value of `v`.
fn template_validation(project: &crate::project::Project, v: &Validation) -> String {
    let mut checks = match &project.check {
        Some(c) => format!("commands = [{c:?}]"),
        None => "commands = []  # e.g. [\"make test\"]".to_string(),
    };
    if let Some(found) = &project.found {
        checks = format!("# The project's own test command, found from {found}.\n{checks}");
    }
    let list = |items: &[String]| toml_list(&items.iter().map(String::as_str).collect::<Vec<_>>());
    format!(
        r#"[validation]
# Run with `sh -c` in the workspace after a patch is applied; if one fails, the previous bytes are restored.
# These come only from this file, never from a model or a tool argument.
{checks}
{timeout}
# true: also validate every proposal before returning it, in a temporary copy of the workspace (.gitignore
# respected, the names below left out, copy-on-write clones where the filesystem has them). A proposal never
# writes to the workspace itself.
on_propose = {on_propose}
# Left out of that copy: a name matches at any depth, a name with / is a workspace-relative path.
sandbox_skip = {sandbox_skip}
# How on_propose runs the model's not yet approved code: "confined" (bubblewrap: no network, its own PID namespace,
# only the copy writable, this workspace, your home folder and the worker out of sight; refused when bubblewrap is
# missing) or "copy" (an UNCONFINED copy: the model's code runs with your rights and your network).
isolation = "{isolation}"
# Environment variables the commands get, besides PATH, LANG, LANGUAGE, LC_*, TZ, USER, LOGNAME, HOME and TMPDIR
# (a confined check gets a fresh, empty HOME and /tmp). Never the provider key.
env = {check_env}
# Folders outside the workspace that a confined check may read (read-only; missing ones are skipped): toolchains
# in your home folder, which is otherwise hidden. Credential files at their top (credentials.toml...) are masked.
# The project's own environment comes back by itself: its .venv (also when gitignored), the folders CARGO_HOME,
# RUSTUP_HOME, PYENV_ROOT, GOPATH, JAVA_HOME and NVM_DIR name, and the folders of the programs the commands start.
sandbox_read = {sandbox_read}
# The copy leaves out what the model may not see ([paths] denied, policy files, secret names), so no check prints
# it into what the repair round shows the model; files a check needs anyway, e.g. ["tests/fixtures/*.pem"]:
sandbox_include = {sandbox_include}
# What a confined check may write: its fresh /tmp, HOME and /dev/shm hold this much each (MiB, in memory)...
sandbox_tmp_mib = {tmp_mib}
# ...and the checks of one proposal may add this much to the copy's filesystem (MiB; never over half its free space).
sandbox_write_mib = {write_mib}
"#,
        timeout = commented(
            "timeout_secs",
            v.timeout_secs,
            "per command; the command's whole process group is killed after it"
        ),
        on_propose = v.on_propose,
        sandbox_skip = list(&v.sandbox_skip),
        isolation = v.isolation.name(),
        check_env = list(&v.env),
        sandbox_read = list(&v.sandbox_read),
        sandbox_include = list(&v.sandbox_include),
        tmp_mib = v.sandbox_tmp_mib,
        write_mib = v.sandbox_write_mib,
    )
}

/// `[repair]`, `r`'s attempts.
fn template_repair(r: &Repair) -> String {
    format!(
        r#"[repair]
# 1: when validation fails, the model is shown its edit and the failing output once and may fix it. On propose
# (with on_propose = true) the fixed edit is returned marked repaired; at apply time (the previous bytes are
# restored first) it comes back as a NEW proposal that needs its own approval. 0: never. Never more than 1.
attempts = {}
"#,
        r.attempts.count()
    )
}

/// `[edit]`, `e`'s format.
fn template_edit(e: &Edit) -> String {
    format!(
        r#"[edit]
# How the model writes its edit: "auto" (JSON constrained by a schema on llama.cpp, Ollama, LM Studio and vLLM,
# unified diff elsewhere), "json", "udiff", "search_replace", "whole_file" (small files only) or "apply_patch"
# (V4A, `*** Begin Patch`). Every answer is read in any of these syntaxes, whatever was asked.
format = "{}"
"#,
        e.format.name()
    )
}

/// `[sampling]`, as the defaults for `kind` say (written commented: the keys left out keep following the defaults).
fn template_sampling(kind: ProviderKind) -> String {
    let why = if kind.is_local() {
        format!(
            "# Unset, a local server with validation on propose gets {LOCAL_DEFAULT_CANDIDATES} candidates, \
             {LOCAL_DEFAULT_PARALLEL} at a time: on the\n\
             # solve bench (BENCHMARKS.md section 12, two small models) that solved the most tasks per minute of the\n\
             # server's time when it has 4 slots (scripts/local-model.sh: LOCAL_MODEL_PARALLEL=4; llama-server: \
             --parallel 4).\n\
             # Never more at once than the slots a llama.cpp server reports (/props total_slots): with one slot they \
             are\n\
             # asked one after the other. Without validation on propose, one answer (nothing could choose among \
             them)."
        )
    } else {
        "# Unset, a hosted provider gets one answer (each candidate is paid for); raise it for validated proposals."
            .to_string()
    };
    format!(
        r#"[sampling]
# candidates: answers asked for one proposal (1 to 8), the first at [provider] temperature, the others hotter and
# with their own seeds; identical patches are merged (a vote). With validation on propose they are validated in
# one sandbox copy and the first that passes is chosen; otherwise the most voted, then the smallest.
{why}
# candidates = 1
# parallel: how many are asked at once (1 to 8), capped by the slots a llama.cpp server reports; Ollama
# (OLLAMA_NUM_PARALLEL) and LM Studio do not report theirs: keep this at most what they answer at once.
# parallel = 1
# max_total_tokens: what all candidates of one proposal may spend together; no answer is asked once it is reached.
# max_total_tokens = 50000
"#
    )
}

/// `[ledger]`, commented: the primary model's price.
fn template_ledger() -> String {
    r#"[ledger]
# What a million prompt tokens of YOUR PRIMARY model (Claude, GPT...) cost, in the currency of the prices above:
# `stats` then values the tokens it did not have to read. An example, to check against its price page:
# primary_price_input_per_mtok = 3.0
"#
    .to_string()
}

/// Write the policy file for `root`; refuses to overwrite unless `force`. Returns the path written.
pub fn init_project(root: &Path, kind: ProviderKind, force: bool) -> Result<PathBuf> {
    let path = root.join(POLICY_FILE);
    if std::fs::symlink_metadata(&path).is_ok() && !force {
        return Err(Error::Policy(format!(
            "{} already exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let text = template_for(kind, &crate::project::Project::detect(root));
    // The template must always be a policy this binary accepts.
    parse(&text, &path)?;
    let mut tmp = tempfile::NamedTempFile::new_in(root).at("cannot write in", root)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).at("cannot write", &path)?;
    tmp.persist(&path)
        .map_err(|e| Error::io_message(format!("cannot write {}: {}", path.display(), e.error)))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_PROVIDERS: [ProviderKind; 8] = [
        ProviderKind::Llamacpp,
        ProviderKind::Huggingface,
        ProviderKind::Openrouter,
        ProviderKind::Deepseek,
        ProviderKind::Openai,
        ProviderKind::Ollama,
        ProviderKind::Lmstudio,
        ProviderKind::Vllm,
    ];

    const ALL_PROJECTS: [ProjectKind; 6] = [
        ProjectKind::Rust,
        ProjectKind::Node,
        ProjectKind::Python,
        ProjectKind::PythonTests,
        ProjectKind::Go,
        ProjectKind::Other,
    ];

    #[test]
    fn auto_asks_for_json_edits_where_the_server_constrains_them() {
        use crate::patch::reader::AnswerFormat;
        for kind in ALL_PROVIDERS {
            let mut p = Policy::default_for_allowed_root().with_provider(kind);
            let expected = if kind.schema_field().is_some() {
                AnswerFormat::Json
            } else {
                AnswerFormat::Udiff
            };
            assert_eq!(p.answer_format(), expected, "{}", kind.name());
            p.edit.format = EditFormat::Udiff;
            assert_eq!(p.answer_format(), AnswerFormat::Udiff);
        }
        for kind in [
            ProviderKind::Llamacpp,
            ProviderKind::Ollama,
            ProviderKind::Lmstudio,
            ProviderKind::Vllm,
        ] {
            assert!(
                kind.is_local() && kind.schema_field().is_some(),
                "{}",
                kind.name()
            );
            assert_eq!(kind.defaults().api_key_env, None);
        }
    }

    #[test]
    fn every_template_parses() {
        for kind in ALL_PROVIDERS {
            for project in ALL_PROJECTS {
                let text = template(kind, project);
                parse(&text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
            }
        }
    }

    #[test]
    fn every_template_sets_the_defaults() {
        for kind in ALL_PROVIDERS {
            for project in ALL_PROJECTS {
                let p = parse(&template(kind, project), Path::new("t.toml")).unwrap();
                let d = kind.defaults();
                assert_eq!(p.provider.kind, kind);
                assert_eq!(p.provider.base_url.as_deref(), Some(d.base_url));
                assert_eq!(p.provider.api_key_env.as_deref(), d.api_key_env);
                assert_eq!(p.provider.temperature, DEFAULT_TEMPERATURE);
                assert_eq!(p.provider.reasoning_effort, Effort::default());
                assert_eq!(p.models.flash.as_deref(), Some(d.flash));
                assert_eq!(p.models.pro.as_deref(), Some(d.pro));
                assert_eq!(p.models.context_window, None);
                assert_eq!(p.models.active, None);
                assert_eq!(p.paths.allowed, project.allowed());
                assert!(p.paths.denied.is_empty() && p.paths.unlock_secrets.is_empty());
                assert_eq!(p.paths.allow_hard_links, Paths::default().allow_hard_links);
                assert_eq!(p.paths.allow_delete, Paths::default().allow_delete);
                assert_eq!(p.paths.allow_move, Paths::default().allow_move);
                assert_eq!(p.limits, Limits::default());
                assert_eq!(
                    p.validation,
                    Validation {
                        commands: project.check().into_iter().map(str::to_string).collect(),
                        ..Validation::default()
                    }
                );
                assert_eq!(p.repair, Repair::default());
                assert_eq!(p.edit, Edit::default());
            }
        }
    }

    #[test]
    fn secrets_by_other_spellings_every_template_lists_the_secret_names() {
        let text = template(ProviderKind::Llamacpp, ProjectKind::Other);
        let comments: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            comments.contains(&crate::names::secret_names().join(", ")),
            "{text}"
        );
        assert!(
            text.lines()
                .filter(|l| l.starts_with('#'))
                .all(|l| l.len() <= 118),
            "{text}"
        );
    }

    #[test]
    fn policy_values_that_panic_are_refused_at_load_with_their_range() {
        for b in BOUNDS {
            let line = |v: u64| {
                format!(
                    "[provider]\nkind = \"llamacpp\"\n[{}]\n{} = {v}\n",
                    b.section, b.key
                )
            };
            parse(&line(b.max), Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}"));
            parse(&line(1), Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}"));
            for bad in [0, b.max + 1, i64::MAX as u64] {
                if b.key == "max_output_tokens" && bad > u64::from(u32::MAX) {
                    continue;
                }
                let err = parse(&line(bad), Path::new("p.toml"))
                    .unwrap_err()
                    .to_string();
                assert!(
                    err.contains(&format!(
                        "[{}] {} = {bad} is out of range: give 1 to {}",
                        b.section, b.key, b.max
                    )),
                    "{err}"
                );
            }
        }
        // The defaults and every template lie inside.
        assert!(parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).is_ok());
    }

    #[test]
    fn prices_are_refused_unless_they_are_prices() {
        let with = |extra: &str| {
            parse(
                &format!("[provider]\nkind = \"deepseek\"\n{extra}\n"),
                Path::new("p.toml"),
            )
        };
        let p = with("price_input_per_mtok = 0.28\nprice_output_per_mtok = 0.42\n[ledger]\nprimary_price_input_per_mtok = 3")
            .unwrap();
        assert_eq!(p.provider.price_output_per_mtok, Some(0.42));
        assert_eq!(p.ledger.primary_price_input_per_mtok, Some(3.0));
        for (bad, key) in [
            (
                "price_input_per_mtok = -1.0",
                "[provider] price_input_per_mtok = -1",
            ),
            (
                "price_output_per_mtok = nan",
                "[provider] price_output_per_mtok = NaN",
            ),
            (
                "[ledger]\nprimary_price_input_per_mtok = inf",
                "[ledger] primary_price_input_per_mtok = inf",
            ),
        ] {
            let err = with(bad).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains("is not a price"), "{err}");
        }
    }

    #[test]
    fn unknown_keys_and_keys_in_the_file_are_refused() {
        let err = parse(
            "[provider]\nkind = \"llamacpp\"\n[limits]\nmax_fle_bytes = 3\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("max_fle_bytes"), "{err}");
        let err = parse(
            "[provider]\nkind = \"openrouter\"\napi_key_env = \"sk-or-v1-abcdef\"\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("NAME of an environment variable"),
            "{err}"
        );
        assert!(!err.to_string().contains("abcdef"), "the key leaked: {err}");
    }

    #[test]
    fn isolation_env_and_sandbox_read_are_checked() {
        let p = parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.validation.isolation, crate::confine::Isolation::Confined);
        assert_eq!(p.validation.env.len(), DEFAULT_CHECK_ENV.len());
        let p = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\nisolation = \"copy\"\nenv = [\"MY_VAR\"]\nsandbox_read = [\"~/.cache/x\", \"/opt/sdk\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.validation.isolation, crate::confine::Isolation::Copy);
        assert_eq!(p.check_env(), vec!["MY_VAR".to_string()]);
        for (bad, needle) in [
            ("isolation = \"none\"", "unknown variant"),
            (
                "env = [\"OPENROUTER_API_KEY\"]",
                "the provider key's variable",
            ),
            ("env = [\"A B\"]", "not the name of an environment variable"),
            (
                "sandbox_read = [\"relative/dir\"]",
                "not an absolute folder",
            ),
            ("sandbox_read = [\"~/../etc\"]", "not an absolute folder"),
            ("sandbox_read = [\"/\"]", "not an absolute folder"),
        ] {
            let err = parse(
                &format!("[provider]\nkind = \"openrouter\"\n[validation]\n{bad}\n"),
                Path::new("p.toml"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn repair_attempts_are_zero_or_one_and_sandbox_skips_are_checked() {
        let p = parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.repair.attempts, RepairAttempts::Never);
        assert!(!p.validation.on_propose);
        assert_eq!(
            p.validation.sandbox_skip,
            ["target", "node_modules", ".git"]
        );
        let p = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\non_propose = true\n[repair]\nattempts = 1\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.validation.on_propose && p.repair.attempts == RepairAttempts::Once);
        for n in ["2", "-1", "10"] {
            let err = parse(
                &format!("[provider]\nkind = \"llamacpp\"\n[repair]\nattempts = {n}\n"),
                Path::new("p.toml"),
            )
            .unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("[repair] attempts = {n} is not supported: use 0")),
                "{err}"
            );
        }
        let err = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\nsandbox_skip = [\"../x\"]\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("sandbox_skip entry"), "{err}");
    }

    #[test]
    fn the_plugin_key_goes_only_to_a_hosted_provider_at_its_official_endpoint() {
        let env = |name: &str| (name == PLUGIN_KEY_ENV).then(|| "sk-plugin".to_string());
        let policy = |text: &str| parse(text, Path::new("p.toml")).unwrap();
        for kind in ["huggingface", "openrouter", "deepseek"] {
            let official = policy(&format!("[provider]\nkind = \"{kind}\"\n"));
            assert!(official.plugin_key_allowed(), "{kind}");
            assert_eq!(
                official.api_key_from(env).map(|(v, _)| v).as_deref(),
                Some(PLUGIN_KEY_ENV),
                "{kind}"
            );
            let slash = format!(
                "[provider]\nkind = \"{kind}\"\nbase_url = \"{}/\"\n",
                ProviderKind::Huggingface.defaults().base_url
            );
            // Another kind's official URL, or any other URL, is not this kind's endpoint.
            let moved = policy(&format!(
                "[provider]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
            ));
            assert!(moved.api_key_from(env).is_none(), "{kind}");
            assert_eq!(policy(&slash).plugin_key_allowed(), kind == "huggingface");
        }
        for text in [
            "[provider]\nkind = \"llamacpp\"\napi_key_env = \"LLAMA_API_KEY\"\n",
            "[provider]\nkind = \"openai\"\nbase_url = \"http://10.0.0.1/v1\"\napi_key_env = \"K\"\n",
        ] {
            assert!(policy(text).api_key_from(env).is_none(), "{text}");
        }
        // Named explicitly by the policy, it is the policy's own variable, wherever the URL.
        let named =
            policy("[provider]\nkind = \"llamacpp\"\napi_key_env = \"LOCAL_LLM_API_KEY\"\n");
        assert_eq!(
            named.api_key_from(env).map(|(v, _)| v).as_deref(),
            Some(PLUGIN_KEY_ENV)
        );
    }

    #[test]
    fn routing_uses_flash_for_low_and_pro_for_medium() {
        let p = parse("[provider]\nkind = \"openrouter\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.model_for(false), "z-ai/glm-5.3-flash");
        assert_eq!(p.model_for(true), "z-ai/glm-5.3");
    }
}
