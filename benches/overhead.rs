//! Overhead benchmark for the `local-llm-worker` binary (a benchmark, not a test: it asserts nothing about timings).
//!
//! Measured on the release binary, each comparison side by side in the same run:
//!
//! 1. **Cold start**: spawn `local-llm-worker mcp`, send `initialize`, `notifications/initialized` and `tools/list`
//!    as newline-delimited JSON-RPC on stdin, and time from the spawn until the `tools/list` response line is read.
//!    The same is done, interleaved run by run, with a minimal stdio MCP server built with the official Python SDK
//!    (`bench/minimal_mcp_server.py`, `mcp==2.3.0`, the same three tool names): medians, spread and the ratio.
//! 2. **Memory**: the resident set (`VmRSS`) and its high-water mark (`VmHWM`) from `/proc/PID/status` of each
//!    cold-started server right after `tools/list` (idle; the Python server's too), and the high-water mark of a
//!    fresh `mcp` server after one `propose_patch` with 4 MiB of input (4 selected files of 1 MiB) answered by an
//!    instant scripted endpoint.
//! 3. **Propose overhead**: everything but the model's time, with the instant scripted endpoint (127.0.0.1, answers
//!    every POST at once with a fixed JSON edit list), the same 3 selected files in workspaces of 10, 10,000 and
//!    100,000 files, round robin over the sizes: (a) `propose --json` as a process: `elapsed_ms - model_ms` from its
//!    JSON (whole ms) and the wall time from spawn to exit; (b) `propose_patch` through one running `mcp` server:
//!    the round trip of the `tools/call` request (it includes the instant model's loopback round trip); and the
//!    same through a second server whose `TMPDIR` is a tmpfs (`/dev/shm`, when mounted): the dry run once worked in a
//!    temporary folder and this pair showed what the disk cost; it now runs in memory, and the pair shows that no
//!    temporary folder is left on the path.
//!
//! Wall times move with the load of the machine; the CPU time (user + system, from `getrusage(RUSAGE_CHILDREN)`
//! around each child's whole life) of the cold-started servers and of the `propose` processes is printed beside them,
//! and barely moves.
//!
//! Run it with:
//!
//! ```text
//! cargo build --release --locked && cargo bench --locked --bench overhead
//! ```
//!
//! The binary is `$LLW_BIN` if set, else `<CARGO_MANIFEST_DIR>/target/release/local-llm-worker`. The Python server
//! runs with `$LLW_BENCH_PYTHON` if set, else `~/.cache/local-llm-delegator/bench-venv/bin/python`, a venv this bench
//! creates when it is missing (`python3 -m venv DIR && DIR/bin/pip install mcp==2.3.0`); when that fails, the
//! comparison is skipped and the commands are printed. `OVERHEAD_RUNS` overrides the number of measured runs (30).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use common::mcp::{CHILD_TIMEOUT, Mcp};
use common::{Stats, children_cpu_ms, fmt, ms_since, start_endpoint, stats_header, stats_row};
use serde_json::{Value, json};

const WARMUPS: usize = 3;
const DEFAULT_RUNS: usize = 30;
/// Fresh servers measured for the peak during a 4 MiB propose.
const MEMORY_RUNS: usize = 5;
/// Workspace sizes (files) and the folders their fillers are spread over.
const SIZES: [(usize, usize); 3] = [(10, 1), (10_000, 100), (100_000, 1_000)];
const TARGET_TEXT: &str = "VALUE = 0\nprint(VALUE)\n";
const EDIT_LIST: &str = r#"{"edits":[{"path":"src/f0.py","old":"VALUE = 0","new":"VALUE = 1"}]}"#;
/// Size of each of the 4 files of the memory measurement.
const BIG_FILE_BYTES: usize = 1 << 20;
const PY_MCP_VERSION: &str = "2.3.0";
/// Proxy variables are removed from the children's environment so that the loopback endpoint is reached directly.
const REMOVED_VARS: &[&str] = &[
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "LOCAL_LLM_CONFIG",
    "LOCAL_LLM_ALLOWED_ROOTS",
];

type BenchResult<T> = Result<T, String>;

fn main() -> ExitCode {
    common::main_with(run)
}

/// Where children write their ledger: a scratch file, so that a bench never fills the user's ledger.
struct Env {
    bin: PathBuf,
    ledger: PathBuf,
    runs: usize,
}

impl Env {
    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        for var in REMOVED_VARS {
            cmd.env_remove(var);
        }
        cmd.env("LOCAL_LLM_LEDGER", &self.ledger);
        cmd
    }
}

fn run(bin: &Path) -> BenchResult<()> {
    let scratch = tempfile::tempdir().map_err(|e| format!("scratch folder: {e}"))?;
    let runs = std::env::var("OVERHEAD_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(DEFAULT_RUNS);
    let env = Env {
        bin: bin.to_path_buf(),
        ledger: scratch.path().join("ledger.jsonl"),
        runs,
    };
    common::print_machine("local-llm-worker overhead benchmark");
    println!("  binary   {}", bin.display());
    println!("  runs     {runs} measured after {WARMUPS} warmups per series; times in ms");
    println!();

    let python = python_server();
    let idle = cold_start(&env, python.as_ref())?;
    println!();
    memory(&env, &idle)?;
    println!();
    propose_overhead(&env)?;
    println!();
    println!("  load     {} (1, 5, 15 min) at end", common::loadavg());
    Ok(())
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
#[derive(Debug, Clone, Copy)]
struct Rss {
    rss_kib: f64,
    hwm_kib: f64,
}

fn rss_of(pid: u32) -> BenchResult<Rss> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("reading /proc/{pid}/status: {e}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("/proc/{pid}/status has no {name}"))
    };
    Ok(Rss {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Cold start, against a minimal Python MCP server
// ---------------------------------------------------------------------------------------------------------------

/// How to run the Python comparison server.
struct PythonServer {
    python: PathBuf,
    script: PathBuf,
    version: String,
}

fn python_version_of_mcp(python: &Path) -> Option<String> {
    let out = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, mcp.server.mcpserver; print(m.version('mcp'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Find (or create) the venv with the official Python SDK; `None` (with the commands printed) when impossible.
fn python_server() -> Option<PythonServer> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/minimal_mcp_server.py");
    let (python, venv) = match std::env::var_os("LLW_BENCH_PYTHON") {
        Some(p) => (PathBuf::from(p), None),
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from)?;
            let venv = home.join(".cache/local-llm-delegator/bench-venv");
            (venv.join("bin/python"), Some(venv))
        }
    };
    let mut version = python_version_of_mcp(&python);
    if version.is_none()
        && let Some(venv) = &venv
    {
        println!(
            "  creating {} with mcp=={PY_MCP_VERSION} (once)",
            venv.display()
        );
        let ok = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip"))
                .args(["install", "-q", &format!("mcp=={PY_MCP_VERSION}")])
                .status()
                .is_ok_and(|s| s.success());
        if ok {
            version = python_version_of_mcp(&python);
        }
    }
    match version {
        Some(version) => Some(PythonServer {
            python,
            script,
            version,
        }),
        None => {
            let dir = venv
                .map(|v| v.display().to_string())
                .unwrap_or_else(|| "DIR".into());
            println!(
                "  the Python comparison is skipped: no Python with the `mcp` SDK; create it with:\n    \
                 python3 -m venv {dir} && {dir}/bin/pip install mcp=={PY_MCP_VERSION}"
            );
            None
        }
    }
}

/// One cold session's figures.
struct Cold {
    /// From spawn to the tools/list response.
    ms: f64,
    /// CPU time of the server's whole life (it is killed right after the memory is read).
    cpu_ms: f64,
    rss: Rss,
    tools: Vec<String>,
    server: String,
}

/// One cold session: spawn, handshake, read the memory, kill.
fn cold_once(cmd: Command) -> BenchResult<Cold> {
    let cpu0 = children_cpu_ms();
    let start = Instant::now();
    let mut mcp = Mcp::spawn(cmd)?;
    let (tools, server) = mcp.handshake()?;
    let ms = ms_since(start);
    let rss = rss_of(mcp.pid())?;
    drop(mcp);
    Ok(Cold {
        ms,
        cpu_ms: children_cpu_ms() - cpu0,
        rss,
        tools,
        server,
    })
}

/// Idle memory of each server right after tools/list, from every cold session.
struct Idle {
    ours: Vec<Rss>,
    python: Vec<Rss>,
}

fn cold_start(env: &Env, python: Option<&PythonServer>) -> BenchResult<Idle> {
    let ours_cmd = || {
        let mut c = env.command(&env.bin);
        c.arg("mcp");
        c
    };
    let py_cmd = |p: &PythonServer| {
        let mut c = env.command(&p.python);
        c.arg(&p.script);
        c
    };
    let first = cold_once(ours_cmd())?;
    let py_first = match python {
        Some(p) => Some(cold_once(py_cmd(p))?),
        None => None,
    };
    for _ in 1..WARMUPS {
        cold_once(ours_cmd())?;
        if let Some(p) = python {
            cold_once(py_cmd(p))?;
        }
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for i in 0..env.runs {
        // Alternate which goes first, so that neither always runs right after the other.
        for py in [i % 2 == 1, i % 2 == 0] {
            match (py, python) {
                (true, Some(p)) => theirs.push(cold_once(py_cmd(p))?),
                (true, None) => {}
                (false, _) => ours.push(cold_once(ours_cmd())?),
            }
        }
    }
    println!(
        "1. Cold start: spawn, initialize, notifications/initialized, tools/list response read (ms)"
    );
    println!(
        "   local-llm-worker: {}; tools: {}",
        first.server,
        first.tools.join(", ")
    );
    if let (Some(p), Some(c)) = (python, &py_first) {
        println!(
            "   Python SDK mcp=={} ({}): {}; tools: {}",
            p.version,
            p.python.display(),
            c.server,
            c.tools.join(", ")
        );
    }
    stats_header("", 34);
    let pick = |v: &[Cold], f: fn(&Cold) -> f64| Stats::of(&v.iter().map(f).collect::<Vec<_>>());
    let o = pick(&ours, |c| c.ms);
    stats_row("local-llm-worker mcp: wall", 34, &o);
    if !theirs.is_empty() {
        stats_row("python SDK server: wall", 34, &pick(&theirs, |c| c.ms));
    }
    let oc = pick(&ours, |c| c.cpu_ms);
    stats_row("local-llm-worker mcp: CPU", 34, &oc);
    if !theirs.is_empty() {
        let t = pick(&theirs, |c| c.ms);
        let tc = pick(&theirs, |c| c.cpu_ms);
        stats_row("python SDK server: CPU", 34, &tc);
        println!(
            "   ratio of medians (python / ours): wall {:.1}x, CPU {:.1}x",
            t.median / o.median,
            tc.median / oc.median
        );
    }
    println!(
        "   target: ours under 15 ms median -> {}",
        if o.median < 15.0 { "met" } else { "NOT met" }
    );
    Ok(Idle {
        ours: ours.iter().map(|c| c.rss).collect(),
        python: theirs.iter().map(|c| c.rss).collect(),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Memory
// ---------------------------------------------------------------------------------------------------------------

fn memory(env: &Env, idle: &Idle) -> BenchResult<()> {
    let port = start_endpoint(EDIT_LIST)?.port;
    let ws = tempfile::tempdir().map_err(|e| format!("memory workspace: {e}"))?;
    let src = ws.path().join("src");
    std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
    let mut files = Vec::new();
    for i in 0..4 {
        let mut text = if i == 0 {
            TARGET_TEXT.to_string()
        } else {
            String::new()
        };
        let mut n = 0;
        while text.len() < BIG_FILE_BYTES {
            text.push_str(&format!("def fn_{i}_{n}(x):\n    return x + {n}\n"));
            n += 1;
        }
        text.truncate(text[..BIG_FILE_BYTES].rfind('\n').map_or(0, |k| k + 1));
        let rel = format!("src/f{i}.py");
        std::fs::write(ws.path().join(&rel), &text).map_err(|e| e.to_string())?;
        files.push(rel);
    }
    let policy = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\n[models]\n\
         context_window = 10000000\n\n[paths]\nallowed = [\"src/**\"]\n\n[limits]\nmax_file_bytes = 2000000\n\
         max_total_bytes = 8000000\n"
    );
    std::fs::write(ws.path().join("local-llm-worker.toml"), policy).map_err(|e| e.to_string())?;
    let input_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(ws.path().join(f)).map_or(0, |m| m.len()))
        .sum();

    let mut peak = Vec::new();
    let mut after = Vec::new();
    let mut before = Vec::new();
    let mut call_ms = Vec::new();
    for _ in 0..MEMORY_RUNS {
        let mut cmd = env.command(&env.bin);
        cmd.arg("mcp");
        let mut mcp = Mcp::spawn(cmd)?;
        mcp.handshake()?;
        before.push(rss_of(mcp.pid())?);
        let start = Instant::now();
        let r = mcp.call_tool(
            "propose_patch",
            json!({
                "workspace_root": ws.path(),
                "task": "Set VALUE to 1",
                "acceptance_criteria": ["VALUE is 1"],
                "complexity": "low",
                "files": files,
            }),
        )?;
        call_ms.push(ms_since(start));
        check_patch(&r)?;
        if r["bytes_read"].as_u64() != Some(input_bytes) {
            return Err(format!(
                "propose read {} bytes, not {input_bytes}",
                r["bytes_read"]
            ));
        }
        let m = rss_of(mcp.pid())?;
        peak.push(m.hwm_kib);
        after.push(m.rss_kib);
    }
    let mib = |v: &[f64]| Stats::of(&v.iter().map(|k| k / 1024.0).collect::<Vec<_>>());
    println!("2. Memory (MiB, from /proc/PID/status)");
    stats_header("", 44);
    let ours_idle_rss = mib(&idle.ours.iter().map(|r| r.rss_kib).collect::<Vec<_>>());
    stats_row("ours idle after tools/list: VmRSS", 44, &ours_idle_rss);
    stats_row(
        "ours idle after tools/list: VmHWM",
        44,
        &mib(&idle.ours.iter().map(|r| r.hwm_kib).collect::<Vec<_>>()),
    );
    if !idle.python.is_empty() {
        let py = mib(&idle.python.iter().map(|r| r.rss_kib).collect::<Vec<_>>());
        stats_row("python SDK idle after tools/list: VmRSS", 44, &py);
        stats_row(
            "python SDK idle after tools/list: VmHWM",
            44,
            &mib(&idle.python.iter().map(|r| r.hwm_kib).collect::<Vec<_>>()),
        );
        println!(
            "   idle VmRSS ratio of medians (python / ours): {:.1}x",
            py.median / ours_idle_rss.median
        );
    }
    stats_row(
        "ours before the 4 MiB propose: VmRSS",
        44,
        &mib(&before.iter().map(|r| r.rss_kib).collect::<Vec<_>>()),
    );
    stats_row("ours peak during the 4 MiB propose: VmHWM", 44, &mib(&peak));
    stats_row("ours after the 4 MiB propose: VmRSS", 44, &mib(&after));
    println!(
        "   the propose: 4 selected files, {input_bytes} bytes in all, instant endpoint; tools/call round trip \
         median {} ms",
        fmt(Stats::of(&call_ms).median)
    );
    println!(
        "   target: idle under 10 MB -> {} (median VmRSS {:.2} MiB = {:.2} MB)",
        if ours_idle_rss.median * 1.048_576 < 10.0 {
            "met"
        } else {
            "NOT met"
        },
        ours_idle_rss.median,
        ours_idle_rss.median * 1.048_576
    );
    Ok(())
}

fn check_patch(v: &Value) -> BenchResult<()> {
    if v["dry_run_ok"] != json!(true)
        || !v["patch"]
            .as_str()
            .is_some_and(|p| p.contains("+VALUE = 1"))
    {
        return Err(format!(
            "propose did not return the expected patch: {}",
            excerpt(v)
        ));
    }
    Ok(())
}

fn excerpt(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(600).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Propose overhead
// ---------------------------------------------------------------------------------------------------------------

/// Build a workspace holding exactly `total` Python files (`src/f0.py`..`src/f2.py` plus fillers under
/// `src/dNNN/`) and the policy file pointing at the scripted endpoint.
fn build_workspace(total: usize, folders: usize, port: u16) -> BenchResult<tempfile::TempDir> {
    let io = |e: std::io::Error| format!("building a workspace: {e}");
    let dir = tempfile::tempdir().map_err(io)?;
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).map_err(io)?;
    for i in 0..3 {
        std::fs::write(src.join(format!("f{i}.py")), TARGET_TEXT).map_err(io)?;
    }
    let fillers = total - 3;
    let folders = folders.clamp(1, fillers.max(1));
    for d in 0..folders {
        std::fs::create_dir_all(src.join(format!("d{d:03}"))).map_err(io)?;
    }
    for i in 0..fillers {
        let path = src
            .join(format!("d{:03}", i % folders))
            .join(format!("f{:03}.py", i / folders));
        std::fs::write(path, format!("def fn_{i}():\n    return {i}\n")).map_err(io)?;
    }
    let policy = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\n[paths]\nallowed = [\"src/**\"]\n"
    );
    std::fs::write(dir.path().join("local-llm-worker.toml"), policy).map_err(io)?;
    Ok(dir)
}

const SELECTED: [&str; 3] = ["src/f0.py", "src/f1.py", "src/f2.py"];

/// One `propose --json` process: (wall ms, CPU ms, elapsed_ms - model_ms).
fn propose_cli(env: &Env, root: &Path) -> BenchResult<(f64, f64, f64)> {
    let mut cmd = env.command(&env.bin);
    cmd.arg("propose")
        .arg("--workspace-root")
        .arg(root)
        .args([
            "--task",
            "Set VALUE to 1",
            "--accept",
            "VALUE is 1",
            "--complexity",
            "low",
        ])
        .args(SELECTED.iter().flat_map(|f| ["--file", f]))
        .arg("--json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cpu0 = children_cpu_ms();
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot spawn {} propose: {e}", env.bin.display()))?;
    let out = wait_with_timeout(child)?;
    let wall = ms_since(start);
    let cpu = children_cpu_ms() - cpu0;
    if !out.status.success() {
        return Err(format!(
            "propose failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "propose printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    check_patch(&v)?;
    let field = |k: &str| {
        v[k].as_u64()
            .map(|n| n as f64)
            .ok_or_else(|| format!("propose JSON lacks {k}: {v}"))
    };
    Ok((wall, cpu, field("elapsed_ms")? - field("model_ms")?))
}

/// `Child::wait_with_output`, but killing the child after [`CHILD_TIMEOUT`].
fn wait_with_timeout(child: Child) -> BenchResult<std::process::Output> {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(CHILD_TIMEOUT) {
        Ok(out) => out.map_err(|e| format!("waiting for propose: {e}")),
        Err(_) => {
            // SAFETY: plain kill(2) on the pid of our own child, which has not been reaped (the waiting thread
            // has not returned).
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            Err(format!("propose did not finish within {CHILD_TIMEOUT:?}"))
        }
    }
}

/// `/dev/shm` when it is a tmpfs mount.
fn tmpfs_dir() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 2 && f[1] == "/dev/shm" && f[2] == "tmpfs"
        })
        .then(|| PathBuf::from("/dev/shm"))
}

/// One `propose_patch` through a running server: the round trip in ms.
fn propose_mcp(mcp: &mut Mcp, root: &Path) -> BenchResult<f64> {
    let start = Instant::now();
    let v = mcp.call_tool(
        "propose_patch",
        json!({
            "workspace_root": root,
            "task": "Set VALUE to 1",
            "acceptance_criteria": ["VALUE is 1"],
            "complexity": "low",
            "files": SELECTED,
        }),
    )?;
    let ms = ms_since(start);
    check_patch(&v)?;
    Ok(ms)
}

fn propose_overhead(env: &Env) -> BenchResult<()> {
    let endpoint = start_endpoint(EDIT_LIST)?;
    let port = endpoint.port;
    let mut workspaces = Vec::new();
    for (files, folders) in SIZES {
        let built = Instant::now();
        let ws = build_workspace(files, folders, port)?;
        workspaces.push((files, folders, ws, ms_since(built)));
    }
    let n = workspaces.len();
    let mut wall = vec![Vec::new(); n];
    let mut own = vec![Vec::new(); n];
    let mut cpu = vec![Vec::new(); n];
    let mut rt = vec![Vec::new(); n];
    let mut server = {
        let mut cmd = env.command(&env.bin);
        cmd.arg("mcp");
        Mcp::spawn(cmd)?
    };
    server.handshake()?;
    // The same server with its temporary folders on a tmpfs: the propose path should no longer use any.
    let tmpfs = tmpfs_dir();
    let mut shm_server = match &tmpfs {
        Some(dir) => {
            let mut cmd = env.command(&env.bin);
            cmd.arg("mcp").env("TMPDIR", dir);
            let mut s = Mcp::spawn(cmd)?;
            s.handshake()?;
            Some(s)
        }
        None => None,
    };
    let mut rt_shm = vec![Vec::new(); n];
    for round in 0..WARMUPS + env.runs {
        for (k, (_, _, ws, _)) in workspaces.iter().enumerate() {
            let (w, c, o) = propose_cli(env, ws.path())?;
            let r = propose_mcp(&mut server, ws.path())?;
            if let Some(shm) = shm_server.as_mut() {
                let r = propose_mcp(shm, ws.path())?;
                if round >= WARMUPS {
                    rt_shm[k].push(r);
                }
            }
            if round >= WARMUPS {
                wall[k].push(w);
                cpu[k].push(c);
                own[k].push(o);
                rt[k].push(r);
            }
        }
    }
    let served = endpoint.answered.load(Ordering::Relaxed);

    println!(
        "3. Propose overhead: the same 3 selected files, instant scripted endpoint on 127.0.0.1:{port} \
         ({served} requests answered); round robin over the sizes (ms)"
    );
    for (files, folders, _, build) in &workspaces {
        println!(
            "   workspace of {files} files: src/f0..f2.py + {} fillers in {folders} folder(s), built in {:.0} ms",
            files - 3,
            build
        );
    }
    stats_header("", 44);
    let mut medians = Vec::new();
    let shm_title = format!(
        "the same, server with TMPDIR={} (tmpfs)",
        tmpfs
            .as_ref()
            .map_or(String::new(), |d| d.display().to_string())
    );
    for (title, series) in [
        ("mcp propose_patch round trip, warm server", &rt),
        (shm_title.as_str(), &rt_shm),
        ("CLI propose: elapsed_ms - model_ms (whole ms)", &own),
        ("CLI propose: wall, spawn to exit", &wall),
        ("CLI propose: CPU of the process (user + system)", &cpu),
    ] {
        if series.iter().any(Vec::is_empty) {
            continue;
        }
        println!("   {title}");
        let mut m = Vec::new();
        for (k, (files, _, _, _)) in workspaces.iter().enumerate() {
            let s = Stats::of(&series[k]);
            stats_row(&format!("  {files} files"), 44, &s);
            m.push(s.median);
        }
        println!(
            "     ratio of medians, {} files / {} files: {:.2}",
            workspaces[n - 1].0,
            workspaces[0].0,
            m[n - 1] / m[0]
        );
        medians.push(m);
    }
    let worst = medians[0].iter().copied().fold(0.0, f64::max);
    println!(
        "   target: flat and under 10 ms at every size -> {} (largest median round trip {} ms)",
        if worst < 10.0 { "met" } else { "NOT met" },
        fmt(worst)
    );
    Ok(())
}
