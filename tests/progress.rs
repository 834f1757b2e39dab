//! Progress notifications and cancellation through a real MCP client (rmcp's, over the binary's stdio), against a
//! scripted endpoint that streams its answer slowly (a real server cannot be made to stream slowly on demand).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, with its message"
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<f64>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}

fn sample(
    base_url: &str,
    ledger: &std::path::Path,
) -> (
    Ws,
    Recorder,
    impl std::future::Future<Output = rmcp::service::RunningService<RoleClient, Recorder>>,
) {
    let ws = Ws::new(base_url, "[paths]\nallowed = [\"src/**\"]\n");
    ws.write("src/value.py", "VALUE = 1\n");
    let rec = Recorder::default();
    let ledger = ledger.to_path_buf();
    let r2 = rec.clone();
    let fut = async move {
        let t = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
            c.arg("mcp")
                .env("LOCAL_LLM_LEDGER", &ledger)
                .env("LOCAL_LLM_STATE_DIR", test_state())
                .env_remove("LOCAL_LLM_CONFIG");
        }))
        .unwrap();
        r2.serve(t).await.unwrap()
    };
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
    let s = scripted(vec![Reply::streamed(&refs, 5)]);
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
