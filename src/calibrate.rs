//! `local-llm-worker calibrate`: which `[edit] format` and `[sampling] candidates` suit the workspace's model, by
//! measurement rather than by default.
//!
//! A small suite of routine one-line edits ships inside the binary ([`CASES`]: Python, JavaScript, Rust, Go, YAML,
//! Markdown), each with the exact bytes the file must hold afterwards. For every edit format and candidate count
//! asked for, each case is proposed through [`Service::propose`] in a fresh temporary workspace whose policy is the
//! workspace's own with that format and count, every path allowed and no validation commands (the expected
//! post-image decides correctness, not a check). A proposal is *valid* when propose returns one; *correct* when its
//! patch, applied to the case's file with the transaction's own parser and applier, gives exactly the expected
//! bytes. Nothing is written to the user's workspace, and these proposals are kept out of the ledger.
//!
//! The recommendation is the (format, K) with the most correct edits, ties broken by fewer model seconds per correct
//! edit. With `--write` it is recorded in the policy file through `toml_edit`, which keeps every other byte as it
//! was ([`record_choice`]).

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use toml_edit::{DocumentMut, Item, Table, value};

use crate::error::{Error, IoContext, Result};
use crate::patch::{self, plan::PatchLimits};
use crate::policy::{self, EditFormat, LoadedPolicy};
use crate::service::{Call, ProposeRequest, Service};
use crate::task::{Complexity, Task};
use crate::workspace;
use crate::workspace::fs::{self as fsat, Dir, Found};

/// One routine edit of the suite: a file, what to do to it, and the exact bytes it must hold afterwards.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The workspace-relative path of the file.
    pub path: &'static str,
    /// Its text before the edit.
    pub text: &'static str,
    /// The task sentence the model is given.
    pub task: &'static str,
    /// The acceptance criterion it is given.
    pub accept: &'static str,
    /// The file's exact text after a correct edit.
    pub expected: &'static str,
}

/// The built-in suite: routine one-line fixes over several languages, written for it.
pub const CASES: [Case; 6] = [
    Case {
        path: "shop/discount.py",
        text: "def discounted(price, percent):\n    \"\"\"Return price reduced by percent (0 to 100).\"\"\"\n    return price * (1 + percent / 100)\n",
        task: "Fix discounted so that it reduces the price: it must return price * (1 - percent / 100).",
        accept: "discounted returns price * (1 - percent / 100)",
        expected: "def discounted(price, percent):\n    \"\"\"Return price reduced by percent (0 to 100).\"\"\"\n    return price * (1 - percent / 100)\n",
    },
    Case {
        path: "lib/range.js",
        text: "function inRange(value, low, high) {\n  return value >= low && value < high;\n}\n\nmodule.exports = { inRange };\n",
        task: "Make inRange include its upper bound: compare value <= high instead of value < high.",
        accept: "inRange returns value >= low && value <= high",
        expected: "function inRange(value, low, high) {\n  return value >= low && value <= high;\n}\n\nmodule.exports = { inRange };\n",
    },
    Case {
        path: "src/retry.rs",
        text: "/// The most retries a request gets.\npub const MAX_RETRIES: u32 = 3;\n\npub fn retries_left(done: u32) -> u32 {\n    MAX_RETRIES.saturating_sub(done)\n}\n",
        task: "Set MAX_RETRIES to 5.",
        accept: "MAX_RETRIES is 5",
        expected: "/// The most retries a request gets.\npub const MAX_RETRIES: u32 = 5;\n\npub fn retries_left(done: u32) -> u32 {\n    MAX_RETRIES.saturating_sub(done)\n}\n",
    },
    Case {
        path: "greet/greet.go",
        text: "package greet\n\nimport \"fmt\"\n\n// Hello returns a greeting for name.\nfunc Hello(name string) string {\n\treturn fmt.Sprintf(\"Helo, %s!\", name)\n}\n",
        task: "Fix the typo in the greeting of Hello: it must say \"Hello, %s!\", not \"Helo, %s!\".",
        accept: "Hello formats \"Hello, %s!\"",
        expected: "package greet\n\nimport \"fmt\"\n\n// Hello returns a greeting for name.\nfunc Hello(name string) string {\n\treturn fmt.Sprintf(\"Hello, %s!\", name)\n}\n",
    },
    Case {
        path: "deploy/service.yaml",
        text: "service:\n  name: billing\n  port: 8080\n  log_level: debug\n  replicas: 2\n",
        task: "Change log_level from debug to info.",
        accept: "log_level is info",
        expected: "service:\n  name: billing\n  port: 8080\n  log_level: info\n  replicas: 2\n",
    },
    Case {
        path: "docs/running.md",
        text: "# Running\n\nStart the service with `make serve`; it listens on port 8000.\n\nStop it with Ctrl-C.\n",
        task: "The service listens on port 8080: change the port 8000 to 8080 in the sentence about make serve.",
        accept: "the text says it listens on port 8080",
        expected: "# Running\n\nStart the service with `make serve`; it listens on port 8080.\n\nStop it with Ctrl-C.\n",
    },
];

/// The edit formats measured, in this order.
pub const FORMATS: [EditFormat; 4] = [
    EditFormat::Json,
    EditFormat::Udiff,
    EditFormat::SearchReplace,
    EditFormat::WholeFile,
];

/// An edit format from its policy-file name (`json`, `udiff`, `search_replace`, `whole_file`); `auto` is not one
/// that can be measured.
pub fn format_from_name(name: &str) -> Option<EditFormat> {
    FORMATS.into_iter().find(|f| f.name() == name.trim())
}

/// What to measure.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only these formats (empty: all of [`FORMATS`]).
    pub formats: Vec<EditFormat>,
    /// One case per format instead of the whole suite.
    pub quick: bool,
}

/// The measurement of one (format, K).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The edit format (`[edit] format`).
    pub format: String,
    /// Candidates per proposal (`[sampling] candidates`).
    pub candidates: u64,
    /// Cases run.
    pub cases: usize,
    /// Proposals made (propose returned a patch).
    pub valid: usize,
    /// Patches that gave exactly the expected file.
    pub correct: usize,
    /// Model tokens of the proposals made (a refused one does not report its tokens).
    pub total_tokens: u64,
    /// Model milliseconds: those of the proposals made, plus the whole time of the refused ones.
    pub model_ms: u64,
    /// Why the proposals that were not made were refused (the refusal's kind and the start of its message), one per
    /// refused case, in case order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

impl Row {
    /// Model seconds per correct edit; `None` when none was correct.
    pub fn seconds_per_correct(&self) -> Option<f64> {
        (self.correct > 0).then(|| self.model_ms as f64 / 1000.0 / self.correct as f64)
    }
}

/// The (format, K) chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The edit format.
    pub format: String,
    /// Candidates per proposal.
    pub candidates: u64,
    /// Its correct edits.
    pub correct: usize,
    /// Out of this many cases.
    pub cases: usize,
    /// Its model seconds per correct edit.
    pub seconds_per_correct: f64,
}

/// The whole run, as `calibrate --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The workspace measured for.
    pub workspace: String,
    /// Its policy file.
    pub policy_file: Option<String>,
    /// The provider kind.
    pub provider: String,
    /// The low-complexity model the cases were proposed to.
    pub model: String,
    /// One row per (format, K), in the order run.
    pub rows: Vec<Row>,
    /// The choice; `None` when no edit was correct.
    pub recommendation: Option<Recommendation>,
    /// With `--write`: the policy file written, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

/// What a run will do, worked out before any model call.
pub struct Plan {
    root: PathBuf,
    loaded: LoadedPolicy,
    /// The policy file's text (a minimal llama.cpp one when there is no file).
    policy_text: String,
    model: String,
    /// (format, K) in the order run.
    pub runs: Vec<(EditFormat, u64)>,
    /// The cases each run goes through.
    pub cases: &'static [Case],
}

impl Plan {
    /// Every proposal the run makes.
    pub fn proposals(&self) -> usize {
        self.runs.len() * self.cases.len()
    }
}

/// The K values measured for a policy: 1 and the default (the policy's `[sampling] candidates` when above 1, else
/// [`policy::LOCAL_DEFAULT_CANDIDATES`]).
pub fn candidate_counts(policy: &policy::Policy) -> Vec<u64> {
    let default = match policy.sampling.candidates {
        Some(k) if k > 1 => k,
        _ => policy::LOCAL_DEFAULT_CANDIDATES,
    };
    let mut ks = vec![1];
    if default != 1 {
        ks.push(default);
    }
    ks
}

/// Load the workspace's policy (as propose does) and list the runs.
pub fn plan(root_arg: &str, opts: &Options) -> Result<Plan> {
    if std::env::var_os("LOCAL_LLM_CONFIG").is_some_and(|v| !v.is_empty()) {
        return Err(Error::InvalidArgument(
            "LOCAL_LLM_CONFIG is set: it would replace the policy of every temporary workspace calibrate measures \
             in; unset it (calibrate reads the workspace's own local-llm-worker.toml)"
                .into(),
        ));
    }
    let root = workspace::root_from_arg(root_arg)?;
    let loaded = policy::load(&root)?;
    let policy_text = match &loaded.path {
        Some(p) => unchanged_since_loaded(p, &loaded)?.text,
        None => "[provider]\nkind = \"llamacpp\"\n".to_string(),
    };
    let model = loaded.policy.route(false, None)?;
    let formats = if opts.formats.is_empty() {
        FORMATS.to_vec()
    } else {
        opts.formats.clone()
    };
    let ks = candidate_counts(&loaded.policy);
    let runs = formats
        .iter()
        .flat_map(|f| ks.iter().map(move |k| (*f, *k)))
        .collect();
    let cases: &'static [Case] = if opts.quick { &CASES[..1] } else { &CASES };
    Ok(Plan {
        root,
        loaded,
        policy_text,
        model,
        runs,
        cases,
    })
}

/// The policy of a case's temporary workspace: the workspace's own text with `[edit] format` and `[sampling]
/// candidates` set, `[sampling] calibrated` dropped, every path allowed (`[paths] allowed = ["**"]`) and no
/// `[validation]` or `[repair]` section.
pub fn case_policy(text: &str, format: EditFormat, candidates: u64) -> Result<String> {
    let mut doc = parse_doc(text)?;
    doc.remove("validation");
    doc.remove("repair");
    doc.remove("paths");
    let mut paths = Table::new();
    paths["allowed"] = value(toml_edit::Array::from_iter(["**"]));
    doc.insert("paths", Item::Table(paths));
    table_in(&mut doc, "edit")?.insert("format", value(format.name()));
    let sampling = table_in(&mut doc, "sampling")?;
    sampling.insert("candidates", value(candidates as i64));
    sampling.remove("calibrated");
    Ok(doc.to_string())
}

fn parse_doc(text: &str) -> Result<DocumentMut> {
    text.parse::<DocumentMut>()
        .map_err(|e| Error::Policy(format!("the policy file is not valid TOML: {e}")))
}

/// The table `name` of `doc`, made when missing: appended after everything the text held (its last comments
/// included, which toml_edit would otherwise print after it).
fn table_in<'d>(doc: &'d mut DocumentMut, name: &str) -> Result<&'d mut dyn toml_edit::TableLike> {
    if !doc.contains_key(name) {
        let trailing = doc.trailing().as_str().unwrap_or("").to_string();
        doc.set_trailing("");
        let mut t = Table::new();
        t.decor_mut().set_prefix(format!("{trailing}\n"));
        doc.insert(name, Item::Table(t));
    }
    doc.get_mut(name)
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| Error::Policy(format!("[{name}] in the policy file is not a table")))
}

/// What the run is at, for progress: the (format, K), the case, and how many proposals are done.
pub struct Step<'a> {
    /// The edit format.
    pub format: EditFormat,
    /// Candidates per proposal.
    pub candidates: u64,
    /// The case about to be proposed.
    pub case: &'a Case,
    /// Proposals done before this one.
    pub done: usize,
}

/// Run every case of `plan`; `step` is told before each proposal. A cancellation of `call` stops the run between
/// cases (and each proposal honours it): the rows measured so far are returned with `Error::Cancelled`.
pub fn run(
    plan: &Plan,
    call: &Call,
    step: &dyn Fn(&Step<'_>),
) -> std::result::Result<Vec<Row>, (Vec<Row>, Error)> {
    let service = Service::new();
    let call = Call {
        unrecorded: true,
        ..call.clone()
    };
    let mut rows = Vec::new();
    let mut done = 0;
    for &(format, candidates) in &plan.runs {
        let mut row = Row {
            format: format.name().to_string(),
            candidates,
            cases: plan.cases.len(),
            valid: 0,
            correct: 0,
            total_tokens: 0,
            model_ms: 0,
            refused: Vec::new(),
        };
        for (ran, case) in plan.cases.iter().enumerate() {
            if call.watch.is_cancelled() {
                // A row cut short counts only the cases it ran.
                row.cases = ran;
                rows.push(row);
                return Err((rows, Error::Cancelled));
            }
            step(&Step {
                format,
                candidates,
                case,
                done,
            });
            match run_case(&service, plan, case, format, candidates, &call, &mut row) {
                Ok(()) => {}
                Err(e) => {
                    row.cases = ran;
                    rows.push(row);
                    return Err((rows, e));
                }
            }
            done += 1;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Propose one case in a fresh temporary workspace and count what came of it in `row`. Errors only for a
/// cancellation or a workspace that cannot be made; a refused proposal is a measurement.
fn run_case(
    service: &Service,
    plan: &Plan,
    case: &Case,
    format: EditFormat,
    candidates: u64,
    call: &Call,
    row: &mut Row,
) -> Result<()> {
    let dir = tempfile::tempdir().context("cannot make a temporary workspace")?;
    let file = dir.path().join(case.path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).at("cannot make", parent)?;
    }
    std::fs::write(&file, case.text).at("cannot write", &file)?;
    let policy_path = dir.path().join(policy::POLICY_FILE);
    let text = case_policy(&plan.policy_text, format, candidates)?;
    std::fs::write(&policy_path, &text).at("cannot write", &policy_path)?;
    // Derived from the user's trusted policy (commands removed): trusted for this process only, never recorded.
    crate::trust::allow_in_process(&policy_path, &crate::digest::sha256_hex(text.as_bytes()));
    let req = ProposeRequest {
        workspace_root: dir.path().to_string_lossy().into_owned(),
        task: Task {
            task: case.task.to_string(),
            acceptance_criteria: vec![case.accept.to_string()],
            complexity: Complexity::Low,
            files: vec![case.path.to_string()],
            ..Task::default()
        },
        ..ProposeRequest::default()
    };
    let started = Instant::now();
    match service.propose(&req, call) {
        Ok(r) => {
            row.valid += 1;
            row.total_tokens += r.usage.total_tokens;
            row.model_ms += r.model_ms;
            if post_image(&r.patch, case, &plan.loaded.policy).as_deref()
                == Some(case.expected.as_bytes())
            {
                row.correct += 1;
            }
            Ok(())
        }
        Err(Error::Cancelled) => Err(Error::Cancelled),
        Err(e) => {
            row.model_ms += started.elapsed().as_millis() as u64;
            let r = e.refusal();
            row.refused
                .push(crate::error::excerpt(&r.message.replace('\n', " "), 160));
            Ok(())
        }
    }
}

/// The case's file after `patch`, by the one plan the transaction also uses ([`patch::plan`]); `None` when the
/// patch does not apply or touches another file.
fn post_image(patch_text: &str, case: &Case, policy: &policy::Policy) -> Option<Vec<u8>> {
    let limits = PatchLimits {
        max_patch_bytes: policy.limits.max_patch_bytes,
        max_files: policy.limits.max_files_per_patch,
        max_hunks: policy.limits.max_hunks_per_patch,
        allow_delete: false,
        allow_move: false,
    };
    let files = patch::plan::parse_within(patch_text.as_bytes(), limits).ok()?;
    match files.as_slice() {
        [f] if f.path == case.path => patch::plan::post_image(f, Some(case.text.as_bytes())).ok(),
        _ => None,
    }
}

/// The (format, K) with the most correct edits, ties broken by fewer seconds per correct edit (then the first
/// run); `None` when no edit was correct.
pub fn recommend(rows: &[Row]) -> Option<Recommendation> {
    let mut best: Option<(&Row, f64)> = None;
    for r in rows {
        let Some(s) = r.seconds_per_correct() else {
            continue;
        };
        let better = match best {
            None => true,
            Some((b, bs)) => r.correct > b.correct || (r.correct == b.correct && s < bs),
        };
        if better {
            best = Some((r, s));
        }
    }
    best.map(|(r, s)| Recommendation {
        format: r.format.clone(),
        candidates: r.candidates,
        correct: r.correct,
        cases: r.cases,
        seconds_per_correct: s,
    })
}

/// The whole report of a finished (or cancelled) run.
pub fn report(plan: &Plan, rows: Vec<Row>) -> Report {
    Report {
        workspace: plan.root.display().to_string(),
        policy_file: plan.loaded.path.as_ref().map(|p| p.display().to_string()),
        provider: plan.loaded.policy.provider.kind.name().to_string(),
        model: plan.model.clone(),
        recommendation: recommend(&rows),
        rows,
        written: None,
    }
}

/// The table and the recommendation, as the CLI prints them.
pub fn render(r: &Report) -> String {
    let mut out = format!(
        "calibrated {} / {} on {} case(s) per row\n\n",
        r.provider,
        r.model,
        r.rows.first().map_or(0, |row| row.cases)
    );
    out.push_str(&format!(
        "{:<15} {:>3} {:>6} {:>8} {:>8} {:>16}\n",
        "format", "K", "valid", "correct", "tokens", "s/correct edit"
    ));
    for row in &r.rows {
        out.push_str(&format!(
            "{:<15} {:>3} {:>6} {:>8} {:>8} {:>16}\n",
            row.format,
            row.candidates,
            format!("{}/{}", row.valid, row.cases),
            format!("{}/{}", row.correct, row.cases),
            row.total_tokens,
            row.seconds_per_correct()
                .map_or("-".to_string(), |s| format!("{s:.1}"))
        ));
        // Why a proposal was not made, so that `valid 0/1, tokens 0` is not a riddle (the first reason, and how many
        // more).
        if let Some(first) = row.refused.first() {
            let more = match row.refused.len() {
                1 => String::new(),
                n => format!(" (and {} more refused)", n - 1),
            };
            out.push_str(&format!("  refused: {first}{more}\n"));
        }
    }
    out.push('\n');
    match &r.recommendation {
        Some(rec) => out.push_str(&format!(
            "recommended: [edit] format = \"{}\", [sampling] candidates = {} ({}/{} correct, {:.1} s per correct \
             edit)\n",
            rec.format, rec.candidates, rec.correct, rec.cases, rec.seconds_per_correct
        )),
        None => out.push_str("recommended: nothing (no edit was correct); the policy is best left as it is\n"),
    }
    if let Some(w) = &r.written {
        out.push_str(&format!("wrote the choice to {w}\n"));
    }
    out
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date(secs / 86_400)
}

/// `YYYY-MM-DD` of the day `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The first words of the comment `--write` puts above the keys it sets (an older one is replaced).
const COMMENT_MARK: &str = "# calibrate ";

/// The policy text with the recommendation recorded: `[edit] format`, `[sampling] candidates` and `[sampling]
/// calibrated` set, with a dated comment line of the measured rates above the first two. Every other byte stays as
/// it was (a missing section is appended); the result must still be a valid policy.
pub fn record_choice(
    text: &str,
    rec: &Recommendation,
    rows: &[Row],
    model: &str,
    date: &str,
) -> Result<String> {
    let mut doc = parse_doc(text)?;
    let rates: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} K={} {}/{}{}",
                r.format,
                r.candidates,
                r.correct,
                r.cases,
                r.seconds_per_correct()
                    .map_or(String::new(), |s| format!(" {s:.1}s"))
            )
        })
        .collect();
    let comment = format!(
        "{COMMENT_MARK}{date} ({model}): correct edits and model seconds per correct edit: {}\n",
        rates.join(", ")
    );
    let calibrated = format!(
        "{date}: {model}: {} K={} {}/{} correct, {:.1} s per correct edit",
        rec.format, rec.candidates, rec.correct, rec.cases, rec.seconds_per_correct
    );
    set_key(
        &mut doc,
        "edit",
        "format",
        value(rec.format.as_str()),
        Some(&comment),
    )?;
    set_key(
        &mut doc,
        "sampling",
        "candidates",
        value(rec.candidates as i64),
        Some(&comment),
    )?;
    set_key(&mut doc, "sampling", "calibrated", value(calibrated), None)?;
    let out = doc.to_string();
    policy::parse(&out, Path::new(policy::POLICY_FILE))?;
    Ok(out)
}

/// Set `[table] key` to `new`, keeping the old value's spacing and trailing comment; `comment` replaces an earlier
/// calibrate comment above the key, or is added above it. When the table is an inline table (`edit = { format =
/// "udiff" }`), the comment goes above the table's own line: TOML 1.0 allows no comment or line break inside the
/// braces.
fn set_key(
    doc: &mut DocumentMut,
    table: &str,
    key: &str,
    mut new: Item,
    comment: Option<&str>,
) -> Result<()> {
    let inline = doc.get(table).is_some_and(Item::is_inline_table);
    let t = table_in(doc, table)?;
    match t.get_mut(key) {
        // Assigned in place, the key keeps its own spacing and the comments above it.
        Some(old) => {
            if let (Some(was), Some(v)) = (old.as_value(), new.as_value_mut()) {
                *v.decor_mut() = was.decor().clone();
            }
            *old = new;
        }
        None => {
            if inline {
                // The space before `}` stays before it: it moves from the last value to the one added.
                let last = t.iter().last().map(|(k, _)| k.to_string());
                if let Some(v) = last
                    .and_then(|k| t.get_mut(&k))
                    .and_then(Item::as_value_mut)
                {
                    let suffix = v.decor().suffix().cloned();
                    v.decor_mut().set_suffix("");
                    if let (Some(s), Some(nv)) = (suffix, new.as_value_mut()) {
                        nv.decor_mut().set_suffix(s);
                    }
                }
            }
            t.insert(key, new);
        }
    }
    let line_key = match inline {
        true => doc.as_table_mut().key_mut(table),
        false => table_in(doc, table)?.key_mut(key),
    };
    if let (Some(comment), Some(mut k)) = (comment, line_key) {
        let decor = k.leaf_decor_mut();
        let prefix = decor
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_string();
        let kept: String = prefix
            .split_inclusive('\n')
            .filter(|line| !line.trim_start().starts_with(COMMENT_MARK.trim_end()))
            .collect();
        decor.set_prefix(format!("{kept}{comment}"));
    }
    Ok(())
}

/// Record the recommendation in the policy file at `path`, refused unless it still holds the bytes `loaded` was read
/// (and trusted) from; read once and replaced through a handle on its folder ([`PolicyFile`]).
pub fn write_choice(
    path: &Path,
    loaded: &LoadedPolicy,
    rec: &Recommendation,
    rows: &[Row],
    model: &str,
) -> Result<()> {
    let file = unchanged_since_loaded(path, loaded)?;
    let out = record_choice(&file.text, rec, rows, model, &today())?;
    file.replace(&out, path)
}

/// Write the recommendation of `r` to the plan's policy file, and say so in the report.
pub fn write_report(plan: &Plan, r: &mut Report) -> Result<()> {
    let Some(rec) = &r.recommendation else {
        return Ok(());
    };
    let Some(path) = &plan.loaded.path else {
        return Err(Error::Policy(format!(
            "{} has no {}; run `local-llm-worker init-project` there first, then calibrate --write",
            plan.root.display(),
            policy::POLICY_FILE
        )));
    };
    // Only over the bytes that were trusted, and the change it writes is trusted in turn.
    write_choice(path, &plan.loaded, rec, &r.rows, &plan.model)?;
    crate::trust::trust_file(path)?;
    r.written = Some(path.display().to_string());
    Ok(())
}

/// The policy file at `path` ([`PolicyFile::read`]), refused unless it still holds the bytes `loaded` was read (and
/// trusted) from.
fn unchanged_since_loaded(path: &Path, loaded: &policy::LoadedPolicy) -> Result<PolicyFile> {
    let file = PolicyFile::read(path)?;
    if loaded.digest.as_deref() != Some(crate::digest::sha256_hex(file.text.as_bytes()).as_str()) {
        return Err(Error::Trust(format!(
            "{} changed while calibrate was running; read it, then run calibrate again",
            path.display()
        )));
    }
    Ok(file)
}

/// The policy file as `--write` reads and rewrites it: through a handle on its folder (`txn::fsat`, the handles the
/// transaction writes through), its name opened without following a symlink and without blocking.
struct PolicyFile {
    /// Its folder.
    dir: Dir,
    /// Its name in that folder.
    name: String,
    /// What it holds.
    text: String,
    /// Its permission bits, kept by the rewrite.
    mode: u32,
}

impl PolicyFile {
    /// Read the regular file at `path`'s name in `path`'s folder: a symlink, a FIFO or anything but a regular file
    /// there is refused, by what it is.
    fn read(path: &Path) -> Result<PolicyFile> {
        use std::os::unix::fs::PermissionsExt;
        let (Some(folder), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Err(Error::io_message(format!(
                "cannot read {}: it names no file in a folder",
                path.display()
            )));
        };
        let dir = Dir::root(folder).at("cannot read", path)?;
        let (file, bytes) = match dir.look(name, false).at("cannot read", path)? {
            Found::File { file, bytes, .. } => (file, bytes),
            Found::Absent => {
                return Err(std::io::Error::from_raw_os_error(libc::ENOENT))
                    .at("cannot read", path);
            }
            Found::Other(kind) => {
                return Err(fsat::not_regular(name, kind)).at("cannot read", path);
            }
        };
        let mode = file
            .metadata()
            .at("cannot read", path)?
            .permissions()
            .mode()
            & 0o7777;
        let text = String::from_utf8(bytes)
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text")
            })
            .at("cannot read", path)?;
        Ok(PolicyFile {
            dir,
            name: name.to_string(),
            text,
            mode,
        })
    }

    /// Make the file hold `text`: written to a new temporary file beside it with its permission bits, flushed,
    /// renamed over it and the folder flushed (a reader sees the old text or the new, never a part); the temporary
    /// file is removed again when a step fails.
    fn replace(&self, text: &str, path: &Path) -> Result<()> {
        let (tmp, file) = self
            .dir
            .write_temp(text.as_bytes(), self.mode)
            .at("cannot write", path)?;
        let done = file
            .sync_all()
            .and_then(|()| self.dir.rename(&tmp, &self.name))
            .and_then(|()| self.dir.sync());
        if done.is_err() {
            let _ = self.dir.unlink(&tmp);
        }
        done.at("cannot write", path)
    }
}

#[cfg(test)]
mod tests;
