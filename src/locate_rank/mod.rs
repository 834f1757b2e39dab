//! Where a task is about: the lines of the selected files, and the places after them for a task that adds a line,
//! ranked best first. Pure.
//!
//! Each signal is measured on its own (the solve bench's `--localize` mode, BENCHMARKS.md section 15) and can be
//! switched off ([`Signals`]) so that it can be:
//! - shared rare words: the words and symbols a line shares with the task, each weighted by how rare it is among
//!   the file's lines, a run of two counted double (the ranking before the others were added);
//! - code fragments: how small an edit (in tokens) turns part of a line into a code fragment the task writes out
//!   (`width * height`, `items[-1]`, `"Hello, Ann!"`): a task quotes the line it is about, or the line it wants;
//!   an example call of the function the task reports (`is_common("Password123")`) is not matched to its callers;
//! - prose below code: a comment or docstring that merely repeats the task's words ranks below the code;
//! - insertion points: a task that asks to add a line ranks the places after lines, best where a line defines what
//!   the new code uses (`name = ...` before `return name`) or where the task says "after ...";
//! - the definition the task names: the body of a function or class whose name the task writes (`total`,
//!   `strip_trailing`, or its parts in order: "long enough" for `long_enough`) ranks above lines elsewhere, its
//!   `def` line by half (a default or a parameter may be the fix, and more so when the task speaks of defaults);
//!   the definition the task reports first weighs most, others it reports less, and one it names only to say it
//!   works nothing ([`roles`]);
//! - words for operators: a task that says what is wrong in words ("subtracting", "exactly 70", "the wrong way
//!   round") is read for the operators they stand for (`-`, `<` and `>`, a call's commas), and English function
//!   words ("a", "the", "must") are not shared words (the article "a" matched a line's `"A"`).
//!
//! For the repair round [`named_lines`] reads the places a failing check's output names (Python tracebacks,
//! `file:line:col` of compilers, pytest's `file:line:`), restricted to the selected files.

pub mod batch;
pub mod executed;
mod failing;
mod implied;
mod insertions;
pub mod mutants;
mod roles;
mod twins;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use failing::{Failing, Missing, failing_place, line_before_edit, named_lines};
use roles::Roles;

use crate::patch::PreImage;
use crate::patch::focus::{self, Focus};
use crate::task::Task;

/// Which signals [`rank`] combines. [`Signals::ALL`] is what proposals use; the others are for measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signals {
    /// Score lines by the code fragments the task writes out.
    pub fragments: bool,
    /// Rank comments and docstrings below code.
    pub prose_below_code: bool,
    /// Rank the places after lines for a task that adds a line.
    pub insertion: bool,
    /// Rank the body of a definition the task names above other lines.
    pub scope: bool,
    /// Read words for operators, and leave English function words out of the shared words.
    pub operator_words: bool,
    /// Rank the places a failing check's output names, and the bodies of the definitions it calls, above others.
    pub check: bool,
    /// Rank the places of lines a task implies are missing (an import, a last `return`, a guard clause).
    pub implied: bool,
    /// Rank the lines the failing check ran in the call it failed on above others, and a function's lines it never
    /// reached below them ([`executed`]).
    pub executed: bool,
    /// Rank first the lines where a small mutation made the failing check pass ([`mutants`]).
    pub mutants: bool,
}

impl Signals {
    /// Shared rare words only: the ranking before the other signals.
    pub const WORDS: Signals = Signals {
        fragments: false,
        prose_below_code: false,
        insertion: false,
        scope: false,
        operator_words: false,
        check: false,
        implied: false,
        executed: false,
        mutants: false,
    };
    /// Every signal.
    pub const ALL: Signals = Signals {
        fragments: true,
        prose_below_code: true,
        insertion: true,
        scope: true,
        operator_words: true,
        check: true,
        implied: true,
        executed: true,
        mutants: true,
    };
}

/// One ranked place: a line of a selected file to change, or (`insert`) the place after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spot {
    /// The selected file.
    pub path: String,
    /// 1-based line number in the file.
    pub line: usize,
    /// The line's text (without its line ending).
    pub text: String,
    /// The edit goes after this line instead of replacing it.
    pub insert: bool,
}

/// How much a line's best fragment match weighs against its (normalised) shared words.
const FRAGMENT_WEIGHT: f64 = 2.0;
/// A comment's or docstring's score is multiplied by this.
const PROSE_FACTOR: f64 = 0.25;
/// What a line that defines every name the new code uses adds to an insertion point after it.
const DEFINES_WEIGHT: f64 = 1.5;
/// What the words the task writes after "after" add to the insertion point after a line holding them.
const AFTER_WEIGHT: f64 = 1.0;
/// What being in the body of a definition the task names adds to a line (its `def` line: half).
const SCOPE_WEIGHT: f64 = 1.0;
/// What being the first place a failing check's output names adds to a line (the other places it names: half).
const CHECK_WEIGHT: f64 = 2.0;
/// What running in the call the failing assertion checked adds to a line ([`Signals::executed`]).
const FAILING_CALL_WEIGHT: f64 = 1.0;
/// What never running scales a function's statement by ([`Signals::executed`]).
const NOT_RUN_FACTOR: f64 = 0.2;
/// What a mutation that made the failing check pass adds to its line ([`Signals::mutants`]): more than every other
/// signal together, since such a line almost always holds the slip.
const MUTANT_WEIGHT: f64 = 4.0;
/// What the probe's first pass adds to its place: above the places next to it where a mutant passed too
/// ([`crate::locate_rank::batch`]'s twins), each of which adds [`MUTANT_WEIGHT`].
const FIRST_PASS_WEIGHT: f64 = 2.0 * MUTANT_WEIGHT;
/// What a mutation that got the failing check further on without passing adds to its line when none passed
/// ([`Failing::further`]): its first failing assertion passed, so the line holds at least part of the slip.
const FURTHER_WEIGHT: f64 = MUTANT_WEIGHT / 2.0;

/// The places the task most likely means, best first, at most `max`, distinct by file, text and kind (a place is
/// pinned by its text). Each existing selected file's non-blank lines (inside its ranges, when narrowed) are
/// scored; places that score nothing are left out. `failing`: what the project's checks said before any edit
/// (empty when they passed or did not run).
pub fn rank(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    failing: &Failing,
    signals: Signals,
    max: usize,
) -> Vec<Spot> {
    let (task, asked_terms) = asked(spec, files, signals);
    let task_words = words_of(&spec.task);
    let roles = Roles::of(&spec.task);
    let (fragments, new_names) = fragments_and_names(&task, signals);
    let adds = signals.insertion && asks_to_add(&spec.task);
    let after_terms = Terms::of(&after_phrase(&spec.task));
    let mut scored: Vec<(f64, Spot)> = Vec::new();
    for (path, pre) in files {
        let Some(pre) = pre else { continue };
        let lines = shown_lines(&pre.text, focus.get(path).map(Vec::as_slice));
        let words = word_scores(&lines, &asked_terms);
        let top = words.iter().copied().fold(0.0, f64::max);
        let after = word_scores(&lines, &after_terms);
        let after_top = after.iter().copied().fold(0.0, f64::max);
        let prose = prose_lines(&pre.text);
        let (scopes, checked) =
            named_evidence(path, &pre.text, &task_words, &roles, failing, signals);
        let flow = if adds {
            data_flow(&lines, &new_names)
        } else {
            Vec::new()
        };
        let ran = Evidence::of(failing, path, &pre.text, signals);
        let traced = |s: f64, line: usize, insert: bool| ran.moved(s, line, insert);
        let reported = first_reported(&pre.text, &roles, signals);
        for (k, (i, line)) in lines.iter().enumerate() {
            let tokens = tokens(line);
            let frag = fragments
                .iter()
                .filter(|f| !calls_the_function_defined(f, &tokens) && !calls(f, reported))
                .map(|f| fragment_match(f, &tokens))
                .fold(0.0, f64::max);
            let mut s = if signals.fragments {
                words[k] / top.max(f64::MIN_POSITIVE) + FRAGMENT_WEIGHT * frag
            } else {
                words[k]
            };
            s += SCOPE_WEIGHT * scopes.get(*i).copied().unwrap_or(0.0);
            let crashed = CHECK_WEIGHT * checked.get(*i).copied().unwrap_or(0.0);
            s += crashed;
            let is_prose = prose.get(*i).copied().unwrap_or(false);
            if signals.prose_below_code && is_prose {
                s *= PROSE_FACTOR;
            }
            let spot = |insert, at: usize| Spot {
                path: path.clone(),
                line: at + 1,
                text: line.to_string(),
                insert,
            };
            let at = ran.stands_for(*i, line, false);
            let changed = traced(s, at, false);
            if changed > 0.0 {
                scored.push((changed, spot(false, at)));
            }
            let after_at = ran.stands_for(*i, line, true);
            if (adds && !is_prose) || ran.inserted_after(after_at) {
                let flow = flow.get(k).copied().unwrap_or(0.0);
                let named = after[k] / after_top.max(f64::MIN_POSITIVE);
                // The line's own score too (a new line like it goes beside it), so that the place after a line
                // ranks ahead of its replacement when the task asks to add one.
                // A line a failing check names needs what goes BEFORE it (a guard, an import): the place after a
                // line counts the next line's naming instead of its own.
                let next = lines.get(k + 1).map_or(0.0, |(n, _)| {
                    CHECK_WEIGHT * checked.get(*n).copied().unwrap_or(0.0)
                });
                // Low after a line that leaves its block, unless a line inserted there passed (`seen.add(x)`).
                let leaves = ends_its_block(&tokens) && !ran.inserted_after(after_at);
                let s = place_after(s - crashed, next, flow, named, leaves);
                let s = traced(s, after_at, true);
                if s > 0.0 {
                    // Among equals the later place: a new line like others goes after the last of them.
                    scored.push((s + 0.5 + 1e-6 * after_at as f64, spot(true, after_at)));
                }
            }
        }
        if signals.implied {
            let implied =
                implied_spots(spec, path, &pre.text, &lines, &task_words, failing, signals);
            scored.extend(
                implied
                    .into_iter()
                    .map(|(s, spot)| (traced(s, spot.line - 1, spot.insert), spot)),
            );
        }
    }
    let mut best = best_distinct(scored, max);
    if signals.mutants && failing.probed {
        second_after_probe(&mut best, failing, files, max);
    }
    best
}

/// After the probe ran: the place after the first ranked line second ([`after_the_first`]) when nothing passed
/// (any line), or when what passed was a change of a block's header (the line its block may lack).
fn second_after_probe(
    best: &mut Vec<Spot>,
    failing: &Failing,
    files: &BTreeMap<String, Option<PreImage>>,
    max: usize,
) {
    let header = best
        .first()
        .is_some_and(|s| !s.insert && s.text.trim_end().ends_with(':'));
    if failing.fixed.is_empty() || header {
        after_the_first(best, files, max);
    }
}

/// When the probe ran and no small change of the best ranked lines passed, the fix may well be a line the code
/// lacks: the place after the first ranked line (when that is a line to change, of code that does not end its
/// block's flow) ranks second, before the other lines, within `max`. So too when what passed was a change of a
/// block's header (`if steps < goal:` turned round passes a test by chance where its block lacks `current = 0`).
fn after_the_first(best: &mut Vec<Spot>, files: &BTreeMap<String, Option<PreImage>>, max: usize) {
    let Some(first) = best.first().filter(|s| !s.insert) else {
        return;
    };
    let code = first.text.trim();
    let flow = ["return", "raise", "continue", "break", "pass"];
    let ends_flow = flow
        .iter()
        .any(|w| code == *w || code.starts_with(&format!("{w} ")));
    let python = first.path.ends_with(".py") && files.contains_key(&first.path);
    if code.is_empty() || code.starts_with('#') || ends_flow || !python || max < 2 {
        return;
    }
    let after = Spot {
        insert: true,
        ..first.clone()
    };
    if best.contains(&after) {
        return;
    }
    best.insert(1, after);
    best.truncate(max);
}

/// The best `max` scored places, best first, distinct by file, text and kind; among equals the earlier line (stable
/// over the files' order).
fn best_distinct(mut scored: Vec<(f64, Spot)>, max: usize) -> Vec<Spot> {
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut seen = HashSet::new();
    scored
        .into_iter()
        .map(|(_, s)| s)
        .filter(|s| seen.insert((s.path.clone(), s.text.clone(), s.insert)))
        .take(max)
        .collect()
}

/// What the checks before any edit say of one file's lines: which ran ([`Signals::executed`]), and where a mutant
/// or an inserted line made the failing check pass ([`Signals::mutants`]).
struct Evidence<'t> {
    reach: Option<Vec<executed::Reach>>,
    /// The places (0-based lines, with their texts) where a change passed: a mutant of the line, or (`true`) a
    /// line inserted after it; with what passing there adds (the probe's first pass ranks above its twins).
    fixed: Vec<(usize, &'t str, bool, f64)>,
}

impl<'t> Evidence<'t> {
    fn of(failing: &Failing, path: &str, text: &'t str, signals: Signals) -> Evidence<'t> {
        let reach = failing.ran.lines(path, text).filter(|_| signals.executed);
        let line = |l: &'t str| l.strip_suffix('\r').unwrap_or(l);
        let mut fixed = Vec::new();
        if signals.mutants {
            let lines: Vec<&str> = text.lines().collect();
            for (k, f) in failing.fixed.iter().enumerate() {
                let l = f.line.checked_sub(1).and_then(|k| lines.get(k));
                if let Some(l) = l.filter(|_| f.path == path) {
                    // The first place that passed; then the places next to it where a mutant passed as well.
                    let weight = if k == 0 {
                        FIRST_PASS_WEIGHT
                    } else {
                        MUTANT_WEIGHT
                    };
                    fixed.push((f.line - 1, line(l), f.insert, weight));
                }
            }
            // Nothing passed: where a mutant got the check further on.
            let further = failing.further.iter().filter(|_| failing.fixed.is_empty());
            for f in further.filter(|f| f.path == path) {
                if let Some(l) = f.line.checked_sub(1).and_then(|k| lines.get(k)) {
                    fixed.push((f.line - 1, line(l), f.insert, FURTHER_WEIGHT));
                }
            }
        }
        Evidence { reach, fixed }
    }

    /// The score `s` of the line `line` (0-based) or, with `insert`, the place after it, moved by this evidence.
    fn moved(&self, s: f64, line: usize, insert: bool) -> f64 {
        let passed = self
            .fixed
            .iter()
            .filter(|(n, _, i, _)| *n == line && *i == insert)
            .map(|(_, _, _, w)| *w)
            .fold(0.0, f64::max);
        by_trace(s, self.reach.as_deref(), line, insert) + passed
    }

    /// Whether a line inserted after the line `line` (0-based) made the failing check pass.
    fn inserted_after(&self, line: usize) -> bool {
        self.fixed.iter().any(|(n, _, i, _)| *n == line && *i)
    }

    /// The line (0-based) the shown line `i` with the text `line` stands for (as the place to change, or with
    /// `insert` the place after it): the ranking shows a text once, at its first line, and it stands for a later
    /// line of it where a change passed.
    fn stands_for(&self, i: usize, line: &str, insert: bool) -> usize {
        self.fixed
            .iter()
            .find(|(_, t, ins, _)| *t == line && *ins == insert)
            .map_or(i, |(n, _, _, _)| *n)
    }
}

/// A place's score `s` moved by what the failing check ran ([`executed`]), for the line `line` (0-based) or, with
/// `insert`, the place after it (where a new line runs when the line before or after it does): up by
/// [`FAILING_CALL_WEIGHT`] when it ran in the call the failing assertion checked, down by [`NOT_RUN_FACTOR`] when it
/// is a function's statement the checks never reached.
fn by_trace(s: f64, reach: Option<&[executed::Reach]>, line: usize, insert: bool) -> f64 {
    use executed::Reach;
    let Some(reach) = reach else { return s };
    let at = |k: usize| reach.get(k).copied().unwrap_or(Reach::Neutral);
    let r = if insert {
        // The next line that says anything: a docstring or a blank line after a `def` says nothing.
        let next = (line + 1..reach.len())
            .map(at)
            .find(|r| *r != Reach::Neutral)
            .unwrap_or(Reach::Neutral);
        match (at(line), next) {
            (Reach::Failing, _) | (_, Reach::Failing) => Reach::Failing,
            (Reach::FailingAndBefore, _) | (_, Reach::FailingAndBefore) => Reach::FailingAndBefore,
            (Reach::NotRun, Reach::NotRun) => Reach::NotRun,
            (Reach::Ran, _) | (_, Reach::Ran) => Reach::Ran,
            _ => Reach::Neutral,
        }
    } else {
        at(line)
    };
    match r {
        Reach::Failing => s + FAILING_CALL_WEIGHT,
        // An earlier call ran it too and its result passed: less telling.
        Reach::FailingAndBefore => s + FAILING_CALL_WEIGHT / 2.0,
        Reach::NotRun => s * NOT_RUN_FACTOR,
        Reach::Ran | Reach::Neutral => s,
    }
}

/// The score of the place after a line whose own score (less what a failing check's naming of it added) is `own`:
/// plus the next line's naming `next`, how far the line defines the names a new line uses (`flow`) and how far it
/// holds the words the task writes after "after" (`named`); low after a line that `leaves` its block.
fn place_after(own: f64, next: f64, flow: f64, named: f64, leaves: bool) -> f64 {
    let s = own + next + DEFINES_WEIGHT * flow + AFTER_WEIGHT * named;
    if leaves {
        // What follows a `return` in its block never runs.
        s * PROSE_FACTOR
    } else {
        s
    }
}

/// Whether a line with these tokens leaves its block (`return`, `raise`, `break`, `continue`): a line added after
/// it in that block would never run.
fn ends_its_block(tokens: &[String]) -> bool {
    matches!(
        tokens.first().map(String::as_str),
        Some("return" | "raise" | "break" | "continue")
    )
}

/// The code fragments the task writes out (with [`Signals::fragments`]), and the names in them: what a new line
/// uses.
fn fragments_and_names(task: &str, signals: Signals) -> (Vec<Vec<String>>, HashSet<String>) {
    if !signals.fragments {
        return (Vec::new(), HashSet::new());
    }
    let f = fragments(task);
    let names = f.iter().flatten().filter(|t| is_name(t)).cloned().collect();
    (f, names)
}

/// Per line of the file `path` (0-based): how far it is inside a definition the task names (or, when it names none
/// there, within the reach of what the failing check calls), and how strongly the check's output names it.
fn named_evidence(
    path: &str,
    text: &str,
    task_words: &[String],
    roles: &Roles,
    failing: &Failing,
    signals: Signals,
) -> (Vec<f64>, Vec<f64>) {
    let mut scopes = if signals.scope {
        // A default lives on the `def` line: where the task speaks of one, it counts more than the body.
        let own = if signals.operator_words && speaks_of_defaults(task_words) {
            1.5
        } else {
            0.5
        };
        let defs = definitions(text);
        let defs: Vec<&str> = defs.iter().map(String::as_str).collect();
        let weights = roles.weights(&defs, names);
        named_scopes(text, own, |name| {
            defs.iter()
                .position(|d| *d == name)
                .map_or(0.0, |k| weights[k])
        })
    } else {
        Vec::new()
    };
    shared_constants(text, &mut scopes);
    let mut checked = Vec::new();
    if signals.check && !failing.is_empty() {
        // What the failing test exercises stands in for a definition the task does not name.
        if scopes.iter().all(|s| *s == 0.0) {
            scopes = failing.reach(text);
        }
        checked = failing.place_scores(path, text.lines().count());
    }
    (scopes, checked)
}

/// The definitions the task's named functions share: a module constant given a number (`METRES_PER_ATMOSPHERE =
/// 33.0`) that lines of two or more of them read, where the task says several results are wrong, holds one slip
/// they all show. Its line gets the weight of the lines that read it, in `scopes` (the lines of the definitions
/// the task names, by weight).
fn shared_constants(text: &str, scopes: &mut [f64]) {
    let lines: Vec<&str> = text.lines().collect();
    // Each line's tokens, read once and only when the file defines a number constant.
    let mut toks: Option<Vec<Vec<String>>> = None;
    for (d, line) in lines.iter().enumerate() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim_end();
        let number = value.trim().parse::<f64>().is_ok();
        if !mutants::constant_name(name) || !number || line.starts_with(char::is_whitespace) {
            continue;
        }
        let toks = toks.get_or_insert_with(|| lines.iter().map(|l| tokens(l)).collect());
        // The named definitions that read it: each run of named lines (a body) counts once.
        let mut bodies = 0;
        let mut weight: f64 = 0.0;
        let mut in_read_body = false;
        for (i, l) in lines.iter().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let s = scopes.get(i).copied().unwrap_or(0.0);
            if s == 0.0 || !l.starts_with(char::is_whitespace) {
                in_read_body = false;
                continue;
            }
            if !in_read_body && toks[i].iter().any(|t| t == name) {
                bodies += 1;
                weight = weight.max(s);
                in_read_body = true;
            }
        }
        if bodies >= 2
            && let Some(own) = scopes.get_mut(d)
        {
            *own = own.max(weight);
        }
    }
}

/// The places after lines of the file `path` where the task implies a missing line ([`implied::places`]), among
/// its shown `lines`.
fn implied_spots(
    spec: &Task,
    path: &str,
    text: &str,
    lines: &[(usize, &str)],
    task_words: &[String],
    failing: &Failing,
    signals: Signals,
) -> Vec<(f64, Spot)> {
    let named = |name: &str| {
        (signals.scope && names(task_words, name)) || (signals.check && failing.said(name))
    };
    implied::places(&spec.task.to_lowercase(), text, &named, &failing.words)
        .into_iter()
        .filter_map(|(i, w)| {
            let (_, line) = lines.iter().find(|(n, _)| *n == i)?;
            let spot = Spot {
                path: path.to_string(),
                line: i + 1,
                text: line.to_string(),
                insert: true,
            };
            Some((w, spot))
        })
        .collect()
}

/// The task as read for code fragments, and the terms of what was asked (see [`asked_text`]): with
/// [`Signals::operator_words`], the file names left out and the words for operators read.
fn asked(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    signals: Signals,
) -> (String, Terms) {
    if !signals.operator_words {
        return (spec.task.clone(), Terms::of(&asked_text(spec)));
    }
    let mut terms = Terms::of(&without_file_mentions(&asked_text(spec), files.keys()));
    terms.read_as_code(&spec.task);
    (without_file_mentions(&spec.task, files.keys()), terms)
}

/// The task, its acceptance criteria, plan and context: the text the shared words are taken from.
fn asked_text(spec: &Task) -> String {
    let mut asked = spec.task.clone();
    for t in spec
        .acceptance_criteria
        .iter()
        .chain(&spec.plan)
        .chain(spec.context.iter())
    {
        asked.push('\n');
        asked.push_str(t);
    }
    asked
}

/// `text` without the selected files' names and the "in" before them: "In invoice.py, ..." says which file, not
/// which line (its "in" matched every line holding Python's `in`).
fn without_file_mentions<'a>(text: &str, paths: impl Iterator<Item = &'a String>) -> String {
    let mut out = text.to_string();
    for path in paths {
        let base = path.rsplit('/').next().unwrap_or(path);
        for name in [path.as_str(), base] {
            let needle = name.to_ascii_lowercase();
            while let Some(at) = out.to_ascii_lowercase().find(&needle) {
                let before = out[..at].to_ascii_lowercase();
                let start = if before.ends_with("in ") { at - 3 } else { at };
                out.replace_range(start..at + needle.len(), " ");
            }
        }
    }
    out
}

/// The distinct non-blank lines of a file inside `ranges` (all, without), with their 0-based index.
fn shown_lines<'a>(text: &'a str, ranges: Option<&[focus::LineRange]>) -> Vec<(usize, &'a str)> {
    let mut seen = HashSet::new();
    text.lines()
        .enumerate()
        .filter(|(i, _)| ranges.is_none_or(|r| focus::contains(r, *i)))
        .map(|(i, l)| (i, l.strip_suffix('\r').unwrap_or(l)))
        .filter(|(_, l)| !l.trim().is_empty() && seen.insert(*l))
        .collect()
}

/// Each line's shared-word score: the rarity (1 / lines holding it) of each word it shares with the task, and
/// twice that of each pair of neighbouring terms the task also writes side by side.
fn word_scores(lines: &[(usize, &str)], asked: &Terms) -> Vec<f64> {
    let terms: Vec<Terms> = lines.iter().map(|(_, l)| Terms::of(l)).collect();
    let mut lines_with: HashMap<&str, usize> = HashMap::new();
    for t in &terms {
        for term in t.words.iter().chain(&t.pairs) {
            *lines_with.entry(term.as_str()).or_default() += 1;
        }
    }
    let rarity = |t: &String| 1.0 / lines_with.get(t.as_str()).copied().unwrap_or(1).max(1) as f64;
    terms
        .iter()
        .map(|t| {
            let words: f64 = t
                .words
                .iter()
                .filter(|w| asked.words.contains(*w))
                .map(rarity)
                .sum();
            let pairs: f64 = t
                .pairs
                .iter()
                .filter(|p| asked.pairs.contains(*p))
                .map(|p| 2.0 * rarity(p))
                .sum();
            words + pairs
        })
        .collect()
}

/// The terms of a text: its words (lower case, a plural `s` dropped) and symbols, and each pair of neighbouring
/// terms.
struct Terms {
    words: HashSet<String>,
    pairs: HashSet<String>,
}

impl Terms {
    fn of(text: &str) -> Terms {
        let mut seq: Vec<String> = Vec::new();
        let mut cur = String::new();
        let push = |w: &mut String, seq: &mut Vec<String>| {
            if !w.is_empty() {
                let mut t = w.to_lowercase();
                if t.len() > 3 && t.ends_with('s') && !t.ends_with("ss") {
                    t.pop();
                }
                seq.push(t);
                w.clear();
            }
        };
        for c in text.chars() {
            if c.is_alphanumeric() || c == '_' {
                cur.push(c);
                continue;
            }
            push(&mut cur, &mut seq);
            if !c.is_whitespace()
                && !matches!(c, '.' | ',' | ';' | ':' | '"' | '\'' | '`' | '(' | ')')
            {
                seq.push(c.to_string());
            }
        }
        push(&mut cur, &mut seq);
        Terms {
            pairs: seq
                .windows(2)
                .map(|w| format!("{} {}", w[0], w[1]))
                .collect(),
            words: seq.into_iter().collect(),
        }
    }
}

impl Terms {
    /// The terms a task's words stand for, added (the operators of "subtracting", "exactly", "the wrong way round"),
    /// and its English function words taken out.
    fn read_as_code(&mut self, task: &str) {
        let lower = task.to_lowercase();
        for (words, ops) in OPERATOR_WORDS {
            if words.iter().any(|w| lower.contains(w)) {
                self.words.extend(ops.iter().map(|o| o.to_string()));
            }
        }
        self.words.retain(|w| !FUNCTION_WORDS.contains(&w.as_str()));
    }
}

/// Whether the task's words say a parameter's default is what is wrong ("by default", "when n is not given").
fn speaks_of_defaults(words: &[String]) -> bool {
    const ONE: &[&str] = &["default", "defaults", "omitted", "optional"];
    const TWO: &[[&str; 2]] = &[["not", "given"], ["not", "passed"], ["left", "out"]];
    words.iter().any(|w| ONE.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|w| TWO.contains(&[w[0].as_str(), w[1].as_str()]))
}

/// Words of a task and the operator terms they stand for (a term is a word or one symbol, as [`Terms::of`] splits
/// a line: `>=` is `>` and `=`).
const OPERATOR_WORDS: &[(&[&str], &[&str])] = &[
    (&["subtract", "minus", "deduct"], &["-"]),
    (&["adding", "plus", " sum "], &["+"]),
    (&["multipl", "times", "product"], &["*"]),
    (&["divide", "dividing", "quotient"], &["/"]),
    (&["remainder", "modulo"], &["%"]),
    (&["upside down", "reciprocal", "inverted"], &["/"]),
    (
        &["minimum", "maximum", " cap ", "capped", "clamp"],
        &["min", "max"],
    ),
    (
        &[
            "exactly",
            "inclusive",
            "include",
            "at least",
            "at most",
            "or equal",
            "off by one",
            "one too",
            "equal to",
            "exclusive",
        ],
        &["<", ">", "range"],
    ),
    (
        &["greater", "more than", "larger", "above", "exceed"],
        &[">"],
    ),
    (&["less than", "fewer", "smaller", "below"], &["<"]),
    (
        &["wrong way round", "wrong order", "swapped", "swap "],
        &[","],
    ),
    (
        &["inverse", "invert", "instead of the", "opposite"],
        &["not", "!"],
    ),
    (
        &["stub", "does nothing", "placeholder", "not implemented"],
        &["pass"],
    ),
];

/// English words that say nothing of a line (a task's "a" is not a line's `"A"`); code keywords are not among them.
const FUNCTION_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "to",
    "it",
    "its",
    "be",
    "must",
    "should",
    "so",
    "that",
    "this",
    "by",
    "at",
    "on",
    "which",
    "than",
    "then",
    "now",
    "right",
    "currently",
    "there",
    "their",
    "they",
    "we",
    "our",
    "you",
    "your",
    "has",
    "have",
    "does",
    "do",
    "was",
    "were",
    "are",
    "been",
    "also",
    "just",
    "only",
    "still",
    "instead",
    "make",
];

/// The words of a text, lower case, in order (names whole: `strip_trailing` is one word).
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The parts of a name, lower case: split at `_` and where a lower-case letter meets an upper-case one
/// (`long_enough`, `longEnough`: `long`, `enough`).
fn name_parts(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if (c == '_' || (c.is_uppercase() && prev_lower)) && !cur.is_empty() {
            parts.push(std::mem::take(&mut cur));
        }
        if c != '_' {
            cur.extend(c.to_lowercase());
        }
        prev_lower = c.is_lowercase();
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// Whether the task (its `words`, in order) names `name`: as a word (names of three characters or more), or by its
/// parts in order (`long enough` for `long_enough`).
fn names(words: &[String], name: &str) -> bool {
    let lower = name.to_lowercase();
    if lower.chars().count() >= 3 && words.contains(&lower) {
        return true;
    }
    let parts = name_parts(name);
    parts.len() >= 2 && words.windows(parts.len()).any(|w| w == parts.as_slice())
}

/// The name a line of code defines as a function or class (`def total(`, `async def f(`, `pub fn run(`,
/// `function draw(`, `class User`), if it does.
fn definition(tokens: &[String]) -> Option<&str> {
    let mut t = tokens.iter().map(String::as_str).skip_while(|t| {
        matches!(
            *t,
            "pub" | "async" | "export" | "static" | "public" | "private"
        )
    });
    match t.next()? {
        "def" | "fn" | "function" | "class" | "func" => t.next().filter(|n| is_name(n)),
        _ => None,
    }
}

/// The non-blank lines (0-based) of the body of the definition on line `d`: those after it indented deeper than it,
/// up to the first non-blank line that is not.
fn body_lines(lines: &[&str], d: usize) -> Vec<usize> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let depth = indent(lines[d]);
    (d + 1..lines.len())
        .take_while(|&b| lines[b].trim().is_empty() || indent(lines[b]) > depth)
        .filter(|&b| !lines[b].trim().is_empty())
        .collect()
}

/// For each line of a text (0-based), how far it is inside a definition, by what `weight` gives its name (0 for
/// a name not meant): the weight for the lines of its body (the lines after the definition indented deeper than
/// it, up to the first that is not), `own` times it for the definition's own line, 0 elsewhere; the most of the
/// definitions that hold a line.
fn named_scopes(text: &str, own: f64, weight: impl Fn(&str) -> f64) -> Vec<f64> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![0.0; lines.len()];
    for (d, line) in lines.iter().enumerate() {
        let toks = tokens(line);
        let Some(name) = definition(&toks) else {
            continue;
        };
        let w = weight(name);
        if w <= 0.0 {
            continue;
        }
        out[d] = f64::max(out[d], w * own);
        for b in body_lines(&lines, d) {
            out[b] = f64::max(out[b], w);
        }
    }
    out
}

/// The definition of `text` the task reports first ([`Roles`]), when the scope signal is on.
fn first_reported<'t>(text: &'t str, roles: &Roles, signals: Signals) -> Option<&'t str> {
    if !signals.scope {
        return None;
    }
    let defs: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let toks = tokens(l);
            let name = definition(&toks)?;
            let at = l.find(name)?;
            Some(&l[at..at + name.len()])
        })
        .collect();
    let weights = roles.weights(&defs, names);
    defs.iter()
        .zip(weights)
        .find(|(_, w)| *w >= 1.0)
        .map(|(d, _)| *d)
}

/// Whether a code fragment is a call of the function `name` with arguments (`is_common("Password123")`, not the
/// bare `is_common()` that names it): where the task reports that function going wrong, the call is its example,
/// and the lines elsewhere that call it are not the slip.
fn calls(fragment: &[String], name: Option<&str>) -> bool {
    name.is_some_and(|n| fragment.first().is_some_and(|f| f == n))
        && fragment.get(1).is_some_and(|t| t == "(")
        && fragment.get(2).is_some_and(|t| t != ")")
}

/// The names of the definitions in a text, in order.
fn definitions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| definition(&tokens(l)).map(str::to_string))
        .collect()
}

/// A line of code with the text of its string literals blanked (`"gmail.com"` is not a module's attribute).
pub(super) fn without_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                    continue;
                }
                out.push(' ');
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// A text's code tokens: names and numbers, string quotes, and operators (two-character ones such as `>=`, `**`,
/// `+=` kept whole); whitespace dropped.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
            continue;
        }
        if !c.is_whitespace() {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if TWO_CHAR_OPS.contains(&two.as_str()) {
                out.push(two);
                i += 2;
                continue;
            }
            out.push(c.to_string());
        }
        i += 1;
    }
    out
}

const TWO_CHAR_OPS: &[&str] = &[
    ">=", "<=", "==", "!=", "**", "//", "+=", "-=", "*=", "/=", "->", "&&", "||", "::", "<<", ">>",
];

/// Words that are code when next to code (`return name`, `not ratings`).
const KEYWORDS: &[&str] = &[
    "return", "not", "if", "in", "is", "and", "or", "None", "True", "False", "def", "for",
    "import", "lambda",
];

/// Whether a token is a name (an identifier, not a number or a symbol).
fn is_name(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && !KEYWORDS.contains(&t)
}

/// Whether a text is one plain identifier, no keyword (`tool`, not `self.loans[tool]` nor `return`).
fn is_identifier(t: &str) -> bool {
    is_name(t) && t.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The code fragments a task writes out, each as its tokens: its backtick spans, and runs of code among its prose
/// (operators, brackets, numbers, quoted strings, names joined to them, `snake_case` or `CAPS` names, and code
/// keywords before them). A fragment of one token only counts when it is a quoted string.
pub(crate) fn fragments(task: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut prose = String::new();
    for (k, part) in task.split('`').enumerate() {
        if k % 2 == 1 {
            out.push(tokens(part));
        } else {
            prose.push_str(part);
            prose.push(' ');
        }
    }
    for run in code_runs(&prose) {
        let t = tokens(&run);
        let one_string = t.len() >= 3 && t[0] == "\"";
        if t.len() >= 2 || one_string {
            out.push(t);
        }
    }
    out.retain(|f| !f.is_empty());
    out
}

/// The runs of code in prose: words and symbols split where a sentence's punctuation (`;`, `:` before a space, a
/// `.` or `,` outside brackets before a space) or a plain word stands; a plain word next to an operator, a bracket or
/// a code keyword joins the run.
fn code_runs(prose: &str) -> Vec<String> {
    // Words separated by spaces; punctuation that ends a sentence part splits too.
    let mut pieces: Vec<(String, bool)> = Vec::new(); // (piece, ends a part)
    let mut depth = 0i32;
    let mut in_string = false;
    for word in prose.split_whitespace() {
        for c in word.chars() {
            match c {
                '"' => in_string = !in_string,
                '(' | '[' | '{' if !in_string => depth += 1,
                ')' | ']' | '}' if !in_string => depth = (depth - 1).max(0),
                _ => {}
            }
        }
        let mut w = word.to_string();
        let mut ends = false;
        while let Some(last) = w.chars().last().filter(|_| !in_string) {
            let splits = matches!(last, ';' | '?' | '!')
                || (last == ':' && !w.ends_with("\":"))
                || (matches!(last, '.' | ',') && depth == 0);
            if !splits {
                break;
            }
            w.pop();
            ends = true;
        }
        pieces.push((w, ends));
    }
    let codey = |w: &str| {
        operator(w)
            || w.chars()
                .any(|c| (!c.is_alphanumeric() && c != '\'' && c != '-') || c.is_ascii_digit())
            || w.contains('_')
            || (w.len() > 1 && w.chars().all(|c| c.is_uppercase() || c == '_'))
    };
    let mut inside: Vec<bool> = pieces.iter().map(|(w, _)| codey(w)).collect();
    // A keyword or a plain name next to code joins it (twice: `return name`, `if not ratings`).
    for _ in 0..2 {
        let now = inside.clone();
        for k in 0..pieces.len() {
            if now[k] || pieces[k].0.is_empty() {
                continue;
            }
            let prev = k > 0 && now[k - 1] && !pieces[k - 1].1;
            let next = k + 1 < pieces.len() && now[k + 1] && !pieces[k].1;
            let keyword = KEYWORDS.contains(&pieces[k].0.as_str());
            let after_keyword =
                k > 0 && KEYWORDS.contains(&pieces[k - 1].0.as_str()) && !pieces[k - 1].1;
            if (prev && operator(&pieces[k - 1].0))
                || (next && (keyword || operator(&pieces[k + 1].0)))
                || after_keyword
            {
                inside[k] = true;
            }
        }
    }
    let mut runs = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for (k, (w, ends)) in pieces.iter().enumerate() {
        if inside[k] && !w.is_empty() {
            cur.push(w);
        } else if !cur.is_empty() {
            runs.push(cur.join(" "));
            cur.clear();
        }
        if *ends && !cur.is_empty() {
            runs.push(cur.join(" "));
            cur.clear();
        }
    }
    if !cur.is_empty() {
        runs.push(cur.join(" "));
    }
    runs
}

/// Whether a piece of prose is an operator on its own (`*`, `>=`, `+`).
fn operator(w: &str) -> bool {
    !w.is_empty() && w.chars().all(|c| "+-*/%<>=!&|^~".contains(c))
}

/// How well the line's tokens hold the fragment: the square of 1 - (the fewest token edits that turn some run of the
/// line into the fragment) / the fragment's length (at least 4, so a short fragment says less), never below 0.
fn fragment_match(fragment: &[String], line: &[String]) -> f64 {
    let m = fragment.len();
    if m == 0 || line.is_empty() {
        return 0.0;
    }
    // Semi-global alignment: the fragment whole, against any run of the line.
    let mut prev: Vec<usize> = vec![0; line.len() + 1];
    for (i, f) in fragment.iter().enumerate() {
        let mut cur = vec![i + 1; line.len() + 1];
        for (j, l) in line.iter().enumerate() {
            let same = f.eq_ignore_ascii_case(l);
            cur[j + 1] = (prev[j] + usize::from(!same))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    let best = prev.iter().copied().min().unwrap_or(m);
    let kept = (m.saturating_sub(best)) as f64 / m.max(4) as f64;
    // Squared: a line one token from the fragment says much more than one half of it away.
    kept * kept
}

/// Whether `fragment` is a call of the function (or class) the line `def`ines: the task names the function by a
/// call (`tail(items, n)`), which says nothing about the `def` line itself.
fn calls_the_function_defined(fragment: &[String], line: &[String]) -> bool {
    matches!(line.first().map(String::as_str), Some("def" | "class"))
        && line
            .get(1)
            .is_some_and(|name| fragment.first() == Some(name))
        && fragment.get(1).is_some_and(|t| t == "(")
}

/// For each line, how much the place after it has what a new line using `names` needs: the share of those names
/// defined on it or before it, counted whole for the last line defining any of them (a new line goes after the
/// definitions it uses) and half for the earlier defining lines; 0 for lines defining none.
fn data_flow(lines: &[(usize, &str)], names: &HashSet<String>) -> Vec<f64> {
    let defined: Vec<HashSet<String>> = lines.iter().map(|(_, l)| defines(&tokens(l))).collect();
    let uses = |d: &HashSet<String>| names.iter().any(|n| d.contains(n));
    let last = defined.iter().rposition(uses);
    let mut seen: HashSet<&String> = HashSet::new();
    defined
        .iter()
        .enumerate()
        .map(|(k, d)| {
            seen.extend(names.iter().filter(|n| d.contains(*n)));
            if !uses(d) {
                return 0.0;
            }
            let share = seen.len() as f64 / names.len().max(1) as f64;
            if Some(k) == last { share } else { share / 2.0 }
        })
        .collect()
}

/// Whether the task asks to add a line rather than change one. "add" alone, in a task that also says "instead of",
/// "rather than" or "replace", is arithmetic ("must add the tax instead of subtracting it"), not a new line; so is a
/// statement that "never" runs in a task that says what to replace.
fn asks_to_add(task: &str) -> bool {
    let t = task.to_lowercase();
    let replaces = t.contains("instead of") || t.contains("rather than") || t.contains("replace");
    if t.contains("add ") && !replaces {
        return true;
    }
    if missing_a_token(&t) {
        // "missing a `not`": a line lacks a word or a sign, not a line.
        return false;
    }
    [
        "insert",
        "append",
        "never returns",
        "missing",
        "lacks",
        "has no ",
        "forgot",
    ]
    .iter()
    .chain(NEVER_DOES.iter().filter(|_| !replaces))
    .any(|w| t.contains(w))
}

/// Words saying a statement never runs because it is not there ("never increments the counter").
const NEVER_DOES: &[&str] = &[
    "never increments",
    "never appends",
    "never adds",
    "never updates",
    "never sets",
    "never stores",
    "never records",
    "never counts",
    "never calls",
    "never initiali",
    "never hands",
    "never gives",
    "never closes",
    "never resets",
    "never saves",
];

/// Whether what the task (lower case) says is "missing" is a word or a sign of a line (`not`, a minus, a comma),
/// not a line of its own.
fn missing_a_token(t: &str) -> bool {
    const TOKENS: &[&str] = &[
        "not",
        "-",
        "!",
        "minus",
        "sign",
        "negation",
        "comma",
        "colon",
        "parenthesis",
        "parentheses",
        "bracket",
        "quote",
        "=",
        "+",
        "*",
        "self",
        "argument",
        "keyword",
    ];
    t.match_indices("missing ").any(|(at, m)| {
        let after = t[at + m.len()..]
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| {
                    matches!(c, '`' | '\'' | '"' | ',' | '.' | ';' | ':' | '(' | ')')
                })
            })
            .find(|w| !matches!(*w, "a" | "an" | "the" | "its" | "one"));
        after.is_some_and(|w| TOKENS.contains(&w))
    })
}

/// The words a task writes after "after" (up to the end of its sentence part): the line it wants a new one after.
fn after_phrase(task: &str) -> String {
    let lower = task.to_lowercase();
    let mut out = String::new();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("after ") {
        let tail = &rest[at + 6..];
        let end = tail.find([';', ':', '\n']).unwrap_or(tail.len());
        out.push_str(&tail[..end]);
        out.push(' ');
        rest = &tail[end..];
    }
    out
}

/// The names a line of code defines: those assigned (`a, b = ...`, `n += 1`), a `for` loop's, a `def`'s parameters,
/// `import` and `as` names.
fn defines(tokens: &[String]) -> HashSet<String> {
    let mut out = HashSet::new();
    let first = tokens.first().map(String::as_str);
    if first == Some("def") {
        let open = tokens.iter().position(|t| t == "(");
        for t in tokens.iter().skip(open.map_or(tokens.len(), |o| o + 1)) {
            if t == ")" {
                break;
            }
            if is_name(t) {
                out.insert(t.clone());
            }
        }
        return out;
    }
    if first == Some("for") {
        for t in tokens.iter().skip(1).take_while(|t| *t != "in") {
            if is_name(t) {
                out.insert(t.clone());
            }
        }
        return out;
    }
    if let Some(first_eq) = tokens
        .iter()
        .position(|t| matches!(t.as_str(), "=" | "+=" | "-=" | "*=" | "/="))
    {
        // A chained assignment binds every target: `used_a = used_b = 0` (up to the last `=` outside brackets,
        // before any `lambda`).
        let mut eq = first_eq;
        if tokens[first_eq] == "=" {
            let mut depth = 0i32;
            for (i, t) in tokens.iter().enumerate().skip(first_eq + 1) {
                match t.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    "lambda" => break,
                    "=" if depth == 0 => eq = i,
                    _ => {}
                }
            }
        }
        let mut depth = 0i32;
        for t in &tokens[..eq] {
            match t.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ if depth == 0 && is_name(t) => {
                    out.insert(t.clone());
                }
                _ => {}
            }
        }
    }
    for w in tokens.windows(2) {
        if (w[0] == "import" || w[0] == "as") && is_name(&w[1]) {
            out.insert(w[1].clone());
        }
    }
    out
}

/// For each line of a text (0-based), whether it is prose rather than code: a comment (`#`, `//`, `/*`, `*`), or a
/// line of a docstring or other string standing alone (`"""..."""`, a triple-quoted block).
fn prose_lines(text: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut open: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(q) = open {
            out.push(true);
            if t.contains(q) {
                open = None;
            }
            continue;
        }
        let comment = t.starts_with('#')
            || t.starts_with("//")
            || t.starts_with("/*")
            || (t.starts_with('*') && !t.starts_with("**"));
        let quote = ["\"\"\"", "'''"].into_iter().find(|q| t.starts_with(q));
        if let Some(q) = quote {
            if t.len() < 2 * q.len() || !t[q.len()..].contains(q) {
                open = Some(q);
            }
            out.push(true);
            continue;
        }
        out.push(comment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::MODE_REGULAR;

    #[test]
    fn a_chained_assignment_defines_every_target() {
        let d = defines(&tokens("    used_a = used_b = 0"));
        assert!(d.contains("used_a") && d.contains("used_b"), "{d:?}");
        // A keyword argument, a comparison or a lambda's default is no target.
        let d = defines(&tokens("    x = f(y=1) == z"));
        assert_eq!(d.len(), 1, "{d:?}");
        let d = defines(&tokens("    key = lambda a=1: a"));
        assert_eq!(d.len(), 1, "{d:?}");
    }

    #[test]
    fn a_number_constant_two_named_definitions_read_weighs_as_they_do() {
        let text = "RATE = 10.0\nNAME = 'x'\n\n\ndef a(d):\n    return 1 + d / RATE\n\n\ndef b(f):\n    x = f * RATE\n\n    return x * RATE\n\n\ndef c(f):\n    return RATE\n";
        // `a` and `b` named (their lines weigh 1.0, their `def` lines 0.5); `c` not.
        let mut scopes = vec![0.0; text.lines().count()];
        for (i, w) in [(4, 0.5), (5, 1.0), (8, 0.5), (9, 1.0), (11, 1.0)] {
            scopes[i] = w;
        }
        let mut got = scopes.clone();
        shared_constants(text, &mut got);
        assert_eq!(got[0], 1.0, "{got:?}");
        assert_eq!(got[1], 0.0);
        // Read by one named definition only (twice, a blank line between): nothing.
        let mut one = scopes.clone();
        one[5] = 0.0;
        one[4] = 0.0;
        shared_constants(text, &mut one);
        assert_eq!(one[0], 0.0, "{one:?}");
    }

    fn file(text: &str) -> BTreeMap<String, Option<PreImage>> {
        [(
            "m.py".to_string(),
            Some(PreImage {
                text: text.into(),
                mode: MODE_REGULAR,
            }),
        )]
        .into()
    }

    fn task(t: &str) -> Task {
        Task {
            task: t.into(),
            ..Task::default()
        }
    }

    fn top(t: &str, text: &str, signals: Signals) -> Vec<(usize, bool)> {
        rank(
            &task(t),
            &file(text),
            &Focus::new(),
            &Failing::default(),
            signals,
            3,
        )
        .iter()
        .map(|s| (s.line, s.insert))
        .collect()
    }

    #[test]
    fn when_the_probe_found_nothing_the_place_after_the_first_line_ranks_second() {
        let text = "def merge(a, b):\n    merged = a + b\n    return merged\n";
        let t = "merge([3], [1]) returns [3, 1]: `merged = a + b` keeps the lists as they come; it must be in order";
        let ranked = |failing: &Failing| -> Vec<(usize, bool)> {
            rank(
                &task(t),
                &file(text),
                &Focus::new(),
                failing,
                Signals::ALL,
                3,
            )
            .iter()
            .map(|s| (s.line, s.insert))
            .collect()
        };
        let before = ranked(&Failing::default());
        let first = before[0];
        assert!(!first.1, "{before:?}");
        let probed = Failing {
            probed: true,
            ..Failing::default()
        };
        let after = ranked(&probed);
        assert_eq!(after[0], first, "{after:?}");
        assert_eq!(after[1], (first.0, true), "{after:?}");
        assert_eq!(after.len(), 3);
        // Not when a mutant passed (that place ranks first), nor when no probe ran.
        let found = Failing {
            probed: true,
            fixed: vec![failing::Fixed {
                path: "m.py".into(),
                line: 3,
                insert: false,
            }],
            ..Failing::default()
        };
        assert!(!ranked(&found).iter().any(|s| s.1), "{:?}", ranked(&found));
        // But when what passed was a change of a block's header, its block may lack a line.
        let text = "def streak(days, goal):\n    best = run = 0\n    for d in days:\n        if d < goal:\n            continue\n        run += 1\n        best = max(best, run)\n    return best\n";
        let header = Failing {
            probed: true,
            fixed: vec![failing::Fixed {
                path: "m.py".into(),
                line: 4,
                insert: false,
            }],
            ..Failing::default()
        };
        let got: Vec<(usize, bool)> = rank(
            &task("streak([12, 3, 10], 10) returns 2 instead of 1"),
            &file(text),
            &Focus::new(),
            &header,
            Signals::ALL,
            3,
        )
        .iter()
        .map(|s| (s.line, s.insert))
        .collect();
        assert_eq!(got[..2], [(4, false), (4, true)], "{got:?}");
        // Never after a line that ends its block's flow.
        let ret = "def f(a):\n    return a\n";
        let spots = rank(
            &task("f(1) returns 1"),
            &file(ret),
            &Focus::new(),
            &probed,
            Signals::ALL,
            3,
        );
        assert!(
            spots.iter().all(|s| !(s.insert && s.line == 2)),
            "{spots:?}"
        );
    }

    #[test]
    fn where_nothing_passed_a_place_whose_mutant_got_the_check_further_ranks_first() {
        let text = "RATE = 0.5\n\n\ndef price(bins, rate):\n    extra = bins * rate * RATE\n    return rate + extra\n";
        let t = "One bin is charged 4.50 instead of 3.00: everyone pays the extra-bin charge RATE";
        let at = |line| failing::Fixed {
            path: "m.py".into(),
            line,
            insert: false,
        };
        let ranked = |failing: &Failing| -> Vec<usize> {
            rank(
                &task(t),
                &file(text),
                &Focus::new(),
                failing,
                Signals::ALL,
                3,
            )
            .iter()
            .filter(|s| !s.insert)
            .map(|s| s.line)
            .collect()
        };
        let before = ranked(&Failing {
            probed: true,
            ..Failing::default()
        });
        assert_ne!(before.first(), Some(&6), "{before:?}");
        let further = Failing {
            probed: true,
            further: vec![at(6)],
            ..Failing::default()
        };
        assert_eq!(ranked(&further).first(), Some(&6), "{:?}", ranked(&further));
        // A pass elsewhere outranks it: the place that passed is the evidence.
        let passed = Failing {
            fixed: vec![at(1)],
            ..further.clone()
        };
        assert_eq!(ranked(&passed).first(), Some(&1), "{:?}", ranked(&passed));
    }

    #[test]
    fn the_line_the_failing_call_ran_ranks_first_and_a_line_no_test_reached_ranks_last() {
        // Both returns share the task's words ("limit"); the test called `capped` and failed on it, and never
        // reached the `raise` (which shares them most).
        let text = "def capped(n, limit):\n    if n < 0:\n        raise ValueError(\"a capped value over the limit\")\n    return max(n, limit)\n\n\ndef floor(n, limit):\n    return max(n, limit)\n";
        let trace = "local-llm-trace 1\nhit 0 1 1 module\nhit 0 7 1 module\nhit 0 2 1 body\nhit 0 4 1 body\n\
                     hit 0 8 1 body\nfailing 0 2 only\nfailing 0 4 only\n";
        let failing = Failing {
            ran: executed::Executed::read(&[trace.to_string()], &["m.py"]),
            ..Failing::default()
        };
        let t = "A capped value goes over the limit.";
        let ranked = |signals| -> Vec<usize> {
            rank(&task(t), &file(text), &Focus::new(), &failing, signals, 8)
                .iter()
                .filter(|s| !s.insert)
                .map(|s| s.line)
                .collect()
        };
        let without = ranked(Signals {
            executed: false,
            ..Signals::ALL
        });
        let with = ranked(Signals::ALL);
        let at = |v: &[usize], n: usize| v.iter().position(|l| *l == n);
        assert_eq!(with[0], 4, "{with:?}");
        assert!(
            at(&with, 3) > at(&with, 2),
            "the unreached raise ranks below the lines that ran: {with:?}"
        );
        assert_eq!(
            without[0], 3,
            "without the trace the words decide: {without:?}"
        );
    }

    #[test]
    fn the_example_call_of_the_function_a_task_reports_does_not_rank_its_callers_first() {
        // `is_common("Password123")` is the task's example: an edit or two turns it into the caller's
        // `if is_common(password):`, yet the slip is in `is_common` itself.
        let text = "COMMON = {\"password123\", \"letmein\"}\n\n\ndef is_common(password):\n    \"\"\"Whether the password is common, ignoring case.\"\"\"\n    return password in COMMON\n\n\ndef problems(password):\n    found = []\n    if len(password) < 8:\n        found.append(\"short\")\n    if is_common(password):\n        found.append(\"too common\")\n    return found\n";
        let t = "In m.py, common passwords typed with capitals get through: is_common(\"Password123\") returns False \
                 instead of True, so problems(\"Password123\") misses \"too common\".";
        let ranked: Vec<usize> = rank(
            &task(t),
            &file(text),
            &Focus::new(),
            &Failing::default(),
            Signals::ALL,
            8,
        )
        .iter()
        .filter(|s| !s.insert)
        .map(|s| s.line)
        .collect();
        let at = |n: usize| ranked.iter().position(|l| *l == n).unwrap_or(usize::MAX);
        assert!(at(6) < at(13), "the body above the caller: {ranked:?}");
    }

    #[test]
    fn the_lines_sharing_the_tasks_rare_words_rank_first_and_lines_sharing_nothing_are_left_out() {
        let text = "def area(width, height):\n    return width * width\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n";
        let t = "area returns width * width; it must return width * height.";
        for signals in [Signals::WORDS, Signals::ALL] {
            let ranked = top(t, text, signals);
            assert_eq!(ranked[0], (2, false), "{signals:?}: {ranked:?}");
            assert_eq!(ranked.len(), 3);
        }
        assert!(top("Make it better", text, Signals::ALL).is_empty());
    }

    #[test]
    fn a_docstring_repeating_the_task_ranks_below_the_code_line() {
        let text = "\"\"\"Shipping: the shipping fee is waived for orders over the free shipping limit.\"\"\"\n\nLIMIT = 50\n\n\ndef fee(total):\n    if total > LIMIT:\n        return 0\n    return 5\n";
        let t = "The shipping fee must also be waived for an order of exactly the free shipping limit: total >= LIMIT.";
        assert_eq!(
            top(t, text, Signals::WORDS)[0],
            (1, false),
            "the docstring, before"
        );
        let ranked = top(t, text, Signals::ALL);
        assert_eq!(ranked[0], (7, false), "{ranked:?}");
        // A comment too, and a docstring over several lines.
        let text = "def fee(total):\n    # the shipping fee is waived over the free shipping limit\n    \"\"\"Fee.\n    The shipping fee is waived for orders over the free shipping limit.\n    \"\"\"\n    if total > LIMIT:\n        return 0\n";
        let ranked = top(t, text, Signals::ALL);
        assert_eq!(ranked[0], (6, false), "{ranked:?}");
    }

    #[test]
    fn the_line_one_small_edit_from_the_tasks_code_fragment_ranks_above_a_rare_function_name() {
        let text = "def normalize_email_address(value, domain):\n    value = value.strip(\" \")\n    return value.upper()\n";
        let t = "normalize_email_address must lowercase the address: value.lower().";
        let words = top(t, text, Signals::WORDS);
        assert_eq!(words[0], (1, false), "the rare name, before: {words:?}");
        let ranked = top(t, text, Signals::ALL);
        assert_eq!(ranked[0], (3, false), "{ranked:?}");
    }

    #[test]
    fn a_quoted_string_of_the_task_finds_the_line_holding_most_of_it() {
        let text = "def greeting(name):\n    return \"Hello, \" + name\n\n\ndef farewell(name):\n    return \"Goodbye, \" + name\n";
        let ranked = top("It must say \"Hello, Ann!\" for Ann.", text, Signals::ALL);
        assert_eq!(ranked[0], (2, false), "{ranked:?}");
    }

    #[test]
    fn the_tasks_code_fragments_are_read_out_of_its_prose() {
        let f = |t: &str| -> Vec<String> { fragments(t).iter().map(|f| f.join(" ")).collect() };
        assert_eq!(
            f(
                "In shop.py, with_discount adds it; it must subtract it (price - price * percent / 100)."
            ),
            vec!["shop . py", "( price - price * percent / 100 )"]
        );
        assert_eq!(
            f("last returns items[1]; it must return items[-1]."),
            vec!["items [ 1 ]", "return items [ - 1 ]"]
        );
        assert_eq!(f("Use `a - b` instead"), vec!["a - b"]);
        assert_eq!(f("it must return name."), vec!["return name"]);
        assert!(f("Make the greeting friendlier").is_empty());
    }

    #[test]
    fn a_task_that_adds_a_line_ranks_the_place_after_the_line_defining_what_it_uses() {
        let text = "def full_name(first, last):\n    name = first + \" \" + last\n\n\ndef initials(first, last):\n    return first[0] + last[0]\n";
        let t = "full_name builds the name but never returns it; it must return name.";
        assert!(
            top(t, text, Signals::WORDS).iter().all(|s| !s.1),
            "no insertion before"
        );
        let ranked = top(t, text, Signals::ALL);
        assert_eq!(ranked[0], (2, true), "{ranked:?}");
        // A task that asks for no new line gets no insertion point.
        let ranked = top(
            "full_name must join with a dash: first + \"-\" + last",
            text,
            Signals::ALL,
        );
        assert!(ranked.iter().all(|s| !s.1), "{ranked:?}");
    }

    #[test]
    fn the_line_a_task_says_to_add_after_is_the_first_insertion_point() {
        let text = "DEFAULTS = {\n    \"host\": \"localhost\",\n    \"port\": 8080,\n}\n";
        let ranked = top(
            "DEFAULTS has no timeout; add the entry \"timeout\": 30, after the port.",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (3, true), "{ranked:?}");
        let text = "def collect(items):\n    seen = []\n    for item in items:\n        item = item.strip()\n    return seen\n";
        let ranked = top(
            "collect never keeps an item: after it strips the item it must add seen.append(item).",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (4, true), "{ranked:?}");
    }

    #[test]
    fn a_call_of_the_function_in_the_task_does_not_point_at_its_def_line() {
        let text =
            "def tail(items, n):\n    \"\"\"The last n items.\"\"\"\n    return items[-n - 1:]\n";
        let ranked = top(
            "tail(items, n) returns one item too many; it must return items[-n:].",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (3, false), "{ranked:?}");
    }

    #[test]
    fn the_body_of_the_function_the_task_names_ranks_above_lines_elsewhere() {
        // Neither line shares a word with the task but `host`; the one inside `dsn` is the place.
        let text = "def banner(host):\n    return f\"welcome to {host}\"\n\n\ndef dsn(settings):\n    host = settings[\"hostname\"]\n    return host\n";
        let t = "dsn raises KeyError because it reads the host under the wrong key.";
        let before = Signals {
            scope: false,
            ..Signals::ALL
        };
        // Whether line `a` is ranked, above line `b` or with `b` not ranked.
        let above = |ranked: &[(usize, bool)], a, b| {
            let at = |line| ranked.iter().position(|r: &(usize, bool)| r.0 == line);
            at(a).is_some_and(|x| at(b).is_none_or(|y| x < y))
        };
        let ranked = top(t, text, before);
        assert!(above(&ranked, 2, 6), "before: {ranked:?}");
        let ranked = top(t, text, Signals::ALL);
        assert!(above(&ranked, 6, 2), "{ranked:?}");
        // Named by its parts in order: "long enough" is `long_enough`.
        let text = "MIN = 8\n\n\ndef long_enough(pw):\n    return len(pw) > MIN\n\n\ndef clip(pw):\n    return pw[:MIN]\n";
        let ranked = top(
            "a password of exactly MIN characters must count as long enough",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (5, false), "{ranked:?}");
    }

    #[test]
    fn words_for_operators_find_the_line_and_function_words_and_the_file_name_match_nothing() {
        let text = "\"\"\"Totals.\"\"\"\n\n\ndef subtotal(items):\n    return sum(p for p in items)\n\n\ndef total(items):\n    base = subtotal(items)\n    return base - base * 0.2\n";
        // "In" (the file clause) matched Python's `in`; "subtracting" is the `-` of the line to fix. And "add ... instead
        // of" is arithmetic, not a new line.
        let t = "In totals.py, `total` must add the tax to the subtotal instead of subtracting it.";
        let ranked = rank(
            &task(t),
            &[(
                "totals.py".to_string(),
                Some(PreImage {
                    text: text.into(),
                    mode: MODE_REGULAR,
                }),
            )]
            .into(),
            &Focus::new(),
            &Failing::default(),
            Signals::ALL,
            3,
        );
        assert_eq!(
            (ranked[0].line, ranked[0].insert),
            (10, false),
            "{ranked:?}"
        );
        // A stub is its `pass`.
        let text =
            "def split(text):\n    return text.split()\n\n\ndef join_tags(tags):\n    pass\n";
        let t = "join_tags is still a stub: make it return them joined with commas";
        let without = Signals {
            operator_words: false,
            ..Signals::ALL
        };
        assert_eq!(top(t, text, without)[0], (5, false), "before: the def line");
        let ranked = top(t, text, Signals::ALL);
        assert_eq!(ranked[0], (6, false), "{ranked:?}");
        // The article "a" is not the string "A".
        let text = "def letter(score):\n    if score >= 90:\n        return \"A\"\n    if score > 70:\n        return \"C\"\n";
        let ranked = top(
            "letter must give a C for a score of exactly 70",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (4, false), "{ranked:?}");
    }

    #[test]
    fn a_new_line_goes_after_the_last_line_defining_what_it_uses() {
        let text = "def squares(numbers):\n    result = []\n    for n in numbers:\n        value = n * n\n    return result\n";
        let ranked = top(
            "squares drops each value; add result.append(value) inside the loop.",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (4, true), "{ranked:?}");
    }

    #[test]
    fn what_is_missing_may_be_a_word_of_a_line_and_a_default_is_on_the_def_line() {
        assert!(!asks_to_add(
            "active_skus returns the wrong ones: it's missing a `not`."
        ));
        assert!(asks_to_add("the guard is missing from load"));
        assert!(asks_to_add("count_words never increments the counter"));
        // "minimum" and "maximum" are `min` and `max`.
        let text = "FINE = 5\nMAX_FINE = 20\n\n\ndef fine(days):\n    late = days * FINE\n    return max(late, MAX_FINE)\n";
        let ranked = top(
            "fines come out as the full cap: it acts as a minimum instead of a maximum",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (7, false), "{ranked:?}");
        // A default: the named function's `def` line.
        let text = "SHOWN = 3\n\n\ndef top(scores, n=1):\n    return sorted(scores)[:n]\n";
        let ranked = top(
            "top should return SHOWN names when n is not given",
            text,
            Signals::ALL,
        );
        assert_eq!(ranked[0], (4, false), "{ranked:?}");
    }

    #[test]
    fn ranked_places_are_distinct_by_text() {
        let text = "def best(s):\n    return min(s)\n\n\ndef worst(s):\n    return min(s)\n";
        let ranked = rank(
            &task("best must return max(s), not min(s)"),
            &file(text),
            &Focus::new(),
            &Failing::default(),
            Signals::ALL,
            5,
        );
        let texts: Vec<&str> = ranked.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts.iter().filter(|t| **t == "    return min(s)").count(),
            1,
            "{texts:?}"
        );
        assert_eq!(ranked[0].line, 2);
    }

    #[test]
    fn a_python_traceback_names_its_innermost_selected_frame_first() {
        let out = "Traceback (most recent call last):\n  File \"/tmp/copy/test_geo.py\", line 2, in <module>\n    assert area(3, 4) == 12\n  File \"/tmp/copy/src/geo.py\", line 7, in area\n    return helper(w)\n  File \"/tmp/copy/src/geo.py\", line 3, in helper\n    return w / 0\n  File \"/usr/lib/python3/x.py\", line 9\nZeroDivisionError: division by zero\n";
        assert_eq!(
            named_lines(out, &["src/geo.py"]),
            vec![("src/geo.py".to_string(), 3), ("src/geo.py".to_string(), 7)]
        );
        assert!(
            named_lines(out, &["o.py"]).is_empty(),
            "only whole path components match"
        );
    }

    #[test]
    fn compiler_and_pytest_file_lines_are_read_in_order() {
        let out = "src/lib.rs:12:5: error[E0308]: mismatched types\nerror: aborting\ntests/t.py:40: AssertionError\nsrc/lib.rs:3:1: note\nsrc/lib.rs:12:5: again\nREADME:x: no\n";
        assert_eq!(
            named_lines(out, &["src/lib.rs", "tests/t.py"]),
            vec![
                ("src/lib.rs".to_string(), 12),
                ("tests/t.py".to_string(), 40),
                ("src/lib.rs".to_string(), 3)
            ]
        );
        assert!(named_lines(out, &["other.rs"]).is_empty());
    }

    #[test]
    fn a_line_of_the_edited_file_maps_back_to_the_line_it_stands_for() {
        let pre = "a\nb\nc\nd\n";
        let post = "a\nB1\nB2\nc\nd\n";
        assert_eq!(line_before_edit(pre, post, 1), Some(1));
        assert_eq!(line_before_edit(pre, post, 2), Some(2), "the replaced line");
        assert_eq!(line_before_edit(pre, post, 3), Some(2));
        assert_eq!(
            line_before_edit(pre, post, 4),
            Some(3),
            "after the edit, shifted"
        );
        assert_eq!(line_before_edit(pre, post, 5), Some(4));
        assert_eq!(line_before_edit(pre, post, 6), None);
        assert_eq!(
            line_before_edit(pre, "a\nb\nnew\nc\nd\n", 3),
            Some(2),
            "an insertion: the line before"
        );
    }

    #[test]
    fn the_repair_place_is_the_named_line_as_the_model_was_shown_it() {
        let files = file("def f(x):\n    y = x\n    return y / 0\n");
        let change = crate::patch::FileChange {
            path: "m.py".into(),
            pre: None,
            post: b"def f(x):\n    y = x\n    z = 1\n    return y / 0\n".to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: Default::default(),
        };
        let out = "  File \"/c/m.py\", line 4, in f\nZeroDivisionError\n";
        let s = failing_place(out, &files, &Focus::new(), &[change]).unwrap();
        assert_eq!(
            (s.line, s.text.as_str(), s.insert),
            (3, "    return y / 0", false)
        );
        assert!(
            failing_place(
                "  File \"/c/other.py\", line 1\n",
                &files,
                &Focus::new(),
                &[]
            )
            .is_none()
        );
        let mut focus = Focus::new();
        focus.insert("m.py".into(), vec![focus::LineRange { start: 1, end: 1 }]);
        assert!(
            failing_place("m.py:3: x\n", &files, &focus, &[]).is_none(),
            "outside the ranges"
        );
        assert_eq!(
            failing_place("m.py:3: x\n", &files, &Focus::new(), &[])
                .unwrap()
                .line,
            3
        );
    }
}
