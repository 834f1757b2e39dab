//! The MCP client (stdio, newline-delimited JSON-RPC) and the instant scripted OpenAI-compatible endpoint the
//! benches drive the worker with. A scripted endpoint, not a model: the benches measure the worker, not a model.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

// ---------------------------------------------------------------------------------------------------------------
// The instant scripted endpoint
// ---------------------------------------------------------------------------------------------------------------

/// Start the scripted OpenAI-compatible endpoint, which answers every chat request at once with `content`; returns
/// its port and the count of requests it answered.
pub fn start_endpoint(content: &str) -> BenchResult<(u16, Arc<AtomicUsize>)> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let body = json!({
        "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
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
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_nodelay(true)?;
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
