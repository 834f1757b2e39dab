//! Names and policy values a red-team pass found accepted: each test is named after the finding it closes, runs the
//! binary end to end against the scripted endpoint, and checks that a refusal names the problem and the fix, that no
//! request reached the model and that nothing changed on disk.

use std::process::Output;

use crate::common::*;
use local_llm_delegator::digest::sha256_hex;
use local_llm_delegator::patch::canonical;

/// A workspace allowing every path (`[paths]` plus `extra`), with `src/value.py`, and its scripted endpoint.
fn open(extra: &str) -> (Scripted, Ws) {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = Ws::new(
        &s.base_url,
        &format!("[paths]\nallowed = [\"**\"]\n{extra}"),
    );
    ws.write("src/value.py", "VALUE = 1\n");
    (s, ws)
}

/// `propose` of one file, in the tests' clean environment.
fn propose_one(ws: &Ws, file: &str) -> Output {
    propose(ws, &[file], &[])
}

/// `apply` of exactly these patch bytes, with their digest.
fn apply_bytes(ws: &Ws, patch: &[u8]) -> Output {
    let pf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pf.path(), patch).unwrap();
    Cli::apply(ws.root(), pf.path(), sha256_hex(patch)).run()
}

/// A refusal (exit 1, not a panic's 101) whose one-line reason holds `needle`.
#[track_caller]
fn assert_refused(out: &Output, needle: &str, what: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: expected a refusal (exit 1), got {:?}: {err}{}",
        out.status.code(),
        stdout(out)
    );
    assert!(
        err.contains(needle),
        "{what}: reason {err:?} does not contain {needle:?}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: the reason must be one line: {err:?}"
    );
}

#[track_caller]
fn assert_no_model_call(s: &Scripted) {
    assert!(
        s.requests.lock().unwrap().is_empty(),
        "a refused path or policy reached the model"
    );
}

// 6. Case-insensitive filesystems: `.GIT/config` is `.git/config` there, `LOCAL-LLM-WORKER.TOML` the policy file.
#[test]
fn case_insensitive_filesystems_get_every_built_in_denial_in_any_case() {
    let (s, ws) = open("");
    ws.write(".GIT/config", "[core]\n");
    ws.write("sub/.Git/HEAD", "ref: refs/heads/main\n");
    ws.write("LOCAL-LLM-WORKER.TOML", "[provider]\nkind = \"llamacpp\"\n");
    ws.write("src/.ENV", "TOKEN=x\n");
    ws.write("server.PEM", "-----BEGIN PRIVATE KEY-----\n");
    let before = ws.snapshot();
    for (file, needle) in [
        (".GIT/config", "always denied"),
        ("sub/.Git/HEAD", "always denied"),
        ("LOCAL-LLM-WORKER.TOML", "always denied"),
        ("Local-Llm-Worker.toml", "always denied"),
        ("src/.ENV", "looks like a secret"),
        ("server.PEM", "looks like a secret"),
    ] {
        assert_refused(&propose_one(&ws, file), needle, file);
    }
    assert_no_model_call(&s);
    // The write-time check refuses them too: a crafted patch never reaches .GIT or a policy file in another case.
    for (patch, what) in [
        (
            canonical::render(&[change(
                ".GIT/config",
                Some("[core]\n"),
                "[core]\nhooksPath = x\n",
            )]),
            ".GIT/config",
        ),
        (
            canonical::render(&[change(
                "LOCAL-LLM-WORKER.TOML",
                Some("[provider]\nkind = \"llamacpp\"\n"),
                "[provider]\nkind = \"llamacpp\"\n[validation]\ncommands = [\"touch pwned\"]\n",
            )]),
            "LOCAL-LLM-WORKER.TOML",
        ),
        (
            canonical::render(&[change(
                "Local-LLM-Worker.Toml",
                None,
                "[validation]\ncommands = [\"touch pwned\"]\n",
            )]),
            "Local-LLM-Worker.Toml",
        ),
    ] {
        assert_refused(&apply_bytes(&ws, &patch), "always denied", what);
    }
    assert_eq!(ws.snapshot(), before, "a refusal changed the workspace");
}

// 8. Policy files of nested projects: `svc/local-llm-worker.toml` decides what the next apply in `svc` runs.
#[test]
fn policy_files_of_nested_projects_are_never_read_or_written() {
    let (s, ws) = open("");
    let nested = "[provider]\nkind = \"llamacpp\"\n";
    ws.write("svc/local-llm-worker.toml", nested);
    ws.write("a/b/Local-LLM-Worker.toml", nested);
    let before = ws.snapshot();
    for file in ["svc/local-llm-worker.toml", "a/b/Local-LLM-Worker.toml"] {
        assert_refused(&propose_one(&ws, file), "policy file", file);
    }
    assert_no_model_call(&s);
    let injected = "[provider]\nkind = \"llamacpp\"\n[validation]\ncommands = [\"touch pwned\"]\n";
    for (patch, what) in [
        (
            canonical::render(&[change("svc/local-llm-worker.toml", Some(nested), injected)]),
            "svc/local-llm-worker.toml",
        ),
        (
            canonical::render(&[change("new/deep/LOCAL-LLM-WORKER.toml", None, injected)]),
            "new/deep/LOCAL-LLM-WORKER.toml",
        ),
    ] {
        assert_refused(&apply_bytes(&ws, &patch), "always denied", what);
    }
    assert_eq!(ws.snapshot(), before, "a refusal changed the workspace");
}

/// Secret-looking files by spellings the first list missed, and names it never had (id_ecdsa, .npmrc, keystores...).
const OTHER_SPELLINGS: &[&str] = &[
    ".env-prod",
    ".env_prod",
    ".envrc",
    ".ENV",
    "deploy/prod.env",
    "server.PEM",
    "tls.Key",
    "deploy/ID_RSA",
    "Credentials.json",
    ".AWS/config",
    "home/id_ecdsa",
    "home/id_dsa",
    ".npmrc",
    ".netrc",
    ".pypirc",
    "certs/store.p12",
    "certs/site.pfx",
    "android/release.keystore",
    "certs/app.jks",
    ".git-credentials",
    ".docker/config.json",
    "vault.kdbx",
    "web/.htpasswd",
    "config/secrets.yml",
    ".pgpass",
    "infra/terraform.tfstate",
    ".kube/config",
    ".gnupg/private-keys-v1.d/k.key",
    ".bash_history",
];

// 7. Secrets by other spellings: each of these was sent to the model.
#[test]
fn secrets_by_other_spellings_are_never_sent_to_the_model() {
    let (s, ws) = open("");
    for rel in OTHER_SPELLINGS {
        ws.write(rel, "TOKEN=hunter2\n");
    }
    let before = ws.snapshot();
    for rel in OTHER_SPELLINGS {
        assert_refused(&propose_one(&ws, rel), "looks like a secret", rel);
    }
    assert_no_model_call(&s);
    assert_eq!(ws.snapshot(), before);
}

// 7. ... and the validation sandbox leaves the same files out of its copy, where the model's code would run.
#[test]
fn secrets_by_other_spellings_are_left_out_of_the_sandbox_copy() {
    let absent: Vec<String> = OTHER_SPELLINGS
        .iter()
        .map(|rel| format!("test ! -e '{rel}'"))
        .collect();
    let (_s, ws) = open(&format!(
        "[validation]\ncommands = [{:?}]\non_propose = true\nisolation = \"copy\"\n",
        absent.join(" && ")
    ));
    for rel in OTHER_SPELLINGS {
        ws.write(rel, "TOKEN=hunter2\n");
    }
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["validation_passed"], true,
        "a secret-looking file was copied into the sandbox: {:#}",
        v["validation"]
    );
}

/// A built-in secret glob as README writes it: `**/` left off, a folder's `/**` as `/`.
fn as_listed(glob: &str) -> String {
    let g = glob.strip_prefix("**/").unwrap_or(glob);
    match g.strip_suffix("/**") {
        Some(folder) => format!("{folder}/"),
        None => g.to_string(),
    }
}

// 7. ... and README's list of secret-looking names is the code's list: one list.
#[test]
fn secrets_by_other_spellings_one_list_in_the_readme_and_the_code() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .unwrap()
        .replace('\n', " ");
    let start = readme
        .find("Secret-looking files (")
        .expect("README names the secret-looking files");
    let rest = &readme[start..];
    let end = rest
        .find(") are denied")
        .expect("the list ends with \") are denied\"");
    let listed: Vec<&str> = rest[..end].split('`').skip(1).step_by(2).collect();
    let code: Vec<String> = local_llm_delegator::names::SECRET_DENIED
        .iter()
        .map(|g| as_listed(g))
        .collect();
    assert_eq!(listed, code, "README.md and names::SECRET_DENIED differ");
}

/// Paths holding invisible, direction-changing or look-alike characters, each with the code point the refusal names.
const UNSEEN: &[(&str, &str)] = &[
    ("src/\u{202E}yp.txt", "U+202E"),
    ("src/a\u{200B}.py", "U+200B"),
    ("src/a\u{200C}.py", "U+200C"),
    ("src/a\u{200D}.py", "U+200D"),
    ("src/a\u{2060}.py", "U+2060"),
    ("src/\u{FEFF}a.py", "U+FEFF"),
    ("src/a\u{034F}.py", "U+034F"),
    ("src/\u{2066}a.py\u{2069}", "U+2066"),
    ("src/a\u{00AD}b.py", "U+00AD"),
    (".g\u{0456}t/config", "U+0456"),
    (".\u{0261}it/hooks/pre-commit", "U+0261"),
    (".g\u{0131}t/config", "U+0131"),
    ("sub/\u{FF0E}\u{FF47}\u{FF49}\u{FF54}/config", "U+FF0E"),
    ("local-llm-w\u{043E}rker.toml", "U+043E"),
    ("svc/local-llm-wor\u{212A}er.toml", "U+212A"),
];

// 10. Invisible and confusable characters in paths: accepted and printed raw in the patch before.
#[test]
fn invisible_and_confusable_characters_in_paths_are_refused_by_code_point() {
    let (s, ws) = open("");
    for (rel, _) in UNSEEN {
        ws.write(rel, "x = 1\n");
    }
    let before = ws.snapshot();
    for (rel, code_point) in UNSEEN {
        let out = propose_one(&ws, rel);
        assert_refused(&out, code_point, code_point);
        let raw: Vec<char> = rel.chars().filter(|c| !c.is_ascii()).collect();
        assert!(
            !stderr(&out).contains(raw.as_slice()),
            "{code_point}: the refusal prints the character raw: {}",
            stderr(&out)
        );
    }
    assert_no_model_call(&s);
    for (rel, code_point) in [
        (".g\u{0456}t/hooks/pre-commit", "U+0456"),
        ("src/\u{202E}yp.txt", "U+202E"),
    ] {
        let patch = canonical::render(&[change(rel, None, "#!/bin/sh\ntouch pwned\n")]);
        assert_refused(&apply_bytes(&ws, &patch), code_point, code_point);
    }
    assert_eq!(ws.snapshot(), before, "a refusal changed the workspace");
    // Ordinary UTF-8 names are still files like any other.
    ws.write("src/café.py", "VALUE = 1\n");
    let out = propose_one(&ws, "src/café.py");
    assert!(!stderr(&out).contains("U+00E9"), "{}", stderr(&out));
}

// 15. Globs that silently do less: gitignore-like forms in [paths] were accepted and matched nothing.
#[test]
fn globs_that_silently_do_less_deny_as_written_or_are_refused() {
    let (s, ws) =
        open("denied = [\"src/secret\", \"vault/\", \"*.secret\", \"/config/**\", \"Private\"]\n");
    for rel in [
        "src/secret/a.py",
        "src/secret/deep/b.py",
        "x/vault/c.py",
        "deep/down/d.secret",
        "config/e.py",
        "private/f.py",
    ] {
        ws.write(rel, "x = 1\n");
    }
    let before = ws.snapshot();
    for rel in [
        "src/secret/a.py",
        "src/secret/deep/b.py",
        "x/vault/c.py",
        "deep/down/d.secret",
        "config/e.py",
        "private/f.py",
    ] {
        assert_refused(&propose_one(&ws, rel), "denied by [paths] denied", rel);
    }
    assert_no_model_call(&s);
    // A leading `!` (a .gitignore re-include) is refused at load, with what to write instead.
    for (list, pattern) in [("allowed", "!src/secret/**"), ("denied", "!src/keep.py")] {
        ws.write(
            "local-llm-worker.toml",
            &format!(
                "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\n{list} = [\"**\", {pattern:?}]\n",
                s.base_url
            ),
        );
        let out = propose_one(&ws, "src/value.py");
        assert_refused(
            &out,
            &format!("[paths] {list} pattern {pattern:?} starts with `!`"),
            pattern,
        );
        assert!(stderr(&out).contains("[paths] denied"), "{}", stderr(&out));
        let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
        assert!(
            stdout(&out).contains("starts with `!`"),
            "doctor must refuse it too: {}",
            stdout(&out)
        );
    }
    assert_no_model_call(&s);
    let mut after = ws.snapshot();
    after.remove("local-llm-worker.toml");
    let mut want = before;
    want.remove("local-llm-worker.toml");
    assert_eq!(after, want);
}

// 9. Hard links: a second name for a file outside the workspace (~/.ssh/id_rsa as notes.txt) was read and sent.
#[test]
fn hard_links_are_not_read_unless_the_policy_allows_them() {
    let (s, ws) = open("");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.dir.path().join("src")).unwrap();
    std::fs::hard_link(
        outside.path().join("id_rsa"),
        ws.dir.path().join("src/notes.txt"),
    )
    .unwrap();
    let before = ws.snapshot();
    let out = propose_one(&ws, "src/notes.txt");
    assert_refused(&out, "src/notes.txt has 2 hard links", "hard link");
    assert!(
        stderr(&out).contains("[paths] allow_hard_links = true"),
        "{}",
        stderr(&out)
    );
    assert_no_model_call(&s);
    // The validation sandbox leaves such a file out too: the model's code would run beside it.
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\nallowed = [\"**\"]\n[validation]\n\
             commands = [\"test ! -e src/notes.txt\"]\non_propose = true\nisolation = \"copy\"\n",
            s.base_url
        ),
    );
    let out = propose(&ws, &["src/value.py"], &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["validation_passed"], true, "{:#}", v["validation"]);
    // With the policy's consent the file is read (and still never written: the apply refuses it).
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\nallowed = [\"**\"]\nallow_hard_links = true\n",
            s.base_url
        ),
    );
    s.requests.lock().unwrap().clear();
    let out = propose_one(&ws, "src/notes.txt");
    assert!(!stderr(&out).contains("hard links"), "{}", stderr(&out));
    assert_eq!(s.requests.lock().unwrap().len(), 1, "the file was not sent");
    let mut after = ws.snapshot();
    let mut want = before;
    after.remove("local-llm-worker.toml");
    want.remove("local-llm-worker.toml");
    assert_eq!(after, want);
}

// 14. Policy values that panic: i64::MAX seconds passed validation and then overflowed an Instant (exit 101).
#[test]
fn policy_values_that_panic_are_refused_at_load_with_their_range() {
    let (s, ws) = open("");
    let before = ws.snapshot();
    let max = i64::MAX;
    for (section, key, value, range) in [
        (
            "limits",
            "proposal_ttl_secs",
            max.to_string(),
            "1 to 604800",
        ),
        (
            "limits",
            "request_timeout_secs",
            max.to_string(),
            "1 to 86400",
        ),
        ("validation", "timeout_secs", max.to_string(), "1 to 86400"),
        (
            "limits",
            "max_file_bytes",
            max.to_string(),
            "1 to 100000000",
        ),
        (
            "limits",
            "max_total_bytes",
            max.to_string(),
            "1 to 1000000000",
        ),
        (
            "limits",
            "max_patch_bytes",
            max.to_string(),
            "1 to 100000000",
        ),
        (
            "limits",
            "max_files_per_patch",
            max.to_string(),
            "1 to 10000",
        ),
        (
            "limits",
            "max_hunks_per_patch",
            max.to_string(),
            "1 to 1000000",
        ),
        (
            "limits",
            "max_output_tokens",
            u32::MAX.to_string(),
            "1 to 1000000",
        ),
        (
            "models",
            "context_window",
            max.to_string(),
            "1 to 1000000000",
        ),
        (
            "limits",
            "proposal_ttl_secs",
            "0".to_string(),
            "1 to 604800",
        ),
    ] {
        ws.write(
            "local-llm-worker.toml",
            &format!(
                "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\nallowed = [\"**\"]\n[{section}]\n{key} = {value}\n",
                s.base_url
            ),
        );
        let out = propose_one(&ws, "src/value.py");
        let what = format!("[{section}] {key} = {value}");
        assert_refused(&out, &what, &what);
        assert!(stderr(&out).contains(range), "{what}: {}", stderr(&out));
    }
    assert_no_model_call(&s);
    let mut after = ws.snapshot();
    let mut want = before;
    after.remove("local-llm-worker.toml");
    want.remove("local-llm-worker.toml");
    assert_eq!(after, want);
}

// 16. LOCAL_LLM_CONFIG made any folder a workspace: with it set, workspace_root = "/" let a patch write under /tmp.
#[test]
fn local_llm_config_makes_no_folder_a_workspace_by_itself() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let policies = tempfile::tempdir().unwrap();
    let forced = policies.path().join("forced.toml");
    std::fs::write(
        &forced,
        format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n[paths]\nallowed = [\"**\"]\n",
            s.base_url
        ),
    )
    .unwrap();
    let bare = tempfile::tempdir().unwrap();
    let root = bare.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/value.py"), "VALUE = 1\n").unwrap();
    let root_s = root.to_str().unwrap();
    let config = [("LOCAL_LLM_CONFIG", forced.as_path())];
    let out = Cli::propose(root_s)
        .file("src/value.py")
        .envs(&config)
        .run();
    assert_refused(&out, "LOCAL_LLM_ALLOWED_ROOTS", "a bare folder");
    assert!(
        stderr(&out).contains("LOCAL_LLM_CONFIG"),
        "{}",
        stderr(&out)
    );
    assert_no_model_call(&s);
    // `/` and the home folder are never a workspace, whatever the variables say.
    let everything = [
        ("LOCAL_LLM_CONFIG", forced.as_path()),
        ("LOCAL_LLM_ALLOWED_ROOTS", std::path::Path::new("/")),
    ];
    let rel = format!("{}/src/value.py", &root_s[1..]);
    let out = Cli::propose("/").file(&rel).envs(&everything).run();
    assert_refused(&out, "never a workspace", "/");
    let home = tempfile::tempdir().unwrap();
    let home_root = home.path().canonicalize().unwrap();
    std::fs::write(
        home_root.join("local-llm-worker.toml"),
        std::fs::read(&forced).unwrap(),
    )
    .unwrap();
    std::fs::write(home_root.join("value.py"), "VALUE = 1\n").unwrap();
    let out = Cli::propose(&home_root)
        .file("value.py")
        .env("HOME", &home_root)
        .run();
    assert_refused(&out, "home folder", "HOME");
    assert_no_model_call(&s);
    // A crafted patch for / that would create a file under the temporary folder.
    let target = format!("{}/pwned.txt", &root_s[1..]);
    let patch = canonical::render(&[change(&target, None, "pwned\n")]);
    let pf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(pf.path(), &patch).unwrap();
    let out = Cli::apply("/", pf.path(), sha256_hex(&patch))
        .envs(&everything)
        .run();
    assert_refused(&out, "never a workspace", "apply to /");
    assert!(!root.join("pwned.txt").exists(), "the patch wrote under /");
    // The forced policy still applies where it may: under LOCAL_LLM_ALLOWED_ROOTS, or where a policy file is.
    let allowed = [
        ("LOCAL_LLM_CONFIG", forced.as_path()),
        ("LOCAL_LLM_ALLOWED_ROOTS", root.parent().unwrap()),
    ];
    let out = Cli::propose(root_s)
        .file("src/value.py")
        .envs(&allowed)
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::write(
        root.join("local-llm-worker.toml"),
        "[provider]\nkind = \"llamacpp\"\n",
    )
    .unwrap();
    let out = Cli::propose(root_s)
        .file("src/value.py")
        .envs(&config)
        .run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.requests.lock().unwrap().len(), 2);
}
