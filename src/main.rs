//! `local-llm-worker`: the CLI. Each subcommand translates its flags into a service call and prints the result; the
//! MCP server (`mcp`) serves the same service over stdio.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use local_llm_delegator::error::IoContext;
use local_llm_delegator::policy::{self, EditFormat, ProviderKind};
use local_llm_delegator::service::{self, Call, DelegateRequest, ProposeRequest, Service};
use local_llm_delegator::task::{OutputFormat, Task, TaskKind};
use local_llm_delegator::{
    Error, calibrate, doctor, ledger, mcp, render, sandbox, screen, trust, txn, workspace,
};

#[derive(Parser)]
#[command(
    name = "local-llm-worker",
    version,
    about = "Delegate small code changes to a cheap model; apply only approved bytes."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colour the patch and the verdicts: auto (on a terminal, unless NO_COLOR is set), always, never. JSON output
    /// is never coloured.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
}

/// When the CLI colours its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    fn choice(self) -> anstream::ColorChoice {
        match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        }
    }
}

/// Print text with styles in it to stdout: the styles are kept or stripped as `--color`, `NO_COLOR` and the terminal
/// say.
fn print_styled(text: &str) {
    let choice = COLOR.get().copied().unwrap_or(ColorWhen::Auto).choice();
    let mut out = anstream::AutoStream::new(std::io::stdout(), choice);
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

static COLOR: std::sync::OnceLock<ColorWhen> = std::sync::OnceLock::new();

/// Print plain text to stdout, screened: control characters from a model, a check, a file or a file name are shown
/// by code point ([`screen::text`]).
fn print_plain(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(screen::text(text).as_bytes());
    let _ = out.flush();
}

/// Print plain text to stderr, screened like [`print_plain`].
fn eprint_plain(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(screen::text(text).as_bytes());
}

/// While the model answers: a line on stderr with the seconds waited and the tokens streamed so far, drawn only when
/// stderr is a terminal, cleared when the answer is in.
struct Waiting(indicatif::ProgressBar);

impl Waiting {
    fn start(call: &mut Call) -> Waiting {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} waiting for the model: {elapsed} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let shown = bar.clone();
        call.watch.on_progress = std::sync::Arc::new(move |n| {
            shown.set_message(format!("({n} tokens so far)"));
        });
        Waiting(bar)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
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
    /// Trust the workspace's policy as it is now: prints what it would do (commands, URL, key variable, isolation)
    /// and records its SHA-256 in your state folder. A policy that names commands or a key variable is used only
    /// once trusted; a changed one must be trusted again.
    Trust {
        /// The project folder, absolute or relative (default: the nearest folder from here up that holds
        /// local-llm-worker.toml, else the current folder).
        #[arg(long)]
        workspace_root: Option<PathBuf>,
    },
    /// Ask the model for a patch; prints it with its digest. Never writes to the workspace. Exits 3 when the patch
    /// fails the project's checks (validation on propose): it is printed, framed by a banner, for you to read.
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
        /// The kind of read-only work: summarize, extract, classify, routine_transform, draft_documentation,
        /// draft_tests, routine_code_draft or routine_review.
        #[arg(long, value_parser = TaskKind::from_arg)]
        task_kind: TaskKind,
        #[command(flatten)]
        task: TaskArgs,
        /// How to answer: text (the default), markdown, json (checked to parse) or patch (text for you to read,
        /// never applied).
        #[arg(long, value_parser = OutputFormat::from_arg, value_name = "text|markdown|json|patch")]
        output_format: Option<OutputFormat>,
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
    /// Summarise the ledger: per provider, model and edit format, what became of the proposals and what an
    /// accepted patch cost and saved.
    ///
    /// A proposal is accepted when an apply of its digest succeeded. Acceptance rate = accepted / propose calls
    /// (refused ones included). Model tokens and seconds per accepted patch = those of every propose call / accepted.
    /// Primary-model tokens saved per accepted patch = the bytes of the files the worker read for it / 4 (what the
    /// primary did not have to read; the patch it still reviews is not counted). With prices in the policy
    /// ([provider] price_input_per_mtok and price_output_per_mtok, [ledger] primary_price_input_per_mtok): money
    /// spent = (input tokens x input price + output tokens x output price) / 1,000,000 per accepted patch; value
    /// saved = tokens saved x the primary's input price / 1,000,000.
    Stats {
        /// Only this workspace (absolute or relative).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Only what happened on or after this day (YYYY-MM-DD, UTC).
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Measure which [edit] format and [sampling] candidates suit the workspace's model, on a built-in suite of
    /// routine one-line edits (each proposed in a throwaway workspace; yours is only read, unless --write).
    ///
    /// For each format and for K = 1 and the default candidates, every case is proposed and its patch compared with
    /// the exact expected file. Valid: a patch was proposed. Correct: it gives exactly the expected file. Seconds
    /// per correct edit: model seconds of the row (a refused proposal counts its whole time) / correct edits. The
    /// recommendation: the most correct edits, ties broken by fewer seconds per correct edit.
    Calibrate {
        /// The project folder, absolute or relative (default: the nearest folder from here up that holds
        /// local-llm-worker.toml, else the current folder).
        #[arg(long)]
        workspace_root: Option<PathBuf>,
        /// Record the recommendation in the policy file ([edit] format, [sampling] candidates and calibrated, with
        /// a dated comment of the measured rates); every other byte of the file stays as it was.
        #[arg(long)]
        write: bool,
        /// One case per format instead of the whole suite.
        #[arg(long)]
        quick: bool,
        /// Only these edit formats, comma-separated (json, udiff, search_replace, whole_file).
        #[arg(long, value_delimiter = ',', value_parser = parse_format, value_name = "FORMAT,...")]
        formats: Vec<EditFormat>,
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

/// The scoped task, as `propose` and `delegate` both take it: the workspace, the [`Task`] itself, and a provider
/// override.
#[derive(clap::Args)]
struct TaskArgs {
    /// The project folder, absolute or relative (default: the nearest folder from here up that holds
    /// local-llm-worker.toml, else the current folder).
    #[arg(long)]
    workspace_root: Option<PathBuf>,
    #[command(flatten)]
    task: Task,
    /// Talk to this provider (with its defaults) instead of the policy's.
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
}

impl Command {
    /// Whether the command was asked for JSON output (a refusal is then printed as JSON too).
    fn json(&self) -> bool {
        match self {
            Command::Propose { json, .. }
            | Command::Delegate { json, .. }
            | Command::Recover { json }
            | Command::Stats { json, .. }
            | Command::Apply { json, .. }
            | Command::Calibrate { json, .. } => *json,
            Command::Mcp
            | Command::InitProject { .. }
            | Command::Trust { .. }
            | Command::Doctor { .. } => false,
        }
    }
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
/// nearest folder from the current one up that holds the policy file (as git finds `.git`; the search stops at a
/// folder owned by neither you nor root: `trust::search_up`), else the current folder.
fn workspace_for(arg: Option<PathBuf>) -> Result<String, Error> {
    let root = match arg {
        Some(p) => absolute(p)?,
        None => {
            let here = absolute(PathBuf::from("."))?;
            let here = here.canonicalize().unwrap_or(here);
            trust::search_up(&here).unwrap_or(here)
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
    let _ = COLOR.set(cli.color);
    match run(cli.command) {
        Ok(code) => code,
        Err((e, json)) => {
            if json {
                let v = serde_json::json!({ "error": e.refusal() });
                println!("{v}");
            }
            eprint_plain(&format!("error: {}\n", shown_error(&e)));
            ExitCode::FAILURE
        }
    }
}

/// `propose`'s exit code when it returns a patch that fails the project's checks (validation on propose).
const EXIT_CHECKS_FAILED: u8 = 3;

/// An error as one line, except a failed check's report, whose output keeps its lines (indented under the first).
fn shown_error(e: &Error) -> String {
    let text = e.render();
    if matches!(e, Error::ValidationFailed(_)) {
        return text.replace('\n', "\n  ");
    }
    text.replace('\n', " ")
}

fn run(command: Command) -> Result<ExitCode, (Error, bool)> {
    let json = command.json();
    match command {
        Command::Propose { task, out, json } => {
            return propose(task, out, json).map_err(|e| (e, json));
        }
        Command::Doctor {
            workspace_root,
            provider,
        } => return doctor_cmd(workspace_root, provider).map_err(|e| (e, json)),
        _ => {}
    }
    match command {
        Command::Mcp => serve(),
        Command::InitProject {
            workspace_root,
            provider,
            force,
        } => init_project(workspace_root, provider, force),
        Command::Trust { workspace_root } => trust_cmd(workspace_root),
        Command::Propose { .. } => Ok(()),
        Command::Delegate {
            task_kind,
            task,
            output_format,
            max_output_tokens,
            json,
        } => delegate(task_kind, task, output_format, max_output_tokens, json),
        Command::Doctor { .. } => Ok(()),
        Command::Recover { json } => recover(json),
        Command::Stats {
            workspace,
            since,
            json,
        } => stats(workspace, since, json),
        Command::Apply {
            workspace_root,
            patch,
            digest,
            json,
        } => apply(workspace_root, patch, digest, json),
        Command::Calibrate {
            workspace_root,
            write,
            quick,
            formats,
            json,
        } => calibrate_cmd(workspace_root, write, quick, formats, json),
    }
    .map(|()| ExitCode::SUCCESS)
    .map_err(|e| (e, json))
}

fn serve() -> Result<(), Error> {
    mcp::serve_stdio().map_err(|e| Error::io_message(format!("MCP server: {e}")))
}

fn init_project(
    workspace_root: Option<PathBuf>,
    provider: ProviderKind,
    force: bool,
) -> Result<(), Error> {
    let root = match workspace_root {
        Some(p) => absolute(p)?,
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let root = workspace::root_from_arg(&root.to_string_lossy())?;
    let path = policy::init_project(&root, provider, force)?;
    print_plain(&format!("wrote {}\n", path.display()));
    // What it wrote is what it trusts; an edit of the file needs `trust` again.
    let t = trust::trust_file(&path)?;
    print_plain(&format!(
        "trusted it as written (sha256 {}); after editing it, run `local-llm-worker trust` again.\n",
        t.digest
    ));
    println!("review [paths] allowed and [validation] commands before the first propose.");
    Ok(())
}

fn trust_cmd(workspace_root: Option<PathBuf>) -> Result<(), Error> {
    let root = workspace::root_from_arg(&workspace_for(workspace_root)?)?;
    let t = trust::trust_workspace(&root)?;
    let mut text = format!("trusted {} (sha256 {})\n", t.path.display(), t.digest);
    for line in &t.summary {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(&format!(
        "recorded in {}; a change to the file must be trusted again.\n",
        t.record.display()
    ));
    // The summary quotes the policy's commands and URL: screened like every text from a file.
    print_plain(&text);
    Ok(())
}

/// `propose`: exits [`EXIT_CHECKS_FAILED`] when the patch it prints fails the project's checks.
fn propose(t: TaskArgs, out: Option<PathBuf>, json: bool) -> Result<ExitCode, Error> {
    let mut call = t.call();
    cancel_on_interrupt(&call);
    let waiting = Waiting::start(&mut call);
    let req = ProposeRequest {
        workspace_root: workspace_for(t.workspace_root.clone())?,
        task: t.task,
        ..ProposeRequest::default()
    };
    let r = Service::new().propose(&req, &call);
    drop(waiting);
    let r = r?;
    if let Some(out) = out {
        std::fs::write(&out, r.patch.as_bytes()).at("cannot write", &out)?;
    }
    if json {
        print_json(&r);
    } else {
        print_styled(&render::proposal(&r, ledger::path().as_deref()));
    }
    if let Some(notice) = &r.checks_failed {
        eprintln!("error: {notice}");
        return Ok(ExitCode::from(EXIT_CHECKS_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

fn delegate(
    task_kind: TaskKind,
    t: TaskArgs,
    output_format: Option<OutputFormat>,
    max_output_tokens: Option<u32>,
    json: bool,
) -> Result<(), Error> {
    let mut call = t.call();
    cancel_on_interrupt(&call);
    let waiting = Waiting::start(&mut call);
    let req = DelegateRequest {
        workspace_root: workspace_for(t.workspace_root.clone())?,
        task_kind,
        task: t.task,
        output_format,
        max_output_tokens,
        ..DelegateRequest::default()
    };
    let r = Service::new().delegate(&req, &call);
    drop(waiting);
    let r = r?;
    if json {
        print_json(&r);
    } else {
        print_plain(&format!("{}\n", r.content));
        eprint_plain(&format!(
            "[{} / {}: {} input + {} output tokens, {} ms; files read: {}; window: {}]\n",
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
        ));
    }
    Ok(())
}

/// `doctor`: one line per check; exits 1 when one failed, saying how many (the FAIL lines carry their fixes).
fn doctor_cmd(
    workspace_root: Option<PathBuf>,
    provider: Option<ProviderKind>,
) -> Result<ExitCode, Error> {
    let root = workspace_for(workspace_root)?;
    let checks = doctor::run(&root, provider);
    for c in &checks {
        print_plain(&format!("{c}\n"));
    }
    match checks.iter().filter(|c| !c.ok).count() {
        0 => Ok(ExitCode::SUCCESS),
        n => {
            eprintln!("doctor: {n} check(s) failed; each FAIL line above says how to fix it");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn recover(json: bool) -> Result<(), Error> {
    let Some(state) = ledger::state_dir() else {
        return Err(Error::io_message(
            "no state folder: set LOCAL_LLM_STATE_DIR or HOME",
        ));
    };
    let (done, stuck) = txn::recover_all_within(&state, txn::recover_timeout());
    let orphans = sandbox::parent_dir().map_or(0, |p| sandbox::remove_orphans(&p));
    if !json && orphans > 0 {
        println!("removed {orphans} validation sandbox folder(s) left by killed workers");
    }
    if json {
        print_json(&done);
    } else if done.is_empty() && stuck.is_none() {
        print_plain(&format!("nothing to recover in {}\n", state.display()));
    } else {
        for r in &done {
            print_plain(&format!("{r}\n"));
        }
    }
    if let Some(stuck) = stuck {
        return Err(Error::io_message(stuck));
    }
    match done.iter().any(|r| !r.problems.is_empty()) {
        false => Ok(()),
        true => Err(Error::io_message(
            "some files could not be recovered; see above",
        )),
    }
}

fn stats(workspace: Option<PathBuf>, since: Option<String>, json: bool) -> Result<(), Error> {
    let Some(path) = ledger::path() else {
        return Err(Error::io_message(
            "no ledger location: set LOCAL_LLM_LEDGER or HOME",
        ));
    };
    let filter = local_llm_delegator::payoff::Filter {
        workspace: match workspace {
            Some(w) => {
                let w = absolute(w)?;
                Some(w.canonicalize().unwrap_or(w).to_string_lossy().into_owned())
            }
            None => None,
        },
        since: match since {
            Some(d) => Some(local_llm_delegator::payoff::parse_date(&d).ok_or_else(|| {
                Error::InvalidArgument(format!("--since {d:?} is not a date: write YYYY-MM-DD"))
            })?),
            None => None,
        },
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (all, unreadable) = ledger::entries(&text);
    let kept: Vec<ledger::Entry> = all
        .iter()
        .filter(|e| {
            filter.workspace.as_ref().is_none_or(|w| &e.workspace == w)
                && filter.since.is_none_or(|t| e.time >= t)
        })
        .cloned()
        .collect();
    let mut s = ledger::summarise_entries(&kept);
    s.unreadable_lines = unreadable;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let groups = local_llm_delegator::payoff::summarise(&all, &filter, now);
    if json {
        // The totals at the top level (as before), the ledger's path and the payoff per group beside them.
        let mut v = serde_json::to_value(&s).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("ledger".into(), serde_json::json!(path));
            m.insert("payoff".into(), serde_json::json!(groups));
        }
        print_json(&v);
        return Ok(());
    }
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(text, "ledger              {}", path.display());
    let _ = writeln!(
        text,
        "proposals           {} made, {} refused",
        s.proposals, s.proposals_refused
    );
    let _ = writeln!(
        text,
        "applies             {} applied, {} refused or rolled back",
        s.applied, s.applies_refused
    );
    let _ = writeln!(
        text,
        "delegations         {} answered, {} refused",
        s.delegations, s.delegations_refused
    );
    let _ = writeln!(
        text,
        "tokens delegated    {} input + {} output",
        s.input_tokens, s.output_tokens
    );
    let _ = writeln!(
        text,
        "files read for you  {} bytes: about {} primary-model tokens not spent reading them",
        s.bytes_read, s.primary_tokens_saved
    );
    text.push('\n');
    text.push_str(&local_llm_delegator::payoff::render(&groups));
    // The ledger is a file: its provider, model and format names are shown screened.
    print_plain(&text);
    Ok(())
}

fn apply(
    workspace_root: Option<PathBuf>,
    patch: PathBuf,
    digest: String,
    json: bool,
) -> Result<(), Error> {
    let bytes = std::fs::read(&patch).map_err(|e| {
        Error::InvalidArgument(format!("cannot read --patch {}: {e}", patch.display()))
    })?;
    let root = workspace_for(workspace_root)?;
    let r = service::apply_bytes(&root, &bytes, &digest)?;
    if json {
        print_json(&r);
    } else {
        print_styled(&render::applied(&r, ledger::path().as_deref()));
    }
    Ok(())
}

/// An edit format from its policy-file name, for `--formats`.
fn parse_format(name: &str) -> Result<EditFormat, String> {
    calibrate::format_from_name(name).ok_or_else(|| {
        format!("{name:?} is not an edit format: write json, udiff, search_replace or whole_file")
    })
}

/// The flag a first Ctrl-C sets (a second one ends the process as usual).
static INTERRUPTED: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

extern "C" fn on_interrupt(_: libc::c_int) {
    if let Some(flag) = INTERRUPTED.get() {
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Make the first Ctrl-C cancel `call` (the model request in flight is closed at once, see
/// [`local_llm_delegator::provider::http`]) instead of ending the process; the handler resets itself, so a second
/// Ctrl-C ends it.
fn cancel_on_interrupt(call: &Call) {
    if INTERRUPTED.set(call.watch.cancelled.clone()).is_err() {
        return;
    }
    // SAFETY: the handler only stores to an atomic flag that the OnceLock holds for the life of the process; the
    // sigaction struct is zeroed, then filled in.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

fn calibrate_cmd(
    workspace_root: Option<PathBuf>,
    write: bool,
    quick: bool,
    formats: Vec<EditFormat>,
    json: bool,
) -> Result<(), Error> {
    let root = workspace_for(workspace_root)?;
    let plan = calibrate::plan(&root, &calibrate::Options { formats, quick })?;
    let mut call = Call::default();
    cancel_on_interrupt(&call);
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(plan.proposals() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} calibrating {pos}/{len}: {msg} {elapsed} (Ctrl-C stops)",
    ) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let label = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (shown, at) = (bar.clone(), label.clone());
    call.watch.on_progress = std::sync::Arc::new(move |n| {
        let at = at.lock().map(|s| s.clone()).unwrap_or_default();
        shown.set_message(format!("{at} ({n} tokens so far)"));
    });
    let step = |s: &calibrate::Step<'_>| {
        let text = format!("{} K={} {}", s.format.name(), s.candidates, s.case.path);
        bar.set_position(s.done as u64);
        bar.set_message(text.clone());
        if let Ok(mut l) = label.lock() {
            *l = text;
        }
    };
    let outcome = calibrate::run(&plan, &call, &step);
    bar.finish_and_clear();
    let (rows, stopped) = match outcome {
        Ok(rows) => (rows, None),
        Err((rows, e)) => (rows, Some(e)),
    };
    let mut report = calibrate::report(&plan, rows);
    if let Some(e) = stopped {
        // What was measured before the stop is shown, never written.
        if !json {
            print_plain(&calibrate::render(&report));
        }
        return Err(e);
    }
    if write {
        calibrate::write_report(&plan, &mut report)?;
    }
    if json {
        print_json(&report);
    } else {
        print_plain(&calibrate::render(&report));
    }
    Ok(())
}

fn print_json<T: serde::Serialize>(v: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, v);
    let _ = writeln!(out);
}
