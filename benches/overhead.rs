//! Overhead benchmark for the `local-llm-worker` binary (a benchmark, not a test: it asserts nothing about timings).
//!
//! It measures two things on the release binary:
//!
//! 1. **Cold start of the MCP server**: spawn `local-llm-worker mcp`, send `initialize`, then
//!    `notifications/initialized` and `tools/list` as newline-delimited JSON-RPC on stdin, and time from the spawn
//!    until the `tools/list` response line is read from stdout (30 runs after 3 warmups).
//! 2. **Propose overhead**: the worker's own time around an instant model. A scripted OpenAI-compatible endpoint
//!    runs inside this process (127.0.0.1, answers every POST at once with a fixed JSON edit list), and
//!    `local-llm-worker propose --json` runs against a 10-file and a 10,000-file workspace (30 runs each after 3
//!    warmups). It reports `elapsed_ms - model_ms` from the JSON output (the worker's time excluding the model wait)
//!    and the whole-process wall time, side by side, with the ratio of the 10,000-file median to the 10-file median.
//!
//! Run it with:
//!
//! ```text
//! cargo build --release --locked && cargo bench --locked --bench overhead
//! ```
//!
//! The binary is `$LLW_BIN` if set, else `<CARGO_MANIFEST_DIR>/target/release/local-llm-worker`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WARMUPS: usize = 3;
const RUNS: usize = 30;
/// How long one child may take before the benchmark gives up on it.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);
const SMALL_FILES: usize = 10;
const LARGE_FILES: usize = 10_000;
const LARGE_FOLDERS: usize = 100;
const TARGET_TEXT: &str = "VALUE = 0\nprint(VALUE)\n";
const EDIT_LIST: &str = r#"{"edits":[{"path":"src/f0.py","old":"VALUE = 0","new":"VALUE = 1"}]}"#;
/// Proxy variables are removed from the children's environment so that the loopback endpoint is reached directly.
const PROXY_VARS: &[&str] = &[
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
];

type BenchResult<T> = Result<T, String>;

fn main() -> ExitCode {
    let bin = match std::env::var_os("LLW_BIN") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/local-llm-worker"),
    };
    if !bin.is_file() {
        eprintln!(
            "error: the worker binary {} does not exist; build it first:",
            bin.display()
        );
        eprintln!("    cargo build --release --locked");
        return ExitCode::FAILURE;
    }
    match run(&bin) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(bin: &Path) -> BenchResult<()> {
    let cores = thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("local-llm-worker overhead benchmark");
    println!("  binary   {}", bin.display());
    println!("  cores    {cores} (available parallelism, as nproc)");
    println!(
        "  target   {}/{}",
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    println!("  runs     {RUNS} measured after {WARMUPS} warmups per series; times in ms");
    println!();

    cold_start(bin)?;
    println!();
    propose_overhead(bin)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Cold start of the MCP server
// ---------------------------------------------------------------------------------------------------------------

/// What one MCP session reported, kept from the first warmup for the header.
struct McpInfo {
    server: String,
    protocol: String,
    tools: Vec<String>,
}

fn cold_start(bin: &Path) -> BenchResult<()> {
    let info = mcp_session(bin)?.1;
    for _ in 1..WARMUPS {
        mcp_session(bin)?;
    }
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        samples.push(mcp_session(bin)?.0);
    }
    let s = Stats::of(&samples);
    println!(
        "1. Cold start: spawn `mcp`, initialize, notifications/initialized, tools/list response read"
    );
    println!(
        "   server {}, protocol {}, tools: {}",
        info.server,
        info.protocol,
        info.tools.join(", ")
    );
    println!(
        "   {:<22}{:>9}{:>9}{:>9}{:>9}",
        "", "median", "min", "max", "p90"
    );
    println!(
        "   {:<22}{:>9.2}{:>9.2}{:>9.2}{:>9.2}",
        "wall (ms)", s.median, s.min, s.max, s.p90
    );
    Ok(())
}

fn send(stdin: &mut ChildStdin, msg: &Value) -> BenchResult<()> {
    let mut line = msg.to_string();
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|e| format!("writing to mcp stdin: {e}"))
}

/// Wait for the JSON-RPC response with `id`, skipping any other message (notifications, logs).
fn wait_for(lines: &mpsc::Receiver<String>, id: u64, deadline: Instant) -> BenchResult<Value> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => {
                format!("no response to id {id} within {CHILD_TIMEOUT:?}")
            }
            mpsc::RecvTimeoutError::Disconnected => {
                format!("mcp closed stdout before answering id {id}")
            }
        })?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v.get("id").and_then(Value::as_u64) != Some(id) {
            continue;
        }
        if let Some(err) = v.get("error") {
            return Err(format!("mcp answered id {id} with an error: {err}"));
        }
        return Ok(v);
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// One cold MCP session: returns the time from spawn to the tools/list response, in ms.
fn mcp_session(bin: &Path) -> BenchResult<(f64, McpInfo)> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot spawn {} mcp: {e}", bin.display()))?;
    let result = drive_mcp(&mut child, start);
    kill(&mut child);
    result
}

fn drive_mcp(child: &mut Child, start: Instant) -> BenchResult<(f64, McpInfo)> {
    let deadline = start + CHILD_TIMEOUT;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });

    send(
        &mut stdin,
        &json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "overhead-bench", "version": "0.1.0"},
            },
        }),
    )?;
    let init = wait_for(&lines, 1, deadline)?;
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )?;
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    )?;
    let list = wait_for(&lines, 2, deadline)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;

    let result = &init["result"];
    let info = McpInfo {
        server: format!(
            "{} {}",
            result["serverInfo"]["name"].as_str().unwrap_or("?"),
            result["serverInfo"]["version"].as_str().unwrap_or("?")
        ),
        protocol: result["protocolVersion"]
            .as_str()
            .unwrap_or("?")
            .to_string(),
        tools: list["result"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    };
    if info.tools.is_empty() {
        return Err(format!("tools/list returned no tools: {list}"));
    }
    Ok((ms, info))
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Propose overhead against an instant scripted endpoint
// ---------------------------------------------------------------------------------------------------------------

/// Start the scripted OpenAI-compatible endpoint; returns its port and the count of requests it answered.
fn start_endpoint() -> BenchResult<(u16, Arc<AtomicUsize>)> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let body = json!({
        "choices": [{"message": {"content": EDIT_LIST}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        "model": "scripted",
    })
    .to_string();
    let response = Arc::new(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let response = Arc::clone(&response);
            let counter = Arc::clone(&counter);
            thread::spawn(move || {
                if answer(stream, &response).is_ok() {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    Ok((port, served))
}

/// Read one HTTP request (headers, then the body in full) and send the fixed response.
fn answer(stream: TcpStream, response: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut content_length = 0usize;
    let mut chunked = false;
    let mut is_post = false;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if first {
            is_post = line.starts_with("POST ");
            first = false;
            continue;
        }
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            }
        }
    }
    if chunked {
        read_chunked(&mut reader)?;
    } else {
        let mut body = vec![0u8; content_length];
        reader.read_exact(&mut body)?;
    }
    let mut stream = stream;
    if is_post {
        stream.write_all(response.as_bytes())?;
    } else {
        stream.write_all(
            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )?;
    }
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let hex = size.trim().split(';').next().unwrap_or("");
        let n =
            usize::from_str_radix(hex, 16).map_err(|_| std::io::Error::other("bad chunk size"))?;
        let mut chunk = vec![0u8; n + 2]; // the data and its CRLF
        reader.read_exact(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
    }
}

/// Build a workspace holding exactly `total` Python files (`src/f0.py`..`src/f2.py` plus fillers under
/// `src/dNN/`) and the policy file pointing at the scripted endpoint.
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
        std::fs::create_dir_all(src.join(format!("d{d:02}"))).map_err(io)?;
    }
    for i in 0..fillers {
        let path = src
            .join(format!("d{:02}", i % folders))
            .join(format!("f{:03}.py", i / folders));
        std::fs::write(path, format!("def fn_{i}():\n    return {i}\n")).map_err(io)?;
    }
    let policy = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\n[paths]\nallowed = [\"src/**\"]\n"
    );
    std::fs::write(dir.path().join("local-llm-worker.toml"), policy).map_err(io)?;
    Ok(dir)
}

/// One propose run's figures.
struct ProposeSample {
    wall_ms: f64,
    elapsed_ms: f64,
    model_ms: f64,
}

fn propose_once(bin: &Path, root: &Path) -> BenchResult<ProposeSample> {
    let mut cmd = Command::new(bin);
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
        .args([
            "--file",
            "src/f0.py",
            "--file",
            "src/f1.py",
            "--file",
            "src/f2.py",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot spawn {} propose: {e}", bin.display()))?;
    let out = wait_with_timeout(child)?;
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
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
    if v["dry_run_ok"] != json!(true)
        || !v["patch"]
            .as_str()
            .is_some_and(|p| p.contains("+VALUE = 1"))
    {
        return Err(format!("propose did not return the expected patch: {v}"));
    }
    let field = |k: &str| {
        v[k].as_u64()
            .map(|n| n as f64)
            .ok_or_else(|| format!("propose JSON lacks {k}: {v}"))
    };
    Ok(ProposeSample {
        wall_ms,
        elapsed_ms: field("elapsed_ms")?,
        model_ms: field("model_ms")?,
    })
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

struct Series {
    overhead: Stats,
    wall: Stats,
    model: Stats,
}

fn propose_series(bin: &Path, root: &Path) -> BenchResult<Series> {
    for _ in 0..WARMUPS {
        propose_once(bin, root)?;
    }
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        samples.push(propose_once(bin, root)?);
    }
    let pick = |f: fn(&ProposeSample) -> f64| Stats::of(&samples.iter().map(f).collect::<Vec<_>>());
    Ok(Series {
        overhead: pick(|s| s.elapsed_ms - s.model_ms),
        wall: pick(|s| s.wall_ms),
        model: pick(|s| s.model_ms),
    })
}

fn propose_overhead(bin: &Path) -> BenchResult<()> {
    let (port, served) = start_endpoint()?;
    let small = build_workspace(SMALL_FILES, LARGE_FOLDERS, port)?;
    let built = Instant::now();
    let large = build_workspace(LARGE_FILES, LARGE_FOLDERS, port)?;
    let build_ms = built.elapsed().as_secs_f64() * 1000.0;

    let small_series = propose_series(bin, small.path())?;
    let large_series = propose_series(bin, large.path())?;
    let served = served.load(Ordering::Relaxed);

    println!(
        "2. Propose overhead: `propose --json` on 3 files, instant scripted endpoint on 127.0.0.1:{port}"
    );
    println!(
        "   workspaces: {SMALL_FILES} files (src/f0..f2.py + {} fillers), {LARGE_FILES} files (src/f0..f2.py + {} \
         fillers in {LARGE_FOLDERS} folders, built in {build_ms:.0} ms)",
        SMALL_FILES - 3,
        LARGE_FILES - 3
    );
    println!("   the endpoint answered {served} requests");
    println!(
        "   overhead = elapsed_ms - model_ms from the JSON (whole ms); wall = whole process, spawn to exit"
    );
    println!(
        "   {:<20}{:>27}{:>27}{:>12}",
        "",
        format!("{SMALL_FILES} files"),
        format!("{LARGE_FILES} files"),
        "ratio"
    );
    println!(
        "   {:<20}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>12}",
        "", "median", "min", "max", "median", "min", "max", "of medians"
    );
    let row = |name: &str, a: &Stats, b: &Stats| {
        let ratio = if a.median > 0.0 {
            format!("{:.2}", b.median / a.median)
        } else {
            "n/a".to_string()
        };
        println!(
            "   {:<20}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>12}",
            name, a.median, a.min, a.max, b.median, b.min, b.max, ratio
        );
    };
    row(
        "overhead (ms)",
        &small_series.overhead,
        &large_series.overhead,
    );
    row("wall (ms)", &small_series.wall, &large_series.wall);
    row("model wait (ms)", &small_series.model, &large_series.model);
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------------------------

struct Stats {
    median: f64,
    min: f64,
    max: f64,
    p90: f64,
}

impl Stats {
    /// Median (mean of the two middle values for an even count), min, max and nearest-rank p90.
    fn of(samples: &[f64]) -> Stats {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        assert!(n > 0, "no samples");
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let rank = (n * 9).div_ceil(10).max(1);
        Stats {
            median,
            min: v[0],
            max: v[n - 1],
            p90: v[rank - 1],
        }
    }
}
