//! Places each hunk of a [`FileEdit`] in its file's pre-image and builds the post-image. Pure.
//!
//! A hunk is located by its old side (context and removed lines), compared line by line with the file's lines
//! without their terminators. It must match in exactly ONE place: no match, or several, is a refusal that names the
//! hunk and quotes it, never a guess. The line number the model wrote is not used to pick a place.
//!
//! The post-image keeps what the file had: its line ending (CRLF or LF, taken from its first line), its final-newline
//! state, a UTF-8 byte-order mark, and the exact bytes of every line the edit did not replace.

use std::collections::BTreeMap;

use super::{FileChange, FileEdit, HunkLine, HunkReport, MODE_REGULAR, MatchTier, PreImage};
use crate::error::{Error, Result, excerpt};

const BOM: &str = "\u{feff}";

/// Locate every edit against `pre_images` (path -> current content, `None` when the file does not exist yet).
/// Files whose post-image equals their pre-image are left out; an answer that changes nothing is a refusal.
pub fn locate_all(
    edits: &[FileEdit],
    pre_images: &BTreeMap<String, Option<PreImage>>,
) -> Result<Vec<FileChange>> {
    let mut changes = Vec::new();
    for edit in edits {
        let Some(pre) = pre_images.get(&edit.path) else {
            let known: Vec<&str> = pre_images.keys().map(String::as_str).collect();
            return Err(Error::ModelAnswer(format!(
                "the answer edits {}, which is not one of the selected files ({}); add it to `files` if it should be editable",
                edit.path,
                known.join(", ")
            )));
        };
        let change = locate_file(edit, pre.as_ref())?;
        if change.pre.as_deref() != Some(change.post.as_slice()) {
            changes.push(change);
        }
    }
    if changes.is_empty() {
        return Err(Error::ModelAnswer(
            "the answer changes nothing (every hunk leaves its file as it was); retry or rephrase the task".into(),
        ));
    }
    Ok(changes)
}

/// Locate the hunks of one file.
pub fn locate_file(edit: &FileEdit, pre: Option<&PreImage>) -> Result<FileChange> {
    let path = &edit.path;
    let (text, mode) = match pre {
        Some(p) => (p.text.as_str(), p.mode),
        None => ("", MODE_REGULAR),
    };
    if edit.creates && pre.is_some_and(|p| !p.text.is_empty()) {
        return Err(Error::ModelAnswer(format!(
            "the answer creates {path}, but that file already exists with content; ask for an edit of the existing file"
        )));
    }
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text),
    };
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let keys: Vec<&str> = lines.iter().map(|l| content_of(l)).collect();
    let eol = if lines.first().is_some_and(|l| l.ends_with("\r\n")) {
        "\r\n"
    } else {
        "\n"
    };

    // Place each hunk: (start, old_len, hunk index).
    let mut placed: Vec<(usize, usize, usize)> = Vec::new();
    let mut reports = Vec::new();
    for (n, hunk) in edit.hunks.iter().enumerate() {
        let old_side: Vec<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect();
        let added = hunk
            .lines
            .iter()
            .filter(|l| matches!(l, HunkLine::Add(_)))
            .count();
        let removed = hunk
            .lines
            .iter()
            .filter(|l| matches!(l, HunkLine::Remove(_)))
            .count();
        if old_side.is_empty() {
            if !lines.is_empty() || edit.hunks.len() != 1 {
                return Err(Error::ModelAnswer(format!(
                    "hunk {} of {path} adds lines without any context line, so its place in the file is unknown; \
                     the model must quote at least one existing line",
                    n + 1
                )));
            }
            placed.push((0, 0, n));
            reports.push(HunkReport {
                old_start: 0,
                removed,
                added,
                tier: MatchTier::WholeFile,
            });
            continue;
        }
        let matches = find_all(&keys, &old_side);
        match matches.as_slice() {
            [start] => {
                placed.push((*start, old_side.len(), n));
                reports.push(HunkReport {
                    old_start: start + 1,
                    removed,
                    added,
                    tier: MatchTier::Exact,
                });
            }
            [] => {
                return Err(Error::ModelAnswer(format!(
                    "hunk {} of {path} does not match the file: these lines were not found together: {:?}",
                    n + 1,
                    excerpt(&old_side.join("\n"), 400)
                )));
            }
            many => {
                let at: Vec<String> = many.iter().take(5).map(|s| (s + 1).to_string()).collect();
                return Err(Error::ModelAnswer(format!(
                    "hunk {} of {path} matches {} places (lines {}{}), so where it belongs is ambiguous: {:?}; \
                     the model must include more context",
                    n + 1,
                    many.len(),
                    at.join(", "),
                    if many.len() > 5 { ", ..." } else { "" },
                    excerpt(&old_side.join("\n"), 200)
                )));
            }
        }
    }
    let mut order: Vec<usize> = (0..placed.len()).collect();
    order.sort_by_key(|&i| placed[i].0);
    for w in order.windows(2) {
        let (a, b) = (placed[w[0]], placed[w[1]]);
        if a.0 + a.1 > b.0 {
            return Err(Error::ModelAnswer(format!(
                "hunks {} and {} of {path} overlap; the model must edit each region once",
                a.2 + 1,
                b.2 + 1
            )));
        }
    }

    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 8);
    let mut cursor = 0;
    for &i in &order {
        let (start, old_len, n) = placed[i];
        out.extend(lines[cursor..start].iter().map(|l| l.to_string()));
        let mut at = start;
        for line in &edit.hunks[n].lines {
            match line {
                HunkLine::Context(_) => {
                    out.push(lines[at].to_string());
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(s) => out.push(format!("{s}{eol}")),
            }
        }
        cursor = start + old_len;
    }
    out.extend(lines[cursor..].iter().map(|l| l.to_string()));

    // Every line but the last ends with a terminator; the last keeps the file's final-newline state.
    let had_final_newline = body.is_empty() || body.ends_with('\n');
    let count = out.len();
    for (k, line) in out.iter_mut().enumerate() {
        let last = k + 1 == count;
        if !line.ends_with('\n') && (!last || had_final_newline) {
            line.push_str(eol);
        } else if last && !had_final_newline {
            let trimmed = content_of(line).len();
            line.truncate(trimmed);
        }
    }
    let mut post = String::with_capacity(text.len() + 64);
    post.push_str(bom);
    for l in out {
        post.push_str(&l);
    }
    Ok(FileChange {
        path: path.clone(),
        pre: pre.map(|p| p.text.as_bytes().to_vec()),
        post: post.into_bytes(),
        mode,
        hunks: reports,
    })
}

/// A line without its `\n` or `\r\n` terminator.
fn content_of(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

/// Every index where `needle` occurs in `haystack` as consecutive lines.
fn find_all(haystack: &[&str], needle: &[&str]) -> Vec<usize> {
    if needle.len() > haystack.len() {
        return Vec::new();
    }
    (0..=haystack.len() - needle.len())
        .filter(|&i| haystack[i] == needle[0] && haystack[i..i + needle.len()] == *needle)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::Hunk;

    fn edit(path: &str, lines: Vec<HunkLine>) -> FileEdit {
        FileEdit {
            path: path.into(),
            creates: false,
            hunks: vec![Hunk {
                old_start_hint: None,
                lines,
            }],
        }
    }
    fn pre(text: &str) -> PreImage {
        PreImage {
            text: text.into(),
            mode: MODE_REGULAR,
        }
    }
    use HunkLine::{Add, Context as C, Remove as R};

    #[test]
    fn replaces_a_uniquely_located_line() {
        let e = edit("a", vec![C("a".into()), R("b".into()), Add("B".into())]);
        let c = locate_file(&e, Some(&pre("a\nb\nc\n"))).unwrap();
        assert_eq!(c.post, b"a\nB\nc\n");
        assert_eq!(c.hunks[0].old_start, 1);
        assert_eq!(c.hunks[0].tier, MatchTier::Exact);
    }

    #[test]
    fn keeps_crlf_bom_and_missing_final_newline() {
        let e = edit("a", vec![R("b".into()), Add("B".into()), Add("C".into())]);
        let c = locate_file(&e, Some(&pre("\u{feff}a\r\nb"))).unwrap();
        assert_eq!(String::from_utf8(c.post).unwrap(), "\u{feff}a\r\nB\r\nC");
    }

    #[test]
    fn appending_after_a_last_line_without_newline_keeps_lines_apart() {
        let e = edit("a", vec![C("b".into()), Add("c".into())]);
        let c = locate_file(&e, Some(&pre("a\nb"))).unwrap();
        assert_eq!(c.post, b"a\nb\nc");
    }

    #[test]
    fn refuses_an_ambiguous_hunk_and_names_the_lines() {
        let e = edit("a", vec![R("x".into()), Add("y".into())]);
        let err = locate_file(&e, Some(&pre("x\nz\nx\n"))).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("matches 2 places (lines 1, 3)"), "{msg}");
    }

    #[test]
    fn refuses_a_hunk_that_is_not_in_the_file() {
        let e = edit("a", vec![R("nope".into()), Add("y".into())]);
        let err = locate_file(&e, Some(&pre("x\n"))).unwrap_err();
        assert!(err.to_string().contains("does not match the file"), "{err}");
    }

    #[test]
    fn refuses_overlapping_hunks() {
        let mut e = edit("a", vec![R("x".into()), C("y".into()), Add("1".into())]);
        e.hunks.push(Hunk {
            old_start_hint: None,
            lines: vec![R("y".into()), Add("2".into())],
        });
        let err = locate_file(&e, Some(&pre("x\ny\n"))).unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
    }

    #[test]
    fn creates_a_new_file_from_an_added_only_hunk() {
        let mut e = edit("n", vec![Add("hello".into())]);
        e.creates = true;
        let c = locate_file(&e, None).unwrap();
        assert_eq!(c.pre, None);
        assert_eq!(c.post, b"hello\n");
        assert_eq!(c.hunks[0].tier, MatchTier::WholeFile);
    }

    #[test]
    fn refuses_context_free_insertions_into_a_non_empty_file() {
        let e = edit("a", vec![Add("x".into())]);
        let err = locate_file(&e, Some(&pre("a\n"))).unwrap_err();
        assert!(
            err.to_string().contains("without any context line"),
            "{err}"
        );
    }

    #[test]
    fn refuses_edits_to_files_not_selected_and_edits_that_change_nothing() {
        let mut map = BTreeMap::new();
        map.insert("a".to_string(), Some(pre("x\n")));
        let err = locate_all(&[edit("b", vec![R("x".into())])], &map).unwrap_err();
        assert!(
            err.to_string().contains("not one of the selected files"),
            "{err}"
        );
        let err = locate_all(&[edit("a", vec![R("x".into()), Add("x".into())])], &map).unwrap_err();
        assert!(err.to_string().contains("changes nothing"), "{err}");
    }
}
