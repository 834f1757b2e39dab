//! Shared helpers for the end-to-end tests: the scripted OpenAI-compatible endpoint (a fake for error paths and
//! determinism, see [`scripted`]), the worker's command line with the tests' environment (see [`cli`]), sample
//! workspaces, tree hashes.

pub mod cli;
pub mod scripted;

pub use cli::*;
pub use scripted::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use local_llm_delegator::patch::{FileChange, MODE_REGULAR};

pub const BIN: &str = env!("CARGO_BIN_EXE_local-llm-worker");

/// The JSON edit that sets `VALUE = 1` in `src/value.py` to `VALUE = 2`: the scripted model's usual answer.
pub const EDIT_JSON: &str =
    r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;

/// A temporary workspace with files and a policy pointing at `base_url`.
pub struct Ws {
    pub dir: tempfile::TempDir,
}

impl Ws {
    pub fn new(base_url: &str, extra_policy: &str) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let ws = Ws { dir };
        ws.write(
            "local-llm-worker.toml",
            &format!(
                "[provider]\nkind = \"llamacpp\"\nbase_url = \"{base_url}\"\n\n{extra_policy}"
            ),
        );
        ws
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn root_str(&self) -> String {
        self.root().to_string_lossy().into_owned()
    }

    /// Write `text` at `rel`. A policy file (`local-llm-worker.toml` at any depth) is also trusted, as it is now,
    /// in the tests' state folder ([`test_state`]) through the real `local-llm-worker trust`; a test that runs the
    /// worker with another state folder calls [`Ws::trust_in`].
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        if p.file_name().is_some_and(|n| n == "local-llm-worker.toml") {
            trust(&test_state(), p.parent().unwrap());
        }
    }

    /// Trust the workspace's policy, as it is now, in the state folder `state`.
    pub fn trust_in(&self, state: &Path) {
        trust(state, &self.root());
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }

    /// Every file under the workspace (symlinks as their target text) with its bytes and mode.
    pub fn snapshot(&self) -> BTreeMap<String, (Vec<u8>, u32)> {
        snapshot(self.dir.path())
    }
}

pub fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    (
                        std::fs::read_link(&p)
                            .unwrap()
                            .to_string_lossy()
                            .as_bytes()
                            .to_vec(),
                        0o120000,
                    ),
                );
            } else if m.is_dir() {
                out.insert(rel.clone() + "/", (Vec::new(), 0o040000));
                stack.push(p);
            } else {
                out.insert(rel, (std::fs::read(&p).unwrap(), m.permissions().mode()));
            }
        }
    }
    out
}

/// Run the CLI with `args` (and the tests' environment: see [`Cli`]).
pub fn cli(args: &[&str]) -> Output {
    Cli::new(args).run()
}

/// Trust the policy of the workspace at `root` (its `local-llm-worker.toml`), as it is now, in the state folder
/// `state`, with the real `local-llm-worker trust`. A policy the worker refuses (invalid, another user's) stays
/// untrusted: the test then sees that refusal.
pub fn trust(state: &Path, root: &Path) {
    let _ = Cli::new(["trust", "--workspace-root"])
        .arg(root)
        .state(state)
        .run();
}

/// The folder of this test process's worker state and ledger: `llw-tests/<pid>` under cargo's temporary folder for
/// integration tests (inside `target/`: never the user's state, never the system's /tmp). The folders of earlier
/// runs whose process is gone are removed the first time it is asked for, so at most the last run's stay.
fn test_home() -> &'static Path {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("llw-tests");
        for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let gone = e
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|pid| {
                    pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
                });
            if gone {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let dir = base.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// The state folder (journals, locks) of the tests' worker processes (never the user's, never in /tmp).
pub fn test_state() -> PathBuf {
    test_home().join("state")
}

/// The ledger file the tests' worker processes write (never the user's, never in /tmp).
pub fn test_ledger() -> PathBuf {
    test_home().join("ledger.jsonl")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `propose` with a standard low-complexity request on `files`, plus extra flags.
pub fn propose(ws: &Ws, files: &[&str], extra: &[&str]) -> Output {
    Cli::propose(ws.root()).files(files).args(extra).run()
}

/// An edit of the regular file `path` from `pre` (`None`: a new file) to `post`, to render a crafted patch with
/// `canonical::render`.
pub fn change(path: &str, pre: Option<&str>, post: &str) -> FileChange {
    FileChange {
        path: path.into(),
        pre: pre.map(|s| s.as_bytes().to_vec()),
        post: post.as_bytes().to_vec(),
        mode: MODE_REGULAR,
        hunks: vec![],
        op: Default::default(),
    }
}

/// The sha256 hex of bytes, independently of the crate (via the `sha256sum` tool).
pub fn sha256_of_file(p: &Path) -> String {
    let o = Command::new("sha256sum").arg(p).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

pub fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// The real local model server's URL (`LOCAL_LLM_TEST_URL`), or `None` with a note that `what` is skipped; a missing
/// server is a failure when `LLW_REQUIRE_REAL_MODEL=1` (set by `.ci/run`).
pub fn real_url(what: &str) -> Option<String> {
    match std::env::var("LOCAL_LLM_TEST_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var("LLW_REQUIRE_REAL_MODEL").as_deref() != Ok("1"),
                "LLW_REQUIRE_REAL_MODEL=1 but LOCAL_LLM_TEST_URL is not set: start scripts/local-model.sh"
            );
            eprintln!("LOCAL_LLM_TEST_URL is not set: skipping {what}");
            None
        }
    }
}
