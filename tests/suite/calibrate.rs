//! `calibrate`: against the scripted endpoint, where the answers are exact and so are the counts; and against the
//! REAL local llama.cpp server (`LOCAL_LLM_TEST_URL`, skipped without it unless `LLW_REQUIRE_REAL_MODEL=1`), where
//! the run must finish, print its table and change nothing in the policy file but `[edit]` / `[sampling]` lines.

use crate::common::*;

/// The first case of the built-in suite, answered correctly in the JSON edit format.
const FIRST_CASE_RIGHT: &str = r#"{"edits":[{"path":"shop/discount.py","old":"    return price * (1 + percent / 100)","new":"    return price * (1 - percent / 100)"}]}"#;

/// The policy file's text, with comments and odd spacing that `--write` must keep.
fn policy(url: &str) -> String {
    format!(
        "# a policy written by hand\n[provider]\nkind   = \"llamacpp\"   # the local server\nbase_url = \"{url}\"\n\n\
         [paths]\nallowed = [\"src/**\"]\n\n[validation]\ncommands = [\"true\"]\n"
    )
}

/// Lines of `after` not in `before`, and lines of `before` gone from `after` (a multiset difference).
fn changed_lines(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let mut gone: Vec<String> = before.lines().map(str::to_string).collect();
    let mut added = Vec::new();
    for l in after.lines() {
        match gone.iter().position(|g| g == l) {
            Some(i) => {
                gone.remove(i);
            }
            None => added.push(l.to_string()),
        }
    }
    (added, gone)
}

/// Every line `--write` may add: a section header, a calibrate comment, or a key of `[edit]` / `[sampling]` it
/// sets (or an empty line before a new section).
fn is_calibration_line(l: &str) -> bool {
    l.is_empty()
        || l == "[edit]"
        || l == "[sampling]"
        || l.starts_with("# calibrate ")
        || l.starts_with("format = ")
        || l.starts_with("candidates = ")
        || l.starts_with("calibrated = ")
}

#[test]
fn scripted_answers_give_exact_counts_and_write_records_the_winner() {
    // Every request gets the same answer: right for the first case, about a file no other case selects.
    let s = scripted(vec![Reply::chat(FIRST_CASE_RIGHT)]);
    let ws = Ws::new(&s.base_url, "[paths]\nallowed = [\"src/**\"]\n");
    let before = ws.read("local-llm-worker.toml");
    let root = ws.root_str();
    let out = cli(&[
        "calibrate",
        "--workspace-root",
        &root,
        "--formats",
        "json",
        "--json",
        "--write",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let got: Vec<(String, u64, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["format"].as_str().unwrap().to_string(),
                r["candidates"].as_u64().unwrap(),
                r["valid"].as_u64().unwrap(),
                r["correct"].as_u64().unwrap(),
            )
        })
        .collect();
    // Only the first case's file is in the answer: the other five are refused.
    assert_eq!(
        got,
        vec![("json".into(), 1, 1, 1), ("json".into(), 4, 1, 1)],
        "{v:#}"
    );
    assert!(rows.iter().all(|r| r["cases"] == 6));
    // K=1 made one request per case, K=4 up to four: the tie goes to the faster, usually K=1, but the scripted
    // endpoint answers so fast that only the format is certain.
    assert_eq!(v["recommendation"]["format"], "json");
    assert_eq!(v["recommendation"]["correct"], 1);
    let k = v["recommendation"]["candidates"].as_u64().unwrap();
    let after = ws.read("local-llm-worker.toml");
    assert!(after.starts_with(&before), "{after}");
    assert!(after.contains("[edit]\n# calibrate "), "{after}");
    assert!(after.contains("\nformat = \"json\"\n"), "{after}");
    assert!(after.contains(&format!("\ncandidates = {k}\n")), "{after}");
    assert!(
        after.contains(&format!(": local: json K={k} 1/6 correct, ")),
        "{after}"
    );
    // The user's workspace got nothing but the policy file's new lines.
    assert_eq!(
        std::fs::read_dir(ws.root()).unwrap().count(),
        1,
        "calibrate wrote into the workspace"
    );
    // doctor now reports the calibration instead of suggesting it.
    let d = cli(&["doctor", "--workspace-root", &root]);
    assert!(
        stdout(&d).contains("calibrate [sampling] calibrated = "),
        "{}",
        stdout(&d)
    );
}

#[test]
fn nothing_correct_writes_nothing_and_the_table_says_so() {
    let s = scripted(vec![Reply::chat("I cannot help with that.")]);
    let ws = Ws::new(&s.base_url, "");
    let before = ws.read("local-llm-worker.toml");
    let root = ws.root_str();
    let out = cli(&[
        "calibrate",
        "--workspace-root",
        &root,
        "--quick",
        "--formats",
        "udiff",
        "--write",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("recommended: nothing"), "{text}");
    assert!(
        text.contains("udiff             1    0/1      0/1"),
        "{text}"
    );
    assert_eq!(ws.read("local-llm-worker.toml"), before);
    // The row says why its proposal was not made.
    assert!(
        text.contains("\n  refused: model answer: "),
        "a refused row gives its reason: {text}"
    );
}

#[test]
fn an_unknown_format_is_refused_by_name() {
    let out = cli(&["calibrate", "--formats", "json,diff"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("\"diff\" is not an edit format"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_real_model_calibrates_quickly_and_write_touches_only_edit_and_sampling() {
    let Some(url) = real_url("the real-model calibration") else {
        return;
    };
    let ws = Ws {
        dir: tempfile::tempdir().unwrap(),
    };
    let before = policy(&url);
    ws.write("local-llm-worker.toml", &before);
    let root = ws.root_str();
    let out = cli(&[
        "calibrate",
        "--quick",
        "--formats",
        "json",
        "--workspace-root",
        &root,
        "--write",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    eprintln!("{text}");
    for word in [
        "format",
        "K",
        "valid",
        "correct",
        "tokens",
        "s/correct edit",
    ] {
        assert!(text.contains(word), "no {word:?} in the table:\n{text}");
    }
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("json ")).collect();
    assert_eq!(rows.len(), 2, "one row per (format, K):\n{text}");
    assert!(text.contains("recommended: "), "{text}");
    let after = ws.read("local-llm-worker.toml");
    let (added, gone) = changed_lines(&before, &after);
    assert!(gone.is_empty(), "lines gone: {gone:?}\n{after}");
    assert!(
        added.iter().all(|l| is_calibration_line(l)),
        "lines added outside [edit]/[sampling]: {added:?}\n{after}"
    );
    assert!(after.starts_with(&before), "{after}");
    if text.contains("recommended: nothing") {
        assert_eq!(after, before);
    } else {
        assert!(after.contains("\nformat = \"json\"\n"), "{after}");
        assert!(after.contains("\ncalibrated = \""), "{after}");
    }
}

/// `calibrate --write` changes a trusted policy, and trusts its own change: the policy stays usable as written.
#[test]
fn calibrate_write_re_trusts_its_own_change() {
    let s = scripted(vec![Reply::chat(FIRST_CASE_RIGHT)]);
    let ws = Ws::new(
        &s.base_url,
        "[paths]\nallowed = [\"src/**\"]\n\n[validation]\ncommands = [\"true\"]\n",
    );
    let before = ws.read("local-llm-worker.toml");
    let root = ws.root_str();
    let out = cli(&[
        "calibrate",
        "--workspace-root",
        &root,
        "--formats",
        "json",
        "--quick",
        "--json",
        "--write",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_ne!(
        ws.read("local-llm-worker.toml"),
        before,
        "nothing was written"
    );
    let d = cli(&["doctor", "--workspace-root", &root]);
    assert!(
        stdout(&d).contains("ok    trust     trusted as it is now"),
        "{}",
        stdout(&d)
    );
}
