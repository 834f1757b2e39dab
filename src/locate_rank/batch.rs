//! The mutation probe's many mutants in one run of the failing check ([`PROBER`]): the run gets a `sitecustomize`
//! that, the first time the program imports a selected file, forks one child per mutant, each importing its
//! mutant's text in place of the file, and writes which passed. About 2 ms a mutant where a run of the check costs
//! 30 to 60 ms, so [`probe_many`] can try every mutant the probe has, not only the first 64.
//!
//! Pure: [`encode`] writes the mutants for the run, [`environment`] the variables that turn the prober on, and
//! [`read`] what it wrote (hostile bytes: the check ran the repository's code; only lines of the expected form
//! count). The shell stages the prober, runs the check and reads the file. A check that never imports a selected
//! file (it runs it as a script) writes nothing: [`probe_many`] then runs the probe one check a mutant.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::Failing;
use super::failing::Fixed;
use super::mutants::{Check, probe};
use super::twins::{self, place_of};
use crate::patch::PreImage;
use crate::patch::focus::Focus;
use crate::task::Task;

/// The prober: a `sitecustomize.py` that runs every mutant in a forked child of the check and writes the verdicts.
pub const PROBER: &str = include_str!("prober.py");

/// The folder, at the top of the sandbox copy, that holds the prober, its mutants and what it writes, for the one
/// run of the probe (removed right after it).
pub const PROBE_FOLDER: &str = ".local-llm-probe";

/// The file in [`PROBE_FOLDER`] the mutants are written to.
pub const MUTANTS_FILE: &str = "mutants.bin";

/// The most data, in MiB, one mutant's child may hold (`RLIMIT_DATA`): a mutant that builds a huge list fails
/// instead of taking the machine's memory until its time limit. Two children run at once; the checks of the tasks
/// the probe is measured on peak near 200 MB for the whole run.
pub const PROBE_MEMORY_MB: u64 = 1024;

/// The most bytes read of what the prober wrote (a line of a few bytes a mutant).
pub const MAX_VERDICTS: usize = 256 * 1024;

/// The most places next to the first pass where a mutant passed too that [`probe_many`] reports.
pub const MAX_TWINS: usize = 2;

/// The most places elsewhere where a mutant the first run never reached passes too that [`probe_many`] reports,
/// after the twins: another way to fix it (`scale_factor(wanted, original)` at the call, `Fraction(wanted,
/// original)` in the function it calls).
pub const MAX_OTHERS: usize = 2;

/// The most of the mutants the first run never reached that the second run tries, after the twins.
pub const MAX_REST: usize = 128;

/// The most mutants [`probe_many`] hands one run.
pub const MAX_MUTANTS: usize = 4096;

/// The mutants, each a selected file's absolute path in the copy and its whole text, as the prober reads them;
/// with `every`, the prober runs every one of them instead of stopping at the first that passed.
pub fn encode(mutants: &[(std::path::PathBuf, &str)], every: bool) -> Vec<u8> {
    let mut out = if every {
        b"local-llm-probe 1 every\n".to_vec()
    } else {
        b"local-llm-probe 1\n".to_vec()
    };
    for (path, text) in mutants {
        let path = path.as_os_str().as_encoded_bytes();
        out.extend_from_slice(format!("{} {}\n", path.len(), text.len()).as_bytes());
        out.extend_from_slice(path);
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// The variables that turn the prober in `folder` on: PYTHONPATH is `folder` before `python_path` (the variable as
/// the check would otherwise get it); each child may run `timeout_ms` and hold [`PROBE_MEMORY_MB`] of data,
/// forking stops after `budget_ms`, and `jobs` children run at once.
pub fn environment(
    folder: &Path,
    python_path: Option<&std::ffi::OsStr>,
    timeout_ms: u64,
    budget_ms: u64,
    jobs: usize,
) -> Vec<(OsString, OsString)> {
    let mut path = folder.as_os_str().to_os_string();
    if let Some(rest) = python_path.filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(rest);
    }
    vec![
        ("PYTHONPATH".into(), path),
        (
            "LOCAL_LLM_PROBE_IN".into(),
            folder.join(MUTANTS_FILE).into_os_string(),
        ),
        ("LOCAL_LLM_PROBE_OUT".into(), folder.into()),
        (
            "LOCAL_LLM_PROBE_TIMEOUT_MS".into(),
            timeout_ms.to_string().into(),
        ),
        (
            "LOCAL_LLM_PROBE_BUDGET_MS".into(),
            budget_ms.to_string().into(),
        ),
        ("LOCAL_LLM_PROBE_JOBS".into(), jobs.to_string().into()),
        (
            "LOCAL_LLM_PROBE_MEMORY_MB".into(),
            PROBE_MEMORY_MB.to_string().into(),
        ),
    ]
}

/// What one run of the prober says of its mutants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Each mutant's verdict (`Some(true)` passed), `None` for one it did not run.
    pub passed: Vec<Option<bool>>,
    /// Each mutant whose check still failed, but further on than the unmutated program's: in the same file (the
    /// test), at a later line. The first failing assertion passed, a later one did not.
    pub further: Vec<bool>,
}

/// Where one run of the check first failed: the test's place in the run (0 for a script, which stops at its first
/// uncaught exception), and the line and file of its last frame outside the selected files and the test runner.
struct Stop<'t> {
    step: usize,
    line: usize,
    file: &'t str,
}

impl Stop<'_> {
    /// Whether this run got further than `base`: every test `base` failed first now passes and a later one fails,
    /// or the same test (the same script) fails at a later line of the same file.
    fn beyond(&self, base: &Stop) -> bool {
        self.step > base.step
            || self.step == base.step && self.file == base.file && self.line > base.line
    }
}

/// What the prober wrote for `n` mutants ([`Outcomes`]); `None` when nothing it wrote is of the expected form (the
/// check never imported a selected file).
pub fn read(texts: &[String], n: usize) -> Option<Outcomes> {
    let mut out = vec![None; n];
    let mut any = false;
    // Where each run first failed (`at <index> <step> <line> <file>`; index -1: the unmutated program).
    let mut base: Option<Stop> = None;
    let mut stopped: Vec<(usize, Stop)> = Vec::new();
    for text in texts {
        let mut lines = text.lines();
        if lines.next() != Some("local-llm-probe 1") {
            continue;
        }
        any = true;
        for line in lines {
            if let Some(rest) = line.strip_prefix("at ") {
                let mut parts = rest.splitn(4, ' ');
                let (Some(index), Some(step), Some(at), Some(file)) =
                    (parts.next(), parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let (Ok(step), Ok(line)) = (step.parse::<usize>(), at.parse::<usize>()) else {
                    continue;
                };
                let stop = Stop { step, line, file };
                if index == "-1" {
                    base = Some(stop);
                } else if let Some(i) = index.parse::<usize>().ok().filter(|i| *i < n) {
                    stopped.push((i, stop));
                }
                continue;
            }
            let Some((index, verdict)) = line.split_once(' ') else {
                continue;
            };
            let Some(slot) = index.parse::<usize>().ok().and_then(|i| out.get_mut(i)) else {
                continue;
            };
            match verdict {
                "pass" => *slot = Some(true),
                "fail" | "time" => *slot = Some(false),
                _ => {}
            }
        }
    }
    let mut further = vec![false; n];
    if let Some(base) = base {
        for (i, stop) in stopped {
            further[i] = out[i] == Some(false) && stop.beyond(&base);
        }
    }
    any.then_some(Outcomes {
        passed: out,
        further,
    })
}

/// Runs the failing check once on many mutants (each a selected file's path and its whole text), stopping at the
/// first that passed unless told to run `every` one ([`encode`]): each one's verdict (`None` for one not run), or
/// `None` when the run could not say (the caller then runs one check a mutant).
pub type Many<'c> = dyn FnMut(&[(String, String)], bool) -> Option<Outcomes> + 'c;

/// The probe ([`probe`]) over every mutant it has, at most [`MAX_MUTANTS`], tried in ONE run of the check through
/// `many`, in the same order and with the same answer: the first of them that passed (one `many` did not reach in
/// its time counts as failed). Where `many` cannot say, the probe runs with `check`, one run a mutant, at most
/// `runs` of them.
pub fn probe_many(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    failing: &Failing,
    runs: usize,
    many: &mut Many<'_>,
    check: &mut Check<'_>,
) -> Probed {
    // Every mutant, in the order the probe tries them: none passes, so it goes through them all.
    let mut all: Vec<(String, String)> = Vec::new();
    probe(
        spec,
        files,
        focus,
        failing,
        MAX_MUTANTS,
        &mut |path, text| {
            all.push((path.to_string(), text.to_string()));
            Some(false)
        },
    );
    let (fixed, passed, further) = if all.is_empty() {
        (Vec::new(), Vec::new(), Vec::new())
    } else if let Some(outcomes) = many(&all, false) {
        let verdicts = outcomes.passed;
        let passed = passed_places(files, &all, &verdicts);
        // Not a number changed: a number fits one case by chance (`count=3` for `count=2`, `/ (len(xs) + 1)`).
        let further: Vec<bool> = all
            .iter()
            .zip(&outcomes.further)
            .map(|((path, text), f)| {
                *f && files
                    .get(path)
                    .and_then(Option::as_ref)
                    .is_some_and(|pre| numbers(&pre.text) == numbers(text))
            })
            .collect();
        let further = places_where(files, &all, &further);
        let fixed = match passed.first() {
            Some(first) => {
                // The line it inserted, or the line it changed to.
                let wrote = twins::passed_line(files, &all, &verdicts, first);
                let (added, changed) = if first.insert {
                    (wrote, None)
                } else {
                    (None, wrote)
                };
                let mut tried = twins::mutants(files, &all, &verdicts, first, (added, changed));
                let near = tried.len();
                // Then the rest, in the probe's order (`rest`).
                let rest = rest(&all, &verdicts, &tried, MAX_REST);
                tried.extend(rest);
                let second = if tried.is_empty() {
                    None
                } else {
                    many(&tried, true).map(|o| o.passed)
                };
                let (twins, others) = second.as_ref().map_or_else(Default::default, |v| {
                    let at = |from: usize, to: usize, max: usize, not: &[Fixed]| {
                        passed_places(files, &tried[from..to], &v[from..to])
                            .into_iter()
                            .filter(|p| p != first && !not.contains(p))
                            .take(max)
                            .collect::<Vec<_>>()
                    };
                    let twins = at(0, near, MAX_TWINS, &[]);
                    let others = at(near, tried.len(), MAX_OTHERS, &twins);
                    (twins, others)
                });
                let mut fixed = twins::ordered(files, first, (added, changed), twins);
                fixed.extend(others);
                let runs = [
                    (&all[..], &verdicts[..]),
                    (&tried[..], second.as_deref().unwrap_or(&[])),
                ];
                live_first(files, fixed, runs)
            }
            None => Vec::new(),
        };
        (fixed, passed, further)
    } else {
        let fixed = probe(spec, files, focus, failing, runs, check);
        (fixed.clone(), fixed, Vec::new())
    };
    Probed {
        fixed,
        passed,
        further,
        any: !all.is_empty(),
    }
}

/// The mutants of `all` the second run tries after those near the first pass (`tried`), in the probe's order,
/// each at most once: those the first run never reached (it stops at its first pass), and those past its first
/// pass that it reached and saw pass too. Two children run at once, so how far past its first pass the first run
/// got is timing; the window of `max` counts every mutant past it, run or not, so what is tried, and the places
/// found, are not.
fn rest(
    all: &[(String, String)],
    verdicts: &[Option<bool>],
    tried: &[(String, String)],
    max: usize,
) -> Vec<(String, String)> {
    let first = verdicts.iter().position(|v| *v == Some(true));
    all.iter()
        .zip(verdicts)
        .enumerate()
        .filter(|(k, (m, v))| {
            let past = first.is_some_and(|f| *k > f);
            (past || v.is_none()) && !tried.contains(m)
        })
        .take(max)
        .filter(|(_, (_, v))| **v != Some(false))
        .map(|(_, (m, _))| m.clone())
        .collect()
}

/// One run of the prober: the mutants it was handed and its verdicts on them.
type Run<'a> = (&'a [(String, String)], &'a [Option<bool>]);

/// The places where a mutant passed, `fixed`, with the first whose mutant is no workaround moved before a first
/// that is: one that leaves a local of its function never read (`for r in records` where `rows =
/// sorted(records)` was read), or that turns an order round (`sorted(bank, reverse=True)`, so the last match a
/// loop keeps is the lowest) where a place further on passed too (the `break` the loop lacks, `dates[0]` read),
/// other than a slice of the first few taken from the other end (`scores[-3:]`, [`twins::slice_mirrored`]).
/// `runs`: the two runs' mutants and verdicts, where each place's mutant is found.
fn live_first(
    files: &BTreeMap<String, Option<PreImage>>,
    mut fixed: Vec<Fixed>,
    runs: [Run<'_>; 2],
) -> Vec<Fixed> {
    // What each place's first passing mutant did: left a local unread, turned an order round, or took a slice
    // from the other end (`scores[-3:]` for `scores[:3]`).
    let workaround = |f: &Fixed| {
        let before = files.get(&f.path).and_then(Option::as_ref);
        let text = runs
            .iter()
            .find_map(|(list, v)| twins::passed_text(files, list, v, f));
        match (before, text) {
            (Some(pre), Some(text)) => (
                twins::leaves_unread(&pre.text, text),
                twins::order_turned(&pre.text, text),
                twins::slice_mirrored(&pre.text, text),
            ),
            _ => (false, false, false),
        }
    };
    let Some(first) = fixed.first().cloned() else {
        return fixed;
    };
    let (dead, turned, _) = workaround(&first);
    // An order turned round gives way only to a place further on in its file, where the order is read; not to a
    // slice of the first few taken from the other end, the same fix read the other way (`sorted(...,
    // reverse=True)` then `[:3]` is how the best three are written).
    let live = |f: &Fixed| {
        let (d, t, m) = workaround(f);
        !d && !t && (dead || (f.path == first.path && f.line > first.line && !m))
    };
    if (dead || turned)
        && let Some(k) = fixed.iter().position(live)
    {
        let live = fixed.remove(k);
        fixed.insert(0, live);
    }
    fixed
}

/// The numbers a text writes, in order (`3`, `0.5`, `1e3`): what a mutant that changes none of them leaves alone.
fn numbers(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

/// Every place a mutant of `all` passed at by its `verdicts`, in the order the probe wrote them, each read off the
/// change it made.
fn passed_places(
    files: &BTreeMap<String, Option<PreImage>>,
    all: &[(String, String)],
    verdicts: &[Option<bool>],
) -> Vec<Fixed> {
    let passed: Vec<bool> = verdicts.iter().map(|v| *v == Some(true)).collect();
    places_where(files, all, &passed)
}

/// Every place a mutant of `all` marked in `marked` changed, in the order the probe wrote them, each read off the
/// change it made, once.
fn places_where(
    files: &BTreeMap<String, Option<PreImage>>,
    all: &[(String, String)],
    marked: &[bool],
) -> Vec<Fixed> {
    let mut passed: Vec<Fixed> = Vec::new();
    for ((path, text), _) in all.iter().zip(marked).filter(|(_, m)| **m) {
        let Some(Some(pre)) = files.get(path) else {
            continue;
        };
        let Some((line, insert)) = place_of(&pre.text, text) else {
            continue;
        };
        let place = Fixed {
            path: path.clone(),
            line,
            insert,
        };
        if !passed.contains(&place) {
            passed.push(place);
        }
    }
    passed
}

/// What [`probe_many`] found: the places where a mutant passed, and whether it had any mutant to run (with no
/// place, none of them passed: [`Failing::probed`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probed {
    /// The place where the first mutant that passed changed a file (none when none passed), then at most
    /// [`MAX_TWINS`] places next to it where a mutant passed too, in the order they rank (`twins::ordered`), then
    /// at most [`MAX_OTHERS`] places elsewhere where one of the mutants the first run never reached passed.
    pub fixed: Vec<Fixed>,
    /// The places the first run found a pass at, in the probe's order: it stops at the first pass, so mostly one
    /// (children already running when it passed may pass too).
    pub passed: Vec<Fixed>,
    /// The places where a mutant of the first run got the check further on without passing ([`Outcomes::further`]),
    /// in the probe's order.
    pub further: Vec<Fixed>,
    /// The probe had at least one mutant to run.
    pub any: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selection of one Python file, `m.py`, holding `text`.
    fn one_file(text: &str) -> BTreeMap<String, Option<PreImage>> {
        [(
            "m.py".to_string(),
            Some(PreImage {
                text: text.into(),
                mode: crate::patch::MODE_REGULAR,
            }),
        )]
        .into()
    }

    #[test]
    fn the_mutants_are_written_length_first_and_the_verdicts_read_only_in_their_form() {
        let bytes = encode(
            &[("/c/a.py".into(), "x = 1\n"), ("/c/b é.py".into(), "")],
            false,
        );
        assert_eq!(
            bytes,
            "local-llm-probe 1\n7 6\n/c/a.pyx = 1\n10 0\n/c/b é.py".as_bytes()
        );
        let wrote =
            ["local-llm-probe 1\n0 fail\n2 pass\n1 time\n9 pass\nx y\n3 maybe\n".to_string()];
        let got = read(&wrote, 4).expect("of its form");
        assert_eq!(got.passed, [Some(false), Some(false), Some(true), None]);
        // No place the unmutated program failed at: nothing is further.
        assert_eq!(got.further, [false; 4]);
        // Further: failed later in the same file as the unmutated program. Not: earlier, another file, a pass, a
        // place of another form, an index out of range.
        let wrote = [
            "local-llm-probe 1\n0 fail\n1 fail\n2 fail\n3 pass\n4 fail\n5 fail\n".to_string()
                + "at -1 0 7 /c/t a.py\nat 0 0 9 /c/t a.py\nat 1 0 5 /c/t a.py\nat 2 0 9 /c/b.py\n"
                + "at 3 0 9 /c/t a.py\nat 4 0 x /c/t a.py\nat 5 0 8\nat 99 0 9 /c/t a.py\n",
        ];
        let got = read(&wrote, 6).expect("of its form");
        assert_eq!(got.further, [true, false, false, false, false, false]);
        // Under a test runner: the first failing test's place in the run counts first. Further: a later test, in any
        // file or at any line; the same test at a later line. Not: an earlier test (it broke one that passed), the
        // same test at an earlier line, a step that is no number.
        let wrote = [
            "local-llm-probe 1\n0 fail\n1 fail\n2 fail\n3 fail\n4 fail\n".to_string()
                + "at -1 3 20 /c/test_a.py\nat 0 4 2 /c/test_b.py\nat 1 3 25 /c/test_a.py\n"
                + "at 2 2 40 /c/test_a.py\nat 3 3 19 /c/test_a.py\nat 4 x 30 /c/test_a.py\n",
        ];
        let got = read(&wrote, 5).expect("of its form");
        assert_eq!(got.further, [true, true, false, false, false]);
        // Nothing of its form: the run could not say.
        assert_eq!(read(&["ok\n0 pass\n".to_string()], 1), None);
        assert_eq!(read(&[], 1), None);
    }

    #[test]
    fn a_mutant_that_got_further_counts_unless_it_changed_a_number() {
        assert_eq!(numbers("x = 3\ny = a1 + 0.5 * 1e3\n"), ["3", "0.5", "1e3"]);
        let text =
            "def next_stops(i, count):\n    step = 1\n    return ROUTE[i + step:i + count]\n";
        let files = one_file(text);
        let spec = Task {
            task: "next_stops returns one stop fewer than asked".into(),
            ..Task::default()
        };
        // A scripted check: nothing passes; every mutant gets further.
        let mut many = |mutants: &[(String, String)], _: bool| {
            Some(Outcomes {
                passed: vec![Some(false); mutants.len()],
                further: vec![true; mutants.len()],
            })
        };
        let mut one = |_: &str, _: &str| -> Option<bool> { panic!("the batch said") };
        let found = probe_many(
            &spec,
            &files,
            &Focus::new(),
            &Failing::default(),
            64,
            &mut many,
            &mut one,
        );
        assert!(found.fixed.is_empty());
        // A number changed on line 2 (`step = 2`): not further; an operator changed on line 3: further.
        let changed = |line| found.further.iter().any(|f| f.line == line && !f.insert);
        assert!(!changed(2) && changed(3), "{:?}", found.further);
    }

    #[test]
    fn the_rest_tried_again_does_not_hang_on_how_far_the_first_run_got_past_its_first_pass() {
        let all: Vec<(String, String)> = (0..7).map(|k| ("m.py".into(), k.to_string())).collect();
        let tried = [all[2].clone()];
        let texts = |r: Vec<(String, String)>| r.into_iter().map(|(_, t)| t).collect::<Vec<_>>();
        // 0 was never reached in its time; 1 passed first; 2 is its twin, tried already.
        let stopped = [None, Some(true), None, None, None, None, None];
        assert_eq!(texts(rest(&all, &stopped, &tried, 3)), ["0", "3", "4"]);
        // The first run got past its first pass: 3 passed too and 4 failed. 3 is tried again, 4 is not, and the
        // window still ends at 4, not at 5.
        let further = [
            None,
            Some(true),
            Some(false),
            Some(true),
            Some(false),
            None,
            None,
        ];
        assert_eq!(texts(rest(&all, &further, &tried, 3)), ["0", "3"]);
        // Nothing passed: only what was never reached.
        let none = [Some(false), None, Some(false), None, None, None, None];
        assert_eq!(texts(rest(&all, &none, &[], 2)), ["1", "3"]);
    }

    #[test]
    fn after_the_first_pass_one_more_run_tries_every_mutant_next_to_it_then_the_rest_and_ranks_those_that_pass_too()
     {
        let text = "def average(scores):\n    total = 0\n    count = 0\n    for s in scores:\n        if s is None:\n            continue\n        total += s\n    return total / count\n";
        let files = one_file(text);
        let insert = |after: usize| {
            super::super::insertions::with_inserted(text, after, "        count += 1")
        };
        let passing = [insert(6), insert(7)];
        let spec = Task {
            task: "average([80, None, 90]) raises ZeroDivisionError instead of returning 85.0"
                .into(),
            ..Task::default()
        };
        let mut runs: Vec<(usize, bool)> = Vec::new();
        // A scripted check: the two texts that count pass; the first run stops at its first pass, as the prober does.
        let mut many = |mutants: &[(String, String)], every: bool| {
            runs.push((mutants.len(), every));
            let mut verdicts = Vec::new();
            let mut stopped = false;
            for (_, t) in mutants {
                // And any change of `count = 0`, far from them, which the first run did not reach in its time.
                let elsewhere = t.lines().count() == text.lines().count()
                    && t.lines().nth(2) != text.lines().nth(2);
                let pass = passing.contains(t) || elsewhere;
                let reached = !stopped && (every || !elsewhere);
                verdicts.push(reached.then_some(pass));
                stopped |= reached && pass && !every;
            }
            Some(Outcomes {
                further: vec![false; verdicts.len()],
                passed: verdicts,
            })
        };
        let mut one = |_: &str, _: &str| -> Option<bool> { panic!("the batch said") };
        let mut probed = |many: &mut Many<'_>| {
            probe_many(
                &spec,
                &files,
                &Focus::new(),
                &Failing::default(),
                64,
                many,
                &mut one,
            )
        };
        let found = probed(&mut many);
        let at = |line| Fixed {
            path: "m.py".into(),
            line,
            insert: true,
        };
        assert_eq!(runs.len(), 2, "{runs:?}");
        assert!(!runs[0].1 && runs[1].1, "{runs:?}");
        // One of the two passed first; the other is its twin, and `total` was started first: its update first.
        // Then the place elsewhere where a mutant the first run never reached passed too.
        assert_eq!(found.passed.len(), 1);
        let changed = Fixed {
            insert: false,
            ..at(3)
        };
        assert_eq!(found.fixed, [at(7), at(6), changed]);
        // Nothing passed: no second run.
        runs.clear();
        let mut none = |mutants: &[(String, String)], every: bool| {
            runs.push((mutants.len(), every));
            Some(Outcomes {
                passed: vec![Some(false); mutants.len()],
                further: vec![false; mutants.len()],
            })
        };
        let found = probed(&mut none);
        assert!(found.fixed.is_empty() && found.any);
        assert_eq!(runs.len(), 1);
    }
}
