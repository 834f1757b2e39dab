//! The patch engine: pure functions from bytes to bytes or a typed refusal. No I/O, no clock, no randomness.
//!
//! The pipeline a proposal goes through:
//! 1. [`reader`]: the model's free-form answer -> [`FileEdit`]s (which file, which hunks), tolerant of prose and
//!    fences around the edit;
//! 2. [`locate`]: each hunk is placed in its file's pre-image by its content (line numbers are never trusted), and
//!    must land in exactly one place; the result is a post-image per file;
//! 3. [`canonical`]: (pre-image, post-image) pairs are rendered as one canonical git-style diff, and a canonical diff
//!    is parsed and applied back to pre-images, strictly, for the dry run and for `apply`.
//!
//! [`plan`] is the one pure plan of a canonical patch: parsed within the policy's limits, post-images computed from
//! pre-images; the dry run, `calibrate` and the transaction all use it.
//!
//! [`focus`] narrows a file to line ranges: the model is shown only those, and step 2 keeps every edit inside them.
//! [`changes_and_alternatives`] is the pipeline for a caller that chooses: an answer whose hunks overlap (conflicting
//! edits of one region), which step 2 refuses, is split into alternatives ([`locate::alternatives`]), each then
//! through steps 2 and 3 like any answer.

pub mod canonical;
pub mod focus;
pub mod locate;
pub mod plan;
pub mod reader;

/// File mode of a regular, non-executable file as git writes it.
pub const MODE_REGULAR: u32 = 0o100644;
/// File mode of an executable file as git writes it.
pub const MODE_EXECUTABLE: u32 = 0o100755;

/// One line of a hunk as the model wrote it (without its line terminator).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HunkLine {
    /// A line kept as it is (` ` in a diff).
    Context(String),
    /// A line taken out (`-`).
    Remove(String),
    /// A line put in (`+`).
    Add(String),
    /// The whole new content of the file (the `whole_file` answer format); only ever the single line of a hunk.
    WholeFile(Vec<String>),
}

/// One hunk as read from the model: its lines, and the old-side start line it claimed (a hint only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The old-side start line the model wrote (1-based), if any: used only to break ties between equal matches.
    pub old_start_hint: Option<usize>,
    /// The hunk's lines, in order.
    pub lines: Vec<HunkLine>,
    /// The answer ends inside this hunk, which is shorter than its header says and ends on a changed line: it may be
    /// cut off. It is accepted only where it reaches the end of the file.
    pub maybe_cut_off: bool,
    /// Where the model said the hunk lies besides its lines (V4A's `@@ def foo():` and `*** End of File`): used
    /// only to break a tie between equal matches, never to place a hunk its content does not match.
    pub anchor: Anchor,
}

/// What a V4A hunk says about its place besides its own lines. Both only break ties (see [`locate`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anchor {
    /// The `@@` scope lines above the hunk, outermost first (`@@ class A`, `@@ def f():`): the hunk lies in the
    /// block each opens.
    pub scope: Vec<String>,
    /// `*** End of File`: the hunk's old side ends at the file's last line.
    pub end_of_file: bool,
}

/// What an edit does to its file as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EditOp {
    /// The file is edited in place by its hunks (or created, with [`FileEdit::creates`]).
    #[default]
    Edit,
    /// The file is deleted (a unified diff's `+++ /dev/null`, V4A's `*** Delete File`).
    Delete,
    /// The file is moved to this path (git's `rename from`/`rename to`, V4A's `*** Move to`), after its hunks.
    MoveTo(String),
}

/// What a located change does to its file as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ChangeOp {
    /// The file at [`FileChange::path`] is rewritten (or created).
    #[default]
    Edit,
    /// The file at [`FileChange::path`] is removed; its post-image is empty.
    Delete,
    /// The file at this path is moved to [`FileChange::path`], holding the post-image there.
    MoveFrom(String),
}

/// The edits the model asked for on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// Workspace-relative path with `/` separators, as the model named it (git's prefixes `a/` `b/` removed, unless
    /// the name as written is a selected file).
    pub path: String,
    /// The model marked the file as new (`--- /dev/null`).
    pub creates: bool,
    /// The hunks, in the order the model wrote them.
    pub hunks: Vec<Hunk>,
    /// Whether the file is also deleted or moved.
    pub op: EditOp,
}

/// A selected file as it is now: its text and git mode. `None` in a pre-image map means "does not exist yet".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreImage {
    /// The file's whole text (UTF-8).
    pub text: String,
    /// Its git mode ([`MODE_EXECUTABLE`] or 0o100644).
    pub mode: u32,
}

/// How a hunk was placed in its file (the tolerance that located it), loosest last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchTier {
    /// Context and removed lines matched the file exactly.
    Exact,
    /// Matched once trailing whitespace is ignored.
    TrailingWhitespace,
    /// Matched once leading and trailing whitespace is ignored (indentation drift, tabs vs spaces); added lines
    /// were re-indented to the file's indentation.
    Indentation,
    /// Matched once Unicode punctuation (curly quotes, dashes, non-breaking spaces) is folded to ASCII as well.
    UnicodeFolded,
    /// The file was empty or new, or the model sent the whole new file: the change is a diff of whole contents.
    WholeFile,
}

/// Where one hunk landed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HunkReport {
    /// 1-based line of the pre-image where the hunk's old side starts (0 for an empty or new file).
    pub old_start: usize,
    /// Lines the hunk removes.
    pub removed: usize,
    /// Lines the hunk adds.
    pub added: usize,
    /// The tolerance that located it.
    pub tier: MatchTier,
    /// Several places matched equally and the line number the model gave picked one: look at this hunk.
    pub line_number_tie_break: bool,
}

/// The located result for one file: exact pre- and post-image bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Workspace-relative path with `/` separators (for a move, where the file goes).
    pub path: String,
    /// `None` when the file is created (for a move, the moved file's pre-image).
    pub pre: Option<Vec<u8>>,
    /// The exact bytes the file holds after the change.
    pub post: Vec<u8>,
    /// Its git mode after the change.
    pub mode: u32,
    /// Where each hunk landed.
    pub hunks: Vec<HunkReport>,
    /// Whether the change deletes or moves the file.
    pub op: ChangeOp,
}

impl FileChange {
    /// Every workspace path the change touches: its path, and for a move the path it comes from.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let from = match &self.op {
            ChangeOp::MoveFrom(f) => Some(f.as_str()),
            _ => None,
        };
        std::iter::once(self.path.as_str()).chain(from)
    }
}

/// How a caller stops a long run of the engine: a check asked between steps (lines, sections, hunks, files). The
/// engine does no I/O and keeps no clock; the caller's check reads a flag (the service's is the request's
/// cancellation). Once it answers true, the run ends with [`crate::Error::Cancelled`].
#[derive(Clone, Copy)]
pub struct Cancel<'a>(&'a dyn Fn() -> bool);

impl<'a> Cancel<'a> {
    /// Never cancelled.
    pub const NEVER: Cancel<'static> = Cancel(&never);

    /// A cancellation asked of `check`.
    pub fn new(check: &'a dyn Fn() -> bool) -> Cancel<'a> {
        Cancel(check)
    }

    /// [`crate::Error::Cancelled`] once the caller cancelled.
    pub(crate) fn check(self) -> crate::Result<()> {
        if (self.0)() {
            Err(crate::Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

fn never() -> bool {
    false
}

impl std::fmt::Debug for Cancel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cancel")
    }
}

/// The whole pure pipeline: a model's answer and the selected files' pre-images (path -> content, `None` for a file
/// that does not exist yet) -> the located change of every file it edits, sorted by path.
pub fn changes_from_answer(
    answer: &str,
    format: reader::AnswerFormat,
    pre_images: &std::collections::BTreeMap<String, Option<PreImage>>,
) -> crate::Result<Vec<FileChange>> {
    changes_from_answer_within(answer, format, pre_images, &focus::Focus::new())
}

/// [`changes_from_answer`] where the files named in `focus` were shown, and may be edited, only in their line
/// ranges (see [`focus`]).
pub fn changes_from_answer_within(
    answer: &str,
    format: reader::AnswerFormat,
    pre_images: &std::collections::BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
) -> crate::Result<Vec<FileChange>> {
    changes_from_answer_cancellable(answer, format, pre_images, focus, Cancel::NEVER)
}

/// [`changes_from_answer_within`], asking `cancel` as it reads the answer and places its hunks: once it says so, the
/// run stops with [`crate::Error::Cancelled`].
pub fn changes_from_answer_cancellable(
    answer: &str,
    format: reader::AnswerFormat,
    pre_images: &std::collections::BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
    cancel: Cancel<'_>,
) -> crate::Result<Vec<FileChange>> {
    changes_and_notes(answer, format, pre_images, focus, cancel).map(|(changes, _)| changes)
}

/// [`changes_from_answer_cancellable`], with what the reader noted for the primary ([`reader::Read::notes`]).
pub fn changes_and_notes(
    answer: &str,
    format: reader::AnswerFormat,
    pre_images: &std::collections::BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
    cancel: Cancel<'_>,
) -> crate::Result<(Vec<FileChange>, Vec<String>)> {
    let selected: Vec<&str> = pre_images.keys().map(String::as_str).collect();
    let read = reader::read_answer_noted(answer, format, &selected, cancel)?;
    let changes = locate::locate_all_cancellable(&read.edits, pre_images, focus, cancel)?;
    Ok((changes, read.notes))
}

/// One way to read an answer: its located changes and what the reader noted (see [`changes_and_alternatives`]).
#[derive(Debug, Clone)]
pub struct Alternative {
    /// The located change of every file, sorted by path.
    pub changes: Vec<FileChange>,
    /// What the reader noted, and for one of several alternatives which one it is.
    pub notes: Vec<String>,
}

/// [`changes_and_notes`], except that an answer offering conflicting edits of one region (hunks that overlap,
/// which [`changes_and_notes`] refuses) gives one [`Alternative`] per way to read it ([`locate::alternatives`]),
/// those that locate, in the order the model wrote them. Its refusal is the answer's own one when no alternative
/// locates. One alternative: the answer had no conflicting edits.
pub fn changes_and_alternatives(
    answer: &str,
    format: reader::AnswerFormat,
    pre_images: &std::collections::BTreeMap<String, Option<PreImage>>,
    focus: &focus::Focus,
    cancel: Cancel<'_>,
) -> crate::Result<Vec<Alternative>> {
    let selected: Vec<&str> = pre_images.keys().map(String::as_str).collect();
    let read = reader::read_answer_noted(answer, format, &selected, cancel)?;
    let refusal = match locate::locate_all_cancellable(&read.edits, pre_images, focus, cancel) {
        Ok(changes) => {
            return Ok(vec![Alternative {
                changes,
                notes: read.notes,
            }]);
        }
        Err(crate::Error::Cancelled) => return Err(crate::Error::Cancelled),
        Err(e) => e,
    };
    let Some(alt) = locate::alternatives::split(&read.edits, pre_images, focus, cancel)? else {
        return Err(refusal);
    };
    let regions: Vec<String> = alt
        .regions
        .iter()
        .map(|(r, n)| format!("{r} ({n} edits)"))
        .collect();
    let mut out = Vec::new();
    for (k, set) in alt.sets.iter().enumerate() {
        match locate::locate_all_cancellable(set, pre_images, focus, cancel) {
            Ok(changes) => {
                let mut notes = read.notes.clone();
                notes.push(format!(
                    "the answer offered conflicting edits of {}: this patch is alternative {} of {}, each read as a \
                     candidate of its own",
                    regions.join(", "),
                    k + 1,
                    alt.sets.len()
                ));
                out.push(Alternative { changes, notes });
            }
            Err(crate::Error::Cancelled) => return Err(crate::Error::Cancelled),
            Err(_) => {}
        }
    }
    if out.is_empty() {
        return Err(refusal);
    }
    Ok(out)
}
