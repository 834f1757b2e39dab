//! The commented policy files `init-project` writes (one per provider kind and project kind, every value the
//! default a policy gets without it), what kind of project a folder holds, and `init_project` itself.

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::policy::edit::Edit;
use crate::policy::limits::Limits;
use crate::policy::paths::Paths;
use crate::policy::provider::{DEFAULT_TEMPERATURE, Effort};
use crate::policy::repair::Repair;
use crate::policy::sampling::{LOCAL_DEFAULT_CANDIDATES, LOCAL_DEFAULT_PARALLEL};
use crate::policy::validation::Validation;
use crate::policy::{POLICY_FILE, ProviderKind, parse};

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
    template_with(kind, project, super::defaults::confinement_here())
}

/// [`template_for`] on a machine whose confinement is `confinement` (`Err`: why the checks cannot be confined):
/// validation on propose and the repair round are written as that machine's defaults give them, explicitly.
pub fn template_with(
    kind: ProviderKind,
    project: &crate::project::Project,
    confinement: std::result::Result<(), String>,
) -> String {
    let on_propose = super::defaults::new_policy_with(confinement);
    [
        template_header(project.kind),
        template_provider(kind),
        template_models(kind),
        template_paths(project, &Paths::default()),
        template_limits(&Limits::DEFAULT),
        template_validation(project, &on_propose.0, &on_propose.2),
        template_repair(&Repair {
            attempts: on_propose.1,
        }),
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
fn template_validation(project: &crate::project::Project, v: &Validation, why: &str) -> String {
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
{why}
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
             # server's time when it has 4 slots (scripts/local-model.sh: LOCAL_MODEL_SLOTS=4; llama-server: \
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
    use crate::policy::catalogue::ALL_PROVIDERS;

    const ALL_PROJECTS: [ProjectKind; 6] = [
        ProjectKind::Rust,
        ProjectKind::Node,
        ProjectKind::Python,
        ProjectKind::PythonTests,
        ProjectKind::Go,
        ProjectKind::Other,
    ];

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
        // What this machine's defaults give for validation on propose and the repair round.
        let written = crate::policy::defaults::for_new_policy();
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
                        on_propose: written.0.on_propose,
                        ..Validation::default()
                    }
                );
                assert_eq!(p.repair.attempts, written.1);
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
}
