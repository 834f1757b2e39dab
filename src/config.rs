//! The per-project policy file `local-llm-worker.toml`: where it is found, what it may say, and the commented
//! templates `init-project` writes.
//!
//! The policy file is trusted (the user wrote it); everything else the worker reads is not. Unknown keys are refused
//! so that a typo never silently weakens a limit.

use crate::error::IoContext;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The file name looked for at the workspace root.
pub const POLICY_FILE: &str = "local-llm-worker.toml";

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
    /// Any other OpenAI-compatible chat completions server (vLLM, LM Studio, Ollama...): `base_url` required.
    Openai,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Llamacpp => "llamacpp",
            ProviderKind::Huggingface => "huggingface",
            ProviderKind::Openrouter => "openrouter",
            ProviderKind::Deepseek => "deepseek",
            ProviderKind::Openai => "openai",
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
        }
    }

    /// The context window assumed when `[models] context_window` is not set, in tokens.
    pub fn default_context_window(self) -> u64 {
        match self {
            ProviderKind::Llamacpp | ProviderKind::Openai => 8192,
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
    None,
    Low,
    Medium,
    #[default]
    High,
    Max,
}

impl Effort {
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
    pub provider: ProviderKind,
    pub model: String,
}

pub struct ProviderDefaults {
    pub base_url: &'static str,
    pub api_key_env: Option<&'static str>,
    pub flash: &'static str,
    pub pro: &'static str,
}

/// How the model is asked to write its edit (see `patch::reader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// `json` for llama.cpp (its output is constrained by a JSON schema), `udiff` elsewhere.
    #[default]
    Auto,
    Udiff,
    SearchReplace,
    WholeFile,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub provider: ProviderSection,
    #[serde(default)]
    pub models: Models,
    #[serde(default)]
    pub paths: Paths,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub validation: Validation,
    #[serde(default)]
    pub edit: Edit,
    #[serde(default)]
    pub repair: Repair,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    pub kind: ProviderKind,
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key; never the key itself.
    pub api_key_env: Option<String>,
    /// Sampling temperature sent with every request.
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    /// Reasoning effort for models that reason: none | low | medium | high | max.
    #[serde(default)]
    pub reasoning_effort: Effort,
}

fn default_temperature() -> f32 {
    0.2
}

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    /// Globs (workspace-relative, `/`-separated; `*` stays within a folder, `**` crosses folders) of files the model
    /// may see and edit.
    #[serde(default = "default_allowed")]
    pub allowed: Vec<String>,
    /// Globs that are never read or written, on top of the built-in ones (`.git/`, the policy file, secrets).
    #[serde(default)]
    pub denied: Vec<String>,
    /// The explicit override of the built-in secret denials: globs of secret-looking files that may be read and
    /// written anyway (for example `"**/.env.example"`). `.git/` and the policy file can never be unlocked.
    #[serde(default)]
    pub unlock_secrets: Vec<String>,
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
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub max_patch_bytes: u64,
    pub max_files_per_patch: usize,
    pub max_hunks_per_patch: usize,
    pub max_output_tokens: u32,
    pub request_timeout_secs: u64,
    pub proposal_ttl_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 1_000_000,
            max_total_bytes: 4_000_000,
            max_patch_bytes: 1_000_000,
            max_files_per_patch: 20,
            max_hunks_per_patch: 200,
            max_output_tokens: 2048,
            request_timeout_secs: 300,
            proposal_ttl_secs: 900,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
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

/// The folders a sandbox copy leaves out by default.
pub const DEFAULT_SANDBOX_SKIP: &[&str] = &["target", "node_modules", ".git"];

impl Default for Validation {
    fn default() -> Self {
        Validation {
            commands: Vec::new(),
            timeout_secs: 300,
            on_propose: false,
            sandbox_skip: DEFAULT_SANDBOX_SKIP.iter().map(|s| s.to_string()).collect(),
            isolation: crate::confine::Isolation::Confined,
            env: DEFAULT_CHECK_ENV.iter().map(|s| s.to_string()).collect(),
            sandbox_read: DEFAULT_SANDBOX_READ.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The one bounded repair round.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Repair {
    /// 0: never; 1: when validation fails, the model sees its edit and the failing output once and may fix it.
    pub attempts: i64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
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
            },
            models: Models::default(),
            paths: Paths::default(),
            limits: Limits::default(),
            validation: Validation::default(),
            edit: Edit::default(),
            repair: Repair::default(),
        }
    }

    pub fn base_url(&self) -> String {
        let url = self
            .provider
            .base_url
            .clone()
            .unwrap_or_else(|| self.provider.kind.defaults().base_url.to_string());
        url.trim_end_matches('/').to_string()
    }

    pub fn api_key_env(&self) -> Option<String> {
        self.provider.api_key_env.clone().or_else(|| {
            self.provider
                .kind
                .defaults()
                .api_key_env
                .map(str::to_string)
        })
    }

    /// The provider key (read from the variable [`Policy::api_key_env`] names) as a [`Secret`] to look for in what
    /// servers send and to redact from what is shown; none when there is no key.
    pub fn secret(&self) -> crate::secret::Secret {
        self.api_key_env()
            .and_then(|v| std::env::var(v).ok())
            .map(|k| crate::secret::Secret::new(&k))
            .unwrap_or_default()
    }

    /// The variables `[validation] env` passes to validation commands; never the key's variable.
    pub fn check_env(&self) -> Vec<String> {
        let key = self.api_key_env();
        self.validation
            .env
            .iter()
            .filter(|n| key.as_deref() != Some(n.as_str()))
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
            (EditFormat::Auto, ProviderKind::Llamacpp) => AnswerFormat::Json,
            (EditFormat::Auto, _) => AnswerFormat::Udiff,
        }
    }

    fn check(&self, source: &str) -> Result<()> {
        let bad = |what: String| Err(Error::Policy(format!("{source}: {what}")));
        if self.provider.kind == ProviderKind::Openai && self.provider.base_url.is_none() {
            return bad("[provider] kind = \"openai\" needs base_url (for example \"http://127.0.0.1:8000/v1\")".into());
        }
        if self.models.context_window == Some(0) {
            return bad(
                "[models] context_window is 0; give the model's context size in tokens".into(),
            );
        }
        if self.paths.allowed.is_empty() {
            return bad(
                "[paths] allowed is empty, so no file could be read; list globs such as \"src/**\""
                    .into(),
            );
        }
        let l = &self.limits;
        for (name, v) in [
            ("max_file_bytes", l.max_file_bytes),
            ("max_total_bytes", l.max_total_bytes),
            ("max_patch_bytes", l.max_patch_bytes),
            ("request_timeout_secs", l.request_timeout_secs),
            ("proposal_ttl_secs", l.proposal_ttl_secs),
            ("max_output_tokens", u64::from(l.max_output_tokens)),
            ("max_files_per_patch", l.max_files_per_patch as u64),
            ("max_hunks_per_patch", l.max_hunks_per_patch as u64),
        ] {
            if v == 0 {
                return bad(format!(
                    "[limits] {name} is 0; give a positive number or remove the line for the default"
                ));
            }
        }
        if let Some(env) = &self.provider.api_key_env
            && (env.is_empty() || !env.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return bad(
                "[provider] api_key_env must be the NAME of an environment variable (letters, digits, _); \
                 never put a key in this file"
                    .to_string(),
            );
        }
        if let Some(url) = &self.provider.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return bad(format!(
                "[provider] base_url {url:?} must start with http:// or https://"
            ));
        }
        for c in &self.validation.commands {
            if c.trim().is_empty() {
                return bad("[validation] commands holds an empty command; remove it".into());
            }
        }
        if self.validation.timeout_secs == 0 {
            return bad(
                "[validation] timeout_secs is 0; give a positive number of seconds or remove the line for the default"
                    .into(),
            );
        }
        for s in &self.validation.sandbox_skip {
            let t = s.trim().trim_end_matches('/');
            if t.is_empty() || t.starts_with('/') || t.split('/').any(|c| c == ".." || c == ".") {
                return bad(format!(
                    "[validation] sandbox_skip entry {s:?} is not a name or a workspace-relative path; write a \
                     folder name such as \"target\" or a path such as \"web/dist\""
                ));
            }
        }
        for name in &self.validation.env {
            if name.is_empty()
                || name.as_bytes()[0].is_ascii_digit()
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return bad(format!(
                    "[validation] env entry {name:?} is not the name of an environment variable (letters, digits, _)"
                ));
            }
            if self.api_key_env().as_deref() == Some(name.as_str()) {
                return bad(format!(
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
                return bad(format!(
                    "[validation] sandbox_read entry {entry:?} is not an absolute folder or one under ~/ (such as \
                     \"~/.cargo\" or \"/opt/sdk\"); write it that way"
                ));
            }
        }
        if !(0..=1).contains(&self.repair.attempts) {
            return bad(format!(
                "[repair] attempts = {} is not supported: use 0 (no repair) or 1 (one bounded repair round); more \
                 rounds are never made",
                self.repair.attempts
            ));
        }
        Ok(())
    }
}

/// A policy and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    pub policy: Policy,
    /// The file it was read from; `None` for the default of an allowed root.
    pub path: Option<PathBuf>,
}

/// Find and read the policy for the workspace at `root` (already made absolute and canonical).
///
/// Order: `LOCAL_LLM_CONFIG` (a file that must exist), then `<root>/local-llm-worker.toml`, then the default policy
/// when `root` lies under one of the `:`-separated `LOCAL_LLM_ALLOWED_ROOTS`. Otherwise the workspace is refused.
pub fn load(root: &Path) -> Result<LoadedPolicy> {
    if let Some(forced) = std::env::var_os("LOCAL_LLM_CONFIG").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(forced);
        if !path.is_file() {
            return Err(Error::Policy(format!(
                "LOCAL_LLM_CONFIG names {}, which is not a file; fix or unset the variable",
                path.display()
            )));
        }
        return read_file(&path);
    }
    let path = root.join(POLICY_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => return read_file(&path),
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

fn read_file(path: &Path) -> Result<LoadedPolicy> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Policy(format!("cannot read {}: {e}", path.display())))?;
    Ok(LoadedPolicy {
        policy: parse(&text, path)?,
        path: Some(path.to_path_buf()),
    })
}

/// What kind of project a folder holds, from its marker files; it decides the suggested paths and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectKind {
    Rust,
    Node,
    Python,
    /// Plain Python files with `test_*.py` tests beside them, and no packaging file.
    PythonTests,
    Go,
    Other,
}

impl ProjectKind {
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

    fn check(self) -> Option<&'static str> {
        match self {
            ProjectKind::Rust => Some("cargo check --quiet --offline"),
            ProjectKind::Node => Some("npm test --silent"),
            ProjectKind::Python => Some("python3 -m compileall -q ."),
            // unittest finds the test_*.py files of the folder and runs them (an import error fails too).
            ProjectKind::PythonTests => Some("python3 -m unittest -q"),
            ProjectKind::Go => Some("go vet ./..."),
            ProjectKind::Other => None,
        }
    }
}

fn toml_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// The commented policy file `init-project` writes for a provider and a project kind.
pub fn template(kind: ProviderKind, project: ProjectKind) -> String {
    let d = kind.defaults();
    let key_line = match d.api_key_env {
        Some(env) => format!(
            "# The NAME of the environment variable that holds the API key. Never put the key itself in this file.\napi_key_env = \"{env}\"\n"
        ),
        None => "# No key: a local server needs none. Name a variable here if yours does.\n# api_key_env = \"LLAMA_API_KEY\"\n".to_string(),
    };
    let model_note = match kind {
        ProviderKind::Llamacpp => {
            "# llama.cpp serves whichever model it loaded and accepts any name here.\n"
        }
        _ => "",
    };
    let checks = match project.check() {
        Some(c) => format!("commands = [{c:?}]"),
        None => "commands = []  # e.g. [\"make test\"]".to_string(),
    };
    format!(
        r#"# local-llm-worker policy for this workspace. Project detected: {project}.
# The worker reads only the files a request names AND these globs allow, asks the model for an edit, and writes
# only the exact patch bytes the primary agent approved.

[provider]
kind = "{kind}"
base_url = "{base_url}"
{key_line}# Sampling temperature for edits.
temperature = 0.2
# For models that reason: none | low | medium | high | max ({effort_note}).
reasoning_effort = "high"

[models]
{model_note}# complexity = "low" always uses flash; "medium" uses pro.
flash = "{flash}"
pro = "{pro}"
# Requests whose estimated prompt plus output budget exceed the context window are refused before sending.
# Unset, the window is asked from the server (llama.cpp /props, a model list's context_length), else
# {context_window} tokens; set it to override what the server says.
# context_window = {context_window}
# Uncomment to allow only these pairs; any other is refused before a request is made.
# active = [{{ provider = "{kind}", model = "{flash}" }}, {{ provider = "{kind}", model = "{pro}" }}]

[paths]
# Files the model may see and edit: workspace-relative globs; `*` stays within a folder, `**` crosses folders.
allowed = {allowed}
# Never read or written, on top of the built-in denials (.git/, this file, .env*, *.pem, *.key, id_rsa*,
# id_ed25519*, *credentials*, .aws/, .ssh/, and any path through a symlink).
denied = []
# Secret-looking files stay denied unless listed here explicitly, e.g. ["**/.env.example"].
unlock_secrets = []

[limits]
max_file_bytes = 1000000      # per selected file
max_total_bytes = 4000000     # all selected files together
max_patch_bytes = 1000000
max_files_per_patch = 20
max_hunks_per_patch = 200
max_output_tokens = 2048      # the model's answer is cut here (and then refused as truncated)
request_timeout_secs = 300
proposal_ttl_secs = 900       # a proposal not applied within this time expires

[validation]
# Run with `sh -c` in the workspace after a patch is applied; if one fails, the previous bytes are restored.
# These come only from this file, never from a model or a tool argument.
{checks}
timeout_secs = 300            # per command; the command's whole process group is killed after it
# true: also validate every proposal before returning it, in a temporary copy of the workspace (.gitignore
# respected, the names below left out, copy-on-write clones where the filesystem has them). A proposal never
# writes to the workspace itself.
on_propose = false
# Left out of that copy: a name matches at any depth, a name with / is a workspace-relative path.
sandbox_skip = {sandbox_skip}
# How on_propose runs the model's not yet approved code: "confined" (bubblewrap: no network, its own PID namespace,
# only the copy writable, this workspace, your home folder and the worker out of sight; refused when bubblewrap is
# missing) or "copy" (an UNCONFINED copy: the model's code runs with your rights and your network).
isolation = "confined"
# Environment variables the commands get, besides PATH, LANG, LANGUAGE, LC_*, TZ, USER, LOGNAME, HOME and TMPDIR
# (a confined check gets a fresh, empty HOME and /tmp). Never the provider key.
env = {check_env}
# Folders outside the workspace that a confined check may read (read-only; missing ones are skipped): toolchains
# in your home folder, which is otherwise hidden. Credential files at their top (credentials.toml...) are masked.
sandbox_read = {sandbox_read}

[repair]
# 1: when validation fails, the model is shown its edit and the failing output once and may fix it. On propose
# (with on_propose = true) the fixed edit is returned marked repaired; at apply time (the previous bytes are
# restored first) it comes back as a NEW proposal that needs its own approval. 0: never. Never more than 1.
attempts = 0

[edit]
# How the model writes its edit: "auto" (JSON constrained by a schema on llama.cpp, unified diff elsewhere),
# "json", "udiff", "search_replace" or "whole_file" (small files only).
format = "auto"
"#,
        project = project.name(),
        sandbox_skip = toml_list(DEFAULT_SANDBOX_SKIP),
        check_env = toml_list(DEFAULT_CHECK_ENV),
        sandbox_read = toml_list(DEFAULT_SANDBOX_READ),
        kind = kind.name(),
        base_url = d.base_url,
        context_window = kind.default_context_window(),
        effort_note = match kind {
            ProviderKind::Openrouter =>
                "GLM accepts low, high or max: none is sent as low, medium as high",
            ProviderKind::Huggingface => "sent as reasoning_effort; max is sent as high",
            ProviderKind::Deepseek => "sent as reasoning.effort; max is sent as high",
            ProviderKind::Llamacpp | ProviderKind::Openai => "not sent to this provider",
        },
        flash = d.flash,
        pro = d.pro,
        allowed = toml_list(project.allowed()),
    )
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
    let text = template(kind, ProjectKind::detect(root));
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

    #[test]
    fn every_template_parses() {
        for kind in [
            ProviderKind::Llamacpp,
            ProviderKind::Huggingface,
            ProviderKind::Openrouter,
            ProviderKind::Deepseek,
            ProviderKind::Openai,
        ] {
            for project in [
                ProjectKind::Rust,
                ProjectKind::Node,
                ProjectKind::Python,
                ProjectKind::PythonTests,
                ProjectKind::Go,
                ProjectKind::Other,
            ] {
                let text = template(kind, project);
                parse(&text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
            }
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
        assert_eq!(p.repair.attempts, 0);
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
        assert!(p.validation.on_propose && p.repair.attempts == 1);
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
    fn routing_uses_flash_for_low_and_pro_for_medium() {
        let p = parse("[provider]\nkind = \"openrouter\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.model_for(false), "z-ai/glm-5.3-flash");
        assert_eq!(p.model_for(true), "z-ai/glm-5.3");
    }
}
