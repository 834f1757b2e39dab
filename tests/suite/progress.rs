//! Progress notifications and cancellation through a real MCP client (rmcp's, over the binary's stdio), against a
//! scripted endpoint that streams its answer slowly (a real server cannot be made to stream slowly on demand), and
//! against [`SilentModel`], a fake model server (not a real one) that reads the request and then sends nothing
//! for 20 s: cancelling (MCP `notifications/cancelled`, closing stdin, Ctrl-C on the CLI) must close its
//! connection at once. The fake notes when it sees the connection close; the tests print that latency and assert
//! only that it came long before the 20-s reply.

use std::io::{BufRead, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient};

#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<f64>>>,
    messages: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
        self.messages
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

/// The sample's policy body (after its `[provider]`).
const SAMPLE_POLICY: &str = "[paths]\nallowed = [\"src/**\"]\n";

fn sample(
    base_url: &str,
    ledger: &std::path::Path,
) -> (
    Ws,
    Recorder,
    impl std::future::Future<Output = rmcp::service::RunningService<RoleClient, Recorder>>,
) {
    sample_with(base_url, SAMPLE_POLICY, ledger)
}

/// [`sample`] with `policy` as the policy's body.
fn sample_with(
    base_url: &str,
    policy: &str,
    ledger: &std::path::Path,
) -> (
    Ws,
    Recorder,
    impl std::future::Future<Output = rmcp::service::RunningService<RoleClient, Recorder>>,
) {
    let ws = Ws::new(base_url, policy);
    ws.write("src/value.py", "VALUE = 1\n");
    let rec = Recorder::default();
    let ledger = ledger.to_path_buf();
    let r2 = rec.clone();
    let fut = async move { Cli::mcp().ledger(&ledger).serve_with(r2).await };
    (ws, rec, fut)
}

fn call_request(ws: &Ws) -> ClientRequest {
    let serde_json::Value::Object(args) = serde_json::json!({
        "workspace_root": ws.root_str(),
        "task": "Set VALUE to 2",
        "acceptance_criteria": ["VALUE is 2"],
        "complexity": "low",
        "files": ["src/value.py"]
    }) else {
        unreachable!()
    };
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("propose_patch").with_arguments(args),
    ))
}

/// The streamed answer: the JSON edit list split into many small chunks.
fn pieces() -> Vec<String> {
    let answer = r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;
    answer.chars().map(|c| c.to_string()).collect()
}

#[tokio::test]
async fn progress_is_notified_while_the_model_streams() {
    let p = pieces();
    let refs: Vec<&str> = p.iter().map(String::as_str).collect();
    // About 3.5 s of streaming: a heartbeat every second.
    let s = scripted(vec![Reply::streamed(&refs, 50)]);
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let (ws, rec, client) = sample(&s.base_url, ledger.path());
    let client = client.await;
    let handle = client
        .peer()
        .send_cancellable_request(call_request(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    let resp = handle.await_response().await.unwrap();
    let text = serde_json::to_string(&resp).unwrap();
    assert!(text.contains("+VALUE = 2"), "{text}");
    let progress = rec.progress.lock().unwrap().clone();
    assert!(
        progress.len() >= 3,
        "expected several progress notifications, got {progress:?}"
    );
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {progress:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_aborts_the_model_request_and_writes_nothing() {
    let p = pieces();
    let refs: Vec<&str> = p.iter().map(String::as_str).collect();
    // About 10 s of streaming if nobody cancels.
    let s = scripted(vec![Reply::streamed(&refs, 140)]);
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let (ws, _rec, client) = sample(&s.base_url, ledger.path());
    let before = ws.snapshot();
    let client = client.await;
    let handle = client
        .peer()
        .send_cancellable_request(call_request(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let start = std::time::Instant::now();
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    // The worker stops reading the stream (the server sees the connection close) and records the cancellation.
    let mut recorded = String::new();
    while start.elapsed() < Duration::from_secs(5) {
        recorded = std::fs::read_to_string(ledger.path()).unwrap_or_default();
        if recorded.contains("refused:cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        recorded.contains("refused:cancelled"),
        "the ledger shows no cancelled propose: {recorded:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "cancellation took {:?}",
        start.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        s.hung_up.load(std::sync::atomic::Ordering::SeqCst),
        "the model request was not aborted"
    );
    assert_eq!(ws.snapshot(), before);
    client.cancel().await.unwrap();
}

/// How long [`SilentModel`] stays silent before it would answer.
const SILENCE: Duration = Duration::from_secs(20);

/// A fake model server (scripted, not a real model). Any GET (the window discovery) gets a 404 at once; a POST
/// (the model request) is read, then nothing is sent for `silence`, then `answer` (a whole chat completion body),
/// unless the client closes the connection first: the server notes the instant it saw that close.
struct SilentModel {
    base_url: String,
    /// When the server saw the client close the model request's connection.
    closed_at: Arc<Mutex<Option<Instant>>>,
    /// Whether the model request reached it.
    asked: Arc<std::sync::atomic::AtomicBool>,
}

/// Read one HTTP request's head and body; `None` when the client closed first. Returns the method.
fn read_request(reader: &mut impl BufRead) -> Option<String> {
    let mut length = 0usize;
    let mut method = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if method.is_none() {
            method = line.split(' ').next().map(str::to_string);
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    method
}

/// Wait `silence` for the client to close `stream`; returns when it saw the close, `None` when it did not.
fn wait_for_close(stream: &mut std::net::TcpStream, silence: Duration) -> Option<Instant> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(5)))
        .ok()?;
    let mut byte = [0u8; 1];
    while start.elapsed() < silence {
        match stream.read(&mut byte) {
            Ok(0) => return Some(Instant::now()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(Instant::now()),
        }
    }
    None
}

fn silent_model(silence: Duration, answer: &str) -> SilentModel {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let closed_at = Arc::new(Mutex::new(None));
    let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (closed, seen, answer) = (closed_at.clone(), asked.clone(), answer.to_string());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let Some(method) = read_request(&mut reader) else {
                continue;
            };
            if method != "POST" {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(at) = wait_for_close(&mut stream, silence) {
                *closed.lock().unwrap() = Some(at);
                return;
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
            return;
        }
    });
    SilentModel {
        base_url,
        closed_at,
        asked,
    }
}

impl SilentModel {
    /// Wait until the request has reached the server (at most 30 s).
    fn wait_asked(&self) {
        let start = Instant::now();
        while !self.asked.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the model was never asked"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// How long after `cancel` the server saw the connection close; panics when it did not within 10 s (the reply
    /// would come at 20 s). Prints the measured latency.
    #[track_caller]
    fn closed_after(&self, cancel: Instant, how: &str) -> Duration {
        while cancel.elapsed() < Duration::from_secs(10) {
            if let Some(at) = *self.closed_at.lock().unwrap() {
                let latency = at.saturating_duration_since(cancel);
                println!(
                    "measured: {how}: the model connection closed {} ms after the cancel",
                    latency.as_millis()
                );
                return latency;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("{how}: the model connection was still open 10 s after the cancel");
    }
}

/// A chat completion answer (one JSON body) with the edit of the sample.
fn whole_answer() -> String {
    serde_json::json!({
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
    .to_string()
}

/// Wait (at most 10 s) for the ledger to record a cancelled call.
#[track_caller]
fn ledger_records_cancelled(ledger: &std::path::Path) {
    let start = Instant::now();
    let mut recorded = String::new();
    while start.elapsed() < Duration::from_secs(10) {
        recorded = std::fs::read_to_string(ledger).unwrap_or_default();
        if recorded.contains("refused:cancelled") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the ledger shows no cancelled call: {recorded:?}");
}

/// Propose over MCP against `base_url` (the policy body `policy`), wait for `reached`, then 1 s more, cancel with
/// `notifications/cancelled`, and check with `gone` (given the instant of the cancel) that the model request is no
/// more; the ledger must record the cancelled call and the workspace stay as it was.
async fn cancel_over_mcp(
    base_url: &str,
    policy: &str,
    reached: impl FnOnce(),
    gone: impl FnOnce(Instant),
) {
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let (ws, _rec, client) = sample_with(base_url, policy, ledger.path());
    let before = ws.snapshot();
    let client = client.await;
    let handle = client
        .peer()
        .send_cancellable_request(call_request(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    tokio::task::block_in_place(reached);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cancel = Instant::now();
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    tokio::task::block_in_place(|| {
        gone(cancel);
        ledger_records_cancelled(ledger.path());
    });
    assert_eq!(ws.snapshot(), before);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_at_once_notifications_cancelled_closes_a_silent_model_connection() {
    let model = silent_model(SILENCE, &whole_answer());
    cancel_over_mcp(
        &model.base_url,
        SAMPLE_POLICY,
        || model.wait_asked(),
        |cancel| {
            model.closed_after(cancel, "notifications/cancelled");
        },
    )
    .await;
}

/// The worker's stdio, driven by hand: JSON-RPC lines in, lines out.
fn start_raw(ledger: &std::path::Path, state: &std::path::Path) -> std::process::Child {
    Cli::mcp()
        .ledger(ledger)
        .state(state)
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Start the worker's MCP server by hand on `ws` and send it the call; returns it with its stdin still open.
fn start_raw_call(
    ws: &Ws,
    ledger: &std::path::Path,
    state: &std::path::Path,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = start_raw(ledger, state);
    let mut stdin = child.stdin.take().unwrap();
    let ClientRequest::CallToolRequest(req) = call_request(ws) else {
        unreachable!()
    };
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": req.params});
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        call.to_string(),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    (child, stdin)
}

/// Wait for the worker started by [`start_raw_call`] to exit; assert that it answered the call as cancelled.
#[track_caller]
fn answered_cancelled(child: std::process::Child) {
    let out = child.wait_with_output().unwrap();
    let answers: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let answer = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("the call got no answer: {answers:?}"));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["kind"], "cancelled",
        "{answer}"
    );
}

/// Propose through the worker's MCP server driven by hand against `base_url` (the policy body `policy`), wait for
/// `reached`, then 1 s more, close its stdin, and check with `gone` (given the instant of the close) that the model
/// request is no more; the call must be answered `cancelled`, the ledger record it and the workspace stay as it was.
fn cancel_by_closing_stdin(
    base_url: &str,
    policy: &str,
    reached: impl FnOnce(),
    gone: impl FnOnce(Instant),
) {
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ws = Ws::new(base_url, policy);
    ws.trust_in(state.path());
    ws.write("src/value.py", "VALUE = 1\n");
    let before = ws.snapshot();
    let (child, stdin) = start_raw_call(&ws, ledger.path(), state.path());
    reached();
    std::thread::sleep(Duration::from_secs(1));
    let cancel = Instant::now();
    drop(stdin);
    gone(cancel);
    answered_cancelled(child);
    ledger_records_cancelled(ledger.path());
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn cancellation_at_once_stdin_closed_closes_a_silent_model_connection_and_answers_cancelled() {
    let model = silent_model(SILENCE, &whole_answer());
    cancel_by_closing_stdin(
        &model.base_url,
        SAMPLE_POLICY,
        || model.wait_asked(),
        |cancel| {
            model.closed_after(cancel, "stdin closed");
        },
    );
}

/// A model server that never accepts (a scripted situation, not a real server): a listener whose accept queue
/// (`listen(0)`: one connection on Linux) is filled by connections the test opens and never accepts, so the
/// kernel drops any further SYN and a connect to it hangs in SYN retry (about two minutes). The filling
/// connections live as long as this value.
struct FullServer {
    base_url: String,
    port: u16,
    _listener: std::net::TcpListener,
    _filling: Vec<std::net::TcpStream>,
}

/// Start a [`FullServer`], and check that a connect to it really hangs (else the tests below prove nothing).
fn full_server() -> FullServer {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    rustix::net::listen(&listener, 0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut filling = Vec::new();
    for _ in 0..8 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Ok(s) => filling.push(s),
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
                return FullServer {
                    base_url: format!("http://{addr}/v1"),
                    port: addr.port(),
                    _listener: listener,
                    _filling: filling,
                };
            }
        }
    }
    panic!(
        "connects to a listener with a full accept queue did not hang: the scenario cannot be set up here"
    );
}

impl FullServer {
    /// How many connects to this server are in progress (`SYN_SENT` in `/proc/net/tcp`).
    fn connecting(&self) -> usize {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
        let remote = format!(":{:04X}", self.port);
        table
            .lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[2].ends_with(&remote) && f[3] == "02"
            })
            .count()
    }

    /// Wait (at most 30 s) until the worker is connecting.
    fn wait_connecting(&self) {
        let start = Instant::now();
        while self.connecting() == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the worker never started connecting"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait (at most 10 s; the connect would hang for two minutes) until no connect to this server is left.
    #[track_caller]
    fn no_connection_left(&self, how: &str) {
        let start = Instant::now();
        while self.connecting() > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{how}: the connect was still in progress 10 s after the cancel"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        println!(
            "measured: {how}: the connect was abandoned {} ms after the cancel",
            start.elapsed().as_millis()
        );
    }
}

/// The sample's policy with the window given, so no discovery request (bounded on its own) comes first.
const NO_DISCOVERY: &str = "[paths]\nallowed = [\"src/**\"]\n\n[models]\ncontext_window = 8192\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_at_once_notifications_cancelled_abandons_a_connect_in_progress() {
    let server = full_server();
    cancel_over_mcp(
        &server.base_url,
        NO_DISCOVERY,
        || server.wait_connecting(),
        |_| server.no_connection_left("notifications/cancelled"),
    )
    .await;
}

#[test]
fn cancellation_at_once_stdin_closed_abandons_a_connect_in_progress_and_answers_cancelled() {
    let server = full_server();
    cancel_by_closing_stdin(
        &server.base_url,
        NO_DISCOVERY,
        || server.wait_connecting(),
        |_| server.no_connection_left("stdin closed"),
    );
}

#[test]
fn cancellation_at_once_ctrl_c_on_the_cli_closes_a_silent_model_connection() {
    let model = silent_model(SILENCE, &whole_answer());
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let ws = Ws::new(&model.base_url, "[paths]\nallowed = [\"src/**\"]\n");
    ws.write("src/value.py", "VALUE = 1\n");
    let before = ws.snapshot();
    let child = Cli::propose(ws.root())
        .file("src/value.py")
        .ledger(ledger.path())
        .state(state.path())
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    model.wait_asked();
    std::thread::sleep(Duration::from_secs(1));
    let cancel = Instant::now();
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    model.closed_after(cancel, "Ctrl-C on the CLI");
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cancelled"), "{err}");
    ledger_records_cancelled(ledger.path());
    assert_eq!(ws.snapshot(), before);
}

/// With a model that says nothing for 4.5 s, then answers, progress notifications come every second from the
/// first, each with more seconds than the last, and say that no token came yet.
#[tokio::test]
async fn progress_heartbeat_every_second_while_the_model_is_silent() {
    let model = silent_model(Duration::from_millis(4500), &whole_answer());
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let (ws, rec, client) = sample(&model.base_url, ledger.path());
    let client = client.await;
    let handle = client
        .peer()
        .send_cancellable_request(call_request(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    let resp = handle.await_response().await.unwrap();
    let text = serde_json::to_string(&resp).unwrap();
    assert!(text.contains("+VALUE = 2"), "{text}");
    let progress = rec.progress.lock().unwrap().clone();
    let messages = rec.messages.lock().unwrap().clone();
    assert!(
        progress.len() >= 3,
        "expected a heartbeat every second, got {progress:?}"
    );
    assert_eq!(progress[0], 1.0, "{progress:?}");
    assert!(
        progress.windows(2).all(|w| w[1] == w[0] + 1.0),
        "one per second: {progress:?}"
    );
    assert!(messages[0].contains("0 tokens"), "{messages:?}");
    client.cancel().await.unwrap();
}
