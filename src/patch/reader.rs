//! Reads a model's free-form answer into [`FileEdit`]s. Pure; it never looks at file contents.
//!
//! What it tolerates, because weak models write it:
//! - `<think>…</think>` reasoning, prose, code fences and heredocs (`cat <<'EOF'`) around the edit; CRLF answers;
//! - unified diffs with wrong, missing or partial `@@` numbers (hunks are recounted; the number is kept only as a
//!   tie-break hint), missing `@@` lines, missing or extra `a/` `b/` prefixes, `./` paths, a path given only by its
//!   unique suffix among the selected files, context lines that lost their leading space (only inside a hunk that
//!   goes on), blank lines standing for empty context lines;
//! - search/replace blocks (`<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE`, 5 to 9 markers) under the file's path;
//! - a JSON edit list `{"edits":[{"path","old","new"}]}` (identical repeats count once);
//! - the whole new file in one fenced block, when that format was asked for (small files only);
//! - OpenAI's V4A patch (`*** Begin Patch`, Add / Delete / Update / Move), read by [`v4a`].
//!
//! A unified diff may delete a file (`+++ /dev/null`, its hunks removing every line) and move one (`rename from` /
//! `rename to` under its `diff --git` line, with or without hunks); whether the policy allows that is the
//! service's call.
//!
//! What it refuses of a diff's headers: a section whose `---` and `+++` lines (or its `diff --git` line) name two
//! different files without git's `rename from`/`rename to` lines, and a copy (the headers are never resolved to one
//! of them silently). A name that is a
//! selected file as written (`b/x.py` in a `--no-prefix` diff) is that file; otherwise git's `a/` `b/` go.
//!
//! The syntaxes that say where an edit goes (diff, search/replace, JSON) are recognised whatever format was asked;
//! a bare code block is read as a whole file only when the whole-file format was asked.
//! What it is not: it does not decide where an edit lands ([`super::locate`]) nor whether it is allowed (the service).

mod v4a;

use std::collections::{HashMap, HashSet};

use super::{Cancel, EditOp, FileEdit, Hunk, HunkLine};
use crate::error::{Error, Result, excerpt};

/// How the model was asked to write its edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerFormat {
    /// A unified diff, hunks with `@@` headers.
    Udiff,
    /// `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks under each file's path.
    SearchReplace,
    /// Each changed file's whole new content in a fenced block under its path.
    WholeFile,
    /// `{"edits": [{"path", "old", "new"}]}`, constrained by a JSON schema where the server supports one.
    Json,
    /// OpenAI's V4A patch (`*** Begin Patch` ... `*** End Patch`), the `apply_patch` format of Codex and GPT-OSS.
    ApplyPatch,
}

impl AnswerFormat {
    /// The format's name as the policy writes it (`[edit] format`).
    pub fn name(self) -> &'static str {
        match self {
            AnswerFormat::Udiff => "udiff",
            AnswerFormat::SearchReplace => "search_replace",
            AnswerFormat::WholeFile => "whole_file",
            AnswerFormat::Json => "json",
            AnswerFormat::ApplyPatch => "apply_patch",
        }
    }
}

/// Largest file (in lines) that may be edited by sending it whole.
pub const WHOLE_FILE_MAX_LINES: usize = 400;

/// The most different files one answer may name. A selection holds at most 100 files, and only selected files can
/// be edited: an answer naming more is refused as it is read, before any of it is located.
pub const MAX_FILES_NAMED: usize = 1_000;

/// Read the edits out of `answer`. `selected` are the paths the model was shown; they resolve sloppy paths.
///
/// Reading costs time linear in the answer's size (and the selection's): an edit of a file already named is found
/// by its path in a hash map, every line is looked at a bounded number of times.
pub fn read_answer(answer: &str, format: AnswerFormat, selected: &[&str]) -> Result<Vec<FileEdit>> {
    read_answer_cancellable(answer, format, selected, Cancel::NEVER)
}

/// [`read_answer`], asking `cancel` as it goes (every few lines, sections and edits): once it says so, the reading
/// stops with [`Error::Cancelled`].
pub fn read_answer_cancellable(
    answer: &str,
    format: AnswerFormat,
    selected: &[&str],
    cancel: Cancel<'_>,
) -> Result<Vec<FileEdit>> {
    read_answer_noted(answer, format, selected, cancel).map(|r| r.edits)
}

/// What an answer was read as: its edits, and what the primary should know about how they were read (a diff
/// section whose `---` and `+++` lines spelled its file differently), one sentence each.
#[derive(Debug, Default)]
pub struct Read {
    /// The edits, one per file, in the order the files are first named.
    pub edits: Vec<FileEdit>,
    /// Sentences for the primary, each once.
    pub notes: Vec<String>,
}

/// [`read_answer_cancellable`], with the notes of [`Read`].
pub fn read_answer_noted(
    answer: &str,
    format: AnswerFormat,
    selected: &[&str],
    cancel: Cancel<'_>,
) -> Result<Read> {
    let answer = strip_reasoning(answer, cancel)?;
    if answer.trim().is_empty() {
        return Err(Error::ModelAnswer(
            "the model returned an empty answer; retry, or give a more specific task".into(),
        ));
    }
    let lines: Vec<&str> = answer.lines().collect();
    if lines.iter().filter(|l| l.starts_with("```")).count() % 2 == 1 {
        return Err(Error::ModelAnswer(
            "the answer ends inside an unclosed code block, so it may be cut off; retry, or raise \
             [limits] max_output_tokens"
                .into(),
        ));
    }
    let mut json_error = None;
    let mut notes = Vec::new();
    let mut edits = if format == AnswerFormat::Json || looks_like_json(&answer) {
        match read_json_lines(&answer, selected, cancel) {
            Ok(e) => e,
            Err(e) => {
                json_error = Some(e);
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    if edits.is_empty() && v4a::has_patch(&lines) {
        edits = v4a::read(&lines, selected, cancel)?;
    }
    if edits.is_empty() && has_search_replace(&lines) {
        edits = read_search_replace(&lines, selected, cancel)?;
    }
    if edits.is_empty() && has_diff(&lines) {
        let files = read_udiff_lines(&lines, selected, cancel)?;
        edits = files.edits;
        notes = files.notes;
    }
    if edits.is_empty() && format == AnswerFormat::WholeFile {
        edits = read_whole_file(&lines, selected, cancel)?;
    }
    if edits.is_empty()
        && format == AnswerFormat::Json
        && let Some(e) = json_error
    {
        return Err(e);
    }
    if edits.is_empty() {
        let what = match format {
            AnswerFormat::Udiff => {
                "no unified diff found (expected `--- a/PATH`, `+++ b/PATH` and `@@` hunks)"
            }
            AnswerFormat::SearchReplace => "no SEARCH/REPLACE block found",
            AnswerFormat::WholeFile => "no fenced code block with the new file found",
            AnswerFormat::Json => "the answer is not the JSON edit list that was asked for",
            AnswerFormat::ApplyPatch => {
                "no V4A patch found (expected `*** Begin Patch`, `*** Update File: PATH`, `@@` hunks and \
                 `*** End Patch`)"
            }
        };
        return Err(no_edit(what, &answer));
    }
    Ok(Read { edits, notes })
}

fn no_edit(what: &str, answer: &str) -> Error {
    Error::ModelAnswer(format!(
        "{what}; the answer began: {:?}. Retry, simplify the task, or use a stronger model",
        excerpt(answer.trim(), 300)
    ))
}

/// The edits of an answer by file, in the order the files are first named; at most [`MAX_FILES_NAMED`] files.
#[derive(Default)]
struct Files {
    edits: Vec<FileEdit>,
    /// The index in `edits` of each file's edit.
    index: HashMap<String, usize>,
    /// What the primary should know about how they were read, each once.
    notes: Vec<String>,
}

impl Files {
    /// Keep `note` for the primary, unless it is already kept.
    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// Add `hunks` to the edit of `path`: a new edit (marked `creates`) when the answer had not named it yet.
    fn add(&mut self, path: String, creates: bool, hunks: Vec<Hunk>) -> Result<()> {
        if let Some(&k) = self.index.get(&path) {
            self.edits[k].hunks.extend(hunks);
            return Ok(());
        }
        if self.edits.len() == MAX_FILES_NAMED {
            return Err(Error::ModelAnswer(format!(
                "the answer names more than {MAX_FILES_NAMED} different files (the next one: {}), so it was refused \
                 unread; only the selected files can be edited: propose again, asking for an edit of those files only",
                excerpt(&path, 100)
            )));
        }
        self.index.insert(path.clone(), self.edits.len());
        self.edits.push(FileEdit {
            path,
            creates,
            hunks,
            op: EditOp::Edit,
        });
        Ok(())
    }
}

/// Remove `<think>…</think>` blocks. An answer that is all reasoning (unclosed) is refused.
fn strip_reasoning(answer: &str, cancel: Cancel<'_>) -> Result<String> {
    // Reasoning blocks open at the start of a line (a `<think>` inside code or a diff line is content).
    // Chat templates of some reasoning models drop the opening tag: a closing tag with no opening before it ends
    // reasoning that began with the answer.
    let mut rest = answer;
    for (open, close) in [("<think>", "</think>"), ("<thinking>", "</thinking>")] {
        // An orphan closing tag at the start of a line, with no opening tag line before it.
        let mut offset = 0;
        for line in rest.split_inclusive('\n') {
            cancel.check()?;
            if line.starts_with(open) {
                break;
            }
            if line.trim_start().starts_with(close) {
                let at = offset + line.find(close).unwrap_or(0) + close.len();
                rest = &rest[at..];
                break;
            }
            offset += line.len();
        }
    }
    let mut out = String::with_capacity(rest.len());
    let mut in_block: Option<&str> = None;
    for line in rest.split_inclusive('\n') {
        cancel.check()?;
        match in_block {
            Some(close) => {
                if let Some(i) = line.find(close) {
                    in_block = None;
                    out.push_str(&line[i + close.len()..]);
                }
            }
            None => {
                let open = [("<think>", "</think>"), ("<thinking>", "</thinking>")]
                    .into_iter()
                    .find(|(o, _)| line.starts_with(o));
                match open {
                    Some((o, close)) => match line[o.len()..].find(close) {
                        Some(i) => out.push_str(&line[o.len() + i + close.len()..]),
                        None => in_block = Some(close),
                    },
                    None => out.push_str(line),
                }
            }
        }
    }
    if in_block.is_some() {
        return Err(Error::ModelAnswer(
            "the answer is reasoning that never finished (`<think>` without `</think>`); raise \
             [limits] max_output_tokens or use a model that answers directly"
                .into(),
        ));
    }
    Ok(out)
}

/// A path as the model wrote it, without surrounding quotes, backticks, emphasis or a leading `./`.
fn clean_path(raw: &str) -> &str {
    let p = raw
        .trim()
        .trim_matches(|c| c == '`' || c == '*' || c == '"' || c == '\'');
    p.strip_prefix("./").unwrap_or(p)
}

/// Map a path as the model wrote it to a selected path where that is unambiguous.
pub fn resolve_path(raw: &str, selected: &[&str]) -> String {
    let p = clean_path(raw);
    if selected.contains(&p) {
        return p.to_string();
    }
    for prefix in ["a/", "b/"] {
        if let Some(s) = p.strip_prefix(prefix)
            && selected.contains(&s)
        {
            return s.to_string();
        }
    }
    let by_suffix: Vec<&&str> = selected
        .iter()
        .filter(|s| s.ends_with(&format!("/{p}")) || p.ends_with(&format!("/{s}")))
        .collect();
    if by_suffix.len() == 1 {
        return by_suffix[0].to_string();
    }
    p.to_string()
}

fn is_header_pair(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

fn has_diff(lines: &[&str]) -> bool {
    (0..lines.len()).any(|i| is_header_pair(lines, i)) || lines.iter().any(|l| l.starts_with("@@"))
}

/// Reads every unified diff in `answer`, with any number of files (tests and tools; the service uses
/// [`read_answer`]).
pub fn read_udiff(answer: &str, selected: &[&str]) -> Result<Vec<FileEdit>> {
    let lines: Vec<&str> = answer.lines().collect();
    let edits = read_udiff_lines(&lines, selected, Cancel::NEVER)?.edits;
    if edits.is_empty() {
        return Err(no_edit(
            "no unified diff found (expected `--- a/PATH`, `+++ b/PATH` and `@@` hunks)",
            answer,
        ));
    }
    Ok(edits)
}

fn read_udiff_lines(lines: &[&str], selected: &[&str], cancel: Cancel<'_>) -> Result<Files> {
    let mut files = Files::default();
    let headers = (0..lines.len()).any(|i| is_header_pair(lines, i));
    let mut git_line: Option<&str> = None;
    // The `rename from`/`rename to` of the `diff --git` line before, not yet given its `---`/`+++` pair.
    let mut rename: Option<(String, String)> = None;
    let mut i = 0;
    while i < lines.len() {
        cancel.check()?;
        let (path, creates, op) = if is_header_pair(lines, i) {
            let (path, creates, op) = match rename.take() {
                Some((from, to)) => renamed_section(lines[i], lines[i + 1], from, to, selected)?,
                None => {
                    let (path, creates, op) = section_path(lines[i], lines[i + 1], selected)?;
                    if let Some(note) = headers_note(lines[i], lines[i + 1], &path) {
                        files.note(note);
                    }
                    if let Some(git) = git_line {
                        agrees_with_git_line(git, &path, selected)?;
                    }
                    (path, creates, op)
                }
            };
            git_line = None;
            i += 2;
            (path, creates, op)
        } else if !headers && lines[i].starts_with("@@") && selected.len() == 1 {
            // Hunks without file headers: unambiguous only when one file was selected.
            (selected[0].to_string(), false, EditOp::Edit)
        } else {
            // A `diff --git` line belongs to the `---`/`+++` pair that follows its extended header lines; a rename
            // that no pair follows moves the file as it is.
            let extended = git_line.is_some() && is_git_extended_header(lines[i]);
            if !extended && let Some((from, to)) = rename.take() {
                let (from, to) = (one_name(&from, selected), one_name(&to, selected));
                files.add(from.clone(), false, Vec::new())?;
                set_op(&mut files, &from, EditOp::MoveTo(to));
            }
            if lines[i].starts_with("diff --git ") {
                git_line = Some(lines[i]);
                rename = rename_of(lines, i);
            } else if !extended {
                git_line = None;
            }
            i += 1;
            continue;
        };
        let deletes = op == EditOp::Delete;
        let hunks = read_section_hunks(lines, &mut i, &path, cancel)?;
        if hunks.is_empty() && !deletes && !matches!(op, EditOp::MoveTo(_)) {
            return Err(Error::ModelAnswer(format!(
                "the diff header for {path} is followed by no hunk; the model must show the lines it changes"
            )));
        }
        files.add(path.clone(), creates, hunks)?;
        set_op(&mut files, &path, op);
    }
    if let Some((from, to)) = rename {
        let (from, to) = (one_name(&from, selected), one_name(&to, selected));
        files.add(from.clone(), false, Vec::new())?;
        set_op(&mut files, &from, EditOp::MoveTo(to));
    }
    Ok(files)
}

/// The hunks of the diff section of `path` from line index `*i` (after its `---`/`+++` pair), moving `*i` past them.
fn read_section_hunks(
    lines: &[&str],
    i: &mut usize,
    path: &str,
    cancel: Cancel<'_>,
) -> Result<Vec<Hunk>> {
    let mut hunks = Vec::new();
    loop {
        cancel.check()?;
        let (hint, old_count) = match lines.get(*i) {
            Some(l) if l.starts_with("@@") => {
                *i += 1;
                (old_start_hint(l), old_count_hint(l))
            }
            // A header straight followed by hunk lines: the model forgot `@@`.
            Some(l) if hunks.is_empty() && starts_hunk_line(l) => (None, None),
            // Lines the hunk reader stopped at (unprefixed trailing context, prose) before another hunk of
            // the same file: skip to that hunk rather than lose it.
            Some(_) if !hunks.is_empty() => match next_hunk_of_same_file(lines, *i) {
                Some(k) => {
                    *i = k;
                    continue;
                }
                None => break,
            },
            _ => break,
        };
        let (body, next) = read_hunk_body(lines, *i);
        *i = next;
        if body.is_empty() {
            return Err(Error::ModelAnswer(format!(
                "hunk {} of {path} has no line the worker can read (answer line {}); the model must \
                 prefix lines with ' ', '-' or '+'",
                hunks.len() + 1,
                *i
            )));
        }
        let old_len = body
            .iter()
            .filter(|l| matches!(l, HunkLine::Context(_) | HunkLine::Remove(_)))
            .count();
        let ends_answer = lines[*i..].iter().all(|l| l.trim().is_empty());
        // Cut off: shorter than its header says, at the very end of the answer, and missing the trailing
        // context a complete hunk has (as much as its leading context), or without any change yet.
        let is_ctx = |l: &&HunkLine| matches!(l, HunkLine::Context(_));
        let leading = body.iter().take_while(is_ctx).count();
        let trailing = body.iter().rev().take_while(is_ctx).count();
        let no_change = leading == body.len();
        let maybe_cut_off = ends_answer
            && old_count.is_some_and(|n| old_len < n)
            && (no_change || trailing < leading || trailing == 0);
        hunks.push(Hunk {
            old_start_hint: hint,
            lines: body,
            maybe_cut_off,
            anchor: Default::default(),
        });
    }
    Ok(hunks)
}

/// Give the edit of `path` in `files` the operation `op` (an edit of a file named twice keeps the last one).
fn set_op(files: &mut Files, path: &str, op: EditOp) {
    if op == EditOp::Edit {
        return;
    }
    if let Some(&k) = files.index.get(path) {
        files.edits[k].op = op;
    }
}

/// The `rename from A` and `rename to B` lines among the extended header lines of the `diff --git` line at `i`.
fn rename_of(lines: &[&str], i: usize) -> Option<(String, String)> {
    let mut from = None;
    let mut to = None;
    for l in lines[i + 1..]
        .iter()
        .take_while(|l| is_git_extended_header(l))
    {
        if let Some(f) = l.strip_prefix("rename from ") {
            from = Some(clean_path(f).to_string());
        } else if let Some(t) = l.strip_prefix("rename to ") {
            to = Some(clean_path(t).to_string());
        }
    }
    from.zip(to)
}

/// The section of a rename from `from` to `to` whose `---`/`+++` lines are `old_line` and `new_line`: they must
/// name the same two files.
fn renamed_section(
    old_line: &str,
    new_line: &str,
    from: String,
    to: String,
    selected: &[&str],
) -> Result<(String, bool, EditOp)> {
    let (from, to) = (one_name(&from, selected), one_name(&to, selected));
    let (old, new) = (
        one_name(header_name(old_line), selected),
        one_name(header_name(new_line), selected),
    );
    if old != from || new != to {
        return Err(Error::ModelAnswer(format!(
            "the diff renames {} to {}, but its `---`/`+++` lines name {} and {}; the model must name the same two \
             files on every header line of a section; propose again",
            crate::names::shown(&from),
            crate::names::shown(&to),
            crate::names::shown(&old),
            crate::names::shown(&new)
        )));
    }
    Ok((from, false, EditOp::MoveTo(to)))
}

fn starts_hunk_line(l: &str) -> bool {
    (l.starts_with(['+', '-', ' ']) && !l.starts_with("--- ") && !l.starts_with("+++ "))
        || l.starts_with('\\')
}

/// The index of the next `@@` line at or after `i`, if no other file's header, `diff --git` or fence comes first.
fn next_hunk_of_same_file(lines: &[&str], i: usize) -> Option<usize> {
    (i..lines.len())
        .find(|&k| ends_hunk(lines, k))
        .filter(|&k| lines[k].starts_with("@@"))
}

fn ends_hunk(lines: &[&str], i: usize) -> bool {
    let l = lines[i];
    l.starts_with("@@")
        || is_header_pair(lines, i)
        || l.starts_with("diff --git ")
        || l.starts_with("```")
}

/// One hunk's lines starting at `start`; returns them and the index after the hunk.
///
/// A line without a prefix is a context line that lost its leading space when a change of the same hunk still
/// follows it. When a hunk has such a line, its lines that start with a space are read whole too: the model dropped
/// the prefixes, so that space is indentation.
/// A hunk's lines as the diff readers read them: a `-`/`+`/space prefix says what a line is; a line that lost its
/// prefix is context (with `unprefixed`, a context line's leading space is its own indentation, not a prefix); an
/// empty line is context too and marked `true` (a blank that may only separate hunks); `\ No newline at end of file`
/// is dropped, since the file's own final-newline state is kept anyway.
fn body_lines(lines: &[&str], unprefixed: bool) -> Vec<(HunkLine, bool)> {
    let mut body = Vec::with_capacity(lines.len());
    for l in lines {
        let parsed = match l.as_bytes().first() {
            None => (HunkLine::Context(String::new()), true),
            Some(b' ') if unprefixed => (HunkLine::Context(l.to_string()), false),
            Some(b' ') => (HunkLine::Context(l[1..].to_string()), false),
            Some(b'-') => (HunkLine::Remove(l[1..].to_string()), false),
            Some(b'+') => (HunkLine::Add(l[1..].to_string()), false),
            Some(b'\\') => continue,
            Some(_) => (HunkLine::Context(l.to_string()), false),
        };
        body.push(parsed);
    }
    body
}

fn read_hunk_body(lines: &[&str], start: usize) -> (Vec<HunkLine>, usize) {
    // `changed_after[k - start]`: a changed line follows line k before the hunk ends (one backward pass).
    let limit = (start..lines.len())
        .find(|&k| ends_hunk(lines, k))
        .unwrap_or(lines.len());
    let mut changed_after = vec![false; limit - start + 1];
    for k in (start..limit).rev() {
        let l = lines[k];
        let changed = l.starts_with(['+', '-']) && !l.starts_with("--- ") && !l.starts_with("+++ ");
        changed_after[k - start] = changed || changed_after[k - start + 1];
    }
    let mut end = start;
    let mut unprefixed = false;
    while end < lines.len() && !ends_hunk(lines, end) {
        match lines[end].as_bytes().first() {
            None | Some(b' ' | b'-' | b'+' | b'\\') => {}
            Some(_) if changed_after[end + 1 - start] => unprefixed = true,
            Some(_) => break,
        }
        end += 1;
    }
    let mut body = body_lines(&lines[start..end], unprefixed);
    while body.last().is_some_and(|(_, blank)| *blank) {
        body.pop();
    }
    (body.into_iter().map(|(l, _)| l).collect(), end)
}

/// The name in a `---`/`+++` header line as written: after the marker, up to a tab (timestamps), prefix kept.
fn header_name(line: &str) -> &str {
    clean_path(line[4..].split('\t').next().unwrap_or(""))
}

/// A name without git's `a/` or `b/` prefix.
fn without_prefix(p: &str) -> &str {
    p.strip_prefix("a/")
        .or_else(|| p.strip_prefix("b/"))
        .unwrap_or(p)
}

/// The file a `---` line and its `+++` line name, whether the section creates it (`--- /dev/null`), and whether it
/// deletes it (`+++ /dev/null`).
///
/// Both lines must name the same file: a section whose lines name two files (a rename or a copy, or a model that
/// mixed files up) is refused, naming both. A name is first read as written: when both lines say `b/x.py` and
/// `b/x.py` is a selected file, it is that file (a `--no-prefix` diff); otherwise git's `a/` and `b/` prefixes are
/// dropped and the name resolved against the selection ([`resolve_path`]).
fn section_path(
    old_line: &str,
    new_line: &str,
    selected: &[&str],
) -> Result<(String, bool, EditOp)> {
    let (old, new) = (header_name(old_line), header_name(new_line));
    if new == "/dev/null" {
        return Ok((one_name(old, selected), false, EditOp::Delete));
    }
    if old == "/dev/null" {
        return Ok((one_name(new, selected), true, EditOp::Edit));
    }
    match pair_name(old, new, selected) {
        Some(path) => Ok((path, false, EditOp::Edit)),
        None => Err(Error::ModelAnswer(format!(
            "the diff header names two different files, `{}` and `{}`; renaming or copying files is not \
             supported: the model must name the same file on both lines (`--- a/PATH` and `+++ b/PATH`, or \
             `--- /dev/null` to create PATH); propose again",
            old_line.split('\t').next().unwrap_or(old_line).trim_end(),
            new_line.split('\t').next().unwrap_or(new_line).trim_end()
        ))),
    }
}

/// The note for a section whose `---` and `+++` lines spell its one file differently (beyond git's `a/` and `b/`:
/// `--- a/util.py` and `+++ b/src/util.py`), both read as `path`; `None` when they agree (git's prefixes aside) or
/// the section creates it.
fn headers_note(old_line: &str, new_line: &str, path: &str) -> Option<String> {
    let (old, new) = (header_name(old_line), header_name(new_line));
    // Git's prefixes, doubled or not, are not a disagreement.
    fn bare(mut p: &str) -> &str {
        while let Some(rest) = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")) {
            p = rest;
        }
        p
    }
    if old == "/dev/null" || new == "/dev/null" || old == new || bare(old) == bare(new) {
        return None;
    }
    Some(format!(
        "the diff's header lines disagree: `--- {}` and `+++ {}` name different paths, and both were read as {path}; \
         check that {path} is the file meant",
        excerpt(old, 200),
        excerpt(new, 200)
    ))
}

/// The selected file one name means: the name as written when it is a selected file, else without its prefix,
/// resolved against the selection.
fn one_name(name: &str, selected: &[&str]) -> String {
    if selected.contains(&name) {
        return name.to_string();
    }
    resolve_path(without_prefix(name), selected)
}

/// The one file two names (the old and new side of a header, cleaned) mean, or `None` when they name two files.
fn pair_name(old: &str, new: &str, selected: &[&str]) -> Option<String> {
    if old == new && selected.contains(&new) {
        return Some(new.to_string());
    }
    let (old, new) = (without_prefix(old), without_prefix(new));
    if old == new {
        return Some(resolve_path(new, selected));
    }
    let (old, new) = (resolve_path(old, selected), resolve_path(new, selected));
    (old == new).then_some(new)
}

/// A line git writes between `diff --git` and `---` (modes, blob ids, renames, copies).
fn is_git_extended_header(line: &str) -> bool {
    [
        "index ",
        "old mode ",
        "new mode ",
        "deleted file mode ",
        "new file mode ",
        "similarity index ",
        "dissimilarity index ",
        "rename from ",
        "rename to ",
        "copy from ",
        "copy to ",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// Refuse a `diff --git A B` line (`git`) that names two files, or another file than its section's `path`.
fn agrees_with_git_line(git: &str, path: &str, selected: &[&str]) -> Result<()> {
    let names = git["diff --git ".len()..].trim();
    // Names may hold spaces: the line names one file when some split into two names resolves to one file. A
    // handful of splits is enough for any real path; a line of thousands of spaces is not one.
    let one = names.match_indices(' ').take(64).find_map(|(at, _)| {
        pair_name(
            clean_path(&names[..at]),
            clean_path(&names[at + 1..]),
            selected,
        )
    });
    match one {
        Some(p) if p == path => Ok(()),
        Some(p) => Err(Error::ModelAnswer(format!(
            "the `diff --git` line names {p} but its `---`/`+++` lines name {path}; the model must name one file \
             per section, the same on every header line; propose again"
        ))),
        None => Err(Error::ModelAnswer(format!(
            "the `diff --git` line names two different files ({:?}); renaming or copying files is not supported: \
             the model must name the same file on every header line of a section; propose again",
            excerpt(names, 200)
        ))),
    }
}

/// The old-side line count in `@@ -12,3 +12,4 @@` (1 when only the start is given), if the model wrote one.
fn old_count_hint(header: &str) -> Option<usize> {
    let rest = header
        .trim_start_matches('@')
        .trim_start()
        .strip_prefix('-')?;
    let range = rest.split_whitespace().next()?;
    match range.split_once(',') {
        Some((_, n)) => n.parse().ok(),
        None => range.parse::<usize>().ok().map(|_| 1),
    }
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

/// A SEARCH/REPLACE marker line: 5 to 9 of `c`, then optionally `word`.
fn is_marker(line: &str, c: char, word: &str) -> bool {
    let t = line.trim_end();
    let n = t.chars().take_while(|&x| x == c).count();
    (5..=9).contains(&n) && {
        let rest = t[n..].trim();
        rest.is_empty() && word.is_empty() || rest.eq_ignore_ascii_case(word)
    }
}

/// A line of 5 to 9 `c` followed by anything (a conflict or SEARCH/REPLACE marker).
fn is_marker_any(line: &str, c: char) -> bool {
    let n = line.chars().take_while(|&x| x == c).count();
    (5..=9).contains(&n) && line[n..].chars().next().is_none_or(|x| x == ' ')
}

fn has_search_replace(lines: &[&str]) -> bool {
    lines.iter().any(|l| is_marker(l, '<', "SEARCH"))
}

fn read_search_replace(
    lines: &[&str],
    selected: &[&str],
    cancel: Cancel<'_>,
) -> Result<Vec<FileEdit>> {
    let mut files = Files::default();
    let mut i = 0;
    while i < lines.len() {
        cancel.check()?;
        if !is_marker(lines[i], '<', "SEARCH") {
            i += 1;
            continue;
        }
        let path = path_above(lines, i, selected).ok_or_else(|| {
            Error::ModelAnswer(format!(
                "a SEARCH/REPLACE block in the model's answer (line {}) does not name its file, so it cannot be \
                 applied; propose again, or select one file at a time",
                i + 1
            ))
        })?;
        let start = i + 1;
        let mid = (start..lines.len())
            .find(|&k| is_marker(lines[k], '=', ""))
            .ok_or_else(|| {
                Error::ModelAnswer(format!(
                    "the SEARCH block at answer line {} has no `=======` line",
                    i + 1
                ))
            })?;
        let end = (mid + 1..lines.len()).find(|&k| is_marker(lines[k], '>', "REPLACE")).ok_or_else(|| {
            Error::ModelAnswer(format!(
                "the SEARCH block at answer line {} has no `>>>>>>> REPLACE` line; the answer may be cut off",
                i + 1
            ))
        })?;
        if lines[start..end].iter().enumerate().any(|(k, l)| {
            start + k != mid
                && (is_marker_any(l, '=') || is_marker_any(l, '<') || is_marker_any(l, '>'))
        }) {
            return Err(Error::ModelAnswer(format!(
                "the SEARCH/REPLACE block at answer line {} holds more than one `=======` or a nested marker, so \
                 where SEARCH ends is ambiguous; ask for a unified diff instead",
                i + 1
            )));
        }
        let search: Vec<String> = lines[start..mid].iter().map(|s| s.to_string()).collect();
        let replace: Vec<String> = lines[mid + 1..end].iter().map(|s| s.to_string()).collect();
        let creates = search.iter().all(|s| s.trim().is_empty());
        let hunk = Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            anchor: Default::default(),
            lines: replacement_hunk(search, replace),
        };
        files.add(path, creates, vec![hunk])?;
        i = end + 1;
    }
    Ok(files.edits)
}

/// The nearest line above `i` (skipping fences and blanks) that names a file, else the only selected file.
fn path_above(lines: &[&str], i: usize, selected: &[&str]) -> Option<String> {
    for l in lines[..i].iter().rev().take(4) {
        let t = l.trim();
        if t.is_empty() || t.starts_with("```") {
            continue;
        }
        // `path`, `File: path`, `File path:` (the prompt's own style), `### path`, `**path**`.
        let t = t.trim_start_matches('#').trim();
        let t = ["File:", "file:", "File ", "file "]
            .iter()
            .find_map(|p| t.strip_prefix(p))
            .unwrap_or(t)
            .trim()
            .trim_end_matches(':');
        let p = resolve_path(t, selected);
        if selected.contains(&p.as_str()) || (!p.contains(' ') && p.contains('.')) {
            return Some(p);
        }
        break;
    }
    (selected.len() == 1).then(|| selected[0].to_string())
}

/// A hunk replacing `old` with `new`, where their common first and last lines become context.
fn replacement_hunk(old: Vec<String>, new: Vec<String>) -> Vec<HunkLine> {
    // Blank lines are content: they are kept on both sides, so common lines stay aligned. Only a SEARCH of
    // nothing but blank lines (a new file) drops them.
    let (old, new) = if old.iter().all(|l| l.trim().is_empty()) {
        (Vec::new(), trim_blank_edges(new))
    } else {
        (old, new)
    };
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let mut lines: Vec<HunkLine> = old[..prefix]
        .iter()
        .cloned()
        .map(HunkLine::Context)
        .collect();
    lines.extend(
        old[prefix..old.len() - suffix]
            .iter()
            .cloned()
            .map(HunkLine::Remove),
    );
    lines.extend(
        new[prefix..new.len() - suffix]
            .iter()
            .cloned()
            .map(HunkLine::Add),
    );
    lines.extend(
        old[old.len() - suffix..]
            .iter()
            .cloned()
            .map(HunkLine::Context),
    );
    lines
}

fn trim_blank_edges(mut v: Vec<String>) -> Vec<String> {
    while v.last().is_some_and(|l| l.trim().is_empty()) {
        v.pop();
    }
    let lead = v.iter().take_while(|l| l.trim().is_empty()).count();
    v.drain(..lead);
    v
}

fn looks_like_json(answer: &str) -> bool {
    let t = answer
        .trim_start()
        .trim_start_matches("```json")
        .trim_start_matches("```")
        .trim_start();
    t.starts_with('{') && answer.contains("\"edits\"")
}

#[derive(serde::Deserialize)]
struct JsonAnswer {
    edits: Vec<JsonEdit>,
}

#[derive(serde::Deserialize)]
struct JsonEdit {
    path: String,
    /// The line replaced; or
    #[serde(default)]
    old: Option<String>,
    /// the line after which `new` is inserted (the insertion form of a pinned candidate).
    #[serde(default)]
    after: Option<String>,
    new: String,
}

impl JsonEdit {
    /// The lines the edit finds and the lines they become: `old` and `new`, or `after` and `after` then `new`.
    fn old_and_new(self, n: usize, answer: &str) -> Result<(String, String, String)> {
        match (self.old, self.after) {
            (Some(old), None) => Ok((self.path, old, self.new)),
            (None, Some(after)) => {
                let new = format!("{after}\n{}", self.new);
                Ok((self.path, after, new))
            }
            (Some(_), Some(_)) => Err(no_edit(
                &format!("edit {n} has both `old` and `after`, so its place is unclear"),
                answer,
            )),
            (None, None) => Err(no_edit(
                &format!("edit {n} has neither `old` nor `after`, so its place is unknown"),
                answer,
            )),
        }
    }
}

/// Reads a JSON edit list (optionally inside a code fence or after prose).
pub fn read_json(answer: &str, selected: &[&str]) -> Result<Vec<FileEdit>> {
    read_json_lines(answer, selected, Cancel::NEVER)
}

fn read_json_lines(answer: &str, selected: &[&str], cancel: Cancel<'_>) -> Result<Vec<FileEdit>> {
    let start = answer.find('{').ok_or_else(|| {
        no_edit(
            "the answer is not the JSON edit list that was asked for",
            answer,
        )
    })?;
    // The first JSON value from the first `{`: prose after it (braces included) is ignored.
    let parsed: JsonAnswer = serde_json::Deserializer::from_str(&answer[start..])
        .into_iter::<JsonAnswer>()
        .next()
        .ok_or_else(|| no_edit("the JSON edit list is not closed", answer))?
        .map_err(|e| {
            no_edit(
                &format!("the answer is not the JSON edit list that was asked for ({e})"),
                answer,
            )
        })?;
    let mut files = Files::default();
    let mut seen: HashSet<(String, String, String)> = Default::default();
    for (n, edit) in parsed.edits.into_iter().enumerate() {
        cancel.check()?;
        let (path, old, new) = edit.old_and_new(n + 1, answer)?;
        // Small models often repeat the same edit; an identical repeat carries no second intent.
        if !seen.insert((path.clone(), old.clone(), new.clone())) {
            continue;
        }
        if old.trim().is_empty() {
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
        let hunk = Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            anchor: Default::default(),
            lines: replacement_hunk(split(&old), split(&new)),
        };
        files.add(resolve_path(&path, selected), false, vec![hunk])?;
    }
    if files.edits.is_empty() {
        return Err(no_edit("the JSON edit list is empty", answer));
    }
    Ok(files.edits)
}

/// Whole new files: a fenced block under (or naming) each file; with one selected file, the largest fenced block.
fn read_whole_file(lines: &[&str], selected: &[&str], cancel: Cancel<'_>) -> Result<Vec<FileEdit>> {
    let mut blocks: Vec<(Option<String>, Vec<String>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        cancel.check()?;
        if let Some(info) = lines[i].trim_start().strip_prefix("```") {
            let fence_len = 3 + info.chars().take_while(|&c| c == '`').count();
            let fence = "`".repeat(fence_len);
            let end = (i + 1..lines.len()).find(|&k| lines[k].trim() == fence);
            let Some(end) = end else {
                return Err(Error::ModelAnswer(
                    "the code block with the new file is not closed; the answer may be cut off"
                        .into(),
                ));
            };
            let info_path = info
                .trim_start_matches('`')
                .split_whitespace()
                .find_map(|w| {
                    let p = resolve_path(w, selected);
                    selected.contains(&p.as_str()).then_some(p)
                });
            let named = info_path.or_else(|| {
                path_above(lines, i, &[])
                    .map(|p| resolve_path(&p, selected))
                    .filter(|p| selected.contains(&p.as_str()))
            });
            blocks.push((
                named,
                lines[i + 1..end].iter().map(|s| s.to_string()).collect(),
            ));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    let mut files: Vec<Option<FileEdit>> = Vec::new();
    let mut slot_of: HashMap<String, usize> = HashMap::new();
    let named: Vec<&(Option<String>, Vec<String>)> =
        blocks.iter().filter(|b| b.0.is_some()).collect();
    if !named.is_empty() && named.len() < blocks.len() {
        return Err(Error::ModelAnswer(format!(
            "a code block in the model's answer does not name its file ({} of {} blocks), so the answer was \
             refused rather than applied in part; propose again, or set [edit] format = \"json\" in the policy",
            blocks.len() - named.len(),
            blocks.len()
        )));
    }
    if named.is_empty() && selected.len() > 1 && !blocks.is_empty() {
        return Err(Error::ModelAnswer(
            "several files are selected and a code block in the model's answer does not name its file, so it \
             cannot be applied; propose again with one file, or set [edit] format = \"json\" in the policy"
                .into(),
        ));
    }
    let chosen: Vec<(String, Vec<String>)> = if !named.is_empty() {
        named
            .into_iter()
            .map(|(p, b)| (p.clone().unwrap_or_default(), b.clone()))
            .collect()
    } else if selected.len() == 1 {
        blocks
            .into_iter()
            .max_by_key(|b| b.1.len())
            .map(|b| vec![(selected[0].to_string(), b.1)])
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    for (path, mut body) in chosen {
        // A byte-order mark echoed from the prompt belongs to the file, not to its first line.
        if let Some(first) = body.first_mut()
            && let Some(rest) = first.strip_prefix('\u{feff}')
        {
            *first = rest.to_string();
        }
        if body.len() > WHOLE_FILE_MAX_LINES {
            return Err(Error::ModelAnswer(format!(
                "the whole-file answer for {path} has {} lines; whole files are accepted up to {WHOLE_FILE_MAX_LINES} lines: \
                 ask for a diff instead",
                body.len()
            )));
        }
        // A later block for the same file replaces the earlier one (and takes its place in the order).
        if let Some(k) = slot_of.insert(path.clone(), files.len()) {
            files[k] = None;
        }
        files.push(Some(whole_file_edit(path, body)));
    }
    Ok(files.into_iter().flatten().collect())
}

/// The edit of `path` that gives it the whole new content `body`.
fn whole_file_edit(path: String, body: Vec<String>) -> FileEdit {
    FileEdit {
        path,
        creates: false,
        hunks: vec![Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            anchor: Default::default(),
            lines: vec![HunkLine::WholeFile(body)],
        }],
        op: EditOp::Edit,
    }
}

/// Whether an added line stands for code the model left out ("... rest unchanged", "// existing code here").
pub fn is_elision(line: &str) -> bool {
    let t = line.trim();
    let comment = ["//", "#", "/*", "<!--", "--", ";", "*"]
        .iter()
        .find_map(|p| t.strip_prefix(p));
    let body = comment
        .unwrap_or(t)
        .trim()
        .trim_end_matches("*/")
        .trim_end_matches("-->")
        .trim()
        .to_lowercase();
    if body == "..." || body == "…" || body == "...." {
        return true;
    }
    let dots = body.contains("...") || body.contains('…');
    let phrases = [
        "existing code",
        "rest of the",
        "rest unchanged",
        "remains unchanged",
        "remain unchanged",
        "unchanged code",
        "code unchanged",
        "omitted for brevity",
        "code omitted",
        "same as before",
        "previous code",
        "other methods",
        "rest of code",
        "keep existing",
        "as before",
    ];
    // Beyond a bare `...`, only a comment can stand for left-out code (`...rest` is JavaScript spread syntax).
    if comment.is_none() {
        return false;
    }
    let phrase = phrases.iter().any(|p| body.contains(p));
    let words: Vec<&str> = body
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    phrase && (dots || body.len() < 60)
        || dots
            && ["unchanged", "existing", "rest", "omitted", "remaining"]
                .iter()
                .any(|w| words.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fenced_diff_surrounded_by_prose() {
        let answer = "Here is the change:\n```diff\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n```\nDone.";
        let files = read_udiff(answer, &["src/x.py"]).unwrap();
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
        let files = read_udiff(answer, &["a.txt", "new.txt"]).unwrap();
        assert_eq!(files.len(), 2);
        assert!(!files[0].creates);
        assert!(files[1].creates);
        assert_eq!(files[1].path, "new.txt");
    }

    #[test]
    fn trailing_blank_lines_do_not_become_context() {
        let files =
            read_udiff("--- a/a\n+++ b/a\n@@ @@\n-x\n+y\n\n\nThat is all.", &["a"]).unwrap();
        assert_eq!(files[0].hunks[0].lines.len(), 2);
    }

    #[test]
    fn refuses_prose_without_an_edit_and_quotes_it() {
        let err = read_answer(
            "I think you should rename the function.",
            AnswerFormat::Udiff,
            &["a"],
        )
        .unwrap_err();
        assert!(matches!(err, Error::ModelAnswer(_)));
        assert!(err.to_string().contains("rename the function"), "{err}");
    }

    #[test]
    fn a_diff_to_dev_null_deletes_the_file() {
        let files = read_udiff("--- a/a\n+++ /dev/null\n@@ @@\n-x\n", &["a"]).unwrap();
        assert_eq!(files[0].path, "a");
        assert_eq!(files[0].op, EditOp::Delete);
    }

    #[test]
    fn a_git_rename_moves_the_file_with_or_without_hunks() {
        let sel = ["src/a.py", "src/b.py", "c.py"];
        let with = "diff --git a/src/a.py b/src/b.py\nsimilarity index 90%\nrename from src/a.py\nrename to src/b.py\n\
                    --- a/src/a.py\n+++ b/src/b.py\n@@ @@\n-x\n+y\n";
        let files = read_udiff(with, &sel).unwrap();
        assert_eq!(files[0].path, "src/a.py");
        assert_eq!(files[0].op, EditOp::MoveTo("src/b.py".into()));
        assert_eq!(files[0].hunks.len(), 1);
        let pure = "diff --git a/src/a.py b/src/b.py\nsimilarity index 100%\nrename from src/a.py\nrename to src/b.py\n\
                    diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ @@\n-x\n+y\n";
        let files = read_udiff(pure, &sel).unwrap();
        let moved = files.iter().find(|f| f.path == "src/a.py").unwrap();
        assert_eq!(moved.op, EditOp::MoveTo("src/b.py".into()));
        assert!(moved.hunks.is_empty());
        let wrong = "diff --git a/src/a.py b/src/b.py\nrename from src/a.py\nrename to src/b.py\n\
                     --- a/src/a.py\n+++ b/c.py\n@@ @@\n-x\n+y\n";
        let err = read_udiff(wrong, &sel).unwrap_err();
        assert!(
            err.to_string().contains("renames src/a.py to src/b.py"),
            "{err}"
        );
    }

    #[test]
    fn disagreeing_headers_are_refused_naming_both_files() {
        let sel = ["src/a.py", "src/b.py"];
        let err = read_udiff("--- a/src/a.py\n+++ b/src/b.py\n@@ @@\n-x\n+y\n", &sel).unwrap_err();
        assert!(
            err.to_string()
                .contains("names two different files, `--- a/src/a.py` and `+++ b/src/b.py`"),
            "{err}"
        );
        let git =
            "diff --git a/src/b.py b/src/b.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ @@\n-x\n+y\n";
        let err = read_udiff(git, &sel).unwrap_err();
        assert!(
            err.to_string().contains(
                "the `diff --git` line names src/b.py but its `---`/`+++` lines name src/a.py"
            ),
            "{err}"
        );
        let rename =
            "diff --git a/src/b.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ @@\n-x\n+y\n";
        let err = read_udiff(rename, &sel).unwrap_err();
        assert!(
            err.to_string().contains("names two different files"),
            "{err}"
        );
        // Names with spaces, a git line and sloppy prefixes that all mean one file are read as before.
        let sel = ["src/my file.py", "src/util.py"];
        let spaced = "diff --git a/src/my file.py b/src/my file.py\nindex 1..2 100644\n--- a/src/my file.py\t2024\n\
                      +++ b/src/my file.py\t2024\n@@ @@\n-x\n+y\n";
        assert_eq!(read_udiff(spaced, &sel).unwrap()[0].path, "src/my file.py");
        let doubled = "--- a/a/src/util.py\n+++ b/b/src/util.py\n@@ @@\n-x\n+y\n";
        assert_eq!(read_udiff(doubled, &sel).unwrap()[0].path, "src/util.py");
        // A `diff --git` line of a section without hunks (a mode change) does not reach the next section.
        let mode = "diff --git a/src/util.py b/src/util.py\nold mode 100644\nnew mode 100755\nThen:\n\
                    --- a/src/my file.py\n+++ b/src/my file.py\n@@ @@\n-x\n+y\n";
        assert_eq!(read_udiff(mode, &sel).unwrap()[0].path, "src/my file.py");
    }

    #[test]
    fn disagreeing_headers_read_as_one_file_get_a_note() {
        let sel = ["src/util.py", "src/a.py"];
        let read =
            |a: &str| read_answer_noted(a, AnswerFormat::Udiff, &sel, Cancel::NEVER).unwrap();
        let r = read("--- a/util.py\n+++ b/src/util.py\n@@ @@\n-x\n+y\n");
        assert_eq!(r.edits[0].path, "src/util.py");
        assert_eq!(
            r.notes,
            [
                "the diff's header lines disagree: `--- a/util.py` and `+++ b/src/util.py` name different paths, and \
              both were read as src/util.py; check that src/util.py is the file meant"
            ]
        );
        // Two sections spelled the same way: one note.
        let twice = "--- util.py\n+++ src/util.py\n@@ @@\n-x\n+y\n--- util.py\n+++ src/util.py\n@@ @@\n-p\n+q\n";
        assert_eq!(read(twice).notes.len(), 1);
        // Agreeing headers (git's prefixes aside) and creations get none.
        for quiet in [
            "--- a/src/util.py\n+++ b/src/util.py\n@@ @@\n-x\n+y\n",
            "--- src/util.py\n+++ src/util.py\n@@ @@\n-x\n+y\n",
            "--- /dev/null\n+++ b/src/new.py\n@@ @@\n+y\n",
            "--- a/a/src/util.py\n+++ b/b/src/util.py\n@@ @@\n-x\n+y\n",
        ] {
            assert!(read(quiet).notes.is_empty(), "{quiet}");
        }
    }

    #[test]
    fn disagreeing_headers_a_no_prefix_name_under_b_is_that_file() {
        let sel = ["x.py", "b/x.py"];
        let path = |a: &str| read_udiff(a, &sel).unwrap()[0].path.clone();
        assert_eq!(path("--- b/x.py\n+++ b/x.py\n@@ @@\n-x\n+y\n"), "b/x.py");
        assert_eq!(path("--- a/x.py\n+++ b/x.py\n@@ @@\n-x\n+y\n"), "x.py");
        assert_eq!(
            path("--- a/b/x.py\n+++ b/b/x.py\n@@ @@\n-x\n+y\n"),
            "b/x.py"
        );
        assert_eq!(path("--- x.py\n+++ x.py\n@@ @@\n-x\n+y\n"), "x.py");
        // Without `b/x.py` selected, a stray `b/` is still git's prefix.
        let files = read_udiff("--- b/x.py\n+++ b/x.py\n@@ @@\n-x\n+y\n", &["x.py"]).unwrap();
        assert_eq!(files[0].path, "x.py");
    }

    #[test]
    fn an_answer_of_300000_file_sections_is_refused_at_the_cap_on_files_named() {
        // 16.2 MB, under the 16 MiB (16.8 MB) cap on answers: one section per file, each naming another file.
        // How long the refusal takes is a measurement, not a test: `cargo bench --bench reader` series F
        // (BENCHMARKS.md).
        let answer: String = (0..300_000)
            .map(|i| format!("--- a/src/f{i:06}.py\n+++ b/src/f{i:06}.py\n@@ @@\n-x\n+y\n"))
            .collect();
        assert!(answer.len() > 13_000_000 && answer.len() < 16 << 20);
        let err = read_answer(&answer, AnswerFormat::Udiff, &["src/a.py"]).unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "the answer names more than {MAX_FILES_NAMED} different files (the next one: src/f001000.py)"
            )),
            "{err}"
        );
        // The cap counts files, not sections: a thousand files named again and again are read.
        let answer: String = (0..300_000)
            .map(|i| {
                format!(
                    "--- a/f{:03}.py\n+++ b/f{:03}.py\n@@ @@\n-x\n+y\n",
                    i % 1000,
                    i % 1000
                )
            })
            .collect();
        let files = read_answer(&answer, AnswerFormat::Udiff, &[]).unwrap();
        assert_eq!(files.len(), 1000);
        assert!(files.iter().all(|f| f.hunks.len() == 300));
        // The same cap for search/replace blocks and JSON edits.
        let blocks: String = (0..=MAX_FILES_NAMED)
            .map(|i| format!("f{i}.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"))
            .collect();
        let err = read_answer(&blocks, AnswerFormat::SearchReplace, &[]).unwrap_err();
        assert!(err.to_string().contains("different files"), "{err}");
        let edits: Vec<String> = (0..=MAX_FILES_NAMED)
            .map(|i| format!(r#"{{"path":"f{i}.py","old":"x","new":"y"}}"#))
            .collect();
        let json = format!(r#"{{"edits":[{}]}}"#, edits.join(","));
        let err = read_answer(&json, AnswerFormat::Json, &[]).unwrap_err();
        assert!(err.to_string().contains("different files"), "{err}");
    }

    #[test]
    fn a_quadratic_answer_stops_when_the_caller_cancels() {
        use std::cell::Cell;
        /// Run `run` once to count the checks it asks, then again cancelling just before its last few checks: the
        /// reading of that format asks until its end, not only while the reasoning is stripped.
        fn stops_late<T: std::fmt::Debug>(run: impl Fn(Cancel<'_>) -> Result<T>) {
            let asked = Cell::new(0usize);
            let count = || {
                asked.set(asked.get() + 1);
                false
            };
            run(Cancel::new(&count)).unwrap();
            let total = asked.get();
            asked.set(0);
            let late = || {
                asked.set(asked.get() + 1);
                asked.get() + 3 > total
            };
            let err = run(Cancel::new(&late)).unwrap_err();
            assert!(matches!(err, Error::Cancelled), "{err}");
            // A cancellation early in the run stops it at the next check.
            asked.set(0);
            let early = || {
                asked.set(asked.get() + 1);
                asked.get() > 100
            };
            assert!(matches!(run(Cancel::new(&early)), Err(Error::Cancelled)));
            assert_eq!(asked.get(), 101);
        }
        let read = |answer: String, format| {
            move |cancel: Cancel<'_>| read_answer_cancellable(&answer, format, &["a.py"], cancel)
        };
        let diff = "--- a/a.py\n+++ b/a.py\n@@ @@\n-x\n+y\n".repeat(10_000);
        stops_late(read(diff, AnswerFormat::Udiff));
        let blocks = "a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n".repeat(10_000);
        stops_late(read(blocks, AnswerFormat::SearchReplace));
        let edits: Vec<String> = (0..10_000)
            .map(|i| format!(r#"{{"path":"a.py","old":"x{i}","new":"y"}}"#))
            .collect();
        stops_late(read(
            format!(r#"{{"edits":[{}]}}"#, edits.join(",")),
            AnswerFormat::Json,
        ));
        let whole = "a.py\n```python\nx = 1\n```\n".repeat(10_000);
        stops_late(read(whole, AnswerFormat::WholeFile));
        // The pipeline asks while it places hunks too: 5,000 hunks of one file, placed one by one.
        let pre = std::collections::BTreeMap::from([(
            "a.py".to_string(),
            Some(crate::patch::PreImage {
                text: (0..5000).map(|i| format!("x{i}\n")).collect(),
                mode: crate::patch::MODE_REGULAR,
            }),
        )]);
        let answer: String = (0..5000)
            .map(|i| format!("--- a/a.py\n+++ b/a.py\n@@ @@\n-x{i}\n+y{i}\n"))
            .collect();
        stops_late(|cancel| {
            crate::patch::changes_from_answer_cancellable(
                &answer,
                AnswerFormat::Udiff,
                &pre,
                &crate::patch::focus::Focus::new(),
                cancel,
            )
        });
    }

    #[test]
    fn resolves_sloppy_paths_against_the_selection() {
        let sel = ["src/app/main.py", "README.md"];
        assert_eq!(resolve_path("./src/app/main.py", &sel), "src/app/main.py");
        assert_eq!(resolve_path("a/src/app/main.py", &sel), "src/app/main.py");
        assert_eq!(resolve_path("main.py", &sel), "src/app/main.py");
        assert_eq!(resolve_path("`README.md`", &sel), "README.md");
        assert_eq!(resolve_path("other.py", &sel), "other.py");
    }

    #[test]
    fn strips_reasoning_and_refuses_unfinished_reasoning() {
        let a = "<think>maybe --- a/x\n+++ b/x</think>\n--- a/a\n+++ b/a\n@@ @@\n-x\n+y\n";
        assert_eq!(
            read_answer(a, AnswerFormat::Udiff, &["a"]).unwrap()[0].path,
            "a"
        );
        let err = read_answer("<think>let me see", AnswerFormat::Udiff, &["a"]).unwrap_err();
        assert!(err.to_string().contains("never finished"), "{err}");
    }

    #[test]
    fn reads_search_replace_blocks_with_context_trimmed() {
        let a = "src/a.py\n```python\n<<<<<<< SEARCH\ndef f():\n    return 1\n=======\ndef f():\n    return 2\n>>>>>>> REPLACE\n```\n";
        let files = read_answer(a, AnswerFormat::SearchReplace, &["src/a.py"]).unwrap();
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                HunkLine::Context("def f():".into()),
                HunkLine::Remove("    return 1".into()),
                HunkLine::Add("    return 2".into())
            ]
        );
    }

    #[test]
    fn a_json_edit_after_a_line_inserts_its_new_lines_below_it() {
        let a = r#"{"edits":[{"path":"a.py","after":"    name = first","new":"    return name"}]}"#;
        let files = read_answer(a, AnswerFormat::Json, &["a.py"]).unwrap();
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                HunkLine::Context("    name = first".into()),
                HunkLine::Add("    return name".into())
            ]
        );
        for (bad, why) in [
            (
                r#"{"edits":[{"path":"a.py","old":"x","after":"x","new":"y"}]}"#,
                "both `old` and `after`",
            ),
            (
                r#"{"edits":[{"path":"a.py","new":"y"}]}"#,
                "neither `old` nor `after`",
            ),
        ] {
            let err = read_answer(bad, AnswerFormat::Json, &["a.py"]).unwrap_err();
            assert!(err.to_string().contains(why), "{err}");
        }
    }

    #[test]
    fn identical_repeated_json_edits_count_once() {
        let e = r#"{"path":"a.py","old":"x = 1","new":"x = 2"}"#;
        let files = read_json(&format!(r#"{{"edits":[{e},{e},{e}]}}"#), &["a.py"]).unwrap();
        assert_eq!(files[0].hunks.len(), 1);
    }

    #[test]
    fn refuses_json_that_is_not_an_edit_list() {
        let err = read_json(r#"{"answer": 42}"#, &["a"]).unwrap_err();
        assert!(err.to_string().contains("not the JSON edit list"), "{err}");
        let err =
            read_json(r#"{"edits":[{"path":"a","old":"  ","new":"x"}]}"#, &["a"]).unwrap_err();
        assert!(err.to_string().contains("empty `old`"), "{err}");
    }

    #[test]
    fn recognises_elisions_and_not_ordinary_comments() {
        for l in [
            "# ... rest of the code unchanged",
            "// existing code here",
            "...",
            "    # ...",
            "/* ... */",
            "// rest of the file",
        ] {
            assert!(is_elision(l), "{l}");
        }
        for l in [
            "# compute the total",
            "x = y[...]",
            "// TODO: handle errors",
            "print('...')",
        ] {
            assert!(!is_elision(l), "{l}");
        }
    }
}
