//! `local-llm-worker`: the CLI. Each subcommand translates its flags into a service call and prints the result; the
//! MCP server (`mcp`) serves the same service over stdio.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use local_llm_delegator::config::{self, ProviderKind};
use local_llm_delegator::error::IoContext;
use local_llm_delegator::service::{
    self, ApplyResult, Call, DelegateRequest, ProposeRequest, ProposeResult, Service,
};
use local_llm_delegator::{Error, doctor, ledger, mcp, scope, txn};

#[derive(Parser)]
#[command(
    name = "local-llm-worker",
    version,
    about = "Delegate small code changes to a cheap model; apply only approved bytes."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the MCP tools propose_patch, apply_patch and delegate_task on stdin/stdout.
    Mcp,
    /// Write a commented local-llm-worker.toml for a workspace.
    #[command(alias = "init_project")]
    InitProject {
        /// The project folder, absolute or relative (default: the current folder).
        #[arg(long)]
        workspace_root: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "llamacpp")]
        provider: ProviderKind,
        /// Overwrite an existing policy file.
        #[arg(long)]
        force: bool,
    },
    /// Ask the model for a patch; prints it with its digest. Never writes to the workspace.
    Propose {
        #[command(flatten)]
        task: TaskArgs,
        /// Also write the exact patch bytes to this file (for `apply --patch`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the same JSON object as the MCP tool.
        #[arg(long)]
        json: bool,
    },
    /// Read-only delegation of non-patch work; prints the model's answer.
    Delegate {
        /// summarize | extract | classify | routine_transform | draft_documentation | draft_tests |
        /// routine_code_draft | routine_review
        #[arg(long)]
        task_kind: String,
        #[command(flatten)]
        task: TaskArgs,
        /// text | markdown | json | patch
        #[arg(long)]
        output_format: Option<String>,
        #[arg(long)]
        max_output_tokens: Option<u32>,
        /// Print the same JSON object as the MCP tool.
        #[arg(long)]
        json: bool,
    },
    /// Check the policy, key, endpoint and routing of a workspace, one line each.
    Doctor {
        /// The project folder, absolute or relative (default: the nearest folder from here up that holds
        /// local-llm-worker.toml, else the current folder).
        #[arg(long)]
        workspace_root: Option<PathBuf>,
        #[arg(long, value_enum)]
        provider: Option<ProviderKind>,
    },
    /// Finish or undo applies a crash interrupted (the MCP server also does this when it starts).
    Recover {
        #[arg(long)]
        json: bool,
    },
    /// Summarise the ledger: tokens delegated, proposals applied and refused.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Apply a saved canonical patch whose digest you approved (stateless: the patch's blob ids make the stale check).
    Apply {
        /// The project folder, absolute or relative (default: the nearest folder from here up that holds
        /// local-llm-worker.toml, else the current folder).
        #[arg(long)]
        workspace_root: Option<PathBuf>,
        /// The patch file, exactly as propose wrote it.
        #[arg(long)]
        patch: PathBuf,
        /// The approved SHA-256 digest of the patch bytes.
        #[arg(long)]
        digest: String,
        #[arg(long)]
        json: bool,
    },
}

/// The scoped task, as `propose` and `delegate` both take it.
#[derive(clap::Args)]
struct TaskArgs {
    /// The project folder, absolute or relative (default: the nearest folder from here up that holds
    /// local-llm-worker.toml, else the current folder).
    #[arg(long)]
    workspace_root: Option<PathBuf>,
    #[arg(long)]
    task: String,
    /// An acceptance criterion (repeat: 1 to 20).
    #[arg(long = "accept")]
    accept: Vec<String>,
    /// A constraint (repeat: up to 20).
    #[arg(long = "constraint")]
    constraint: Vec<String>,
    /// A plan step (repeat: up to 30; required for medium).
    #[arg(long = "plan")]
    plan: Vec<String>,
    /// low | medium
    #[arg(long)]
    complexity: String,
    /// A workspace-relative file the model sees (repeat); `propose` may edit it or create it. PATH:START-END
    /// (1-based, inclusive) sends only those lines, and edits must stay inside them.
    #[arg(long = "file")]
    file: Vec<String>,
    #[arg(long)]
    context: Option<String>,
    /// Model: the alias flash or pro, or a full model id (low complexity always uses flash).
    #[arg(long)]
    model: Option<String>,
    /// Talk to this provider (with its defaults) instead of the policy's.
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
}

impl TaskArgs {
    fn call(&self) -> Call {
        Call {
            provider: self.provider,
            ..Call::default()
        }
    }
}

/// `p` made absolute against the current folder.
fn absolute(p: PathBuf) -> Result<PathBuf, Error> {
    if p.is_absolute() {
        return Ok(p);
    }
    std::env::current_dir()
        .map(|d| d.join(p))
        .context("cannot read the current folder")
}

/// The workspace a command works on: `--workspace-root` (absolute, or relative to the current folder), else the
/// nearest folder from the current one up that holds the policy file (as git finds `.git`), else the current folder.
fn workspace_for(arg: Option<PathBuf>) -> Result<String, Error> {
    let root = match arg {
        Some(p) => absolute(p)?,
        None => {
            let here = absolute(PathBuf::from("."))?;
            let here = here.canonicalize().unwrap_or(here);
            here.ancestors()
                .find(|d| d.join(config::POLICY_FILE).is_file())
                .map(PathBuf::from)
                .unwrap_or(here)
        }
    };
    Ok(root.to_string_lossy().into_owned())
}

fn main() -> ExitCode {
    // The worker's own /proc entries (its environment holds the provider key) become unreadable to other processes
    // of the same user, validation commands and what they run included.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    // Descriptors inherited from whoever started the worker (a folder of the host, a socket) must not reach the
    // validation commands it starts: a confined check could otherwise leave its confinement through one.
    // SAFETY: close_range only sets the close-on-exec flag on descriptors 3 and up; no memory is involved.
    unsafe { libc::close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err((e, json)) => {
            if json {
                let v = serde_json::json!({"error": {"kind": e.kind(), "message": e.to_string()}});
                println!("{v}");
            }
            eprintln!("error: {}", e.to_string().replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), (Error, bool)> {
    match command {
        Command::Mcp => {
            mcp::serve_stdio().map_err(|e| (Error::io_message(format!("MCP server: {e}")), false))
        }
        Command::InitProject {
            workspace_root,
            provider,
            force,
        } => {
            let root = match workspace_root {
                Some(p) => absolute(p).map_err(|e| (e, false))?,
                None => std::env::current_dir()
                    .context("cannot read the current folder")
                    .map_err(|e| (e, false))?,
            };
            let root = scope::root_from_arg(&root.to_string_lossy()).map_err(|e| (e, false))?;
            let path = config::init_project(&root, provider, force).map_err(|e| (e, false))?;
            println!("wrote {}", path.display());
            println!("review [paths] allowed and [validation] commands before the first propose.");
            Ok(())
        }
        Command::Propose { task: t, out, json } => {
            let call = t.call();
            let req = ProposeRequest {
                workspace_root: workspace_for(t.workspace_root.clone()).map_err(|e| (e, json))?,
                task: t.task,
                acceptance_criteria: t.accept,
                constraints: t.constraint,
                plan: t.plan,
                complexity: t.complexity,
                files: t.file,
                context: t.context,
                model: t.model,
            };
            let r = Service::new().propose(&req, &call).map_err(|e| (e, json))?;
            if let Some(out) = out {
                std::fs::write(&out, r.patch.as_bytes()).map_err(|e| {
                    (
                        Error::io_message(format!("cannot write {}: {e}", out.display())),
                        json,
                    )
                })?;
            }
            if json {
                print_json(&r);
            } else {
                print_proposal(&r);
            }
            Ok(())
        }
        Command::Delegate {
            task_kind,
            task: t,
            output_format,
            max_output_tokens,
            json,
        } => {
            let call = t.call();
            let req = DelegateRequest {
                workspace_root: workspace_for(t.workspace_root.clone()).map_err(|e| (e, json))?,
                task_kind,
                task: t.task,
                acceptance_criteria: t.accept,
                constraints: t.constraint,
                plan: t.plan,
                complexity: t.complexity,
                files: t.file,
                context: t.context,
                output_format,
                max_output_tokens,
                model: t.model,
            };
            let r = Service::new()
                .delegate(&req, &call)
                .map_err(|e| (e, json))?;
            if json {
                print_json(&r);
            } else {
                println!("{}", r.content);
                eprintln!(
                    "[{} / {}: {} input + {} output tokens, {} ms; files read: {}; window: {}]",
                    r.provider,
                    r.model,
                    r.usage.input_tokens,
                    r.usage.output_tokens,
                    r.elapsed_ms,
                    if r.files_read.is_empty() {
                        "none".to_string()
                    } else {
                        r.files_read.join(", ")
                    },
                    r.context_window
                );
            }
            Ok(())
        }
        Command::Doctor {
            workspace_root,
            provider,
        } => {
            let root = workspace_for(workspace_root).map_err(|e| (e, false))?;
            let checks = doctor::run(&root, provider);
            for c in &checks {
                println!("{c}");
            }
            match checks.iter().filter(|c| !c.ok).count() {
                0 => Ok(()),
                n => Err((
                    Error::InvalidArgument(format!(
                        "{n} check(s) failed; see the FAIL lines above"
                    )),
                    false,
                )),
            }
        }
        Command::Recover { json } => {
            let Some(state) = ledger::state_dir() else {
                return Err((
                    Error::io_message("no state folder: set LOCAL_LLM_STATE_DIR or HOME"),
                    json,
                ));
            };
            let done = txn::recover_all(&state);
            if json {
                print_json(&done);
            } else if done.is_empty() {
                println!("nothing to recover in {}", state.display());
            } else {
                for r in &done {
                    println!("{r}");
                }
            }
            match done.iter().any(|r| !r.problems.is_empty()) {
                false => Ok(()),
                true => Err((
                    Error::io_message("some files could not be recovered; see above"),
                    json,
                )),
            }
        }
        Command::Stats { json } => {
            let Some(path) = ledger::path() else {
                return Err((
                    Error::io_message("no ledger location: set LOCAL_LLM_LEDGER or HOME"),
                    json,
                ));
            };
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let s = ledger::summarise(&text);
            if json {
                print_json(&s);
            } else {
                println!("ledger              {}", path.display());
                println!(
                    "proposals           {} made, {} refused",
                    s.proposals, s.proposals_refused
                );
                println!(
                    "applies             {} applied, {} refused or rolled back",
                    s.applied, s.applies_refused
                );
                println!(
                    "delegations         {} answered, {} refused",
                    s.delegations, s.delegations_refused
                );
                println!(
                    "tokens delegated    {} input + {} output",
                    s.input_tokens, s.output_tokens
                );
                println!(
                    "files read for you  {} bytes: about {} primary-model tokens not spent reading them",
                    s.bytes_read, s.primary_tokens_saved
                );
            }
            Ok(())
        }
        Command::Apply {
            workspace_root,
            patch,
            digest,
            json,
        } => {
            let bytes = std::fs::read(&patch).map_err(|e| {
                (
                    Error::InvalidArgument(format!("cannot read --patch {}: {e}", patch.display())),
                    json,
                )
            })?;
            let root = workspace_for(workspace_root).map_err(|e| (e, json))?;
            let r = service::apply_bytes(&root, &bytes, &digest).map_err(|e| (e, json))?;
            if json {
                print_json(&r);
            } else {
                print_applied(&r);
            }
            Ok(())
        }
    }
}

fn print_json<T: serde::Serialize>(v: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
}

fn print_proposal(r: &ProposeResult) {
    println!("proposal  {}", r.proposal_id);
    println!("provider  {} / {}", r.provider, r.model);
    println!(
        "usage     {} input + {} output = {} tokens",
        r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens
    );
    println!(
        "time      {} ms ({} ms waiting for the model)",
        r.elapsed_ms, r.model_ms
    );
    println!("window    {}", r.context_window);
    for f in &r.files {
        let tiers: Vec<String> = f
            .hunks
            .iter()
            .map(|h| format!("line {} ({:?})", h.old_start, h.tier).to_lowercase())
            .collect();
        println!(
            "file      {} {} +{} -{}: {}",
            f.path,
            f.status,
            f.added_lines,
            f.removed_lines,
            tiers.join(", ")
        );
    }
    println!("dry run   {}", if r.dry_run_ok { "ok" } else { "failed" });
    print_checks(&r.validation, " in a sandbox copy");
    if let Some(why) = &r.repair_reason {
        println!(
            "first     the first answer failed validation; the last lines of what the repair round was shown:"
        );
        let lines: Vec<&str> = why.lines().collect();
        for l in &lines[lines.len().saturating_sub(8)..] {
            println!("          | {l}");
        }
    }
    if r.repaired {
        println!(
            "repaired  the first answer failed validation; this is the answer of the one repair round"
        );
    }
    if let Some(e) = &r.repair_error {
        println!("repair    tried, no usable edit: {e}");
    }
    println!("digest    {}", r.digest);
    println!("--- patch ---");
    print!("{}", r.patch);
    println!("--- end of patch ---");
}

fn print_applied(r: &ApplyResult) {
    println!("applied   {}", r.digest);
    for f in &r.files_written {
        println!("wrote     {f}");
    }
    print_checks(&r.validation, "");
}

fn print_checks(checks: &[local_llm_delegator::checks::CheckResult], place: &str) {
    for c in checks {
        println!(
            "check     `{}` {}{place} ({} ms, {})",
            c.command,
            if c.passed { "passed" } else { "FAILED" },
            c.duration_ms,
            c.isolation
        );
    }
}
