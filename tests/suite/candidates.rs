//! Candidates (`[sampling] candidates`), end to end through the binary against the scripted endpoint (a scripted
//! fake: it gives each request its own exact answer, in the order asked, which no real model does on demand; the
//! real local model's run is `tests/suite/real_model.rs`). The validation commands are real and run confined in the one
//! sandbox copy, reset between candidates.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::*;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;

/// The edit that sets VALUE to `n`.
fn edit(n: u32) -> String {
    format!(r#"{{"edits":[{{"path":"v.py","old":"VALUE = 1","new":"VALUE = {n}"}}]}}"#)
}

/// A workspace whose check passes only when v.py says VALUE = `passing`; `sampling` is its `[sampling]` body.
fn workspace(base_url: &str, passing: u32, sampling: &str) -> Ws {
    let ws = Ws::new(
        base_url,
        &format!(
            "[validation]\ncommands = [\"grep -q 'VALUE = {passing}' v.py\"]\non_propose = true\ntimeout_secs = 30\n\n\
             [sampling]\n{sampling}\n"
        ),
    );
    ws.write("v.py", "VALUE = 1\n");
    ws
}

fn propose_json(ws: &Ws, sandboxes: &Path) -> (Output, Value) {
    let out = Cli::propose(ws.root())
        .task("Set VALUE")
        .accept(&["the check passes"])
        .file("v.py")
        .arg("--json")
        .env("LOCAL_LLM_SANDBOX_DIR", sandboxes)
        .run();
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (out, v)
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn of_k_answers_the_one_that_passes_is_chosen_and_asking_stops_there() {
    // Answers in the order asked: 2, 2 again, 3 (passes), 4 (never asked).
    let s = scripted(vec![
        Reply::chat(&edit(2)),
        Reply::chat(&edit(2)),
        Reply::chat(&edit(3)),
        Reply::chat(&edit(4)),
    ]);
    let ws = workspace(&s.base_url, 3, "candidates = 4\nparallel = 1");
    let sandboxes = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 3"), "{v}");
    assert_eq!(v["validation_passed"], true);
    let c = &v["candidates"];
    assert_eq!(c["wanted"], 4, "{c}");
    assert_eq!(c["asked"], 3, "{c}");
    assert_eq!(c["parsed"], 3, "{c}");
    assert_eq!(c["distinct"], 2, "{c}");
    assert_eq!(c["validated"], 2, "{c}");
    assert_eq!(c["passed"], 1, "{c}");
    assert_eq!(c["chosen"], 3, "{c}");
    assert_eq!(c["why"], "its validation passed");
    assert_eq!(c["stopped"], "a candidate passed validation");
    // Every candidate's tokens (the scripted usage is 150 per answer).
    assert_eq!(v["usage"]["total_tokens"], 450);
    let reqs = s.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 3);
    // The first at the policy's temperature and no seed; the others hotter, each with its own seed.
    assert_eq!(reqs[0]["temperature"].as_f64().unwrap() as f32, 0.2);
    assert!(reqs[0].get("seed").is_none());
    assert_eq!(reqs[1]["seed"], 1);
    assert_eq!(reqs[2]["seed"], 2);
    assert!(reqs[1]["temperature"].as_f64().unwrap() > 0.5);
    assert_ne!(reqs[1]["temperature"], reqs[2]["temperature"]);
    assert_eq!(ws.snapshot(), before, "propose wrote to the workspace");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[test]
fn when_none_passes_the_most_voted_is_returned_marked_failed() {
    let s = scripted(vec![
        Reply::chat(&edit(4)),
        Reply::chat(&edit(2)),
        Reply::chat(&edit(2)),
        Reply::chat("this is not an edit at all"),
    ]);
    let ws = workspace(&s.base_url, 9, "candidates = 4\nparallel = 1");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 2"), "{v}");
    assert_eq!(v["validation_passed"], false);
    assert!(!v["validation"].as_array().unwrap().is_empty());
    let c = &v["candidates"];
    assert_eq!(c["asked"], 4, "{c}");
    assert_eq!(c["parsed"], 3, "{c}");
    assert_eq!(c["distinct"], 2, "{c}");
    assert_eq!(c["validated"], 2, "{c}");
    assert_eq!(c["passed"], 0, "{c}");
    assert_eq!(c["chosen"], 2, "{c}");
    assert_eq!(c["votes"], 2, "{c}");
    assert!(
        c["why"]
            .as_str()
            .unwrap()
            .starts_with("no candidate passed"),
        "{c}"
    );
    assert_eq!(c["refused"].as_array().unwrap().len(), 1, "{c}");
    assert!(
        c["refused"][0].as_str().unwrap().starts_with("answer 4: "),
        "{c}"
    );
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[test]
fn the_sandbox_is_reset_between_candidates() {
    // The first candidate's check passes only on the pristine copy plus its own edit; the second would pass only if
    // the first candidate's bytes had stayed: it must not.
    let first = r#"{"edits":[{"path":"v.py","old":"VALUE = 1","new":"VALUE = 1\nA = 1"}]}"#;
    let second = r#"{"edits":[{"path":"v.py","old":"VALUE = 1","new":"VALUE = 1\nB = 1"}]}"#;
    let s = scripted(vec![Reply::chat(first), Reply::chat(second)]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"grep -q '^B = 1' v.py && grep -q '^A = 1' v.py\"]\non_propose = true\n\n\
         [sampling]\ncandidates = 2\nparallel = 1\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(v["candidates"]["validated"], 2, "{v}");
    assert_eq!(v["candidates"]["passed"], 0, "{v}");
    assert_eq!(v["validation_passed"], false);
}

/// A chat completion whose usage says it cost `total` tokens (its prompt read whole).
fn costly(content: &str, total: u64) -> Reply {
    let body = serde_json::json!({
        "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": total - 100, "completion_tokens": 100, "total_tokens": total},
        "model": "scripted-model",
    });
    Reply::status(200, &body.to_string())
}

/// A streamed answer (`delay_ms` before each chunk, so requests asked together are in flight together) whose usage
/// says it spent `tokens`, all of them output (no prompt count, so the dropped-prompt check has nothing to say).
fn slow_costing(content: &str, delay_ms: u64, tokens: u64) -> Reply {
    let mut r = Reply::streamed(&[content], delay_ms);
    if let Some((chunks, _)) = &mut r.stream {
        let usage = serde_json::json!({"model": "scripted-model", "choices": [],
            "usage": {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}});
        *chunks.last_mut().unwrap() = usage.to_string();
    }
    r
}

#[test]
fn the_token_budget_holds_for_parallel_candidates() {
    // Budget 3,000, 8 candidates asked 8 at a time, each answer spending 500 of its [limits] max_output_tokens =
    // 600: a request starts only while spent + reserved + its own most (prompt estimate + 600) stay within 3,000.
    // Before, all 8 started at once (nothing was spent yet) and 4,000 were spent.
    let replies: Vec<Reply> = (2..10).map(|n| slow_costing(&edit(n), 300, 500)).collect();
    let s = scripted(replies);
    let ws = Ws::new(
        &s.base_url,
        "[limits]\nmax_output_tokens = 600\n\n[sampling]\ncandidates = 8\nparallel = 8\nmax_total_tokens = 3000\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let spent = v["usage"]["total_tokens"].as_u64().unwrap();
    assert!(
        spent <= 3000,
        "{spent} tokens spent over a budget of 3,000: {v}"
    );
    let c = &v["candidates"];
    let asked = c["asked"].as_u64().unwrap();
    println!("budget 3000, 8 candidates 8 at a time: {asked} asked, {spent} tokens spent");
    assert!((1..8).contains(&asked), "{c}");
    assert_eq!(spent, asked * 500, "{v}");
    assert_eq!(s.requests.lock().unwrap().len() as u64, asked);
    assert!(
        c["stopped"]
            .as_str()
            .unwrap()
            .contains("the token budget: [sampling] max_total_tokens = 3000"),
        "{c}"
    );
}

#[test]
fn the_token_budget_too_small_for_one_request_is_refused_before_asking() {
    let s = scripted(vec![Reply::chat(&edit(2))]);
    let ws = Ws::new(
        &s.base_url,
        "[sampling]\ncandidates = 2\nparallel = 2\nmax_total_tokens = 100\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, _) = propose_json(&ws, sandboxes.path());
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("[sampling] max_total_tokens = 100 leaves no room for one request"),
        "{}",
        stdout(&out)
    );
    assert!(s.requests.lock().unwrap().is_empty(), "a request was sent");
}

#[test]
fn the_token_budget_stops_asking() {
    // Each answer says it cost 10,000 tokens (more than it could: a server that overstates); the budget 15,000
    // lets a second request start (10,000 spent plus its most is under it) but no third.
    let s = scripted(vec![costly(&edit(2), 10_000), costly(&edit(4), 10_000)]);
    let ws = workspace(
        &s.base_url,
        9,
        "candidates = 5\nparallel = 1\nmax_total_tokens = 15000\n\n[repair]\nattempts = 0",
    );
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert_eq!(
        out.status.code(),
        Some(3),
        "neither answer passes: {}",
        stderr(&out)
    );
    let c = &v["candidates"];
    assert_eq!(c["asked"], 2, "{c}");
    assert!(
        c["stopped"]
            .as_str()
            .unwrap()
            .contains("[sampling] max_total_tokens = 15000, 20000 spent"),
        "{c}"
    );
    assert_eq!(s.requests.lock().unwrap().len(), 2);
    assert_eq!(v["usage"]["total_tokens"], 20_000);
}

#[test]
fn without_validation_the_most_voted_then_the_smallest_is_chosen() {
    let big = r#"{"edits":[{"path":"v.py","old":"VALUE = 1","new":"VALUE = 12345678\n# a longer change"}]}"#;
    let s = scripted(vec![
        Reply::chat(big),
        Reply::chat(&edit(5)),
        Reply::chat(big),
        Reply::chat(&edit(7)),
    ]);
    let ws = Ws::new(&s.base_url, "[sampling]\ncandidates = 4\nparallel = 2\n");
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        v["patch"].as_str().unwrap().contains("VALUE = 12345678"),
        "{v}"
    );
    assert_eq!(v["candidates"]["votes"], 2, "{v}");
    assert!(v["validation_passed"].is_null());
    // A tie of votes goes to the smallest change.
    let s = scripted(vec![Reply::chat(big), Reply::chat(&edit(5))]);
    let ws = Ws::new(&s.base_url, "[sampling]\ncandidates = 2\nparallel = 1\n");
    ws.write("v.py", "VALUE = 1\n");
    let (_, v) = propose_json(&ws, sandboxes.path());
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 5"), "{v}");
    assert_eq!(v["candidates"]["chosen"], 2, "{v}");
}

#[test]
fn no_usable_answer_among_k_is_one_refusal_that_lists_each() {
    let s = scripted(vec![
        Reply::chat("no edit here"),
        Reply::chat(r#"{"edits":[{"path":"v.py","old":"VALUE = 1","new":"VALUE = 1"}]}"#),
    ]);
    let ws = workspace(&s.base_url, 3, "candidates = 2\nparallel = 2");
    let sandboxes = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(!out.status.success());
    assert_eq!(v["error"]["kind"], "model_answer", "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("none of the 2 answers gave a usable patch")
            && msg.contains("answer 1: ")
            && msg.contains("answer 2: "),
        "{msg}"
    );
    assert_eq!(ws.snapshot(), before);
    assert!(empty(sandboxes.path()));
}

/// The MCP call of `propose_patch` on `v.py` of `ws` ("Set VALUE").
fn set_value_call(ws: &Ws) -> ClientRequest {
    let serde_json::Value::Object(args) = serde_json::json!({
        "workspace_root": ws.root_str(), "task": "Set VALUE", "acceptance_criteria": ["the check passes"],
        "complexity": "low", "files": ["v.py"]
    }) else {
        unreachable!()
    };
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("propose_patch").with_arguments(args),
    ))
}

/// The ledger's text once it records a cancelled call, or as it is after `within`.
async fn ledger_once_cancelled(ledger: &Path, within: Duration) -> String {
    let start = Instant::now();
    loop {
        let recorded = std::fs::read_to_string(ledger).unwrap_or_default();
        if recorded.contains("refused:cancelled") || start.elapsed() >= within {
            return recorded;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn cancelling_mid_way_leaves_no_request_and_no_sandbox() {
    // Four slow answers asked at once (each would take 20 s); the call is cancelled after the requests are open.
    let pieces: Vec<String> = (0..100).map(|_| " ".to_string()).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let s = scripted(vec![Reply::streamed(&pieces, 200)]);
    let ws = workspace(&s.base_url, 3, "candidates = 4\nparallel = 4");
    let sandboxes = tempfile::tempdir().unwrap();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let before = ws.snapshot();
    let (sb, led) = (sandboxes.path().to_path_buf(), ledger.path().to_path_buf());
    let c = Cli::mcp()
        .ledger(&led)
        .env("LOCAL_LLM_SANDBOX_DIR", &sb)
        .serve()
        .await;
    let handle = c
        .peer()
        .send_cancellable_request(set_value_call(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    let start = Instant::now();
    while s.requests.lock().unwrap().len() < 4 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        s.requests.lock().unwrap().len(),
        4,
        "not all four were asked at once"
    );
    let cancelled = Instant::now();
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    // Every stream is hung up on: the scripted endpoint sees each write fail.
    let recorded = ledger_once_cancelled(ledger.path(), Duration::from_secs(5)).await;
    assert!(recorded.contains("refused:cancelled"), "{recorded:?}");
    assert!(
        cancelled.elapsed() < Duration::from_secs(3),
        "cancelling took {:?}",
        cancelled.elapsed()
    );
    // Each open stream is hung up on: its next write (every 200 ms) fails.
    let hung = Instant::now();
    while s.hung_ups.load(std::sync::atomic::Ordering::SeqCst) < 4
        && hung.elapsed() < Duration::from_secs(3)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        s.hung_ups.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "a request stayed open"
    );
    assert_eq!(
        s.requests.lock().unwrap().len(),
        4,
        "a request started after the cancellation"
    );
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
    assert_eq!(ws.snapshot(), before);
    c.cancel().await.unwrap();
}

/// A llama.cpp `/props` answer for a server with `slots` slots of 8,192 tokens.
fn props(slots: u64) -> Reply {
    let body = serde_json::json!({
        "default_generation_settings": {"n_ctx": 8192, "params": {"temperature": 0.8}},
        "total_slots": slots,
        "model_path": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "chat_template": "{{ messages }}",
        "build_info": "b6000-scripted"
    });
    Reply::status(200, &body.to_string())
}

/// Four streamed answers, slow enough that requests sent together overlap at the server.
fn slow_answers() -> Vec<Reply> {
    (2..6)
        .map(|n| {
            Reply::streamed(
                &[
                    r#"{"edits":[{"path":"v.py","#,
                    &format!(r#""old":"VALUE = 1","new":"VALUE = {n}"}}]}}"#),
                ],
                150,
            )
        })
        .collect()
}

#[test]
fn candidates_at_once_never_exceed_the_servers_slots() {
    let sampling = "[sampling]\ncandidates = 4\nparallel = 4\n";
    let sandboxes = tempfile::tempdir().unwrap();
    // A one-slot server gets one request at a time: the others would wait in its queue.
    let s = scripted_server(&[("GET", "/props", props(1))], slow_answers());
    let ws = Ws::new(&s.base_url, sampling);
    ws.write("v.py", "VALUE = 1\n");
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["candidates"]["asked"], 4, "{v}");
    assert_eq!(v["candidates"]["at_once"], 1, "{v}");
    assert_eq!(v["candidates"]["slots"]["slots"], 1, "{v}");
    assert!(
        v["candidates"]["slots"]["detail"]
            .as_str()
            .unwrap()
            .ends_with("/props (total_slots)"),
        "{v}"
    );
    assert_eq!(s.max_in_flight.load(std::sync::atomic::Ordering::SeqCst), 1);
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    let report = stdout(&out);
    assert!(
        report.contains(
            "4 candidates, 1 at once: [sampling] parallel is 4 but the server has 1 slot(s)"
        ),
        "{report}"
    );

    // The same policy against four slots: the requests do overlap (the measure above can see it).
    let s = scripted_server(&[("GET", "/props", props(4))], slow_answers());
    let ws = Ws::new(&s.base_url, sampling);
    ws.write("v.py", "VALUE = 1\n");
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["candidates"]["at_once"], 4, "{v}");
    assert!(s.max_in_flight.load(std::sync::atomic::Ordering::SeqCst) > 1);
    assert!(empty(sandboxes.path()));
}

/// Propose in `ws` with `env` set on the worker (e.g. `LOCAL_LLM_BWRAP` at a path where there is none).
fn propose_json_env(ws: &Ws, sandboxes: &Path, env: &[(&str, &str)]) -> (Output, Value) {
    let out = Cli::propose(ws.root())
        .task("Set VALUE")
        .accept(&["the check passes"])
        .file("v.py")
        .arg("--json")
        .env("LOCAL_LLM_SANDBOX_DIR", sandboxes)
        .envs(env)
        .run();
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (out, v)
}

/// Where no bubblewrap is (the way `tests/confinement.rs` takes it away).
const NO_BWRAP: (&str, &str) = ("LOCAL_LLM_BWRAP", "/nonexistent/bwrap");

#[test]
fn where_bubblewrap_works_a_policy_with_checks_validates_proposals_by_default() {
    // Scripted endpoint: a wrong answer, then the passing one. The policy sets only the check.
    let s = scripted(vec![Reply::chat(&edit(2)), Reply::chat(&edit(3))]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"grep -q 'VALUE = 3' v.py\"]\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(v["validation"][0]["isolation"], "confined", "{v}");
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 3"), "{v}");
    // A local server gets 4 candidates; one that passed ended the asking.
    assert_eq!(v["candidates"]["wanted"], 4, "{v}");
    assert!(v["candidates"]["passed"].as_u64().unwrap() >= 1, "{v}");
    let report = stdout(&cli(&["doctor", "--workspace-root", &ws.root_str()]));
    assert!(
        report.contains("validation on propose and the one repair round are on by default here"),
        "{report}"
    );
    assert!(empty(sandboxes.path()));
}

#[test]
fn where_bubblewrap_works_the_one_repair_round_is_on_by_default() {
    // Scripted endpoint: every candidate wrong (VALUE = 2, merged), then the repair round's answer passes.
    let s = scripted(vec![
        Reply::chat(&edit(2)),
        Reply::chat(&edit(2)),
        Reply::chat(&edit(2)),
        Reply::chat(&edit(2)),
        Reply::chat(&edit(3)),
    ]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"grep -q 'VALUE = 3' v.py\"]\n\n[sampling]\nparallel = 1\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["repaired"], true, "{v}");
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(s.requests.lock().unwrap().len(), 5);
}

#[test]
fn without_bubblewrap_validation_stays_off_by_default_and_doctor_says_why() {
    let s = scripted(vec![Reply::chat(&edit(2))]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"grep -q 'VALUE = 3' v.py\"]\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json_env(&ws, sandboxes.path(), &[NO_BWRAP]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(v["validation_passed"].is_null(), "{v}");
    assert!(v.get("candidates").is_none(), "one answer: {v}");
    assert_eq!(s.requests.lock().unwrap().len(), 1);
    let out = Cli::new(["doctor", "--workspace-root", &ws.root_str()])
        .env(NO_BWRAP.0, NO_BWRAP.1)
        .run();
    let report = stdout(&out);
    for needle in [
        "validation on propose is off (the default where checks cannot be confined)",
        "/nonexistent/bwrap",
        "install bubblewrap",
    ] {
        assert!(report.contains(needle), "{needle:?} not in {report}");
    }
}

#[test]
fn init_project_writes_validation_on_propose_on_where_bubblewrap_works_and_off_without() {
    for (env, on_propose, attempts) in [
        (None, "on_propose = true", "attempts = 1"),
        (Some(NO_BWRAP), "on_propose = false", "attempts = 0"),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("tests")).unwrap();
        std::fs::write(d.path().join("app.py"), "X = 1\n").unwrap();
        std::fs::write(
            d.path().join("tests/test_app.py"),
            "def test_x():\n    pass\n",
        )
        .unwrap();
        let out = Cli::new(["init-project", "--workspace-root"])
            .arg(d.path())
            .envs(env.as_slice())
            .run();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = std::fs::read_to_string(d.path().join("local-llm-worker.toml")).unwrap();
        assert!(text.contains("\ncommands = [\""), "{text}");
        assert!(text.contains(&format!("\n{on_propose}\n")), "{text}");
        assert!(text.contains(&format!("\n{attempts}\n")), "{text}");
        if env.is_some() {
            assert!(
                text.contains("# Off: the checks cannot be confined here"),
                "{text}"
            );
        }
    }
}

/// Four candidates that all fail the check, for the request tests.
fn failing_four() -> Vec<Reply> {
    (4..8).map(|n| Reply::chat(&edit(n))).collect()
}

#[test]
fn every_candidate_asks_llamacpp_to_reuse_the_same_prompt_prefix() {
    // Scripted endpoint, which records each request's body.
    let s = scripted(failing_four());
    let ws = workspace(
        &s.base_url,
        3,
        "candidates = 4\nparallel = 1\n\n[repair]\nattempts = 0",
    );
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let reqs = s.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 4, "{v}");
    let prompt = reqs[0]["messages"].as_array().unwrap();
    for r in &reqs {
        assert_eq!(r["cache_prompt"], true, "{r}");
        // The same prompt bytes: only the sampling and, for a pinned candidate, the start of its answer (an
        // assistant message after the prompt) differ.
        let messages = r["messages"].as_array().unwrap();
        assert_eq!(&messages[..prompt.len()], &prompt[..], "{r}");
    }
    // Each pinned answer (after the first) is written up to its `new` text (the prefill), so that the server
    // generates only that text, held by a grammar to a tight bound; its answer budget is tight too.
    let first = reqs[0]["max_tokens"].as_u64().unwrap();
    let pinned = &reqs[1];
    let messages = pinned["messages"].as_array().unwrap();
    assert_eq!(messages.len(), prompt.len() + 1, "{pinned}");
    assert_eq!(messages[prompt.len()]["role"], "assistant", "{pinned}");
    let start = messages[prompt.len()]["content"].as_str().unwrap();
    assert!(
        start.starts_with(r#"{"edits": [{"path": "v.py", "old": "#)
            && start.ends_with(r#", "new":"#),
        "{start}"
    );
    let grammar = pinned["grammar"].as_str().unwrap();
    assert!(grammar.contains(" char{0,80} "), "{grammar}");
    assert!(pinned.get("response_format").is_none(), "{pinned}");
    assert!(
        pinned["max_tokens"].as_u64().unwrap() < first.min(500),
        "{pinned}"
    );
}

#[test]
fn a_pinned_candidate_is_shown_its_file_around_its_line_after_the_same_instructions() {
    // Scripted endpoint, which records each request's body. The file is longer than the window a pin shows (its line
    // and three each side): the free candidate sees it whole, the pinned ones only around VALUE = 1, after the same
    // instructions and example.
    let s = scripted(vec![Reply::chat(&edit(2)), Reply::chat(&edit(3))]);
    let ws = workspace(
        &s.base_url,
        3,
        "candidates = 2\nparallel = 1\n\n[repair]\nattempts = 0",
    );
    let far: String = (1..=12).map(|n| format!("# note {n}\n")).collect();
    ws.write("v.py", &format!("VALUE = 1\n{far}"));
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}\n{v}", stderr(&out));
    let reqs = s.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "{v}");
    let user = |r: &Value| r["messages"][1]["content"].as_str().unwrap().to_string();
    let (free, pinned) = (user(&reqs[0]), user(&reqs[1]));
    assert!(free.contains("# note 12"), "{free}");
    assert!(
        pinned.contains("VALUE = 1") && pinned.contains("# note 3\n"),
        "{pinned}"
    );
    assert!(!pinned.contains("# note 4\n"), "{pinned}");
    let instructions = free.split("Now the real task.").next().unwrap();
    assert!(pinned.starts_with(instructions), "{pinned}");
    assert_eq!(reqs[0]["messages"][0], reqs[1]["messages"][0]);
    assert_eq!(v["candidates"]["chosen"], 2, "{v}");
}

#[test]
fn a_server_that_refuses_the_prefill_gets_the_pinned_schema_instead() {
    // Scripted endpoint: a server (a chat template with thinking on, in llama.cpp) that answers a request ending in an
    // assistant message with HTTP 400. The pinned candidate is asked again with its schema, and validated.
    let s = scripted(vec![
        Reply::chat(&edit(4)),
        Reply::status(
            400,
            r#"{"error":{"code":400,"message":"Assistant response prefill is incompatible with enable_thinking."}}"#,
        ),
        Reply::chat(&edit(3)),
    ]);
    let ws = workspace(
        &s.base_url,
        3,
        "candidates = 2\nparallel = 1\n\n[repair]\nattempts = 0",
    );
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["validation_passed"], true, "{v}");
    let reqs = s.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 3, "{v}");
    assert!(reqs[1].get("grammar").is_some(), "{}", reqs[1]);
    assert!(reqs[2].get("grammar").is_none(), "{}", reqs[2]);
    assert_eq!(
        reqs[2]["messages"], reqs[0]["messages"],
        "the retry sends the prompt without the prefill"
    );
    let new = &reqs[2]["response_format"]["json_schema"]["schema"]["properties"]["edits"]["items"]
        ["properties"]["new"];
    assert_eq!(new["maxLength"], 80, "{}", reqs[2]);
}

#[test]
fn the_first_candidate_that_passes_closes_the_requests_still_streaming() {
    // Scripted endpoint: the first request answered gets the passing edit at once, the three others a slow stream
    // (20 s each), which the worker must hang up on once the first passed.
    let pieces: Vec<String> = (0..100).map(|_| " ".to_string()).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let slow = Reply::streamed(&pieces, 200);
    // The passing edit comes half a second late, so that the pinned requests (sent once the probe is done) are
    // streaming by then.
    let edit3 = edit(3);
    let s = scripted(vec![
        Reply::streamed(&[edit3.as_str()], 500),
        slow.clone(),
        slow.clone(),
        slow,
    ]);
    let ws = workspace(&s.base_url, 3, "candidates = 4\nparallel = 4");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["validation_passed"], true, "{v}");
    let asked = v["candidates"]["asked"].as_u64().unwrap() as usize;
    // Every request the server received but the one answered is hung up on. A request the worker began (it counts
    // as asked) may be abandoned while it connects, before the server reads it: that one has nothing to hang up.
    let received = || s.requests.lock().unwrap().len();
    let hung_ups = || s.hung_ups.load(std::sync::atomic::Ordering::SeqCst);
    // Until every request received is accounted for, and has stayed so for half a second (one read late may yet
    // arrive), or five seconds have passed.
    let (waited, mut settled) = (Instant::now(), None);
    while waited.elapsed() < Duration::from_secs(5) {
        if hung_ups() + 1 == received() {
            let since = *settled.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_millis(500) {
                break;
            }
        } else {
            settled = None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        (1..=asked).contains(&received()),
        "{} of {asked}",
        received()
    );
    assert_eq!(
        hung_ups() + 1,
        received(),
        "a request stayed open after a candidate passed"
    );
    assert!(empty(sandboxes.path()));
}

#[test]
fn a_known_failed_post_image_is_not_validated_twice() {
    // Scripted endpoint: the answer fails the check, and the repair round's answer is the very same edit. The check
    // (in an unconfined copy, so that it can count its runs in a file outside it) runs once, not twice.
    let s = scripted(vec![Reply::chat(&edit(2)), Reply::chat(&edit(2))]);
    let count = tempfile::tempdir().unwrap();
    let runs = count.path().join("runs");
    let ws = Ws::new(
        &s.base_url,
        &format!(
            "[validation]\ncommands = [\"echo ran >> {}; grep -q 'VALUE = 3' v.py\"]\non_propose = true\n\
             isolation = \"copy\"\n\n[repair]\nattempts = 1\n\n[sampling]\ncandidates = 1\n",
            runs.display()
        ),
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        s.requests.lock().unwrap().len(),
        2,
        "the repair round was asked"
    );
    assert_eq!(v["repaired"], true, "{v}");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "ran\n");
    assert!(empty(sandboxes.path()));
}

/// A llama.cpp `/slots` answer listing `n` idle slots (a server whose `/props` does not say).
fn slots_list(n: usize) -> Reply {
    let slot = serde_json::json!({"id": 0, "n_ctx": 8192, "is_processing": false});
    Reply::status(200, &serde_json::Value::Array(vec![slot; n]).to_string())
}

#[test]
fn a_server_that_lists_one_slot_never_sees_two_requests_at_once() {
    // Scripted endpoint with llama.cpp's `/slots` only; slow streams, so requests sent together would overlap.
    let sampling = "[sampling]\ncandidates = 4\nparallel = 4\n";
    let sandboxes = tempfile::tempdir().unwrap();
    let s = scripted_server(&[("GET", "/slots", slots_list(1))], slow_answers());
    let ws = Ws::new(&s.base_url, sampling);
    ws.write("v.py", "VALUE = 1\n");
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["candidates"]["at_once"], 1, "{v}");
    assert_eq!(v["candidates"]["asked"], 4, "{v}");
    assert_eq!(s.max_in_flight.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Eight candidates against four listed slots: up to four at once, never more.
    let many: Vec<Reply> = slow_answers().into_iter().cycle().take(8).collect();
    let s = scripted_server(&[("GET", "/slots", slots_list(4))], many);
    let ws = Ws::new(&s.base_url, "[sampling]\ncandidates = 8\nparallel = 8\n");
    ws.write("v.py", "VALUE = 1\n");
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(v["candidates"]["at_once"], 4, "{v}");
    let most = s.max_in_flight.load(std::sync::atomic::Ordering::SeqCst);
    assert!((2..=4).contains(&most), "{most} at once");
}

/// One answer that offers two conflicting edits of v.py's one line: VALUE = `a`, or VALUE = `b`.
fn two_alternatives(a: u32, b: u32) -> String {
    format!(
        r#"{{"edits":[{{"path":"v.py","old":"VALUE = 1","new":"VALUE = {a}"}},{{"path":"v.py","old":"VALUE = 1","new":"VALUE = {b}"}}]}}"#
    )
}

fn warnings(v: &Value) -> String {
    v["warnings"].to_string()
}

#[test]
fn alternatives_for_one_region_become_candidates_and_the_passing_one_is_chosen() {
    // One answer (one request): its second alternative passes the check.
    let s = scripted(vec![Reply::chat(&two_alternatives(2, 3))]);
    let ws = workspace(&s.base_url, 3, "candidates = 1\n\n[repair]\nattempts = 0");
    let sandboxes = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let patch = v["patch"].as_str().unwrap();
    assert!(
        patch.contains("+VALUE = 3") && !patch.contains("VALUE = 2"),
        "{v}"
    );
    assert_eq!(v["validation_passed"], true, "{v}");
    let w = warnings(&v);
    assert!(
        w.contains("conflicting edits of v.py:1-1 (2 edits)") && w.contains("alternative 2 of 2"),
        "{w}"
    );
    assert!(w.contains("the first whose validation passed"), "{w}");
    assert_eq!(s.requests.lock().unwrap().len(), 1);
    assert_eq!(ws.snapshot(), before, "propose wrote to the workspace");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[test]
fn alternatives_of_which_none_passes_return_the_first_marked_failed_and_say_so() {
    let s = scripted(vec![Reply::chat(&two_alternatives(2, 4))]);
    let ws = workspace(&s.base_url, 3, "candidates = 1\n\n[repair]\nattempts = 0");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    // The CLI's exit for a proposal that fails the checks.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 2"), "{v}");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert!(v["checks_failed"].is_string(), "{v}");
    let w = warnings(&v);
    assert!(
        w.contains("none of the 2 alternatives passed validation"),
        "{w}"
    );
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[test]
fn alternatives_without_validation_return_the_first_written_and_say_none_was_checked() {
    let s = scripted(vec![Reply::chat(&two_alternatives(5, 6))]);
    let ws = Ws::new(&s.base_url, "[sampling]\ncandidates = 1\n");
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 5"), "{v}");
    assert!(v["validation_passed"].is_null(), "{v}");
    let w = warnings(&v);
    assert!(
        w.contains("alternative 1 of 2") && w.contains("none of the 2 alternatives was validated"),
        "{w}"
    );
}

#[test]
fn with_several_answers_each_alternative_is_a_candidate_of_its_own() {
    // The first answer's second alternative passes: asking stops there, the second answer is never asked.
    let s = scripted(vec![
        Reply::chat(&two_alternatives(2, 3)),
        Reply::chat(&edit(4)),
    ]);
    let ws = workspace(&s.base_url, 3, "candidates = 2\nparallel = 1");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 3"), "{v}");
    let c = &v["candidates"];
    assert_eq!(c["asked"], 1, "{c}");
    assert_eq!(c["parsed"], 1, "{c}");
    assert_eq!(c["distinct"], 2, "{c}");
    assert_eq!(c["validated"], 2, "{c}");
    assert_eq!(c["passed"], 1, "{c}");
    assert_eq!(c["why"], "its validation passed", "{c}");
    assert!(warnings(&v).contains("alternative 2 of 2"), "{v}");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

/// The JSON schema the `i`th request recorded by the scripted server was held to.
fn schema_of(s: &Scripted, i: usize) -> Value {
    s.requests.lock().unwrap()[i]["response_format"]["json_schema"]["schema"].clone()
}

#[test]
fn a_task_that_adds_a_line_gets_a_candidate_pinned_to_insert_after_the_right_line() {
    // Scripted: the first (free) answer changes the wrong line; the second candidate's request is pinned to
    // insert after the line defining `name`, and its scripted answer uses that form.
    let anchor = "    name = first + \" \" + last";
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"names.py","old":"def full_name(first, last):","new":"def full_name(first, last=\"\"):"}]}"#,
        ),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"names.py","after":{},"new":"    return name"}}]}}"#,
            serde_json::to_string(anchor).unwrap()
        )),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, "test_names.py");
    ws.write(
        "names.py",
        &format!("def full_name(first, last):\n{anchor}\n\n\ndef initials(first, last):\n    return first[0] + last[0]\n"),
    );
    ws.write(
        "test_names.py",
        "from names import full_name\nassert full_name(\"Ada\", \"Lovelace\") == \"Ada Lovelace\"\n",
    );
    let sandboxes = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let out = Cli::propose(ws.root())
        .task("In names.py, full_name builds the name but never returns it; it must return name.")
        .accept(&["full_name(\"Ada\", \"Lovelace\") returns \"Ada Lovelace\""])
        .file("names.py")
        .arg("--json")
        .env("LOCAL_LLM_SANDBOX_DIR", sandboxes.path())
        .run();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    assert!(out.status.success(), "{}\n{v}", stderr(&out));
    assert_eq!(
        s.pinned_edit(1),
        serde_json::json!({"path": "names.py", "after": anchor}),
    );
    assert!(
        schema_of(&s, 0)["properties"]["edits"]["items"]["properties"]["old"]["enum"].is_array(),
        "the first answer is free to pick its line"
    );
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(v["candidates"]["chosen"], 2, "{v}");
    let patch = v["patch"].as_str().unwrap();
    assert!(
        patch.contains(&format!(" {anchor}\n+    return name\n")),
        "{patch}"
    );
    assert_eq!(ws.snapshot(), before, "propose wrote to the workspace");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[test]
fn the_checks_run_before_any_edit_and_a_pinned_candidate_goes_to_the_line_their_failure_names() {
    // Scripted: the first (free) answer edits the line the task's words point at; the task shares no word with the
    // line that raises, so only the traceback of the check run before any edit can pin the second candidate there.
    let raising = "    return settings[\"hostname\"]";
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"settings.py","old":"DEFAULTS = {\"host\": \"localhost\", \"port\": 5432}","new":"DEFAULTS = {\"host\": \"127.0.0.1\", \"port\": 5432}"}]}"#,
        ),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"settings.py","old":{},"new":"    return settings.get(\"host\", DEFAULTS[\"host\"])"}}]}}"#,
            serde_json::to_string(raising).unwrap()
        )),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, "test_settings.py");
    ws.write(
        "settings.py",
        &format!(
            "\"\"\"Database settings: host and port, with defaults.\"\"\"\n\nDEFAULTS = {{\"host\": \"localhost\", \"port\": 5432}}\n\n\n\
             def port(settings):\n    return int(settings.get(\"port\", DEFAULTS[\"port\"]))\n\n\ndef host(settings):\n{raising}\n"
        ),
    );
    ws.write(
        "test_settings.py",
        "from settings import host\nassert host({}) == \"localhost\"\nassert host({\"host\": \"db\"}) == \"db\"\n",
    );
    second_candidate_pinned_and_passed(
        &s,
        &ws,
        "Fall back to the default when no host is given.",
        "host({}) is \"localhost\"",
        "settings.py",
        raising,
    );
}

#[test]
fn a_pinned_candidate_goes_to_the_line_the_failing_test_ran_when_no_traceback_names_one() {
    // Scripted: the first (free) answer changes the constant. The task names neither function, the failing
    // assertion quotes neither (`value`), and the two `return` lines differ only in their names: only the tracer in
    // the check run before any edit, which saw `grams` run in the failing call, can pin the second candidate there.
    // The check also passes only when the tracer's folder is gone from the copy.
    let wrong = "    return oz / GRAMS_PER_OUNCE";
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"scale.py","old":"GRAMS_PER_OUNCE = 28.35","new":"GRAMS_PER_OUNCE = 28.3495"}]}"#,
        ),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"scale.py","old":{},"new":"    return oz * GRAMS_PER_OUNCE"}}]}}"#,
            serde_json::to_string(wrong).unwrap()
        )),
    ]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"python3 test_scale.py && test ! -e .local-llm-trace\"]\non_propose = true\n\
         timeout_secs = 30\n\n[sampling]\ncandidates = 2\nparallel = 1\n",
    );
    ws.write(
        "scale.py",
        &format!(
            "\"\"\"The kitchen scale's readings.\"\"\"\n\nGRAMS_PER_OUNCE = 28.35\n\n\n\
             def ounces(g):\n    return g / GRAMS_PER_OUNCE\n\n\ndef grams(oz):\n{wrong}\n"
        ),
    );
    ws.write(
        "test_scale.py",
        "import scale\nassert round(scale.ounces(56.7), 2) == 2.0\nvalue = scale.grams(2)\nassert round(value, 2) == 56.7\n",
    );
    second_candidate_pinned_and_passed(
        &s,
        &ws,
        "The scale shows a wrong weight for a reading in the other unit; fix the conversion.",
        "the test passes",
        "scale.py",
        wrong,
    );
}

#[test]
fn a_pinned_candidate_goes_to_the_line_where_a_mutant_made_the_failing_check_pass() {
    // Scripted: the first (free) answer changes the rate. Both `return` lines run in the failing call and share the
    // task's words, and the assertion names neither; only the mutation probe, whose `- SHIPPING` to `+ SHIPPING` (the
    // line's first mutant) made the check pass in the confined copy, points the second candidate at the total's line.
    let (s, ws) = order_with_a_wrong_total("test_order.py", "");
    ws.write(
        "test_order.py",
        "import order\nassert order.tax(10) == 2\ncost = order.total(10)\nassert cost == 17, cost\n",
    );
    second_candidate_pinned_and_passed(
        &s,
        &ws,
        "An order's total comes out wrong: the net, its tax and the shipping should add up.",
        "the test passes",
        "order.py",
        WRONG_TOTAL,
    );
}

#[test]
fn a_pinned_candidate_inserts_where_a_line_copied_from_a_sibling_method_made_the_failing_check_pass()
 {
    // Scripted: the first (free) answer changes the limit. The task does not ask to add a line, so the ranking
    // offers no place after one; only the insertion probe, whose copy of `opened`'s `move_to_end` call before
    // `reopened`'s last `return` made the check pass in the confined copy, pins the second candidate there.
    let anchor = "            return False";
    let s = scripted(vec![
        Reply::chat(r#"{"edits":[{"path":"recent.py","old":"LIMIT = 3","new":"LIMIT = 4"}]}"#),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"recent.py","after":{},"new":"        self._items.move_to_end(path)"}}]}}"#,
            serde_json::to_string(anchor).unwrap()
        )),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, "test_recent.py");
    ws.write(
        "recent.py",
        &format!(
            "\"\"\"The editor's Open Recent menu.\"\"\"\n\nfrom collections import OrderedDict\n\nLIMIT = 3\n\n\n\
             class Recent:\n    def __init__(self):\n        self._items = OrderedDict()\n\n\
             \x20   def opened(self, path):\n        if path in self._items:\n            self._items.move_to_end(path)\n\
             \x20       self._items[path] = True\n        if len(self._items) > LIMIT:\n            self._items.popitem(last=False)\n\n\
             \x20   def reopened(self, path):\n        if path not in self._items:\n{anchor}\n        return True\n\n\
             \x20   def menu(self):\n        return list(reversed(self._items))\n"
        ),
    );
    ws.write(
        "test_recent.py",
        "from recent import Recent\nr = Recent()\nr.opened(\"a\")\nr.opened(\"b\")\nassert r.reopened(\"a\") is True\n\
         assert r.menu() == [\"a\", \"b\"], r.menu()\n",
    );
    let task =
        "A file reopened from the Open Recent menu stays where it was; it should go to the top.";
    second_candidate_inserted_and_passed(&s, &ws, task, "recent.py", anchor);
}

#[test]
fn a_pinned_candidate_inserts_where_a_statement_of_the_function_s_own_names_made_the_failing_check_pass()
 {
    // Scripted: the first (free) answer changes the docstring. No kind of omission the probe knows by name fits;
    // only the generic missing lines, which the probe affords because every mutant runs in ONE run of the check
    // (the prober forks a child per mutant), find that `merged.sort()` after the loop's `extend` makes the check
    // pass, and pin the second candidate there.
    let anchor = "        merged.extend(schedule)";
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"days.py","old":"    \"\"\"Merge lists of days.\"\"\"","new":"    \"\"\"Merge.\"\"\""}]}"#,
        ),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"days.py","after":{},"new":"        merged.sort()"}}]}}"#,
            serde_json::to_string(anchor).unwrap()
        )),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, "test_days.py");
    ws.write(
        "days.py",
        &format!(
            "\"\"\"Collection days.\"\"\"\n\n\ndef merge(*schedules):\n    \"\"\"Merge lists of days.\"\"\"\n\
             \x20   merged = []\n    for schedule in schedules:\n{anchor}\n    return merged\n"
        ),
    );
    ws.write(
        "test_days.py",
        "from days import merge\nassert merge([1, 9], [5]) == [1, 5, 9], merge([1, 9], [5])\n",
    );
    let task = "merge([1, 9], [5]) gives [1, 9, 5]; the merged days should come out in order.";
    second_candidate_inserted_and_passed(&s, &ws, task, "days.py", anchor);
}

#[test]
fn a_check_that_runs_the_file_as_a_script_is_probed_one_run_a_mutant() {
    // Scripted: as in the test of the mutant at the total's line, but the check runs the selected file itself
    // (its own asserts under `__main__`), so it never imports it and the prober's one run says nothing: the probe
    // falls back to one run of the check a mutant, and still points the second candidate at the total's line.
    let (s, ws) = order_with_a_wrong_total(
        "order.py",
        "\n\nif __name__ == \"__main__\":\n    assert tax(10) == 2\n    assert total(10) == 17, total(10)\n",
    );
    second_candidate_pinned_and_passed(
        &s,
        &ws,
        "An order's total comes out wrong: the net, its tax and the shipping should add up.",
        "the test passes",
        "order.py",
        WRONG_TOTAL,
    );
}

#[test]
fn a_candidate_that_keeps_the_size_of_the_file_is_not_run_as_the_bytecode_of_the_run_before_it() {
    // Scripted: the first answer turns "ab" into "ba", the same size, and arrives at once, so it is validated in the
    // same second as the run of the checks before any edit. Python trusts a cached module whose source has the
    // recorded mtime (in whole seconds) and size: had that run written `__pycache__`, the candidate would run as the
    // old bytes and fail.
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"word.py","old":"    return \"ab\"","new":"    return \"ba\""}]}"#,
        ),
        Reply::chat(
            r#"{"edits":[{"path":"word.py","old":"    return \"ab\"","new":"    return \"xx\""}]}"#,
        ),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, "test_word.py");
    ws.write("word.py", "def word():\n    return \"ab\"\n");
    ws.write(
        "test_word.py",
        "import word\nassert word.word() == \"ba\", word.word()\n",
    );
    let task = "word() must return the letters the other way round.";
    let (_, v) = passed_after_failing(&ws, task, "the test passes", "word.py");
    assert_eq!(v["candidates"]["chosen"], 1, "{v}");
}

/// The line of `order.py` that subtracts the shipping it should add.
const WRONG_TOTAL: &str = "    return net - SHIPPING + tax(net)";

/// A workspace whose `order.py` (followed by `tail`) subtracts the shipping, checked by `python3 CHECK`, and a
/// scripted model whose first (free) answer changes the rate and whose second fixes the total's line.
fn order_with_a_wrong_total(check: &str, tail: &str) -> (Scripted, Ws) {
    let s = scripted(vec![
        Reply::chat(r#"{"edits":[{"path":"order.py","old":"RATE = 0.2","new":"RATE = 0.25"}]}"#),
        Reply::chat(&format!(
            r#"{{"edits":[{{"path":"order.py","old":{},"new":"    return net + SHIPPING + tax(net)"}}]}}"#,
            serde_json::to_string(WRONG_TOTAL).unwrap()
        )),
    ]);
    let ws = two_candidates_checked_by(&s.base_url, check);
    ws.write(
        "order.py",
        &format!(
            "\"\"\"What an order costs.\"\"\"\n\nRATE = 0.2\nSHIPPING = 5\n\n\n\
             def tax(net):\n    return net * RATE\n\n\ndef total(net):\n{WRONG_TOTAL}\n{tail}"
        ),
    );
    (s, ws)
}

/// A workspace whose one check is `python3 TEST` (validated on propose), asking two candidates one at a time.
fn two_candidates_checked_by(base_url: &str, test: &str) -> Ws {
    Ws::new(
        base_url,
        &format!(
            "[validation]\ncommands = [\"python3 {test}\"]\non_propose = true\ntimeout_secs = 30\n\n\
             [sampling]\ncandidates = 2\nparallel = 1\n"
        ),
    )
}

/// Propose `task` on `file` of `ws` and check that a candidate passed while the checks failed before any edit, and
/// that nothing was written or left behind: the command's output and its JSON.
fn passed_after_failing(ws: &Ws, task: &str, accept: &str, file: &str) -> (Output, Value) {
    let sandboxes = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let out = Cli::propose(ws.root())
        .task(task)
        .accept(&[accept])
        .file(file)
        .arg("--json")
        .env("LOCAL_LLM_SANDBOX_DIR", sandboxes.path())
        .run();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    assert!(out.status.success(), "{}\n{v}", stderr(&out));
    assert_eq!(v["candidates"]["passed_before"], false, "{v}");
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(ws.snapshot(), before, "propose wrote to the workspace");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
    (out, v)
}

/// Propose `task` on `file` of `ws` and check that the second candidate, pinned to the line `old`, passed while the
/// checks failed before any edit, and that nothing was written or left behind.
fn second_candidate_pinned_and_passed(
    s: &Scripted,
    ws: &Ws,
    task: &str,
    accept: &str,
    file: &str,
    old: &str,
) {
    let (out, v) = passed_after_failing(ws, task, accept, file);
    assert_eq!(
        s.pinned_edit(1),
        serde_json::json!({"path": file, "old": old}),
        "{}",
        stderr(&out)
    );
    assert_eq!(v["candidates"]["chosen"], 2, "{v}");
}

/// Propose `task` on `file` of `ws` as [`passed_after_failing`] does, and check that the second candidate was pinned
/// to insert after `anchor` and was the one chosen.
fn second_candidate_inserted_and_passed(
    s: &Scripted,
    ws: &Ws,
    task: &str,
    file: &str,
    anchor: &str,
) {
    let (out, v) = passed_after_failing(ws, task, "the test passes", file);
    assert_eq!(
        s.pinned_edit(1),
        serde_json::json!({"path": file, "after": anchor}),
        "{}",
        stderr(&out)
    );
    assert_eq!(v["candidates"]["chosen"], 2, "{v}");
}

#[test]
fn checks_that_pass_before_any_edit_are_reported_as_such() {
    // Scripted: VALUE = 1 already passes the check; both answers change it.
    let s = scripted(vec![Reply::chat(&edit(2)), Reply::chat(&edit(3))]);
    let ws = workspace(&s.base_url, 1, "candidates = 2\nparallel = 1");
    let sandboxes = tempfile::tempdir().unwrap();
    let (out, v) = propose_json(&ws, sandboxes.path());
    assert!(!out.status.success(), "neither candidate passes: {v}");
    assert_eq!(v["candidates"]["passed_before"], true, "{v}");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
}

#[tokio::test]
async fn cancelling_while_the_checks_run_before_any_edit_stops_them_and_the_request() {
    // Scripted: one slow answer (20 s); the check run before any edit takes 20 s too, so the pinned requests wait
    // and the cancellation arrives while the check runs.
    let pieces: Vec<String> = (0..100).map(|_| " ".to_string()).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let s = scripted(vec![Reply::streamed(&pieces, 200)]);
    let ws = Ws::new(
        &s.base_url,
        "[validation]\ncommands = [\"sleep 20; grep -q 'VALUE = 3' v.py\"]\non_propose = true\ntimeout_secs = 60\n\n\
         [sampling]\ncandidates = 4\nparallel = 4\n",
    );
    ws.write("v.py", "VALUE = 1\n");
    let sandboxes = tempfile::tempdir().unwrap();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let before = ws.snapshot();
    let (sb, led) = (sandboxes.path().to_path_buf(), ledger.path().to_path_buf());
    let c = Cli::mcp()
        .ledger(&led)
        .env("LOCAL_LLM_SANDBOX_DIR", &sb)
        .serve()
        .await;
    let handle = c
        .peer()
        .send_cancellable_request(set_value_call(&ws), PeerRequestOptions::default())
        .await
        .unwrap();
    let start = Instant::now();
    while s.requests.lock().unwrap().is_empty() && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The check is running: give it a moment, then cancel.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        s.requests.lock().unwrap().len(),
        1,
        "the pinned requests wait for the check"
    );
    let cancelled = Instant::now();
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    let recorded = ledger_once_cancelled(ledger.path(), Duration::from_secs(10)).await;
    assert!(recorded.contains("refused:cancelled"), "{recorded:?}");
    assert!(
        cancelled.elapsed() < Duration::from_secs(3),
        "cancelling took {:?}: the check ran on",
        cancelled.elapsed()
    );
    assert_eq!(
        s.requests.lock().unwrap().len(),
        1,
        "a pinned request started after the cancellation"
    );
    assert!(empty(sandboxes.path()), "a sandbox was left behind");
    assert_eq!(ws.snapshot(), before);
    c.cancel().await.unwrap();
}
