//! Every provider adapter against a scripted server that pins the exact request (path, headers, body fields, the
//! model routing chose, reasoning fields) and parses realistic answers, usage included. Scripted, because the
//! hosted APIs are not reachable here and their fault statuses cannot be produced on demand; the llama.cpp adapter
//! also runs against the real local server in `real_model.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, with its message"
)]

mod common;

use common::*;

const EDIT_JSON: &str =
    r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;
const SENTINEL: &str = "sk-SENTINEL-7f3a9c21-do-not-leak";

fn workspace(base_url: &str, provider: &str, extra: &str) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let ws = Ws { dir };
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"{provider}\"\nbase_url = \"{base_url}\"\n{extra}\n[paths]\nallowed = [\"src/**\"]\n"
        ),
    );
    ws.write("src/value.py", "VALUE = 1\n");
    ws
}

/// Run the CLI with a key variable set to the sentinel.
fn run_with_key(args: &[&str], var: &str) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(args)
        .env_remove("LOCAL_LLM_CONFIG")
        .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .env(var, SENTINEL)
        .output()
        .unwrap()
}

fn propose_args(ws: &Ws, complexity: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "propose",
        "--workspace-root",
        &ws.root_str(),
        "--task",
        "Set VALUE to 2",
        "--accept",
        "VALUE is 2",
        "--complexity",
        complexity,
        "--file",
        "src/value.py",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if complexity == "medium" {
        v.extend(["--plan".to_string(), "edit the line".to_string()]);
    }
    v
}

/// The first POST the scripted endpoint saw (the context-window discovery GETs come before it).
fn first_post(s: &Scripted) -> Seen {
    s.seen
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.method == "POST")
        .cloned()
        .expect("a POST")
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn openrouter_sends_bearer_key_routed_model_and_mapped_reasoning() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(
        &s.base_url,
        "openrouter",
        "reasoning_effort = \"medium\"\n[edit]\nformat = \"json\"\n",
    );
    let args = propose_args(&ws, "medium");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "OPENROUTER_API_KEY");
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = first_post(&s);
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        header(&seen, "authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );
    assert_eq!(seen.body["model"], "z-ai/glm-5.3", "medium routes to pro");
    assert_eq!(
        seen.body["reasoning"],
        serde_json::json!({"effort": "high"}),
        "medium maps to high"
    );
    assert_eq!(seen.body["stream"], true);
    assert_eq!(seen.body["stream_options"]["include_usage"], true);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["provider"], "openrouter");
    assert_eq!(v["usage"]["total_tokens"], 150);
}

#[test]
fn low_complexity_always_uses_flash_whatever_model_was_asked() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(
        &s.base_url,
        "openrouter",
        "reasoning_effort = \"none\"\n[edit]\nformat = \"json\"\n",
    );
    let mut args = propose_args(&ws, "low");
    args.extend(["--model".to_string(), "pro".to_string()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(run_with_key(&refs, "OPENROUTER_API_KEY").status.success());
    let body = s.requests.lock().unwrap()[0].clone();
    assert_eq!(body["model"], "z-ai/glm-5.3-flash");
    assert_eq!(
        body["reasoning"],
        serde_json::json!({"effort": "low"}),
        "none maps to low for GLM"
    );
}

#[test]
fn huggingface_sends_reasoning_effort_and_gpt_oss_models() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(
        &s.base_url,
        "huggingface",
        "reasoning_effort = \"max\"\n[edit]\nformat = \"json\"\n",
    );
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "HF_INFERENCE_TOKEN");
    assert!(out.status.success(), "{}", stderr(&out));
    let body = s.requests.lock().unwrap()[0].clone();
    assert_eq!(body["model"], "openai/gpt-oss-20b");
    assert_eq!(body["reasoning_effort"], "high", "max maps to high");
    assert!(body.get("reasoning").is_none());
}

#[test]
fn llamacpp_sends_no_key_no_reasoning_and_a_json_schema() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&refs);
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = first_post(&s);
    assert_eq!(header(&seen, "authorization"), None);
    assert!(seen.body.get("reasoning").is_none() && seen.body.get("reasoning_effort").is_none());
    assert_eq!(seen.body["response_format"]["type"], "json_schema");
}

#[test]
fn deepseek_uses_the_responses_api_and_reads_its_usage() {
    let answer = serde_json::json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "deepseek-v4-flash",
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": EDIT_JSON}]}
        ],
        "usage": {"input_tokens": 321, "output_tokens": 45, "total_tokens": 366}
    });
    let s = scripted(vec![Reply::status(200, &answer.to_string())]);
    let ws = workspace(
        &s.base_url,
        "deepseek",
        "reasoning_effort = \"low\"\n[edit]\nformat = \"json\"\n",
    );
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "DEEPSEEK_API_KEY");
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = first_post(&s);
    assert_eq!(seen.path, "/v1/responses");
    assert_eq!(
        header(&seen, "authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );
    assert_eq!(seen.body["model"], "deepseek-v4-flash");
    assert_eq!(seen.body["reasoning"], serde_json::json!({"effort": "low"}));
    assert_eq!(seen.body["input"][0]["role"], "system");
    assert_eq!(seen.body["text"]["format"]["type"], "json_schema");
    assert!(seen.body["max_output_tokens"].as_u64().is_some());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["usage"],
        serde_json::json!({"input_tokens": 321, "output_tokens": 45, "total_tokens": 366})
    );
    assert_eq!(v["model"], "deepseek-v4-flash");

    // An incomplete answer (max_output_tokens) is refused as cut off.
    let cut = serde_json::json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "{\"edits\":["}]}],
        "usage": {"input_tokens": 1, "output_tokens": 2048}});
    let s = scripted(vec![Reply::status(200, &cut.to_string())]);
    let ws = workspace(&s.base_url, "deepseek", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "DEEPSEEK_API_KEY");
    assert!(stderr(&out).contains("cut off"), "{}", stderr(&out));
}

#[test]
fn a_generic_openai_server_needs_a_base_url_and_streams() {
    let s = scripted(vec![Reply::streamed(
        &[
            r#"{"edits":[{"path":"src/value.py","#,
            r#""old":"VALUE = 1","new":"VALUE = 2"}]}"#,
        ],
        1,
    )]);
    let ws = workspace(&s.base_url, "openai", "[edit]\nformat = \"json\"\n");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&refs);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["usage"]["input_tokens"], 50,
        "usage from the stream's last chunk"
    );
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 2"));

    let bad = Ws {
        dir: tempfile::tempdir().unwrap(),
    };
    bad.write("local-llm-worker.toml", "[provider]\nkind = \"openai\"\n");
    bad.write("a.py", "x\n");
    let out = propose(&bad, &["a.py"], &[]);
    assert!(
        stderr(&out).contains("kind = \"openai\" needs base_url"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn models_outside_the_active_list_are_refused_before_any_request() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(
        &s.base_url,
        "openrouter",
        "[models]\nactive = [{ provider = \"openrouter\", model = \"z-ai/glm-5.3-flash\" }]\n",
    );
    let args = propose_args(&ws, "medium");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "OPENROUTER_API_KEY");
    assert!(
        stderr(&out).contains("\"z-ai/glm-5.3\" of provider openrouter is not in [models] active"),
        "{}",
        stderr(&out)
    );
    assert!(s.requests.lock().unwrap().is_empty(), "a request was sent");
}

#[test]
fn rate_limits_honour_retry_after_and_server_errors_are_retried_a_bounded_number_of_times() {
    let mut limited = Reply::status(429, "{\"error\":\"slow down\"}");
    limited.headers.push(("Retry-After".into(), "1".into()));
    let s = scripted(vec![limited, Reply::chat(EDIT_JSON)]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let start = std::time::Instant::now();
    let out = propose(&ws, &["src/value.py"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.requests.lock().unwrap().len(), 2);
    assert!(
        start.elapsed() >= std::time::Duration::from_millis(950),
        "Retry-After was not honoured"
    );

    let s = scripted(vec![Reply::status(503, "{\"error\":\"down\"}")]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let out = propose(&ws, &["src/value.py"], &[]);
    assert!(
        stderr(&out).contains("HTTP 503: the server failed (3 attempts)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.requests.lock().unwrap().len(), 3);
}

#[test]
fn auth_failures_name_the_variable_and_never_the_key() {
    // The server echoes the key back in its error body: it must still never be printed.
    let s = scripted(vec![Reply::status(
        401,
        &format!("{{\"error\":\"bad key {SENTINEL}\"}}"),
    )]);
    let ws = workspace(&s.base_url, "openrouter", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_with_key(&refs, "OPENROUTER_API_KEY");
    let err = stderr(&out);
    assert!(
        err.contains("the key in OPENROUTER_API_KEY was rejected"),
        "{err}"
    );
    assert!(
        !err.contains(SENTINEL) && !stdout(&out).contains(SENTINEL),
        "the key leaked: {err}"
    );

    let out = std::process::Command::new(BIN)
        .args(&refs)
        .env_remove("OPENROUTER_API_KEY")
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("OPENROUTER_API_KEY (named by [provider] api_key_env) is not set"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_sentinel_key_appears_in_no_output_and_no_file_on_any_error_path() {
    let ledger_dir = tempfile::tempdir().unwrap();
    let ledger = ledger_dir.path().join("ledger.jsonl");
    let dead = unreachable_base_url();
    let echo = |status: u16| Reply::status(status, &format!("{{\"echo\":\"Bearer {SENTINEL}\"}}"));
    let mut cases: Vec<(String, Ws)> = Vec::new();
    for reply in [
        echo(401),
        echo(403),
        echo(404),
        echo(429),
        echo(500),
        echo(200),
        Reply::chat("no edit here"),
    ] {
        let s = scripted(vec![reply]);
        let url = s.base_url.clone();
        std::mem::forget(s);
        cases.push((url.clone(), workspace(&url, "openrouter", "")));
    }
    cases.push((dead.clone(), workspace(&dead, "openrouter", "")));
    for (_, ws) in &cases {
        for args in [
            propose_args(ws, "low"),
            vec!["doctor".into(), "--workspace-root".into(), ws.root_str()],
        ] {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = std::process::Command::new(BIN)
                .args(&refs)
                .env("OPENROUTER_API_KEY", SENTINEL)
                .env("LOCAL_LLM_LEDGER", &ledger)
                .env("LOCAL_LLM_STATE_DIR", test_state())
                .output()
                .unwrap();
            for text in [stdout(&out), stderr(&out)] {
                assert!(
                    !text.contains(SENTINEL),
                    "the key leaked in {args:?}: {text}"
                );
            }
        }
        for (_, (bytes, _)) in ws.snapshot() {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(SENTINEL),
                "the key was written into the workspace"
            );
        }
    }
    let written = std::fs::read_to_string(&ledger).unwrap();
    assert!(
        written.lines().count() >= cases.len(),
        "every propose is in the ledger"
    );
    assert!(
        !written.contains(SENTINEL),
        "the key was written into the ledger"
    );
}

#[test]
fn prompts_over_the_context_window_are_refused_before_sending() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = workspace(&s.base_url, "llamacpp", "[models]\ncontext_window = 2500\n");
    ws.write("src/big.py", &"x = 1\n".repeat(1000));
    let out = propose(&ws, &["src/big.py"], &[]);
    assert!(
        stderr(&out)
            .contains("over the context window of 2500 tokens (policy: [models] context_window)"),
        "{}",
        stderr(&out)
    );
    assert!(s.requests.lock().unwrap().is_empty());
}

#[test]
fn delegate_returns_content_files_read_and_usage_and_checks_json() {
    let s = scripted(vec![Reply::chat(
        "```json\n{\"functions\": [\"main\"]}\n```",
    )]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let root = ws.root_str();
    let before = ws.snapshot();
    let out = cli(&[
        "delegate",
        "--workspace-root",
        &root,
        "--task-kind",
        "extract",
        "--task",
        "List the functions",
        "--accept",
        "a JSON object",
        "--complexity",
        "low",
        "--file",
        "src/value.py",
        "--output-format",
        "json",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "{\"functions\": [\"main\"]}");
    assert_eq!(v["files_read"], serde_json::json!(["src/value.py"]));
    assert_eq!(v["usage"]["total_tokens"], 150);
    assert_eq!(ws.snapshot(), before, "delegate must not write");
    let prompt = s.requests.lock().unwrap()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.contains("(extract)") && prompt.contains("JSON only"),
        "{prompt}"
    );
    // On llama.cpp the answer is held to a bounded JSON schema (a grammar there).
    let format = s.requests.lock().unwrap()[0]["response_format"].clone();
    assert_eq!(format["type"], "json_schema", "{format}");
    assert_eq!(
        format["json_schema"]["schema"]["maxProperties"], 10,
        "{format}"
    );

    let s = scripted(vec![Reply::chat("not json at all")]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let root = ws.root_str();
    let out = cli(&[
        "delegate",
        "--workspace-root",
        &root,
        "--task-kind",
        "extract",
        "--task",
        "t",
        "--accept",
        "a",
        "--complexity",
        "low",
        "--output-format",
        "json",
    ]);
    assert!(
        stderr(&out).contains("output_format is json but the answer does not parse"),
        "{}",
        stderr(&out)
    );
    for (args, needle) in [
        (
            vec!["--task-kind", "refactor"],
            "task_kind \"refactor\" is not one of",
        ),
        (
            vec!["--task-kind", "summarize", "--output-format", "yaml"],
            "output_format \"yaml\"",
        ),
        (
            vec!["--task-kind", "summarize", "--max-output-tokens", "16001"],
            "out of range",
        ),
        (
            vec!["--task-kind", "summarize", "--file", "src/missing.py"],
            "does not exist",
        ),
    ] {
        let mut a = vec![
            "delegate",
            "--workspace-root",
            &root,
            "--task",
            "t",
            "--accept",
            "a",
            "--complexity",
            "low",
        ];
        a.extend(args);
        let out = cli(&a);
        assert!(stderr(&out).contains(needle), "{needle}: {}", stderr(&out));
    }
}

#[test]
fn stats_summarise_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("l.jsonl");
    let s = scripted(vec![Reply::chat(EDIT_JSON), Reply::chat("nothing useful")]);
    let ws = workspace(&s.base_url, "llamacpp", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    for _ in 0..2 {
        std::process::Command::new(BIN)
            .args(&refs)
            .env("LOCAL_LLM_LEDGER", &ledger)
            .env("LOCAL_LLM_STATE_DIR", test_state())
            .output()
            .unwrap();
    }
    let out = std::process::Command::new(BIN)
        .args(["stats", "--json"])
        .env("LOCAL_LLM_LEDGER", &ledger)
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["proposals"].as_u64(), v["proposals_refused"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["input_tokens"], 240);
    assert_eq!(v["bytes_read"], 20, "both proposes read the 10-byte file");
    let text = std::fs::read_to_string(&ledger).unwrap();
    assert!(
        !text.contains("VALUE = 1"),
        "the ledger must not hold file contents"
    );
}

/// Replies from a server that echoes the key: in the answer (plain, inside an edit, base64, percent-encoded,
/// JSON-escaped, split across stream chunks) and in the reported model name. Scripted, because no real server
/// echoes credentials on demand.
fn echoing_replies() -> Vec<(&'static str, Reply)> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("Bearer {SENTINEL}"));
    let pct = SENTINEL.replace('-', "%2D");
    let mut model = Reply::chat(EDIT_JSON);
    model.body = model
        .body
        .replace("scripted-model", &format!("echo-{SENTINEL}"));
    let escaped: String = SENTINEL
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let mut json_escaped = Reply::chat("x");
    json_escaped.body = json_escaped
        .body
        .replace("\"content\":\"x\"", &format!("\"content\":\"{escaped}\""));
    let (a, b) = SENTINEL.split_at(10);
    vec![
        (
            "an edit",
            Reply::chat(&format!(
                r#"{{"edits":[{{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = '{SENTINEL}'"}}]}}"#
            )),
        ),
        ("the model name", model),
        ("base64", Reply::chat(&format!("Authorization: {b64}"))),
        ("percent-encoded", Reply::chat(&format!("key={pct}"))),
        ("JSON-escaped", json_escaped),
        (
            "split across chunks",
            Reply::streamed(&["Bearer ", a, b, " ok"], 0),
        ),
    ]
}

#[test]
fn a_server_that_echoes_the_key_gets_its_answer_refused_and_the_key_reaches_nothing() {
    let ledger_dir = tempfile::tempdir().unwrap();
    let ledger = ledger_dir.path().join("ledger.jsonl");
    for (what, reply) in echoing_replies() {
        let s = scripted(vec![reply]);
        let ws = workspace(&s.base_url, "openrouter", "");
        let before = ws.snapshot();
        let root = ws.root_str();
        let delegate: Vec<&str> = vec![
            "delegate",
            "--workspace-root",
            &root,
            "--task-kind",
            "summarize",
            "--task",
            "Summarise",
            "--accept",
            "a summary",
            "--complexity",
            "low",
            "--file",
            "src/value.py",
            "--json",
        ];
        let propose = propose_args(&ws, "low");
        let propose: Vec<&str> = propose.iter().map(String::as_str).collect();
        for args in [propose, delegate] {
            let out = std::process::Command::new(BIN)
                .args(&args)
                .env_remove("LOCAL_LLM_CONFIG")
                .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
                .env("OPENROUTER_API_KEY", SENTINEL)
                .env("LOCAL_LLM_LEDGER", &ledger)
                .env("LOCAL_LLM_STATE_DIR", test_state())
                .output()
                .unwrap();
            assert!(!out.status.success(), "{what}: {}", stdout(&out));
            let (o, e) = (stdout(&out), stderr(&out));
            assert!(
                e.contains("sent the provider key from OPENROUTER_API_KEY back"),
                "{what}: {e}"
            );
            assert!(o.contains("\"kind\":\"provider\""), "{what}: {o}");
            for text in [&o, &e] {
                assert!(!text.contains(SENTINEL), "{what}: the key leaked: {text}");
                assert!(
                    !text.contains(&SENTINEL[3..15]),
                    "{what}: part of the key leaked"
                );
            }
        }
        assert_eq!(ws.snapshot(), before, "{what}: the workspace changed");
    }
    let written = std::fs::read_to_string(&ledger).unwrap();
    assert_eq!(written.lines().count(), 12, "every call is in the ledger");
    assert!(
        !written.contains(SENTINEL),
        "the key was written into the ledger"
    );
    for line in written.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["model"], "z-ai/glm-5.3-flash",
            "the configured name: {line}"
        );
        assert_eq!(v["outcome"], "refused:provider", "{line}");
        assert!(
            v["input_tokens"].as_u64().unwrap() > 0,
            "tokens recorded: {line}"
        );
    }
}

#[tokio::test]
async fn through_mcp_an_echoed_key_is_refused_and_absent_from_the_result() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    for (what, reply) in echoing_replies() {
        let s = scripted(vec![reply]);
        let ws = workspace(&s.base_url, "openrouter", "");
        let ledger = tempfile::NamedTempFile::new().unwrap();
        let path = ledger.path().to_path_buf();
        let t = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|c| {
            c.arg("mcp")
                .env("OPENROUTER_API_KEY", SENTINEL)
                .env("LOCAL_LLM_LEDGER", &path)
                .env("LOCAL_LLM_STATE_DIR", test_state())
                .env_remove("LOCAL_LLM_CONFIG")
                .env_remove("LOCAL_LLM_ALLOWED_ROOTS");
        }))
        .unwrap();
        let c = ().serve(t).await.unwrap();
        let args = serde_json::json!({
            "workspace_root": ws.root_str(),
            "task": "Set VALUE to 2",
            "acceptance_criteria": ["VALUE is 2"],
            "complexity": "low",
            "files": ["src/value.py"]
        });
        let serde_json::Value::Object(map) = args else {
            unreachable!()
        };
        let r = c
            .call_tool(CallToolRequestParams::new("propose_patch").with_arguments(map))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{what}");
        let all = serde_json::to_string(&r).unwrap();
        assert!(all.contains("sent the provider key"), "{what}: {all}");
        assert!(
            !all.contains(SENTINEL),
            "{what}: the key is in the MCP result"
        );
        c.cancel().await.unwrap();
        assert!(!std::fs::read_to_string(&path).unwrap().contains(SENTINEL));
    }
}

#[test]
fn a_key_quoted_by_the_json_parser_of_a_malformed_answer_is_redacted() {
    // Scripted: a server that puts the key where a number belongs. serde's message quotes the decoded value.
    let escaped: String = SENTINEL
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let bodies = [
        format!(r#"{{"choices":[],"usage":{{"prompt_tokens":"{SENTINEL}"}}}}"#),
        format!(r#"{{"choices":[],"usage":{{"prompt_tokens":"{escaped}"}}}}"#),
    ];
    let mut replies: Vec<Reply> = bodies.iter().map(|b| Reply::status(200, b)).collect();
    let mut streamed = Reply::streamed(&["x"], 0);
    if let Some((chunks, _)) = streamed.stream.as_mut() {
        chunks.insert(0, bodies[1].clone());
    }
    replies.push(streamed);
    for reply in replies {
        let s = scripted(vec![reply]);
        let ws = workspace(&s.base_url, "openrouter", "");
        let args = propose_args(&ws, "low");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_with_key(&args, "OPENROUTER_API_KEY");
        assert!(!out.status.success());
        let (o, e) = (stdout(&out), stderr(&out));
        assert!(e.contains("model:"), "{e}");
        for text in [&o, &e] {
            assert!(!text.contains(SENTINEL), "the key leaked: {text}");
        }
    }
}

/// The Claude Code plugin hands the key over as `LOCAL_LLM_API_KEY` (from its sensitive user configuration): used when
/// the policy's own variable is unset, never over it, redacted like the policy's, and `doctor` says where it came from.
#[test]
fn the_plugin_key_variable_is_used_when_the_policy_variable_is_unset() {
    let s = scripted(vec![Reply::chat(EDIT_JSON), Reply::chat(EDIT_JSON)]);
    let ws = workspace(&s.base_url, "openrouter", "[edit]\nformat = \"json\"\n");
    let args = propose_args(&ws, "low");
    let run = |env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(BIN);
        c.args(&args)
            .env_remove("LOCAL_LLM_CONFIG")
            .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
            .env_remove("OPENROUTER_API_KEY")
            .env_remove("LOCAL_LLM_API_KEY")
            .env("LOCAL_LLM_LEDGER", test_ledger())
            .env("LOCAL_LLM_STATE_DIR", test_state());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = run(&[("LOCAL_LLM_API_KEY", SENTINEL)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        header(&first_post(&s), "authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );
    assert!(!stdout(&out).contains(SENTINEL) && !stderr(&out).contains(SENTINEL));
    // The policy's variable wins when both are set.
    let out = run(&[
        ("LOCAL_LLM_API_KEY", "sk-plugin-other"),
        ("OPENROUTER_API_KEY", SENTINEL),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let posts: Vec<Seen> = s
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "POST")
        .cloned()
        .collect();
    assert_eq!(
        header(&posts[1], "authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );
    // Neither set: the refusal names both ways to give the key, before any request.
    let out = run(&[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("OPENROUTER_API_KEY"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("provider_api_key"),
        "{}",
        stderr(&out)
    );
    let mut doctor = std::process::Command::new(BIN);
    let d = doctor
        .args(["doctor", "--workspace-root", &ws.root_str()])
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .env_remove("OPENROUTER_API_KEY")
        .env("LOCAL_LLM_API_KEY", SENTINEL)
        .output()
        .unwrap();
    assert!(
        stdout(&d).contains("the key comes from LOCAL_LLM_API_KEY"),
        "{}",
        stdout(&d)
    );
    assert!(!stdout(&d).contains(SENTINEL));
}
