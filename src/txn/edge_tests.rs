//! The transaction at its edges: someone else's edit during a restore, files that are not regular files, paths
//! longer than PATH_MAX, a created folder swapped for a symlink, planted journals, a state folder inside the
//! workspace. Each test is named after what it proves.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::apply;
use super::fsat;
use super::journal::Journal;
use super::lock::{WorkspaceLock, workspace_key};
use super::plan::plan_files;
use super::recover::{Outcome, Recovery, recover_all};
use super::tests::{apply_two, interrupted, journal_len, journal_of, limits, workspace_with};
use crate::digest::git_blob_id;
use crate::error::Error;
use crate::error::ValidationFailure;
use crate::patch::canonical;
use crate::patch::{FileChange, MODE_REGULAR};
use crate::workspace::Workspace;

fn new_file(path: &str, post: &str) -> FileChange {
    FileChange {
        path: path.into(),
        pre: None,
        post: post.as_bytes().to_vec(),
        mode: MODE_REGULAR,
        hunks: vec![],
        op: Default::default(),
    }
}

fn edit(path: &str, pre: &str, post: &str) -> FileChange {
    FileChange {
        pre: Some(pre.as_bytes().to_vec()),
        ..new_file(path, post)
    }
}

/// Run `f` on a thread; `None` when it has not returned within `secs` (it is then left where it blocked).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).ok()
}

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

fn is_fifo(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo())
}

/// Apply `patch` and "kill" the process right after every file was written and read back: the validation panics,
/// so nothing is restored and the journal stays, as after a kill.
fn apply_then_die(ws: &Workspace, state: &Path, patch: &[u8]) {
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = apply(
            ws,
            patch,
            limits(),
            Some(state),
            |_| -> std::result::Result<(), Box<ValidationFailure>> {
                panic!("killed while the checks ran")
            },
        );
    }));
    assert!(died.is_err());
}

fn said(done: &[Recovery]) -> String {
    done.iter().map(|r| format!("{r}\n")).collect()
}

// 1. A restore never overwrites someone else's edit.

#[test]
fn a_restore_keeps_a_file_someone_else_saved_while_the_checks_ran() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let err = apply_two(&ws, state.path(), |r: &Path| {
        // A slow check; meanwhile someone saves a.txt.
        fs::write(r.join("a.txt"), "someone else's\n").unwrap();
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert_eq!(
        fs::read(root.path().join("a.txt")).unwrap(),
        b"someone else's\n",
        "the restore put the pre-image back over a newer edit"
    );
    assert!(
        !root.path().join("new").exists(),
        "the created file and folder stay"
    );
    let text = err.to_string();
    assert!(matches!(err, Error::ValidationFailed(_)), "{text}");
    assert!(
        text.contains("a.txt") && text.contains("changed by someone else"),
        "{text}"
    );
    assert!(text.contains("removed: new/b.txt"), "{text}");
    assert!(!text.contains("RESTORING FAILED"), "{text}");
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

#[test]
fn recovery_leaves_a_file_that_holds_neither_image_alone_and_reports_it() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    // After the kill and before recovery, someone saves a.txt.
    fs::write(root.path().join("a.txt"), "someone else's\n").unwrap();
    let done = recover_all(state.path());
    assert_eq!(
        fs::read(root.path().join("a.txt")).unwrap(),
        b"someone else's\n",
        "recovery overwrote a newer edit"
    );
    let text = said(&done);
    assert!(
        text.contains("a.txt") && text.contains("changed by someone else"),
        "{text}"
    );
    assert_eq!(done[0].outcome, Outcome::Incomplete, "{text}");
    // The journal keeps the previous bytes for a person to decide.
    assert!(journal_len(&path) > 0);
}

#[test]
fn recovery_still_undoes_a_write_cut_off_in_the_middle() {
    // A kill between the in-place write and the truncation leaves the post-image followed by the tail of the
    // pre-image: that is the apply's own doing, not someone else's, and is undone.
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "aaaaaaaa\n")]);
    let patch = canonical::render(&[edit("a.txt", "aaaaaaaa\n", "BB\n")]);
    let _lock = WorkspaceLock::take(state.path(), ws.root()).unwrap();
    let mut journal = Journal::open(state.path(), ws.root()).unwrap();
    let planned = plan_files(&ws, &patch, limits()).unwrap();
    journal.write(ws.root(), &planned).unwrap();
    fs::write(root.path().join("a.txt"), "BB\naaaaa\n").unwrap();
    drop(_lock);
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Restored, "{}", said(&done));
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"aaaaaaaa\n");
}

// 2. Nothing blocks on a FIFO (or any file that is not a regular one).

#[test]
fn recovery_never_blocks_on_a_fifo_at_a_journaled_path() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    let target = root.path().join("a.txt");
    fs::remove_file(&target).unwrap();
    mkfifo(&target);
    let st = state.path().to_path_buf();
    let started = Instant::now();
    let done = within(10, move || recover_all(&st)).expect("recovery blocked on the FIFO");
    assert!(started.elapsed() < Duration::from_secs(5));
    let text = said(&done);
    assert!(text.contains("a.txt") && text.contains("FIFO"), "{text}");
    assert!(text.contains("problem:"), "{text}");
    assert!(is_fifo(&target), "the FIFO was replaced");
    assert!(journal_len(&path) > 0, "the journal must stay");
}

#[test]
fn a_fifo_in_the_state_folder_never_blocks_recovery() {
    // A FIFO where the journal or the lock of a workspace should be.
    for fifo_at in ["journal", "lock"] {
        let state = tempfile::tempdir().unwrap();
        let (_root, path, lock) = interrupted(state.path());
        drop(lock);
        let victim = match fifo_at {
            "journal" => path.clone(),
            _ => state
                .path()
                .join("locks")
                .join(path.file_name().unwrap())
                .with_extension("lock"),
        };
        fs::remove_file(&victim).unwrap();
        mkfifo(&victim);
        let st = state.path().to_path_buf();
        within(10, move || recover_all(&st))
            .unwrap_or_else(|| panic!("recovery blocked on a FIFO at the {fifo_at}"));
    }
}

#[test]
fn planning_never_blocks_on_a_fifo_swapped_in_after_the_check() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let patch = canonical::render(&[edit("a.txt", "a\n", "A\n")]);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, dir) = (stop.clone(), root.path().to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = fs::remove_file(dir.join("f.tmp"));
                mkfifo(&dir.join("f.tmp"));
                let _ = fs::rename(dir.join("f.tmp"), dir.join("a.txt"));
                fs::write(dir.join("r.tmp"), "a\n").unwrap();
                let _ = fs::rename(dir.join("r.tmp"), dir.join("a.txt"));
            }
        })
    };
    let ws = std::sync::Arc::new(ws);
    let mut outcomes = (0, 0);
    // The window between the check and the open is short: try for a few seconds.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        let (ws, patch) = (ws.clone(), patch.clone());
        let planned = within(5, move || {
            plan_files(&ws, &patch, limits()).map(|p| p.len())
        });
        match planned {
            None => {
                stop.store(true, Ordering::Relaxed);
                panic!("planning blocked on a FIFO swapped in after the regular-file check");
            }
            Some(Ok(_)) => outcomes.0 += 1,
            Some(Err(_)) => outcomes.1 += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    eprintln!("planned {}, refused {}", outcomes.0, outcomes.1);
}

// 3. All or nothing for paths longer than PATH_MAX, in time linear in their depth.

/// A new file `depth` folders deep (each folder one letter).
fn deep_rel(depth: usize, name: &str) -> String {
    format!("{}{name}", "a/".repeat(depth))
}

fn read_deep(root: &Path, rel: &str) -> Option<Vec<u8>> {
    let (dir, name) = fsat::open_parent(root, rel).ok()?;
    dir.read_file(&name).ok().flatten()
}

#[test]
fn a_new_file_whose_path_is_longer_than_path_max_lands_or_leaves_nothing() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    // Under the 4,096 bytes a path inside the workspace may have; with the root in front, over PATH_MAX already
    // for the folders the apply creates (the undo and the flush must reach them through handles).
    let rel = deep_rel(2045, "f");
    assert!(rel.len() < 4096);
    assert!(
        ws.root()
            .join(&rel)
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .as_os_str()
            .len()
            > 4096
    );
    let patch = canonical::render(&[new_file(&rel, "deep\n")]);
    let err = apply(&ws, &patch, limits(), Some(state.path()), |_| {
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert!(matches!(err, Error::ValidationFailed(_)), "{err}");
    assert!(!root.path().join("a").exists(), "folders left behind");
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
    apply(&ws, &patch, limits(), Some(state.path()), |_| {
        Ok::<(), Box<ValidationFailure>>(())
    })
    .unwrap_or_else(|e| panic!("a passing apply of a deep file failed: {e}"));
    assert_eq!(read_deep(ws.root(), &rel).as_deref(), Some(&b"deep\n"[..]));
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

#[test]
fn recovery_removes_a_deep_new_file_and_every_folder_it_made() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let rel = deep_rel(2040, "f.txt");
    let patch = canonical::render(&[new_file(&rel, "deep\n"), edit("a.txt", "a\n", "A\n")]);
    apply_then_die(&ws, state.path(), &patch);
    assert_eq!(read_deep(ws.root(), &rel).as_deref(), Some(&b"deep\n"[..]));
    // Killed after the deep file was written and before a.txt was.
    fs::write(root.path().join("a.txt"), "a\n").unwrap();
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Restored, "{}", said(&done));
    assert!(!root.path().join("a").exists(), "folders left behind");
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

#[test]
fn recovery_completes_and_flushes_a_deep_new_file() {
    let state = tempfile::tempdir().unwrap();
    let (_root, ws) = workspace_with(&[]);
    let rel = deep_rel(2040, "f.txt");
    apply_then_die(
        &ws,
        state.path(),
        &canonical::render(&[new_file(&rel, "deep\n")]),
    );
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Completed, "{}", said(&done));
    assert_eq!(read_deep(ws.root(), &rel).as_deref(), Some(&b"deep\n"[..]));
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

/// Where the growth is measured: a memory file system when there is one (`/dev/shm`), so that what is measured is
/// the worker's work and not the disk's latency (the same folders on a busy disk vary tenfold from run to run).
fn scratch_base() -> PathBuf {
    let shm = Path::new("/dev/shm");
    match tempfile::tempdir_in(shm) {
        Ok(_) => shm.to_path_buf(),
        Err(_) => std::env::temp_dir(),
    }
}

/// The fastest of three applies of one new file `depth` folders deep, each into a fresh workspace under `base`.
fn time_deep_apply(base: &Path, state: &Path, depth: usize) -> Duration {
    (0..3)
        .map(|_| {
            let root = tempfile::tempdir_in(base).unwrap();
            let ws = Workspace::new(
                root.path().canonicalize().unwrap(),
                &crate::policy::Paths::default(),
                None,
            )
            .unwrap();
            let patch = canonical::render(&[new_file(&deep_rel(depth, "f.txt"), "x\n")]);
            let t = Instant::now();
            apply(&ws, &patch, limits(), Some(state), |_| {
                Ok::<(), Box<ValidationFailure>>(())
            })
            .unwrap();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

#[test]
#[ignore = "a timing measurement, noisy under load: cargo test --lib -- --ignored --nocapture applying_one_deep"]
fn applying_one_deep_new_file_takes_time_linear_in_its_depth() {
    let place = scratch_base();
    let state = tempfile::tempdir_in(&place).unwrap();
    // What every apply costs whatever the depth (the journal and its flushes): the growth is what comes on top.
    let base = time_deep_apply(&place, state.path(), 1);
    let rows: Vec<(usize, Duration)> = [250usize, 500, 1000, 2000]
        .into_iter()
        .map(|d| (d, time_deep_apply(&place, state.path(), d)))
        .collect();
    eprintln!("in {}", place.display());
    let extra = |t: Duration| t.saturating_sub(base).as_secs_f64().max(1e-4);
    eprintln!("depth     1: {:>8.1} ms", base.as_secs_f64() * 1e3);
    for (d, t) in &rows {
        eprintln!(
            "depth {d:>5}: {:>8.1} ms ({:.3} ms per folder above depth 1)",
            t.as_secs_f64() * 1e3,
            extra(*t) * 1e3 / *d as f64
        );
    }
    let ((d0, t0), (d1, t1)) = (rows[0], rows[rows.len() - 1]);
    let exponent = (extra(t1) / extra(t0)).ln() / (d1 as f64 / d0 as f64).ln();
    eprintln!("growth exponent {exponent:.2} from depth {d0} to {d1} (1 = linear, 2 = quadratic)");
    assert!(
        exponent < 1.5,
        "applying a deep file grows like depth^{exponent:.2}"
    );
}

// 4. A created folder swapped for a symlink before the undo.

#[test]
fn a_created_folder_swapped_for_a_symlink_gets_one_honest_message() {
    let state = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir(outside.path().join("deep")).unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let patch = canonical::render(&[new_file("new/deep/b.txt", "B\n")]);
    let swap_to = outside.path().to_path_buf();
    let err = apply(&ws, &patch, limits(), Some(state.path()), |r: &Path| {
        fs::rename(r.join("new"), r.join("new-moved")).unwrap();
        std::os::unix::fs::symlink(&swap_to, r.join("new")).unwrap();
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert!(
        outside.path().join("deep").is_dir(),
        "a folder outside was removed"
    );
    assert!(
        fs::read_dir(outside.path().join("deep"))
            .unwrap()
            .next()
            .is_none()
    );
    let text = err.to_string();
    assert!(text.contains("RESTORING FAILED"), "{text}");
    assert!(
        !text.contains("previous bytes restored"),
        "the message says both that the bytes were restored and that restoring failed: {text}"
    );
    assert!(text.contains("new/deep/b.txt"), "{text}");
    assert!(journal_len(&journal_of(state.path(), &ws)) > 0);
    // The moved folder keeps what the apply wrote; nothing outside changed.
    assert!(root.path().join("new-moved/deep/b.txt").exists());
}

// 5. Planted journals and a state folder inside the workspace.

/// One entry of a planted journal.
struct Entry<'a> {
    rel: &'a str,
    pre: Option<&'a [u8]>,
    post_id: String,
    mode: u32,
}

/// Write a version 2 journal for `workspace` into `state` by hand, as an attacker with write access to the state
/// folder could.
fn plant(state: &Path, workspace: &Path, files: &[Entry], created_dirs: &[PathBuf]) -> PathBuf {
    let docs: Vec<serde_json::Value> = files
        .iter()
        .map(|f| {
            serde_json::json!({
                "rel": f.rel, "existed": f.pre.is_some(), "pre_id": f.pre.map(git_blob_id),
                "post_id": f.post_id, "mode": f.mode, "len": f.pre.map_or(0, |p| p.len()),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "version": 2, "workspace": workspace, "files": docs, "created_dirs": created_dirs,
    });
    let mut bytes = doc.to_string().into_bytes();
    bytes.push(b'\n');
    for f in files {
        bytes.extend_from_slice(f.pre.unwrap_or_default());
    }
    let dir = state.join("journals");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.journal", workspace_key(workspace)));
    fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_planted_journal_is_refused_whole_and_kept() {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir(outside.path().join("victim")).unwrap();
    let (root, ws) = workspace_with(&[("README.md", "readme\n"), (".git/hooks/keep", "")]);
    let hook: &[u8] = b"#!/bin/sh\necho pwned\n";
    let journal = plant(
        state.path(),
        ws.root(),
        &[
            Entry {
                rel: ".git/hooks/pre-commit",
                pre: Some(hook),
                post_id: git_blob_id(b"whatever"),
                mode: 0o104755,
            },
            Entry {
                rel: "README.md",
                pre: None,
                post_id: git_blob_id(b"readme\n"),
                mode: 0o100644,
            },
        ],
        &[outside.path().join("victim")],
    );
    let planted = fs::read(&journal).unwrap();
    let done = recover_all(state.path());
    let hook_path = root.path().join(".git/hooks/pre-commit");
    assert!(
        !hook_path.exists(),
        "recovery wrote a git hook with mode {:o}",
        fs::metadata(&hook_path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    );
    assert_eq!(
        fs::read(root.path().join("README.md")).unwrap(),
        b"readme\n"
    );
    assert!(outside.path().join("victim").is_dir());
    assert_eq!(
        fs::read(&journal).unwrap(),
        planted,
        "the journal must be kept"
    );
    let text = said(&done);
    assert_eq!(done[0].outcome, Outcome::Incomplete, "{text}");
    assert!(
        text.contains(".git/hooks/pre-commit") && text.contains("refused"),
        "{text}"
    );
}

#[test]
fn every_kind_of_bad_journal_entry_refuses_the_whole_journal() {
    let (root, ws) = workspace_with(&[("a.txt", "A\n"), ("sub/keep", "")]);
    let ok = |rel: &'static str| Entry {
        rel,
        pre: Some(b"x\n"),
        post_id: git_blob_id(b"x\n"),
        mode: 0o100644,
    };
    let entry = |rel: &'static str, mode: u32| Entry { mode, ..ok(rel) };
    let outside = tempfile::tempdir().unwrap();
    let bad: Vec<(&str, Entry, Vec<PathBuf>)> = vec![
        ("absolute", entry("/etc/x", 0o100644), vec![]),
        ("dot-dot", entry("../x", 0o100644), vec![]),
        ("inner dot-dot", entry("sub/../../x", 0o100644), vec![]),
        ("empty component", entry("sub//x", 0o100644), vec![]),
        ("git", entry(".git/config", 0o100644), vec![]),
        (
            "git in another case",
            entry(".GIT/hooks/x", 0o100644),
            vec![],
        ),
        ("nested git", entry("sub/.Git/x", 0o100644), vec![]),
        (
            "policy file",
            entry("local-llm-worker.toml", 0o100644),
            vec![],
        ),
        (
            "nested policy file in another case",
            entry("sub/LOCAL-LLM-WORKER.TOML", 0o100644),
            vec![],
        ),
        ("setuid", entry("b.txt", 0o104755), vec![]),
        ("setgid", entry("b.txt", 0o102755), vec![]),
        ("world-writable", entry("b.txt", 0o100777), vec![]),
        ("symlink mode", entry("b.txt", 0o120777), vec![]),
        (
            "folder outside",
            ok("b.txt"),
            vec![outside.path().to_path_buf()],
        ),
        ("folder in git", ok("b.txt"), vec![ws.root().join(".git")]),
        (
            "folder beside no new file",
            ok("b.txt"),
            vec![ws.root().join("sub")],
        ),
        (
            "folder through dot-dot",
            ok("b.txt"),
            vec![ws.root().join("sub/..")],
        ),
    ];
    for (what, entry, dirs) in bad {
        let state = tempfile::tempdir().unwrap();
        // A good entry first: a.txt holds its post-image, so recovery would write its pre-image back.
        let journal = plant(
            state.path(),
            ws.root(),
            &[
                Entry {
                    rel: "a.txt",
                    pre: Some(b"a\n"),
                    post_id: git_blob_id(b"A\n"),
                    mode: 0o100644,
                },
                entry,
            ],
            &dirs,
        );
        let planted = fs::read(&journal).unwrap();
        let done = recover_all(state.path());
        assert_eq!(
            fs::read(root.path().join("a.txt")).unwrap(),
            b"A\n",
            "{what}: a journal with a bad entry was acted on"
        );
        assert!(root.path().join("sub").is_dir(), "{what}");
        assert_eq!(
            fs::read(&journal).unwrap(),
            planted,
            "{what}: the journal must be kept"
        );
        let text = said(&done);
        assert!(text.contains("refused"), "{what}: {text}");
    }
}

#[test]
fn a_journal_is_acted_on_only_where_the_workspaces_policy_allows_a_patch() {
    let a_txt = |rel: &'static str| Entry {
        rel,
        pre: Some(b"a\n"),
        post_id: git_blob_id(b"A\n"),
        mode: 0o100644,
    };
    for (what, policy, rel) in [
        ("no policy file", None, "a.txt"),
        (
            "a path outside [paths] allowed",
            Some("[paths]\nallowed = [\"src/**\"]\n"),
            "a.txt",
        ),
        ("a secret-looking file", Some(""), ".env"),
    ] {
        let (root, ws) = workspace_with(&[("a.txt", "A\n"), (".env", "A\n")]);
        let policy_file = root.path().join("local-llm-worker.toml");
        match policy {
            None => fs::remove_file(&policy_file).unwrap(),
            Some(extra) => fs::write(
                &policy_file,
                format!(
                    "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:1/v1\"\n{extra}"
                ),
            )
            .unwrap(),
        }
        let state = tempfile::tempdir().unwrap();
        let journal = plant(state.path(), ws.root(), &[a_txt(rel)], &[]);
        let done = recover_all(state.path());
        assert_eq!(
            fs::read(root.path().join(rel)).unwrap(),
            b"A\n",
            "{what}: acted on"
        );
        assert!(journal_len(&journal) > 0, "{what}");
        assert!(said(&done).contains("refused"), "{what}: {}", said(&done));
    }
}

#[test]
fn a_journal_whose_workspace_holds_the_state_folder_is_refused() {
    let (root, ws) = workspace_with(&[("a.txt", "A\n")]);
    let state = ws.root().join(".state");
    fs::create_dir(&state).unwrap();
    let journal = plant(
        &state,
        ws.root(),
        &[Entry {
            rel: "a.txt",
            pre: Some(b"a\n"),
            post_id: git_blob_id(b"A\n"),
            mode: 0o100644,
        }],
        &[],
    );
    let done = recover_all(&state);
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
    assert!(journal_len(&journal) > 0);
    assert!(said(&done).contains("state folder"), "{}", said(&done));
}

#[test]
fn an_apply_refuses_a_state_folder_inside_the_workspace() {
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let state = ws.root().join(".local/state/local-llm-delegator");
    let before: Vec<_> = fs::read_dir(root.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let err = apply_two(&ws, &state, |_| Ok::<(), Box<ValidationFailure>>(())).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&state.display().to_string()), "{text}");
    assert!(text.contains(&ws.root().display().to_string()), "{text}");
    assert!(text.contains("LOCAL_LLM_STATE_DIR"), "{text}");
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
    let after: Vec<_> = fs::read_dir(root.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(before, after, "the refusal changed the workspace");
}
