//! Whose policy, end to end through the binary: a policy another user owns (or could write) is refused naming its
//! owner; the upward search stops at another user's folder; a policy that names commands or a key variable is used
//! only once trusted as it is now (CLI, MCP and doctor), by `local-llm-worker trust` or `init-project`; the ledger is
//! never appended through a symlink. The policies here are written with `std::fs::write`, NOT `Ws::write` (which
//! trusts what it writes). The scripted endpoint stands in for a server that must receive nothing.

use crate::common::*;
use std::path::Path;

const SENTINEL: &str = "sk-TRUST-SENTINEL-5b1e";

/// A workspace whose policy (`[provider]` at `base_url`, then `extra`) is written but NOT trusted.
fn untrusted(base_url: &str, extra: &str) -> Ws {
    let ws = Ws {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::write(
        ws.dir.path().join("local-llm-worker.toml"),
        format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{base_url}\"\n{extra}\n[paths]\nallowed = [\"src/**\"]\n\
             [edit]\nformat = \"json\"\n"
        ),
    )
    .unwrap();
    ws.write("src/value.py", "VALUE = 1\n");
    ws
}

const COMMANDS: &str = "\n[validation]\ncommands = [\"touch RAN\"]\n";

/// Whether root runs the tests (CI does): "another user" needs `chown`.
fn as_root(test: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("{test}: skipped, it needs root to give a file to another user (uid 65534)");
    }
    root
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
}

fn kind_in_json(out: &std::process::Output) -> String {
    let v: serde_json::Value = serde_json::from_str(&stdout(out)).unwrap_or_default();
    v["error"]["kind"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_untrusted_policy_with_commands_is_refused_with_the_trust_command() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, COMMANDS);
    let root = ws.root_str();
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(!out.status.success());
    assert_eq!(kind_in_json(&out), "trust", "{}", stdout(&out));
    let e = stderr(&out);
    assert!(
        e.contains(&format!(
            "run `local-llm-worker trust --workspace-root {root}`"
        )),
        "{e}"
    );
    // The summary: the commands, the URL, the key (none here).
    assert!(e.contains("`touch RAN`") && e.contains(&s.base_url), "{e}");
    assert!(e.contains("sends no key"), "{e}");
    // delegate and apply are refused the same way, before anything runs.
    let patch = ws.dir.path().join("p.patch");
    std::fs::write(&patch, "x").unwrap();
    let digest = sha256_of_file(&patch);
    let p = patch.to_string_lossy().into_owned();
    for args in [
        vec![
            "delegate",
            "--workspace-root",
            &root,
            "--task-kind",
            "summarize",
            "--task",
            "Summarise",
            "--accept",
            "short",
            "--complexity",
            "low",
            "--file",
            "src/value.py",
            "--json",
        ],
        vec![
            "apply",
            "--workspace-root",
            &root,
            "--patch",
            &p,
            "--digest",
            &digest,
            "--json",
        ],
        vec!["calibrate", "--workspace-root", &root, "--json"],
    ] {
        let out = cli(&args);
        assert_eq!(kind_in_json(&out), "trust", "{args:?}: {}", stderr(&out));
    }
    assert!(s.seen.lock().unwrap().is_empty(), "a request was sent");
    assert!(!ws.dir.path().join("RAN").exists(), "a command ran");
    // Trusting prints what it would do, then the same propose goes through.
    let t = cli(&["trust", "--workspace-root", &root]);
    assert!(t.status.success(), "{}", stderr(&t));
    let text = stdout(&t);
    for want in ["trusted ", "`touch RAN`", &s.base_url, "sends no key"] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_changed_policy_must_be_trusted_again() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, COMMANDS);
    let root = ws.root_str();
    assert!(cli(&["trust", "--workspace-root", &root]).status.success());
    // One byte more: another policy.
    let path = ws.dir.path().join("local-llm-worker.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert_eq!(kind_in_json(&out), "trust", "{}", stderr(&out));
    assert!(stderr(&out).contains("changed since it was trusted"));
    assert!(s.seen.lock().unwrap().is_empty(), "a request was sent");
    assert!(cli(&["trust", "--workspace-root", &root]).status.success());
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_policy_with_neither_commands_nor_a_key_variable_needs_no_trust() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, "");
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn doctor_on_an_untrusted_policy_sends_no_request_and_runs_nothing() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, "api_key_env = \"LLW_TRUST_KEY\"\n");
    let root = ws.root_str();
    let out = Cli::new(["doctor", "--workspace-root", &root])
        .env("LLW_TRUST_KEY", SENTINEL)
        .run();
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(text.contains("FAIL  trust"), "{text}");
    assert!(
        text.contains(&format!("local-llm-worker trust --workspace-root {root}")),
        "{text}"
    );
    assert!(
        text.contains("not checked: the policy is not trusted, so no request is sent"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "sends the value of LLW_TRUST_KEY to {}",
            s.base_url
        )),
        "{text}"
    );
    assert!(!text.contains(SENTINEL) && !stderr(&out).contains(SENTINEL));
    assert!(s.seen.lock().unwrap().is_empty(), "a request was sent");
}

#[tokio::test]
async fn an_untrusted_policy_is_refused_over_mcp() {
    use rmcp::model::CallToolRequestParams;
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, COMMANDS);
    let client = Cli::mcp().serve().await;
    let task = serde_json::json!({
        "workspace_root": ws.root_str(),
        "task": "Set VALUE to 2",
        "acceptance_criteria": ["VALUE is 2"],
        "complexity": "low",
        "files": ["src/value.py"],
    });
    let mut delegate = task.clone();
    delegate["task_kind"] = "summarize".into();
    for (tool, args) in [("propose_patch", task), ("delegate_task", delegate)] {
        let serde_json::Value::Object(map) = args else {
            unreachable!()
        };
        let r = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{tool}");
        let v = r.structured_content.clone().unwrap();
        assert_eq!(v["kind"], "trust", "{tool}: {v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("local-llm-worker trust --workspace-root"),
            "{v}"
        );
    }
    client.cancel().await.unwrap();
    assert!(s.seen.lock().unwrap().is_empty(), "a request was sent");
}

#[test]
fn init_project_trusts_what_it_writes() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let root = d
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = cli(&["init-project", "--workspace-root", &root]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("trusted it as written"));
    let text = std::fs::read_to_string(d.path().join("local-llm-worker.toml")).unwrap();
    assert!(
        text.contains("commands = ["),
        "the template names a check: {text}"
    );
    let out = cli(&["doctor", "--workspace-root", &root]);
    assert!(
        stdout(&out).contains("ok    trust     trusted as it is now"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_policy_owned_by_another_user_is_refused_naming_the_owner() {
    if !as_root("a_policy_owned_by_another_user_is_refused_naming_the_owner") {
        return;
    }
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, COMMANDS);
    let root = ws.root_str();
    // Trusted first: ownership is checked before trust, and trust does not lift it.
    assert!(cli(&["trust", "--workspace-root", &root]).status.success());
    let policy = ws.dir.path().join("local-llm-worker.toml");
    chown_nobody(&policy);
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert_eq!(kind_in_json(&out), "trust", "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("is owned by nobody (uid 65534)"), "{e}");
    assert!(e.contains("chown 0 "), "{e}");
    let t = cli(&["trust", "--workspace-root", &root]);
    assert!(!t.status.success() && stderr(&t).contains("uid 65534"));
    let d = cli(&["doctor", "--workspace-root", &root]);
    assert!(stdout(&d).contains("uid 65534"), "{}", stdout(&d));
    // LOCAL_LLM_CONFIG naming such a file: the same refusal.
    let other = untrusted(&s.base_url, "");
    let out = Cli::new(["doctor", "--workspace-root", &other.root_str()])
        .env("LOCAL_LLM_CONFIG", &policy)
        .run();
    assert!(
        stdout(&out).contains("is owned by nobody (uid 65534)"),
        "{}",
        stdout(&out)
    );
    assert!(s.seen.lock().unwrap().is_empty(), "a request was sent");
    assert!(!ws.dir.path().join("RAN").exists());
}

#[test]
fn the_upward_search_stops_at_a_folder_owned_by_another_user() {
    if !as_root("the_upward_search_stops_at_a_folder_owned_by_another_user") {
        return;
    }
    // shared/ (another user's) holds a policy of root's; the project below it has none.
    let top = tempfile::tempdir().unwrap();
    let shared = top.path().join("shared");
    let project = shared.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        shared.join("local-llm-worker.toml"),
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
    )
    .unwrap();
    let doctor_in = |dir: &Path| {
        let out = Cli::new(["doctor"]).current_dir(dir).run();
        stdout(&out)
    };
    // The control: while shared/ is root's, the search finds its policy.
    let found = doctor_in(&project);
    assert!(
        found.contains("shared/local-llm-worker.toml is valid"),
        "{found}"
    );
    chown_nobody(&shared);
    let text = doctor_in(&project);
    assert!(!text.contains("shared/local-llm-worker.toml"), "{text}");
    assert!(
        text.contains("project has no local-llm-worker.toml"),
        "{text}"
    );
}

#[test]
fn a_symlinked_ledger_is_not_written_through() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = untrusted(&s.base_url, "");
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim.txt");
    std::fs::write(&victim, "mine\n").unwrap();
    let ledger = d.path().join("ledger.jsonl");
    std::os::unix::fs::symlink(&victim, &ledger).unwrap();
    let root = ws.root_str();
    let out = Cli::propose(&root)
        .file("src/value.py")
        .arg("--json")
        .ledger(&ledger)
        .run();
    // The call itself succeeds; the ledger line is not written, and stderr says why.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("is a symlink"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
}
