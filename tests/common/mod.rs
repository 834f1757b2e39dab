//! Shared helpers for the end-to-end tests: a scripted OpenAI-compatible endpoint, sample workspaces, tree hashes.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

pub const BIN: &str = env!("CARGO_BIN_EXE_local-llm-worker");

/// One scripted reply: HTTP status and body.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    /// Extra response headers (name, value).
    pub headers: Vec<(String, String)>,
    /// When set, the body is sent as a server-sent event stream of these chunks, this many ms apart.
    pub stream: Option<(Vec<String>, u64)>,
    /// When set, these exact bytes are sent as the body instead of `body` (for invalid UTF-8).
    pub raw: Option<Vec<u8>>,
}

impl Reply {
    /// A chat completion whose message content is `content`.
    pub fn chat(content: &str) -> Reply {
        Reply::chat_with(content, "stop")
    }

    pub fn chat_with(content: &str, finish_reason: &str) -> Reply {
        let body = serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        });
        Reply {
            status: 200,
            body: body.to_string(),
            headers: vec![],
            stream: None,
            raw: None,
        }
    }

    /// A plain reply with a status and body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.into(),
            headers: vec![],
            stream: None,
            raw: None,
        }
    }

    /// A streamed chat completion: one chunk per piece of `content`, `delay_ms` apart, then usage and [DONE].
    pub fn streamed(pieces: &[&str], delay_ms: u64) -> Reply {
        let mut chunks: Vec<String> = pieces
            .iter()
            .map(|p| {
                serde_json::json!({"model": "scripted-model", "choices": [{"index": 0, "delta": {"content": p}}]})
                    .to_string()
            })
            .collect();
        chunks.push(
            serde_json::json!({"model": "scripted-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                .to_string(),
        );
        chunks.push(
            serde_json::json!({"model": "scripted-model", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": pieces.len(), "total_tokens": 50 + pieces.len()}})
                .to_string(),
        );
        Reply {
            status: 200,
            body: String::new(),
            headers: vec![],
            stream: Some((chunks, delay_ms)),
            raw: None,
        }
    }
}

/// One request the scripted endpoint received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

/// A scripted OpenAI-compatible endpoint on 127.0.0.1: it answers requests with the given replies in order (the last
/// one repeats) and records every request body. It stands in for a model server where the reply must be exact.
pub struct Scripted {
    pub base_url: String,
    pub requests: Arc<Mutex<Vec<serde_json::Value>>>,
    /// Every request with its method, path and headers.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Set when a streamed reply could not be written to the end (the client hung up).
    pub hung_up: Arc<std::sync::atomic::AtomicBool>,
}

pub fn scripted(replies: Vec<Reply>) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen_all = Arc::new(Mutex::new(Vec::new()));
    let hung_up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (seen, seen2, hung) = (requests.clone(), seen_all.clone(), hung_up.clone());
    std::thread::spawn(move || {
        let mut n = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut parts = request_line.split_whitespace();
            let (method, path) = (
                parts.next().unwrap_or("").to_string(),
                parts.next().unwrap_or("").to_string(),
            );
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                if let Some((k, v)) = l.split_once(':') {
                    let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                    if k == "content-length" {
                        len = v.parse().unwrap_or(0);
                    }
                    headers.push((k, v));
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let value: serde_json::Value =
                serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            if method == "POST" {
                seen.lock().unwrap().push(value.clone());
            }
            seen2.lock().unwrap().push(Seen {
                method: method.clone(),
                path,
                headers,
                body: value,
            });
            if method != "POST" {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{{\"data\": []}}"
                );
                continue;
            }
            let reply = replies[n.min(replies.len() - 1)].clone();
            n += 1;
            let extra: String = reply
                .headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            match reply.stream {
                None => {
                    let body = reply
                        .raw
                        .clone()
                        .unwrap_or_else(|| reply.body.clone().into_bytes());
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                        reply.status,
                        body.len(),
                    );
                    let _ = stream.write_all(&body);
                }
                Some((chunks, delay)) => {
                    let hung = hung.clone();
                    std::thread::spawn(move || {
                        let mut ok = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{extra}Connection: close\r\n\r\n"
                        )
                        .is_ok();
                        for c in chunks.iter().map(String::as_str).chain(["[DONE]"]) {
                            if !ok {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(delay));
                            ok = write!(stream, "data: {c}\n\n")
                                .and_then(|_| stream.flush())
                                .is_ok();
                        }
                        if !ok {
                            hung.store(true, std::sync::atomic::Ordering::SeqCst);
                        }
                    });
                }
            }
        }
    });
    Scripted {
        base_url,
        requests,
        seen: seen_all,
        hung_up,
    }
}

/// A temporary workspace with files and a policy pointing at `base_url`.
pub struct Ws {
    pub dir: tempfile::TempDir,
}

impl Ws {
    pub fn new(base_url: &str, extra_policy: &str) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let ws = Ws { dir };
        ws.write(
            "local-llm-worker.toml",
            &format!(
                "[provider]\nkind = \"llamacpp\"\nbase_url = \"{base_url}\"\n\n{extra_policy}"
            ),
        );
        ws
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn root_str(&self) -> String {
        self.root().to_string_lossy().into_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }

    /// Every file under the workspace (symlinks as their target text) with its bytes and mode.
    pub fn snapshot(&self) -> BTreeMap<String, (Vec<u8>, u32)> {
        snapshot(self.dir.path())
    }
}

pub fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    (
                        std::fs::read_link(&p)
                            .unwrap()
                            .to_string_lossy()
                            .as_bytes()
                            .to_vec(),
                        0o120000,
                    ),
                );
            } else if m.is_dir() {
                out.insert(rel.clone() + "/", (Vec::new(), 0o040000));
                stack.push(p);
            } else {
                out.insert(rel, (std::fs::read(&p).unwrap(), m.permissions().mode()));
            }
        }
    }
    out
}

/// Run the CLI with `args` (and a clean policy environment).
pub fn cli(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("LOCAL_LLM_CONFIG")
        .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .output()
        .unwrap()
}

/// The state folder (journals, locks) of the tests' worker processes (never the user's).
pub fn test_state() -> PathBuf {
    std::env::temp_dir().join(format!("llw-test-state-{}", std::process::id()))
}

/// The ledger file the tests' worker processes write (never the user's).
pub fn test_ledger() -> PathBuf {
    std::env::temp_dir().join(format!("llw-test-ledger-{}.jsonl", std::process::id()))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `propose` with a standard low-complexity request on `files`, plus extra flags.
pub fn propose(ws: &Ws, files: &[&str], extra: &[&str]) -> Output {
    let root = ws.root_str();
    let mut args = vec![
        "propose",
        "--workspace-root",
        &root,
        "--task",
        "Set VALUE to 2",
        "--accept",
        "VALUE is 2",
        "--complexity",
        "low",
    ];
    for f in files {
        args.push("--file");
        args.push(f);
    }
    args.extend_from_slice(extra);
    cli(&args)
}

/// The sha256 hex of bytes, independently of the crate (via the `sha256sum` tool).
pub fn sha256_of_file(p: &Path) -> String {
    let o = Command::new("sha256sum").arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

pub fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}
