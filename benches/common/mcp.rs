//! The MCP client (stdio, newline-delimited JSON-RPC) the benches drive the worker with. Its model is the instant
//! scripted endpoint of [`super::scripted`] (a scripted fake, not a model: the benches measure the worker).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

type BenchResult<T> = Result<T, String>;

/// How long a request to the server may take before the bench gives up.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------------------------
// MCP over stdio, as a client
// ---------------------------------------------------------------------------------------------------------------

pub struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mcp {
    pub fn spawn(mut cmd: Command) -> BenchResult<Mcp> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot spawn {cmd:?}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
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
        Ok(Mcp {
            child,
            stdin,
            lines,
            next_id: 1,
        })
    }

    /// The next JSON message the server wrote, waiting at most `timeout`.
    pub fn recv(&self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                return Some(v);
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, msg: &Value) -> BenchResult<()> {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the server's stdin: {e}"))
    }

    /// Send a request and wait for its response, skipping any other message (notifications, logs).
    pub fn request(&mut self, method: &str, params: Value) -> BenchResult<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + CHILD_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).map_err(|e| match e {
                mpsc::RecvTimeoutError::Timeout => {
                    format!("no response to {method} within {CHILD_TIMEOUT:?}")
                }
                mpsc::RecvTimeoutError::Disconnected => {
                    format!("the server closed stdout before answering {method}")
                }
            })?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(err) = v.get("error") {
                return Err(format!("the server answered {method} with an error: {err}"));
            }
            return Ok(v);
        }
    }

    /// `initialize`, `notifications/initialized`, `tools/list`; returns the tool names and the server's name.
    pub fn handshake(&mut self) -> BenchResult<(Vec<String>, String)> {
        let init = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "local-llm-worker-bench", "version": "0.1.0"},
            }),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let list = self.request("tools/list", json!({}))?;
        let tools: Vec<String> = list["result"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if tools.is_empty() {
            return Err(format!("tools/list returned no tools: {list}"));
        }
        let r = &init["result"];
        let server = format!(
            "{} {}, protocol {}",
            r["serverInfo"]["name"].as_str().unwrap_or("?"),
            r["serverInfo"]["version"].as_str().unwrap_or("?"),
            r["protocolVersion"].as_str().unwrap_or("?")
        );
        Ok((tools, server))
    }

    /// `tools/call`; returns the structured result, or the tool's refusal as an error.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> BenchResult<Value> {
        let v = self.request("tools/call", json!({"name": name, "arguments": arguments}))?;
        let result = &v["result"];
        if result["isError"] == json!(true) {
            return Err(format!("{name} was refused: {result}"));
        }
        if let Some(s) = result.get("structuredContent") {
            return Ok(s.clone());
        }
        result["content"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| format!("{name} returned no structured result: {result}"))
    }
}
