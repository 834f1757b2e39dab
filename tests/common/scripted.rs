//! The scripted OpenAI-compatible endpoint on 127.0.0.1, one implementation for the tests (`tests/common/mod.rs`)
//! and the benches (`benches/common/mod.rs` includes this file by its path).
//!
//! It is a scripted fake, not the real model server. The tests use it where the answer must be exact (determinism:
//! a given edit, a given hostile answer) and where a real server cannot be made to fail on demand (the error paths:
//! statuses, `Retry-After`, slow or cut streams, invalid UTF-8, a key echoed back); the benches use its instant
//! answer so that they measure the worker, not a model. The tests against a real server are `tests/suite/real_model.rs`.
//!
//! Also here: a base URL where nothing listens (the unreachable-server paths) and a tripwire port that only notes
//! that something connected (to show that nothing reached the host's loopback).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, with its message"
)]

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the endpoint waits for a request's bytes before it gives up on the connection.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

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

    /// A chat completion whose message content is `content`, ended for `finish_reason`.
    pub fn chat_with(content: &str, finish_reason: &str) -> Reply {
        let body = serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        });
        Reply::status(200, &body.to_string())
    }

    /// The benches' chat completion: `content`, with a usage that says the whole prompt was read (more tokens than
    /// any bench sends), so the dropped-prompt guard lets it through as it would a real server's.
    #[allow(
        dead_code,
        reason = "for the benches, which include this file: no test uses it"
    )]
    pub fn instant(content: &str) -> Reply {
        let body = serde_json::json!({
            "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10_000_000, "completion_tokens": 5, "total_tokens": 10_000_005},
            "model": "scripted",
        });
        Reply::status(200, &body.to_string())
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
            stream: Some((chunks, delay_ms)),
            ..Reply::status(200, "")
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

/// A running scripted endpoint. It answers POSTs with its replies in order (the last one repeats) and anything else
/// with a fixed reply.
pub struct Scripted {
    pub base_url: String,
    pub port: u16,
    /// Every POST body (recorded by [`scripted`], not by [`instant`]).
    pub requests: Arc<Mutex<Vec<serde_json::Value>>>,
    /// Every request with its method, path and headers (recorded by [`scripted`], not by [`instant`]).
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Set when a streamed reply could not be written to the end (the client hung up).
    pub hung_up: Arc<AtomicBool>,
    /// How many streamed replies could not be written to the end.
    pub hung_ups: Arc<AtomicUsize>,
    /// Requests answered: each reply written in full.
    pub answered: Arc<AtomicUsize>,
    /// Chat requests (the POSTs no route answers) read and not yet answered in full, and the most there ever were.
    pub in_flight: Arc<AtomicUsize>,
    pub max_in_flight: Arc<AtomicUsize>,
}

impl Scripted {
    /// The one edit request `i` pinned its answer to: read from the answer's start the request wrote for the model
    /// (llama.cpp continues it: an assistant message ending at `"new":"`), else from its schema's enums.
    pub fn pinned_edit(&self, i: usize) -> serde_json::Value {
        let req = self.requests.lock().unwrap()[i].clone();
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        if let Some(last) = messages.last().filter(|m| m["role"] == "assistant") {
            let start = last["content"].as_str().unwrap_or_default();
            let edit: serde_json::Value = serde_json::from_str(&format!("{start} \"\"}}]}}"))
                .unwrap_or_else(|e| panic!("the prefill {start:?} is not an edit's start: {e}"));
            let mut edit = edit["edits"][0].clone();
            edit.as_object_mut().map(|e| e.remove("new"));
            return edit;
        }
        let props = &req["response_format"]["json_schema"]["schema"]["properties"]["edits"]["items"]
            ["properties"];
        let mut edit = serde_json::Map::new();
        for key in ["path", "old", "after"] {
            if let Some(v) = props[key]["enum"].as_array().filter(|a| a.len() == 1) {
                edit.insert(key.into(), v[0].clone());
            }
        }
        edit.into()
    }
}

/// How an endpoint serves.
struct Script {
    replies: Vec<Reply>,
    /// The reply to anything but a POST.
    other: Reply,
    /// Each connection on a thread of its own (no request waits for another); else one after the other, in the
    /// order they came, so that the replies go out in a known order.
    concurrent: bool,
    /// Whether requests are recorded in `requests` and `seen`.
    record: bool,
    /// Fixed replies by method and path (a server's own discovery API: llama.cpp `/props`, Ollama `/api/show`...);
    /// a routed POST is recorded in `seen` only, and takes none of `replies`.
    routes: Vec<(String, String, Reply)>,
}

/// The tests' endpoint: `replies` in order to POSTs, an empty model list to GETs, one connection at a time, every
/// request recorded.
pub fn scripted(replies: Vec<Reply>) -> Scripted {
    scripted_server(&[], replies)
}

/// A scripted model server with its own API: `routes` (method, path, reply) answer those requests, in the shapes
/// the server's documentation gives; everything else as [`scripted`].
pub fn scripted_server(routes: &[(&str, &str, Reply)], replies: Vec<Reply>) -> Scripted {
    serve(Script {
        replies,
        other: Reply::status(200, "{\"data\": []}"),
        concurrent: false,
        record: true,
        routes: routes
            .iter()
            .map(|(m, p, r)| (m.to_string(), p.to_string(), r.clone()))
            .collect(),
    })
    .expect("the scripted endpoint needs a port on 127.0.0.1")
}

/// The benches' instant endpoint: every chat request answered at once with `content`, other methods with 405, each
/// connection on its own thread, nothing recorded.
#[allow(
    dead_code,
    reason = "for the benches, which include this file: no test uses it"
)]
pub fn instant(content: &str) -> std::io::Result<Scripted> {
    serve(Script {
        replies: vec![Reply::instant(content)],
        other: Reply::status(405, ""),
        concurrent: true,
        record: false,
        routes: Vec::new(),
    })
}

/// Bind a port on 127.0.0.1 and serve `script` there on a thread of its own.
fn serve(script: Script) -> std::io::Result<Scripted> {
    assert!(
        !script.replies.is_empty(),
        "a scripted endpoint needs a reply"
    );
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let state = Scripted {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        port,
        requests: Arc::default(),
        seen: Arc::default(),
        hung_up: Arc::default(),
        hung_ups: Arc::default(),
        answered: Arc::default(),
        in_flight: Arc::default(),
        max_in_flight: Arc::default(),
    };
    let shared = Arc::new((script, state.share(), AtomicUsize::new(0)));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let shared = Arc::clone(&shared);
            if shared.0.concurrent {
                std::thread::spawn(move || answer(stream, &shared.0, &shared.1, &shared.2));
            } else {
                answer(stream, &shared.0, &shared.1, &shared.2);
            }
        }
    });
    Ok(state)
}

impl Scripted {
    /// Another handle on the same records and counters.
    fn share(&self) -> Scripted {
        Scripted {
            base_url: self.base_url.clone(),
            port: self.port,
            requests: Arc::clone(&self.requests),
            seen: Arc::clone(&self.seen),
            hung_up: Arc::clone(&self.hung_up),
            hung_ups: Arc::clone(&self.hung_ups),
            answered: Arc::clone(&self.answered),
            in_flight: Arc::clone(&self.in_flight),
            max_in_flight: Arc::clone(&self.max_in_flight),
        }
    }
}

/// One request as read: what a missing or unreadable part leaves is empty.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Read one request from `stream`, record it when the script says so, and answer it; the `posts`-th POST gets the
/// `posts`-th reply (the last one repeats).
fn answer(stream: TcpStream, script: &Script, state: &Scripted, posts: &AtomicUsize) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let request = read_request(&mut BufReader::new(read_half));
    let route = script
        .routes
        .iter()
        .find(|(m, p, _)| {
            *m == request.method && request.path.split('?').next() == Some(p.as_str())
        })
        .map(|(_, _, r)| r);
    let is_post = request.method == "POST" && route.is_none();
    if script.record {
        let body: serde_json::Value =
            serde_json::from_slice(&request.body).unwrap_or(serde_json::Value::Null);
        if is_post {
            state.requests.lock().unwrap().push(body.clone());
        }
        state.seen.lock().unwrap().push(Seen {
            method: request.method,
            path: request.path,
            headers: request.headers,
            body,
        });
    }
    let reply = if let Some(r) = route {
        r
    } else if is_post {
        let n = posts.fetch_add(1, Ordering::SeqCst);
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        &script.replies[n.min(script.replies.len() - 1)]
    } else {
        &script.other
    };
    // A request stops counting as in flight just before its last bytes go out: the client can send its next
    // request only once it has read them, so a request that follows another is never counted as overlapping it
    // (however late this thread gets scheduled), while requests sent together are.
    let done = InFlight(is_post.then(|| Arc::clone(&state.in_flight)));
    match &reply.stream {
        None => {
            if write_reply(stream, reply, done).is_ok() {
                state.answered.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Streamed on a thread of its own: a slow stream holds up no other request.
        Some((chunks, delay)) => {
            let (chunks, delay, extra) = (chunks.clone(), *delay, extra_headers(reply));
            let (hung_up, answered) = (Arc::clone(&state.hung_up), Arc::clone(&state.answered));
            let hung_ups = Arc::clone(&state.hung_ups);
            std::thread::spawn(move || {
                if write_stream(stream, &chunks, delay, &extra, done).is_ok() {
                    answered.fetch_add(1, Ordering::Relaxed);
                } else {
                    hung_up.store(true, Ordering::SeqCst);
                    hung_ups.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    }
}

/// The request line, the headers (names in lower case) and the body (by its `Content-Length`, or chunked).
fn read_request(reader: &mut impl BufRead) -> Request {
    let mut request_line = String::new();
    let _ = reader.read_line(&mut request_line);
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut len = 0usize;
    let mut chunked = false;
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
            } else if k == "transfer-encoding" {
                chunked = v.to_ascii_lowercase().contains("chunked");
            }
            headers.push((k, v));
        }
    }
    let body = if chunked {
        read_chunked(reader).unwrap_or_default()
    } else {
        let mut body = vec![0; len];
        match reader.read_exact(&mut body) {
            Ok(()) => body,
            Err(_) => Vec::new(),
        }
    };
    Request {
        method,
        path,
        headers,
        body,
    }
}

/// A chunked body, to its last chunk.
fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let hex = size.trim().split(';').next().unwrap_or("");
        let n =
            usize::from_str_radix(hex, 16).map_err(|_| std::io::Error::other("bad chunk size"))?;
        let mut chunk = vec![0u8; n + 2]; // the data and its CRLF
        reader.read_exact(&mut chunk)?;
        if n == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

/// The reply's extra headers as header lines.
fn extra_headers(reply: &Reply) -> String {
    reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect()
}

/// A reason phrase for a status line (clients read only the code).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        405 => "Method Not Allowed",
        _ => "Scripted",
    }
}

/// A whole reply: its status, headers and body, then the end of the connection.
/// The count of POSTs in flight, taken down by one when this is dropped (or ended early with [`InFlight::end`]).
struct InFlight(Option<Arc<AtomicUsize>>);

impl InFlight {
    fn end(&mut self) {
        if let Some(n) = self.0.take() {
            n.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.end();
    }
}

fn write_reply(
    mut stream: TcpStream,
    reply: &Reply,
    mut in_flight: InFlight,
) -> std::io::Result<()> {
    let body = reply
        .raw
        .clone()
        .unwrap_or_else(|| reply.body.clone().into_bytes());
    write!(
        stream,
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        reply.status,
        reason(reply.status),
        body.len(),
        extra_headers(reply),
    )?;
    in_flight.end();
    stream.write_all(&body)?;
    stream.flush()?;
    let _ = stream.shutdown(Shutdown::Write);
    Ok(())
}

/// A server-sent event stream: each chunk, then `[DONE]`, `delay_ms` apart; `Err` when the client hung up.
fn write_stream(
    mut stream: TcpStream,
    chunks: &[String],
    delay_ms: u64,
    extra: &str,
    mut in_flight: InFlight,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{extra}Connection: close\r\n\r\n"
    )?;
    for c in chunks.iter().map(String::as_str).chain(["[DONE]"]) {
        std::thread::sleep(Duration::from_millis(delay_ms));
        if c == "[DONE]" {
            in_flight.end();
        }
        write!(stream, "data: {c}\n\n")?;
        stream.flush()?;
    }
    Ok(())
}

/// A port on 127.0.0.1 that nothing listens on (it was free a moment ago).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// A base URL where nothing listens, for the paths where the model server cannot be reached.
pub fn unreachable_base_url() -> String {
    format!("http://127.0.0.1:{}/v1", free_port())
}

/// A port on 127.0.0.1 that accepts connections and closes them at once, noting that one came. A fake too: it
/// serves nothing, it only shows whether anything reached the host's loopback.
pub struct Tripwire {
    pub port: u16,
    pub connected: Arc<AtomicBool>,
}

/// Start a [`Tripwire`].
pub fn tripwire() -> Tripwire {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
    let port = listener.local_addr().expect("the tripwire's port").port();
    let connected = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&connected);
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            flag.store(true, Ordering::SeqCst);
            drop(c);
        }
    });
    Tripwire { port, connected }
}
