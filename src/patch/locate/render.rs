//! A file's text as lines and back: the pre-image split into its byte-order mark, its lines and its line ending
//! ([`FileText`]), and the post-image built from the placed hunks ([`post_image`]), keeping what the file had: its
//! line ending (CRLF or LF, from its first line), its final-newline state, a UTF-8 byte-order mark, and the exact
//! bytes of every line the edit did not replace (context lines included, whatever tier matched them). Added lines
//! are re-indented and folded as the tier that placed their hunk asks.
//!
//! What it is not: it does not decide where a hunk goes ([`super::search`]); it writes the hunks where they were
//! placed, and refuses only what writing them reveals (a narrowed file's line ending changed outside its ranges).

use std::borrow::Cow;

use super::Placed;
use super::normalise::{FileFolds, fold_foreign};
use super::reindent::{Reindent, indent_unit};
use super::within::Within;
use crate::error::Result;
use crate::patch::focus;
use crate::patch::{Hunk, HunkLine, MatchTier};

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// A pre-image split into lines (an empty or new file has none).
pub(super) struct FileText<'a> {
    /// The whole text, byte-order mark included.
    text: &'a str,
    /// The byte-order mark, or nothing.
    bom: &'a str,
    /// The text after the byte-order mark.
    body: &'a str,
    /// The lines of the body, each with its terminator (the last may have none).
    lines: Vec<&'a str>,
    /// The same lines without their terminators: what hunks are compared with.
    pub(super) keys: Vec<&'a str>,
    /// The file's line ending, from its first line (LF when it has none).
    eol: &'static str,
}

impl<'a> FileText<'a> {
    /// Split `text`, a file's whole content.
    pub(super) fn new(text: &'a str) -> FileText<'a> {
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
        FileText {
            text,
            bom,
            body,
            lines,
            keys,
            eol,
        }
    }
}

/// A line without its `\n` or `\r\n` terminator.
fn content_of(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

/// The post-image of `file` with `hunks` written where `placed` (sorted by start, not overlapping) says. With
/// `within`, refuses to remove the line ending of a line of `path` outside its ranges.
pub(super) fn post_image(
    file: &FileText<'_>,
    hunks: &[Hunk],
    placed: &[Placed],
    path: &str,
    within: Option<&Within<'_>>,
) -> Result<String> {
    let mut out = splice(file, hunks, placed);
    end_lines(file, &mut out, path, within)?;
    let mut post = String::with_capacity(file.text.len() + 64);
    post.push_str(file.bom);
    for l in out {
        post.push_str(&l);
    }
    Ok(post)
}

/// The lines of the post-image, before their line endings are settled: the file's lines are borrowed, with their
/// own terminators; only added lines own their text (with the file's line ending).
fn splice<'f>(file: &FileText<'f>, hunks: &[Hunk], placed: &[Placed]) -> Vec<Cow<'f, str>> {
    let lines = &file.lines;
    let file_indent_unit = indent_unit(&file.keys);
    let mut file_folds = FileFolds::new(file.text);
    let mut out: Vec<Cow<'f, str>> = Vec::with_capacity(lines.len() + 8);
    let mut cursor = 0;
    for p in placed {
        out.extend(lines[cursor..p.start].iter().map(|l| Cow::Borrowed(*l)));
        let hunk = &hunks[p.hunk];
        let reindent = Reindent::new(
            hunk,
            &file.keys[p.start..p.start + p.old_len],
            p.tier,
            file_indent_unit,
        );
        let mut at = p.start;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push(Cow::Borrowed(lines[at]));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(s) => {
                    let s = added_line(s, reindent.as_ref(), p.tier, &mut file_folds);
                    out.push(Cow::Owned(format!("{s}{}", file.eol)));
                }
                HunkLine::WholeFile(_) => {}
            }
        }
        cursor = p.start + p.old_len;
    }
    out.extend(lines[cursor..].iter().map(|l| Cow::Borrowed(*l)));
    out
}

/// An added line as it goes into the file: without a copied byte-order mark, re-indented to the file's indentation
/// when `reindent` says so, and with the Unicode punctuation the file never uses folded at the Unicode tier.
fn added_line(
    line: &str,
    reindent: Option<&Reindent>,
    tier: MatchTier,
    file_folds: &mut FileFolds<'_>,
) -> String {
    let s = line.strip_prefix('\u{feff}').unwrap_or(line);
    let s = match reindent {
        Some(r) => r.apply(s),
        None => s.to_string(),
    };
    if tier == MatchTier::UnicodeFolded {
        fold_foreign(&s, file_folds)
    } else {
        s
    }
}

/// Settle the line endings of `out`: every line but the last ends with a terminator; the last keeps the file's
/// final-newline state.
fn end_lines(
    file: &FileText<'_>,
    out: &mut [Cow<'_, str>],
    path: &str,
    within: Option<&Within<'_>>,
) -> Result<()> {
    let had_final_newline = file.body.is_empty() || file.body.ends_with('\n');
    let count = out.len();
    for (k, line) in out.iter_mut().enumerate() {
        let last = k + 1 == count;
        if !line.ends_with('\n') && (!last || had_final_newline) {
            line.to_mut().push_str(file.eol);
        } else if last && !had_final_newline {
            // A line of the file that becomes the last one loses its line ending: a change to that line, which a
            // file shown in ranges may only have inside them.
            if let (Some(w), Cow::Borrowed(b)) = (within, &*line) {
                let at = file
                    .lines
                    .partition_point(|l| (l.as_ptr() as usize) < (b.as_ptr() as usize));
                if !focus::contains(w.ranges, at) {
                    return Err(w.refusal(path, "removes the line ending of", at));
                }
            }
            let trimmed = content_of(line).len();
            line.to_mut().truncate(trimmed);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::patch::HunkLine::{Add, Context as C, Remove as R};
    use crate::patch::MatchTier;
    use crate::patch::locate::locate_file;
    use crate::patch::locate::tests::{edit, pre};

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
    fn trailing_whitespace_drift_keeps_the_file_bytes_of_context() {
        let e = edit("a", vec![C("a".into()), R("b".into()), Add("B".into())]);
        let c = locate_file(&e, Some(&pre("a  \nb\t\n"))).unwrap();
        assert_eq!(c.post, b"a  \nB\n");
        assert_eq!(c.hunks[0].tier, MatchTier::TrailingWhitespace);
    }
}
