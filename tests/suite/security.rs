//! Security and crash safety, adversarially: every case asserts a refusal AND that nothing changed, neither the
//! workspace nor a sentinel folder beside it. Crash tests kill the apply at every write step (a crash point compiled
//! only into debug builds) and check that recovery leaves exactly the pre-image or exactly the post-image.
//! The model is a scripted endpoint here: these answers are hostile on purpose.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use local_llm_delegator::digest::sha256_hex;
use local_llm_delegator::patch::canonical;

/// A workspace and, beside it (outside), a sentinel folder.
struct Arena {
    ws: Ws,
    sentinel: tempfile::TempDir,
    state: tempfile::TempDir,
}

type Snap = BTreeMap<String, (Vec<u8>, u32)>;

impl Arena {
    fn new(base_url: &str) -> Arena {
        let ws = Ws::new(base_url, "[paths]\nallowed = [\"src/**\"]\n");
        ws.write("src/value.py", "VALUE = 1\n");
        ws.write("src/other.py", "OTHER = 1\n");
        ws.write("docs/readme.md", "docs\n");
        git(&ws.root(), &["init", "-q"]);
        let sentinel = tempfile::tempdir().unwrap();
        std::fs::write(sentinel.path().join("secret.txt"), "do not touch\n").unwrap();
        Arena {
            ws,
            sentinel,
            state: tempfile::tempdir().unwrap(),
        }
    }

    fn snap(&self) -> (Snap, Snap) {
        (self.ws.snapshot(), snapshot(self.sentinel.path()))
    }

    fn run(&self, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
        // The policy as it is now (tests rewrite it) is trusted in this arena's state folder.
        self.ws.trust_in(self.state.path());
        Cli::new(args).state(self.state.path()).envs(envs).run()
    }

    fn propose(&self, files: &[&str]) -> std::process::Output {
        let root = self.ws.root_str();
        let mut args = vec![
            "propose",
            "--workspace-root",
            &root,
            "--task",
            "t",
            "--accept",
            "a",
            "--complexity",
            "low",
        ];
        // `+PATH`: a file the request says it creates (`--create`).
        for f in files {
            match f.strip_prefix('+') {
                Some(created) => args.extend(["--create", created]),
                None => args.extend(["--file", f]),
            }
        }
        self.run(&args, &[])
    }

    fn apply_patch(&self, patch: &[u8], envs: &[(&str, &str)]) -> std::process::Output {
        let pf = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(pf.path(), patch).unwrap();
        let digest = sha256_hex(patch);
        self.run(
            &[
                "apply",
                "--workspace-root",
                &self.ws.root_str(),
                "--patch",
                pf.path().to_str().unwrap(),
                "--digest",
                &digest,
            ],
            envs,
        )
    }
}

/// Assert two tree snapshots are equal, naming only the paths that differ.
#[track_caller]
fn assert_same(got: &Snap, want: &Snap, what: &str) {
    let differing: Vec<&String> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .collect();
    assert!(
        differing.is_empty(),
        "{what}: these paths differ: {differing:?}"
    );
}

#[track_caller]
fn assert_refused_unchanged(
    arena: &Arena,
    before: &(Snap, Snap),
    out: &std::process::Output,
    needle: &str,
) {
    assert!(!out.status.success(), "expected a refusal: {}", stdout(out));
    assert!(
        stderr(out).contains(needle),
        "{needle:?} not in {:?}",
        stderr(out)
    );
    let (ws, sentinel) = arena.snap();
    assert_same(&ws, &before.0, "the workspace changed");
    assert_same(&sentinel, &before.1, "the sentinel folder outside changed");
}

fn udiff(path: &str, old: &str, new: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n")
}

#[test]
fn hostile_answers_are_refused_and_change_nothing() {
    let target_outside = "../outside.txt";
    let many: String = (0..500)
        .map(|i| udiff(&format!("src/f{i}.py"), "x", "y"))
        .collect();
    let too_many: String = (0..10_000)
        .map(|i| udiff(&format!("src/f{i}.py"), "x", "y"))
        .collect();
    let cases: Vec<(String, &str, Vec<&str>)> = vec![
        (udiff(target_outside, "x", "y"), "not one of the selected files", vec!["src/value.py"]),
        (udiff("/etc/passwd", "root", "x"), "not one of the selected files", vec!["src/value.py"]),
        (udiff(".git/config", "x", "y"), "not one of the selected files", vec!["src/value.py"]),
        (udiff(".git/hooks/pre-commit", "x", "y"), "not one of the selected files", vec!["src/value.py"]),
        (udiff("docs/readme.md", "docs", "hacked"), "not one of the selected files", vec!["src/value.py"]),
        ("--- /dev/null\n+++ b/docs/new.sh\n@@ -0,0 +1 @@\n+rm -rf /\n".into(), "not one of the selected files", vec!["src/value.py"]),
        // The default policy allows no deletion and no move (`[paths] allow_delete`, `allow_move`).
        ("--- a/src/value.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-VALUE = 1\n".into(), "set [paths] allow_delete = true", vec!["src/value.py"]),
        ("*** Begin Patch\n*** Delete File: src/value.py\n*** End Patch\n".into(), "set [paths] allow_delete = true", vec!["src/value.py"]),
        ("*** Begin Patch\n*** Update File: src/value.py\n*** Move to: src/moved.py\n*** End Patch\n".into(), "set [paths] allow_move = true", vec!["src/value.py", "+src/moved.py"]),
        ("*** Begin Patch\n*** Update File: src/value.py\n*** Move to: docs/moved.py\n*** End Patch\n".into(), "not one of the selected files", vec!["src/value.py"]),
        ("diff --git a/src/value.py b/src/value.py\nindex 1111111..2222222\nGIT binary patch\nliteral 10\nHcmV?d00001\n".into(), "no unified diff found", vec!["src/value.py"]),
        ("diff --git a/src/value.py b/src/value.py\nold mode 100644\nnew mode 100755\n".into(), "no unified diff found", vec!["src/value.py"]),
        (many, "not one of the selected files", vec!["src/value.py"]),
        (too_many, "the answer names more than 1000 different files", vec!["src/value.py"]),
        (udiff("src/value.py", "VALUE = 1", "VALUE = \u{0}1"), "NUL bytes", vec!["src/value.py"]),
    ];
    for (answer, needle, files) in cases {
        let s = scripted(vec![Reply::chat(&answer)]);
        let arena = Arena::new(&s.base_url);
        std::fs::write(arena.ws.dir.path().join("local-llm-worker.toml"), format!("[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\nallowed = [\"src/**\"]\n[edit]\nformat = \"udiff\"\n", s.base_url)).unwrap();
        let before = arena.snap();
        let out = arena.propose(&files);
        assert_refused_unchanged(&arena, &before, &out, needle);
    }
}

#[test]
fn a_huge_or_undecodable_answer_is_refused() {
    let huge = Reply::chat(&"x".repeat(50 * 1024 * 1024));
    let mut bad_utf8 = Reply::chat("ok");
    bad_utf8.raw = Some(b"{\"choices\":[{\"message\":{\"content\":\"\xff\xfe\"}}]}".to_vec());
    for (reply, needle) in [
        (huge, "larger than"),
        (
            Reply::status(200, "\u{0}\u{1}not json"),
            "not a chat completion",
        ),
        (bad_utf8, "reading the answer"),
    ] {
        let s = scripted(vec![reply]);
        let arena = Arena::new(&s.base_url);
        let before = arena.snap();
        let out = arena.propose(&["src/value.py"]);
        assert_refused_unchanged(&arena, &before, &out, needle);
    }
}

#[test]
fn selected_paths_that_escape_are_refused_before_reading() {
    let s = scripted(vec![Reply::chat("{}")]);
    let arena = Arena::new(&s.base_url);
    std::os::unix::fs::symlink(
        arena.sentinel.path().join("secret.txt"),
        arena.ws.dir.path().join("src/link.py"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        arena.sentinel.path(),
        arena.ws.dir.path().join("src/linkdir"),
    )
    .unwrap();
    let before = arena.snap();
    for (file, needle) in [
        ("../outside.py", "`..`"),
        ("/etc/passwd", "absolute"),
        (".git/config", "always denied"),
        (".git/hooks/pre-commit", "always denied"),
        ("src/link.py", "is a symlink"),
        ("src/linkdir/secret.txt", "is a symlink"),
        ("docs/readme.md", "not matched by [paths] allowed"),
        ("docs/new.md", "not matched by [paths] allowed"),
    ] {
        let out = arena.propose(&[file]);
        assert_refused_unchanged(&arena, &before, &out, needle);
    }
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "a refused path reached the model"
    );
}

#[test]
fn crafted_patches_are_refused_at_apply_time() {
    let arena = Arena::new("http://127.0.0.1:1/v1");
    let before = arena.snap();
    for (patch, needle) in [
        (canonical::render(&[change("../outside.txt", None, "x\n")]), "`..`"),
        (canonical::render(&[change(".git/config", Some("x\n"), "y\n")]), "always denied"),
        (canonical::render(&[change("docs/readme.md", Some("docs\n"), "hacked\n")]), "not matched by [paths] allowed"),
        (canonical::render(&[change("docs/new/evil.sh", None, "rm -rf /\n")]), "not matched by [paths] allowed"),
        (b"diff --git a/src/value.py b/src/value.py\nindex e69de29bb2d1d6434b8b29ae775ad8c2e48c5391..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 100644\nGIT binary patch\n".to_vec(), "not a canonical patch"),
        (b"diff --git a/src/value.py b/src/value.py\nold mode 100644\nnew mode 100755\n".to_vec(), "not a canonical patch"),
        (b"diff --git a/src/value.py b/src/value.py\ndeleted file mode 100644\n".to_vec(), "not a canonical patch"),
    ] {
        let out = arena.apply_patch(&patch, &[]);
        assert_refused_unchanged(&arena, &before, &out, needle);
    }
}

#[test]
fn patches_over_the_hunk_and_file_limits_are_refused() {
    let arena = Arena::new("http://127.0.0.1:1/v1");
    std::fs::write(
        arena.ws.dir.path().join("local-llm-worker.toml"),
        "[provider]\nkind = \"llamacpp\"\n[paths]\nallowed = [\"src/**\"]\n[limits]\nmax_hunks_per_patch = 2\nmax_files_per_patch = 1\n",
    )
    .unwrap();
    let long: String = (0..40).map(|i| format!("line {i}\n")).collect();
    arena.ws.write("src/long.txt", &long);
    let before = arena.snap();
    let edited = long
        .replace("line 1\n", "LINE 1\n")
        .replace("line 20\n", "LINE 20\n")
        .replace("line 38\n", "LINE 38\n");
    let three_hunks = canonical::render(&[change("src/long.txt", Some(&long), &edited)]);
    let out = arena.apply_patch(&three_hunks, &[]);
    assert_refused_unchanged(
        &arena,
        &before,
        &out,
        "3 hunks, over [limits] max_hunks_per_patch = 2",
    );
    let two_files = canonical::render(&[
        change("src/value.py", Some("VALUE = 1\n"), "VALUE = 2\n"),
        change("src/other.py", Some("OTHER = 1\n"), "OTHER = 2\n"),
    ]);
    let out = arena.apply_patch(&two_files, &[]);
    assert_refused_unchanged(
        &arena,
        &before,
        &out,
        "2 files, over [limits] max_files_per_patch = 1",
    );
}

#[test]
fn symlinks_swapped_in_between_propose_and_apply_are_refused() {
    // A file replaced by a symlink, and a parent folder replaced by a symlink, after the patch was made.
    for swap_dir in [false, true] {
        let arena = Arena::new("http://127.0.0.1:1/v1");
        let patch =
            canonical::render(&[change("src/value.py", Some("VALUE = 1\n"), "VALUE = 2\n")]);
        let src = arena.ws.dir.path().join("src");
        if swap_dir {
            let moved = arena.sentinel.path().join("src");
            std::fs::rename(&src, &moved).unwrap();
            std::os::unix::fs::symlink(&moved, &src).unwrap();
        } else {
            std::fs::copy(src.join("value.py"), arena.sentinel.path().join("value.py")).unwrap();
            std::fs::remove_file(src.join("value.py")).unwrap();
            std::os::unix::fs::symlink(
                arena.sentinel.path().join("value.py"),
                src.join("value.py"),
            )
            .unwrap();
        }
        let before = arena.snap();
        let out = arena.apply_patch(&patch, &[]);
        assert_refused_unchanged(&arena, &before, &out, "is a symlink");
    }
}

/// A three-file patch: two files modified, one created in a new folder.
fn three_file_patch(arena: &Arena) -> Vec<u8> {
    arena.ws.write("src/c.py", "C = 1\n");
    canonical::render(&[
        change("src/value.py", Some("VALUE = 1\n"), "VALUE = 2\n"),
        change("src/other.py", Some("OTHER = 1\n"), "OTHER = 2\n"),
        change("src/new/made.py", None, "MADE = 1\n"),
    ])
}

fn no_temp_files(root: &Path) -> bool {
    !snapshot(root).keys().any(|k| k.contains(".llw-"))
}

fn crash_everywhere(validation: &str) -> (u32, Vec<String>) {
    let mut outcomes = Vec::new();
    for k in 1..100u32 {
        let arena = Arena::new("http://127.0.0.1:1/v1");
        std::fs::write(
            arena.ws.dir.path().join("local-llm-worker.toml"),
            format!("[provider]\nkind = \"llamacpp\"\n[paths]\nallowed = [\"src/**\"]\n[validation]\ncommands = [\"{validation}\"]\n"),
        )
        .unwrap();
        let patch = three_file_patch(&arena);
        let pre = arena.ws.snapshot();
        let out = arena.apply_patch(&patch, &[("LLW_CRASH_AT", &k.to_string())]);
        let crashed = stderr(&out).contains("crash injected");
        if !crashed {
            return (k - 1, outcomes);
        }
        let rec = arena.run(&["recover"], &[]);
        assert!(
            rec.status.success(),
            "recover failed at step {k}: {}",
            stderr(&rec)
        );
        let said = stdout(&rec);
        let after = arena.ws.snapshot();
        let post_state = {
            let mut p = pre.clone();
            for (rel, text) in [
                ("src/value.py", "VALUE = 2\n"),
                ("src/other.py", "OTHER = 2\n"),
                ("src/new/made.py", "MADE = 1\n"),
            ] {
                let mode = p.get(rel).map(|v| v.1).unwrap_or(0o100644);
                p.insert(rel.to_string(), (text.as_bytes().to_vec(), mode));
            }
            p.insert("src/new/".to_string(), (Vec::new(), 0o040000));
            p
        };
        if said.starts_with("nothing to recover") {
            // Killed while the journal was being written: the workspace had not changed yet.
            assert_same(
                &after,
                &pre,
                &format!("step {k}: nothing to recover but the workspace is not the pre-image"),
            );
        } else if said.starts_with("restored") {
            assert_same(
                &after,
                &pre,
                &format!("step {k}: recovery said restored but the workspace is not the pre-image"),
            );
        } else if said.starts_with("completed") {
            assert_same(
                &after,
                &post_state,
                &format!(
                    "step {k}: recovery said completed but the workspace is not the post-image"
                ),
            );
        } else {
            panic!("step {k}: recovery said {said:?}");
        }
        assert!(
            no_temp_files(arena.ws.dir.path()),
            "step {k}: temporary files left behind"
        );
        // Each workspace keeps one journal file, empty between applies.
        let journals: Vec<_> = std::fs::read_dir(arena.state.path().join("journals"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(
            journals
                .iter()
                .all(|j| j.is_file() && std::fs::metadata(j).unwrap().len() == 0),
            "step {k}: a journal left behind after recovery: {journals:?}"
        );
        outcomes.push(format!(
            "{k}:{}",
            said.split_whitespace().next().unwrap_or("")
        ));
    }
    panic!("the apply never finished without a crash");
}

#[test]
fn a_kill_at_any_write_step_is_recovered_to_exactly_before_or_after() {
    let (steps, outcomes) = crash_everywhere("true");
    assert!(
        steps >= 6,
        "expected at least 6 write steps, saw {steps}: {outcomes:?}"
    );
    let (steps_failing, outcomes_failing) = crash_everywhere("false");
    assert!(
        steps_failing > steps,
        "a failing validation adds restore steps: {outcomes_failing:?}"
    );
    eprintln!("crash points: {steps} (validation passes), {steps_failing} (validation fails)");
}

#[test]
fn two_applies_of_the_same_file_at_once_one_lands_the_other_is_stale() {
    for _ in 0..5 {
        let arena = Arena::new("http://127.0.0.1:1/v1");
        let a = canonical::render(&[change("src/value.py", Some("VALUE = 1\n"), "VALUE = 2\n")]);
        let b = canonical::render(&[change("src/value.py", Some("VALUE = 1\n"), "VALUE = 3\n")]);
        let (ra, rb) = std::thread::scope(|sc| {
            let ha = sc.spawn(|| arena.apply_patch(&a, &[]));
            let hb = sc.spawn(|| arena.apply_patch(&b, &[]));
            (ha.join().unwrap(), hb.join().unwrap())
        });
        let wins = [ra.status.success(), rb.status.success()];
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "exactly one must land: {wins:?} {} {}",
            stderr(&ra),
            stderr(&rb)
        );
        let loser = if wins[0] { &rb } else { &ra };
        assert!(
            stderr(loser).contains("changed since the proposal"),
            "{}",
            stderr(loser)
        );
        let now = arena.ws.read("src/value.py");
        assert!(now == "VALUE = 2\n" || now == "VALUE = 3\n");
    }
}

#[tokio::test]
async fn eight_proposals_in_parallel_through_one_server_all_succeed() {
    use rmcp::model::CallToolRequestParams;
    let answer = r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;
    let s = scripted(vec![Reply::chat(answer)]);
    let arena = Arena::new(&s.base_url);
    let state: PathBuf = arena.state.path().to_path_buf();
    arena.ws.trust_in(&state);
    let client = Cli::mcp().state(&state).serve().await;
    let root = arena.ws.root_str();
    let calls = (0..8).map(|_| {
        let serde_json::Value::Object(args) = serde_json::json!({
            "workspace_root": root, "task": "Set VALUE to 2", "acceptance_criteria": ["VALUE is 2"],
            "complexity": "low", "files": ["src/value.py"]
        }) else {
            unreachable!()
        };
        client.call_tool(CallToolRequestParams::new("propose_patch").with_arguments(args))
    });
    let results = futures_join_all(calls).await;
    let mut ids = std::collections::HashSet::new();
    for r in results {
        let r = r.unwrap();
        assert_ne!(r.is_error, Some(true), "{:?}", r.content);
        ids.insert(
            r.structured_content.unwrap()["proposal_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(ids.len(), 8, "every proposal has its own id");
    client.cancel().await.unwrap();
}

/// Await all futures concurrently (no extra dependency).
async fn futures_join_all<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futs.map(Box::pin).collect();
    let mut out = Vec::new();
    let mut pending: Vec<_> = handles.into_iter().map(Some).collect();
    let mut results: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (i, f) in pending.iter_mut().enumerate() {
            if let Some(fut) = f {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        results[i] = Some(v);
                        *f = None;
                    }
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    for r in results {
        out.push(r.unwrap());
    }
    out
}
