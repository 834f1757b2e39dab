//! Line ranges (`PATH:START-END`) and the server's prompt count, end to end through the CLI against a scripted
//! endpoint: what the model is shown, edits kept inside the range, refusals of bad ranges before any request,
//! names that hold `:`, and a server that read far fewer prompt tokens than were sent.

use crate::common::*;

/// A file of `n` lines `v{i} = {i}`, with `TARGET = 0` at line 120 and again at line 1500 (when `n` reaches it).
fn big(n: usize) -> String {
    (1..=n)
        .map(|i| match i {
            120 | 1500 => "TARGET = 0\n".to_string(),
            _ => format!("v{i} = {i}\n"),
        })
        .collect()
}

fn edit(old: &str, new: &str) -> String {
    serde_json::json!({"edits": [{"path": "src/big.py", "old": old, "new": new}]}).to_string()
}

fn ws_with_big(base_url: &str) -> Ws {
    let ws = Ws::new(base_url, "[paths]\nallowed = [\"src/**\"]\n");
    ws.write("src/big.py", &big(3000));
    git(&ws.root(), &["init", "-q"]);
    ws
}

fn user_prompt(s: &Scripted) -> String {
    let body = s.requests.lock().unwrap()[0].clone();
    body["messages"][1]["content"].as_str().unwrap().to_string()
}

#[test]
fn a_range_sends_only_its_lines_and_the_patch_is_against_the_whole_file() {
    // `TARGET = 0` is at lines 120 and 1500: within 110-130 it is unique.
    let s = scripted(vec![Reply::chat(&edit("TARGET = 0", "TARGET = 1"))]);
    let ws = ws_with_big(&s.base_url);
    let before = ws.snapshot();
    let out = propose(&ws, &["src/big.py:110-130"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ws.snapshot(), before, "propose wrote to the workspace");
    let u = user_prompt(&s);
    assert!(
        u.contains("File src/big.py, lines 110-130 only (of 3000 lines"),
        "{u}"
    );
    assert!(u.contains("Context, lines 107-109 of src/big.py (do not change these lines)"));
    assert!(u.contains("v130 = 130\n") && u.contains("v133 = 133\n"));
    assert!(!u.contains("v106 = 106\n") && !u.contains("v134 = 134\n") && !u.contains("v2000 ="));
    // The schema offers only lines of the range.
    let body = s.requests.lock().unwrap()[0].clone();
    let old = &body["response_format"]["json_schema"]["schema"]["properties"]["edits"]["items"]["properties"]
        ["old"]["enum"];
    assert_eq!(old.as_array().unwrap().len(), 21, "{old}");
    assert!(
        !old.as_array()
            .unwrap()
            .contains(&serde_json::json!("v109 = 109"))
    );

    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["files"][0]["hunks"][0]["old_start"], 120);
    assert_eq!(v["context_window"]["source"], "default");
    assert_eq!(v["context_window"]["tokens"], 8192);
    let shown: u64 = (107..=133)
        .map(|i| {
            if i == 120 {
                11
            } else {
                format!("v{i} = {i}\n").len() as u64
            }
        })
        .sum();
    assert_eq!(v["bytes_read"], shown);
    // Whole-file blob ids: git accepts it on the real file, and apply writes the one line.
    let pf = ws.root().join("../ranged.patch");
    std::fs::write(&pf, v["patch"].as_str().unwrap()).unwrap();
    let check = git(&ws.root(), &["apply", "--check", pf.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stderr(&check));
    let root = ws.root_str();
    let out = Cli::apply(&root, pf.to_str().unwrap(), v["digest"].as_str().unwrap()).run();
    assert!(out.status.success(), "{}", stderr(&out));
    let want = big(3000).replacen("TARGET = 0", "TARGET = 1", 1);
    assert_eq!(ws.read("src/big.py"), want);
    let _ = std::fs::remove_file(pf);
}

#[test]
fn an_edit_outside_the_range_is_refused_even_when_it_matches_uniquely() {
    let s = scripted(vec![Reply::chat(&edit("v412 = 412", "v412 = 0"))]);
    let ws = ws_with_big(&s.base_url);
    let before = ws.snapshot();
    let out = propose(&ws, &["src/big.py:110-130"], &["--json"]);
    assert!(!out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["kind"], "model_answer");
    // The schema pins `old` to the range on llama.cpp; a server that ignores it is still caught here.
    assert!(
        v["error"]["message"].as_str().unwrap().contains(
            "the answer edits line 412 of src/big.py, outside the lines 110-130 it was shown; widen the range or \
             select the whole file"
        ),
        "{v}"
    );
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn bad_ranges_are_refused_before_any_request_naming_the_files_length() {
    let s = scripted(vec![Reply::chat(&edit("v1 = 1", "v1 = 0"))]);
    let ws = ws_with_big(&s.base_url);
    let before = ws.snapshot();
    for (spec, want) in [
        (
            "src/big.py:2990-3001",
            "past the end of the file (line 3001)",
        ),
        ("src/big.py:20-10", "starts after it ends (20 > 10)"),
        ("src/big.py:0-10", "line numbers start at 1"),
        ("src/big.py:10", "not a line range"),
        ("src/big.py:ten-20", "not a line range"),
    ] {
        let out = propose(&ws, &[spec], &[]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{spec} accepted");
        assert!(err.contains(want), "{spec}: {err}");
        assert!(err.contains("src/big.py has 3000 lines"), "{spec}: {err}");
    }
    let out = propose(&ws, &["src/missing.py:1-2"], &[]);
    assert!(
        stderr(&out).contains("src/missing.py does not exist, so it has no lines 1-2 to select"),
        "{}",
        stderr(&out)
    );
    assert!(s.requests.lock().unwrap().is_empty(), "a request was sent");
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn two_ranges_of_one_file_merge_and_both_may_be_edited() {
    let answer = serde_json::json!({"edits": [
        {"path": "src/big.py", "old": "v5 = 5", "new": "v5 = 50"},
        {"path": "src/big.py", "old": "v2999 = 2999", "new": "v2999 = 0"},
    ]})
    .to_string();
    let s = scripted(vec![Reply::chat(&answer)]);
    let ws = ws_with_big(&s.base_url);
    let out = propose(
        &ws,
        &["src/big.py:1-6", "src/big.py:4-8", "src/big.py:2990-3000"],
        &["--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let u = user_prompt(&s);
    assert!(
        u.contains("lines 1-8, 2990-3000 only (of 3000 lines"),
        "{u}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let starts: Vec<u64> = v["files"][0]["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["old_start"].as_u64().unwrap())
        .collect();
    assert_eq!(starts, vec![5, 2999]);
}

#[test]
fn file_names_that_hold_a_colon_keep_their_meaning() {
    let s = scripted(vec![Reply::chat(
        &serde_json::json!({"edits": [{"path": "src/a:1-2.py", "old": "x = 1", "new": "x = 2"}]})
            .to_string(),
    )]);
    let ws = ws_with_big(&s.base_url);
    // A file literally named `a:1-2.py` (its suffix is not a range), and one named like a range of another file.
    ws.write("src/a:1-2.py", "x = 1\n");
    let out = propose(&ws, &["src/a:1-2.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    ws.write("src/big.py:1-2", "x = 1\n");
    let s2 = scripted(vec![Reply::chat(
        &serde_json::json!({"edits": [{"path": "src/big.py:1-2", "old": "x = 1", "new": "x = 2"}]})
            .to_string(),
    )]);
    let ws2 = Ws::new(&s2.base_url, "[paths]\nallowed = [\"src/**\"]\n");
    ws2.write("src/big.py", &big(10));
    ws2.write("src/big.py:1-2", "x = 1\n");
    let out = propose(&ws2, &["src/big.py:1-2"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["files"][0]["path"], "src/big.py:1-2",
        "the existing file wins"
    );
    // A new file whose name holds `:` may be created.
    let s3 = scripted(vec![Reply::chat(
        "--- /dev/null\n+++ b/src/new:v2.py\n@@ -0,0 +1 @@\n+y = 1\n",
    )]);
    let ws3 = Ws::new(
        &s3.base_url,
        "[paths]\nallowed = [\"src/**\"]\n[edit]\nformat = \"udiff\"\n",
    );
    let out = propose(&ws3, &[], &["--json", "--create", "src/new:v2.py"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["files"][0]["status"], "created");
}

#[test]
fn a_server_that_read_far_fewer_prompt_tokens_than_sent_is_refused() {
    // The prompt holds about 1,500 estimated tokens; the server says it read 120 (it cut the prompt to its window).
    let s = scripted(vec![Reply::chat(&edit("TARGET = 0", "TARGET = 1"))]);
    let ws = ws_with_big(&s.base_url);
    let before = ws.snapshot();
    let ledger_before = std::fs::read_to_string(test_ledger()).unwrap_or_default();
    let out = propose(&ws, &["src/big.py:100-400"], &["--json"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("the server dropped part of the prompt (sent about ")
            && msg.contains(" tokens, it read 120)"),
        "{msg}"
    );
    assert_eq!(v["error"]["kind"], "provider");
    assert!(v.get("proposal_id").is_none(), "nothing proposed");
    assert_eq!(s.requests.lock().unwrap().len(), 1);
    assert_eq!(ws.snapshot(), before);
    // The tokens spent are in the ledger.
    let ledger = std::fs::read_to_string(test_ledger()).unwrap();
    let line = ledger[ledger_before.len()..]
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["workspace"].as_str() == Some(ws.root_str().as_str()))
        .expect("a ledger line");
    assert_eq!(line["input_tokens"], 120, "{line}");
    assert!(
        line["outcome"]
            .as_str()
            .unwrap()
            .starts_with("refused:provider"),
        "{line}"
    );

    // The same prompt read whole (a realistic count) is accepted.
    let mut whole = Reply::chat(&edit("TARGET = 0", "TARGET = 1"));
    whole.body = whole
        .body
        .replace("\"prompt_tokens\":120", "\"prompt_tokens\":2500");
    let s = scripted(vec![whole]);
    let ws = ws_with_big(&s.base_url);
    let out = propose(&ws, &["src/big.py:100-400"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_file_also_selected_whole_is_sent_whole() {
    let s = scripted(vec![Reply::chat(&edit("v1 = 1", "v1 = 0"))]);
    let ws = Ws::new(&s.base_url, "[paths]\nallowed = [\"src/**\"]\n");
    ws.write("src/big.py", &big(50));
    let out = propose(&ws, &["src/big.py:1-5", "src/big.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let u = user_prompt(&s);
    assert!(
        u.contains("File src/big.py:\n") && u.contains("v50 = 50\n"),
        "{u}"
    );
    assert!(!u.contains("only (of"), "{u}");
}

#[test]
fn colons_and_ranges_refuse_or_accept_for_the_right_reason() {
    // New files whose names hold `:` under a narrow `allowed`, and beside a folder named like their prefix.
    let s = scripted(vec![Reply::chat(
        "--- /dev/null\n+++ b/src/new:v2.py\n@@ -0,0 +1 @@\n+y = 1\n",
    )]);
    let ws = Ws::new(
        &s.base_url,
        "[paths]\nallowed = [\"src/**/*.py\", \"docs/**\"]\n[edit]\nformat = \"udiff\"\n",
    );
    ws.write("src/big.py", &big(10));
    ws.write("docs/notes/readme.md", "x\n");
    let out = propose(&ws, &[], &["--json", "--create", "src/new:v2.py"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s2 = scripted(vec![Reply::chat(
        "--- /dev/null\n+++ b/docs/notes:draft.md\n@@ -0,0 +1 @@\n+draft\n",
    )]);
    let ws2 = Ws::new(
        &s2.base_url,
        "[paths]\nallowed = [\"docs/**\"]\n[edit]\nformat = \"udiff\"\n",
    );
    ws2.write("docs/notes/readme.md", "x\n");
    let out = propose(&ws2, &[], &["--json", "--create", "docs/notes:draft.md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A mistyped file with a range-like suffix is refused, not taken for a new file named `src/bgi.py:12`.
    let before = ws.snapshot();
    for (spec, needle) in [
        (
            "src/bgi.py:12",
            "src/bgi.py does not exist, so it has no lines 12 to select",
        ),
        ("src/bgi.py:3-", "src/bgi.py does not exist"),
    ] {
        let out = propose(&ws, &[spec], &["--json"]);
        assert!(!out.status.success(), "{spec}: {}", stdout(&out));
        assert!(stdout(&out).contains(needle), "{spec}: {}", stdout(&out));
    }
    // A bad range is refused even when the file is also selected whole.
    let out = propose(&ws, &["src/big.py", "src/big.py:0-5"], &["--json"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("src/big.py:0-5"), "{}", stdout(&out));
    assert_eq!(ws.snapshot(), before);
    assert_eq!(
        s.requests.lock().unwrap().len(),
        1,
        "only the first propose asked the model"
    );
}

#[test]
fn prompt_tokens_taken_from_the_servers_cache_count_as_read() {
    // Scripted: a server that reports only the prompt tokens it did not take from its cache (120), and the cached
    // ones apart, as OpenAI's prompt_tokens_details.cached_tokens. The prompt was read whole: no refusal.
    let mut reply = Reply::chat(&edit("TARGET = 0", "TARGET = 1"));
    reply.body = reply.body.replace(
        "\"total_tokens\":150}",
        "\"total_tokens\":150,\"prompt_tokens_details\":{\"cached_tokens\":2000}}",
    );
    assert!(reply.body.contains("cached_tokens"), "{}", reply.body);
    let s = scripted(vec![reply]);
    let ws = ws_with_big(&s.base_url);
    let out = propose(&ws, &["src/big.py:100-400"], &["--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
}
