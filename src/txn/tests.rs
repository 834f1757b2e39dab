//! The transaction's own tests: handles, applies, restores, journals and recovery.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::apply::{apply_planned, put_back};
use super::fsat;
use super::journal::Journal;
use super::lock::{WorkspaceLock, workspace_key};
use super::plan::plan_files;
use super::recover::{Outcome, recover_all};
use super::{Applied, Durability, PatchLimits, apply};
use crate::digest::git_blob_id;
use crate::error::ValidationFailure;
use crate::error::{Error, Result};
use crate::patch::canonical;
use crate::patch::plan::parse_within;
use crate::workspace::Workspace;

#[test]
fn folder_handles_never_follow_a_symlink_on_the_way() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir(root.path().join("real")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("f"), root.path().join("real/f")).unwrap();
    let err = fsat::open_parent(root.path(), "link/f").err().unwrap();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    let (dir, name) = fsat::open_parent(root.path(), "real/f").unwrap();
    assert!(
        dir.read_file(&name)
            .unwrap_err()
            .to_string()
            .contains("is a symlink")
    );
    // Writing beside it is fine; the symlink itself is never written through.
    let (tmp, _) = dir.write_temp(b"x", 0o644).unwrap();
    dir.rename(&tmp, "g").unwrap();
    assert_eq!(fs::read(root.path().join("real/g")).unwrap(), b"x");
    assert!(
        fs::read_dir(outside.path()).unwrap().next().is_none(),
        "nothing was written outside"
    );
}

#[test]
fn put_back_refuses_a_symlinked_parent() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("src")).unwrap();
    let err = put_back(root.path(), "src/a.py", Some(b"x"), None, 0o100644).unwrap_err();
    assert!(err.to_string().contains("is a symlink"), "{err}");
    assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
}

/// A workspace holding `files` and a policy file (recovery acts only in a workspace with a policy).
pub(super) fn workspace_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let root = tempfile::tempdir().unwrap();
    fs::write(
        root.path().join("local-llm-worker.toml"),
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
    )
    .unwrap();
    for (rel, text) in files {
        let p = root.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    let ws = Workspace::new(
        root.path().canonicalize().unwrap(),
        &crate::policy::Paths::default(),
        None,
    )
    .unwrap();
    (root, ws)
}

pub(super) fn limits() -> PatchLimits {
    PatchLimits {
        max_patch_bytes: 1 << 20,
        max_files: 10,
        max_hunks: 100,
        allow_delete: true,
        allow_move: true,
    }
}

/// Apply [`two_file_patch`] to `ws` with the state folder `state`.
pub(super) fn apply_two<T>(
    ws: &Workspace,
    state: &Path,
    validate: impl FnOnce(&Path) -> std::result::Result<T, Box<ValidationFailure>>,
) -> Result<Applied<T>> {
    apply(ws, &two_file_patch(), limits(), Some(state), validate)
}

pub(super) fn two_file_patch() -> Vec<u8> {
    use crate::patch::{FileChange, MODE_REGULAR};
    let change = |path: &str, pre: Option<&str>, post: &str| FileChange {
        path: path.into(),
        pre: pre.map(|s| s.as_bytes().to_vec()),
        post: post.as_bytes().to_vec(),
        mode: MODE_REGULAR,
        hunks: vec![],
        op: Default::default(),
    };
    canonical::render(&[
        change("a.txt", Some("a\n"), "A\n"),
        change("new/b.txt", None, "B\n"),
    ])
}

/// Simulate a kill right after the journal is flushed and the first file is written: the journal is kept and
/// one target holds its post-image. Returns the workspace, its journal's path and the lock the "killed" apply
/// held (drop it to end that apply).
pub(super) fn interrupted(state: &Path) -> (tempfile::TempDir, PathBuf, WorkspaceLock) {
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let lock = WorkspaceLock::take(state, ws.root()).unwrap();
    let mut journal = Journal::open(state, ws.root()).unwrap();
    let planned = plan_files(&ws, &two_file_patch(), limits()).unwrap();
    journal.write(ws.root(), &planned).unwrap();
    fs::write(root.path().join("a.txt"), "A\n").unwrap();
    let path = journal.path.clone();
    (root, path, lock)
}

pub(super) fn journal_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

#[test]
fn recovery_restores_from_the_journal_and_empties_it() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    // The process died: its lock is gone with it.
    drop(lock);
    let done = recover_all(state.path());
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].outcome, Outcome::Restored, "{:?}", done[0].problems);
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
    assert!(!root.path().join("new").exists());
    assert_eq!(journal_len(&path), 0);
    assert!(recover_all(state.path()).is_empty());
}

#[test]
fn recovery_leaves_the_journal_of_a_live_apply_alone() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    assert!(recover_all(state.path()).is_empty());
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
    assert!(journal_len(&path) > 0);
    drop(lock);
    assert_eq!(recover_all(state.path())[0].outcome, Outcome::Restored);
}

#[test]
fn an_apply_refuses_while_an_interrupted_one_is_not_recovered() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    let ws = Workspace::new(
        root.path().canonicalize().unwrap(),
        &crate::policy::Paths::default(),
        None,
    )
    .unwrap();
    let before = fs::read(root.path().join("a.txt")).unwrap();
    let err = apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap_err();
    assert!(
        err.to_string().contains("local-llm-worker recover"),
        "{err}"
    );
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), before);
    assert!(journal_len(&path) > 0);
}

#[test]
fn a_journal_cut_off_while_written_is_dropped_without_touching_the_workspace() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert!(recover_all(state.path()).is_empty());
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
    assert_eq!(journal_len(&path), 0);
}

#[test]
fn a_damaged_copy_in_the_journal_is_never_written_back() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    let bytes = damage_last_copy(&path);
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Incomplete);
    assert!(
        done[0].problems[0].contains("damaged"),
        "{:?}",
        done[0].problems
    );
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
    // Kept for a person to look at.
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_finished_apply_leaves_an_empty_journal_and_the_inode_in_place() {
    use std::os::unix::fs::MetadataExt;
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let target = root.path().join("a.txt");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let ino = fs::metadata(&target).unwrap().ino();
    let applied = apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap();
    assert_eq!(applied.files, ["a.txt", "new/b.txt"]);
    assert_eq!(fs::read(&target).unwrap(), b"A\n");
    assert_eq!(fs::read(root.path().join("new/b.txt")).unwrap(), b"B\n");
    let meta = fs::metadata(&target).unwrap();
    assert_eq!((meta.ino(), meta.mode() & 0o777), (ino, 0o640));
    let journal = state
        .path()
        .join(format!("journals/{}.journal", workspace_key(ws.root())));
    assert_eq!(journal_len(&journal), 0);
    assert!(recover_all(state.path()).is_empty());
}

#[test]
fn a_failed_validation_restores_in_place_and_removes_what_it_created() {
    use std::os::unix::fs::MetadataExt;
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let target = root.path().join("a.txt");
    let ino = fs::metadata(&target).unwrap().ino();
    let err = apply_two(&ws, state.path(), |root: &Path| {
        assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"A\n");
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert!(matches!(err, Error::ValidationFailed(_)), "{err}");
    assert_eq!(fs::read(&target).unwrap(), b"a\n");
    assert_eq!(fs::metadata(&target).unwrap().ino(), ino);
    assert!(!root.path().join("new").exists());
    let journal = state
        .path()
        .join(format!("journals/{}.journal", workspace_key(ws.root())));
    assert_eq!(journal_len(&journal), 0);
}

#[test]
fn a_created_folder_swapped_for_a_symlink_is_not_followed_by_the_undo() {
    use crate::patch::{FileChange, MODE_REGULAR};
    let state = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir(outside.path().join("deep")).unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let patch = canonical::render(&[FileChange {
        path: "new/deep/b.txt".into(),
        pre: None,
        post: b"B\n".to_vec(),
        mode: MODE_REGULAR,
        hunks: vec![],
        op: Default::default(),
    }]);
    let swap_to = outside.path().to_path_buf();
    let err = apply(&ws, &patch, limits(), Some(state.path()), |r: &Path| {
        // While the check runs, someone swaps the created folder for a symlink to a folder outside.
        fs::rename(r.join("new"), r.join("new-moved")).unwrap();
        std::os::unix::fs::symlink(&swap_to, r.join("new")).unwrap();
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert!(
        outside.path().join("deep").is_dir(),
        "the undo followed the symlink and removed a folder outside the workspace"
    );
    let text = err.to_string();
    assert!(text.contains("RESTORING FAILED"), "{text}");
    assert!(
        fs::symlink_metadata(root.path().join("new"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

pub(super) fn journal_of(state: &Path, ws: &Workspace) -> PathBuf {
    state.join(format!("journals/{}.journal", workspace_key(ws.root())))
}

/// A version 1 journal folder (as older workers wrote them) recording an apply of `a\n` -> `A\n` to a.txt.
fn write_v1_journal(state: &Path, workspace: &Path) -> PathBuf {
    let dir = state.join("journals/apply-old");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("pre-0"), "a\n").unwrap();
    let doc = serde_json::json!({
        "version": 1,
        "workspace": workspace,
        "files": [{"rel": "a.txt", "existed": true, "pre_id": git_blob_id(b"a\n"),
                   "post_id": git_blob_id(b"A\n"), "mode": 0o100644}],
        "created_dirs": [],
    });
    fs::write(dir.join("journal.json"), doc.to_string()).unwrap();
    dir
}

/// Change a byte of the first pre-image copy in a journal file (right after its document's line); returns the new
/// bytes.
fn damage_last_copy(path: &Path) -> Vec<u8> {
    let mut bytes = fs::read(path).unwrap();
    let first = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    bytes[first] = b'Z';
    fs::write(path, &bytes).unwrap();
    bytes
}

#[test]
fn a_restore_that_fails_keeps_the_journal_for_recover() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    let err = apply_two(&ws, state.path(), |root: &Path| {
        // Something replaces the file by a folder while the checks run: it cannot be put back.
        fs::remove_file(root.join("a.txt")).unwrap();
        fs::create_dir(root.join("a.txt")).unwrap();
        Err::<(), Box<ValidationFailure>>(ValidationFailure::unfinished("the check failed").into())
    })
    .unwrap_err();
    assert!(err.to_string().contains("RESTORING FAILED"), "{err}");
    let journal = journal_of(state.path(), &ws);
    assert!(journal_len(&journal) > 0, "the only copy of a.txt is gone");
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Incomplete);
    fs::remove_dir(root.path().join("a.txt")).unwrap();
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Restored, "{:?}", done[0].problems);
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
    assert_eq!(journal_len(&journal), 0);
}

#[test]
fn the_journal_is_readable_by_its_owner_only() {
    let state = tempfile::tempdir().unwrap();
    let (_root, ws) = workspace_with(&[("a.txt", "a\n")]);
    apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap();
    let mode = fs::metadata(journal_of(state.path(), &ws))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_version_1_journal_of_the_workspace_blocks_applies_until_recovered() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    write_v1_journal(state.path(), ws.root());
    let err = apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap_err();
    assert!(err.to_string().contains("apply-old"), "{err}");
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
    assert_eq!(recover_all(state.path())[0].outcome, Outcome::Restored);
    apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap();
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"A\n");
}

#[test]
fn a_file_to_create_that_appears_stops_the_apply_before_any_write() {
    let (root, ws) = workspace_with(&[("a.txt", "a\n"), ("new/keep", "")]);
    let planned = plan_files(&ws, &two_file_patch(), limits()).unwrap();
    let before = fs::metadata(root.path().join("a.txt"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(root.path().join("new/b.txt"), "someone else's\n").unwrap();
    let err = match apply_planned(&ws, &planned, Durability::Throwaway, |_| {
        Ok::<(), Box<ValidationFailure>>(())
    }) {
        Err(f) => f.error,
        Ok(_) => panic!("applied over a file that appeared"),
    };
    assert!(matches!(err, Error::Stale(_)), "{err}");
    let after = fs::metadata(root.path().join("a.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after, "a.txt was written before the check");
    assert_eq!(
        fs::read(root.path().join("new/b.txt")).unwrap(),
        b"someone else's\n"
    );
}

#[test]
fn a_file_with_another_hard_link_is_refused_before_anything_is_written() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = workspace_with(&[("a.txt", "a\n")]);
    fs::hard_link(root.path().join("a.txt"), root.path().join("linked.txt")).unwrap();
    let err = apply_two(&ws, state.path(), |_| Ok::<(), Box<ValidationFailure>>(())).unwrap_err();
    assert!(err.to_string().contains("2 hard links"), "{err}");
    assert_eq!(fs::read(root.path().join("linked.txt")).unwrap(), b"a\n");
    assert!(!root.path().join("new").exists());
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

#[test]
fn a_damaged_copy_of_an_untouched_file_does_not_block_recovery() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted(state.path());
    drop(lock);
    // a.txt is back to its pre-image by other means; its copy in the journal is damaged.
    fs::write(root.path().join("a.txt"), "a\n").unwrap();
    damage_last_copy(&path);
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Restored, "{:?}", done[0].problems);
    assert_eq!(journal_len(&path), 0);
}

#[test]
fn recovery_still_reads_a_version_1_journal_folder() {
    let state = tempfile::tempdir().unwrap();
    let (root, _) = workspace_with(&[("a.txt", "A\n")]);
    let workspace = root.path().canonicalize().unwrap();
    let dir = write_v1_journal(state.path(), &workspace);
    let done = recover_all(state.path());
    assert_eq!(
        done[0].outcome,
        Outcome::Completed,
        "{:?}",
        done[0].problems
    );
    assert!(!dir.exists());
    fs::write(root.path().join("a.txt"), "half\n").unwrap();
    write_v1_journal(state.path(), &workspace);
    let done = recover_all(state.path());
    assert_eq!(done[0].outcome, Outcome::Restored, "{:?}", done[0].problems);
    assert_eq!(fs::read(root.path().join("a.txt")).unwrap(), b"a\n");
}

/// A patch that deletes `gone.txt` (holding `g\n`) and moves `b.txt` (holding `b\n`) to `dst/b.txt` as `B\n`.
fn delete_and_move_patch() -> Vec<u8> {
    use crate::patch::{ChangeOp, FileChange, MODE_REGULAR};
    canonical::render(&[
        FileChange {
            path: "gone.txt".into(),
            pre: Some(b"g\n".to_vec()),
            post: Vec::new(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: ChangeOp::Delete,
        },
        FileChange {
            path: "dst/b.txt".into(),
            pre: Some(b"b\n".to_vec()),
            post: b"B\n".to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: ChangeOp::MoveFrom("b.txt".into()),
        },
    ])
}

/// A workspace with the files [`delete_and_move_patch`] expects, `gone.txt` readable by its owner only.
fn delete_and_move_workspace() -> (tempfile::TempDir, Workspace) {
    let (root, ws) = workspace_with(&[("gone.txt", "g\n"), ("b.txt", "b\n")]);
    fs::set_permissions(
        root.path().join("gone.txt"),
        fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    (root, ws)
}

fn mode_of(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_deletion_and_a_move_are_applied_and_git_apply_accepts_their_patch() {
    let patch = delete_and_move_patch();
    // Real git accepts the canonical sections of a deletion and a rename with changes.
    let repo = tempfile::tempdir().unwrap();
    fs::write(repo.path().join("gone.txt"), "g\n").unwrap();
    fs::write(repo.path().join("b.txt"), "b\n").unwrap();
    fs::write(repo.path().join("p.diff"), &patch).unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap()
    };
    assert!(git(&["init", "-q"]).status.success());
    let check = git(&["apply", "--check", "p.diff"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = delete_and_move_workspace();
    let done = apply(&ws, &patch, limits(), Some(state.path()), |_: &Path| {
        Ok::<(), Box<ValidationFailure>>(())
    })
    .unwrap();
    assert_eq!(done.files, ["b.txt", "dst/b.txt", "gone.txt"]);
    assert!(!root.path().join("gone.txt").exists());
    assert!(!root.path().join("b.txt").exists());
    assert_eq!(fs::read(root.path().join("dst/b.txt")).unwrap(), b"B\n");
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

#[test]
fn a_failed_validation_brings_a_deleted_file_back_byte_for_byte_with_its_mode_and_undoes_a_move() {
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = delete_and_move_workspace();
    let err = apply(
        &ws,
        &delete_and_move_patch(),
        limits(),
        Some(state.path()),
        |root: &Path| {
            assert!(!root.join("gone.txt").exists() && !root.join("b.txt").exists());
            Err::<(), Box<ValidationFailure>>(
                ValidationFailure::unfinished("the check failed").into(),
            )
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::ValidationFailed(_)), "{err}");
    assert_eq!(fs::read(root.path().join("gone.txt")).unwrap(), b"g\n");
    assert_eq!(mode_of(&root.path().join("gone.txt")), 0o600);
    assert_eq!(fs::read(root.path().join("b.txt")).unwrap(), b"b\n");
    assert!(
        !root.path().join("dst").exists(),
        "the folder made for the move is removed"
    );
    assert_eq!(journal_len(&journal_of(state.path(), &ws)), 0);
}

/// Plan [`delete_and_move_patch`] and write its journal, as an apply does before its first byte; returns the
/// workspace, the journal's path and the "killed" apply's lock.
fn interrupted_delete_and_move(state: &Path) -> (tempfile::TempDir, PathBuf, WorkspaceLock) {
    let (root, ws) = delete_and_move_workspace();
    let lock = WorkspaceLock::take(state, ws.root()).unwrap();
    let mut journal = Journal::open(state, ws.root()).unwrap();
    let planned = plan_files(&ws, &delete_and_move_patch(), limits()).unwrap();
    journal.write(ws.root(), &planned).unwrap();
    let path = journal.path.clone();
    (root, path, lock)
}

#[test]
fn recovery_after_a_kill_brings_back_a_deleted_file_with_its_mode_and_undoes_a_move() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted_delete_and_move(state.path());
    // Killed with the deletion and the move's source removed and its destination's folder made, not written.
    fs::remove_file(root.path().join("b.txt")).unwrap();
    fs::create_dir(root.path().join("dst")).unwrap();
    fs::remove_file(root.path().join("gone.txt")).unwrap();
    drop(lock);
    let done = recover_all(state.path());
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].outcome, Outcome::Restored, "{:?}", done[0].problems);
    assert_eq!(fs::read(root.path().join("gone.txt")).unwrap(), b"g\n");
    assert_eq!(mode_of(&root.path().join("gone.txt")), 0o600);
    assert_eq!(fs::read(root.path().join("b.txt")).unwrap(), b"b\n");
    assert!(!root.path().join("dst").exists());
    assert_eq!(journal_len(&path), 0);
}

#[test]
fn recovery_after_a_kill_keeps_a_file_someone_put_where_a_deleted_one_was() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted_delete_and_move(state.path());
    fs::write(root.path().join("gone.txt"), "someone else's\n").unwrap();
    drop(lock);
    let done = recover_all(state.path());
    assert_eq!(
        done[0].outcome,
        Outcome::Incomplete,
        "{:?}",
        done[0].problems
    );
    assert_eq!(
        fs::read(root.path().join("gone.txt")).unwrap(),
        b"someone else's\n"
    );
    assert!(
        journal_len(&path) > 0,
        "the journal keeps the previous bytes"
    );
}

#[test]
fn recovery_after_a_kill_once_everything_was_done_completes_the_deletion_and_the_move() {
    let state = tempfile::tempdir().unwrap();
    let (root, path, lock) = interrupted_delete_and_move(state.path());
    fs::remove_file(root.path().join("gone.txt")).unwrap();
    fs::remove_file(root.path().join("b.txt")).unwrap();
    fs::create_dir(root.path().join("dst")).unwrap();
    fs::write(root.path().join("dst/b.txt"), "B\n").unwrap();
    drop(lock);
    let done = recover_all(state.path());
    assert_eq!(
        done[0].outcome,
        Outcome::Completed,
        "{:?}",
        done[0].problems
    );
    assert!(!root.path().join("gone.txt").exists() && !root.path().join("b.txt").exists());
    assert_eq!(fs::read(root.path().join("dst/b.txt")).unwrap(), b"B\n");
    assert_eq!(journal_len(&path), 0);
}

#[test]
fn deletions_and_moves_are_refused_unless_the_policy_allows_them() {
    let patch = delete_and_move_patch();
    let strict = PatchLimits {
        allow_delete: false,
        allow_move: false,
        ..limits()
    };
    let err = parse_within(&patch, strict).unwrap_err();
    assert!(matches!(err, Error::Scope(_)), "{err}");
    assert!(
        err.to_string().contains("set [paths] allow_move = true"),
        "{err}"
    );
    let err = parse_within(
        &patch,
        PatchLimits {
            allow_move: true,
            ..strict
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("the patch deletes gone.txt"),
        "{err}"
    );
    assert!(
        err.to_string().contains("set [paths] allow_delete = true"),
        "{err}"
    );
    assert!(parse_within(&patch, limits()).is_ok());
    // Nothing is written when the policy refuses.
    let state = tempfile::tempdir().unwrap();
    let (root, ws) = delete_and_move_workspace();
    assert!(
        apply(&ws, &patch, strict, Some(state.path()), |_: &Path| Ok::<
            (),
            Box<ValidationFailure>,
        >(
            ()
        ))
        .is_err()
    );
    assert_eq!(fs::read(root.path().join("gone.txt")).unwrap(), b"g\n");
    assert_eq!(fs::read(root.path().join("b.txt")).unwrap(), b"b\n");
}
