//! Every provider adapter against a scripted server that pins the exact request (path, headers, body fields, the
//! model routing chose, reasoning fields) and parses realistic answers, usage included. Scripted, because the
//! hosted APIs are not reachable here and their fault statuses cannot be produced on demand; the llama.cpp adapter
//! also runs against the real local server in `real_model.rs`.

use crate::common::*;

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
    Cli::new(args).env(var, SENTINEL).run()
}

fn propose_args(ws: &Ws, complexity: &str) -> Vec<String> {
    let c = Cli::propose(ws.root())
        .complexity(complexity)
        .file("src/value.py")
        .arg("--json");
    match complexity {
        "medium" => c.args(["--plan", "edit the line"]),
        _ => c,
    }
    .argv()
}

/// The first POST to the API the scripted endpoint saw (the context-window discovery requests come before it,
/// Ollama's `POST /api/show` among them).
fn first_post(s: &Scripted) -> Seen {
    s.seen
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.method == "POST" && r.path.starts_with("/v1/"))
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

    let out = Cli::new(&refs).env_remove("OPENROUTER_API_KEY").run();
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
            let out = Cli::new(&refs)
                .env("OPENROUTER_API_KEY", SENTINEL)
                .ledger(&ledger)
                .run();
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
        Cli::new(&refs).ledger(&ledger).run();
    }
    let out = Cli::new(["stats", "--json"]).ledger(&ledger).run();
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
            let out = Cli::new(&args)
                .env("OPENROUTER_API_KEY", SENTINEL)
                .ledger(&ledger)
                .run();
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
    use rmcp::model::CallToolRequestParams;
    for (what, reply) in echoing_replies() {
        let s = scripted(vec![reply]);
        let ws = workspace(&s.base_url, "openrouter", "");
        let ledger = tempfile::NamedTempFile::new().unwrap();
        let path = ledger.path().to_path_buf();
        let c = Cli::mcp()
            .env("OPENROUTER_API_KEY", SENTINEL)
            .ledger(&path)
            .serve()
            .await;
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

/// Run `args` with the key variables cleared, then `env` set, and the tests' state folder.
fn run_keys(args: &[String], env: &[(&str, &str)]) -> std::process::Output {
    Cli::new(args)
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("LLAMA_API_KEY")
        .env_remove("LOCAL_LLM_API_KEY")
        .envs(env)
        .run()
}

/// The Claude Code plugin hands the key over as `LOCAL_LLM_API_KEY` (from its sensitive user configuration). A
/// policy that names it as its `api_key_env` sends it (to whatever URL that trusted policy names), redacted like any
/// key; a policy's own variable is used over the plugin's; `doctor` says which variable goes to which URL. (Where
/// it stands in for an unset variable, only a hosted kind at its official endpoint: `src/policy/provider.rs`
/// `the_plugin_key_goes_only_to_a_hosted_provider_at_its_official_endpoint`; no hosted API is reachable here.)
#[test]
fn the_plugin_key_variable_is_used_when_the_policy_names_it() {
    let s = scripted(vec![Reply::chat(EDIT_JSON), Reply::chat(EDIT_JSON)]);
    let ws = workspace(
        &s.base_url,
        "openrouter",
        "api_key_env = \"LOCAL_LLM_API_KEY\"\n[edit]\nformat = \"json\"\n",
    );
    let args = propose_args(&ws, "low");
    let out = run_keys(&args, &[("LOCAL_LLM_API_KEY", SENTINEL)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        header(&first_post(&s), "authorization"),
        Some(format!("Bearer {SENTINEL}").as_str())
    );
    assert!(!stdout(&out).contains(SENTINEL) && !stderr(&out).contains(SENTINEL));
    // The policy's variable wins when both are set.
    let ws = workspace(&s.base_url, "openrouter", "[edit]\nformat = \"json\"\n");
    let args = propose_args(&ws, "low");
    let out = run_keys(
        &args,
        &[
            ("LOCAL_LLM_API_KEY", "sk-plugin-other"),
            ("OPENROUTER_API_KEY", SENTINEL),
        ],
    );
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
    let doctor = ["doctor", "--workspace-root", &ws.root_str()].map(String::from);
    let d = run_keys(&doctor, &[("OPENROUTER_API_KEY", SENTINEL)]);
    let text = stdout(&d);
    assert!(
        text.contains(&format!(
            "sends the value of OPENROUTER_API_KEY to {}",
            s.base_url
        )),
        "{text}"
    );
    assert!(!text.contains(SENTINEL));
}

/// The plugin's key, stored for a hosted provider, never stands in for a variable a llama.cpp policy names (any
/// local user can take port 8080 while the real server is down), nor goes anywhere a llama.cpp policy without a key
/// sends its requests; `doctor` says no key is sent and why the plugin's is not used.
#[test]
fn the_plugin_key_is_not_sent_to_a_llamacpp_server() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let named = workspace(
        &s.base_url,
        "llamacpp",
        "api_key_env = \"LLAMA_API_KEY\"\n[edit]\nformat = \"json\"\n",
    );
    let out = run_keys(
        &propose_args(&named, "low"),
        &[("LOCAL_LLM_API_KEY", SENTINEL)],
    );
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("LLAMA_API_KEY") && e.contains("is not used for"),
        "{e}"
    );
    assert_no_key_and_no_post(&s);
    let keyless = workspace(&s.base_url, "llamacpp", "[edit]\nformat = \"json\"\n");
    let out = run_keys(
        &propose_args(&keyless, "low"),
        &[("LOCAL_LLM_API_KEY", SENTINEL)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(header(&first_post(&s), "authorization"), None);
    let doctor = ["doctor", "--workspace-root", &named.root_str()].map(String::from);
    let d = run_keys(&doctor, &[("LOCAL_LLM_API_KEY", SENTINEL)]);
    let text = stdout(&d);
    assert!(
        text.contains("LOCAL_LLM_API_KEY, the plugin's key, is never sent here"),
        "{text}"
    );
    for out in [&out, &d] {
        assert!(!stdout(out).contains(SENTINEL) && !stderr(out).contains(SENTINEL));
    }
}

/// Nor to the generic `openai` kind, nor to a hosted kind whose `base_url` was changed: refused before any request.
#[test]
fn the_plugin_key_is_not_sent_to_a_changed_base_url_or_a_generic_server() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    for (kind, extra) in [
        ("openrouter", ""),
        ("huggingface", ""),
        ("openai", "api_key_env = \"VLLM_KEY\"\n"),
    ] {
        let ws = workspace(&s.base_url, kind, extra);
        let out = run_keys(
            &propose_args(&ws, "low"),
            &[("LOCAL_LLM_API_KEY", SENTINEL)],
        );
        assert!(!out.status.success(), "{kind}");
        assert!(
            stderr(&out).contains("is not used for"),
            "{kind}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains(SENTINEL));
    }
    assert_no_key_and_no_post(&s);
}

/// No request reached `s` with a key, and none asked for an answer (a context-window lookup may have been made).
fn assert_no_key_and_no_post(s: &Scripted) {
    for r in s.seen.lock().unwrap().iter() {
        assert_ne!(r.method, "POST", "an answer was asked for: {}", r.path);
        assert_eq!(
            header(r, "authorization"),
            None,
            "a key was sent to {}",
            r.path
        );
    }
}

// ---------------------------------------------------------------- local servers, each in its documented shapes
//
// Scripted servers that answer the discovery requests as each server's API documentation shows them (Ollama
// `POST /api/show` and `GET /api/ps`, LM Studio `GET /api/v0/models`, vLLM's model list, a LiteLLM proxy's
// `GET /model/info`): none of these servers can be installed here.

/// Ollama `POST /api/show` for a model trained with a 32,768-token window, with `num_ctx` in its parameters.
fn ollama_show(num_ctx: Option<u64>) -> Reply {
    let parameters = match num_ctx {
        Some(n) => format!(
            "num_ctx                        {n}\nstop                           \"<|im_end|>\""
        ),
        None => "stop                           \"<|im_end|>\"".to_string(),
    };
    let body = serde_json::json!({
        "modelfile": "FROM qwen2.5-coder:7b",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"},
        "model_info": {
            "general.architecture": "qwen2",
            "general.parameter_count": 7615616512u64,
            "qwen2.block_count": 28,
            "qwen2.context_length": 32768,
            "qwen2.embedding_length": 3584
        },
        "capabilities": ["completion", "tools"]
    });
    Reply::status(200, &body.to_string())
}

/// Ollama `GET /api/ps` with `qwen2.5-coder:7b` loaded with `context_length` tokens (`None`: nothing loaded).
fn ollama_ps(context_length: Option<u64>) -> Reply {
    let models: Vec<serde_json::Value> = context_length
        .map(|n| {
            serde_json::json!({
                "name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b", "size": 6_654_289_920u64,
                "digest": "2b0496514337a3d5901f1d253d01726c890b721e891335a56d6e08cedf3e2cb0",
                "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
                "expires_at": "2026-12-01T22:15:34.383753787Z", "size_vram": 0, "context_length": n
            })
        })
        .into_iter()
        .collect();
    Reply::status(200, &serde_json::json!({ "models": models }).to_string())
}

fn doctor(ws: &Ws) -> String {
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

fn line<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in {report}"))
}

#[test]
fn ollama_window_is_the_smaller_of_trained_and_loaded_named_in_the_result_and_doctor() {
    let s = scripted_server(
        &[
            ("POST", "/api/show", ollama_show(Some(8192))),
            ("GET", "/api/ps", ollama_ps(Some(4096))),
        ],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "ollama", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&refs);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let w = &v["context_window"];
    assert_eq!(
        (w["tokens"].as_u64(), w["source"].as_str()),
        (Some(4096), Some("server")),
        "{w}"
    );
    let detail = w["detail"].as_str().unwrap();
    assert!(
        detail.contains("/api/ps (context_length 4096 of qwen2.5-coder:7b, as loaded)"),
        "{detail}"
    );
    assert!(
        detail.contains("qwen2.context_length 32768"),
        "the trained window is named: {detail}"
    );
    let show = s
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|r| r.path == "/api/show")
        .cloned()
        .unwrap();
    assert_eq!(show.body["model"], "qwen2.5-coder:7b");
    // The edit is constrained: Ollama's /v1 layer passes response_format.json_schema.schema on as its `format`.
    let chat = first_post(&s);
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.body["model"], "qwen2.5-coder:7b");
    assert_eq!(chat.body["response_format"]["type"], "json_schema");
    assert!(
        chat.body["response_format"]["json_schema"]["schema"]["properties"]["edits"].is_object()
    );
    assert!(
        header(&chat, "authorization").is_none(),
        "a local server gets no key"
    );

    // The trained window wins when it is the smaller; num_ctx stands in for a model not loaded.
    let s = scripted_server(
        &[
            ("POST", "/api/show", ollama_show(Some(65536))),
            ("GET", "/api/ps", ollama_ps(None)),
        ],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "ollama", "");
    let report = doctor(&ws);
    let window = line(&report, "window");
    assert!(window.contains("32768 tokens (server: POST "), "{window}");
    assert!(
        window.contains("the trained window, below the loaded one"),
        "{window}"
    );
    assert!(window.contains("num_ctx 65536"), "{window}");
    let output = line(&report, "output");
    assert!(
        output.contains("JSON edits, constrained by a JSON schema sent in response_format"),
        "{output}"
    );
}

#[test]
fn ollama_prompt_over_the_loaded_window_is_refused_before_sending() {
    // Not loaded, num_ctx 2048: Ollama would cut the prompt to 2,048 tokens without a word.
    let s = scripted_server(
        &[
            ("POST", "/api/show", ollama_show(Some(2048))),
            ("GET", "/api/ps", ollama_ps(None)),
        ],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "ollama", "");
    ws.write("src/big.py", &"value = compute(1, 2, 3)\n".repeat(400));
    let out = propose(&ws, &["src/big.py"], &[]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("over the context window of 2048 tokens (server: POST "),
        "{err}"
    );
    assert!(
        err.contains("num_ctx 2048 in the model's parameters"),
        "{err}"
    );
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "no chat request was sent"
    );

    // Neither loaded nor num_ctx: Ollama's smallest default is assumed, and said.
    let s = scripted_server(
        &[
            ("POST", "/api/show", ollama_show(None)),
            ("GET", "/api/ps", ollama_ps(None)),
        ],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "ollama", "");
    ws.write("src/big.py", &"value = compute(1, 2, 3)\n".repeat(400));
    let err = stderr(&propose(&ws, &["src/big.py"], &[]));
    assert!(
        err.contains("over the context window of 4096 tokens"),
        "{err}"
    );
    assert!(err.contains("not loaded and sets no num_ctx"), "{err}");
    assert!(s.requests.lock().unwrap().is_empty());
}

/// LM Studio `GET /api/v0/models`: the model loaded with `loaded` tokens of its 32,768 (`None`: not loaded), and
/// an embedding model beside it.
fn lmstudio_models(loaded: Option<u64>) -> Reply {
    let mut llm = serde_json::json!({
        "id": "qwen2.5-coder-7b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
        "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
        "state": if loaded.is_some() { "loaded" } else { "not-loaded" }, "max_context_length": 32768
    });
    if let Some(n) = loaded {
        llm["loaded_context_length"] = n.into();
    }
    let embed = serde_json::json!({
        "id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "type": "embeddings",
        "publisher": "nomic-ai", "arch": "nomic-bert", "compatibility_type": "gguf", "quantization": "Q4_K_M",
        "state": "not-loaded", "max_context_length": 2048
    });
    Reply::status(
        200,
        &serde_json::json!({"object": "list", "data": [llm, embed]}).to_string(),
    )
}

#[test]
fn lmstudio_reports_the_loaded_window_and_gets_a_json_schema() {
    let s = scripted_server(
        &[("GET", "/api/v0/models", lmstudio_models(Some(8192)))],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "lmstudio", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&refs);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["context_window"]["tokens"], 8192, "{v}");
    let detail = v["context_window"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("/api/v0/models (loaded_context_length 8192 of qwen2.5-coder-7b-instruct)"),
        "{detail}"
    );
    let chat = first_post(&s);
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.body["response_format"]["type"], "json_schema");
    assert_eq!(chat.body["response_format"]["json_schema"]["strict"], true);
    assert!(chat.body.get("structured_outputs").is_none());
    let report = doctor(&ws);
    assert!(
        line(&report, "window").contains("8192 tokens (server: GET "),
        "{report}"
    );
    assert!(
        line(&report, "output").contains("constrained by a JSON schema sent in response_format"),
        "{report}"
    );
}

#[test]
fn lmstudio_prompt_over_the_loaded_window_is_refused_before_sending() {
    let s = scripted_server(
        &[("GET", "/api/v0/models", lmstudio_models(Some(2048)))],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "lmstudio", "");
    ws.write("src/big.py", &"value = compute(1, 2, 3)\n".repeat(400));
    let err = stderr(&propose(&ws, &["src/big.py"], &[]));
    assert!(
        err.contains("over the context window of 2048 tokens (server: GET "),
        "{err}"
    );
    assert!(err.contains("loaded_context_length 2048"), "{err}");
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "no chat request was sent"
    );
    // A model not loaded yet is taken at LM Studio's default load length, and that is said.
    let s = scripted_server(
        &[("GET", "/api/v0/models", lmstudio_models(None))],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "lmstudio", "");
    let report = doctor(&ws);
    let window = line(&report, "window");
    assert!(
        window.contains("4096 tokens") && window.contains("is not loaded"),
        "{window}"
    );
}

#[test]
fn vllm_gets_its_schema_in_structured_outputs_and_its_window_from_max_model_len() {
    let models = serde_json::json!({"object": "list", "data": [{
        "id": "Qwen/Qwen2.5-Coder-7B-Instruct", "object": "model", "created": 1_764_600_000, "owned_by": "vllm",
        "root": "Qwen/Qwen2.5-Coder-7B-Instruct", "parent": null, "max_model_len": 16384, "permission": []
    }]});
    let s = scripted_server(
        &[("GET", "/v1/models", Reply::status(200, &models.to_string()))],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "vllm", "");
    let args = propose_args(&ws, "low");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&refs);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["context_window"]["tokens"], 16384, "{v}");
    assert!(
        v["context_window"]["detail"]
            .as_str()
            .unwrap()
            .contains("max_model_len"),
        "{v}"
    );
    let chat = first_post(&s);
    assert!(
        chat.body["structured_outputs"]["json"]["properties"]["edits"].is_object(),
        "{}",
        chat.body
    );
    assert!(
        chat.body.get("response_format").is_none(),
        "one constraint only: {}",
        chat.body
    );
    assert!(line(&doctor(&ws), "output").contains("sent in structured_outputs.json"));
}

#[test]
fn a_litellm_proxy_reports_its_window_through_model_info() {
    let info = serde_json::json!({"data": [
        {"model_name": "local", "litellm_params": {"model": "ollama/qwen2.5-coder:7b"},
         "model_info": {"id": "a1", "max_input_tokens": 3000, "max_output_tokens": 1024, "max_tokens": 1024}},
        {"model_name": "other", "litellm_params": {"model": "openai/gpt-x"}, "model_info": {"max_input_tokens": 128000}}
    ]});
    let s = scripted_server(
        &[("GET", "/model/info", Reply::status(200, &info.to_string()))],
        vec![Reply::chat(EDIT_JSON)],
    );
    let ws = workspace(&s.base_url, "openai", "");
    ws.write("src/big.py", &"value = compute(1, 2, 3)\n".repeat(400));
    let err = stderr(&propose(&ws, &["src/big.py"], &[]));
    assert!(
        err.contains("over the context window of 3000 tokens (server: GET "),
        "{err}"
    );
    assert!(
        err.contains("/model/info (model_info.max_input_tokens of local)"),
        "{err}"
    );
    assert!(s.requests.lock().unwrap().is_empty());
}
