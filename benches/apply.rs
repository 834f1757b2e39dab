//! Apply of canonical patches: `local-llm-worker apply` against `git apply` of the same patch on the same tree, side
//! by side in the same run (a benchmark, not a test: it asserts nothing about timings; it does check every result).
//!
//! Two patches, rendered with the library (`patch::canonical::render` over `FileChange`s, exactly as `propose`
//! renders them) against generated Rust files of 1,000 lines each in a git repository:
//!
//! - 1 file with 10 hunks;
//! - 50 files with 500 hunks in total (10 per file).
//!
//! Every run gets a fresh copy of the tree (`cp -a`, then `sync` so that neither tool pays for the copy's
//! write-back), outside the timing; the series rotate which goes first. Timed: the wall time from spawn to
//! exit, and the CPU time (user + system) of the process from `getrusage(RUSAGE_CHILDREN)`. Every run's files are
//! compared with the intended post-images afterwards.
//!
//! When libeatmydata is installed (`apt-get install eatmydata`), a third series runs `local-llm-worker apply` with
//! it preloaded, fsync then doing nothing: not a way to run it, a measure of what its durability costs.
//!
//! A fourth series is the way hosts apply: `tools/call apply_patch` through one warm `local-llm-worker mcp` server
//! (started once per case). Before each timed call, untimed, the fresh tree gets a `propose_patch` answered by an
//! instant scripted endpoint (127.0.0.1) whose answer is the canonical patch itself, and the bench checks that the
//! proposal's digest is the patch's. Timed: the `apply_patch` round trip, and the server's CPU time over it (the sum
//! of `/proc/PID/task/*/schedstat` of its threads).
//!
//! The pure part of ours (`canonical::parse` and `canonical::apply_file` of every file, with their blob-id checks) is
//! also timed in process, to tell computation from I/O.
//!
//! `local-llm-worker apply --workspace-root DIR --patch FILE --digest HEX` runs with the tree's policy file
//! (`[paths] allowed = ["src/**"]`, `max_files_per_patch = 100`, `max_hunks_per_patch = 1000`, a context window
//! large enough for 50 files, the scripted endpoint as provider), no validation commands, its ledger in a scratch
//! folder. `git apply FILE` runs in DIR. Every apply of ours is durable (journal and files flushed).
//!
//! Run it with:
//!
//! ```text
//! cargo build --release --locked && cargo bench --locked --bench apply
//! ```
//!
//! `APPLY_RUNS` overrides the number of measured runs (30) after 3 warmups. `APPLY_KEEP=1` keeps the scratch folder
//! (the trees `tree-1`, `tree-50`, their patches `patch-1.diff`, `patch-50.diff` and `digests.txt`) for profiling.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use common::mcp::Mcp;
use common::{Stats, children_cpu_ms, ms_since, start_endpoint, stats_header, stats_row};
use local_llm_delegator::digest::{git_blob_id, sha256_hex};
use local_llm_delegator::patch::{FileChange, MODE_REGULAR, canonical};
use serde_json::json;

const WARMUPS: usize = 3;
const DEFAULT_RUNS: usize = 30;
const FILE_LINES: usize = 1_000;

type BenchResult<T> = Result<T, String>;

fn main() -> ExitCode {
    common::main_with(run)
}

/// A tree, its patch and the intended result.
struct Case {
    name: &'static str,
    template: PathBuf,
    patch: PathBuf,
    digest: String,
    posts: Vec<(String, Vec<u8>)>,
    /// The pre-images, for the in-process part.
    pres: Vec<Vec<u8>>,
    hunks: usize,
    bytes: usize,
}

fn sh(cmd: &mut Command) -> BenchResult<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn line(file: usize, i: usize, changed: bool) -> String {
    if i % 25 == 7 {
        return "\n".to_string();
    }
    let body = if changed {
        format!("{i} * 2 + 1")
    } else {
        format!("{i} * 2")
    };
    format!("    pub fn item_{file}_{i}(&self) -> u64 {{ self.base + {body} }}\n")
}

/// The trees' policy file; with `port`, the provider is the scripted endpoint on 127.0.0.1 (for the MCP series).
fn policy(port: Option<u16>) -> String {
    let provider = match port {
        Some(p) => format!("kind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:{p}/v1\"\n"),
        None => "kind = \"llamacpp\"\n".to_string(),
    };
    format!(
        "[provider]\n{provider}\n[models]\ncontext_window = 100000000\n\n[paths]\nallowed = [\"src/**\"]\n\n[limits]\n\
         max_files_per_patch = 100\nmax_hunks_per_patch = 1000\nmax_patch_bytes = 10000000\n"
    )
}

/// Build the tree (a git repository with one commit), the patch and the expected post-images.
fn build_case(
    name: &'static str,
    scratch: &Path,
    files: usize,
    hunks_per_file: usize,
) -> BenchResult<Case> {
    let io = |e: std::io::Error| format!("building {name}: {e}");
    let template = scratch.join(format!("tree-{files}"));
    std::fs::create_dir_all(template.join("src")).map_err(io)?;
    let mut changes = Vec::new();
    for f in 0..files {
        let path = format!("src/m{f:02}.rs");
        let mut pre = String::from("pub struct S { base: u64 }\n\nimpl S {\n");
        let mut post = pre.clone();
        let spacing = FILE_LINES / hunks_per_file;
        for i in 0..FILE_LINES {
            // One changed line in the middle of every `spacing` lines: hunks far enough apart to stay separate.
            let changed = i % spacing == spacing / 2;
            pre.push_str(&line(f, i, false));
            post.push_str(&line(f, i, changed));
        }
        pre.push_str("}\n");
        post.push_str("}\n");
        std::fs::write(template.join(&path), &pre).map_err(io)?;
        changes.push(FileChange {
            path,
            pre: Some(pre.into_bytes()),
            post: post.into_bytes(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: Default::default(),
        });
    }
    std::fs::write(template.join("local-llm-worker.toml"), policy(None)).map_err(io)?;
    sh(Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&template))?;
    sh(Command::new("git")
        .args(["add", "-A"])
        .current_dir(&template))?;
    sh(Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "tree",
        ])
        .current_dir(&template))?;
    let bytes = canonical::render(&changes);
    let hunks = String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| l.starts_with("@@ "))
        .count();
    if hunks != files * hunks_per_file {
        return Err(format!(
            "{name}: the patch has {hunks} hunks, not {}",
            files * hunks_per_file
        ));
    }
    let patch = scratch.join(format!("patch-{files}.diff"));
    std::fs::write(&patch, &bytes).map_err(io)?;
    Ok(Case {
        name,
        template,
        patch,
        digest: sha256_hex(&bytes),
        pres: changes.iter().filter_map(|c| c.pre.clone()).collect(),
        posts: changes.into_iter().map(|c| (c.path, c.post)).collect(),
        hunks,
        bytes: bytes.len(),
    })
}

/// Run `cmd` to completion: (wall ms, CPU ms).
fn timed(cmd: &mut Command) -> BenchResult<(f64, f64)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cpu0 = children_cpu_ms();
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let wall = ms_since(start);
    let cpu = children_cpu_ms() - cpu0;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok((wall, cpu))
}

/// A fresh copy of the case's tree, flushed to disk.
fn fresh_copy(case: &Case, dst: &Path) -> BenchResult<()> {
    if dst.exists() {
        std::fs::remove_dir_all(dst).map_err(|e| format!("removing {}: {e}", dst.display()))?;
    }
    sh(Command::new("cp").arg("-a").arg(&case.template).arg(dst))?;
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    Ok(())
}

/// The pure part of an apply, in process and without I/O: (parse + apply of every file with its two blob-id checks,
/// the blob ids alone), median ms of `runs` runs.
fn pure_part(case: &Case, runs: usize) -> BenchResult<(Stats, Stats)> {
    let bytes = std::fs::read(&case.patch).map_err(|e| format!("reading the patch: {e}"))?;
    let (mut all, mut ids) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let start = Instant::now();
        let files = canonical::parse(&bytes).map_err(|e| e.to_string())?;
        for (f, pre) in files.iter().zip(&case.pres) {
            black_box(canonical::apply_file(f, Some(pre)).map_err(|e| e.to_string())?);
        }
        all.push(ms_since(start));
        let start = Instant::now();
        for (pre, (_, post)) in case.pres.iter().zip(&case.posts) {
            black_box((git_blob_id(pre), git_blob_id(post)));
        }
        ids.push(ms_since(start));
    }
    Ok((Stats::of(&all), Stats::of(&ids)))
}

fn check_result(case: &Case, dir: &Path, who: &str) -> BenchResult<()> {
    for (path, post) in &case.posts {
        let got = std::fs::read(dir.join(path)).map_err(|e| format!("reading {path}: {e}"))?;
        if &got != post {
            return Err(format!(
                "{who} on {}: {path} is not the intended post-image",
                case.name
            ));
        }
    }
    Ok(())
}

struct Env {
    bin: PathBuf,
    ledger: PathBuf,
    runs: usize,
    /// libeatmydata, when installed.
    nosync: Option<PathBuf>,
}

/// Where libeatmydata (which turns fsync into a no-op) may be installed.
const EATMYDATA: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libeatmydata.so",
    "/usr/lib/aarch64-linux-gnu/libeatmydata.so",
    "/usr/lib64/libeatmydata.so",
    "/usr/lib/libeatmydata.so",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Git,
    Ours,
    /// Ours with fsync made a no-op by libeatmydata: what the durability costs (diagnosis only).
    OursNoSync,
    /// `apply_patch` through a warm MCP server: how hosts apply.
    OursMcp,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Git => "git apply",
            Tool::Ours => "local-llm-worker apply",
            Tool::OursNoSync => "local-llm-worker apply, no fsync",
            Tool::OursMcp => "apply_patch, warm MCP server",
        }
    }
}

/// `local-llm-worker apply`, with `preload` in `LD_PRELOAD` when given.
fn ours(env: &Env, case: &Case, dir: &Path, preload: Option<&Path>) -> BenchResult<(f64, f64)> {
    let mut cmd = Command::new(&env.bin);
    if let Some(lib) = preload {
        cmd.env("LD_PRELOAD", lib);
    }
    cmd.arg("apply")
        .arg("--workspace-root")
        .arg(dir)
        .arg("--patch")
        .arg(&case.patch)
        .arg("--digest")
        .arg(&case.digest)
        .env("LOCAL_LLM_LEDGER", &env.ledger)
        .env_remove("LOCAL_LLM_CONFIG")
        .env_remove("LOCAL_LLM_ALLOWED_ROOTS");
    let r = timed(&mut cmd)?;
    check_result(case, dir, "local-llm-worker apply")?;
    Ok(r)
}

/// The CPU time (ms) the threads of process `pid` have run, from `/proc/PID/task/*/schedstat`.
fn process_cpu_ms(pid: u32) -> BenchResult<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|e| format!("reading the server's threads: {e}"))?;
    let mut ns = 0u64;
    for t in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += text
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Ok(ns as f64 / 1e6)
}

/// Propose (untimed) the case's patch through `mcp` on the fresh tree `dir`, then apply it: (round trip ms, the
/// server's CPU ms during the apply).
fn ours_mcp(mcp: &mut Mcp, case: &Case, dir: &Path) -> BenchResult<(f64, f64)> {
    let files: Vec<&String> = case.posts.iter().map(|(p, _)| p).collect();
    let proposal = mcp.call_tool(
        "propose_patch",
        json!({
            "workspace_root": dir,
            "task": "Apply the bench's edit",
            "acceptance_criteria": ["the files hold the bench's post-images"],
            "complexity": "low",
            "files": files,
        }),
    )?;
    if proposal["digest"].as_str() != Some(case.digest.as_str()) {
        return Err(format!(
            "the proposal's digest is not the patch's: {}",
            proposal.to_string().chars().take(400).collect::<String>()
        ));
    }
    let cpu0 = process_cpu_ms(mcp.pid())?;
    let start = Instant::now();
    let applied = mcp.call_tool(
        "apply_patch",
        json!({"proposal_id": proposal["proposal_id"], "digest": case.digest}),
    )?;
    let wall = ms_since(start);
    let cpu = process_cpu_ms(mcp.pid())? - cpu0;
    if applied["applied"] != json!(true) {
        return Err(format!("apply_patch did not apply: {applied}"));
    }
    check_result(case, dir, "apply_patch")?;
    Ok((wall, cpu))
}

fn git(case: &Case, dir: &Path) -> BenchResult<(f64, f64)> {
    let mut cmd = Command::new("git");
    cmd.arg("apply").arg(&case.patch).current_dir(dir);
    let r = timed(&mut cmd)?;
    check_result(case, dir, "git apply")?;
    Ok(r)
}

fn run(bin: &Path) -> BenchResult<()> {
    let runs = std::env::var("APPLY_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(DEFAULT_RUNS);
    // The trees live in the system's temporary folder ($TMPDIR or /tmp).
    let scratch = tempfile::tempdir().map_err(|e| format!("scratch folder: {e}"))?;
    let env = Env {
        bin: bin.to_path_buf(),
        ledger: scratch.path().join("ledger.jsonl"),
        runs,
        nosync: EATMYDATA.iter().map(PathBuf::from).find(|p| p.is_file()),
    };
    common::print_machine("apply benchmark: local-llm-worker apply against git apply");
    println!("  binary   {}", bin.display());
    let git_version = Command::new("git")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("  git      {git_version}");
    match &env.nosync {
        Some(lib) => println!("  no fsync LD_PRELOAD={}", lib.display()),
        None => println!("  no fsync series skipped: libeatmydata is not installed"),
    }
    println!(
        "  runs     {runs} measured after {WARMUPS} warmups per tool and case; times in ms; trees in {}",
        scratch.path().display()
    );
    println!();

    let cases = [
        build_case("1 file, 10 hunks", scratch.path(), 1, 10)?,
        build_case("50 files, 500 hunks", scratch.path(), 50, 10)?,
    ];
    let digests: String = cases
        .iter()
        .map(|c| format!("{} {}\n", c.digest, c.patch.display()))
        .collect();
    std::fs::write(scratch.path().join("digests.txt"), digests)
        .map_err(|e| format!("writing digests.txt: {e}"))?;
    let work = scratch.path().join("run");
    for (k, case) in cases.iter().enumerate() {
        let tools: Vec<Tool> = [Tool::Git, Tool::Ours, Tool::OursNoSync, Tool::OursMcp]
            .into_iter()
            .filter(|t| *t != Tool::OursNoSync || env.nosync.is_some())
            .collect();
        // The warm server's model: an instant endpoint answering with the canonical patch.
        let patch_text = std::fs::read_to_string(&case.patch).map_err(|e| e.to_string())?;
        let port = start_endpoint(&patch_text)?.port;
        std::fs::write(
            case.template.join("local-llm-worker.toml"),
            policy(Some(port)),
        )
        .map_err(|e| format!("writing the policy: {e}"))?;
        let mut server = {
            let mut cmd = Command::new(&env.bin);
            cmd.arg("mcp")
                .env("LOCAL_LLM_LEDGER", &env.ledger)
                .env_remove("LOCAL_LLM_CONFIG")
                .env_remove("LOCAL_LLM_ALLOWED_ROOTS");
            Mcp::spawn(cmd)?
        };
        server.handshake()?;
        // Per tool: wall samples, CPU samples.
        let mut samples = vec![(Vec::new(), Vec::new()); tools.len()];
        for i in 0..WARMUPS + env.runs {
            // Rotate the order, so that no tool always runs first or right after another.
            for turn in 0..tools.len() {
                let t = (i + turn) % tools.len();
                fresh_copy(case, &work)?;
                let (w, c) = match tools[t] {
                    Tool::Git => git(case, &work)?,
                    Tool::Ours => ours(&env, case, &work, None)?,
                    Tool::OursNoSync => ours(&env, case, &work, env.nosync.as_deref())?,
                    Tool::OursMcp => ours_mcp(&mut server, case, &work)?,
                };
                if i >= WARMUPS {
                    samples[t].0.push(w);
                    samples[t].1.push(c);
                }
            }
        }
        let files = case.posts.len();
        println!(
            "{}. {}: {files} file(s) of {FILE_LINES} lines, patch of {} bytes with {} hunks",
            k + 1,
            case.name,
            case.bytes,
            case.hunks
        );
        stats_header("", 44);
        let stats: Vec<(Stats, Stats)> = samples
            .iter()
            .map(|(w, c)| (Stats::of(w), Stats::of(c)))
            .collect();
        for (what, pick) in [
            (
                "wall",
                (|s: &(Stats, Stats)| s.0) as fn(&(Stats, Stats)) -> Stats,
            ),
            ("CPU", |s: &(Stats, Stats)| s.1),
        ] {
            for (t, s) in tools.iter().zip(&stats) {
                stats_row(&format!("{}: {what}", t.name()), 44, &pick(s));
            }
        }
        let g = &stats[0];
        // Ratio of medians against git apply, wall and CPU, and the verdict on the wall ratio.
        let ratio = |s: &(Stats, Stats)| {
            let wall = s.0.median / g.0.median;
            let verdict = if wall <= 1.0 { "met" } else { "NOT met" };
            format!(
                "wall {wall:.2}, CPU {:.2}; target: at most 1 -> {verdict}",
                s.1.median / g.1.median
            )
        };
        println!(
            "   ratio of medians (ours, one CLI process / git): {}",
            ratio(&stats[1])
        );
        let (pure, ids) = pure_part(case, env.runs)?;
        println!(
            "   of which, in process without I/O: canonical::parse + apply_file of every file {} ms (median; \
             min {}), the git blob ids of the pre- and post-images alone {} ms",
            common::fmt(pure.median),
            common::fmt(pure.min),
            common::fmt(ids.median)
        );
        for (t, s) in tools.iter().zip(&stats) {
            match t {
                Tool::OursNoSync => println!(
                    "   without fsync (diagnosis only, not a way to run it): ours / git wall {:.2}, CPU {:.2}",
                    s.0.median / g.0.median,
                    s.1.median / g.1.median
                ),
                Tool::OursMcp => println!(
                    "   ratio of medians (apply_patch through the warm MCP server, how hosts apply / git): {}",
                    ratio(s)
                ),
                _ => {}
            }
        }
        println!();
    }
    let _ = std::fs::remove_dir_all(&work);
    if std::env::var_os("APPLY_KEEP").is_some() {
        println!("  kept     {}", scratch.keep().display());
    }
    println!("  load     {} (1, 5, 15 min) at end", common::loadavg());
    Ok(())
}
