//! The "did you mean" attached to a refusal of a selected file that does not exist and is not declared as created:
//! the file of the same name (or one a letter or two off) somewhere in the allowed tree.
//!
//! It walks the workspace, so it runs only on that refusal path, never on a request that goes through; the walk is
//! bounded ([`MAX_ENTRIES`]), skips what git ignores and hidden folders (`.git`, `.venv`), and offers only a path
//! the policy would let the request select. What it is not: a block on creating a file next to a similar name
//! (creating is said with `create`, and never guessed at).

use std::path::Path;

use super::Workspace;

/// At most this many folder entries are looked at.
pub const MAX_ENTRIES: usize = 20_000;

/// How far `other` is from the name asked for: 0 the same, 1 the same in another case, 2.. a letter or two off;
/// `None` when it is not close.
fn distance(name: &str, other: &str) -> Option<usize> {
    if other == name {
        return Some(0);
    }
    if other.eq_ignore_ascii_case(name) {
        return Some(1);
    }
    let d = strsim::damerau_levenshtein(other, name);
    (d <= 2 && name.chars().count() > 3 * d).then_some(d + 1)
}

/// The allowed file most likely meant by `rel`, which does not exist: the same name elsewhere first, then a near
/// name; among equals, one in the same folder, then the shortest path. `None` when nothing is close.
pub fn did_you_mean(ws: &Workspace, rel: &str) -> Option<String> {
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (d, n),
        None => ("", rel),
    };
    let mut best: Option<((usize, bool, usize), String)> = None;
    let walk = ignore::WalkBuilder::new(ws.root())
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .build();
    for entry in walk.take(MAX_ENTRIES).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(other) = entry.file_name().to_str() else {
            continue;
        };
        let Some(d) = distance(name, other) else {
            continue;
        };
        let Some(found) = relative(ws.root(), entry.path()) else {
            continue;
        };
        if found == rel || ws.check_path(&found).is_err() {
            continue;
        }
        let elsewhere = found.rsplit_once('/').map_or("", |(d, _)| d) != dir;
        let key = (d, elsewhere, found.len());
        if best.as_ref().is_none_or(|(k, p)| (key, &found) < (*k, p)) {
            best = Some((key, found));
        }
    }
    best.map(|(_, p)| p)
}

/// `path` as a workspace-relative path with `/` separators, when it is valid UTF-8 under `root`.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Paths;

    fn ws_with(files: &[&str]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x\n").unwrap();
        }
        let ws = Workspace::new(dir.path().to_path_buf(), &Paths::default(), None).unwrap();
        (dir, ws)
    }

    #[test]
    fn the_same_name_in_a_subfolder_is_the_guess() {
        let (_d, ws) = ws_with(&["toolz/itertoolz.py", "toolz/dicttoolz.py", "setup.py"]);
        assert_eq!(
            did_you_mean(&ws, "itertoolz.py").as_deref(),
            Some("toolz/itertoolz.py")
        );
    }

    #[test]
    fn a_near_name_next_to_it_is_a_guess_and_a_far_one_is_not() {
        let (_d, ws) = ws_with(&["src/value.py", "src/other/module.py"]);
        assert_eq!(
            did_you_mean(&ws, "src/valeu.py").as_deref(),
            Some("src/value.py")
        );
        assert_eq!(
            did_you_mean(&ws, "src/VALUE.py").as_deref(),
            Some("src/value.py")
        );
        assert_eq!(did_you_mean(&ws, "src/unrelated.py"), None);
    }

    #[test]
    fn ignored_and_hidden_folders_are_not_offered() {
        let (_d, ws) = ws_with(&[".venv/lib/site.py", "build/site.py", ".gitignore"]);
        std::fs::write(ws.root().join(".gitignore"), "build/\n").unwrap();
        assert_eq!(did_you_mean(&ws, "site.py"), None);
    }
}
