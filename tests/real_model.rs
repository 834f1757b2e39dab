//! Against the REAL local llama.cpp server (`scripts/local-model.sh start`; its URL in `LOCAL_LLM_TEST_URL`).
//! The 135M model is weak, so this pins shape and safety, not wording: a proposal is either a valid canonical patch
//! (git accepts it, the digest is its sha256, usage is reported, the workspace is untouched until apply) or a clear
//! refusal that leaves everything as it was.
//!
//! Without `LOCAL_LLM_TEST_URL` the test says so and passes, unless `LLW_REQUIRE_REAL_MODEL=1` (set by `.ci/run`),
//! where a missing server is a failure.

mod common;

use common::*;

fn real_url() -> Option<String> {
    match std::env::var("LOCAL_LLM_TEST_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var("LLW_REQUIRE_REAL_MODEL").as_deref() != Ok("1"),
                "LLW_REQUIRE_REAL_MODEL=1 but LOCAL_LLM_TEST_URL is not set: start scripts/local-model.sh"
            );
            eprintln!("LOCAL_LLM_TEST_URL is not set: skipping the real-model test");
            None
        }
    }
}

#[test]
fn the_real_model_yields_a_valid_patch_or_a_clear_refusal() {
    let Some(url) = real_url() else { return };
    let mut outcomes = Vec::new();
    for (file, text, task, criterion) in [
        (
            "greeting.py",
            "GREETING = \"Hello\"\nprint(GREETING + \", world!\")\n",
            "Change the value of GREETING from \"Hello\" to \"Hi\".",
            "GREETING is \"Hi\"",
        ),
        (
            "config.py",
            "PORT = 8000\nDEBUG = False\n",
            "Set PORT to 9000.",
            "PORT is 9000",
        ),
        (
            "util.py",
            "def add(a, b):\n    return a - b\n",
            "Fix add so that it returns the sum of a and b.",
            "add returns a + b",
        ),
    ] {
        let ws = Ws::new(
            &url,
            "[validation]\ncommands = [\"python3 -m py_compile *.py\"]\n",
        );
        ws.write(file, text);
        git(&ws.root(), &["init", "-q"]);
        let before = ws.snapshot();
        let root = ws.root_str();
        let out = cli(&[
            "propose",
            "--workspace-root",
            &root,
            "--task",
            task,
            "--accept",
            criterion,
            "--complexity",
            "low",
            "--file",
            file,
            "--json",
        ]);
        assert_eq!(ws.snapshot(), before, "propose touched the workspace");
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        if !out.status.success() {
            let kind = v["error"]["kind"].as_str().unwrap();
            assert!(
                matches!(kind, "model_answer"),
                "unexpected refusal kind {kind}: {}",
                stderr(&out)
            );
            assert!(!v["error"]["message"].as_str().unwrap().is_empty());
            outcomes.push(format!("{file}: refused ({})", v["error"]["message"]));
            continue;
        }
        let patch = v["patch"].as_str().unwrap();
        assert!(
            v["usage"]["input_tokens"].as_u64().unwrap() > 0
                && v["usage"]["output_tokens"].as_u64().unwrap() > 0
        );
        assert_eq!(v["provider"], "llamacpp");
        let pf = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(pf.path(), patch).unwrap();
        assert_eq!(sha256_of_file(pf.path()), v["digest"].as_str().unwrap());
        let check = git(
            &ws.root(),
            &["apply", "--check", pf.path().to_str().unwrap()],
        );
        assert!(
            check.status.success(),
            "git refused the canonical patch:\n{patch}"
        );
        let out = cli(&[
            "apply",
            "--workspace-root",
            &root,
            "--patch",
            pf.path().to_str().unwrap(),
            "--digest",
            v["digest"].as_str().unwrap(),
        ]);
        if out.status.success() {
            assert_ne!(ws.snapshot(), before);
            outcomes.push(format!("{file}: applied"));
        } else {
            // The model's edit may not compile: then everything must be restored exactly.
            assert!(
                stderr(&out).contains("validation failed, previous bytes restored"),
                "{}",
                stderr(&out)
            );
            assert_eq!(ws.snapshot(), before);
            outcomes.push(format!("{file}: validation failed and rolled back"));
        }
    }
    eprintln!("real model outcomes: {outcomes:#?}");
}

#[test]
fn delegate_task_answers_from_the_real_model_with_usage() {
    let Some(url) = real_url() else { return };
    let ws = Ws::new(&url, "");
    ws.write(
        "notes.txt",
        "The deploy runs every Friday at 17:00. Owner: the platform team.\n",
    );
    let before = ws.snapshot();
    let root = ws.root_str();
    let out = cli(&[
        "delegate",
        "--workspace-root",
        &root,
        "--task-kind",
        "summarize",
        "--task",
        "Summarize notes.txt in one sentence.",
        "--accept",
        "one sentence",
        "--complexity",
        "low",
        "--file",
        "notes.txt",
        "--max-output-tokens",
        "80",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(ws.snapshot(), before, "delegate must not write");
    if out.status.success() {
        assert!(!v["content"].as_str().unwrap().trim().is_empty());
        assert_eq!(v["files_read"], serde_json::json!(["notes.txt"]));
        assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0);
        assert_eq!(v["provider"], "llamacpp");
    } else {
        // The tiny model may ramble past the budget: that must be a clear cut-off refusal.
        assert!(
            v["error"]["message"].as_str().unwrap().contains("cut off"),
            "{v}"
        );
    }
}
