//! Reads a model's free-form answer into [`FileEdit`]s. Pure; it never looks at the files.
//!
//! Two answer formats are understood:
//! - `udiff`: a unified diff anywhere in the answer (prose, code fences and `diff --git` lines around it are skipped).
//!   Hunk header numbers and counts are read only as a hint: hunks are recounted from their lines. A blank line
//!   inside a hunk is read as an empty context line; blank lines that end a hunk are dropped.
//! - `json`: `{"edits":[{"path":P,"old":LINE,"new":TEXT}]}`, each edit replacing the line(s) `old` of `P` with `new`
//!   (empty `new` deletes them). This is the shape the provider is constrained to when it supports JSON schemas.
//!
//! What it is not: it does not decide where an edit lands (that is [`super::locate`]) and it does not judge whether
//! the edit is allowed (that is the service's scope check).

use super::{FileEdit, Hunk, HunkLine};
use crate::error::{Error, Result, excerpt};

/// How the model was asked to write its edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerFormat {
    Udiff,
    Json,
}

/// Read the edits out of `answer`.
pub fn read_answer(answer: &str, format: AnswerFormat) -> Result<Vec<FileEdit>> {
    if answer.trim().is_empty() {
        return Err(Error::ModelAnswer(
            "the model returned an empty answer; retry, or give a more specific task".into(),
        ));
    }
    match format {
        AnswerFormat::Udiff => read_udiff(answer),
        AnswerFormat::Json => read_json(answer),
    }
}

fn no_edit(what: &str, answer: &str) -> Error {
    Error::ModelAnswer(format!(
        "{what}; the answer began: {:?}. Retry, simplify the task, or use a stronger model",
        excerpt(answer.trim(), 300)
    ))
}

/// Reads the first unified diff in `answer`, with any number of files.
pub fn read_udiff(answer: &str) -> Result<Vec<FileEdit>> {
    let lines: Vec<&str> = answer.lines().collect();
    let mut files: Vec<FileEdit> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let is_header =
            lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "));
        if !is_header {
            i += 1;
            continue;
        }
        let old = header_path(&lines[i][4..]);
        let new = header_path(&lines[i + 1][4..]);
        i += 2;
        if new == "/dev/null" {
            return Err(Error::ModelAnswer(format!(
                "the answer deletes {old}; deleting files is not supported: delete it yourself if that is intended"
            )));
        }
        let creates = old == "/dev/null";
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let hint = old_start_hint(lines[i]);
            i += 1;
            let mut body: Vec<(HunkLine, bool)> = Vec::new();
            while i < lines.len() {
                let l = lines[i];
                let next_header = l.starts_with("--- ")
                    && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "));
                if l.starts_with("@@")
                    || next_header
                    || l.starts_with("diff --git ")
                    || l.starts_with("```")
                {
                    break;
                }
                let parsed = match l.as_bytes().first() {
                    None => (HunkLine::Context(String::new()), true),
                    Some(b' ') => (HunkLine::Context(l[1..].to_string()), false),
                    Some(b'-') => (HunkLine::Remove(l[1..].to_string()), false),
                    Some(b'+') => (HunkLine::Add(l[1..].to_string()), false),
                    Some(b'\\') => {
                        // "\ No newline at end of file": the file's own final-newline state is kept anyway.
                        i += 1;
                        continue;
                    }
                    Some(_) => break,
                };
                body.push(parsed);
                i += 1;
            }
            while body.last().is_some_and(|(_, blank)| *blank) {
                body.pop();
            }
            hunks.push(Hunk {
                old_start_hint: hint,
                lines: body.into_iter().map(|(l, _)| l).collect(),
            });
        }
        if hunks.is_empty() {
            return Err(no_edit(
                &format!("the diff header for {new} is followed by no @@ hunk"),
                answer,
            ));
        }
        match files.iter_mut().find(|f| f.path == new) {
            Some(f) => f.hunks.extend(hunks),
            None => files.push(FileEdit {
                path: new,
                creates,
                hunks,
            }),
        }
    }
    if files.is_empty() {
        return Err(no_edit(
            "no unified diff found (expected `--- a/PATH`, `+++ b/PATH` and `@@` hunks)",
            answer,
        ));
    }
    Ok(files)
}

/// The path in a `---`/`+++` header: up to a tab, without the `a/` or `b/` prefix.
fn header_path(rest: &str) -> String {
    let p = rest.split('\t').next().unwrap_or("").trim();
    let p = p
        .strip_prefix("a/")
        .or_else(|| p.strip_prefix("b/"))
        .unwrap_or(p);
    p.to_string()
}

/// The old-side start line in `@@ -12,3 +12,4 @@`, if the model wrote one.
fn old_start_hint(header: &str) -> Option<usize> {
    let rest = header.trim_start_matches('@').trim_start();
    let digits: String = rest
        .strip_prefix('-')?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[derive(serde::Deserialize)]
struct JsonAnswer {
    edits: Vec<JsonEdit>,
}

#[derive(serde::Deserialize)]
struct JsonEdit {
    path: String,
    old: String,
    new: String,
}

/// Reads a JSON edit list (optionally inside a code fence).
pub fn read_json(answer: &str) -> Result<Vec<FileEdit>> {
    let trimmed = answer.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    let parsed: JsonAnswer = serde_json::from_str(body).map_err(|e| {
        no_edit(
            &format!("the answer is not the JSON edit list that was asked for ({e})"),
            answer,
        )
    })?;
    let mut files: Vec<FileEdit> = Vec::new();
    let mut seen: Vec<(String, String, String)> = Vec::new();
    for (n, edit) in parsed.edits.into_iter().enumerate() {
        // Small models often repeat the same edit; an identical repeat carries no second intent.
        let key = (edit.path.clone(), edit.old.clone(), edit.new.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if edit.old.trim().is_empty() {
            return Err(no_edit(
                &format!("edit {} has an empty `old`, so its place is unknown", n + 1),
                answer,
            ));
        }
        let split = |s: &str| -> Vec<String> {
            let s = s.strip_suffix('\n').unwrap_or(s);
            if s.is_empty() {
                Vec::new()
            } else {
                s.split('\n')
                    .map(|l| l.trim_end_matches('\r').to_string())
                    .collect()
            }
        };
        let mut lines: Vec<HunkLine> = split(&edit.old).into_iter().map(HunkLine::Remove).collect();
        lines.extend(split(&edit.new).into_iter().map(HunkLine::Add));
        let hunk = Hunk {
            old_start_hint: None,
            lines,
        };
        match files.iter_mut().find(|f| f.path == edit.path) {
            Some(f) => f.hunks.push(hunk),
            None => files.push(FileEdit {
                path: edit.path,
                creates: false,
                hunks: vec![hunk],
            }),
        }
    }
    if files.is_empty() {
        return Err(no_edit("the JSON edit list is empty", answer));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fenced_diff_surrounded_by_prose() {
        let answer = "Here is the change:\n```diff\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n```\nDone.";
        let files = read_udiff(answer).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "src/x.py");
        assert_eq!(files[0].hunks[0].old_start_hint, Some(1));
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                HunkLine::Context("a = 1".into()),
                HunkLine::Remove("b = 2".into()),
                HunkLine::Add("b = 3".into())
            ]
        );
    }

    #[test]
    fn reads_several_files_and_new_files() {
        let answer = "--- a/a.txt\n+++ b/a.txt\n@@ @@\n-x\n+y\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n";
        let files = read_udiff(answer).unwrap();
        assert_eq!(files.len(), 2);
        assert!(!files[0].creates);
        assert!(files[1].creates);
        assert_eq!(files[1].path, "new.txt");
    }

    #[test]
    fn trailing_blank_lines_do_not_become_context() {
        let files = read_udiff("--- a/a\n+++ b/a\n@@ @@\n-x\n+y\n\n\nThat is all.").unwrap();
        assert_eq!(files[0].hunks[0].lines.len(), 2);
    }

    #[test]
    fn refuses_prose_without_a_diff_and_quotes_it() {
        let err = read_udiff("I think you should rename the function.").unwrap_err();
        assert!(matches!(err, Error::ModelAnswer(_)));
        assert!(err.to_string().contains("rename the function"), "{err}");
    }

    #[test]
    fn refuses_file_deletion() {
        let err = read_udiff("--- a/a\n+++ /dev/null\n@@ @@\n-x\n").unwrap_err();
        assert!(
            err.to_string().contains("deleting files is not supported"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_header_without_hunks() {
        let err = read_udiff("--- a/a\n+++ b/a\nno hunks here").unwrap_err();
        assert!(err.to_string().contains("no @@ hunk"), "{err}");
    }

    #[test]
    fn reads_a_json_edit_list() {
        let files =
            read_json(r#"{"edits":[{"path":"a.py","old":"x = 1","new":"x = 2\ny = 3"}]}"#).unwrap();
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                HunkLine::Remove("x = 1".into()),
                HunkLine::Add("x = 2".into()),
                HunkLine::Add("y = 3".into())
            ]
        );
    }

    #[test]
    fn identical_repeated_json_edits_count_once() {
        let e = r#"{"path":"a.py","old":"x = 1","new":"x = 2"}"#;
        let files = read_json(&format!(r#"{{"edits":[{e},{e},{e}]}}"#)).unwrap();
        assert_eq!(files[0].hunks.len(), 1);
    }

    #[test]
    fn refuses_json_that_is_not_an_edit_list() {
        let err = read_json(r#"{"answer": 42}"#).unwrap_err();
        assert!(err.to_string().contains("not the JSON edit list"), "{err}");
        let err = read_json(r#"{"edits":[{"path":"a","old":"  ","new":"x"}]}"#).unwrap_err();
        assert!(err.to_string().contains("empty `old`"), "{err}");
    }
}
