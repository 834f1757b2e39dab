//! Places each hunk of a [`FileEdit`] in its file's pre-image and builds the post-image. Pure.
//!
//! A hunk is located by its old side (context and removed lines), compared with the file's lines in tiers, strictest
//! first; the first tier that finds the old side anywhere decides:
//! 1. exact;
//! 2. trailing whitespace ignored;
//! 3. leading and trailing whitespace ignored (indentation drift, tabs vs spaces); added lines are re-indented from
//!    the model's indentation to the file's;
//! 4. as 3, with Unicode punctuation folded to ASCII (curly quotes, dashes, non-breaking and other spaces, `…`);
//!    folded characters the file never uses are folded in the added lines too.
//!
//! The old side must match in exactly ONE place at that tier. Several matches are refused as ambiguous, unless the
//! line number the model wrote points at exactly one of them (a tie-break, reported as such); the line number never
//! picks a place the content does not match. No match at any tier is refused, quoting the hunk.
//!
//! Also refused: overlapping hunks, insertions without any context in a non-empty file, and added lines that stand
//! for left-out code ("... rest unchanged") in a hunk that removes lines: applying them would delete code.
//!
//! A file narrowed to line ranges ([`super::focus`]) is searched only where the model was shown it: an old side
//! must lie inside one shown block (a range and its context lines), so uniqueness is decided there, and a match
//! elsewhere in the file, however unique, is refused; every removed line and every insertion point must then lie
//! inside a range (context lines may be quoted, never changed). A whole-file answer for such a file is refused.
//!
//! The post-image keeps what the file had: its line endings (a replaced line keeps the ending of the line it
//! replaces, an added line takes its neighbours', so a file mixing CRLF and LF keeps its mix), its final-newline
//! state, a UTF-8 byte-order mark, and the exact bytes of every line the edit did not replace (context lines
//! included, whatever tier matched them).
//!
//! [`locate_file_within`] reads as its three steps: the guards on the edit as a whole, the placing of every hunk,
//! the rendering of the post-image. The parts, one concept a file:
//! - `search`: the one place a hunk's old side matches, and the searches behind it (Knuth-Morris-Pratt, the line
//!   index shared by a file's hunks);
//! - `normalise`: the tiers' comparisons and the folding of Unicode punctuation;
//! - `reindent`: the added lines of a hunk matched with indentation ignored, in the file's indentation;
//! - `render`: the pre-image as lines, and the post-image (line endings, final newline, byte-order mark);
//! - `within`: the confinement of a file narrowed to line ranges;
//! - `whole_file`: whole-file answers, checked and turned into hunks;
//! - `ops`: deleting and moving a file (the file must exist, a move's destination must be selected and not exist, a
//!   deletion's hunks must empty it, no path touched twice);
//! - `tidy`: what weak models write around a good edit (an exact repeat of a hunk, a hunk that changes nothing in an
//!   answer that changes something), set aside before placing.
//! - `degenerate`: a line with content turned into whitespace only (refused), and spacing changed inside a line
//!   beside a real change (put back as it was).
//! - [`alternatives`]: an answer whose hunks overlap (conflicting edits of one region) split into alternative edit
//!   sets, for a caller that would rather choose among them than refuse.

pub mod alternatives;
mod degenerate;
mod normalise;
mod ops;
mod reindent;
mod render;
mod search;
mod tidy;
mod whole_file;
mod within;

use std::borrow::Cow;
use std::collections::BTreeMap;

use self::render::FileText;
use self::search::{Haystack, find_unique};
use self::within::Within;
use super::focus::{self, LineRange};
use super::reader::is_elision;
use super::{
    Cancel, ChangeOp, EditOp, FileChange, FileEdit, Hunk, HunkLine, HunkReport, MODE_REGULAR,
    MatchTier, PreImage,
};
use crate::error::{Error, Result, excerpt};

/// Locate every edit against `pre_images` (path -> current content, `None` when the file does not exist yet).
/// Files whose post-image equals their pre-image are left out; an answer that changes nothing is a refusal.
pub fn locate_all(
    edits: &[FileEdit],
    pre_images: &BTreeMap<String, Option<PreImage>>,
) -> Result<Vec<FileChange>> {
    locate_all_within(edits, pre_images, &focus::Focus::new())
}

/// [`locate_all`] where the files named in `focus` may be edited only inside their line ranges.
pub fn locate_all_within(
    edits: &[FileEdit],
    pre_images: &BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
) -> Result<Vec<FileChange>> {
    locate_all_cancellable(edits, pre_images, focus, Cancel::NEVER)
}

/// [`locate_all_within`], asking `cancel` before each file and each hunk.
pub fn locate_all_cancellable(
    edits: &[FileEdit],
    pre_images: &BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
    cancel: Cancel<'_>,
) -> Result<Vec<FileChange>> {
    let (edits, tidied) = tidy::tidy(edits);
    // A hunk set aside as changing nothing must still match its file, alone.
    for (path, hunk) in &tidied.no_ops {
        let alone = FileEdit {
            path: path.clone(),
            creates: false,
            hunks: vec![hunk.clone()],
            op: EditOp::Edit,
        };
        if let Some(pre) = pre_images.get(path) {
            let ranges = focus.get(path).map(Vec::as_slice).unwrap_or(&[]);
            locate_one(&alone, pre.as_ref(), ranges, cancel)?;
        }
    }
    let mut changes = Vec::new();
    for edit in edits.iter() {
        cancel.check()?;
        let pre = selected_pre(pre_images, &edit.path, "edits")?;
        let ranges = focus.get(&edit.path).map(Vec::as_slice).unwrap_or(&[]);
        let change = match &edit.op {
            EditOp::Edit => locate_one(edit, pre, ranges, cancel)?,
            EditOp::Delete => ops::delete(edit, pre, ranges, cancel)?,
            EditOp::MoveTo(to) => {
                let dest = selected_pre(pre_images, to, "moves a file to")?;
                ops::move_to(edit, pre, to, dest, ranges, cancel)?
            }
        };
        if change.post.contains(&0) {
            return Err(Error::ModelAnswer(format!(
                "the answer writes NUL bytes into {}; only text edits are accepted",
                crate::names::shown(&edit.path)
            )));
        }
        if change.op != ChangeOp::Edit || change.pre.as_deref() != Some(change.post.as_slice()) {
            changes.push(change);
        }
    }
    ops::touched_once(&changes)?;
    if changes.is_empty() {
        return Err(Error::ModelAnswer(
            "the answer changes nothing (every hunk leaves its file as it was); retry or rephrase the task".into(),
        ));
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// The pre-image of `path` (`None`: it does not exist yet), refused when it is not a selected file; `what` is what
/// the answer does to it ("edits").
fn selected_pre<'p>(
    pre_images: &'p BTreeMap<String, Option<PreImage>>,
    path: &str,
    what: &str,
) -> Result<Option<&'p PreImage>> {
    match pre_images.get(path) {
        Some(pre) => Ok(pre.as_ref()),
        None => {
            let known: Vec<&str> = pre_images.keys().map(String::as_str).collect();
            Err(Error::ModelAnswer(format!(
                "the answer {what} {}, which is not one of the selected files ({}); add it to `files` if it should be \
                 editable",
                crate::names::shown(path),
                known.join(", ")
            )))
        }
    }
}

/// Locate the hunks of one file.
pub fn locate_file(edit: &FileEdit, pre: Option<&PreImage>) -> Result<FileChange> {
    locate_file_within(edit, pre, &[])
}

/// Locate the hunks of one file; a non-empty `ranges` (merged, inside the file) confines them to those lines.
pub fn locate_file_within(
    edit: &FileEdit,
    pre: Option<&PreImage>,
    ranges: &[LineRange],
) -> Result<FileChange> {
    locate_one(edit, pre, ranges, Cancel::NEVER)
}

/// [`locate_file_within`], asking `cancel` before each hunk.
fn locate_one(
    edit: &FileEdit,
    pre: Option<&PreImage>,
    ranges: &[LineRange],
    cancel: Cancel<'_>,
) -> Result<FileChange> {
    let path = edit.path.as_str();
    let (text, mode) = match pre {
        Some(p) => (p.text.as_str(), p.mode),
        None => ("", MODE_REGULAR),
    };
    let file = FileText::new(text);
    let within = Within::new(ranges, file.keys.len());
    let (hunks, whole_file) = guarded_hunks(edit, pre, &file.keys, within.as_ref())?;
    let hunks = degenerate::screen(path, hunks)?;
    let target = Target {
        path,
        keys: &file.keys,
        whole_file,
        within: within.as_ref(),
        cancel,
    };
    let (placed, reports) = place_hunks(&hunks, &target)?;
    let post = render::post_image(&file, &hunks, &placed, path, within.as_ref())?;
    Ok(FileChange {
        path: edit.path.clone(),
        pre: pre.map(|p| p.text.as_bytes().to_vec()),
        post: post.into_bytes(),
        mode,
        hunks: reports,
        op: ChangeOp::Edit,
    })
}

/// The guards on the edit as a whole, then the hunks to place: the edit's own, or for a whole-file answer the
/// hunks between the file's lines (`keys`) and the new content; and whether it was a whole-file answer.
fn guarded_hunks<'e>(
    edit: &'e FileEdit,
    pre: Option<&PreImage>,
    keys: &[&str],
    within: Option<&Within<'_>>,
) -> Result<(Cow<'e, [Hunk]>, bool)> {
    let path = &edit.path;
    if edit.creates && pre.is_some_and(|p| !p.text.is_empty()) {
        return Err(Error::ModelAnswer(format!(
            "the answer creates {path}, but that file already exists with content; ask for an edit of the existing file"
        )));
    }
    let whole = whole_file::new_content(edit);
    if let (Some(_), Some(w)) = (whole, within) {
        return Err(Error::ModelAnswer(format!(
            "the answer rewrites the whole of {path}, but it was shown only the lines {}; ask for an edit of \
             those lines (a diff, search/replace blocks or JSON edits), or select the whole file",
            focus::describe(w.ranges)
        )));
    }
    let hunks = match whole {
        Some(new) => {
            whole_file::guards(path, keys, new)?;
            Cow::Owned(whole_file::hunks_between(keys, new))
        }
        None => Cow::Borrowed(edit.hunks.as_slice()),
    };
    if hunks
        .iter()
        .any(|h| h.lines.iter().any(|l| matches!(l, HunkLine::WholeFile(_))))
    {
        return Err(Error::ModelAnswer(format!(
            "the answer mixes a whole new {path} with other edits of it"
        )));
    }
    Ok((hunks, whole.is_some()))
}

/// The context and removed lines of `hunk`, in order: what is looked for in the file.
fn old_side(hunk: &Hunk) -> impl Iterator<Item = &str> {
    hunk.lines.iter().filter_map(|l| match l {
        HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
        _ => None,
    })
}

/// The file the hunks of one edit are placed in.
struct Target<'a> {
    path: &'a str,
    /// The file's lines, without terminators.
    keys: &'a [&'a str],
    /// The hunks come from a whole-file answer.
    whole_file: bool,
    /// The file's confinement, when it was narrowed to line ranges.
    within: Option<&'a Within<'a>>,
    /// Asked before each hunk is placed.
    cancel: Cancel<'a>,
}

/// A hunk placed in the file.
struct Placed {
    /// The line index its old side starts at.
    start: usize,
    /// The length of its old side.
    old_len: usize,
    /// Its index among the hunks of the edit.
    hunk: usize,
    tier: MatchTier,
}

/// Place every hunk in the file: where each landed, sorted by place, and the report of each, in the hunks' order.
/// Refuses a hunk that cannot be placed, and hunks that overlap.
fn place_hunks(hunks: &[Hunk], target: &Target<'_>) -> Result<(Vec<Placed>, Vec<HunkReport>)> {
    let old_sides: Vec<Vec<&str>> = hunks.iter().map(|h| old_side(h).collect()).collect();
    let mut haystack = Haystack::new(target.keys, &old_sides);
    let mut placed: Vec<Placed> = Vec::with_capacity(hunks.len());
    let mut reports = Vec::with_capacity(hunks.len());
    for (n, hunk) in hunks.iter().enumerate() {
        target.cancel.check()?;
        let (p, report) = place_hunk(
            &mut haystack,
            n,
            hunk,
            old_sides[n].len(),
            hunks.len(),
            target,
        )?;
        placed.push(p);
        reports.push(report);
    }
    placed.sort_by_key(|p| p.start);
    for w in placed.windows(2) {
        if w[0].start + w[0].old_len > w[1].start {
            return Err(Error::ModelAnswer(format!(
                "hunks {} and {} of {} overlap; the model must edit each region once",
                w[0].hunk + 1,
                w[1].hunk + 1,
                target.path
            )));
        }
    }
    Ok((placed, reports))
}

/// Place hunk `n` of `count` (`hunk`, whose old side has `old_len` lines) in the file.
fn place_hunk(
    haystack: &mut Haystack<'_>,
    n: usize,
    hunk: &Hunk,
    old_len: usize,
    count: usize,
    target: &Target<'_>,
) -> Result<(Placed, HunkReport)> {
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
    refuse_elision(hunk, n, removed, target.path)?;
    if old_len == 0 {
        if !target.keys.is_empty() || count != 1 {
            return Err(Error::ModelAnswer(format!(
                "hunk {} of {} adds lines without any context line, so its place in the file is unknown; \
                 the model must quote at least one existing line",
                n + 1,
                target.path
            )));
        }
        let placed = Placed {
            start: 0,
            old_len: 0,
            hunk: n,
            tier: MatchTier::WholeFile,
        };
        let report = HunkReport {
            old_start: 0,
            removed,
            added,
            tier: MatchTier::WholeFile,
            line_number_tie_break: false,
        };
        return Ok((placed, report));
    }
    let (start, tier, tie_break) = place_by_content(haystack, n, hunk, old_len, target)?;
    let tier = if target.whole_file {
        MatchTier::WholeFile
    } else {
        tier
    };
    let placed = Placed {
        start,
        old_len,
        hunk: n,
        tier,
    };
    let report = HunkReport {
        old_start: start + 1,
        removed,
        added,
        tier,
        line_number_tie_break: tie_break,
    };
    Ok((placed, report))
}

/// Refuse hunk `n`, which removes `removed` lines, when one of the lines it adds stands for left-out code.
fn refuse_elision(hunk: &Hunk, n: usize, removed: usize, path: &str) -> Result<()> {
    if removed > 0
        && let Some(HunkLine::Add(l)) = hunk
            .lines
            .iter()
            .find(|l| matches!(l, HunkLine::Add(s) if is_elision(s)))
    {
        return Err(Error::ModelAnswer(format!(
            "hunk {} of {path} replaces {removed} line(s) with a placeholder for left-out code ({:?}); applying it \
             would delete code: the model must write the full replacement",
            n + 1,
            excerpt(l.trim(), 80)
        )));
    }
    Ok(())
}

/// The place of hunk `n` (`hunk`, with an old side of `old_len` lines, at least one) found by its content: (start,
/// tier, whether the line-number hint broke a tie). Refuses a hunk that changes a line a narrowed file may not have
/// changed, and a cut-off hunk that does not reach the end of the file.
fn place_by_content(
    haystack: &mut Haystack<'_>,
    n: usize,
    hunk: &Hunk,
    old_len: usize,
    target: &Target<'_>,
) -> Result<(usize, MatchTier, bool)> {
    let path = target.path;
    let (start, tier, tie_break) = find_unique(haystack, n, hunk, path, target.within)?;
    if let Some(refusal) = target
        .within
        .and_then(|w| w.changes_outside(hunk, start, target.keys.len(), path))
    {
        return Err(refusal);
    }
    if hunk.maybe_cut_off && start + old_len != target.keys.len() {
        return Err(Error::ModelAnswer(format!(
            "hunk {} of {path} ends the answer on a changed line, shorter than its header says and before \
             the end of the file: the answer looks cut off; retry, or raise [limits] max_output_tokens",
            n + 1
        )));
    }
    Ok((start, tier, tie_break))
}

#[cfg(test)]
mod tests {
    use super::*;
    use HunkLine::{Add, Context as C, Remove as R};

    /// An edit of `path` with one hunk of `lines`, without a line-number hint.
    pub(super) fn edit(path: &str, lines: Vec<HunkLine>) -> FileEdit {
        FileEdit {
            path: path.into(),
            creates: false,
            hunks: vec![Hunk {
                old_start_hint: None,
                maybe_cut_off: false,
                anchor: Default::default(),
                lines,
            }],
            op: EditOp::Edit,
        }
    }

    /// A regular file holding `text`.
    pub(super) fn pre(text: &str) -> PreImage {
        PreImage {
            text: text.into(),
            mode: MODE_REGULAR,
        }
    }

    #[test]
    fn replaces_a_uniquely_located_line() {
        let e = edit("a", vec![C("a".into()), R("b".into()), Add("B".into())]);
        let c = locate_file(&e, Some(&pre("a\nb\nc\n"))).unwrap();
        assert_eq!(c.post, b"a\nB\nc\n");
        assert_eq!(c.hunks[0].old_start, 1);
        assert_eq!(c.hunks[0].tier, MatchTier::Exact);
    }

    #[test]
    fn refuses_overlapping_hunks() {
        let mut e = edit("a", vec![R("x".into()), C("y".into()), Add("1".into())]);
        e.hunks.push(Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            anchor: Default::default(),
            lines: vec![R("y".into()), Add("2".into())],
        });
        let err = locate_file(&e, Some(&pre("x\ny\n"))).unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
    }

    #[test]
    fn refuses_elisions_that_would_delete_code() {
        let e = edit(
            "a",
            vec![
                C("def f():".into()),
                R("    a()".into()),
                R("    b()".into()),
                Add("    # ... rest unchanged".into()),
            ],
        );
        let err = locate_file(&e, Some(&pre("def f():\n    a()\n    b()\n"))).unwrap_err();
        assert!(
            err.to_string().contains("placeholder for left-out code"),
            "{err}"
        );
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

    #[test]
    fn a_path_the_model_wrote_is_shown_without_its_invisible_characters() {
        let mut map = BTreeMap::new();
        map.insert("a".to_string(), Some(pre("x\n")));
        let hostile = "evil\u{202E}yp.txt\u{1b}[2J";
        let err = locate_all(&[edit(hostile, vec![R("x".into())])], &map)
            .unwrap_err()
            .to_string();
        assert!(err.contains("evil<U+202E>yp.txt<U+001B>[2J"), "{err}");
        assert!(
            !err.contains('\u{202E}') && !err.contains('\u{1b}'),
            "{err}"
        );
    }
}
