//! Speed and growth of the tolerant reader: [`patch::changes_from_answer`] (read the answer, locate every hunk,
//! build the post-image), in process, on generated answers (a benchmark, not a test: it asserts nothing about
//! timings; it does check that every case gives the expected result or refusal).
//!
//! Every series doubles its size step by step and prints the median time, its spread, and the growth factor from one
//! size to the next: about 2 per doubling is linear, about 4 is quadratic. The exponent is
//! `log(t_last / t_first) / log(size_last / size_first)`.
//!
//! - A. A unified diff of H hunks (3 context lines, 1 removed, 1 added, 3 context) against an N-line file, with the
//!   answer and the file growing together (H = N / 100, up to the headline case of 200 hunks against 20,000 lines
//!   and one step beyond), matched at three tiers: exact; indentation (tabs in the answer, spaces in the file);
//!   Unicode punctuation (curly quotes in the answer, straight quotes in the file).
//! - B. N identical lines and a 2-line hunk that matches N - 1 places: refused as ambiguous without a line number;
//!   placed by its line number (a tie-break) with one.
//! - C. One hunk of K context lines around one change, against a 20,000-line file: with the ` ` prefix; and with the
//!   prefix lost on every context line (the model wrote bare lines).
//! - D. Both at once: N identical lines and a hunk of N / 2 of them (matches N / 2 + 1 places: refused).
//! - E. The whole pure pipeline of a propose for H hunks, H = 1,000, 10,000 and 100,000 (one every 10 lines of a
//!   10 H-line file): read the answer, place every hunk, build the post-image, render the canonical patch, parse it
//!   back and apply it to the pre-image (the dry run's pure part), the result checked against the expected file.
//! - F. An answer of S file sections, each naming another file (S = 37,500 to 300,000: 2.0 to 16.2 MB, under the
//!   16 MiB cap on answers): refused as naming more than 1,000 files.
//!
//! Run it with:
//!
//! ```text
//! cargo bench --locked --bench reader
//! ```
//!
//! `READER_CASES=AC` runs only the cases named (letters A to F), e.g. under a profiler.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{Stats, fmt};
use local_llm_delegator::patch::reader::AnswerFormat;
use local_llm_delegator::patch::{self, FileChange, MODE_REGULAR, MatchTier, PreImage, canonical};

const PATH: &str = "src/big.rs";
/// Each size is timed at least this many times, and for at least [`MIN_TIME`] in all (at most [`MAX_RUNS`] times).
const MIN_RUNS: usize = 5;
const MAX_RUNS: usize = 41;
const MIN_TIME: Duration = Duration::from_millis(400);

type Outcome = Result<Vec<FileChange>, String>;
type Case = fn() -> Result<(), String>;

fn main() -> ExitCode {
    common::print_machine("tolerant reader benchmark (in process, times in ms)");
    println!(
        "  runs     at least {MIN_RUNS} per size and {} ms in all, at most {MAX_RUNS}; 1 warmup",
        MIN_TIME.as_millis()
    );
    println!();
    match run() {
        Ok(()) => {
            println!();
            println!("  load     {} (1, 5, 15 min) at end", common::loadavg());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn pre_images(text: String) -> BTreeMap<String, Option<PreImage>> {
    BTreeMap::from([(
        PATH.to_string(),
        Some(PreImage {
            text,
            mode: MODE_REGULAR,
        }),
    )])
}

/// Time `f` (after one warmup whose outcome is checked by `check`).
fn time(
    f: impl Fn() -> Outcome,
    check: impl Fn(&Outcome) -> Result<(), String>,
) -> Result<Stats, String> {
    let first = f();
    check(&first)?;
    let mut samples = Vec::new();
    let began = Instant::now();
    while samples.len() < MAX_RUNS && (samples.len() < MIN_RUNS || began.elapsed() < MIN_TIME) {
        let start = Instant::now();
        let out = black_box(f());
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
        drop(out);
    }
    Ok(Stats::of(&samples))
}

/// Print a series: one row per size with its growth factor from the previous size, then the overall exponent.
fn series(title: &str, unit: &str, sizes: &[usize], stats: &[Stats]) {
    println!("   {title}");
    println!(
        "   {:>12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>5}{:>10}",
        unit, "median", "min", "p10", "p90", "max", "n", "growth"
    );
    for (k, (size, s)) in sizes.iter().zip(stats).enumerate() {
        let growth = if k == 0 {
            String::new()
        } else {
            format!("x{:.2}", s.median / stats[k - 1].median)
        };
        println!(
            "   {:>12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>5}{:>10}",
            size,
            fmt(s.median),
            fmt(s.min),
            fmt(s.p10),
            fmt(s.p90),
            fmt(s.max),
            s.n,
            growth
        );
    }
    let (first, last) = (stats[0].median, stats[stats.len() - 1].median);
    let ratio = sizes[sizes.len() - 1] as f64 / sizes[0] as f64;
    println!(
        "   exponent of the growth: {:.2} (1 = linear, 2 = quadratic)",
        (last / first).ln() / ratio.ln()
    );
}

fn expect_ok(hunks: usize, tier: MatchTier) -> impl Fn(&Outcome) -> Result<(), String> {
    move |o: &Outcome| match o {
        Ok(changes) if changes.len() == 1 && changes[0].hunks.len() == hunks => {
            match changes[0].hunks.iter().find(|h| h.tier != tier) {
                None => Ok(()),
                Some(h) => Err(format!(
                    "a hunk was placed at tier {:?}, not {tier:?}",
                    h.tier
                )),
            }
        }
        Ok(changes) => Err(format!(
            "expected {hunks} hunks in one file, got {:?}",
            changes.iter().map(|c| c.hunks.len()).collect::<Vec<_>>()
        )),
        Err(e) => Err(format!("expected a change, got a refusal: {e}")),
    }
}

fn expect_refusal(needle: &'static str) -> impl Fn(&Outcome) -> Result<(), String> {
    move |o: &Outcome| match o {
        Err(e) if e.contains(needle) => Ok(()),
        Err(e) => Err(format!("refused for another reason: {e}")),
        Ok(_) => Err(format!("expected a refusal ({needle}), got a change")),
    }
}

fn run_answer(answer: &str, pre: &BTreeMap<String, Option<PreImage>>) -> Outcome {
    patch::changes_from_answer(answer, AnswerFormat::Udiff, pre).map_err(|e| e.to_string())
}

fn run() -> Result<(), String> {
    let only = std::env::var("READER_CASES").unwrap_or_else(|_| "ABCDEF".into());
    let cases: [(char, Case); 6] = [
        ('A', many_hunks),
        ('B', identical_lines),
        ('C', long_hunk),
        ('D', identical_long_hunk),
        ('E', whole_pipeline),
        ('F', many_sections),
    ];
    let mut first = true;
    for (letter, case) in cases {
        if only.to_ascii_uppercase().contains(letter) {
            if !first {
                println!();
            }
            first = false;
            case()?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// A. Many hunks against a long file

#[derive(Clone, Copy)]
enum Drift {
    None,
    Tabs,
    CurlyQuotes,
}

fn file_line(i: usize) -> String {
    format!("    let v{i} = compute({i}, \"s{i}\");")
}

/// The answer's rendering of a file line under `drift`.
fn drifted(line: &str, drift: Drift) -> String {
    match drift {
        Drift::None => line.to_string(),
        Drift::Tabs => format!("\t{}", line.trim_start()),
        Drift::CurlyQuotes => {
            let mut out = String::new();
            let mut open = true;
            for c in line.chars() {
                if c == '"' {
                    out.push(if open { '\u{201c}' } else { '\u{201d}' });
                    open = !open;
                } else {
                    out.push(c);
                }
            }
            out
        }
    }
}

/// An N-line file and an H-hunk diff against it; returns (file, answer, expected post-image).
fn many_hunks_case(lines: usize, hunks: usize, drift: Drift) -> (String, String, String) {
    let file: Vec<String> = (0..lines).map(file_line).collect();
    let mut post = file.clone();
    let mut answer = format!("```diff\n--- a/{PATH}\n+++ b/{PATH}\n");
    let spacing = lines / hunks;
    for h in 0..hunks {
        let p = h * spacing + spacing / 2;
        let new = format!("    let v{p} = compute({p}, \"t{p}\");");
        answer.push_str(&format!("@@ -{},7 +{},7 @@\n", p - 2, p - 2));
        for line in &file[p - 3..p] {
            answer.push_str(&format!(" {}\n", drifted(line, drift)));
        }
        answer.push_str(&format!("-{}\n", drifted(&file[p], drift)));
        answer.push_str(&format!("+{}\n", drifted(&new, drift)));
        for line in &file[p + 1..p + 4] {
            answer.push_str(&format!(" {}\n", drifted(line, drift)));
        }
        post[p] = new;
    }
    answer.push_str("```\n");
    let join = |v: &[String]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    (join(&file), answer, join(&post))
}

fn many_hunks() -> Result<(), String> {
    println!(
        "A. H hunks against an N-line file, H = N / 100, both doubling (headline: 200 hunks, 20,000 lines)"
    );
    let sizes = [2_500, 5_000, 10_000, 20_000, 40_000];
    for (drift, tier, name) in [
        (Drift::None, MatchTier::Exact, "exact"),
        (
            Drift::Tabs,
            MatchTier::Indentation,
            "indentation (tabs in the answer)",
        ),
        (
            Drift::CurlyQuotes,
            MatchTier::UnicodeFolded,
            "Unicode punctuation (curly quotes in the answer)",
        ),
    ] {
        let mut stats = Vec::new();
        for &n in &sizes {
            let hunks = n / 100;
            let (file, answer, post) = many_hunks_case(n, hunks, drift);
            let pre = pre_images(file);
            let ok = expect_ok(hunks, tier);
            let check = |o: &Outcome| {
                ok(o)?;
                if matches!(drift, Drift::None | Drift::CurlyQuotes)
                    && o.as_ref().is_ok_and(|c| c[0].post != post.as_bytes())
                {
                    return Err("the post-image is not the expected file".into());
                }
                Ok(())
            };
            stats.push(time(|| run_answer(&answer, &pre), check)?);
        }
        series(
            &format!("tier {name}: N lines (H = N / 100 hunks)"),
            "N lines",
            &sizes,
            &stats,
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// B. Identical lines

fn identical_lines() -> Result<(), String> {
    println!("B. N identical lines, a 2-line hunk matching N - 1 places");
    let sizes = [1_250, 2_500, 5_000, 10_000, 20_000];
    let line = "    x += 1;";
    for (hinted, name) in [
        (false, "no line number: refused as ambiguous"),
        (true, "a line number: placed by the tie-break"),
    ] {
        let mut stats = Vec::new();
        for &n in &sizes {
            let file = format!("{line}\n").repeat(n);
            let at = n / 2;
            let header = if hinted {
                format!("@@ -{at},2 +{at},2 @@")
            } else {
                "@@ @@".to_string()
            };
            let answer =
                format!("--- a/{PATH}\n+++ b/{PATH}\n{header}\n {line}\n-{line}\n+    x += 2;\n");
            let pre = pre_images(file);
            let stat = if hinted {
                time(|| run_answer(&answer, &pre), expect_ok(1, MatchTier::Exact))?
            } else {
                time(
                    || run_answer(&answer, &pre),
                    expect_refusal("so where it belongs is ambiguous"),
                )?
            };
            stats.push(stat);
        }
        series(name, "N lines", &sizes, &stats);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// C. One long hunk

fn long_hunk() -> Result<(), String> {
    const LINES: usize = 20_000;
    println!("C. One hunk of K context lines and one change, against a {LINES}-line file");
    let sizes = [625, 1_250, 2_500, 5_000, 10_000];
    let file: Vec<String> = (0..LINES).map(|i| format!("let a{i} = {i};")).collect();
    let text: String = file.iter().map(|l| format!("{l}\n")).collect();
    let pre = pre_images(text);
    for (prefixed, name) in [
        (
            true,
            "context lines with their ` ` prefix (K / 2 before, K / 2 after)",
        ),
        (
            false,
            "context lines that lost their ` ` prefix (K before the change)",
        ),
    ] {
        let mut stats = Vec::new();
        for &k in &sizes {
            let (before, after) = if prefixed { (k / 2, k - k / 2) } else { (k, 0) };
            let p = 5_000 + before.min(5_000);
            let mut answer = format!("--- a/{PATH}\n+++ b/{PATH}\n@@ -1,1 +1,1 @@\n");
            for l in &file[p - before..p] {
                answer.push_str(if prefixed { " " } else { "" });
                answer.push_str(l);
                answer.push('\n');
            }
            answer.push_str(&format!("-{}\n+let a{p} = 0;\n", file[p]));
            for l in &file[p + 1..p + 1 + after] {
                answer.push_str(&format!(" {l}\n"));
            }
            stats.push(time(
                || run_answer(&answer, &pre),
                expect_ok(1, MatchTier::Exact),
            )?);
        }
        series(name, "K context", &sizes, &stats);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// D. A long hunk of identical lines against identical lines

fn identical_long_hunk() -> Result<(), String> {
    println!(
        "D. N identical lines and a hunk of N / 2 of them plus one change (matches N / 2 + 1 places)"
    );
    let sizes = [1_250, 2_500, 5_000, 10_000];
    let line = "    x += 1;";
    let mut stats = Vec::new();
    for &n in &sizes {
        let file = format!("{line}\n").repeat(n);
        let mut answer = format!("--- a/{PATH}\n+++ b/{PATH}\n@@ @@\n");
        answer.push_str(&format!(" {line}\n").repeat(n / 2));
        answer.push_str(&format!("-{line}\n+    x += 2;\n"));
        let pre = pre_images(file);
        stats.push(time(
            || run_answer(&answer, &pre),
            expect_refusal("so where it belongs is ambiguous"),
        )?);
    }
    series(
        "refused as ambiguous (the headline: 10,000 lines, a hunk of 5,000)",
        "N lines",
        &sizes,
        &stats,
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// E. The whole pure pipeline, up to 100,000 hunks

/// Read, locate, render the canonical patch, parse it and apply it back: the pure work of one propose.
fn pipeline(answer: &str, pre: &BTreeMap<String, Option<PreImage>>) -> Outcome {
    let changes = run_answer(answer, pre)?;
    let bytes = canonical::render(&changes);
    for f in canonical::parse(&bytes).map_err(|e| e.to_string())? {
        let current = pre[&f.path].as_ref().map(|p| p.text.as_bytes());
        let post = canonical::apply_file(&f, current).map_err(|e| e.to_string())?;
        black_box(post);
    }
    Ok(changes)
}

fn whole_pipeline() -> Result<(), String> {
    println!(
        "E. H hunks through the whole pure pipeline (read, locate, render, canonical patch parsed and applied back)"
    );
    let sizes = [1_000, 10_000, 100_000];
    let mut stats = Vec::new();
    for &hunks in &sizes {
        let (file, answer, post) = many_hunks_case(hunks * 10, hunks, Drift::None);
        let pre = pre_images(file);
        let ok = expect_ok(hunks, MatchTier::Exact);
        let check = |o: &Outcome| {
            ok(o)?;
            match o {
                Ok(c) if c[0].post != post.as_bytes() => {
                    Err("the post-image is not the expected file".into())
                }
                _ => Ok(()),
            }
        };
        stats.push(time(|| pipeline(&answer, &pre), check)?);
    }
    series(
        "one file of 10 H lines, a hunk every 10 lines (the headline: 100,000 hunks)",
        "H hunks",
        &sizes,
        &stats,
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// F. Many file sections

fn many_sections() -> Result<(), String> {
    println!(
        "F. An answer of S file sections, each naming another file (refused at the cap of 1,000 files)"
    );
    let sizes = [37_500, 75_000, 150_000, 300_000];
    let pre = pre_images("x = 1\n".into());
    let mut stats = Vec::new();
    for &sections in &sizes {
        let answer: String = (0..sections)
            .map(|i| format!("--- a/src/f{i:06}.py\n+++ b/src/f{i:06}.py\n@@ @@\n-x\n+y\n"))
            .collect();
        stats.push(time(
            || run_answer(&answer, &pre),
            expect_refusal("different files"),
        )?);
    }
    series(
        "S sections (300,000: 16.2 MB)",
        "S sections",
        &sizes,
        &stats,
    );
    Ok(())
}
