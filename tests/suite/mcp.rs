//! The MCP server end to end through rmcp's client over the real binary's stdio, against a scripted endpoint:
//! tool listing with annotations and schemas, propose then apply by id and digest, and every proposal refusal.

use crate::common::*;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use sha2::Digest;

type Client = McpClient;

async fn client() -> Client {
    Cli::mcp().serve().await
}

async fn call(c: &Client, tool: &'static str, args: serde_json::Value) -> CallToolResult {
    let serde_json::Value::Object(map) = args else {
        panic!("args must be an object")
    };
    c.call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await
        .unwrap()
}

fn text_of(r: &CallToolResult) -> String {
    serde_json::to_string(&r.content).unwrap()
}

/// The kind a refusal carries as structured content beside its text (`{kind, message}`).
#[track_caller]
fn kind_of(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "not a refusal: {}", text_of(r));
    let v = r
        .structured_content
        .clone()
        .expect("a refusal carries structured content");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        text_of(r).contains(&message.replace('"', "\\\"")[..message.len().min(40)]),
        "the text and the structured message differ: {} vs {v}",
        text_of(r)
    );
    v["kind"].as_str().unwrap().to_string()
}

fn propose_args(ws: &Ws) -> serde_json::Value {
    serde_json::json!({
        "workspace_root": ws.root_str(),
        "task": "Set VALUE to 2",
        "acceptance_criteria": ["VALUE is 2"],
        "complexity": "low",
        "files": ["src/value.py"]
    })
}

fn sample(base_url: &str, extra: &str) -> Ws {
    let ws = Ws::new(
        base_url,
        &format!("[paths]\nallowed = [\"src/**\"]\n{extra}"),
    );
    ws.write("src/value.py", "VALUE = 1\n");
    ws
}

#[tokio::test]
async fn lists_the_three_tools_with_annotations_schemas_and_instructions() {
    let c = client().await;
    let info = c.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap()
            .contains("apply_patch with the proposal_id AND the digest")
    );
    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let delegate = tools.iter().find(|t| t.name == "delegate_task").unwrap();
    let da = delegate.annotations.as_ref().unwrap();
    assert_eq!(
        (da.read_only_hint, da.destructive_hint),
        (Some(true), Some(false))
    );
    let propose = tools.iter().find(|t| t.name == "propose_patch").unwrap();
    let apply = tools.iter().find(|t| t.name == "apply_patch").unwrap();
    let pa = propose.annotations.as_ref().unwrap();
    assert_eq!(
        (pa.read_only_hint, pa.destructive_hint),
        (Some(true), Some(false))
    );
    let aa = apply.annotations.as_ref().unwrap();
    assert_eq!(
        (aa.read_only_hint, aa.destructive_hint),
        (Some(false), Some(true))
    );
    assert!(propose.output_schema.is_some() && apply.output_schema.is_some());
    let required = propose.input_schema.get("required").unwrap().to_string();
    for field in [
        "workspace_root",
        "task",
        "acceptance_criteria",
        "complexity",
        "files",
    ] {
        assert!(required.contains(field), "{field} not required: {required}");
    }
    c.cancel().await.unwrap();
}

/// Hosts show a tool's `title` where they list tools (and the plugin directories ask for one).
#[tokio::test]
async fn every_tool_has_a_title() {
    let c = client().await;
    let tools = c.list_all_tools().await.unwrap();
    for t in &tools {
        let title = t.title.as_deref().unwrap_or_default();
        assert!(
            !title.is_empty() && title.len() <= 60,
            "{} has no short title: {title:?}",
            t.name
        );
    }
    c.cancel().await.unwrap();
}

/// The tools' schemas as MCP clients see them: the enum fields list their values, `format` values are standard.
#[tokio::test]
async fn the_tool_schemas_as_listed() {
    let c = client().await;
    let tools = c.list_all_tools().await.unwrap();
    let schemas: serde_json::Map<String, serde_json::Value> = tools
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                serde_json::json!({"input": *t.input_schema, "output": t.output_schema.as_deref()}),
            )
        })
        .collect();
    insta::assert_snapshot!(
        "tool_schemas",
        serde_json::to_string_pretty(&schemas).unwrap()
    );
    let propose = &schemas["propose_patch"]["input"]["properties"];
    assert_eq!(
        propose["complexity"]["enum"],
        serde_json::json!(["low", "medium", "high"])
    );
    let delegate = &schemas["delegate_task"]["input"]["properties"];
    assert_eq!(delegate["task_kind"]["enum"][0], "summarize");
    assert_eq!(
        delegate["output_format"]["anyOf"],
        serde_json::json!([{"type": "string", "enum": ["text", "markdown", "json", "patch"]}, {"type": "null"}])
    );
    c.cancel().await.unwrap();
}

/// Every `"type"` in `v` that is an array (with where it is).
fn type_arrays(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("type").is_some_and(serde_json::Value::is_array) {
                out.push(at.to_string());
            }
            for (k, v) in m {
                type_arrays(v, &format!("{at}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                type_arrays(v, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Schemas every client takes: no `type` arrays (nullable fields are `anyOf` with `{"type": "null"}`), every input
/// schema closed (`additionalProperties: false`, as the tools refuse unknown fields), every output schema an
/// object that admits the refusal.
#[tokio::test]
async fn portable_schemas_have_no_type_arrays_and_close_every_input() {
    let c = client().await;
    let tools = c.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 3);
    let mut arrays = Vec::new();
    for t in &tools {
        let input = serde_json::Value::Object((*t.input_schema).clone());
        let output = serde_json::Value::Object(t.output_schema.as_deref().unwrap().clone());
        type_arrays(&input, &format!("{}.input", t.name), &mut arrays);
        type_arrays(&output, &format!("{}.output", t.name), &mut arrays);
        assert_eq!(input["additionalProperties"], false, "{}: {input}", t.name);
        assert_eq!(output["type"], "object", "{}", t.name);
        assert_eq!(output["anyOf"][1]["$ref"], "#/$defs/Refusal", "{}", t.name);
    }
    assert!(arrays.is_empty(), "type arrays left: {arrays:?}");
    c.cancel().await.unwrap();
}

/// Arguments that do not decode (a missing field, a wrong type) are refused like any other bad argument: with
/// the kind `invalid_argument`, naming the tool and the field; the server goes on.
#[tokio::test]
async fn refusals_every_client_shows_argument_decoding_carries_its_kind() {
    let ws = sample("http://127.0.0.1:1/v1", "");
    let c = client().await;
    let mut missing = propose_args(&ws);
    missing.as_object_mut().unwrap().remove("task");
    let mut wrong = propose_args(&ws);
    wrong["files"] = 7.into();
    let cases = [
        ("propose_patch", missing, "task"),
        ("propose_patch", wrong, "invalid type"),
        (
            "delegate_task",
            serde_json::json!({"workspace_root": ws.root_str(), "task": "x"}),
            "missing field",
        ),
        (
            "apply_patch",
            serde_json::json!({"proposal_id": 5, "digest": "0"}),
            "expected a string",
        ),
        ("apply_patch", serde_json::json!({}), "proposal_id"),
    ];
    for (tool, args, says) in cases {
        let r = call(&c, tool, args).await;
        assert_eq!(kind_of(&r), "invalid_argument", "{tool}: {}", text_of(&r));
        let text = text_of(&r);
        assert!(text.contains(tool) && text.contains(says), "{tool}: {text}");
    }
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
    c.cancel().await.unwrap();
}

/// A patch longer than hosts show in one tool result comes back whole, says so, and is also in a file with the
/// same bytes; the tools carry Claude Code's size hint.
#[tokio::test]
async fn a_large_patch_is_whole_and_kept_in_a_file() {
    let old: String = (0..2_000)
        .map(|i| format!("line_{i:04} = 'some value here to make it long'\n"))
        .collect();
    let new = old.replace("some value", "another value");
    let edit = serde_json::json!({"edits": [{"path": "src/big.py", "old": old.trim_end(), "new": new.trim_end()}]});
    // A server that read the whole (long) prompt.
    let body = serde_json::json!({
        "model": "scripted-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": edit.to_string()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30000, "completion_tokens": 30000, "total_tokens": 60000}
    });
    let s = scripted(vec![Reply::status(200, &body.to_string())]);
    let ws = sample(
        &s.base_url,
        "[models]\ncontext_window = 400000\n[edit]\nformat = \"json\"\n",
    );
    ws.write("src/big.py", &old);
    let c = client().await;
    let tools = c.list_all_tools().await.unwrap();
    for t in &tools {
        let hint = t
            .meta
            .as_ref()
            .and_then(|m| m.0.get("anthropic/maxResultSizeChars"))
            .cloned();
        match t.name.as_ref() {
            "apply_patch" => assert_eq!(hint, None),
            _ => assert_eq!(
                hint,
                Some(serde_json::json!(
                    local_llm_delegator::spill::SIZE_HINT_CHARS
                ))
            ),
        }
    }
    let mut args = propose_args(&ws);
    args["files"] = serde_json::json!(["src/big.py"]);
    let r = call(&c, "propose_patch", args).await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let v = r.structured_content.clone().unwrap();
    let patch = v["patch"].as_str().unwrap();
    assert!(patch.len() > local_llm_delegator::spill::HOST_RESULT_CHARS);
    assert!(
        patch.contains("+line_1999 = 'another value"),
        "the patch is whole"
    );
    let file = v["patch_file"]
        .as_str()
        .expect("a large patch names its file");
    assert_eq!(std::fs::read_to_string(file).unwrap(), patch);
    assert_eq!(
        sha256_of_file(std::path::Path::new(file)),
        v["digest"].as_str().unwrap()
    );
    assert!(
        v["note"].as_str().unwrap().contains("nothing was cut"),
        "{v}"
    );
    c.cancel().await.unwrap();
}

/// Refusals over MCP carry their kind: a wrong field, a wrong value, a path outside the scope, an unknown field.
#[tokio::test]
async fn refusals_carry_their_kind() {
    let ws = sample("http://127.0.0.1:1/v1", "");
    let c = client().await;
    let mut args = propose_args(&ws);
    args["complexity"] = "hard".into();
    let r = call(&c, "propose_patch", args).await;
    assert_eq!(kind_of(&r), "invalid_argument");
    assert!(text_of(&r).contains("not one of"), "{}", text_of(&r));
    let mut args = propose_args(&ws);
    args["files"] = serde_json::json!(["../outside.py"]);
    assert_eq!(kind_of(&call(&c, "propose_patch", args).await), "scope");
    let mut args = propose_args(&ws);
    args["fils"] = serde_json::json!(["src/value.py"]);
    let r = call(&c, "propose_patch", args).await;
    assert_eq!(kind_of(&r), "invalid_argument");
    assert!(text_of(&r).contains("takes no field"), "{}", text_of(&r));
    let mut args = propose_args(&ws);
    args["workspace_root"] = "relative/path".into();
    let r = call(&c, "propose_patch", args).await;
    assert_ne!(kind_of(&r), "io");
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn propose_then_apply_by_id_and_digest_and_only_once() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let c = client().await;
    let r = call(&c, "propose_patch", propose_args(&ws)).await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let v = r.structured_content.clone().unwrap();
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
    let id = v["proposal_id"].as_str().unwrap();
    let digest = v["digest"].as_str().unwrap();
    assert_eq!(v["usage"]["total_tokens"], 150);

    // Wrong digest, digest of another proposal, unknown id: refused, nothing written.
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id, "digest": "0".repeat(64)}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("digest does not match"),
        "{}",
        text_of(&r)
    );
    assert_eq!(kind_of(&r), "digest");
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": "p_0123", "digest": digest}),
    )
    .await;
    assert!(text_of(&r).contains("no proposal"), "{}", text_of(&r));
    assert_eq!(kind_of(&r), "proposal");
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");

    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id, "digest": digest}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    assert_eq!(
        r.structured_content.unwrap()["files_written"],
        serde_json::json!(["src/value.py"])
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 2\n");

    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id, "digest": digest}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("already used (applied)"),
        "{}",
        text_of(&r)
    );
    c.cancel().await.unwrap();
}

/// A validation that fails after the apply wrote the patch earns the one repair round: the refusal carries the
/// failed check and the NEW proposal as structured content, and a client applies that proposal with the id and
/// digest read from there, never from the text. The model is the scripted endpoint: a broken first answer, a good
/// repair.
#[tokio::test]
async fn the_repair_proposal_of_a_failed_apply_is_read_from_structured_content() {
    const BROKEN: &str =
        r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = = 2"}]}"#;
    let s = scripted(vec![Reply::chat(BROKEN), Reply::chat(EDIT_JSON)]);
    let command = "python3 -m py_compile src/value.py";
    let ws = sample(
        &s.base_url,
        &format!(
            // Not validated on propose (the default where bubblewrap works): the broken patch must reach the apply.
            "\n[validation]\ncommands = [{command:?}]\non_propose = false\n\n[repair]\nattempts = 1\n\n\
             [sampling]\ncandidates = 1\n"
        ),
    );
    let c = client().await;
    let r = call(&c, "propose_patch", propose_args(&ws)).await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let first = r.structured_content.clone().unwrap();
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": first["proposal_id"], "digest": first["digest"]}),
    )
    .await;
    assert_eq!(kind_of(&r), "validation_failed");
    assert_eq!(
        ws.read("src/value.py"),
        "VALUE = 1\n",
        "the previous bytes are back"
    );
    let v = r.structured_content.clone().unwrap();
    assert_eq!(v["check"]["command"], command, "{v}");
    assert_eq!(v["check"]["exit_code"], 1, "{v}");
    assert_eq!(v["check"]["timed_out"], false, "{v}");
    assert!(
        v["check"]["output"]
            .as_str()
            .unwrap()
            .contains("SyntaxError"),
        "{v}"
    );
    assert!(v.get("repair_error").is_none(), "{v}");
    let repair = &v["repair"];
    let id = repair["proposal_id"].as_str().unwrap();
    let digest = repair["digest"].as_str().unwrap();
    assert_ne!(id, first["proposal_id"].as_str().unwrap());
    let patch = repair["patch"].as_str().unwrap();
    assert!(patch.contains("+VALUE = 2"), "{patch}");
    assert_eq!(
        digest,
        sha2::Sha256::digest(patch.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    assert!(repair["expires_at_unix"].as_u64().unwrap() > 0, "{v}");
    assert!(repair["validation_passed"].is_null(), "{v}");
    // The text says the same, for people.
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("proposal_id: {id}\ndigest: {digest}\n")),
        "{message}"
    );

    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id, "digest": digest}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    assert_eq!(ws.read("src/value.py"), "VALUE = 2\n");
    assert_eq!(
        s.requests.lock().unwrap().len(),
        2,
        "one first answer, one repair"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn an_expired_proposal_is_refused() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "[limits]\nproposal_ttl_secs = 1\n");
    let c = client().await;
    let v = call(&c, "propose_patch", propose_args(&ws))
        .await
        .structured_content
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": v["proposal_id"], "digest": v["digest"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).contains("has expired"), "{}", text_of(&r));
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn refusals_are_is_error_results_that_say_why() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let c = client().await;
    let mut args = propose_args(&ws);
    args["complexity"] = "high".into();
    let r = call(&c, "propose_patch", args).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("cannot be delegated"),
        "{}",
        text_of(&r)
    );

    // A stale file at apply time: the proposal stays unapplied and the file keeps the concurrent edit.
    let v = call(&c, "propose_patch", propose_args(&ws))
        .await
        .structured_content
        .unwrap();
    ws.write("src/value.py", "VALUE = 1  # concurrent edit\n");
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": v["proposal_id"], "digest": v["digest"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("changed since the proposal"),
        "{}",
        text_of(&r)
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 1  # concurrent edit\n");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_digest_of_another_proposal_is_refused() {
    let s = scripted(vec![
        Reply::chat(EDIT_JSON),
        Reply::chat(r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 3"}]}"#),
    ]);
    let ws = sample(&s.base_url, "");
    let c = client().await;
    let a = call(&c, "propose_patch", propose_args(&ws))
        .await
        .structured_content
        .unwrap();
    let b = call(&c, "propose_patch", propose_args(&ws))
        .await
        .structured_content
        .unwrap();
    assert_ne!(a["digest"], b["digest"]);
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": a["proposal_id"], "digest": b["digest"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("digest does not match"),
        "{}",
        text_of(&r)
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn propose_patch_and_delegate_task_take_line_ranges_like_the_cli() {
    let text: String = (1..=500).map(|i| format!("v{i} = {i}\n")).collect();
    let edit = r#"{"edits":[{"path":"src/big.py","old":"v250 = 250","new":"v250 = 0"}]}"#;
    let s = scripted(vec![Reply::chat(edit), Reply::chat("A summary.")]);
    let ws = sample(&s.base_url, "");
    ws.write("src/big.py", &text);
    let c = client().await;
    let mut args = propose_args(&ws);
    args["files"] = serde_json::json!(["src/big.py:240-260"]);
    let r = call(&c, "propose_patch", args.clone()).await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let v = r.structured_content.clone().unwrap();
    assert_eq!(v["files"][0]["hunks"][0]["old_start"], 250);
    assert_eq!(v["context_window"]["source"], "default");
    let sent = s.requests.lock().unwrap()[0].clone();
    let u = sent["messages"][1]["content"].as_str().unwrap();
    assert!(
        u.contains("File src/big.py, lines 240-260 only (of 500 lines"),
        "{u}"
    );
    assert!(!u.contains("v200 = 200\n"));

    // A bad range is an isError result naming the file's length; nothing is sent.
    args["files"] = serde_json::json!(["src/big.py:490-501"]);
    let r = call(&c, "propose_patch", args).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text_of(&r).contains("src/big.py has 500 lines"),
        "{}",
        text_of(&r)
    );
    assert_eq!(s.requests.lock().unwrap().len(), 1);

    let r = call(
        &c,
        "delegate_task",
        serde_json::json!({
            "workspace_root": ws.root_str(),
            "task_kind": "summarize",
            "task": "Summarize these lines.",
            "acceptance_criteria": ["one sentence"],
            "complexity": "low",
            "files": ["src/big.py:10-12"],
        }),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text_of(&r));
    let sent = s.requests.lock().unwrap()[1].clone();
    let u = sent["messages"][1]["content"].as_str().unwrap();
    assert!(
        u.contains("Lines 10-12 of src/big.py:") && !u.contains("v20 = 20\n"),
        "{u}"
    );
    let v = r.structured_content.clone().unwrap();
    assert_eq!(v["files_read"], serde_json::json!(["src/big.py"]));
    assert_eq!(v["context_window"]["tokens"], 8192);
    c.cancel().await.unwrap();
}

/// Every `format` value in a schema, at any depth.
fn formats_in(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(f)) = m.get("format") {
                out.push(f.clone());
            }
            m.values().for_each(|x| formats_in(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| formats_in(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn tool_schemas_carry_only_json_schema_formats() {
    // JSON Schema's own formats; schemars' `uint`/`uint64`/... made Claude Code log a warning per field per call.
    const STANDARD: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];
    let c = client().await;
    let tools = c.list_all_tools().await.unwrap();
    let mut found = Vec::new();
    for t in &tools {
        formats_in(
            &serde_json::Value::Object((*t.input_schema).clone()),
            &mut found,
        );
        if let Some(o) = &t.output_schema {
            formats_in(&serde_json::Value::Object((**o).clone()), &mut found);
        }
    }
    let odd: Vec<&String> = found
        .iter()
        .filter(|f| !STANDARD.contains(&f.as_str()))
        .collect();
    assert!(
        odd.is_empty(),
        "non-standard formats in the tool schemas: {odd:?}"
    );
    let out = serde_json::to_string(&tools).unwrap();
    assert!(out.contains("\"minimum\":0"), "the integer bounds stay");
    c.cancel().await.unwrap();
}

/// The server over raw stdin and stdout lines: each line it writes comes through `lines`, within 30 s.
struct RawServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl RawServer {
    fn start() -> RawServer {
        use std::io::BufRead;
        let mut child = Cli::mcp()
            .command()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        RawServer {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON; panics when none comes within 30 s (the client would wait forever).
    #[track_caller]
    fn next(&self, after: &str) -> serde_json::Value {
        let line = self
            .lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer to {after} within 30 s"));
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_input_dropped_without_a_word_gets_json_rpc_errors_and_the_server_goes_on() {
    let mut s = RawServer::start();
    s.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
    assert_eq!(s.next("initialize")["id"], 1);
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // (line sent, expected code, expected id)
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "a".repeat(40 << 20)
    );
    let cases: [(&[u8], i64, serde_json::Value); 5] = [
        (b"{not json", -32700, serde_json::Value::Null),
        (
            br#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#,
            -32600,
            2.into(),
        ),
        (big.as_bytes(), -32600, serde_json::Value::Null),
        (b"[1, 2]", -32600, serde_json::Value::Null),
        (br#"{"jsonrpc":"2.0","id":"four"}"#, -32600, "four".into()),
    ];
    for (line, code, id) in cases {
        let what = String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned();
        s.send(line);
        let r = s.next(&what);
        assert_eq!(r["jsonrpc"], "2.0", "{what}: {r}");
        assert_eq!(r["error"]["code"], code, "{what}: {r}");
        assert_eq!(r["id"], id, "{what}: {r}");
        assert!(
            r["error"]["message"].as_str().is_some_and(|m| m.len() > 20),
            "{what}: {r}"
        );
    }
    // `arguments` that is not an object: invalid params, not an unknown method.
    s.send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"apply_patch","arguments":"x"}}"#);
    let r = s.next("tools/call with a string for arguments");
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (6.into(), (-32602).into()),
        "{r}"
    );
    // Still serving.
    s.send(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#);
    let r = s.next("tools/list");
    assert_eq!(r["id"], 5);
    assert_eq!(
        r["result"]["tools"].as_array().map(Vec::len),
        Some(3),
        "{r}"
    );
}
