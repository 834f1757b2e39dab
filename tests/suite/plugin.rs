//! The plugin bundle, checked without the host CLIs (scripts/test-hosts.sh runs those): the launcher finds the
//! binary beside it, else on PATH, else fails at once with one line naming the command to run; the skill mirrors are
//! exactly what scripts/gen-skills.sh makes from skills/; the manifests and MCP declarations agree with each other.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_local-llm-worker");
const LAUNCHER: &str = "plugins/local-llm-delegator/bin/local-llm-worker-launcher";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"plugin-test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn json(rel: &str) -> serde_json::Value {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not valid JSON: {e}"))
}

fn write_exec(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A folder holding a copy of the launcher, as `bin/` of an installed plugin.
fn plugin_bin(dir: &Path) -> PathBuf {
    let bin = dir.join("plugin/bin");
    fs::create_dir_all(&bin).unwrap();
    let launcher = bin.join("local-llm-worker-launcher");
    fs::copy(repo().join(LAUNCHER), &launcher).unwrap();
    launcher
}

/// A PATH with the system tools and no local-llm-worker, plus `extra` first.
fn clean_path(extra: Option<&Path>) -> String {
    let system = "/usr/local/bin:/usr/bin:/bin";
    for d in system.split(':') {
        assert!(
            !Path::new(d).join("local-llm-worker").exists(),
            "{d}/local-llm-worker exists: this test needs a PATH without one"
        );
    }
    match extra {
        Some(p) => format!("{}:{system}", p.display()),
        None => system.to_string(),
    }
}

/// Run the launcher with `args`, this PATH, and `stdin`; bounded to 20 s.
fn launch(launcher: &Path, args: &[&str], path: &str, stdin: &str) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new(launcher)
        .args(args)
        .env_clear()
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A launcher that fails at once may be gone before it reads its input: a broken pipe then says nothing.
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let deadline = start + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the launcher did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut out = Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut out.stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut out.stderr)
        .unwrap();
    (out, start.elapsed())
}

fn handshake() -> String {
    format!("{INIT}\n{INITIALIZED}\n")
}

fn assert_server_answered(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(r#""serverInfo":{"name":"local-llm-worker""#),
        "the MCP server did not answer the handshake: {:?}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn launcher_is_an_executable_posix_script() {
    let path = repo().join(LAUNCHER);
    let mode = fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o111,
        0o111,
        "{LAUNCHER} must be executable by all (mode {mode:o})"
    );
    let text = read(LAUNCHER);
    assert!(
        text.starts_with("#!/bin/sh\n"),
        "{LAUNCHER} must be a /bin/sh script"
    );
    assert!(
        !text.contains("cargo build"),
        "the launcher must never build"
    );
    let check = Command::new("sh").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "sh -n {LAUNCHER}: {check:?}");
}

#[test]
fn launcher_starts_the_binary_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = plugin_bin(dir.path());
    fs::copy(BIN, launcher.with_file_name("local-llm-worker")).unwrap();
    let (out, _) = launch(&launcher, &["mcp"], &clean_path(None), &handshake());
    assert_server_answered(&out);
}

#[test]
fn launcher_falls_back_to_the_binary_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = plugin_bin(dir.path());
    let on_path = dir.path().join("cargo-bin");
    fs::create_dir_all(&on_path).unwrap();
    fs::copy(BIN, on_path.join("local-llm-worker")).unwrap();
    let (out, _) = launch(
        &launcher,
        &["mcp"],
        &clean_path(Some(&on_path)),
        &handshake(),
    );
    assert_server_answered(&out);
}

#[test]
fn launcher_without_any_binary_fails_at_once_naming_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = plugin_bin(dir.path());
    let (out, took) = launch(&launcher, &["mcp"], &clean_path(None), &handshake());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing may reach the host's MCP stream"
    );
    assert_eq!(stderr.lines().count(), 1, "one line, got: {stderr}");
    assert!(
        stderr.contains("cargo install --locked --path .") && stderr.contains("scripts/install.sh"),
        "the message must name the command to run: {stderr}"
    );
    assert!(
        stderr.contains(&launcher.parent().unwrap().display().to_string()),
        "the message must say where it looked: {stderr}"
    );
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn launcher_prefers_beside_over_path_and_passes_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = plugin_bin(dir.path());
    let on_path = dir.path().join("cargo-bin");
    fs::create_dir_all(&on_path).unwrap();
    write_exec(
        &on_path.join("local-llm-worker"),
        "#!/bin/sh\necho \"path $*\"\n",
    );
    write_exec(
        &launcher.with_file_name("local-llm-worker"),
        "#!/bin/sh\necho \"beside $*\"\n",
    );
    let path = clean_path(Some(&on_path));
    let (out, _) = launch(&launcher, &["mcp", "two words"], &path, "");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "beside mcp two words\n"
    );

    fs::remove_file(launcher.with_file_name("local-llm-worker")).unwrap();
    let (out, _) = launch(&launcher, &["mcp"], &path, "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "path mcp\n");
}

#[test]
fn launcher_honours_local_llm_worker_bin_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = plugin_bin(dir.path());
    let custom = dir.path().join("custom-worker");
    write_exec(&custom, "#!/bin/sh\necho \"custom $*\"\n");
    let run = |value: &Path| {
        Command::new(&launcher)
            .arg("mcp")
            .env_clear()
            .env("PATH", clean_path(None))
            .env("LOCAL_LLM_WORKER_BIN", value)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&custom);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "custom mcp\n");

    let out = run(&dir.path().join("missing"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        stderr.contains("LOCAL_LLM_WORKER_BIN") && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn skill_mirrors_are_what_the_generator_makes() {
    let out = Command::new("sh")
        .arg(repo().join("scripts/gen-skills.sh"))
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the skill mirrors differ from skills/: run scripts/gen-skills.sh\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_drift_check_catches_an_edited_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("plugins/local-llm-delegator")).unwrap();
    for rel in [
        "scripts",
        "skills",
        "plugins/local-llm-delegator/skills",
        "plugins/local-llm-delegator/codex-skills",
    ] {
        let status = Command::new("cp")
            .arg("-R")
            .arg(repo().join(rel))
            .arg(root.join(rel).parent().unwrap())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let mirror =
        root.join("plugins/local-llm-delegator/codex-skills/delegate-local-worker/SKILL.md");
    let check = || {
        Command::new("sh")
            .arg(root.join("scripts/gen-skills.sh"))
            .arg("--check")
            .output()
            .unwrap()
    };
    assert!(check().status.success(), "the copy starts in sync");

    fs::write(
        &mirror,
        fs::read_to_string(&mirror).unwrap() + "\nedited by hand\n",
    )
    .unwrap();
    let out = check();
    assert!(
        !out.status.success(),
        "an edited mirror must fail the check"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("run scripts/gen-skills.sh"));

    // Regenerating repairs it; a stray file in a mirror is drift too.
    let regen = Command::new("sh")
        .arg(root.join("scripts/gen-skills.sh"))
        .output()
        .unwrap();
    assert!(regen.status.success());
    assert!(check().status.success());
    fs::write(mirror.with_file_name("stray.md"), "x").unwrap();
    assert!(
        !check().status.success(),
        "a stray file must fail the check"
    );
}

#[test]
fn skill_mirrors_carry_each_hosts_invocation_rules() {
    let claude = read("plugins/local-llm-delegator/skills/delegate-local-worker/SKILL.md");
    let codex = read("plugins/local-llm-delegator/codex-skills/delegate-local-worker/SKILL.md");
    let policy =
        read("plugins/local-llm-delegator/codex-skills/delegate-local-worker/agents/openai.yaml");
    let front = |s: &str| s.split("\n---\n").next().unwrap().to_string();

    assert!(front(&claude).contains("\nname: delegate-local-worker\n"));
    assert!(front(&claude).contains("\ndisable-model-invocation: true\n"));
    assert!(front(&claude).contains("\nargument-hint: "));
    assert!(claude.contains("$ARGUMENTS"));
    assert!(claude.contains("mcp__plugin_local-llm-delegator_local-llm-worker__propose_patch"));

    assert!(front(&codex).contains("\nname: delegate-local-worker\n"));
    assert!(!front(&codex).contains("disable-model-invocation"));
    assert!(
        !codex.contains("$ARGUMENTS"),
        "Codex leaves $ARGUMENTS literal"
    );
    assert!(codex.contains("$local-llm-delegator:delegate-local-worker"));
    assert!(codex.contains("mcp__local_llm_worker__propose_patch"));
    assert!(policy.contains("allow_implicit_invocation: false"));

    // The workflow the skill teaches, on both hosts.
    for text in [&claude, &codex] {
        for needle in [
            "workspace_root",
            "ABSOLUTE path",
            "acceptance_criteria",
            "constraints",
            "`plan` is\n  REQUIRED",
            "Keep the work yourself",
            "untrusted draft",
            "read every line of `patch`",
            "`proposal_id` and the `digest`",
            "Re-read every changed file",
        ] {
            assert!(text.contains(needle), "the skill text lacks {needle:?}");
        }
    }
}

/// The skill tells the primary to find the place with its search tool and pass line ranges, not to read the files
/// itself first (which spends the tokens delegation is meant to save).
#[test]
fn skill_says_locate_with_search_and_pass_ranges_not_read_the_files() {
    for rel in [
        "plugins/local-llm-delegator/skills/delegate-local-worker/SKILL.md",
        "plugins/local-llm-delegator/codex-skills/delegate-local-worker/SKILL.md",
    ] {
        let text = read(rel);
        for needle in [
            "Locate, don't read",
            "`rg -n",
            "`grep -n",
            "`PATH:START-END`",
        ] {
            assert!(text.contains(needle), "{rel} lacks {needle:?}");
        }
        assert!(
            !text.contains("Read the relevant files yourself"),
            "{rel} still tells the primary to read the files first"
        );
    }
}

/// The skill is sent whole on each invocation: its size is a cost every delegation pays. 2,127 tokens (o200k_base)
/// for 8,762 bytes when this bound was set; ~4 bytes a token.
#[test]
fn skill_stays_within_its_size_budget() {
    const MAX_BYTES: usize = 9_500;
    for rel in [
        "plugins/local-llm-delegator/skills/delegate-local-worker/SKILL.md",
        "plugins/local-llm-delegator/codex-skills/delegate-local-worker/SKILL.md",
    ] {
        let len = read(rel).len();
        assert!(
            len <= MAX_BYTES,
            "{rel} is {len} bytes, over {MAX_BYTES}: cut what does not change the primary's behaviour"
        );
    }
}

#[test]
fn manifests_and_mcp_declarations_agree() {
    let version = env!("CARGO_PKG_VERSION");
    let market = json(".claude-plugin/marketplace.json");
    assert_eq!(market["name"], "local-llm-delegator");
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], "local-llm-delegator");
    assert_eq!(entry["source"], "./plugins/local-llm-delegator");
    assert_eq!(entry["version"], version);

    let claude = json("plugins/local-llm-delegator/.claude-plugin/plugin.json");
    let codex = json("plugins/local-llm-delegator/.codex-plugin/plugin.json");
    for m in [&claude, &codex] {
        assert_eq!(m["name"], "local-llm-delegator");
        assert_eq!(m["version"], version, "plugin versions follow Cargo.toml");
    }
    for key in [
        "displayName",
        "shortDescription",
        "longDescription",
        "developerName",
        "category",
    ] {
        assert!(codex["interface"][key].is_string(), "Codex interface.{key}");
    }
    let plugin = repo().join("plugins/local-llm-delegator");
    for key in ["skills", "mcpServers"] {
        let rel = codex[key].as_str().unwrap();
        assert!(
            rel.starts_with("./") && plugin.join(rel).exists(),
            "Codex {key}: {rel}"
        );
    }

    // Claude: the launcher through ${CLAUDE_PLUGIN_ROOT}, never a relative path (resolved in the user's project).
    let claude_mcp = json("plugins/local-llm-delegator/.mcp.json");
    let server = &claude_mcp["mcpServers"]["local-llm-worker"];
    assert_eq!(
        server["command"],
        "${CLAUDE_PLUGIN_ROOT}/bin/local-llm-worker-launcher"
    );
    assert_eq!(server["args"], serde_json::json!(["mcp"]));
    assert_eq!(
        server["timeout"], 600_000,
        "tool calls may wait minutes for a slow model"
    );
    // The provider key from the plugin's user configuration: sensitive (the host's secure storage), handed over
    // as the variable the worker reads when the policy's own is unset.
    let option = &claude["userConfig"]["provider_api_key"];
    assert_eq!(option["sensitive"], true, "{option}");
    assert_eq!(option["type"], "string");
    assert_eq!(
        server["env"][local_llm_delegator::policy::PLUGIN_KEY_ENV],
        "${user_config.provider_api_key}"
    );

    // Codex: no variables are expanded; cwd "." is the installed plugin root.
    let codex_mcp = json(&format!(
        "plugins/local-llm-delegator/{}",
        codex["mcpServers"].as_str().unwrap()
    ));
    let server = &codex_mcp["mcpServers"]["local-llm-worker"];
    assert_eq!(server["command"], "./bin/local-llm-worker-launcher");
    assert_eq!(server["cwd"], ".");
    assert_eq!(server["args"], serde_json::json!(["mcp"]));
    assert_eq!(server["tool_timeout_sec"], 600);
    assert_eq!(server["tools"]["propose_patch"]["approval_mode"], "approve");
    assert_eq!(server["tools"]["apply_patch"]["approval_mode"], "prompt");
    let forwarded: Vec<&str> = server["env_vars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "LOCAL_LLM_CONFIG",
        "LOCAL_LLM_ALLOWED_ROOTS",
        "HF_INFERENCE_TOKEN",
        "OPENROUTER_API_KEY",
    ] {
        assert!(forwarded.contains(&name), "Codex must forward {name}");
    }

    // The launcher is committed; only the binary install.sh places beside it is ignored.
    let ignored = |rel: &str| {
        Command::new("git")
            .args(["check-ignore", "-q", rel])
            .current_dir(repo())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if repo().join(".git").exists() {
        assert!(ignored("plugins/local-llm-delegator/bin/local-llm-worker"));
        assert!(!ignored(LAUNCHER));
    }
}

/// A clone as `scripts/install.sh` sees it (the script, the launcher) under `dir`, and a `cargo` on PATH that
/// "builds" by copying this test's binary into `CARGO_TARGET_DIR` (a release build would take minutes). Returns the
/// command that runs the copied script with LOCAL_LLM_BIN_DIR = `user_bin`, leaving nothing outside `dir`.
fn install_sh(dir: &Path, user_bin: &Path) -> Command {
    let clone = dir.join("clone");
    fs::create_dir_all(clone.join("scripts")).unwrap();
    fs::create_dir_all(clone.join("plugins/local-llm-delegator/bin")).unwrap();
    fs::copy(
        repo().join("scripts/install.sh"),
        clone.join("scripts/install.sh"),
    )
    .unwrap();
    fs::copy(
        repo().join(LAUNCHER),
        clone.join("plugins/local-llm-delegator/bin/local-llm-worker-launcher"),
    )
    .unwrap();
    let tools = dir.join("tools");
    fs::create_dir_all(&tools).unwrap();
    write_exec(
        &tools.join("cargo"),
        "#!/bin/sh\nmkdir -p \"$CARGO_TARGET_DIR/release\" && cp \"$TEST_WORKER_BIN\" \"$CARGO_TARGET_DIR/release/local-llm-worker\"\n",
    );
    for sub in ["home", "state"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let mut c = Command::new(clone.join("scripts/install.sh"));
    c.env_clear()
        .env("PATH", clean_path(Some(&tools)))
        .env("HOME", dir.join("home"))
        .env("LOCAL_LLM_STATE_DIR", dir.join("state"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("TEST_WORKER_BIN", BIN)
        .env("LOCAL_LLM_BIN_DIR", user_bin)
        .stdin(Stdio::null());
    c
}

#[test]
fn install_sh_writes_through_its_own_temporary_file_never_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    // A shared bin folder (1777, like /tmp) where someone planted the name the old script copied through.
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = dir.path().join("victim.txt");
    fs::write(&victim, "someone else's file\n").unwrap();
    std::os::unix::fs::symlink(&victim, shared.join("local-llm-worker.new")).unwrap();
    let out = install_sh(dir.path(), &shared).output().unwrap();
    assert!(
        out.status.success(),
        "install.sh failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "someone else's file\n",
        "install.sh wrote through the planted symlink"
    );
    let binary = fs::read(BIN).unwrap();
    for placed in [
        shared.join("local-llm-worker"),
        dir.path()
            .join("clone/plugins/local-llm-delegator/bin/local-llm-worker"),
    ] {
        let meta = fs::symlink_metadata(&placed).unwrap();
        assert!(
            meta.file_type().is_file(),
            "{} is not a regular file",
            placed.display()
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert!(fs::read(&placed).unwrap() == binary, "{}", placed.display());
    }
    // No temporary file is left behind; the planted symlink is not the script's to remove.
    let mut names: Vec<String> = fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["local-llm-worker", "local-llm-worker.new"]);
}

#[test]
fn install_sh_refuses_a_shared_bin_folder_it_cannot_write_safely() {
    let dir = tempfile::tempdir().unwrap();
    // Anyone may write here and rename over what is placed: refused before anything is built or written.
    let open = dir.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let out = install_sh(dir.path(), &open).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "install.sh accepted a 0777 folder");
    assert!(
        stderr.contains("anyone may write to") && stderr.contains("LOCAL_LLM_BIN_DIR"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_dir(&open).unwrap().count(),
        0,
        "something was written"
    );
    assert!(
        !dir.path().join("target").exists(),
        "it built before refusing"
    );
    // A folder of another user (as root, CI's case, the test can make one).
    if rustix::process::geteuid().is_root() {
        let theirs = dir.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let out = install_sh(dir.path(), &theirs).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "install.sh accepted another user's folder"
        );
        assert!(stderr.contains("belongs to another user"), "{stderr}");
        assert_eq!(fs::read_dir(&theirs).unwrap().count(), 0);
    }
}

/// The width and height of a PNG, from its IHDR chunk; `None` when `bytes` is not a PNG.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let header = bytes.get(..24)?;
    if &header[..8] != b"\x89PNG\r\n\x1a\n" || &header[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&header[16..20]), be(&header[20..24])))
}

/// What the hosts' plugin directories ask for (`claude plugin validate --profile directory --strict`, which
/// scripts/test-hosts.sh runs; Codex's `interface` logo): a square PNG icon of 512 to 2048 px named by both
/// manifests, README and LICENSE in the plugin folder (the copy each host caches holds only that folder), the
/// license texts at the root, the hosts the server may reach, and a Codex marketplace at its documented place.
#[test]
fn the_plugin_carries_what_the_host_directories_ask_for() {
    let plugin = repo().join("plugins/local-llm-delegator");
    let claude = json("plugins/local-llm-delegator/.claude-plugin/plugin.json");
    let codex = json("plugins/local-llm-delegator/.codex-plugin/plugin.json");
    let icon = claude["icon"].as_str().unwrap();
    for named in [
        icon,
        codex["interface"]["logo"].as_str().unwrap(),
        codex["interface"]["composerIcon"].as_str().unwrap(),
    ] {
        assert_eq!(named, icon, "one icon for both hosts");
    }
    let bytes = fs::read(plugin.join(icon)).unwrap();
    let (w, h) = png_size(&bytes).expect("the icon is a PNG");
    assert!(
        w == h && (512..=2048).contains(&w),
        "{w}x{h}: a square of 512 to 2048 px"
    );
    assert!(bytes.len() < 2 * 1024 * 1024, "under 2 MB");
    // Reproducible: the generator draws exactly the committed bytes.
    if Command::new("python3").arg("--version").output().is_ok() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("icon.png");
        let status = Command::new("python3")
            .arg(repo().join("scripts/make-icon.py"))
            .arg(&out)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        assert!(
            fs::read(&out).unwrap() == bytes,
            "the icon differs from what scripts/make-icon.py draws: rerun it"
        );
    }

    let readme = read("plugins/local-llm-delegator/README.md");
    assert!(readme.contains("propose_patch") && readme.contains("apply_patch"));
    let (mit, apache) = (read("LICENSE-MIT"), read("LICENSE-APACHE"));
    assert!(
        mit.starts_with("MIT License")
            && apache.contains("Apache License\n                        Version 2.0")
    );
    let license = read("plugins/local-llm-delegator/LICENSE");
    assert!(
        license.contains(&mit) && license.contains(&apache),
        "the plugin's LICENSE holds both root texts"
    );
    for m in [&claude, &codex] {
        assert_eq!(m["license"], "MIT OR Apache-2.0");
    }
    let hosts: Vec<&str> = claude["network"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for kind in [
        local_llm_delegator::policy::ProviderKind::Huggingface,
        local_llm_delegator::policy::ProviderKind::Openrouter,
        local_llm_delegator::policy::ProviderKind::Deepseek,
        local_llm_delegator::policy::ProviderKind::Llamacpp,
    ] {
        let url = kind.defaults().base_url;
        let host = url
            .split("://")
            .nth(1)
            .unwrap()
            .split([':', '/'])
            .next()
            .unwrap();
        assert!(hosts.contains(&host), "network.hosts lacks {host} ({url})");
    }
    assert!(hosts.contains(&"localhost"));

    let market = json(".agents/plugins/marketplace.json");
    assert_eq!(market["name"], "local-llm-delegator");
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], "local-llm-delegator");
    assert_eq!(entry["source"]["source"], "local");
    let path = entry["source"]["path"].as_str().unwrap();
    assert!(path.starts_with("./") && repo().join(path).join(".codex-plugin/plugin.json").exists());
    assert!(entry["policy"]["installation"].is_string() && entry["category"].is_string());
    assert!(read("CHANGELOG.md").starts_with("# Changelog"));
}

#[test]
fn the_key_option_is_optional_and_codex_gets_names_only() {
    // Claude Code 2.1.332 says "1 userConfig option not yet set" after install for any option without a saved value,
    // whatever `required` says, and reads saved values only (a `default` would not silence it, and a non-empty one
    // would be sent as a key): the option stays optional, without a default.
    let claude = json("plugins/local-llm-delegator/.claude-plugin/plugin.json");
    let key = &claude["userConfig"]["provider_api_key"];
    assert_eq!(key["required"], false, "{key}");
    assert_eq!(key["sensitive"], true, "{key}");
    assert!(key.get("default").is_none(), "{key}");
    // Codex is given variable NAMES to forward (`env_vars`), never `env` entries with values: `codex mcp list` masks
    // every forwarded name as NAME=*****, set or not.
    let codex = json("plugins/local-llm-delegator/codex.mcp.json");
    let server = &codex["mcpServers"]["local-llm-worker"];
    assert!(server.get("env").is_none(), "{server}");
    assert!(
        server["env_vars"].as_array().is_some_and(|v| !v.is_empty()),
        "{server}"
    );
}
