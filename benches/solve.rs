//! How often a real small model's draft ends as an accepted patch: the bench's own routine Python fixes
//! (`benches/solve/tasks.rs`), each proposed against a REAL OpenAI-compatible server (the local llama.cpp server of
//! `scripts/local-model.sh`), then applied with its digest; the apply runs the task's failing test, so a task is
//! solved when the apply lands (the test passed on the applied bytes) and never otherwise.
//!
//! ```text
//! url=$(LOCAL_MODEL=gemma3 LOCAL_MODEL_PORT=0 LOCAL_MODEL_PARALLEL=4 scripts/local-model.sh start)
//! SOLVE_URL=$url SOLVE_POLICY=$'[sampling]\ncandidates = 4' cargo bench --locked --bench solve
//! ```
//!
//! `SOLVE_POLICY`: TOML appended to each task's policy (`[sampling]`, `[edit]`, `[repair]`, `[provider] temperature`
//! through `SOLVE_TEMPERATURE`); `SOLVE_ON_PROPOSE=0` turns validation on propose off; `SOLVE_TASKS=area,last` runs
//! only those; `SOLVE_SET=held-out`, `fresh`, `third`, `fourth`, `fifth`, `sixth`, `seventh`, `eighth`, `ninth`, `tenth`, `eleventh`, `twelfth`, `thirteenth`, `fourteenth`, `fifteenth`, `sixteenth`, `seventeenth`, `eighteenth`, `nineteenth`, `twentieth`, `twenty-first`, `twenty-second`, `twenty-third`, `twenty-fourth`, `twenty-fifth`, `twenty-sixth`, `twenty-seventh`, `twenty-eighth`, `twenty-ninth`, `thirtieth`, `thirty-first`, `thirty-second`, `thirty-third`, `thirty-fourth`, `thirty-fifth`, `thirty-sixth`, `thirty-seventh`, `thirty-eighth`, `thirty-ninth`, `fortieth`, `forty-first`, `forty-second`, `forty-third`, `forty-fourth`, `forty-fifth`, `forty-sixth`, `forty-seventh`, `forty-eighth`, `forty-ninth`, `fiftieth`, `fifty-first`, `fifty-second`, `fifty-third`, `fifty-fourth`, `fifty-fifth`, `fifty-sixth`, `fifty-seventh`, `fifty-eighth`, `fifty-ninth`, `sixtieth`, `sixty-first`, `sixty-second`, `sixty-third`, `sixty-fourth`, `sixty-fifth`, `sixty-sixth`, `sixty-seventh`, `sixty-eighth`, `sixty-ninth`, `seventy-second`, `seventy-third`, `seventy-fourth`, `seventy-fifth`, `seventy-sixth`, `seventy-seventh`, `seventy-eighth`, `seventy-ninth`, `eightieth` or `eighty-first` runs a set written for `--localize` instead of the bench's own
//! tasks; `SOLVE_HANDED=1` hands each task's true line as the file's range (`PATH:N-N`) instead of the whole file
//! (what the model solves when handed the right line); `SOLVE_ROUNDS=N` runs every task N times; `SOLVE_VERBOSE=1` shows the changed lines of a patch whose
//! test failed. Prints one line per task and a summary: solved, proposals
//! made, model seconds and tokens, and seconds of model time per solved task.
//!
//! `SOLVE_SPEED=N` measures time instead (see [`speed`]): N proposals at the defaults (a policy that sets only its
//! check: validation on propose where bubblewrap works, the repair round, 4 candidates for a local server)
//! against N single unvalidated answers, on one ~20-line file with a failing test; the medians and their ratio.
//!
//! `cargo bench --locked --bench solve -- --localize` needs no model: for each set of ranking signals
//! ([`local_llm_delegator::locate_rank::Signals`], added one by one) it ranks each task's places and prints whether the
//! task's true place (its `line`, or the place after it when the fix `adds` a line) is ranked first, and among the
//! first three (the places candidates are pinned to). `SOLVE_VERBOSE=1` shows each task's first three.
//!
//! `SOLVE_URL=... cargo bench --locked --bench solve -- --localize-model` measures the model's own ranking: one
//! greedy request per task showing the file's lines labelled A, B, C..., its answer held by a grammar to one label,
//! the labels ranked by the first token's `top_logprobs` (llama.cpp). A task's true place counts when its line's
//! label is ranked first / among the first three (for a fix that adds a line: the line it goes after).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;
#[path = "solve/eighteenth.rs"]
mod eighteenth;
#[path = "solve/eighth.rs"]
mod eighth;
#[path = "solve/eightieth.rs"]
mod eightieth;
#[path = "solve/eighty_first.rs"]
mod eighty_first;
#[path = "solve/eleventh.rs"]
mod eleventh;
#[path = "solve/fifteenth.rs"]
mod fifteenth;
#[path = "solve/fifth.rs"]
mod fifth;
#[path = "solve/fiftieth.rs"]
mod fiftieth;
#[path = "solve/fifty_eighth.rs"]
mod fifty_eighth;
#[path = "solve/fifty_fifth.rs"]
mod fifty_fifth;
#[path = "solve/fifty_first.rs"]
mod fifty_first;
#[path = "solve/fifty_fourth.rs"]
mod fifty_fourth;
#[path = "solve/fifty_ninth.rs"]
mod fifty_ninth;
#[path = "solve/fifty_second.rs"]
mod fifty_second;
#[path = "solve/fifty_seventh.rs"]
mod fifty_seventh;
#[path = "solve/fifty_sixth.rs"]
mod fifty_sixth;
#[path = "solve/fifty_third.rs"]
mod fifty_third;
#[path = "solve/fortieth.rs"]
mod fortieth;
#[path = "solve/forty_eighth.rs"]
mod forty_eighth;
#[path = "solve/forty_fifth.rs"]
mod forty_fifth;
#[path = "solve/forty_first.rs"]
mod forty_first;
#[path = "solve/forty_fourth.rs"]
mod forty_fourth;
#[path = "solve/forty_ninth.rs"]
mod forty_ninth;
#[path = "solve/forty_second.rs"]
mod forty_second;
#[path = "solve/forty_seventh.rs"]
mod forty_seventh;
#[path = "solve/forty_sixth.rs"]
mod forty_sixth;
#[path = "solve/forty_third.rs"]
mod forty_third;
#[path = "solve/fourteenth.rs"]
mod fourteenth;
#[path = "solve/fourth.rs"]
mod fourth;
#[path = "solve/fresh.rs"]
mod fresh;
#[path = "solve/nineteenth.rs"]
mod nineteenth;
#[path = "solve/ninth.rs"]
mod ninth;
#[path = "solve/seventeenth.rs"]
mod seventeenth;
#[path = "solve/seventh.rs"]
mod seventh;
#[path = "solve/seventieth.rs"]
mod seventieth;
#[path = "solve/seventy_eighth.rs"]
mod seventy_eighth;
#[path = "solve/seventy_fifth.rs"]
mod seventy_fifth;
#[path = "solve/seventy_first.rs"]
mod seventy_first;
#[path = "solve/seventy_fourth.rs"]
mod seventy_fourth;
#[path = "solve/seventy_ninth.rs"]
mod seventy_ninth;
#[path = "solve/seventy_second.rs"]
mod seventy_second;
#[path = "solve/seventy_seventh.rs"]
mod seventy_seventh;
#[path = "solve/seventy_sixth.rs"]
mod seventy_sixth;
#[path = "solve/seventy_third.rs"]
mod seventy_third;
#[path = "solve/sixteenth.rs"]
mod sixteenth;
#[path = "solve/sixth.rs"]
mod sixth;
#[path = "solve/sixtieth.rs"]
mod sixtieth;
#[path = "solve/sixty_eighth.rs"]
mod sixty_eighth;
#[path = "solve/sixty_fifth.rs"]
mod sixty_fifth;
#[path = "solve/sixty_first.rs"]
mod sixty_first;
#[path = "solve/sixty_fourth.rs"]
mod sixty_fourth;
#[path = "solve/sixty_ninth.rs"]
mod sixty_ninth;
#[path = "solve/sixty_second.rs"]
mod sixty_second;
#[path = "solve/sixty_seventh.rs"]
mod sixty_seventh;
#[path = "solve/sixty_sixth.rs"]
mod sixty_sixth;
#[path = "solve/sixty_third.rs"]
mod sixty_third;
#[path = "solve/speed.rs"]
mod speed;
#[path = "solve/tasks.rs"]
mod tasks;
#[path = "solve/tenth.rs"]
mod tenth;
#[path = "solve/third.rs"]
mod third;
#[path = "solve/thirteenth.rs"]
mod thirteenth;
#[path = "solve/thirtieth.rs"]
mod thirtieth;
#[path = "solve/thirty_eighth.rs"]
mod thirty_eighth;
#[path = "solve/thirty_fifth.rs"]
mod thirty_fifth;
#[path = "solve/thirty_first.rs"]
mod thirty_first;
#[path = "solve/thirty_fourth.rs"]
mod thirty_fourth;
#[path = "solve/thirty_ninth.rs"]
mod thirty_ninth;
#[path = "solve/thirty_second.rs"]
mod thirty_second;
#[path = "solve/thirty_seventh.rs"]
mod thirty_seventh;
#[path = "solve/thirty_sixth.rs"]
mod thirty_sixth;
#[path = "solve/thirty_third.rs"]
mod thirty_third;
#[path = "solve/twelfth.rs"]
mod twelfth;
#[path = "solve/twentieth.rs"]
mod twentieth;
#[path = "solve/twenty_eighth.rs"]
mod twenty_eighth;
#[path = "solve/twenty_fifth.rs"]
mod twenty_fifth;
#[path = "solve/twenty_first.rs"]
mod twenty_first;
#[path = "solve/twenty_fourth.rs"]
mod twenty_fourth;
#[path = "solve/twenty_ninth.rs"]
mod twenty_ninth;
#[path = "solve/twenty_second.rs"]
mod twenty_second;
#[path = "solve/twenty_seventh.rs"]
mod twenty_seventh;
#[path = "solve/twenty_sixth.rs"]
mod twenty_sixth;
#[path = "solve/twenty_third.rs"]
mod twenty_third;

use std::time::Instant;

use local_llm_delegator::service::{ApplyRequest, Call, ProposeRequest, Service};
use serde_json::{Value, json};

fn main() -> std::process::ExitCode {
    // The worker's state (its ledger, journals and locks) goes to a folder of this run, removed at its end: the bench
    // never writes to the user's ledger.
    let Ok(state) = tempfile::tempdir() else {
        eprintln!("error: no scratch folder for the worker's state");
        return std::process::ExitCode::FAILURE;
    };
    // SAFETY: set before any thread starts, and nothing reads the environment concurrently.
    unsafe {
        std::env::set_var("LOCAL_LLM_STATE_DIR", state.path());
        std::env::remove_var("LOCAL_LLM_LEDGER");
    }
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[derive(Default)]
struct Totals {
    runs: usize,
    solved: usize,
    proposed: usize,
    validation_passed: usize,
    model_ms: u64,
    tokens: u64,
    wall_ms: u64,
}

fn run() -> Result<(), String> {
    if std::env::args().any(|a| a == "--localize") {
        localize();
        return Ok(());
    }
    if std::env::args().any(|a| a == "--localize-model") {
        return localize_by_model();
    }
    let url = std::env::var("SOLVE_URL").map_err(|_| {
        "SOLVE_URL is not set: start scripts/local-model.sh and pass its URL".to_string()
    })?;
    let extra = std::env::var("SOLVE_POLICY").unwrap_or_default();
    let on_propose = std::env::var("SOLVE_ON_PROPOSE").as_deref() != Ok("0");
    let temperature = std::env::var("SOLVE_TEMPERATURE").ok();
    let only: Vec<String> = std::env::var("SOLVE_TASKS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let rounds: usize = std::env::var("SOLVE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    if let Some(runs) = std::env::var("SOLVE_SPEED")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        return speed::run(&url, runs);
    }
    common::print_machine("solve: real-model drafts that end as accepted patches");
    let model = served_model(&url);
    println!("  server   {url} (model {model})");
    println!(
        "  policy   on_propose = {on_propose}{}{}",
        temperature
            .as_deref()
            .map(|t| format!(", temperature = {t}"))
            .unwrap_or_default(),
        if extra.is_empty() {
            String::new()
        } else {
            format!(", {}", extra.replace('\n', " "))
        }
    );
    if std::env::var("SOLVE_HANDED").as_deref() == Ok("1") {
        println!("  files    each task's true line only, as its range (SOLVE_HANDED=1)");
    }
    // `SOLVE_SET=held-out`, `fresh`, `third`, `fourth`, `fifth`, `sixth`, `seventh`, `eighth`, `ninth`, `tenth`, `eleventh`, `twelfth`, `thirteenth`, `fourteenth`, `fifteenth`, `sixteenth`, `seventeenth`, `eighteenth`, `nineteenth`, `twentieth`, `twenty-first`, `twenty-second`, `twenty-third`, `twenty-fourth`, `twenty-fifth`, `twenty-sixth`, `twenty-seventh`, `twenty-eighth`, `twenty-ninth`, `thirtieth`, `thirty-first`, `thirty-second`, `thirty-third`, `thirty-fourth`, `thirty-fifth`, `thirty-sixth`, `thirty-seventh`, `thirty-eighth`, `thirty-ninth`, `fortieth`, `forty-first`, `forty-second`, `forty-third`, `forty-fourth`, `forty-fifth`, `forty-sixth`, `forty-seventh`, `forty-eighth`, `forty-ninth`, `fiftieth`, `fifty-first`, `fifty-second`, `fifty-third`, `fifty-fourth`, `fifty-fifth`, `fifty-sixth`, `fifty-seventh`, `fifty-eighth`, `fifty-ninth`, `sixtieth`, `sixty-first`, `sixty-second`, `sixty-third`, `sixty-fourth`, `sixty-fifth`, `sixty-sixth`, `sixty-seventh`, `sixty-eighth`, `sixty-ninth`, `seventy-second`, `seventy-third`, `seventy-fourth`, `seventy-fifth`, `seventy-sixth`, `seventy-seventh`, `seventy-eighth`, `seventy-ninth`, `eightieth` or `eighty-first`: one of the sets written for `--localize` instead of the bench's own.
    let set = match std::env::var("SOLVE_SET").as_deref() {
        Ok("held-out") => tasks::HELD_OUT,
        Ok("fresh") => fresh::FRESH,
        Ok("third") => third::THIRD,
        Ok("fourth") => fourth::FOURTH,
        Ok("fifth") => fifth::FIFTH,
        Ok("sixth") => sixth::SIXTH,
        Ok("seventh") => seventh::SEVENTH,
        Ok("eighth") => eighth::EIGHTH,
        Ok("ninth") => ninth::NINTH,
        Ok("tenth") => tenth::TENTH,
        Ok("eleventh") => eleventh::ELEVENTH,
        Ok("twelfth") => twelfth::TWELFTH,
        Ok("thirteenth") => thirteenth::THIRTEENTH,
        Ok("fourteenth") => fourteenth::FOURTEENTH,
        Ok("fifteenth") => fifteenth::FIFTEENTH,
        Ok("sixteenth") => sixteenth::SIXTEENTH,
        Ok("seventeenth") => seventeenth::SEVENTEENTH,
        Ok("eighteenth") => eighteenth::EIGHTEENTH,
        Ok("nineteenth") => nineteenth::NINETEENTH,
        Ok("twentieth") => twentieth::TWENTIETH,
        Ok("twenty-first") => twenty_first::TWENTY_FIRST,
        Ok("twenty-second") => twenty_second::TWENTY_SECOND,
        Ok("twenty-third") => twenty_third::TWENTY_THIRD,
        Ok("twenty-fourth") => twenty_fourth::TWENTY_FOURTH,
        Ok("twenty-fifth") => twenty_fifth::TWENTY_FIFTH,
        Ok("twenty-sixth") => twenty_sixth::TWENTY_SIXTH,
        Ok("twenty-seventh") => twenty_seventh::TWENTY_SEVENTH,
        Ok("twenty-eighth") => twenty_eighth::TWENTY_EIGHTH,
        Ok("twenty-ninth") => twenty_ninth::TWENTY_NINTH,
        Ok("thirtieth") => thirtieth::THIRTIETH,
        Ok("thirty-first") => thirty_first::THIRTY_FIRST,
        Ok("thirty-second") => thirty_second::THIRTY_SECOND,
        Ok("thirty-third") => thirty_third::THIRTY_THIRD,
        Ok("thirty-fourth") => thirty_fourth::THIRTY_FOURTH,
        Ok("thirty-fifth") => thirty_fifth::THIRTY_FIFTH,
        Ok("thirty-sixth") => thirty_sixth::THIRTY_SIXTH,
        Ok("thirty-seventh") => thirty_seventh::THIRTY_SEVENTH,
        Ok("thirty-eighth") => thirty_eighth::THIRTY_EIGHTH,
        Ok("thirty-ninth") => thirty_ninth::THIRTY_NINTH,
        Ok("fortieth") => fortieth::FORTIETH,
        Ok("forty-first") => forty_first::FORTY_FIRST,
        Ok("forty-second") => forty_second::FORTY_SECOND,
        Ok("forty-third") => forty_third::FORTY_THIRD,
        Ok("forty-fourth") => forty_fourth::FORTY_FOURTH,
        Ok("forty-fifth") => forty_fifth::FORTY_FIFTH,
        Ok("forty-sixth") => forty_sixth::FORTY_SIXTH,
        Ok("forty-seventh") => forty_seventh::FORTY_SEVENTH,
        Ok("forty-eighth") => forty_eighth::FORTY_EIGHTH,
        Ok("forty-ninth") => forty_ninth::FORTY_NINTH,
        Ok("fiftieth") => fiftieth::FIFTIETH,
        Ok("fifty-first") => fifty_first::FIFTY_FIRST,
        Ok("fifty-second") => fifty_second::FIFTY_SECOND,
        Ok("fifty-third") => fifty_third::FIFTY_THIRD,
        Ok("fifty-fourth") => fifty_fourth::FIFTY_FOURTH,
        Ok("fifty-fifth") => fifty_fifth::FIFTY_FIFTH,
        Ok("fifty-sixth") => fifty_sixth::FIFTY_SIXTH,
        Ok("fifty-seventh") => fifty_seventh::FIFTY_SEVENTH,
        Ok("fifty-eighth") => fifty_eighth::FIFTY_EIGHTH,
        Ok("fifty-ninth") => fifty_ninth::FIFTY_NINTH,
        Ok("sixtieth") => sixtieth::SIXTIETH,
        Ok("sixty-first") => sixty_first::SIXTY_FIRST,
        Ok("sixty-second") => sixty_second::SIXTY_SECOND,
        Ok("sixty-third") => sixty_third::SIXTY_THIRD,
        Ok("sixty-fourth") => sixty_fourth::SIXTY_FOURTH,
        Ok("sixty-fifth") => sixty_fifth::SIXTY_FIFTH,
        Ok("sixty-sixth") => sixty_sixth::SIXTY_SIXTH,
        Ok("sixty-seventh") => sixty_seventh::SIXTY_SEVENTH,
        Ok("sixty-eighth") => sixty_eighth::SIXTY_EIGHTH,
        Ok("sixty-ninth") => sixty_ninth::SIXTY_NINTH,
        Ok("seventieth") => seventieth::SEVENTIETH,
        Ok("seventy-first") => seventy_first::SEVENTY_FIRST,
        Ok("seventy-second") => seventy_second::SEVENTY_SECOND,
        Ok("seventy-third") => seventy_third::SEVENTY_THIRD,
        Ok("seventy-fourth") => seventy_fourth::SEVENTY_FOURTH,
        Ok("seventy-fifth") => seventy_fifth::SEVENTY_FIFTH,
        Ok("seventy-sixth") => seventy_sixth::SEVENTY_SIXTH,
        Ok("seventy-seventh") => seventy_seventh::SEVENTY_SEVENTH,
        Ok("seventy-eighth") => seventy_eighth::SEVENTY_EIGHTH,
        Ok("seventy-ninth") => seventy_ninth::SEVENTY_NINTH,
        Ok("eightieth") => eightieth::EIGHTIETH,
        Ok("eighty-first") => eighty_first::EIGHTY_FIRST,
        Ok("") | Err(_) => tasks::TASKS,
        Ok(other) => {
            return Err(format!(
                "SOLVE_SET={other}: use held-out, fresh, third, fourth, fifth, sixth, seventh, eighth, ninth, tenth, eleventh, twelfth, thirteenth, fourteenth, fifteenth, sixteenth, seventeenth, eighteenth, nineteenth, twentieth, twenty-first, twenty-second, twenty-third, twenty-fourth, twenty-fifth, twenty-sixth, twenty-seventh, twenty-eighth, twenty-ninth, thirtieth, thirty-first, thirty-second, thirty-third, thirty-fourth, thirty-fifth, thirty-sixth, thirty-seventh, thirty-eighth, thirty-ninth, fortieth, forty-first, forty-second, forty-third, forty-fourth, forty-fifth, forty-sixth, forty-seventh, forty-eighth, forty-ninth, fiftieth, fifty-first, fifty-second, fifty-third, fifty-fourth, fifty-fifth, fifty-sixth, fifty-seventh, fifty-eighth, fifty-ninth, sixtieth, sixty-first, sixty-second, sixty-third, sixty-fourth, sixty-fifth, sixty-sixth, sixty-seventh, sixty-eighth, sixty-ninth, seventy-second, seventy-third, seventy-fourth, seventy-fifth, seventy-sixth, seventy-seventh, seventy-eighth, seventy-ninth, eightieth or eighty-first"
            ));
        }
    };
    let mut t = Totals::default();
    let started = Instant::now();
    for round in 0..rounds {
        for task in set {
            if !only.is_empty() && !only.iter().any(|o| o == task.name) {
                continue;
            }
            let line = one(
                &url,
                &extra,
                on_propose,
                temperature.as_deref(),
                task,
                &mut t,
            )?;
            println!("  {:>2} {:<15} {line}", round + 1, task.name);
        }
    }
    t.wall_ms = started.elapsed().as_millis() as u64;
    println!(
        "  solved {}/{} | proposals {} | validation passed on propose {} | model {:.1} s | tokens {} | {} s of model time per solved task | wall {:.1} s",
        t.solved,
        t.runs,
        t.proposed,
        t.validation_passed,
        t.model_ms as f64 / 1000.0,
        t.tokens,
        if t.solved == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", t.model_ms as f64 / 1000.0 / t.solved as f64)
        },
        t.wall_ms as f64 / 1000.0
    );
    Ok(())
}

/// What the server says it serves (`/v1/models`), for the header.
fn served_model(url: &str) -> String {
    ureq::get(&format!("{}/models", url.trim_end_matches('/')))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
        .and_then(|v| v["data"][0]["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// Propose and apply one task in a fresh workspace; the line for the table.
fn one(
    url: &str,
    extra: &str,
    on_propose: bool,
    temperature: Option<&str>,
    task: &tasks::SolveTask,
    t: &mut Totals,
) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let test_file = format!("test_{}.py", task.file.trim_end_matches(".py"));
    let temperature = temperature
        .map(|t| format!("temperature = {t}\n"))
        .unwrap_or_default();
    let policy = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"{url}\"\n{temperature}\n[validation]\ncommands = [\"python3 {test_file}\"]\non_propose = {on_propose}\ntimeout_secs = 20\n\n{extra}\n"
    );
    let policy_path = root.join("local-llm-worker.toml");
    std::fs::write(&policy_path, &policy).map_err(|e| e.to_string())?;
    // The bench's own policy, trusted for this process (nothing recorded).
    local_llm_delegator::trust::allow_in_process(
        &policy_path,
        &local_llm_delegator::digest::sha256_hex(policy.as_bytes()),
    );
    std::fs::write(root.join(task.file), task.source).map_err(|e| e.to_string())?;
    std::fs::write(root.join(&test_file), task.test).map_err(|e| e.to_string())?;
    t.runs += 1;
    // `SOLVE_HANDED=1`: the primary hands the true line as the file's range (`PATH:N-N`), as the skill's "locate,
    // don't read" has it do: what the model solves when it is handed the right line, through the product.
    let file = if std::env::var("SOLVE_HANDED").as_deref() == Ok("1") {
        format!("{}:{}-{}", task.file, task.line, task.line)
    } else {
        task.file.to_string()
    };
    let req: ProposeRequest = serde_json::from_value(json!({
        "workspace_root": root.to_string_lossy(),
        "task": task.task,
        "acceptance_criteria": [task.criterion],
        "complexity": "low",
        "files": [file],
    }))
    .map_err(|e| e.to_string())?;
    let svc = Service::new();
    let call = Call::default();
    let r = match svc.propose(&req, &call) {
        Ok(r) => r,
        Err(e) => {
            let msg = e.to_string();
            return Ok(format!(
                "refused ({}): {}",
                e.kind(),
                msg.chars().take(110).collect::<String>()
            ));
        }
    };
    t.proposed += 1;
    t.model_ms += r.model_ms;
    t.tokens += r.usage.total_tokens;
    if r.validation_passed == Some(true) {
        t.validation_passed += 1;
    }
    let v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
    let cands = v
        .get("candidates")
        .map(|c| {
            format!(
                " [asked {} parsed {} distinct {} passed {}]",
                c["asked"], c["parsed"], c["distinct"], c["passed"]
            )
        })
        .unwrap_or_default();
    let applied = svc.apply_proposal(
        &ApplyRequest {
            proposal_id: r.proposal_id.clone(),
            digest: r.digest.clone(),
        },
        &call,
    );
    let tail = format!(
        "{:>6.1} s {:>6} tok{}{}",
        r.model_ms as f64 / 1000.0,
        r.usage.total_tokens,
        if r.repaired { " repaired" } else { "" },
        cands
    );
    Ok(match applied {
        Ok(_) => {
            t.solved += 1;
            format!("SOLVED   {tail}")
        }
        Err(e) => {
            let mut line = format!(
                "failed   {tail} ({})",
                e.to_string().chars().take(60).collect::<String>()
            );
            if std::env::var("SOLVE_VERBOSE").as_deref() == Ok("1") {
                for l in r.patch.lines().filter(|l| l.starts_with(['+', '-'])) {
                    line.push_str(&format!("\n        | {l}"));
                }
            }
            line
        }
    })
}

/// The localization table: top-1 and top-3 of each task's true place, per set of signals.
fn localize() {
    use local_llm_delegator::locate_rank::Signals;
    println!(
        "solve --localize: is the true place ranked first / among the first three? (no model)"
    );
    let rows = [
        ("shared rare words (before)", Signals::WORDS),
        (
            "+ code fragments",
            Signals {
                fragments: true,
                ..Signals::WORDS
            },
        ),
        (
            "+ prose below code",
            Signals {
                fragments: true,
                prose_below_code: true,
                ..Signals::WORDS
            },
        ),
        (
            "+ insertion points",
            Signals {
                fragments: true,
                prose_below_code: true,
                insertion: true,
                ..Signals::WORDS
            },
        ),
        (
            "+ the definition named",
            Signals {
                operator_words: false,
                check: false,
                implied: false,
                executed: false,
                mutants: false,
                ..Signals::ALL
            },
        ),
        (
            "+ words for operators",
            Signals {
                check: false,
                implied: false,
                executed: false,
                mutants: false,
                ..Signals::ALL
            },
        ),
        (
            "+ the failing check's output",
            Signals {
                implied: false,
                executed: false,
                mutants: false,
                ..Signals::ALL
            },
        ),
        (
            "+ implied missing lines",
            Signals {
                executed: false,
                mutants: false,
                ..Signals::ALL
            },
        ),
        (
            "+ the lines the failing test ran",
            Signals {
                mutants: false,
                ..Signals::ALL
            },
        ),
        ("+ mutants that pass the check", Signals::ALL),
    ];
    let verbose = std::env::var("SOLVE_VERBOSE").as_deref() == Ok("1");
    // `SOLVE_SET` picks one set (`bench` for the bench's own tasks); without it, every set.
    let only = std::env::var("SOLVE_SET").unwrap_or_default();
    for (key, set, tasks) in [
        ("bench", "the bench's tasks", tasks::TASKS),
        ("held-out", "held out", tasks::HELD_OUT),
        ("fresh", "held out, second set", fresh::FRESH),
        ("third", "held out, third set", third::THIRD),
        ("fourth", "held out, fourth set", fourth::FOURTH),
        ("fifth", "held out, fifth set", fifth::FIFTH),
        ("sixth", "held out, sixth set", sixth::SIXTH),
        ("seventh", "held out, seventh set", seventh::SEVENTH),
        ("eighth", "held out, eighth set", eighth::EIGHTH),
        ("ninth", "held out, ninth set", ninth::NINTH),
        ("tenth", "held out, tenth set", tenth::TENTH),
        ("eleventh", "held out, eleventh set", eleventh::ELEVENTH),
        ("twelfth", "held out, twelfth set", twelfth::TWELFTH),
        (
            "thirteenth",
            "held out, thirteenth set",
            thirteenth::THIRTEENTH,
        ),
        (
            "fourteenth",
            "held out, fourteenth set",
            fourteenth::FOURTEENTH,
        ),
        ("fifteenth", "held out, fifteenth set", fifteenth::FIFTEENTH),
        ("sixteenth", "held out, sixteenth set", sixteenth::SIXTEENTH),
        (
            "seventeenth",
            "held out, seventeenth set",
            seventeenth::SEVENTEENTH,
        ),
        (
            "eighteenth",
            "held out, eighteenth set",
            eighteenth::EIGHTEENTH,
        ),
        (
            "nineteenth",
            "held out, nineteenth set",
            nineteenth::NINETEENTH,
        ),
        ("twentieth", "held out, twentieth set", twentieth::TWENTIETH),
        (
            "twenty-first",
            "held out, twenty-first set",
            twenty_first::TWENTY_FIRST,
        ),
        (
            "twenty-second",
            "held out, twenty-second set",
            twenty_second::TWENTY_SECOND,
        ),
        (
            "twenty-third",
            "held out, twenty-third set",
            twenty_third::TWENTY_THIRD,
        ),
        (
            "twenty-fourth",
            "held out, twenty-fourth set",
            twenty_fourth::TWENTY_FOURTH,
        ),
        (
            "twenty-fifth",
            "held out, twenty-fifth set",
            twenty_fifth::TWENTY_FIFTH,
        ),
        (
            "twenty-sixth",
            "held out, twenty-sixth set",
            twenty_sixth::TWENTY_SIXTH,
        ),
        (
            "twenty-seventh",
            "held out, twenty-seventh set",
            twenty_seventh::TWENTY_SEVENTH,
        ),
        (
            "twenty-eighth",
            "held out, twenty-eighth set",
            twenty_eighth::TWENTY_EIGHTH,
        ),
        (
            "twenty-ninth",
            "held out, twenty-ninth set",
            twenty_ninth::TWENTY_NINTH,
        ),
        ("thirtieth", "held out, thirtieth set", thirtieth::THIRTIETH),
        (
            "thirty-first",
            "held out, thirty-first set",
            thirty_first::THIRTY_FIRST,
        ),
        (
            "thirty-second",
            "held out, thirty-second set",
            thirty_second::THIRTY_SECOND,
        ),
        (
            "thirty-third",
            "held out, thirty-third set",
            thirty_third::THIRTY_THIRD,
        ),
        (
            "thirty-fourth",
            "held out, thirty-fourth set",
            thirty_fourth::THIRTY_FOURTH,
        ),
        (
            "thirty-fifth",
            "held out, thirty-fifth set",
            thirty_fifth::THIRTY_FIFTH,
        ),
        (
            "thirty-sixth",
            "held out, thirty-sixth set",
            thirty_sixth::THIRTY_SIXTH,
        ),
        (
            "thirty-seventh",
            "held out, thirty-seventh set",
            thirty_seventh::THIRTY_SEVENTH,
        ),
        (
            "thirty-eighth",
            "held out, thirty-eighth set",
            thirty_eighth::THIRTY_EIGHTH,
        ),
        (
            "thirty-ninth",
            "held out, thirty-ninth set",
            thirty_ninth::THIRTY_NINTH,
        ),
        ("fortieth", "held out, fortieth set", fortieth::FORTIETH),
        (
            "forty-first",
            "held out, forty-first set",
            forty_first::FORTY_FIRST,
        ),
        (
            "forty-second",
            "held out, forty-second set",
            forty_second::FORTY_SECOND,
        ),
        (
            "forty-third",
            "held out, forty-third set",
            forty_third::FORTY_THIRD,
        ),
        (
            "forty-fourth",
            "held out, forty-fourth set",
            forty_fourth::FORTY_FOURTH,
        ),
        (
            "forty-fifth",
            "held out, forty-fifth set",
            forty_fifth::FORTY_FIFTH,
        ),
        (
            "forty-sixth",
            "held out, forty-sixth set",
            forty_sixth::FORTY_SIXTH,
        ),
        (
            "forty-seventh",
            "held out, forty-seventh set",
            forty_seventh::FORTY_SEVENTH,
        ),
        (
            "forty-eighth",
            "held out, forty-eighth set",
            forty_eighth::FORTY_EIGHTH,
        ),
        (
            "forty-ninth",
            "held out, forty-ninth set",
            forty_ninth::FORTY_NINTH,
        ),
        ("fiftieth", "held out, fiftieth set", fiftieth::FIFTIETH),
        (
            "fifty-first",
            "held out, fifty-first set",
            fifty_first::FIFTY_FIRST,
        ),
        (
            "fifty-second",
            "held out, fifty-second set",
            fifty_second::FIFTY_SECOND,
        ),
        (
            "fifty-third",
            "held out, fifty-third set",
            fifty_third::FIFTY_THIRD,
        ),
        (
            "fifty-fourth",
            "held out, fifty-fourth set",
            fifty_fourth::FIFTY_FOURTH,
        ),
        (
            "fifty-fifth",
            "held out, fifty-fifth set",
            fifty_fifth::FIFTY_FIFTH,
        ),
        (
            "fifty-sixth",
            "held out, fifty-sixth set",
            fifty_sixth::FIFTY_SIXTH,
        ),
        (
            "fifty-seventh",
            "held out, fifty-seventh set",
            fifty_seventh::FIFTY_SEVENTH,
        ),
        (
            "fifty-eighth",
            "held out, fifty-eighth set",
            fifty_eighth::FIFTY_EIGHTH,
        ),
        (
            "fifty-ninth",
            "held out, fifty-ninth set",
            fifty_ninth::FIFTY_NINTH,
        ),
        ("sixtieth", "held out, sixtieth set", sixtieth::SIXTIETH),
        (
            "sixty-first",
            "held out, sixty-first set",
            sixty_first::SIXTY_FIRST,
        ),
        (
            "sixty-second",
            "held out, sixty-second set",
            sixty_second::SIXTY_SECOND,
        ),
        (
            "sixty-third",
            "held out, sixty-third set",
            sixty_third::SIXTY_THIRD,
        ),
        (
            "sixty-fourth",
            "held out, sixty-fourth set",
            sixty_fourth::SIXTY_FOURTH,
        ),
        (
            "sixty-fifth",
            "held out, sixty-fifth set",
            sixty_fifth::SIXTY_FIFTH,
        ),
        (
            "sixty-sixth",
            "held out, sixty-sixth set",
            sixty_sixth::SIXTY_SIXTH,
        ),
        (
            "sixty-seventh",
            "held out, sixty-seventh set",
            sixty_seventh::SIXTY_SEVENTH,
        ),
        (
            "sixty-eighth",
            "held out, sixty-eighth set",
            sixty_eighth::SIXTY_EIGHTH,
        ),
        (
            "sixty-ninth",
            "held out, sixty-ninth set",
            sixty_ninth::SIXTY_NINTH,
        ),
        (
            "seventieth",
            "held out, seventieth set",
            seventieth::SEVENTIETH,
        ),
        (
            "seventy-first",
            "held out, seventy-first set",
            seventy_first::SEVENTY_FIRST,
        ),
        (
            "seventy-second",
            "held out, seventy-second set",
            seventy_second::SEVENTY_SECOND,
        ),
        (
            "seventy-third",
            "held out, seventy-third set",
            seventy_third::SEVENTY_THIRD,
        ),
        (
            "seventy-fourth",
            "held out, seventy-fourth set",
            seventy_fourth::SEVENTY_FOURTH,
        ),
        (
            "seventy-fifth",
            "held out, seventy-fifth set",
            seventy_fifth::SEVENTY_FIFTH,
        ),
        (
            "seventy-sixth",
            "held out, seventy-sixth set",
            seventy_sixth::SEVENTY_SIXTH,
        ),
        (
            "seventy-seventh",
            "held out, seventy-seventh set",
            seventy_seventh::SEVENTY_SEVENTH,
        ),
        (
            "seventy-eighth",
            "held out, seventy-eighth set",
            seventy_eighth::SEVENTY_EIGHTH,
        ),
        (
            "seventy-ninth",
            "held out, seventy-ninth set",
            seventy_ninth::SEVENTY_NINTH,
        ),
        ("eightieth", "held out, eightieth set", eightieth::EIGHTIETH),
        (
            "eighty-first",
            "held out, eighty-first set",
            eighty_first::EIGHTY_FIRST,
        ),
    ] {
        if !only.is_empty() && only != key {
            continue;
        }
        println!(" {set} ({} tasks)", tasks.len());
        let failing: Vec<_> = tasks.iter().map(failing_before).collect();
        for (label, signals) in rows {
            localize_row(label, signals, tasks, &failing, false, verbose);
        }
        localize_row(
            "every signal, in its def only",
            Signals::ALL,
            tasks,
            &failing,
            true,
            verbose,
        );
    }
}

/// The lines a primary hands for a place at `line` (1-based): the innermost `def` holding it (the line itself when
/// it is one) down to the end of its body; for a line outside any definition, the run of non-blank lines around it.
fn enclosing(source: &str, line: usize) -> local_llm_delegator::patch::focus::LineRange {
    let lines: Vec<&str> = source.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let is_def = |l: &str| {
        let t = l.trim_start();
        t.starts_with("def ") || t.starts_with("async def ")
    };
    let i = line - 1;
    let start = if is_def(lines[i]) {
        Some(i)
    } else {
        (0..i)
            .rev()
            .find(|&k| is_def(lines[k]) && indent(lines[k]) < indent(lines[i]))
    };
    let Some(start) = start else {
        let first = (0..=i)
            .rev()
            .take_while(|&k| !lines[k].trim().is_empty())
            .last()
            .unwrap_or(i);
        let last = (i..lines.len())
            .take_while(|&k| !lines[k].trim().is_empty())
            .last()
            .unwrap_or(i);
        return local_llm_delegator::patch::focus::LineRange {
            start: first + 1,
            end: last + 1,
        };
    };
    let depth = indent(lines[start]);
    let end = (start + 1..lines.len())
        .take_while(|&k| lines[k].trim().is_empty() || indent(lines[k]) > depth)
        .filter(|&k| !lines[k].trim().is_empty())
        .last()
        .unwrap_or(start);
    local_llm_delegator::patch::focus::LineRange {
        start: start + 1,
        end: end + 1,
    }
}

/// What the task's test says before its fix, as validation on propose reads it before asking for pinned
/// candidates: the test run with `python3` in a scratch folder holding the file and the test (removed after), with
/// the product's tracer staged as it is in a sandbox copy.
fn failing_before(task: &tasks::SolveTask) -> local_llm_delegator::locate_rank::Failing {
    use local_llm_delegator::locate_rank::{Failing, executed};
    let dir = tempfile::tempdir().expect("a scratch folder");
    let root = dir.path().canonicalize().expect("the scratch folder");
    let test_file = format!("test_{}.py", task.file.trim_end_matches(".py"));
    std::fs::write(root.join(task.file), task.source).expect("the file");
    std::fs::write(root.join(&test_file), task.test).expect("the test");
    let tracer = local_llm_delegator::sandbox::Tracer::stage(&root, None)
        .expect("the tracer")
        .expect("no entry of its name");
    let vars = executed::environment(&root, tracer.folder(), &[task.file], None);
    let out = std::process::Command::new("python3")
        .arg(&test_file)
        .current_dir(&root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(vars)
        .output()
        .expect("python3 runs");
    let traces = tracer.take();
    if out.status.success() {
        return Default::default();
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let roots = [dir.path(), root.as_path()].map(|p| p.to_string_lossy().into_owned());
    let failing = Failing {
        ran: executed::Executed::read(&traces, &[task.file]),
        ..Failing::read(&text, &[task.file], &roots)
    };
    // The mutation probe, as validation on propose runs it (there: confined, within its time budget).
    let spec = task_spec(task);
    let files = task_files(task);
    let runs = std::cell::Cell::new(0usize);
    let trace = std::env::var("SOLVE_TRACE").as_deref() == Ok(task.name);
    let mut check = |path: &str, text: &str| {
        runs.set(runs.get() + 1);
        let runs = runs.get();
        if trace {
            // `SOLVE_TRACE=<task>`: each probed change, as the first line it differs at.
            let before: Vec<&str> = task.source.lines().collect();
            let after: Vec<&str> = text.lines().collect();
            let at = (0..after.len()).find(|&k| before.get(k) != after.get(k));
            if let Some(k) = at {
                eprintln!("    {runs:>3} line {:>3}: {}", k + 1, after[k]);
            }
        }
        std::fs::write(root.join(path), text).ok()?;
        let out = std::process::Command::new("timeout")
            .args(["5", "python3", &test_file])
            .current_dir(&root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .ok()?;
        Some(out.status.success())
    };
    // Every mutant in one run of the test, as validation on propose runs them (`locate_rank::batch`).
    let mut many = |mutants: &[(String, String)], every: bool| {
        use local_llm_delegator::locate_rank::batch;
        let folder = root.join(batch::PROBE_FOLDER);
        if trace {
            // Each mutant handed to the one run, as the first line it differs at.
            let before: Vec<&str> = task.source.lines().collect();
            for (i, (_, text)) in mutants.iter().enumerate() {
                let after: Vec<&str> = text.lines().collect();
                if let Some(k) = (0..after.len()).find(|&k| before.get(k) != after.get(k)) {
                    eprintln!("    {:>3} line {:>3}: {}", i + 1, k + 1, after[k]);
                }
            }
        }
        std::fs::create_dir(&folder).ok()?;
        std::fs::write(folder.join("sitecustomize.py"), batch::PROBER).ok()?;
        let texts: Vec<(std::path::PathBuf, &str)> = mutants
            .iter()
            .map(|(p, t)| (root.join(p), t.as_str()))
            .collect();
        std::fs::write(
            folder.join(batch::MUTANTS_FILE),
            batch::encode(&texts, every),
        )
        .ok()?;
        let vars = batch::environment(&folder, None, 250, PROBE_MANY_MS, 2);
        let started = std::time::Instant::now();
        let _ = std::process::Command::new("python3")
            .arg(&test_file)
            .current_dir(&root)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(vars)
            .output();
        let wrote: Vec<String> = std::fs::read_dir(&folder)
            .ok()?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("probe-"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect();
        std::fs::remove_dir_all(&folder).ok();
        let verdicts = batch::read(&wrote, mutants.len());
        if let Some(o) = &verdicts {
            let v = &o.passed;
            runs.set(v.iter().filter(|x| x.is_some()).count());
            if trace {
                eprintln!(
                    "    {} of {} mutants run in {} ms",
                    runs.get(),
                    mutants.len(),
                    started.elapsed().as_millis()
                );
                let passed: Vec<usize> = (0..v.len())
                    .filter(|&i| v[i] == Some(true))
                    .map(|i| i + 1)
                    .collect();
                eprintln!("    passed: {passed:?}");
                for &i in &passed {
                    let patch = diffy::create_patch(task.source, &mutants[i - 1].1);
                    eprintln!("    mutant {i}:\n{patch}");
                }
            }
        }
        verdicts
    };
    let found = local_llm_delegator::locate_rank::batch::probe_many(
        &spec,
        &files,
        &Default::default(),
        &failing,
        PROBE_RUNS,
        &mut many,
        &mut check,
    );
    if std::env::var("SOLVE_VERBOSE").as_deref() == Ok("1") {
        println!(
            "    {:<15} probe: {} mutants, passed at {:?}",
            task.name,
            runs.get(),
            found.fixed
        );
        // Each place as the rows show it: `12`, or `after 12` for a line inserted after it.
        let shown = |places: Vec<(bool, usize)>| {
            let at: Vec<String> = places
                .iter()
                .map(|(insert, line)| format!("{}{line}", if *insert { "after " } else { "" }))
                .collect();
            at.join(", ")
        };
        if !found.further.is_empty() {
            println!(
                "    {:<15} further at: {}",
                task.name,
                shown(found.further.iter().map(|f| (f.insert, f.line)).collect())
            );
        }
        if std::env::var("SOLVE_PASSES").as_deref() == Ok("1") {
            println!(
                "    {:<15} every pass: {}",
                task.name,
                shown(found.passed.iter().map(|f| (f.insert, f.line)).collect())
            );
        }
    }
    // `SOLVE_NO_FURTHER=1`: the ranking without the places where a mutant got the check further, to measure that
    // signal on its own.
    let further = if std::env::var("SOLVE_NO_FURTHER").as_deref() == Ok("1") {
        Vec::new()
    } else {
        found.further
    };
    Failing {
        fixed: found.fixed,
        further,
        probed: found.any,
        ..failing
    }
}

/// Whether the ranked place `line` is the task's true place: its line or, for a fix that adds a line, the place
/// after any line of the blank run it is in (a new line after a docstring and after the blank line that follows it
/// makes the same file but for a blank line).
fn same_place(task: &tasks::SolveTask, line: usize) -> bool {
    if line == task.line {
        return true;
    }
    let (a, b) = (line.min(task.line), line.max(task.line));
    task.adds
        && a > 0
        && (a + 1..=b).all(|k| {
            task.source
                .lines()
                .nth(k - 1)
                .is_some_and(|l| l.trim().is_empty())
        })
}

/// How long the bench's one run of every mutant may go on forking, as validation on propose allows it.
const PROBE_MANY_MS: u64 = 3000;

/// The most mutants the bench's probe tries per task, as validation on propose does.
const PROBE_RUNS: usize = local_llm_delegator::service::PROBE_RUNS;

/// A task as the primary hands it to `propose_patch`.
fn task_spec(task: &tasks::SolveTask) -> local_llm_delegator::task::Task {
    serde_json::from_value(json!({
        "task": task.task,
        "acceptance_criteria": [task.criterion],
        "complexity": "low",
        "files": [task.file],
    }))
    .expect("a task")
}

/// A task's one selected file, as the model is shown it.
fn task_files(
    task: &tasks::SolveTask,
) -> std::collections::BTreeMap<String, Option<local_llm_delegator::patch::PreImage>> {
    [(
        task.file.to_string(),
        Some(local_llm_delegator::patch::PreImage {
            text: task.source.to_string(),
            mode: local_llm_delegator::patch::MODE_REGULAR,
        }),
    )]
    .into()
}

/// One row of the localization table: how often the true place is ranked first / among the first three.
fn localize_row(
    label: &str,
    signals: local_llm_delegator::locate_rank::Signals,
    tasks: &[tasks::SolveTask],
    failing: &[local_llm_delegator::locate_rank::Failing],
    in_def: bool,
    verbose: bool,
) {
    use local_llm_delegator::locate_rank as locate;
    {
        let (mut first, mut three) = (0, 0);
        let mut missed = Vec::new();
        for (task, failing) in tasks.iter().zip(failing) {
            let spec = task_spec(task);
            let files = task_files(task);
            // `in_def`: the file narrowed to the definition holding the true place, as a primary that found it
            // with its search tool hands it (`PATH:START-END`).
            let focus: local_llm_delegator::patch::focus::Focus = if in_def {
                [(
                    task.file.to_string(),
                    vec![enclosing(task.source, task.line)],
                )]
                .into()
            } else {
                Default::default()
            };
            let ranked = locate::rank(&spec, &files, &focus, failing, signals, 3);
            let at = ranked
                .iter()
                .position(|s| s.insert == task.adds && same_place(task, s.line));
            first += usize::from(at == Some(0));
            three += usize::from(at.is_some());
            if at != Some(0) {
                missed.push(format!(
                    "{}{}",
                    task.name,
                    if at.is_some() { "" } else { "*" }
                ));
            }
            if verbose {
                let shown: Vec<String> = ranked
                    .iter()
                    .map(|s| format!("{}{}", if s.insert { "after " } else { "" }, s.line))
                    .collect();
                println!(
                    "    {:<15} true {}{:<3} ranked {}",
                    task.name,
                    if task.adds { "after " } else { "" },
                    task.line,
                    shown.join(", ")
                );
            }
        }
        let n = tasks.len();
        println!(
            "  {label:<28} top-1 {first:>2}/{n}  top-3 {three:>2}/{n}  not first: {} (*: not in the first three)",
            missed.join(" ")
        );
    }
}

/// The model's own ranking of each task's lines: top-1 and top-3 of the true line.
fn localize_by_model() -> Result<(), String> {
    let url = std::env::var("SOLVE_URL").map_err(|_| "SOLVE_URL is not set".to_string())?;
    let model = served_model(&url);
    println!("solve --localize-model: the model's own ranking of the lines ({model} at {url})");
    let labels: Vec<char> = ('A'..='Z').collect();
    let (mut first, mut three, mut n) = (0, 0, 0);
    for task in tasks::TASKS {
        let lines: Vec<&str> = task.source.lines().collect();
        let shown: Vec<(char, usize, &str)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .zip(&labels)
            .map(|((i, l), c)| (*c, i + 1, *l))
            .collect();
        let listing: String = shown
            .iter()
            .map(|(c, _, l)| format!("{c}| {l}\n"))
            .collect();
        let prompt = format!(
            "File {}:\n{listing}\nTask: {}\nWhich line does the task change (or, to add a line, which line does the new one go after)? Answer with its letter only.\nAnswer:",
            task.file, task.task
        );
        let grammar = format!(
            "root ::= {}",
            shown
                .iter()
                .map(|(c, _, _)| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let body = json!({
            "model": "local",
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 1,
            "temperature": 0,
            "grammar": grammar,
            "logprobs": true,
            "top_logprobs": 20,
        });
        let reply: Value = ureq::post(&format!("{}/chat/completions", url.trim_end_matches('/')))
            .send_json(&body)
            .map_err(|e| e.to_string())?
            .body_mut()
            .read_json()
            .map_err(|e| e.to_string())?;
        let answer = reply["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("")
            .trim()
            .to_string();
        let mut ranked: Vec<(f64, char)> =
            reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| {
                    let tok = t["token"].as_str()?.trim();
                    let c = tok.chars().next().filter(|_| tok.chars().count() == 1)?;
                    shown
                        .iter()
                        .any(|s| s.0 == c)
                        .then(|| (t["logprob"].as_f64().unwrap_or(f64::MIN), c))
                })
                .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut order: Vec<char> = answer.chars().take(1).collect();
        for (_, c) in ranked {
            if !order.contains(&c) {
                order.push(c);
            }
        }
        let truth = shown.iter().find(|s| s.1 == task.line).map(|s| s.0);
        let at = truth.and_then(|t| order.iter().position(|c| *c == t));
        n += 1;
        first += usize::from(at == Some(0));
        three += usize::from(at.is_some_and(|a| a < 3));
        let lines_of: Vec<String> = order
            .iter()
            .take(3)
            .filter_map(|c| shown.iter().find(|s| s.0 == *c).map(|s| s.1.to_string()))
            .collect();
        println!(
            "    {:<15} true {:<3} model {}",
            task.name,
            task.line,
            lines_of.join(", ")
        );
    }
    println!("  the model's own ranking      top-1 {first:>2}/{n}  top-3 {three:>2}/{n}");
    Ok(())
}
