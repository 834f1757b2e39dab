//! A file's text as lines and back: the pre-image split into its byte-order mark, its lines and its line ending
//! ([`FileText`]), and the post-image built from the placed hunks ([`post_image`]), keeping what the file had: its
//! line endings, its final-newline state, a UTF-8 byte-order mark, and the exact bytes of every line the edit did
//! not replace (context lines included, whatever tier matched them). Added lines are re-indented and folded as the
//! tier that placed their hunk asks.
//!
//! Line endings, line by line, so a file mixing CRLF and LF keeps its mix: a line that replaces another keeps the
//! ending of the line it replaces (within one change, the k-th added line replaces the k-th removed one); any other
//! added line takes the ending of the line before it, else of the line after it, else the file's (from its first
//! line; LF when it has none).
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
    /// The file's line ending, from its first line (LF when it has none): for a new line with no neighbour that has
    /// one.
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
/// own terminators; only added lines own their text, with the ending of the line they replace, else of the line
/// before them, else of the line after them, else the file's ([`added_ending`]).
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
        let mut replaced = replaced_endings(hunk, lines, p.start).into_iter();
        let mut at = p.start;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    out.push(Cow::Borrowed(lines[at]));
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(s) => {
                    let ending = added_ending(replaced.next().flatten(), &out, lines, at, file.eol);
                    let s = added_line(s, reindent.as_ref(), p.tier, &mut file_folds);
                    let line = format!("{s}{ending}");
                    out.push(Cow::Owned(line));
                }
                HunkLine::WholeFile(_) => {}
            }
        }
        cursor = p.start + p.old_len;
    }
    out.extend(lines[cursor..].iter().map(|l| Cow::Borrowed(*l)));
    out
}

/// The line ending of a line with its terminator (`\r\n`, `\n`, or nothing for a last line without one).
fn ending_of(line: &str) -> &str {
    &line[content_of(line).len()..]
}

/// For each added line of `hunk` (placed at line index `start` of the file's `lines`), in order: the ending of the
/// line it replaces, if it replaces one that has an ending. Within one change (a run of removed and added lines
/// between context lines), the k-th added line replaces the k-th removed line.
fn replaced_endings<'f>(hunk: &Hunk, lines: &[&'f str], start: usize) -> Vec<Option<&'f str>> {
    let mut out = Vec::new();
    let mut removed: Vec<&'f str> = Vec::new();
    let mut added = 0;
    let mut at = start;
    let mut flush = |removed: &mut Vec<&'f str>, added: &mut usize| {
        out.extend((0..*added).map(|k| removed.get(k).copied().filter(|e| !e.is_empty())));
        removed.clear();
        *added = 0;
    };
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => {
                flush(&mut removed, &mut added);
                at += 1;
            }
            HunkLine::Remove(_) => {
                removed.push(ending_of(lines[at]));
                at += 1;
            }
            HunkLine::Add(_) => added += 1,
            HunkLine::WholeFile(_) => {}
        }
    }
    flush(&mut removed, &mut added);
    out
}

/// The ending of an added line: the one of the line it replaces (`replaced`), else of the line before it in the
/// post-image (`out`), else of the file's next line (line index `at` of `lines`), else the file's `eol`. A line of
/// a mixed file keeps what it had, and a new line takes what its neighbours have.
fn added_ending<'a>(
    replaced: Option<&'a str>,
    out: &'a [Cow<'_, str>],
    lines: &[&'a str],
    at: usize,
    eol: &'static str,
) -> &'a str {
    let has = |e: &&str| !e.is_empty();
    replaced
        .or_else(|| out.last().map(|l| ending_of(l)).filter(has))
        .or_else(|| lines.get(at).map(|l| ending_of(l)).filter(has))
        .unwrap_or(eol)
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
    for k in 0..count {
        let last = k + 1 == count;
        let (before, rest) = out.split_at_mut(k);
        let line = &mut rest[0];
        if !line.ends_with('\n') && (!last || had_final_newline) {
            // The file's last line, now followed by another: the ending of the line before it.
            let ending = before
                .last()
                .map(|l| ending_of(l))
                .filter(|e| !e.is_empty())
                .unwrap_or(file.eol);
            line.to_mut().push_str(ending);
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
    fn mixed_line_endings_replaced_lines_keep_theirs_added_lines_take_their_neighbours() {
        let post = |lines: Vec<crate::patch::HunkLine>, text: &str| {
            String::from_utf8(
                locate_file(&edit("a", lines), Some(&pre(text)))
                    .unwrap()
                    .post,
            )
            .unwrap()
        };
        // A replaced LF line in a file whose first line (and most lines) end in CRLF stays LF; the line added after
        // it takes its ending too.
        let text = "a\r\nb\nc\r\nd\r\n";
        let lines = vec![
            C("a".into()),
            R("b".into()),
            Add("B".into()),
            Add("B2".into()),
            C("c".into()),
        ];
        assert_eq!(post(lines, text), "a\r\nB\nB2\nc\r\nd\r\n");
        // Added lines written before the removed ones still pair with them, k-th with k-th.
        let lines = vec![C("a".into()), Add("B".into()), R("b".into()), C("c".into())];
        assert_eq!(post(lines, text), "a\r\nB\nc\r\nd\r\n");
        // A replaced CRLF line in an LF file stays CRLF; a line added after it takes CRLF, one after an LF line LF.
        let text = "a\nb\r\nc\nd\n";
        let lines = vec![
            R("b".into()),
            Add("B".into()),
            Add("B2".into()),
            C("c".into()),
            Add("c2".into()),
        ];
        assert_eq!(post(lines, text), "a\nB\r\nB2\r\nc\nc2\nd\n");
        // A line added before the first line takes the ending of the line after it.
        let lines = vec![Add("z".into()), C("a".into())];
        assert_eq!(post(lines, "a\nb\r\n"), "z\na\nb\r\n");
        let lines = vec![Add("z".into()), C("b".into())];
        assert_eq!(post(lines, "b\r\na\n"), "z\r\nb\r\na\n");
        // A last line without an ending that gets a line after it takes the ending of the line before it.
        let lines = vec![C("b".into()), Add("c".into())];
        assert_eq!(post(lines, "a\r\nb"), "a\r\nb\r\nc");
        let lines = vec![C("b".into()), Add("c".into())];
        assert_eq!(post(lines, "x\r\na\nb"), "x\r\na\nb\nc");
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
