//! CLI end to end against a scripted OpenAI-compatible endpoint (deterministic answers, error statuses and dead
//! servers that a real model server will not produce on demand). Every refusal also checks that the workspace is
//! byte-for-byte unchanged.

use crate::common::*;

const SOURCE: &str = "VALUE = 1\n\nprint(VALUE)\n";

fn sample(base_url: &str, extra: &str) -> Ws {
    let ws = Ws::new(
        base_url,
        &format!("[paths]\nallowed = [\"src/**\"]\n{extra}"),
    );
    ws.write("src/value.py", SOURCE);
    ws
}

/// Run `f`, then assert it was refused with `needle` in its one-line reason and that nothing changed on disk.
#[track_caller]
fn assert_refused(ws: &Ws, out: std::process::Output, needle: &str) {
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "expected a refusal, got success: {}",
        stdout(&out)
    );
    assert!(
        err.contains(needle),
        "reason {err:?} does not contain {needle:?}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "the reason must be one line: {err:?}"
    );
    let _ = ws;
}

#[test]
fn propose_then_apply_writes_exactly_the_approved_bytes() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let before = ws.snapshot();
    let patch_file = ws
        .dir
        .path()
        .join("../")
        .canonicalize()
        .unwrap()
        .join(format!("p-{}.diff", std::process::id()));
    let out = propose(
        &ws,
        &["src/value.py"],
        &["--json", "--out", patch_file.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        ws.snapshot(),
        before,
        "propose must not touch the workspace"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let patch = v["patch"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(&patch_file).unwrap(), patch);
    assert_eq!(v["digest"].as_str().unwrap(), sha256_of_file(&patch_file));
    assert_eq!(v["usage"]["input_tokens"], 120);
    assert_eq!(v["usage"]["output_tokens"], 30);
    assert_eq!(v["usage"]["total_tokens"], 150);
    assert_eq!(v["provider"], "llamacpp");
    assert_eq!(v["model"], "scripted-model");
    assert_eq!(v["dry_run_ok"], true);
    assert_eq!(v["files"][0]["hunks"][0]["tier"], "exact");
    assert!(v["proposal_id"].as_str().unwrap().starts_with("p_"));

    // The request carried the task, criteria and file, and a schema pinning the editable lines.
    let req = s.requests.lock().unwrap()[0].clone();
    let prompt = req["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Set VALUE to 2")
            && prompt.contains("- VALUE is 2")
            && prompt.contains("File src/value.py")
    );
    assert_eq!(req["max_tokens"], 2048);
    assert_eq!(
        req["response_format"]["json_schema"]["schema"]["properties"]["edits"]["items"]["properties"]
            ["old"]["enum"],
        serde_json::json!(["VALUE = 1", "print(VALUE)"])
    );

    let digest = v["digest"].as_str().unwrap();
    let root = ws.root_str();
    let out = Cli::apply(&root, patch_file.to_str().unwrap(), digest).run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ws.read("src/value.py"), "VALUE = 2\n\nprint(VALUE)\n");

    // The same patch again: the file already holds the post-image, and the refusal says so.
    let out = Cli::apply(&root, patch_file.to_str().unwrap(), digest).run();
    assert_refused(
        &ws,
        out,
        "the patch is already applied; nothing was written",
    );
    let _ = std::fs::remove_file(patch_file);
}

#[test]
fn canonical_patches_pass_git_apply_check_and_carry_git_blob_ids() {
    let answer = "Sure! Here it is:\n```diff\n--- a/src/value.py\n+++ b/src/value.py\n@@ -1,3 +1,3 @@\n-VALUE = 1\n+VALUE = 2\n \n print(VALUE)\n```\nand a new file:\n--- /dev/null\n+++ b/src/new_mod.py\n@@ -0,0 +1,2 @@\n+def f():\n+    return 1\n";
    let s = scripted(vec![Reply::chat(answer)]);
    let ws = sample(&s.base_url, "[edit]\nformat = \"udiff\"\n");
    ws.write("src/crlf.txt", "a\r\nb\r\n");
    let root = ws.root();
    assert!(git(&root, &["init", "-q"]).status.success());
    let out = propose(
        &ws,
        &["src/value.py"],
        &["--json", "--create", "src/new_mod.py"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let patch = v["patch"].as_str().unwrap();
    let pf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pf.path(), patch).unwrap();
    let check = git(&root, &["apply", "--check", pf.path().to_str().unwrap()]);
    assert!(
        check.status.success(),
        "git apply --check refused:\n{}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );

    // index <old>..<new>: old is `git hash-object` of the file now, new that of the intended result.
    let pre_id = String::from_utf8(git(&root, &["hash-object", "src/value.py"]).stdout).unwrap();
    let post = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(post.path(), "VALUE = 2\n\nprint(VALUE)\n").unwrap();
    let post_id =
        String::from_utf8(git(&root, &["hash-object", post.path().to_str().unwrap()]).stdout)
            .unwrap();
    assert!(
        patch.contains(&format!(
            "index {}..{} 100644\n",
            pre_id.trim(),
            post_id.trim()
        )),
        "{patch}"
    );
    assert!(
        patch.contains("diff --git a/src/new_mod.py b/src/new_mod.py\nnew file mode 100644\n"),
        "{patch}"
    );
    assert_eq!(v["files"][0]["status"], "created");
    assert_eq!(v["files"][1]["status"], "modified");

    // git's own application gives exactly what our apply gives.
    assert!(
        git(&root, &["apply", pf.path().to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 2\n\nprint(VALUE)\n");
    assert_eq!(ws.read("src/new_mod.py"), "def f():\n    return 1\n");
}

#[test]
fn refuses_bad_requests_before_calling_the_model() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let root = ws.root_str();
    let before = ws.snapshot();
    let base = |task: &str, complexity: &str| {
        Cli::propose(&root)
            .task(task)
            .accept(&[])
            .complexity(complexity)
            .file("src/value.py")
    };
    let run = |c: Cli, extra: &[&str]| c.args(extra).run();
    assert_refused(
        &ws,
        run(base("  ", "low"), &["--accept", "x"]),
        "task is empty",
    );
    assert_refused(
        &ws,
        run(base("t", "low"), &[]),
        "acceptance_criteria (on the command line: --accept) needs at least 1",
    );
    let many: Vec<&str> = (0..21).flat_map(|_| ["--accept", "c"]).collect();
    assert_refused(&ws, run(base("t", "low"), &many), "at most 20");
    assert_refused(
        &ws,
        run(base("t", "medium"), &["--accept", "x"]),
        "needs a plan",
    );
    assert_refused(
        &ws,
        run(base("t", "high"), &["--accept", "x"]),
        "\"high\" cannot be delegated",
    );
    assert_refused(
        &ws,
        run(base("t", "hard"), &["--accept", "x"]),
        "not one of \"low\", \"medium\"",
    );
    let out = Cli::propose("rel/path")
        .task("t")
        .accept(&["a"])
        .file("x")
        .run();
    // Relative to the current folder, which holds no such folder.
    assert_refused(&ws, out, "rel/path cannot be opened");
    let out = Cli::propose("/no/such/dir")
        .task("t")
        .accept(&["a"])
        .file("x")
        .run();
    assert_refused(&ws, out, "cannot be opened");
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "the model was called for a bad request"
    );
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn refuses_a_workspace_without_policy_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "VALUE = 1\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let request = Cli::propose(&root).task("t").accept(&["a"]).file("a.py");
    let out = request.run();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("has no local-llm-worker.toml; run `local-llm-worker init-project"),
        "{}",
        stderr(&out)
    );

    // Under LOCAL_LLM_ALLOWED_ROOTS the default policy applies (here: llama.cpp default URL, unreachable port).
    let out = request
        .clone()
        .env("LOCAL_LLM_ALLOWED_ROOTS", root.parent().unwrap())
        .run();
    assert!(
        !stderr(&out).contains("has no local-llm-worker.toml"),
        "{}",
        stderr(&out)
    );
    // It went to the default server: unreachable here, or (on a machine running `scripts/local-model.sh start`,
    // which listens on that port) answered.
    assert!(
        stderr(&out).contains("http://127.0.0.1:8080/v1/chat/completions")
            || !stderr(&out).starts_with("error: policy:")
                && !stderr(&out).starts_with("error: scope:"),
        "{}",
        stderr(&out)
    );

    // LOCAL_LLM_CONFIG naming a missing file is refused with the variable's name.
    let out = request
        .env("LOCAL_LLM_CONFIG", "/no/such/policy.toml")
        .run();
    assert!(
        stderr(&out).contains("LOCAL_LLM_CONFIG names /no/such/policy.toml"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn refuses_paths_outside_scope() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "denied = [\"src/private/**\"]\n");
    ws.write("docs/readme.md", "x\n");
    ws.write("src/private/k.py", "x\n");
    ws.write("src/.env", "TOKEN=x\n");
    ws.write("src/bin.dat", "a\0b");
    ws.write("src/latin1.txt", "");
    std::fs::write(
        ws.dir.path().join("src/latin1.txt"),
        [0x63, 0x61, 0x66, 0xe9, 0x0a],
    )
    .unwrap();
    std::fs::write(ws.dir.path().join("src/big.py"), vec![b'x'; 1_000_001]).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "VALUE = 1\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.py"),
        ws.dir.path().join("src/link.py"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.dir.path().join("src/linkdir")).unwrap();
    git(&ws.root(), &["init", "-q"]);
    let before = ws.snapshot();
    for (file, needle) in [
        ("docs/readme.md", "not matched by [paths] allowed"),
        ("../outside.py", "`..`"),
        ("/etc/passwd", "is absolute"),
        (".git/config", "always denied"),
        ("src/.env", "looks like a secret (.env*"),
        (
            "src/.env",
            "so it is not sent to the model; if the model really must see it, name it in [paths] unlock_secrets",
        ),
        // A misspelled path is not sent to the model as a file to create.
        (
            "src/valeu.py",
            "src/valeu.py does not exist (did you mean src/value.py?)",
        ),
        (
            "src/VALUE.py",
            "src/VALUE.py does not exist (did you mean src/value.py?)",
        ),
        ("src/private/k.py", "denied by [paths] denied"),
        ("src/link.py", "is a symlink"),
        ("src/linkdir/secret.py", "src/linkdir is a symlink"),
        ("src/bin.dat", "NUL bytes"),
        ("src/latin1.txt", "not valid UTF-8"),
        (
            "src/big.py",
            "larger than [limits] max_file_bytes = 1000000",
        ),
    ] {
        assert_refused(&ws, propose(&ws, &[file], &[]), needle);
    }
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "a refused file reached the model"
    );
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn refuses_unusable_model_answers_with_an_excerpt() {
    for (reply, needle) in [
        (
            Reply::chat("I would rename the variable, it is cleaner."),
            "not the JSON edit list",
        ),
        (
            Reply::chat(r#"{"edits":[{"path":"src/value.py","old":"VALUE = 7","new":"x"}]}"#),
            "does not match the file",
        ),
        (
            Reply::chat(r#"{"edits":[{"path":"src/other.py","old":"VALUE = 1","new":"x"}]}"#),
            "not one of the selected files",
        ),
        (
            Reply::chat(
                r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 1"}]}"#,
            ),
            "changes nothing",
        ),
        (
            Reply::chat_with(
                r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VAL"#,
                "length",
            ),
            "cut off",
        ),
        (Reply::chat(""), "empty answer"),
        (Reply::status(500, "{\"error\":\"boom\"}"), "HTTP 500"),
        (
            Reply::status(404, "{\"error\":\"no model\"}"),
            "model \"local\" or the endpoint was not found",
        ),
        (Reply::status(200, "<html>"), "not a chat completion"),
    ] {
        let s = scripted(vec![reply]);
        let ws = sample(&s.base_url, "");
        let before = ws.snapshot();
        let out = propose(&ws, &["src/value.py"], &[]);
        assert_refused(&ws, out, needle);
        assert_eq!(ws.snapshot(), before);
    }
    // A prose answer is quoted (bounded) so the primary sees what the model did.
    let s = scripted(vec![Reply::chat(&format!(
        "No diff today. {}",
        "blah ".repeat(500)
    ))]);
    let ws = sample(&s.base_url, "[edit]\nformat = \"udiff\"\n");
    let out = propose(&ws, &["src/value.py"], &[]);
    let err = stderr(&out);
    assert!(
        err.contains("no unified diff found") && err.contains("No diff today"),
        "{err}"
    );
    assert!(
        err.len() < 1000,
        "the excerpt must be bounded: {} bytes",
        err.len()
    );
}

#[test]
fn an_unreachable_model_is_named_by_url() {
    let url = unreachable_base_url();
    let ws = sample(&url, "");
    let out = propose(&ws, &["src/value.py"], &[]);
    assert_refused(
        &ws,
        out,
        &format!("cannot reach the model server at {url}/chat/completions"),
    );
}

/// Propose the scripted edit of `src/value.py` in `ws` into a patch file: the file and its digest.
fn proposed_value(ws: &Ws) -> (tempfile::NamedTempFile, String) {
    let pf = tempfile::NamedTempFile::new().unwrap();
    let out = propose(
        ws,
        &["src/value.py"],
        &["--out", pf.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let d = sha256_of_file(pf.path());
    (pf, d)
}

#[test]
fn apply_refuses_a_wrong_digest_and_altered_bytes() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let pf = tempfile::NamedTempFile::new().unwrap();
    let out = propose(
        &ws,
        &["src/value.py"],
        &["--out", pf.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let before = ws.snapshot();
    let root = ws.root_str();
    let good = sha256_of_file(pf.path());
    let wrong = "0".repeat(64);
    let out = Cli::apply(&root, pf.path().to_str().unwrap(), &wrong).run();
    assert_refused(&ws, out, "do not match the approved digest");
    assert!(
        !stderr(&out_again(&ws, pf.path(), &wrong)).contains(&good),
        "the refusal must not print the right digest (it invites pasting it unread)"
    );
    // Altered bytes with a digest recomputed for them: the blob ids catch it.
    let altered = std::fs::read_to_string(pf.path())
        .unwrap()
        .replace("+VALUE = 2", "+VALUE = 3");
    std::fs::write(pf.path(), &altered).unwrap();
    let d = sha256_of_file(pf.path());
    let out = Cli::apply(&root, pf.path().to_str().unwrap(), &d).run();
    assert_refused(&ws, out, "the patch bytes were altered");
    let out = Cli::apply(&root, "/no/such.diff", &good).run();
    assert_refused(&ws, out, "cannot read --patch");
    assert_eq!(ws.snapshot(), before);
}

/// `apply` of the patch file with `digest`, for a second look at a refusal.
fn out_again(ws: &Ws, patch: &std::path::Path, digest: &str) -> std::process::Output {
    Cli::apply(ws.root(), patch.to_str().unwrap(), digest).run()
}

#[test]
fn apply_refuses_a_stale_file() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let pf = tempfile::NamedTempFile::new().unwrap();
    assert!(
        propose(
            &ws,
            &["src/value.py"],
            &["--out", pf.path().to_str().unwrap()]
        )
        .status
        .success()
    );
    ws.write(
        "src/value.py",
        "VALUE = 1\n\nprint(VALUE)  # edited meanwhile\n",
    );
    let before = ws.snapshot();
    let d = sha256_of_file(pf.path());
    let out = Cli::apply(ws.root(), pf.path().to_str().unwrap(), &d).run();
    assert_refused(&ws, out, "src/value.py changed since the proposal");
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn a_failing_validation_restores_every_file_byte_for_byte() {
    let answer = r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"},{"path":"src/other.py","old":"OTHER = 1","new":"OTHER = 2"}]}"#;
    let s = scripted(vec![Reply::chat(answer)]);
    let ws = sample(
        &s.base_url,
        // Checked at apply time only (validation on propose would catch the failure before).
        "[validation]\ncommands = [\"true\", \"echo checking; grep -q 'VALUE = 3' src/value.py\"]\non_propose = false\n",
    );
    ws.write("src/other.py", "OTHER = 1\r\nno final newline");
    std::fs::set_permissions(
        ws.dir.path().join("src/other.py"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let pf = tempfile::NamedTempFile::new().unwrap();
    let out = propose(
        &ws,
        &["src/value.py", "src/other.py"],
        &["--out", pf.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let before = ws.snapshot();
    let d = sha256_of_file(pf.path());
    let out = Cli::apply(ws.root(), pf.path().to_str().unwrap(), &d)
        .args(["--json"])
        .run();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("validation failed, previous bytes restored") && err.contains("checking"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["kind"], "validation_failed");
    assert_eq!(
        ws.snapshot(),
        before,
        "the workspace must be exactly as before, modes included"
    );
}

#[test]
fn a_restored_python_file_is_not_run_as_the_bytecode_its_failed_check_cached() {
    // The patch keeps the file's size (VALUE = 1 to VALUE = 2); the check imports it (Python caches its bytecode,
    // keyed on the source's mtime in whole seconds and its size) and fails, and the restore follows within the
    // second. Without removing that cache, the restored file would run as VALUE = 2 until it next changed.
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let import = "python3 -c 'import sys; sys.path.insert(0, \"src\"); import value; assert value.VALUE == 3'";
    let ws = sample(
        &s.base_url,
        &format!(
            "[validation]\ncommands = [\"{}\"]\non_propose = false\n",
            import.replace('"', "\\\"")
        ),
    );
    let (pf, d) = proposed_value(&ws);
    let out = Cli::apply(ws.root(), pf.path().to_str().unwrap(), &d).run();
    let err = stderr(&out);
    assert!(
        err.contains("validation failed, previous bytes restored"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("src/value.py")).unwrap(),
        SOURCE
    );
    let run = std::process::Command::new("python3")
        .args(["-c", "import sys; sys.path.insert(0, 'src'); import value"])
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "1\n",
        "the restored file ran as the patch's bytecode"
    );
}

#[test]
fn apply_keeps_line_endings_modes_and_final_newline_state() {
    let answer = r#"{"edits":[{"path":"src/run.sh","old":"echo one","new":"echo two"}]}"#;
    let s = scripted(vec![Reply::chat(answer)]);
    let ws = sample(
        &s.base_url,
        "[validation]\ncommands = [\"test -x src/run.sh\"]\n",
    );
    ws.write("src/run.sh", "#!/bin/sh\r\necho one\r\nexit 0");
    std::fs::set_permissions(
        ws.dir.path().join("src/run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let pf = tempfile::NamedTempFile::new().unwrap();
    let out = propose(
        &ws,
        &["src/run.sh"],
        &["--out", pf.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(pf.path())
            .unwrap()
            .contains("100755")
    );
    let d = sha256_of_file(pf.path());
    let out = Cli::apply(ws.root(), pf.path().to_str().unwrap(), &d).run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ws.read("src/run.sh"), "#!/bin/sh\r\necho two\r\nexit 0");
    let snap = ws.snapshot();
    assert_eq!(snap["src/run.sh"].1 & 0o777, 0o755);
    assert!(
        !snap.keys().any(|k| k.contains(".llw-")),
        "a temporary file was left behind: {snap:?}"
    );
}

#[test]
fn init_project_writes_a_commented_policy_and_never_overwrites_without_force() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let r = root.to_str().unwrap();
    let out = cli(&[
        "init-project",
        "--workspace-root",
        r,
        "--provider",
        "llamacpp",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(root.join("local-llm-worker.toml")).unwrap();
    assert!(
        text.contains("allowed = [\"src/**\", \"tests/**\", \"benches/**\", \"examples/**\"]"),
        "{text}"
    );
    assert!(
        text.contains("commands = [\"cargo test --quiet --offline\"]"),
        "{text}"
    );
    std::fs::write(root.join("local-llm-worker.toml"), "# mine\n").unwrap();
    let out = cli(&["init_project", "--workspace-root", r]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already exists; pass --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("local-llm-worker.toml")).unwrap(),
        "# mine\n"
    );
    assert!(
        cli(&["init-project", "--workspace-root", r, "--force"])
            .status
            .success()
    );
    assert!(
        std::fs::read_to_string(root.join("local-llm-worker.toml"))
            .unwrap()
            .contains("[provider]")
    );
}

#[test]
fn an_invalid_policy_names_the_file_and_the_key() {
    let ws = Ws::new("http://127.0.0.1:1/v1", "[limits]\nmax_file_byte = 5\n");
    ws.write("a.py", "x\n");
    let out = propose(&ws, &["a.py"], &[]);
    assert_refused(&ws, out, "max_file_byte");
}

#[test]
fn init_project_suggests_unittest_for_a_plain_python_project_with_tests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cart.py"),
        "def total(xs):\n    return sum(xs)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test_cart.py"),
        "import unittest\nimport cart\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(cart.total([1, 2]), 3)\n",
    )
    .unwrap();
    let root = dir.path().canonicalize().unwrap();
    let out = cli(&["init-project", "--workspace-root", root.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(root.join("local-llm-worker.toml")).unwrap();
    assert!(
        text.contains("Python (.py files with test_*.py tests)"),
        "{text}"
    );
    let cmd = "python3 -m unittest -q";
    assert!(text.contains(&format!("commands = [\"{cmd}\"]")), "{text}");
    // The suggested command really runs this project's tests.
    let run = std::process::Command::new("sh")
        .args(["-c", cmd])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(String::from_utf8_lossy(&run.stderr).contains("Ran 1 test"));
    // Without tests, plain .py files still make a Python project (compileall).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.py"), "print(1)\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    assert!(
        cli(&["init-project", "--workspace-root", root.to_str().unwrap()])
            .status
            .success()
    );
    let text = std::fs::read_to_string(root.join("local-llm-worker.toml")).unwrap();
    assert!(
        text.contains("commands = [\"python3 -m compileall -q .\"]"),
        "{text}"
    );
}

/// The CLI run in the folder `dir` (the way a person types it there).
fn cli_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Cli::new(args).current_dir(dir).run()
}

#[test]
fn the_workspace_root_may_be_relative_or_left_out_and_is_found_from_a_subfolder() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let src = ws.root().join("src");
    let task = [
        "--task",
        "Set VALUE to 2",
        "--accept",
        "VALUE is 2",
        "--complexity",
        "low",
        "--file",
        "src/value.py",
        "--json",
    ];
    let root = ws.root_str();
    for (dir, prefix) in [
        // Left out, from a subfolder: the nearest folder up with local-llm-worker.toml, as git finds .git.
        (src.clone(), vec!["propose"]),
        // Relative.
        (src.clone(), vec!["propose", "--workspace-root", ".."]),
        (ws.root(), vec!["propose", "--workspace-root", "."]),
    ] {
        let mut args = prefix.clone();
        args.extend(task);
        let out = cli_in(&dir, &args);
        assert!(
            out.status.success(),
            "{prefix:?} in {}: {}",
            dir.display(),
            stderr(&out)
        );
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["files"][0]["path"], "src/value.py", "{v}");
    }
    // doctor too, from the subfolder, names the workspace's policy.
    let out = cli_in(&src, &["doctor"]);
    assert!(
        stdout(&out).contains(&format!("{root}/local-llm-worker.toml is valid")),
        "{}",
        stdout(&out)
    );
    // A folder with no policy above it is refused with the fix, and nothing is written.
    let lone = tempfile::tempdir().unwrap();
    let mut args = vec!["propose"];
    args.extend(task);
    let out = cli_in(lone.path(), &args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("init-project"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(lone.path()).unwrap().count(), 0);
}

#[test]
fn a_new_file_declared_in_create_next_to_a_similar_name_is_created() {
    // test_b.py beside test_a.py: a near name is no reason to refuse a file the request says it creates.
    let s = scripted(vec![Reply::chat(
        "--- /dev/null\n+++ b/src/test_b.py\n@@ -0,0 +1,2 @@\n+def test_b():\n+    assert True\n",
    )]);
    let ws = sample(&s.base_url, "[edit]\nformat = \"udiff\"\n");
    ws.write("src/test_a.py", "def test_a():\n    assert True\n");
    let out = propose(
        &ws,
        &["src/test_a.py"],
        &["--json", "--create", "src/test_b.py"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let created: Vec<_> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "created")
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(created, ["src/test_b.py"], "{v}");
    assert!(!ws.root().join("src/test_b.py").exists(), "propose wrote");
}

#[test]
fn a_missing_file_not_declared_as_created_is_refused_with_a_did_you_mean() {
    // `--file itertoolz.py` from the project root when the file is toolz/itertoolz.py: refused before any model
    // call, naming the file that exists.
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = Ws::new(&s.base_url, "[paths]\nallowed = [\"**/*.py\"]\n");
    ws.write("toolz/itertoolz.py", "def f():\n    return 1\n");
    ws.write("toolz/dicttoolz.py", "def g():\n    return 1\n");
    let before = ws.snapshot();
    assert_refused(
        &ws,
        propose(&ws, &["itertoolz.py"], &[]),
        "itertoolz.py does not exist (did you mean toolz/itertoolz.py?)",
    );
    assert_refused(
        &ws,
        propose(&ws, &["itertoolz.py"], &[]),
        "list it in create (CLI: propose --create itertoolz.py)",
    );
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "a missing file reached the model"
    );
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn a_file_declared_in_create_that_exists_is_refused() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let before = ws.snapshot();
    assert_refused(
        &ws,
        propose(&ws, &[], &["--create", "src/value.py"]),
        "src/value.py is listed in create but exists already",
    );
    assert!(s.requests.lock().unwrap().is_empty());
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn the_tests_leave_no_ledger_or_state_in_the_temporary_folder() {
    // A test-like command: a refused propose is recorded in the tests' own ledger, which lives under target/.
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url, "");
    let out = propose(&ws, &["src/missing.py"], &[]);
    assert!(!out.status.success());
    let recorded = std::fs::read_to_string(test_ledger()).unwrap();
    assert!(recorded.contains("refused:scope"), "{recorded}");
    let pid = std::process::id().to_string();
    let tmp = std::env::temp_dir();
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("llw-test-") && n.contains(&pid))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "left in {}", tmp.display());
    // They live under cargo's temporary folder inside target/ (which is itself under /tmp when the clone is).
    let target_tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    assert!(test_ledger().starts_with(target_tmp) && test_state().starts_with(target_tmp));
}

#[test]
fn a_failing_doctor_says_how_many_checks_failed_instead_of_invalid_argument() {
    let ws = Ws::new(&unreachable_base_url(), "");
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("doctor: ") && err.contains("check(s) failed"),
        "{err}"
    );
    assert!(!err.contains("invalid argument"), "{err}");
}

#[test]
fn a_missing_acceptance_criterion_on_the_cli_names_the_accept_flag() {
    let ws = sample("http://127.0.0.1:9/v1", "");
    let out = Cli::propose(ws.root())
        .task("t")
        .accept(&[])
        .file("src/value.py")
        .run();
    assert_refused(
        &ws,
        out,
        "(on the command line: --accept) needs at least 1 item(s)",
    );
}

/// A V4A answer that deletes `src/old.py` and moves `src/value.py` to `src/moved.py` with an edit.
const DELETE_AND_MOVE_V4A: &str = "*** Begin Patch\n*** Delete File: src/old.py\n*** Update File: src/value.py\n\
*** Move to: src/moved.py\n@@\n-VALUE = 1\n+VALUE = 2\n*** End Patch\n";

#[test]
fn a_v4a_deletion_and_move_are_refused_unless_the_policy_allows_them() {
    let s = scripted(vec![Reply::chat(DELETE_AND_MOVE_V4A)]);
    let ws = sample(&s.base_url, "[edit]\nformat = \"apply_patch\"\n");
    ws.write("src/old.py", "OLD = 1\n");
    let before = ws.snapshot();
    let out = propose(
        &ws,
        &["src/value.py", "src/old.py"],
        &["--create", "src/moved.py"],
    );
    assert_refused(&ws, out, "set [paths] allow_move = true");
    assert_eq!(ws.snapshot(), before);
    // The request asked for the apply_patch format.
    let req = s.requests.lock().unwrap()[0].clone();
    let prompt = req["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("*** Begin Patch"), "{prompt}");
}

#[test]
fn a_v4a_deletion_and_move_are_proposed_checked_by_git_and_applied_where_the_policy_allows_them() {
    let s = scripted(vec![Reply::chat(DELETE_AND_MOVE_V4A)]);
    let ws = sample(
        &s.base_url,
        "allow_delete = true\nallow_move = true\n[edit]\nformat = \"apply_patch\"\n",
    );
    ws.write("src/old.py", "OLD = 1\n");
    let root = ws.root();
    assert!(git(&root, &["init", "-q"]).status.success());
    let out = propose(
        &ws,
        &["src/value.py", "src/old.py"],
        &["--json", "--create", "src/moved.py"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let patch = v["patch"].as_str().unwrap();
    assert!(patch.contains("deleted file mode 100644\n"), "{patch}");
    assert!(
        patch.contains("rename from src/value.py\nrename to src/moved.py\n"),
        "{patch}"
    );
    let status: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["moved", "deleted"]);
    let pf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pf.path(), patch).unwrap();
    let check = git(&root, &["apply", "--check", pf.path().to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = out_again(&ws, pf.path(), v["digest"].as_str().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!root.join("src/old.py").exists() && !root.join("src/value.py").exists());
    assert_eq!(ws.read("src/moved.py"), "VALUE = 2\n\nprint(VALUE)\n");
}
