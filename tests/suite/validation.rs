//! Validation in a sandbox and the one bounded repair, end to end through the binary with real commands on small real
//! projects (a Python file checked with `python3 -m py_compile`, a tiny Rust crate checked with `cargo check`), a
//! scripted model endpoint (replies in order, so a repair round is scripted by a second reply), and rmcp's client
//! for cancellation and the apply-time repair.
//!
//! Every propose here is followed by a check that the workspace is byte-identical (a hash of the whole tree) and
//! that no sandbox folder is left behind.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use local_llm_delegator::digest::sha256_hex;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest};
use rmcp::service::{PeerRequestOptions, RunningService};

const PY: &str = "def add(a, b):\n    return a + b\n";
const PY_GOOD: &str =
    r#"{"edits":[{"path":"app.py","old":"    return a + b","new":"    return a + b + 1"}]}"#;
const PY_BROKEN: &str =
    r#"{"edits":[{"path":"app.py","old":"    return a + b","new":"    return a + b +"}]}"#;
const PY_BROKEN2: &str =
    r#"{"edits":[{"path":"app.py","old":"    return a + b","new":"    return (a + b + 1"}]}"#;

const RS_TOML: &str =
    "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const RS_LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
const RS_GOOD: &str =
    r#"{"edits":[{"path":"src/lib.rs","old":"    a + b","new":"    a + b + 1"}]}"#;
const RS_BROKEN: &str =
    r#"{"edits":[{"path":"src/lib.rs","old":"    a + b","new":"    a + b + \"one\""}]}"#;
const RS_BROKEN2: &str =
    r#"{"edits":[{"path":"src/lib.rs","old":"    a + b","new":"    a + b +"}]}"#;

/// Where the worker makes its sandboxes in a test: a fresh folder, so leftovers can be seen.
struct SandboxDir(tempfile::TempDir);

impl SandboxDir {
    fn new() -> SandboxDir {
        SandboxDir(tempfile::tempdir().unwrap())
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn entries(&self) -> Vec<String> {
        std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn assert_empty(&self) {
        assert_eq!(
            self.entries(),
            Vec::<String>::new(),
            "a sandbox was left behind"
        );
    }
}

/// The worker's environment for these tests: no policy overrides, a test ledger, the sandbox folder, and no cargo
/// target folder inherited from the test run (the tiny crate builds inside its sandbox).
fn worker_env(c: Cli, sandboxes: &Path) -> Cli {
    c.env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .env("LOCAL_LLM_SANDBOX_DIR", sandboxes)
}

/// `propose` for `file` with a low-complexity task, and `extra` arguments.
fn propose(ws: &Ws, file: &str, sandboxes: &SandboxDir, extra: &[&str]) -> Output {
    let c = Cli::propose(ws.root())
        .task("Make add return the sum plus one")
        .accept(&["add(1, 2) == 4"])
        .file(file)
        .args(extra);
    worker_env(c, sandboxes.path()).run()
}

/// `propose --json` for `file` with a low-complexity task.
fn propose_json(ws: &Ws, file: &str, sandboxes: &SandboxDir) -> (Output, serde_json::Value) {
    let out = propose(ws, file, sandboxes, &["--json"]);
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(serde_json::Value::Null);
    (out, v)
}

fn policy(commands: &[&str], on_propose: bool, attempts: u8, timeout: u64) -> String {
    let cmds: Vec<String> = commands.iter().map(|c| format!("{c:?}")).collect();
    format!(
        "[validation]\ncommands = [{}]\non_propose = {on_propose}\ntimeout_secs = {timeout}\n\n[repair]\nattempts = {attempts}\n\n\
         [sampling]\ncandidates = 1\n",
        cmds.join(", ")
    )
}

fn python_ws(base_url: &str, attempts: u8) -> Ws {
    let ws = Ws::new(
        base_url,
        &policy(&["python3 -m py_compile app.py"], true, attempts, 60),
    );
    ws.write("app.py", PY);
    ws
}

fn rust_ws(base_url: &str) -> Ws {
    let ws = Ws::new(
        base_url,
        &policy(&["cargo check --offline --quiet"], true, 1, 120),
    );
    ws.write("Cargo.toml", RS_TOML);
    ws.write("src/lib.rs", RS_LIB);
    ws
}

fn requests(s: &Scripted) -> usize {
    s.requests.lock().unwrap().len()
}

/// The text of the last user message of the `i`th model request.
fn prompt_of(s: &Scripted, i: usize) -> String {
    let reqs = s.requests.lock().unwrap();
    let msgs = reqs[i]["messages"].as_array().unwrap();
    // The last message the worker wrote as the user (a pinned answer's start may follow it).
    msgs.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
}

/// `propose` returned a patch that fails the project's checks: exit 3, the patch still printed.
#[track_caller]
fn checks_failed(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
}

#[test]
fn python_a_passing_proposal_is_validated_in_a_sandbox() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let ws = python_ws(&s.base_url, 1);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    ok(&out);
    assert_eq!(requests(&s), 1);
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(v["repaired"], false);
    assert_eq!(
        v["validation"][0]["command"],
        "python3 -m py_compile app.py"
    );
    assert_eq!(v["validation"][0]["passed"], true);
    assert!(
        v["patch"]
            .as_str()
            .unwrap()
            .contains("+    return a + b + 1")
    );
    assert_eq!(ws.snapshot(), before, "propose changed the workspace");
    sb.assert_empty();
}

#[test]
fn python_a_failing_proposal_is_repaired_once() {
    let s = scripted(vec![Reply::chat(PY_BROKEN), Reply::chat(PY_GOOD)]);
    let ws = python_ws(&s.base_url, 1);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    ok(&out);
    assert_eq!(requests(&s), 2, "exactly one repair call");
    assert_eq!(v["repaired"], true, "{v}");
    assert_eq!(v["validation_passed"], true, "{v}");
    assert!(
        v["patch"]
            .as_str()
            .unwrap()
            .contains("+    return a + b + 1")
    );
    assert_eq!(v["usage"]["total_tokens"], 300, "both calls are counted");
    // The repair call shows the previous edit and the real failing output.
    let p = prompt_of(&s, 1);
    assert!(p.contains("+    return a + b +\n"), "{p}");
    assert!(p.contains("SyntaxError"), "{p}");
    assert!(
        p.contains("def add(a, b):\n    return a + b\n"),
        "the original file: {p}"
    );
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn the_cli_says_when_a_proposal_was_checked_and_repaired() {
    let s = scripted(vec![Reply::chat(PY_BROKEN), Reply::chat(PY_GOOD)]);
    let ws = python_ws(&s.base_url, 1);
    let sb = SandboxDir::new();
    let out = propose(&ws, "app.py", &sb, &[]);
    ok(&out);
    let text = stdout(&out);
    assert!(
        text.contains("passed in a sandbox copy")
            && text.contains("repaired  the first answer failed validation"),
        "{text}"
    );
    // How the first answer failed is shown too, not only that it did.
    assert!(
        text.contains("first     the first answer failed validation")
            && text.contains("SyntaxError"),
        "{text}"
    );
    sb.assert_empty();
}

#[test]
fn python_failing_twice_makes_no_third_call_and_returns_the_output() {
    // A third reply would pass: it must never be asked for.
    let s = scripted(vec![
        Reply::chat(PY_BROKEN),
        Reply::chat(PY_BROKEN2),
        Reply::chat(PY_GOOD),
    ]);
    let ws = python_ws(&s.base_url, 1);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    checks_failed(&out);
    assert_eq!(requests(&s), 2, "no third model call");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert_eq!(v["repaired"], true);
    assert!(v["proposal_id"].as_str().unwrap().starts_with("p_"));
    let r = &v["validation"][0];
    assert_eq!(r["passed"], false);
    assert_eq!(r["exit_code"], 1);
    assert!(r["output"].as_str().unwrap().contains("SyntaxError"), "{r}");
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn python_without_a_repair_attempt_the_failure_is_returned_as_is() {
    let s = scripted(vec![Reply::chat(PY_BROKEN), Reply::chat(PY_GOOD)]);
    let ws = python_ws(&s.base_url, 0);
    let sb = SandboxDir::new();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    checks_failed(&out);
    assert_eq!(requests(&s), 1);
    assert_eq!(v["validation_passed"], false);
    assert_eq!(v["repaired"], false);
    assert!(
        v["patch"]
            .as_str()
            .unwrap()
            .contains("+    return a + b +\n")
    );
    sb.assert_empty();
}

#[test]
fn rust_a_passing_proposal_is_validated_with_cargo_check() {
    let s = scripted(vec![Reply::chat(RS_GOOD)]);
    let ws = rust_ws(&s.base_url);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "src/lib.rs", &sb);
    ok(&out);
    assert_eq!(requests(&s), 1);
    assert_eq!(v["validation_passed"], true, "{v}");
    assert_eq!(v["repaired"], false);
    assert_eq!(
        ws.snapshot(),
        before,
        "cargo's target/ or Cargo.lock reached the workspace"
    );
    sb.assert_empty();
}

#[test]
fn rust_a_type_error_is_repaired_once() {
    let s = scripted(vec![Reply::chat(RS_BROKEN), Reply::chat(RS_GOOD)]);
    let ws = rust_ws(&s.base_url);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "src/lib.rs", &sb);
    ok(&out);
    assert_eq!(requests(&s), 2);
    assert_eq!(v["repaired"], true, "{v}");
    assert_eq!(v["validation_passed"], true, "{v}");
    assert!(v["patch"].as_str().unwrap().contains("+    a + b + 1\n"));
    assert!(prompt_of(&s, 1).contains("E0277"), "{}", prompt_of(&s, 1));
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn rust_failing_twice_makes_no_third_call() {
    let s = scripted(vec![
        Reply::chat(RS_BROKEN),
        Reply::chat(RS_BROKEN2),
        Reply::chat(RS_GOOD),
    ]);
    let ws = rust_ws(&s.base_url);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "src/lib.rs", &sb);
    checks_failed(&out);
    assert_eq!(requests(&s), 2, "no third model call");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert_eq!(v["repaired"], true);
    let tail = v["validation"][0]["output"].as_str().unwrap();
    assert!(tail.contains("error"), "{tail}");
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

/// Whether `pid` no longer runs: gone, or a zombie (killed, waiting for a parent that does not reap it).
fn not_running(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// A sleep duration no other process on the machine has: it marks the processes of one check.
fn unique_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}.{nanos:09}", 3000 + std::process::id() % 1000)
}

/// The PIDs (as the host sees them) of every `sleep MARK` process, once there are `n`.
fn marked_pids(mark: &str, n: usize, wait: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let pids: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c == format!("sleep\0{mark}\0").as_bytes())
            })
            .filter(|&pid| !not_running(pid))
            .collect();
        if pids.len() >= n || start.elapsed() > wait {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_all_gone(pids: &[i32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| !not_running(p)) && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &p in pids {
        assert!(
            not_running(p),
            "process {p} of the check's group is still running"
        );
    }
}

/// A check that starts two sleepers marked by `mark`, one in the background and one as a `setsid` daemon (it
/// leaves the check's process group), then waits for them.
fn sleeper(mark: &str) -> String {
    format!("sleep {mark} & setsid sleep {mark} & wait")
}

#[test]
fn a_timed_out_check_leaves_no_process_of_its_group() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let mark = unique_mark();
    let ws = Ws::new(&s.base_url, &policy(&[&sleeper(&mark)], true, 0, 2));
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let start = Instant::now();
    let (out, v) = std::thread::scope(|scope| {
        let run = scope.spawn(|| propose_json(&ws, "app.py", &sb));
        // While it runs: both sleepers, seen from outside the confinement.
        let seen = marked_pids(&mark, 2, Duration::from_secs(20));
        assert_eq!(seen.len(), 2, "the check's sleepers never ran: {seen:?}");
        let r = run.join().unwrap();
        assert_all_gone(&seen);
        r
    });
    checks_failed(&out);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let r = &v["validation"][0];
    assert_eq!(r["timed_out"], true, "{v}");
    assert_eq!(r["passed"], false);
    assert!(r["output"].as_str().unwrap().contains("timeout"), "{r}");
    assert_eq!(v["validation_passed"], false);
    assert_eq!(requests(&s), 1);
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn the_workspace_is_byte_identical_whatever_the_sandbox_does() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    let s = scripted(vec![Reply::chat(PY_GOOD), Reply::chat(PY_BROKEN)]);
    let ws = Ws::new(
        &s.base_url,
        &policy(
            &[
                // What the copy holds: ignored and skipped folders are left out, links inside are kept.
                "test -f data.txt && test -f rel-link && test -f abs-link && test ! -e build && test ! -e target \
                 && test ! -e out-link",
                // A check that writes everywhere it can, then fails.
                "touch generated.txt && echo junk >> app.py && echo junk >> data.txt && echo junk >> rel-link \
                 && echo junk >> abs-link && echo junk >> out-link && chmod 600 app.py && mkdir -p new/dir \
                 && rm -f keep.txt && false",
            ],
            true,
            1,
            60,
        ),
    );
    ws.write("app.py", PY);
    ws.write("data.txt", "data\n");
    ws.write("keep.txt", "keep\n");
    ws.write(".gitignore", "/build/\n");
    ws.write("build/cache.bin", "cache\n");
    ws.write("target/debug/out", "out\n");
    std::os::unix::fs::symlink("data.txt", ws.root().join("rel-link")).unwrap();
    std::os::unix::fs::symlink(ws.root().join("data.txt"), ws.root().join("abs-link")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        ws.root().join("out-link"),
    )
    .unwrap();
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    checks_failed(&out);
    assert_eq!(requests(&s), 2, "the failure earned the repair round");
    assert_eq!(v["validation"][0]["passed"], true, "{v}");
    assert_eq!(v["validation"][1]["passed"], false, "{v}");
    assert_eq!(v["validation_passed"], false);
    assert_eq!(ws.snapshot(), before, "the workspace changed");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "outside\n",
        "a file outside the workspace changed"
    );
    sb.assert_empty();
}

// ---- through the MCP client: cancellation, and the repair round at apply time ----

type Client = RunningService<RoleClient, ()>;

async fn mcp_client(sandboxes: &Path, ledger: &Path) -> Client {
    let sandboxes = sandboxes.to_path_buf();
    let ledger = ledger.to_path_buf();
    Cli::mcp()
        .env_remove("CARGO_TARGET_DIR")
        .ledger(&ledger)
        .env("LOCAL_LLM_SANDBOX_DIR", &sandboxes)
        .serve()
        .await
}

fn propose_args(ws: &Ws) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(m) = serde_json::json!({
        "workspace_root": ws.root_str(),
        "task": "Make add return the sum plus one",
        "acceptance_criteria": ["add(1, 2) == 4"],
        "complexity": "low",
        "files": ["app.py"]
    }) else {
        unreachable!()
    };
    m
}

async fn call(c: &Client, tool: &'static str, args: serde_json::Value) -> CallToolResult {
    let serde_json::Value::Object(map) = args else {
        panic!("args must be an object")
    };
    c.call_tool(CallToolRequestParams::new(tool).with_arguments(map))
        .await
        .unwrap()
}

/// The plain text of a tool result's first content item.
fn text(r: &CallToolResult) -> String {
    serde_json::to_value(&r.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn cancelling_a_propose_kills_its_check_and_removes_the_sandbox() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let mark = unique_mark();
    let ws = Ws::new(&s.base_url, &policy(&[&sleeper(&mark)], true, 1, 60));
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let before = ws.snapshot();
    let c = mcp_client(sb.path(), ledger.path()).await;
    let handle = c
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("propose_patch").with_arguments(propose_args(&ws)),
            )),
            PeerRequestOptions::default(),
        )
        .await
        .unwrap();
    // Wait until the check runs in its sandbox.
    let m = mark.clone();
    let running = tokio::task::spawn_blocking(move || marked_pids(&m, 2, Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(running.len(), 2, "the check never started");
    let live: Vec<String> = sb.entries();
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(live[0].starts_with("llw-sandbox-"), "{live:?}");

    let start = Instant::now();
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    while !sb.entries().is_empty() && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sb.assert_empty();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "cancellation took {:?}",
        start.elapsed()
    );
    assert_all_gone(&running);
    let mut recorded = String::new();
    while start.elapsed() < Duration::from_secs(5) {
        recorded = std::fs::read_to_string(ledger.path()).unwrap_or_default();
        if recorded.contains("refused:cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(recorded.contains("refused:cancelled"), "{recorded:?}");
    assert_eq!(requests(&s), 1, "no repair call after a cancellation");
    assert_eq!(ws.snapshot(), before);
    c.cancel().await.unwrap();
}

/// The repair proposal inside an apply refusal: (proposal_id, digest, patch).
fn repair_in(text: &str) -> (String, String, String) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    let patch = text
        .split_once("\npatch:\n")
        .unwrap_or_else(|| panic!("no patch in {text}"))
        .1
        .to_string();
    (field("proposal_id"), field("digest"), patch)
}

#[tokio::test]
async fn an_apply_time_failure_returns_a_new_proposal_that_applies_with_its_own_approval() {
    let s = scripted(vec![Reply::chat(PY_BROKEN), Reply::chat(PY_GOOD)]);
    let ws = Ws::new(
        &s.base_url,
        &policy(&["python3 -m py_compile app.py"], false, 1, 60),
    );
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let c = mcp_client(sb.path(), ledger.path()).await;
    let r = call(
        &c,
        "propose_patch",
        serde_json::Value::Object(propose_args(&ws)),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let v = r.structured_content.unwrap();
    assert_eq!(
        v["validation_passed"],
        serde_json::Value::Null,
        "not run on propose"
    );
    let (id1, digest1) = (v["proposal_id"].clone(), v["digest"].clone());
    let before = ws.snapshot();

    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id1, "digest": digest1}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("validation failed, previous bytes restored"),
        "{t}"
    );
    assert!(t.contains("SyntaxError"), "{t}");
    assert!(t.contains("REPAIR PROPOSAL"), "{t}");
    assert_eq!(
        ws.snapshot(),
        before,
        "the previous bytes were not restored"
    );
    assert_eq!(requests(&s), 2, "one model call for the repair");
    assert!(prompt_of(&s, 1).contains("+    return a + b +\n"));
    let (id2, digest2, patch2) = repair_in(&t);
    assert_ne!(id2, id1.as_str().unwrap());
    assert_ne!(digest2, digest1.as_str().unwrap());
    assert_eq!(
        sha256_hex(patch2.as_bytes()),
        digest2,
        "the digest is of the patch shown"
    );
    assert!(
        patch2.contains("-    return a + b\n+    return a + b + 1\n"),
        "{patch2}"
    );

    // The original stays used; the new one needs its own id and digest.
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id1, "digest": digest1}),
    )
    .await;
    assert!(text(&r).contains("already used"), "{}", text(&r));
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id2, "digest": digest1}),
    )
    .await;
    assert!(text(&r).contains("digest does not match"), "{}", text(&r));
    assert_eq!(ws.snapshot(), before);
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": id2, "digest": digest2}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(ws.read("app.py"), "def add(a, b):\n    return a + b + 1\n");
    assert_eq!(requests(&s), 2);
    sb.assert_empty();
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_task_repaired_on_propose_gets_no_second_round_at_apply_time() {
    let s = scripted(vec![
        Reply::chat(PY_BROKEN),
        Reply::chat(PY_GOOD),
        Reply::chat(PY_GOOD),
    ]);
    // `blocker` is ignored, so it is not in the sandbox: the check passes there and fails in the workspace.
    let ws = Ws::new(
        &s.base_url,
        &policy(
            &["python3 -m py_compile app.py && test ! -e blocker"],
            true,
            1,
            60,
        ),
    );
    ws.write("app.py", PY);
    ws.write(".gitignore", "blocker\n");
    ws.write("blocker", "x\n");
    let sb = SandboxDir::new();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let c = mcp_client(sb.path(), ledger.path()).await;
    let r = call(
        &c,
        "propose_patch",
        serde_json::Value::Object(propose_args(&ws)),
    )
    .await;
    let v = r.structured_content.unwrap();
    assert_eq!(
        (v["repaired"].clone(), v["validation_passed"].clone()),
        (true.into(), true.into())
    );
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": v["proposal_id"], "digest": v["digest"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("validation failed, previous bytes restored"),
        "{t}"
    );
    assert!(!t.contains("REPAIR PROPOSAL"), "{t}");
    assert_eq!(requests(&s), 2, "no third model call");
    // The check ran in the workspace this time (its __pycache__ stays); the approved bytes were taken back.
    assert_eq!(ws.read("app.py"), PY);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_repair_call_on_propose_spends_the_round_even_when_its_answer_is_refused() {
    let s = scripted(vec![
        Reply::chat(PY_BROKEN),
        Reply::chat("no edit in this answer"),
        Reply::chat(PY_GOOD),
    ]);
    let ws = python_ws(&s.base_url, 1);
    let sb = SandboxDir::new();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let c = mcp_client(sb.path(), ledger.path()).await;
    let r = call(
        &c,
        "propose_patch",
        serde_json::Value::Object(propose_args(&ws)),
    )
    .await;
    let v = r.structured_content.unwrap();
    assert_eq!(v["repaired"], false, "{v}");
    assert_eq!(v["validation_passed"], false, "{v}");
    assert!(
        v["repair_error"].is_string(),
        "the refused repair answer is said: {v}"
    );
    assert_eq!(requests(&s), 2, "the repair call was made");
    let r = call(
        &c,
        "apply_patch",
        serde_json::json!({"proposal_id": v["proposal_id"], "digest": v["digest"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(
        t.contains("validation failed, previous bytes restored"),
        "{t}"
    );
    assert!(!t.contains("REPAIR PROPOSAL"), "{t}");
    assert_eq!(
        requests(&s),
        2,
        "a second repair call was made for the same task"
    );
    assert_eq!(ws.read("app.py"), PY);
    c.cancel().await.unwrap();
}

#[test]
fn a_proposal_that_fails_validation_exits_3_with_a_banner() {
    let s = scripted(vec![Reply::chat(PY_BROKEN), Reply::chat(PY_BROKEN)]);
    let ws = python_ws(&s.base_url, 0);
    let sb = SandboxDir::new();
    let out = propose(&ws, "app.py", &sb, &[]);
    checks_failed(&out);
    let text = stdout(&out);
    let banner =
        "THIS PATCH FAILS THE PROJECT'S CHECKS: `python3 -m py_compile app.py` failed on it";
    assert_eq!(
        text.matches(banner).count(),
        2,
        "before and after the patch: {text}"
    );
    assert!(
        text.contains("+    return a + b +\n"),
        "the patch is shown: {text}"
    );
    assert!(stderr(&out).contains(banner), "{}", stderr(&out));
    let (out, v) = propose_json(&ws, "app.py", &sb);
    checks_failed(&out);
    assert!(v["checks_failed"].as_str().unwrap().contains(banner), "{v}");
    assert_eq!(v["validation_passed"], false, "{v}");
    sb.assert_empty();
}

#[test]
fn a_proposal_that_passes_validation_carries_no_checks_failed_notice() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let ws = python_ws(&s.base_url, 0);
    let sb = SandboxDir::new();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    ok(&out);
    assert_eq!(v["validation_passed"], true, "{v}");
    assert!(v.get("checks_failed").is_none(), "{v}");
}

#[tokio::test]
async fn over_mcp_a_proposal_that_fails_validation_says_so_first() {
    let s = scripted(vec![Reply::chat(PY_BROKEN)]);
    let ws = python_ws(&s.base_url, 0);
    let sb = SandboxDir::new();
    let ledger = tempfile::NamedTempFile::new().unwrap();
    let c = mcp_client(sb.path(), ledger.path()).await;
    let r = call(
        &c,
        "propose_patch",
        serde_json::Value::Object(propose_args(&ws)),
    )
    .await;
    let v = r.structured_content.clone().unwrap();
    assert_eq!(v["validation_passed"], false, "{v}");
    assert!(
        v["checks_failed"]
            .as_str()
            .unwrap()
            .starts_with("THIS PATCH FAILS THE PROJECT'S CHECKS"),
        "{v}"
    );
    assert!(
        text(&r).starts_with("{\"checks_failed\":\"THIS PATCH FAILS"),
        "the first thing a reader of the text sees: {}",
        text(&r)
    );
    c.cancel().await.unwrap();
}

#[test]
fn an_apply_whose_check_fails_shows_its_output_with_its_lines() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let ws = Ws::new(
        &s.base_url,
        &policy(
            &["printf 'first line of the check\\nsecond line of the check\\n'; exit 1"],
            false,
            0,
            60,
        ),
    );
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let state = tempfile::tempdir().unwrap();
    ws.trust_in(state.path());
    let patch = tempfile::NamedTempFile::new().unwrap();
    let out = propose(
        &ws,
        "app.py",
        &sb,
        &["--json", "--out", patch.path().to_str().unwrap()],
    );
    ok(&out);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let before = ws.snapshot();
    let c = Cli::apply(ws.root(), patch.path(), v["digest"].as_str().unwrap());
    let out = worker_env(c, sb.path()).state(state.path()).run();
    assert!(!out.status.success());
    let err = stderr(&out);
    let first = err
        .lines()
        .position(|l| l.trim() == "first line of the check")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        err.lines()
            .nth(first + 1)
            .is_some_and(|l| l.trim() == "second line of the check"),
        "the output keeps its lines: {err}"
    );
    assert_eq!(ws.snapshot(), before);
}

/// `propose --json` on `file` with `env` on top of the tests' worker environment.
fn propose_json_env(
    ws: &Ws,
    file: &str,
    sandboxes: &SandboxDir,
    env: &[(&str, &std::ffi::OsStr)],
) -> (Output, serde_json::Value) {
    let c = Cli::propose(ws.root())
        .task("Make add return the sum")
        .accept(&["add(1, 2) == 3"])
        .file(file)
        .arg("--json");
    let out = worker_env(c, sandboxes.path()).envs(env).run();
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(serde_json::Value::Null);
    (out, v)
}

/// A policy with `commands` validated on propose, no repair round, one candidate, and `extra` lines in
/// `[validation]`.
fn policy_with(commands: &[&str], extra: &str) -> String {
    let cmds: Vec<String> = commands.iter().map(|c| format!("{c:?}")).collect();
    format!(
        "[validation]\ncommands = [{}]\non_propose = true\ntimeout_secs = 300\n{extra}\n\n[repair]\nattempts = 0\n\n\
         [sampling]\ncandidates = 1\n",
        cmds.join(", ")
    )
}

fn output_of(v: &serde_json::Value, i: usize) -> String {
    v["validation"][i]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn disk_a_confined_check_writing_past_its_bound_gets_enospc_and_the_host_is_untouched() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    // Each fresh folder holds 1 MiB; the copy may grow by 1 MiB.
    let fill_fresh = "for d in /tmp \"$HOME\" /dev/shm; do head -c 3000000 /dev/zero 2>&1 > \"$d/fill\" \
                      && echo \"ROOM $d\" || echo \"FULL $d\"; done";
    let fill_copy = "head -c 67108864 /dev/zero > fill.bin; sleep 5; echo DONE";
    let ws = Ws::new(
        &s.base_url,
        &policy_with(
            &[fill_fresh, fill_copy],
            "sandbox_tmp_mib = 1\nsandbox_write_mib = 1",
        ),
    );
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let host_tmp = tempfile::tempdir().unwrap();
    let before = ws.snapshot();
    let (out, v) = propose_json_env(
        &ws,
        "app.py",
        &sb,
        &[("TMPDIR", host_tmp.path().as_os_str())],
    );
    // The checks fail (they hit the bound), so propose exits 3 with the patch.
    checks_failed(&out);
    assert_eq!(v["validation"][0]["isolation"], "confined", "{v}");
    let fresh = output_of(&v, 0);
    assert_eq!(
        fresh.matches("No space left on device").count(),
        3,
        "/tmp, HOME and /dev/shm are each bounded: {fresh}"
    );
    assert!(!fresh.contains("ROOM"), "{fresh}");
    assert_eq!(v["validation"][1]["passed"], false, "{v}");
    let copy = output_of(&v, 1);
    assert!(
        copy.contains("sandbox_write_mib") && !copy.contains("DONE"),
        "the check that filled the copy was not stopped: {copy}"
    );
    assert_eq!(v["validation_passed"], false);
    assert_eq!(
        std::fs::read_dir(host_tmp.path()).unwrap().count(),
        0,
        "the check wrote into the worker's TMPDIR"
    );
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

/// A folder outside HOME and outside the workspace (under /tmp, which the confinement shows fresh and empty) holding
/// a fake toolchain: `CARGO_HOME` with `bin/cargo` and a credential file, and another program found on PATH only.
fn fake_toolchain() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let tools = tempfile::tempdir().unwrap();
    for (rel, text) in [
        (
            "cargo-home/bin/cargo",
            "#!/bin/sh\necho cargo 0.0.0-fake-toolchain\n",
        ),
        ("other/bin/llw-tool", "#!/bin/sh\necho TOOL-OK\n"),
    ] {
        let p = tools.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        tools.path().join("cargo-home/credentials.toml"),
        "[registry]\ntoken = \"llw-secret-token\"\n",
    )
    .unwrap();
    tools
}

#[test]
fn a_toolchain_outside_home_is_found_in_the_confinement() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let tools = fake_toolchain();
    let cargo_home = tools.path().join("cargo-home");
    let ws = Ws::new(
        &s.base_url,
        &policy_with(
            &["cargo --version && llw-tool && cat \"$CARGO_HOME/credentials.toml\"; true"],
            "",
        ),
    );
    ws.write("app.py", PY);
    let sb = SandboxDir::new();
    let path = std::env::join_paths(
        [cargo_home.join("bin"), tools.path().join("other/bin")]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let (out, v) = propose_json_env(
        &ws,
        "app.py",
        &sb,
        &[("CARGO_HOME", cargo_home.as_os_str()), ("PATH", &path)],
    );
    ok(&out);
    assert_eq!(v["validation"][0]["isolation"], "confined", "{v}");
    let o = output_of(&v, 0);
    assert!(
        o.contains("cargo 0.0.0-fake-toolchain") && o.contains("TOOL-OK"),
        "the toolchain is not found in the confinement: {o}"
    );
    assert!(
        !o.contains("llw-secret-token"),
        "a credential file was readable: {o}"
    );
    sb.assert_empty();
}

#[test]
fn the_projects_own_virtualenv_runs_pytest_confined_on_propose() {
    let s = scripted(vec![Reply::chat(
        r#"{"edits":[{"path":"calc.py","old":"    return a - b","new":"    return a + b"}]}"#,
    )]);
    let ws = Ws::new(
        &s.base_url,
        &policy_with(&[".venv/bin/python -m pytest -q"], ""),
    );
    // The venv is gitignored, as in every Python project: it is not in the sandbox copy.
    ws.write(".gitignore", ".venv/\n__pycache__/\n");
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    ws.write(
        "test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    let started = Instant::now();
    let made = Command::new("python3")
        .args(["-m", "venv", ".venv"])
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert!(made.status.success(), "python3 -m venv: {}", stderr(&made));
    let pip = Command::new(ws.root().join(".venv/bin/python"))
        .args(["-m", "pip", "install", "--quiet", "pytest"])
        .current_dir(ws.root())
        .output()
        .unwrap();
    if !pip.status.success() {
        eprintln!(
            "skipped: pip could not install pytest into the fixture's .venv (no package index here?): {}",
            stderr(&pip)
        );
        return;
    }
    eprintln!(
        "the fixture's .venv with pytest took {:.1} s to make",
        started.elapsed().as_secs_f64()
    );
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "calc.py", &sb);
    ok(&out);
    assert_eq!(v["validation"][0]["isolation"], "confined", "{v}");
    assert_eq!(
        v["validation_passed"],
        true,
        "pytest from the project's .venv did not pass confined: {}",
        output_of(&v, 0)
    );
    assert!(output_of(&v, 0).contains("1 passed"), "{v}");
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn the_sandbox_copy_leaves_out_denied_and_policy_files_unless_included() {
    let s = scripted(vec![Reply::chat(PY_GOOD)]);
    let look = "for f in local-llm-worker.toml sub/local-llm-worker.toml private/notes.txt .env; do \
                test -e \"$f\" && echo \"PRESENT $f\"; done; test -e private/needed.txt && echo INCLUDED; \
                cat private/notes.txt local-llm-worker.toml 2>/dev/null; true";
    let ws = Ws::new(
        &s.base_url,
        &format!(
            "[paths]\ndenied = [\"private/\"]\n\n{}",
            policy_with(&[look], "sandbox_include = [\"private/needed.txt\"]")
        ),
    );
    ws.write("app.py", PY);
    ws.write("private/notes.txt", "DENIED-CONTENT\n");
    ws.write("private/needed.txt", "a fixture a check needs\n");
    ws.write(
        "sub/local-llm-worker.toml",
        "[validation]\ncommands = [\"true\"]\n",
    );
    ws.write(".env", "DB_PASSWORD=hunter2\n");
    let sb = SandboxDir::new();
    let (out, v) = propose_json(&ws, "app.py", &sb);
    ok(&out);
    assert_eq!(v["validation"][0]["isolation"], "confined", "{v}");
    let o = output_of(&v, 0);
    assert!(
        !o.contains("PRESENT") && !o.contains("DENIED-CONTENT") && !o.contains("base_url"),
        "a file the model may not see is in the copy: {o}"
    );
    assert!(
        o.contains("INCLUDED"),
        "sandbox_include did not bring it back: {o}"
    );
    sb.assert_empty();
}

#[test]
fn the_repair_round_is_pinned_to_the_line_the_failing_traceback_names() {
    // Scripted: the first answer edits the `def` line and leaves the bug; the real check's Python traceback names
    // line 3 of calc.py; the repair request recorded by the scripted server is held to that one line.
    let s = scripted(vec![
        Reply::chat(
            r#"{"edits":[{"path":"calc.py","old":"def half(x):","new":"def half(x, unused=None):"}]}"#,
        ),
        Reply::chat(
            r#"{"edits":[{"path":"calc.py","old":"    return x / factor","new":"    return x / 2"}]}"#,
        ),
    ]);
    let ws = Ws::new(&s.base_url, &policy(&["python3 test_calc.py"], true, 1, 60));
    ws.write(
        "calc.py",
        "def half(x):\n    factor = 0\n    return x / factor\n",
    );
    ws.write(
        "test_calc.py",
        "from calc import half\nassert half(4) == 2\n",
    );
    let sb = SandboxDir::new();
    let before = ws.snapshot();
    let (out, v) = propose_json(&ws, "calc.py", &sb);
    ok(&out);
    assert_eq!(requests(&s), 2, "one repair call");
    assert_eq!(v["repaired"], true, "{v}");
    assert_eq!(v["validation_passed"], true, "{v}");
    assert!(
        v["repair_reason"].as_str().unwrap().contains("line 3"),
        "{v}"
    );
    let schema = |i: usize| {
        s.requests.lock().unwrap()[i]["response_format"]["json_schema"]["schema"]["properties"]["edits"].clone()
    };
    // The repair answer is written up to its `new` text, pinned to the line the traceback names.
    assert_eq!(
        s.pinned_edit(1),
        serde_json::json!({"path": "calc.py", "old": "    return x / factor"}),
    );
    assert_eq!(
        schema(0)["items"]["properties"]["old"]["enum"]
            .as_array()
            .unwrap()
            .len(),
        3,
        "the first answer could pick any line"
    );
    assert!(
        v["patch"].as_str().unwrap().contains("+    return x / 2"),
        "{v}"
    );
    assert_eq!(ws.snapshot(), before);
    sb.assert_empty();
}

#[test]
fn a_probed_mutant_that_builds_a_huge_value_fails_within_its_memory_cap_instead_of_taking_the_machine_s_memory()
 {
    // Real Python, the prober exactly as the probe installs it: two mutants of a module the check imports, each
    // of which would pass; the first builds 3 GiB of data first. Its child is held to PROBE_MEMORY_MB (1 GiB) of
    // data, so that allocation fails and the mutant fails; the second passes. Without the cap the first would
    // pass, after taking 3 GiB.
    use local_llm_delegator::locate_rank::batch::{
        MUTANTS_FILE, PROBE_MEMORY_MB, PROBER, encode, environment, read,
    };
    const _: () = assert!(PROBE_MEMORY_MB < 3 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("probe");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("sitecustomize.py"), PROBER).unwrap();
    let module = dir.path().join("calc.py");
    std::fs::write(&module, "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        dir.path().join("check.py"),
        "from calc import add\nassert add(1, 2) == 3\n",
    )
    .unwrap();
    let huge = "BIG = bytearray(3 * 1024 ** 3)\n\n\ndef add(a, b):\n    return a + b\n";
    let plain = "def add(a, b):\n    return a + b\n";
    let mutants = [(module.clone(), huge), (module.clone(), plain)];
    std::fs::write(folder.join(MUTANTS_FILE), encode(&mutants, true)).unwrap();
    let run = Command::new("python3")
        .arg("check.py")
        .current_dir(dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(environment(&folder, None, 20_000, 20_000, 1))
        .output()
        .unwrap();
    let wrote: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_str()?.to_string();
            name.starts_with("probe-")
                .then(|| std::fs::read_to_string(&p).ok())
                .flatten()
        })
        .collect();
    assert_eq!(
        read(&wrote, 2).map(|o| o.passed),
        Some(vec![Some(false), Some(true)]),
        "verdicts {wrote:?}; check: {}",
        stderr(&run)
    );
}
