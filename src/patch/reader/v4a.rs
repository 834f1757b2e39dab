//! Reads OpenAI's V4A patch, the `apply_patch` format of Codex and GPT-OSS (and of the Responses API's
//! `apply_patch` tool), into [`FileEdit`]s. Pure; it never looks at file contents.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH          every following line is `+` and a line of the new file
//! *** Delete File: PATH       nothing follows
//! *** Update File: PATH
//! *** Move to: NEW_PATH       optional, right after its Update line
//! @@ SCOPE                    a hunk: `@@`, optionally with a scope line (`@@ def foo():`); several `@@` lines in a
//!  context                    row narrow one scope inside another; then ` ` context, `-` removed, `+` added lines
//! -removed
//! +added
//! *** End of File             optional, after a hunk: the hunk ends at the file's last line
//! *** End Patch
//! ```
//!
//! Held to the other syntaxes' rules: a path is resolved against the selection like a diff's ([`resolve_path`]), so
//! a name that is not a selected file stays that name and is refused when the edit is located; the scope line and
//! `*** End of File` only break a tie between equal matches ([`crate::patch::Anchor`]), never place a hunk its lines
//! do not match. Two Update sections of one file are one edit (like two diff sections); any other file named twice
//! (added, deleted or moved, and named again) is refused.
//!
//! What it tolerates: prose, fences and reasoning around the patch (the caller strips reasoning), a missing
//! `*** Begin Patch` when a file operation's header is there, blank lines standing for empty context lines, context
//! lines that lost their leading space (only inside a hunk that goes on, as in a diff; the other lines of such a
//! hunk that start with a space are then read whole), a first hunk without `@@`, unified-diff numbers on an `@@`
//! line (kept as a tie-break hint), the lines of a deleted file shown as `-` lines, an Add File whose lines all lost
//! their `+`. A missing `*** End Patch` is accepted only when something follows the patch (a closing fence, prose):
//! a patch that runs to the very end of the answer without it may be cut off, and is refused.
//!
//! What it refuses: a hunk before any file header, a header without a path, an Update without hunks (and without
//! a move), an Add File mixing `+` lines and unprefixed ones, a file named twice, a patch with no operation.

use std::collections::HashMap;

use super::{Files, body_lines, clean_path, old_start_hint, resolve_path, set_op};
use crate::error::{Error, Result};
use crate::patch::{Anchor, Cancel, EditOp, FileEdit, Hunk, HunkLine};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A file operation's header line, with the path as written.
enum Header<'a> {
    Add(&'a str),
    Delete(&'a str),
    Update(&'a str),
}

fn header(line: &str) -> Option<Header<'_>> {
    let t = line.trim();
    let path = |p: &str| t.strip_prefix(p).map(str::trim);
    path(ADD)
        .map(Header::Add)
        .or_else(|| path(DELETE).map(Header::Delete))
        .or_else(|| path(UPDATE).map(Header::Update))
}

/// A line of the patch's own grammar (not a hunk line): a header, `*** Move to`, `*** End of File`, the envelope.
fn is_marker(line: &str) -> bool {
    let t = line.trim();
    header(t).is_some() || t == BEGIN || t == END || t.starts_with(MOVE) || t == END_OF_FILE
}

/// Whether a line ends the hunk before it: an `@@` line, a marker, a fence (at the start of the line: a context
/// line ` ```c` is content).
fn ends_hunk(line: &str) -> bool {
    line.starts_with("@@") || line.starts_with("```") || is_marker(line)
}

/// Whether a line the patch stopped at leaves lines that look like a hunk's after it, which would be lost.
fn leaves_hunk_lines(rest: &[&str]) -> Option<usize> {
    rest.iter()
        .position(|l| l.starts_with("@@") || l.starts_with(['+', '-']) || header(l).is_some())
}

/// Whether the answer holds a V4A patch: a `*** Begin Patch` line or a file operation's header.
pub(super) fn has_patch(lines: &[&str]) -> bool {
    lines
        .iter()
        .any(|l| l.trim() == BEGIN || header(l).is_some())
}

/// How the answer names each file, to refuse a file named twice.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Named {
    Added,
    Deleted,
    Updated,
    Moved,
    MovedTo,
}

impl Named {
    fn verb(self) -> &'static str {
        match self {
            Named::Added => "adds",
            Named::Deleted => "deletes",
            Named::Updated => "updates",
            Named::Moved => "moves",
            Named::MovedTo => "moves a file to",
        }
    }
}

/// The edits of the V4A patch in `lines`.
pub(super) fn read(lines: &[&str], selected: &[&str], cancel: Cancel<'_>) -> Result<Vec<FileEdit>> {
    let mut i = match lines.iter().position(|l| l.trim() == BEGIN) {
        Some(b) => b + 1,
        None => lines.iter().position(|l| header(l).is_some()).unwrap_or(0),
    };
    let mut files = Files::default();
    let mut named: HashMap<String, Named> = HashMap::new();
    let mut ended = false;
    while i < lines.len() {
        cancel.check()?;
        let line = lines[i];
        if line.trim() == END {
            ended = true;
            break;
        }
        let Some(h) = header(line) else {
            if line.starts_with("@@") {
                return Err(Error::ModelAnswer(format!(
                    "the patch has a hunk before any file header (answer line {}); the model must write \
                     `*** Update File: PATH` above its hunks; propose again",
                    i + 1
                )));
            }
            if line.trim().is_empty() {
                i += 1;
                continue;
            }
            // A fence or prose after the last operation ends the patch; nothing that looks like a hunk or an
            // operation may follow it, or part of the patch would be lost.
            if let Some(k) = leaves_hunk_lines(&lines[i + 1..]) {
                return Err(Error::ModelAnswer(format!(
                    "the patch holds a line the worker cannot read (answer line {}: {:?}) before more of the patch \
                     (line {}); the model must prefix every hunk line with ' ', '-' or '+'; propose again",
                    i + 1,
                    crate::error::excerpt(line.trim(), 80),
                    i + k + 2
                )));
            }
            break;
        };
        i = match h {
            Header::Add(raw) => add_file(lines, i, raw, selected, &mut files, &mut named)?,
            Header::Delete(raw) => {
                let path = named_path(raw, i, selected)?;
                note(&mut named, &path, Named::Deleted)?;
                files.add(path.clone(), false, Vec::new())?;
                set_op(&mut files, &path, EditOp::Delete);
                // The deleted file's lines, shown as `-` lines, say nothing the deletion does not.
                (i + 1..lines.len())
                    .find(|&k| !(lines[k].starts_with('-') || lines[k].trim().is_empty()))
                    .unwrap_or(lines.len())
            }
            Header::Update(raw) => update_file(lines, i, raw, selected, &mut files, &mut named)?,
        };
    }
    if !ended
        && lines[i.min(lines.len())..]
            .iter()
            .all(|l| l.trim().is_empty())
    {
        return Err(Error::ModelAnswer(
            "the patch runs to the end of the answer without `*** End Patch`, so it may be cut off; retry, or raise \
             [limits] max_output_tokens"
                .into(),
        ));
    }
    if files.edits.is_empty() {
        return Err(Error::ModelAnswer(
            "the `*** Begin Patch` envelope holds no file operation (`*** Add File:`, `*** Update File:` or \
             `*** Delete File:`); propose again"
                .into(),
        ));
    }
    Ok(files.edits)
}

/// The path of a header at answer line index `i`, resolved against the selection; refused when it is empty.
fn named_path(raw: &str, i: usize, selected: &[&str]) -> Result<String> {
    if clean_path(raw).is_empty() {
        return Err(Error::ModelAnswer(format!(
            "the patch's header at answer line {} names no file; propose again",
            i + 1
        )));
    }
    Ok(resolve_path(raw, selected))
}

/// Record that the answer names `path` as `how`; refused when it named it before, unless both are updates.
fn note(named: &mut HashMap<String, Named>, path: &str, how: Named) -> Result<()> {
    match named.insert(path.to_string(), how) {
        None => Ok(()),
        Some(Named::Updated) if how == Named::Updated => Ok(()),
        Some(before) => Err(Error::ModelAnswer(format!(
            "the patch {} {} and also {} it, so what it meant is unclear; propose again, naming each file once",
            before.verb(),
            crate::names::shown(path),
            how.verb().trim_end_matches(" a file to")
        ))),
    }
}

/// The `*** Add File` section at answer line index `at`; returns the index after it.
fn add_file(
    lines: &[&str],
    at: usize,
    raw: &str,
    selected: &[&str],
    files: &mut Files,
    named: &mut HashMap<String, Named>,
) -> Result<usize> {
    let path = named_path(raw, at, selected)?;
    note(named, &path, Named::Added)?;
    let start = at + 1;
    let end = (start..lines.len())
        .find(|&k| ends_hunk(lines[k]))
        .unwrap_or(lines.len());
    let mut body: Vec<&str> = lines[start..end].to_vec();
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let text: Vec<&&str> = body.iter().filter(|l| !l.trim().is_empty()).collect();
    let plus = text.iter().filter(|l| l.starts_with('+')).count();
    let content: Vec<String> = if plus == text.len() {
        body.iter()
            .map(|l| l.strip_prefix('+').unwrap_or(l).to_string())
            .collect()
    } else if plus == 0 {
        body.iter().map(|l| l.to_string()).collect()
    } else {
        return Err(Error::ModelAnswer(format!(
            "the `*** Add File: {}` section mixes lines that start with `+` and lines that do not, so which are the \
             file's is unclear; the model must start every line of a new file with `+`; propose again",
            crate::names::shown(&path)
        )));
    };
    let hunks = match content.is_empty() {
        true => Vec::new(),
        false => vec![hunk(content.into_iter().map(HunkLine::Add).collect())],
    };
    files.add(path, true, hunks)?;
    Ok(if lines.get(end).is_some_and(|l| l.trim() == END_OF_FILE) {
        end + 1
    } else {
        end
    })
}

fn hunk(lines: Vec<HunkLine>) -> Hunk {
    Hunk {
        old_start_hint: None,
        lines,
        maybe_cut_off: false,
        anchor: Anchor::default(),
    }
}

/// The `*** Update File` section at answer line index `at` (with its `*** Move to`); returns the index after it.
fn update_file(
    lines: &[&str],
    at: usize,
    raw: &str,
    selected: &[&str],
    files: &mut Files,
    named: &mut HashMap<String, Named>,
) -> Result<usize> {
    let path = named_path(raw, at, selected)?;
    let mut i = at + 1;
    let move_at = (i..lines.len()).find(|&k| !lines[k].trim().is_empty());
    let to = match move_at.and_then(|k| lines[k].trim().strip_prefix(MOVE)) {
        Some(dest) => {
            i = move_at.map_or(i, |k| k + 1);
            let to = named_path(dest, i - 1, selected)?;
            note(named, &path, Named::Moved)?;
            note(named, &to, Named::MovedTo)?;
            Some(to)
        }
        None => {
            note(named, &path, Named::Updated)?;
            None
        }
    };
    let (hunks, next) = update_hunks(lines, i, &path)?;
    if hunks.is_empty() && to.is_none() {
        return Err(Error::ModelAnswer(format!(
            "the `*** Update File: {}` section has no hunk; the model must show the lines it changes (`@@`, then \
             ` `, `-` and `+` lines); propose again",
            crate::names::shown(&path)
        )));
    }
    files.add(path.clone(), false, hunks)?;
    if let Some(to) = to {
        set_op(files, &path, EditOp::MoveTo(to));
    }
    Ok(next)
}

/// The hunks of an Update section from answer line index `start`; returns them and the index after the last.
fn update_hunks(lines: &[&str], start: usize, path: &str) -> Result<(Vec<Hunk>, usize)> {
    let mut hunks = Vec::new();
    let mut anchor = Anchor::default();
    let mut hint = None;
    let mut i = start;
    while let Some(line) = lines.get(i) {
        let t = line.trim();
        if let Some(rest) = line.trim_end().strip_prefix("@@") {
            // `@@`, `@@ SCOPE`, or a unified diff's `@@ -1,2 +1,3 @@ SCOPE`.
            let rest = rest.trim();
            let scope = match rest.strip_prefix('-').and(rest.find("@@")) {
                Some(k) => {
                    hint = old_start_hint(t);
                    rest[k + 2..].trim()
                }
                None => rest,
            };
            if !scope.is_empty() {
                anchor.scope.push(scope.to_string());
            }
            i += 1;
            continue;
        }
        if is_marker(line) || line.starts_with("```") {
            break;
        }
        let (body, next) = hunk_body(lines, i);
        if body.is_empty() {
            break;
        }
        refuse_diff_like_lines(lines, i, next, &hunks, path)?;
        i = next;
        anchor.end_of_file = lines.get(i).is_some_and(|l| l.trim() == END_OF_FILE);
        if anchor.end_of_file {
            i += 1;
        }
        hunks.push(Hunk {
            old_start_hint: hint.take(),
            lines: body,
            maybe_cut_off: false,
            anchor: std::mem::take(&mut anchor),
        });
    }
    if !anchor.scope.is_empty() {
        return Err(Error::ModelAnswer(format!(
            "hunk {} of {} has an `@@` line but no line after it; the model must show the lines it changes",
            hunks.len() + 1,
            crate::names::shown(path)
        )));
    }
    Ok((hunks, i))
}

/// Refuse the hunk read from `lines[start..next]` when its context lines lost their ` ` prefix and it holds (or is
/// ended by) a line that starts like a diff's own (`---`, `+++`, `@@ -`): such a line may be a context line of the
/// file (a diff quoted in a test), so which lines are context is unclear.
fn refuse_diff_like_lines(
    lines: &[&str],
    start: usize,
    next: usize,
    hunks: &[Hunk],
    path: &str,
) -> Result<()> {
    let body = &lines[start..next];
    let lost = body
        .iter()
        .any(|l| l.as_bytes().first().is_some_and(|b| !b" -+\\".contains(b)));
    let diff_like =
        |l: &&str| l.starts_with("---") || l.starts_with("+++") || l.starts_with("@@ -");
    if lost && (body.iter().any(diff_like) || lines.get(next).is_some_and(diff_like)) {
        return Err(Error::ModelAnswer(format!(
            "hunk {} of {} lost the ' ' prefix of its context lines and holds a line that starts like a diff's own \
             (`---`, `+++` or `@@ -`), so which of its lines are context is unclear; the model must prefix every hunk \
             line with ' ', '-' or '+'; propose again",
            hunks.len() + 1,
            crate::names::shown(path)
        )));
    }
    Ok(())
}

/// One hunk's lines from `start`; returns them and the index after the hunk. As in a diff, a line without a prefix
/// is a context line that lost its leading space when a change of the same hunk still follows it (and then the
/// hunk's lines that start with a space are read whole: that space is indentation); otherwise it ends the hunk.
fn hunk_body(lines: &[&str], start: usize) -> (Vec<HunkLine>, usize) {
    let limit = (start..lines.len())
        .find(|&k| ends_hunk(lines[k]))
        .unwrap_or(lines.len());
    let mut changed_after = vec![false; limit - start + 1];
    for k in (start..limit).rev() {
        changed_after[k - start] = lines[k].starts_with(['+', '-']) || changed_after[k - start + 1];
    }
    let mut end = start;
    let mut unprefixed = false;
    while end < limit {
        match lines[end].as_bytes().first() {
            None | Some(b' ' | b'-' | b'+' | b'\\') => {}
            Some(_) if changed_after[end + 1 - start] => unprefixed = true,
            Some(_) => break,
        }
        end += 1;
    }
    let mut body = body_lines(&lines[start..end], unprefixed);
    // Blank lines before what ends the hunk separate it from the next one; they are not context.
    let mut kept = end;
    while body.last().is_some_and(|(_, blank)| *blank) {
        body.pop();
        kept -= 1;
    }
    let next = if body.is_empty() {
        start
    } else {
        end.max(kept)
    };
    (body.into_iter().map(|(l, _)| l).collect(), next)
}
