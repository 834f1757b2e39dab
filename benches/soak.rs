//! Load, soak and faults: what the worker does under many calls at once, over many cycles, and against servers that
//! misbehave. Every endpoint here is a scripted fake written in this file (a real server will not produce these
//! behaviours on demand).
//!
//! 1. 32 `propose_patch` calls at once through one MCP server against a slow endpoint (each answer 400 ms late, one
//!    thread per connection): every answer reaches its own caller; the server's peak memory.
//! 2. 1,000 propose/apply cycles through one MCP server (validation on propose in a sandbox copy, a check after each
//!    apply): resident memory and open descriptors sampled every 100 cycles; no sandbox folder left behind.
//! 3. Faults, each through the CLI with a 3-second request timeout: a server that sends one byte a second, an
//!    endless stream, invalid UTF-8 in the middle of a stream, and a 100 MB stream line. Each must end within its
//!    timeout with a clear refusal, and the process's peak memory stays bounded.
//!
//! `cargo bench --locked --bench soak` after `cargo build --release --locked`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::mcp::Mcp;
use serde_json::{Value, json};

fn main() -> std::process::ExitCode {
    common::main_with(|bin| {
        common::print_machine("soak, load and faults");
        concurrent(bin)?;
        cycles(bin)?;
        faults(bin)?;
        Ok(())
    })
}

/// One HTTP request read from `s`: its body.
fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// A scripted endpoint: `answer(body)` writes the whole reply on the stream, one thread per connection.
/// How a scripted endpoint answers one request body.
type Answer = fn(&str, &mut TcpStream);

fn endpoint(answer: Answer) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                while let Some(body) = read_request(&mut s) {
                    answer(&body, &mut s);
                }
            });
        }
    });
    url
}

fn json_reply(s: &mut TcpStream, v: &Value) {
    let body = v.to_string();
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
}

/// Answers the file the prompt names (`src/fNN.py`) with an edit of that file, 400 ms late; models lists get `{}`.
fn slow_edit(body: &str, s: &mut TcpStream) {
    if !body.contains("messages") {
        return json_reply(s, &json!({"data": []}));
    }
    std::thread::sleep(Duration::from_millis(400));
    let n = body
        .split("src/f")
        .nth(1)
        .and_then(|r| r.split('.').next())
        .unwrap_or("0")
        .to_string();
    let edit = json!({"edits": [{"path": format!("src/f{n}.py"), "old": format!("V{n} = 1"), "new": format!("V{n} = 2")}]});
    json_reply(
        s,
        &json!({"model": "slow", "choices": [{"message": {"content": edit.to_string()}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100000, "completion_tokens": 10, "total_tokens": 100010}}),
    );
}

fn workspace(url: &str, files: usize, extra: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("src")).unwrap();
    for i in 0..files {
        std::fs::write(d.path().join(format!("src/f{i}.py")), format!("V{i} = 1\n")).unwrap();
    }
    std::fs::write(
        d.path().join("local-llm-worker.toml"),
        format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{url}\"\n[models]\ncontext_window = 1000000\n\
             [edit]\nformat = \"json\"\n{extra}"
        ),
    )
    .unwrap();
    d
}

fn server(bin: &Path, state: &Path) -> Mcp {
    let mut cmd = Command::new(bin);
    cmd.arg("mcp")
        .env("LOCAL_LLM_STATE_DIR", state)
        .env("LOCAL_LLM_LEDGER", state.join("ledger.jsonl"))
        .env_remove("LOCAL_LLM_CONFIG");
    let mut m = Mcp::spawn(cmd).unwrap();
    m.handshake().unwrap();
    m
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn propose_args(root: &Path, i: usize) -> Value {
    json!({"workspace_root": root, "task": format!("Set V{i} to 2"), "acceptance_criteria": [format!("V{i} is 2")],
           "complexity": "low", "files": [format!("src/f{i}.py")]})
}

fn concurrent(bin: &Path) -> Result<(), String> {
    const N: usize = 32;
    let url = endpoint(slow_edit);
    let ws = workspace(&url, N, "");
    let state = tempfile::tempdir().unwrap();
    let mut m = server(bin, state.path());
    let start = Instant::now();
    for i in 0..N {
        m.send(&json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
                       "params": {"name": "propose_patch", "arguments": propose_args(ws.path(), i)}}))?;
    }
    let (mut right, mut wrong) = (0, 0);
    while right + wrong < N {
        let v = m
            .recv(Duration::from_secs(120))
            .ok_or("a propose_patch answer did not come")?;
        let Some(id) = v["id"].as_u64() else { continue };
        let i = id as usize - 1000;
        let patch = v["result"]["structuredContent"]["patch"]
            .as_str()
            .unwrap_or("");
        if patch.contains(&format!("+V{i} = 2")) && patch.matches("diff --git").count() == 1 {
            right += 1;
        } else {
            wrong += 1;
            eprintln!("   answer {id} is not its own: {v}");
        }
    }
    let wall = start.elapsed();
    println!("1. {N} propose_patch calls at once, one MCP server, each model answer 400 ms late");
    println!(
        "   {right} answers reached their own caller, {wrong} did not; all in {:.2} s (serial would be {:.1} s); \
         server peak memory VmHWM {:.1} MiB",
        wall.as_secs_f64(),
        N as f64 * 0.4,
        status_kb(m.pid(), "VmHWM:") as f64 / 1024.0
    );
    if wrong > 0 {
        return Err("an answer reached the wrong caller".into());
    }
    Ok(())
}

fn sandboxes() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("llw-sandbox"))
                .count()
        })
        .unwrap_or(0)
}

fn cycles(bin: &Path) -> Result<(), String> {
    const CYCLES: usize = 1000;
    let ok_edit = r#"{"edits":[{"path":"src/f0.py","old":"V0 = 1","new":"V0 = 2"}]}"#;
    let back = common::start_endpoint(ok_edit)?;
    let ws = workspace(
        &back.base_url,
        1,
        "[validation]\ncommands = [\"true\"]\non_propose = true\n",
    );
    let state = tempfile::tempdir().unwrap();
    common::trust(bin, ws.path(), state.path())?;
    let mut m = server(bin, state.path());
    let sandboxes_before = sandboxes();
    println!(
        "2. {CYCLES} propose/apply cycles through one MCP server (validation on propose in a sandbox; a check after each apply)"
    );
    println!("   cycle    VmRSS MiB   open fds   seconds");
    let start = Instant::now();
    for c in 0..=CYCLES {
        if c % 100 == 0 {
            println!(
                "   {c:>5}    {:>9.2}   {:>8}   {:>7.1}",
                status_kb(m.pid(), "VmRSS:") as f64 / 1024.0,
                fds(m.pid()),
                start.elapsed().as_secs_f64()
            );
        }
        if c == CYCLES {
            break;
        }
        std::fs::write(ws.path().join("src/f0.py"), "V0 = 1\n").unwrap();
        let r = m.call_tool("propose_patch", propose_args(ws.path(), 0))?;
        m.call_tool(
            "apply_patch",
            json!({"proposal_id": r["proposal_id"], "digest": r["digest"]}),
        )?;
    }
    let left = sandboxes().saturating_sub(sandboxes_before);
    println!("   sandbox folders left in the temporary folder: {left}");
    if left > 0 {
        return Err(format!("{left} sandbox folders were left behind"));
    }
    Ok(())
}

fn sse_head(s: &mut TcpStream) {
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    );
}

fn one_byte_a_second(body: &str, s: &mut TcpStream) {
    if !body.contains("messages") {
        return json_reply(s, &json!({"data": []}));
    }
    sse_head(s);
    for b in b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"
        .iter()
        .cycle()
    {
        if s.write_all(&[*b]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn endless(body: &str, s: &mut TcpStream) {
    if !body.contains("messages") {
        return json_reply(s, &json!({"data": []}));
    }
    sse_head(s);
    while s
        .write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"la \"}}]}\n\n")
        .is_ok()
    {
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn invalid_utf8(body: &str, s: &mut TcpStream) {
    if !body.contains("messages") {
        return json_reply(s, &json!({"data": []}));
    }
    sse_head(s);
    let _ = s.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"ok \"}}]}\n\n");
    let _ = s.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\xc3\"}}]}\n\n");
    let _ = s.write_all(b"data: [DONE]\n\n");
}

fn huge_line(body: &str, s: &mut TcpStream) {
    if !body.contains("messages") {
        return json_reply(s, &json!({"data": []}));
    }
    sse_head(s);
    let _ = s.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..100 {
        if s.write_all(&chunk).is_err() {
            return;
        }
    }
    let _ = s.write_all(b"\"}}]}\n\n");
}

fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

fn faults(bin: &Path) -> Result<(), String> {
    println!("3. Faults, through the CLI, [limits] request_timeout_secs = 3");
    println!(
        "   {:<38} {:>8} {:>14}  refusal",
        "server", "seconds", "peak RSS MiB"
    );
    let cases: [(&str, Answer); 4] = [
        ("one byte a second", one_byte_a_second),
        ("an endless stream", endless),
        ("invalid UTF-8 mid-stream", invalid_utf8),
        ("a 100 MB stream line", huge_line),
    ];
    let mut failed = 0;
    for (name, answer) in cases {
        let url = endpoint(answer);
        let ws = workspace(&url, 1, "[limits]\nrequest_timeout_secs = 3\n");
        let start = Instant::now();
        let mut child = Command::new(bin)
            .args([
                "propose",
                "--workspace-root",
                &ws.path().display().to_string(),
                "--task",
                "Set V0 to 2",
                "--accept",
                "V0 is 2",
                "--complexity",
                "low",
                "--file",
                "src/f0.py",
                "--json",
            ])
            .env("LOCAL_LLM_LEDGER", ws.path().join("ledger.jsonl"))
            .env("LOCAL_LLM_STATE_DIR", ws.path().join("state"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        // The child's own peak resident memory, from wait4's rusage.
        let mut status = 0;
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: wait4 fills `status` and `usage` for our own child, whose pid we pass.
        unsafe { libc::wait4(child.id() as i32, &mut status, 0, usage.as_mut_ptr()) };
        // SAFETY: wait4 returned for our child, so `usage` is filled.
        let rss_mib = unsafe { usage.assume_init() }.ru_maxrss as f64 / 1024.0;
        let secs = start.elapsed().as_secs_f64();
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let msg = v["error"]["message"].as_str().unwrap_or("(no refusal)");
        let clear = v["error"]["kind"].is_string() && secs < 10.0;
        if !clear {
            failed += 1;
        }
        println!(
            "   {name:<38} {secs:>8.2} {rss_mib:>14.1}  {}{}",
            excerpt(msg, 110),
            if clear { "" } else { "  <- NOT within bounds" }
        );
    }
    if failed > 0 {
        return Err(format!(
            "{failed} fault case(s) did not end with a clear refusal in time"
        ));
    }
    Ok(())
}
