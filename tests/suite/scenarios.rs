//! The patch engine's behaviours as data: each folder of `tests/fixtures/scenarios/` is one case.
//!
//! ```text
//! NNN_name/
//!   input/...        the selected files as they are (every file here is selected)
//!   select.txt       optional: extra selected paths, one per line (files that do not exist yet)
//!   format.txt       optional: udiff (default) | search_replace | whole_file | json | apply_patch
//!   answer.txt       the model's answer, byte for byte
//!   expected/...     the selected files afterwards (a file absent here must be unchanged or not created, unless
//!                    the answer deletes or moves it: then it must be gone)
//!   gone.txt         optional: paths the answer deletes or moves away, one per line (they must be gone, and no
//!                    other input may go)
//!   refusal.txt      instead of expected/: a piece of the refusal message
//!   tiers.txt        optional: the match tier of each hunk, in patch order, one per line
//!   ranges.txt       optional: `PATH:START-END` per line: the file was selected with those line ranges only (the
//!                    model saw them, and edits must stay inside them); several lines for one file merge
//!   notes.txt        optional: a piece of each note the reader makes for the primary, one per line (a section
//!                    whose `---` and `+++` lines spell its file differently); without it, a success has no note
//! ```
//! A success is also rendered as a canonical patch, parsed back and re-applied to the pre-images: it must give the
//! same files. Adding a case means adding a folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use local_llm_delegator::patch::focus::{self, Focus};
use local_llm_delegator::patch::reader::AnswerFormat;
use local_llm_delegator::patch::{self, ChangeOp, MODE_REGULAR, PreImage, canonical};

fn files_under(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return out;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn format_of(dir: &Path) -> AnswerFormat {
    match std::fs::read_to_string(dir.join("format.txt"))
        .unwrap_or_default()
        .trim()
    {
        "" | "udiff" => AnswerFormat::Udiff,
        "search_replace" => AnswerFormat::SearchReplace,
        "whole_file" => AnswerFormat::WholeFile,
        "json" => AnswerFormat::Json,
        "apply_patch" => AnswerFormat::ApplyPatch,
        other => panic!("{}: unknown format {other:?}", dir.display()),
    }
}

/// The line ranges of `ranges.txt`, checked against the inputs as the worker checks a selection.
fn focus_of(dir: &Path, pre: &BTreeMap<String, Option<PreImage>>) -> Focus {
    let mut focus = Focus::new();
    for spec in std::fs::read_to_string(dir.join("ranges.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let (path, suffix) = focus::split_spec(spec.trim()).expect("PATH:START-END");
        let text = &pre[path].as_ref().expect("a range of an input file").text;
        let range = focus::parse_range(path, suffix, focus::line_count(text)).unwrap();
        focus.entry(path.to_string()).or_default().push(range);
    }
    for ranges in focus.values_mut() {
        *ranges = focus::merge(std::mem::take(ranges));
    }
    focus
}

/// Run one scenario; returns a description of the failure, if any.
fn run(dir: &Path) -> Result<(), String> {
    let inputs = files_under(&dir.join("input"));
    let mut pre: BTreeMap<String, Option<PreImage>> = inputs
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Some(PreImage {
                    text: String::from_utf8(v.clone()).unwrap(),
                    mode: MODE_REGULAR,
                }),
            )
        })
        .collect();
    for extra in std::fs::read_to_string(dir.join("select.txt"))
        .unwrap_or_default()
        .lines()
    {
        if !extra.trim().is_empty() {
            pre.entry(extra.trim().to_string()).or_insert(None);
        }
    }
    let answer =
        std::fs::read_to_string(dir.join("answer.txt")).map_err(|e| format!("answer.txt: {e}"))?;
    let focus = focus_of(dir, &pre);
    let result =
        patch::changes_and_notes(&answer, format_of(dir), &pre, &focus, patch::Cancel::NEVER);
    if let Ok(want) = std::fs::read_to_string(dir.join("refusal.txt")) {
        return match result {
            Ok((c, _)) => Err(format!(
                "expected a refusal containing {:?}, got a change of {:?}",
                want.trim(),
                c.iter().map(|c| &c.path).collect::<Vec<_>>()
            )),
            Err(e) if e.to_string().contains(want.trim()) => Ok(()),
            Err(e) => Err(format!(
                "refusal {:?} does not contain {:?}",
                e.to_string(),
                want.trim()
            )),
        };
    }
    let (changes, notes) = result.map_err(|e| format!("refused: {e}"))?;
    let want_notes: Vec<String> = std::fs::read_to_string(dir.join("notes.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    if notes.len() != want_notes.len()
        || !want_notes
            .iter()
            .zip(&notes)
            .all(|(want, got)| got.contains(want.as_str()))
    {
        return Err(format!("notes {notes:?}, expected {want_notes:?}"));
    }
    let after = files_after(&inputs, &changes);
    check_files(dir, &inputs, &after)?;
    check_tiers(dir, &changes)?;
    canonical_reproduces(&inputs, &after, &changes)
}

/// The files after `changes`: edited, created, deleted and moved.
fn files_after(
    inputs: &BTreeMap<String, Vec<u8>>,
    changes: &[patch::FileChange],
) -> BTreeMap<String, Vec<u8>> {
    let mut after = inputs.clone();
    for c in changes {
        match &c.op {
            ChangeOp::Edit => {
                after.insert(c.path.clone(), c.post.clone());
            }
            ChangeOp::Delete => {
                after.remove(&c.path);
            }
            ChangeOp::MoveFrom(from) => {
                after.remove(from);
                after.insert(c.path.clone(), c.post.clone());
            }
        }
    }
    after
}

/// `after` against `expected/` and `gone.txt`.
fn check_files(
    dir: &Path,
    inputs: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let expected = files_under(&dir.join("expected"));
    for (path, want) in &expected {
        let got = after
            .get(path)
            .ok_or_else(|| format!("{path} was not produced"))?;
        if got != want {
            return Err(format!(
                "{path} differs:\n--- got ---\n{}\n--- want ---\n{}",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(want)
            ));
        }
    }
    for (path, got) in after {
        if !expected.contains_key(path) && inputs.get(path) != Some(got) {
            return Err(format!("{path} changed but is not in expected/"));
        }
    }
    let gone = std::fs::read_to_string(dir.join("gone.txt")).unwrap_or_default();
    let gone: Vec<&str> = gone
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    for path in inputs.keys() {
        let went = !after.contains_key(path);
        if went != gone.contains(&path.as_str()) {
            return Err(format!("{path}: gone {went}, but gone.txt says {}", !went));
        }
    }
    Ok(())
}

/// The match tier of every hunk against `tiers.txt`, when there is one.
fn check_tiers(dir: &Path, changes: &[patch::FileChange]) -> Result<(), String> {
    if let Ok(tiers) = std::fs::read_to_string(dir.join("tiers.txt")) {
        let got: Vec<String> = changes
            .iter()
            .flat_map(|c| {
                c.hunks.iter().map(|h| {
                    serde_json::to_value(h.tier)
                        .unwrap()
                        .as_str()
                        .unwrap()
                        .to_string()
                })
            })
            .collect();
        let want: Vec<String> = tiers
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        if got != want {
            return Err(format!("tiers {got:?}, expected {want:?}"));
        }
    }
    Ok(())
}

/// The canonical patch reproduces the same files from the pre-images.
fn canonical_reproduces(
    inputs: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
    changes: &[patch::FileChange],
) -> Result<(), String> {
    let bytes = canonical::render(changes);
    let parsed = canonical::parse(&bytes).map_err(|e| format!("canonical parse: {e}"))?;
    for f in parsed {
        let cur = inputs.get(f.source()).map(Vec::as_slice);
        let post = canonical::apply_file(&f, cur).map_err(|e| format!("canonical apply: {e}"))?;
        if f.deletes {
            if after.contains_key(&f.path) || !post.is_empty() {
                return Err(format!(
                    "the canonical deletion of {} does not delete it",
                    f.path
                ));
            }
            continue;
        }
        if Some(&post) != after.get(&f.path) {
            return Err(format!(
                "canonical patch of {} does not reproduce the post-image",
                f.path
            ));
        }
    }
    Ok(())
}

#[test]
fn every_scenario_behaves_as_its_folder_says() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut failures = Vec::new();
    for d in &dirs {
        if let Err(e) = run(d) {
            failures.push(format!("{}: {e}", d.file_name().unwrap().to_string_lossy()));
        }
    }
    let refusals = dirs
        .iter()
        .filter(|d| d.join("refusal.txt").exists())
        .count();
    eprintln!("{} scenarios ({} refusals)", dirs.len(), refusals);
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
    assert!(
        dirs.len() >= 60,
        "only {} scenarios; the engine's behaviours need at least 60",
        dirs.len()
    );
}
