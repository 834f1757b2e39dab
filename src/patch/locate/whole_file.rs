//! Whole-file answers (the model sent the whole new content of a file): the guards that refuse those that cannot be
//! trusted, and the minimal hunks, with exact context from the file, that turn the file into that content. Those
//! hunks are then placed and rendered like any other.
//!
//! What it is not: reading a whole-file answer out of the model's text is the reader's ([`crate::patch::reader`]);
//! refusing one for a file narrowed to line ranges is done with the other guards (in [`super`]).

use crate::error::{Error, Result};
use crate::patch::reader::WHOLE_FILE_MAX_LINES;
use crate::patch::{FileEdit, Hunk, HunkLine};

/// The new content of the file when `edit` is a whole-file answer (a single hunk holding a single whole-file line).
pub(super) fn new_content(edit: &FileEdit) -> Option<&[String]> {
    match edit.hunks.as_slice() {
        [Hunk { lines, .. }] => match lines.as_slice() {
            [HunkLine::WholeFile(new)] => Some(new),
            _ => None,
        },
        _ => None,
    }
}

/// Refuse whole-file answers that cannot be trusted: files over the whole-file limit, files whose own lines open
/// code fences (the answer's block cannot be delimited), and answers that drop most of a file (a cut-off block).
/// `keys` are the file's lines, `new` the lines the answer gives it.
pub(super) fn guards(path: &str, keys: &[&str], new: &[String]) -> Result<()> {
    if keys.len() > WHOLE_FILE_MAX_LINES {
        return Err(Error::ModelAnswer(format!(
            "{path} has {} lines; whole files are accepted up to {WHOLE_FILE_MAX_LINES} lines: ask for a diff instead",
            keys.len()
        )));
    }
    // A file with its own ``` lines, answered inside a ``` fence, ends at its first inner fence.
    let fences =
        |v: &mut dyn Iterator<Item = &str>| v.filter(|k| k.trim_start().starts_with("```")).count();
    if fences(&mut keys.iter().copied()) > fences(&mut new.iter().map(String::as_str)) {
        return Err(Error::ModelAnswer(format!(
            "{path} holds ``` lines that the whole-file answer lacks: its code block was probably closed early by \
             one of them; ask for a diff, or for the file inside a longer fence (````)"
        )));
    }
    let kept = keys.iter().filter(|k| !k.trim().is_empty()).count();
    let written = new.iter().filter(|k| !k.trim().is_empty()).count();
    if kept >= 20 && written * 2 < kept {
        return Err(Error::ModelAnswer(format!(
            "the whole-file answer for {path} has {written} non-blank lines where the file has {kept}: it looks cut \
             off or abridged; ask for a diff, or for the complete file"
        )));
    }
    Ok(())
}

/// The hunks turning the file's lines into `new` (a whole-file answer), with exact context from the file.
pub(super) fn hunks_between(keys: &[&str], new: &[String]) -> Vec<Hunk> {
    let mut old_text = String::new();
    for k in keys {
        old_text.push_str(k);
        old_text.push('\n');
    }
    let mut new_text = String::new();
    for l in new {
        new_text.push_str(l.strip_suffix('\r').unwrap_or(l));
        new_text.push('\n');
    }
    let patch = diffy::create_patch(&old_text, &new_text);
    patch
        .hunks()
        .iter()
        .map(|h| Hunk {
            old_start_hint: Some(h.old_range().start()),
            maybe_cut_off: false,
            anchor: Default::default(),
            lines: h
                .lines()
                .iter()
                .map(|l| match l {
                    diffy::Line::Context(s) => {
                        HunkLine::Context(s.trim_end_matches('\n').to_string())
                    }
                    diffy::Line::Delete(s) => {
                        HunkLine::Remove(s.trim_end_matches('\n').to_string())
                    }
                    diffy::Line::Insert(s) => HunkLine::Add(s.trim_end_matches('\n').to_string()),
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::patch::HunkLine;
    use crate::patch::MatchTier;
    use crate::patch::locate::locate_file;
    use crate::patch::locate::tests::{edit, pre};

    #[test]
    fn a_whole_file_answer_becomes_minimal_hunks_keeping_crlf() {
        let e = edit(
            "a",
            vec![HunkLine::WholeFile(vec![
                "a".into(),
                "B".into(),
                "c".into(),
            ])],
        );
        let c = locate_file(&e, Some(&pre("a\r\nb\r\nc\r\n"))).unwrap();
        assert_eq!(c.post, b"a\r\nB\r\nc\r\n");
        assert_eq!(c.hunks.len(), 1);
        assert_eq!(c.hunks[0].tier, MatchTier::WholeFile);
    }
}
