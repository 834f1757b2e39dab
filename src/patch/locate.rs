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
//! Searching costs each hunk at most time linear in the file and the hunk, whatever their content, and usually
//! much less. A tier's view of the file's lines is made once per file, when a hunk first reaches that tier, and
//! shared by the file's later hunks. The first hunk to reach a tier scans those lines with Knuth-Morris-Pratt; the
//! next one turns the view (once) into integer ids, equal lines sharing an id, for the lines that the old sides of
//! the file's hunks hold (the other lines of the file can match none of them), with the positions of each id.
//! Through these every later hunk checks only the places where its rarest line occurs (or runs Knuth-Morris-Pratt
//! over the ids when even that line is frequent). Every match is found either way, so the refusals and tie-breaks
//! above do not depend on the search.
//!
//! A file narrowed to line ranges ([`super::focus`]) is searched only where the model was shown it: an old side
//! must lie inside one shown block (a range and its context lines), so uniqueness is decided there, and a match
//! elsewhere in the file, however unique, is refused; every removed line and every insertion point must then lie
//! inside a range (context lines may be quoted, never changed). A whole-file answer for such a file is refused.
//!
//! The post-image keeps what the file had: its line ending (CRLF or LF, from its first line), its final-newline
//! state, a UTF-8 byte-order mark, and the exact bytes of every line the edit did not replace (context lines
//! included, whatever tier matched them).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::focus::{self, LineRange};
use super::reader::is_elision;
use super::{FileChange, FileEdit, Hunk, HunkLine, HunkReport, MODE_REGULAR, MatchTier, PreImage};
use crate::error::{Error, Result, excerpt};

const BOM: &str = "\u{feff}";

/// How a tier normalises a line before comparing.
type Normalise = fn(&str) -> Cow<'_, str>;

/// The matching tiers, strictest first, with the comparison each uses.
const TIERS: [(MatchTier, Normalise); 4] = [
    // A byte-order mark the model copied from the prompt is not part of any line (the file keeps its own).
    (MatchTier::Exact, |s| {
        Cow::Borrowed(s.strip_prefix('\u{feff}').unwrap_or(s))
    }),
    (MatchTier::TrailingWhitespace, |s| {
        Cow::Borrowed(s.trim_end())
    }),
    (MatchTier::Indentation, |s| Cow::Borrowed(s.trim())),
    (MatchTier::UnicodeFolded, unicode_folded),
];

/// The Unicode tier's form of a line: trimmed, with [`FOLDS`] applied, trimmed again.
fn unicode_folded(s: &str) -> Cow<'_, str> {
    let s = s.trim();
    // Every folded character is outside ASCII: an ASCII line is its own folded form.
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let folded = fold_unicode(s);
    if folded.trim().len() == folded.len() {
        Cow::Owned(folded)
    } else {
        Cow::Owned(folded.trim().to_string())
    }
}

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
        let ranges = focus.get(&edit.path).map(Vec::as_slice).unwrap_or(&[]);
        let change = locate_file_within(edit, pre.as_ref(), ranges)?;
        if change.post.contains(&0) {
            return Err(Error::ModelAnswer(format!(
                "the answer writes NUL bytes into {}; only text edits are accepted",
                edit.path
            )));
        }
        if change.pre.as_deref() != Some(change.post.as_slice()) {
            changes.push(change);
        }
    }
    if changes.is_empty() {
        return Err(Error::ModelAnswer(
            "the answer changes nothing (every hunk leaves its file as it was); retry or rephrase the task".into(),
        ));
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// A hunk placed in the file.
struct Placed {
    start: usize,
    old_len: usize,
    hunk: usize,
    tier: MatchTier,
}

/// Locate the hunks of one file.
pub fn locate_file(edit: &FileEdit, pre: Option<&PreImage>) -> Result<FileChange> {
    locate_file_within(edit, pre, &[])
}

/// The line ranges a narrowed file may be edited in, and the blocks (0-based, half-open) it was shown.
struct Within<'a> {
    ranges: &'a [LineRange],
    blocks: Vec<(usize, usize)>,
}

impl Within<'_> {
    fn refusal(&self, path: &str, what: &str, line: usize) -> Error {
        Error::ModelAnswer(format!(
            "the answer {what} line {} of {path}, outside the lines {} it was shown; widen the range or select the \
             whole file",
            line + 1,
            focus::describe(self.ranges)
        ))
    }
}

/// Locate the hunks of one file; a non-empty `ranges` (merged, inside the file) confines them to those lines.
pub fn locate_file_within(
    edit: &FileEdit,
    pre: Option<&PreImage>,
    ranges: &[LineRange],
) -> Result<FileChange> {
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

    let whole_file = matches!(edit.hunks.as_slice(), [Hunk { lines, .. }] if matches!(lines.as_slice(), [HunkLine::WholeFile(_)]));
    let within = (!ranges.is_empty()).then(|| Within {
        ranges,
        blocks: focus::shown_blocks(ranges, keys.len())
            .iter()
            .map(|b| (b.from, b.to))
            .collect(),
    });
    if whole_file && within.is_some() {
        return Err(Error::ModelAnswer(format!(
            "the answer rewrites the whole of {path}, but it was shown only the lines {}; ask for an edit of \
             those lines (a diff, search/replace blocks or JSON edits), or select the whole file",
            focus::describe(ranges)
        )));
    }
    if whole_file {
        whole_file_guards(path, &keys, &edit.hunks)?;
    }
    let hunks: Vec<Hunk> = match edit.hunks.as_slice() {
        [Hunk { lines: hl, .. }] if whole_file => match hl.as_slice() {
            [HunkLine::WholeFile(new)] => hunks_between(&keys, new),
            _ => unreachable!("checked above"),
        },
        _ => edit.hunks.clone(),
    };
    if hunks
        .iter()
        .any(|h| h.lines.iter().any(|l| matches!(l, HunkLine::WholeFile(_))))
    {
        return Err(Error::ModelAnswer(format!(
            "the answer mixes a whole new {path} with other edits of it"
        )));
    }

    let old_sides: Vec<Vec<&str>> = hunks
        .iter()
        .map(|hunk| {
            hunk.lines
                .iter()
                .filter_map(|l| match l {
                    HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let mut haystack = Haystack::new(&keys, &old_sides);
    let mut placed: Vec<Placed> = Vec::new();
    let mut reports = Vec::new();
    for (n, hunk) in hunks.iter().enumerate() {
        let old_side = &old_sides[n];
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
        if old_side.is_empty() {
            if !lines.is_empty() || hunks.len() != 1 {
                return Err(Error::ModelAnswer(format!(
                    "hunk {} of {path} adds lines without any context line, so its place in the file is unknown; \
                     the model must quote at least one existing line",
                    n + 1
                )));
            }
            placed.push(Placed {
                start: 0,
                old_len: 0,
                hunk: n,
                tier: MatchTier::WholeFile,
            });
            reports.push(HunkReport {
                old_start: 0,
                removed,
                added,
                tier: MatchTier::WholeFile,
                line_number_tie_break: false,
            });
            continue;
        }
        let (start, tier, tie_break) = find_unique(&mut haystack, n, hunk, path, within.as_ref())?;
        if let Some(w) = &within
            && let Some(line) = changed_outside(hunk, start, keys.len(), w.ranges)
        {
            return Err(w.refusal(path, "edits", line));
        }
        if hunk.maybe_cut_off && start + old_side.len() != keys.len() {
            return Err(Error::ModelAnswer(format!(
                "hunk {} of {path} ends the answer on a changed line, shorter than its header says and before \
                 the end of the file: the answer looks cut off; retry, or raise [limits] max_output_tokens",
                n + 1
            )));
        }
        let tier = if whole_file {
            MatchTier::WholeFile
        } else {
            tier
        };
        placed.push(Placed {
            start,
            old_len: old_side.len(),
            hunk: n,
            tier,
        });
        reports.push(HunkReport {
            old_start: start + 1,
            removed,
            added,
            tier,
            line_number_tie_break: tie_break,
        });
    }
    placed.sort_by_key(|p| p.start);
    for w in placed.windows(2) {
        if w[0].start + w[0].old_len > w[1].start {
            return Err(Error::ModelAnswer(format!(
                "hunks {} and {} of {path} overlap; the model must edit each region once",
                w[0].hunk + 1,
                w[1].hunk + 1
            )));
        }
    }

    let file_indent_unit = indent_unit(&keys);
    let mut file_folds = FileFolds::new(text);
    // The file's lines are borrowed; only added lines and a changed line ending own their text.
    let mut out: Vec<Cow<'_, str>> = Vec::with_capacity(lines.len() + 8);
    let mut cursor = 0;
    for p in &placed {
        out.extend(lines[cursor..p.start].iter().map(|l| Cow::Borrowed(*l)));
        let hunk = &hunks[p.hunk];
        let reindent = Reindent::new(
            hunk,
            &keys[p.start..p.start + p.old_len],
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
                    let s = s.strip_prefix('\u{feff}').unwrap_or(s);
                    let mut s = match &reindent {
                        Some(r) => r.apply(s),
                        None => s.to_string(),
                    };
                    if p.tier == MatchTier::UnicodeFolded {
                        s = fold_foreign(&s, &mut file_folds);
                    }
                    out.push(Cow::Owned(format!("{s}{eol}")));
                }
                HunkLine::WholeFile(_) => {}
            }
        }
        cursor = p.start + p.old_len;
    }
    out.extend(lines[cursor..].iter().map(|l| Cow::Borrowed(*l)));

    // Every line but the last ends with a terminator; the last keeps the file's final-newline state.
    let had_final_newline = body.is_empty() || body.ends_with('\n');
    let count = out.len();
    for (k, line) in out.iter_mut().enumerate() {
        let last = k + 1 == count;
        if !line.ends_with('\n') && (!last || had_final_newline) {
            line.to_mut().push_str(eol);
        } else if last && !had_final_newline {
            // A line of the file that becomes the last one loses its line ending: a change to that line, which a
            // file shown in ranges may only have inside them.
            if let (Some(w), Cow::Borrowed(b)) = (&within, &*line) {
                let at = lines.partition_point(|l| (l.as_ptr() as usize) < (b.as_ptr() as usize));
                if !focus::contains(w.ranges, at) {
                    return Err(w.refusal(path, "removes the line ending of", at));
                }
            }
            let trimmed = content_of(line).len();
            line.to_mut().truncate(trimmed);
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

/// Refuse whole-file answers that cannot be trusted: files over the whole-file limit, files whose own lines open
/// code fences (the answer's block cannot be delimited), and answers that drop most of a file (a cut-off block).
fn whole_file_guards(path: &str, keys: &[&str], hunks: &[Hunk]) -> Result<()> {
    use super::reader::WHOLE_FILE_MAX_LINES;
    let Some(HunkLine::WholeFile(new)) = hunks.first().and_then(|h| h.lines.first()) else {
        return Ok(());
    };
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

/// Find the one place the old side of hunk `n` matches in the file: (start, tier, whether the line-number hint broke
/// a tie).
///
/// With `within`, only places whose old side lies inside one shown block count; when only places elsewhere match,
/// the refusal names the first line the hunk would change there.
fn find_unique(
    haystack: &mut Haystack<'_>,
    n: usize,
    hunk: &Hunk,
    path: &str,
    within: Option<&Within<'_>>,
) -> Result<(usize, MatchTier, bool)> {
    let hint = hunk.old_start_hint;
    let needle = haystack.needles[n].as_slice();
    let mut elsewhere: Option<usize> = None;
    for (t, (tier, norm)) in TIERS.into_iter().enumerate() {
        // An old side of only blank lines would match anywhere once whitespace is ignored.
        if tier != MatchTier::Exact && needle.iter().all(|k| norm(k).is_empty()) {
            break;
        }
        let mut matches = haystack.find_all(t, n);
        if let Some(w) = within {
            let k = needle.len();
            let (inside, outside): (Vec<usize>, Vec<usize>) = matches
                .into_iter()
                .partition(|&m| w.blocks.iter().any(|&(from, to)| from <= m && m + k <= to));
            elsewhere = elsewhere.or(outside.first().copied());
            matches = inside;
        }
        match matches.as_slice() {
            [] => continue,
            [one] => return Ok((*one, tier, false)),
            many => {
                if let Some(h) = hint {
                    let at: Vec<&usize> = many.iter().filter(|&&m| m + 1 == h).collect();
                    if let [one] = at.as_slice() {
                        return Ok((**one, tier, true));
                    }
                }
                let at: Vec<String> = many.iter().take(5).map(|s| (s + 1).to_string()).collect();
                return Err(Error::ModelAnswer(format!(
                    "hunk {} of {path} matches {} places (lines {}{}), so where it belongs is ambiguous: {:?}; \
                     the model must include more context",
                    n + 1,
                    many.len(),
                    at.join(", "),
                    if many.len() > 5 { ", ..." } else { "" },
                    excerpt(&needle.join("\n"), 200)
                )));
            }
        }
    }
    if let (Some(w), Some(at)) = (within, elsewhere) {
        return Err(
            match changed_outside(hunk, at, haystack.keys.len(), w.ranges) {
                Some(line) => w.refusal(path, "edits", line),
                // Every change is inside the ranges, but the hunk quotes lines beyond what the model was shown.
                None if first_changed(hunk, at).is_some_and(|l| focus::contains(w.ranges, l)) => {
                    Error::ModelAnswer(format!(
                        "hunk {} of {path} quotes lines {}-{}, beyond the lines it was shown ({} with their context); \
                     widen the range or select the whole file",
                        n + 1,
                        at + 1,
                        at + needle.len(),
                        focus::describe(w.ranges)
                    ))
                }
                None => w.refusal(path, "edits", first_changed(hunk, at).unwrap_or(at)),
            },
        );
    }
    Err(Error::ModelAnswer(format!(
        "hunk {} of {path} does not match the file (even ignoring whitespace and Unicode punctuation): these lines \
         were not found together: {:?}",
        n + 1,
        excerpt(&needle.join("\n"), 400)
    )))
}

/// The first line index, for `hunk` placed at `start` in a file of `file_len` lines, that the hunk changes outside
/// `ranges`: a removed line outside them, or an insertion whose neighbours in the file both lie outside them.
fn changed_outside(
    hunk: &Hunk,
    start: usize,
    file_len: usize,
    ranges: &[LineRange],
) -> Option<usize> {
    let mut at = 0;
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => at += 1,
            HunkLine::Remove(_) => {
                if !focus::contains(ranges, start + at) {
                    return Some(start + at);
                }
                at += 1;
            }
            HunkLine::Add(_) => {
                // The insertion's neighbours in the file (not only within the hunk's own lines).
                let p = start + at;
                let before = p.checked_sub(1);
                let after = (p < file_len).then_some(p);
                let inside = |l: Option<usize>| l.is_some_and(|l| focus::contains(ranges, l));
                if !inside(before) && !inside(after) {
                    return after.or(before);
                }
            }
            HunkLine::WholeFile(_) => {}
        }
    }
    None
}

/// The first line index `hunk`, placed at `start`, changes (or inserts before).
fn first_changed(hunk: &Hunk, start: usize) -> Option<usize> {
    let mut at = 0;
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => at += 1,
            HunkLine::Remove(_) | HunkLine::Add(_) => return Some(start + at),
            HunkLine::WholeFile(_) => {}
        }
    }
    None
}

/// The lines of one file as the tiers see them, shared by all the hunks of the file. A tier's view is made when a
/// hunk first reaches the tier, so a tier no hunk reaches costs nothing.
struct Haystack<'a> {
    keys: &'a [&'a str],
    /// The old side of every hunk of the file.
    needles: &'a [Vec<&'a str>],
    tiers: [TierLines<'a>; TIERS.len()],
}

/// One tier's view of the file's lines.
enum TierLines<'a> {
    /// No hunk has reached the tier yet.
    Unseen,
    /// One hunk has: the normalised lines, which that hunk scanned (cheaper than indexing them for one search).
    Lines(Vec<Cow<'a, str>>),
    /// Several hunks have: the lines as ids.
    Indexed(LineIndex),
}

impl<'a> Haystack<'a> {
    fn new(keys: &'a [&'a str], needles: &'a [Vec<&'a str>]) -> Haystack<'a> {
        Haystack {
            keys,
            needles,
            tiers: std::array::from_fn(|_| TierLines::Unseen),
        }
    }

    /// Every line index where the old side of hunk `n` occurs at tier `t`, in increasing order.
    fn find_all(&mut self, t: usize, n: usize) -> Vec<usize> {
        let norm = TIERS[t].1;
        let slot = &mut self.tiers[t];
        match std::mem::replace(slot, TierLines::Unseen) {
            TierLines::Unseen => {
                let lines: Vec<Cow<'a, str>> = self.keys.iter().map(|k| norm(k)).collect();
                let pat: Vec<Cow<'_, str>> = self.needles[n].iter().map(|k| norm(k)).collect();
                let found = find_all(&lines, &pat);
                *slot = TierLines::Lines(lines);
                found
            }
            TierLines::Lines(lines) => {
                let needles: Vec<Vec<Cow<'_, str>>> = self
                    .needles
                    .iter()
                    .map(|needle| needle.iter().map(|k| norm(k)).collect())
                    .collect();
                let index = LineIndex::new(&lines, &needles);
                let found = index.find_all(n);
                *slot = TierLines::Indexed(index);
                found
            }
            TierLines::Indexed(index) => {
                let found = index.find_all(n);
                *slot = TierLines::Indexed(index);
                found
            }
        }
    }
}

/// A file's lines and its hunks' old sides as integer ids: lines equal at the tier share an id; a file line that no
/// old side holds gets none. Ids count up from 0 in order of first occurrence in the old sides.
struct LineIndex {
    /// The id of every line of the file ([`LineIndex::NONE`] for a line no old side holds).
    lines: Vec<usize>,
    /// The old side of every hunk.
    needles: Vec<Vec<usize>>,
    /// The positions of id `i` in the file, increasing, are `positions[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    positions: Vec<usize>,
}

impl LineIndex {
    const NONE: usize = usize::MAX;

    /// The index of `lines` (a file's normalised lines) for `needles` (its hunks' normalised old sides).
    fn new(lines: &[Cow<'_, str>], needles: &[Vec<Cow<'_, str>>]) -> LineIndex {
        // Only the old sides' lines are interned: a small table, whatever the size of the file.
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let needles: Vec<Vec<usize>> = needles
            .iter()
            .map(|needle| {
                needle
                    .iter()
                    .map(|l| {
                        let next = ids.len();
                        *ids.entry(l.as_ref()).or_insert(next)
                    })
                    .collect()
            })
            .collect();
        let lines: Vec<usize> = lines
            .iter()
            .map(|l| ids.get(l.as_ref()).copied().unwrap_or(Self::NONE))
            .collect();
        let mut starts = vec![0; ids.len() + 1];
        for &id in lines.iter().filter(|&&id| id != Self::NONE) {
            starts[id + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut positions = vec![0; starts[ids.len()]];
        for (at, &id) in lines.iter().enumerate() {
            if id != Self::NONE {
                positions[next[id]] = at;
                next[id] += 1;
            }
        }
        LineIndex {
            lines,
            needles,
            starts,
            positions,
        }
    }

    fn positions_of(&self, id: usize) -> &[usize] {
        &self.positions[self.starts[id]..self.starts[id + 1]]
    }

    /// Every line index where the old side of hunk `n` occurs, in increasing order.
    fn find_all(&self, n: usize) -> Vec<usize> {
        let needle = &self.needles[n];
        let (k, len) = (needle.len(), self.lines.len());
        // Every match holds the needle's rarest line at the same offset: check only those places, unless that costs
        // more than one linear scan.
        let rarest = needle
            .iter()
            .enumerate()
            .map(|(j, &id)| (j, self.positions_of(id)))
            .min_by_key(|(_, at)| at.len());
        match rarest {
            Some((j, at)) if at.len().saturating_mul(k) <= len + k => at
                .iter()
                .filter_map(|&p| p.checked_sub(j))
                .filter(|&s| s + k <= len && self.lines[s..s + k] == needle[..])
                .collect(),
            _ => find_all(&self.lines, needle),
        }
    }
}

/// Every index where `needle` occurs in `haystack` as consecutive items, overlapping occurrences included, in
/// increasing order; none for an empty needle. Knuth-Morris-Pratt: at most 2 (N + K) comparisons.
fn find_all<T: PartialEq>(haystack: &[T], needle: &[T]) -> Vec<usize> {
    let k = needle.len();
    if k == 0 || k > haystack.len() {
        return Vec::new();
    }
    // border[i]: the length of the longest proper prefix of needle[..=i] that is also its suffix.
    let mut border = vec![0; k];
    let mut b = 0;
    for i in 1..k {
        while b > 0 && needle[i] != needle[b] {
            b = border[b - 1];
        }
        if needle[i] == needle[b] {
            b += 1;
        }
        border[i] = b;
    }
    let mut found = Vec::new();
    let mut m = 0;
    for (i, item) in haystack.iter().enumerate() {
        while m > 0 && *item != needle[m] {
            m = border[m - 1];
        }
        if *item == needle[m] {
            m += 1;
        }
        if m == k {
            found.push(i + 1 - k);
            m = border[k - 1];
        }
    }
    found
}

/// A line without its `\n` or `\r\n` terminator.
fn content_of(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

/// Unicode punctuation weak models substitute for ASCII, and its ASCII form.
const FOLDS: &[(char, &str)] = &[
    ('\u{2018}', "'"),
    ('\u{2019}', "'"),
    ('\u{201a}', "'"),
    ('\u{201b}', "'"),
    ('\u{201c}', "\""),
    ('\u{201d}', "\""),
    ('\u{201e}', "\""),
    ('\u{201f}', "\""),
    ('\u{2010}', "-"),
    ('\u{2011}', "-"),
    ('\u{2012}', "-"),
    ('\u{2013}', "-"),
    ('\u{2014}', "-"),
    ('\u{2015}', "-"),
    ('\u{2212}', "-"),
    ('\u{00a0}', " "),
    ('\u{2007}', " "),
    ('\u{2009}', " "),
    ('\u{200a}', " "),
    ('\u{202f}', " "),
    ('\u{3000}', " "),
    ('\u{200b}', ""),
    ('\u{2026}', "..."),
];

fn fold_unicode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match FOLDS.iter().find(|(u, _)| *u == c) {
            Some((_, a)) => out.push_str(a),
            None => out.push(c),
        }
    }
    out
}

/// Whether the file uses each of the [`FOLDS`] characters, looked up once per file and character.
struct FileFolds<'a> {
    text: &'a str,
    uses: [Option<bool>; FOLDS.len()],
}

impl<'a> FileFolds<'a> {
    fn new(text: &'a str) -> FileFolds<'a> {
        FileFolds {
            text,
            uses: [None; FOLDS.len()],
        }
    }

    /// Whether the file uses `FOLDS[i].0`.
    fn uses(&mut self, i: usize) -> bool {
        *self.uses[i].get_or_insert_with(|| self.text.contains(FOLDS[i].0))
    }
}

/// Fold, in a line the model added, the Unicode punctuation that the file itself never uses.
fn fold_foreign(line: &str, file: &mut FileFolds<'_>) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match FOLDS.iter().position(|(u, _)| *u == c) {
            Some(i) if !file.uses(i) => out.push_str(FOLDS[i].1),
            _ => out.push(c),
        }
    }
    out
}

fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

fn width(ws: &str, tab: usize) -> usize {
    ws.chars().map(|c| if c == '\t' { tab } else { 1 }).sum()
}

/// The file's indentation step in columns: the smallest positive indentation of its space-indented lines (4 if none).
fn indent_unit(keys: &[&str]) -> usize {
    keys.iter()
        .filter(|k| !k.trim().is_empty())
        .map(|k| leading_ws(k))
        .filter(|w| !w.is_empty() && !w.contains('\t'))
        .map(str::len)
        .min()
        .unwrap_or(4)
}

/// Maps the model's indentation to the file's for the added lines of a hunk matched with indentation ignored.
///
/// Every matched non-blank line gives a pair (the model's indentation width, the file's indentation). An added
/// line indented like one of the model's matched lines gets that line's file indentation; otherwise the nearest
/// pair is shifted by the difference in levels (the model's level step is the gcd of its indentation widths).
struct Reindent {
    /// (model width, file indentation): the first pair of each model width, removed lines' pairs first.
    pairs: Vec<(usize, String)>,
    model_unit: usize,
    file_unit: usize,
    use_tabs: bool,
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Reindent {
    fn new(hunk: &Hunk, matched: &[&str], tier: MatchTier, file_unit: usize) -> Option<Reindent> {
        if !matches!(tier, MatchTier::Indentation | MatchTier::UnicodeFolded) {
            return None;
        }
        let old_side = hunk.lines.iter().filter_map(|l| match l {
            HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
            _ => None,
        });
        let matched_pairs: Vec<(&str, &str)> = old_side
            .zip(matched.iter().copied())
            .filter(|(m, _)| !m.trim().is_empty())
            .collect();
        if matched_pairs
            .iter()
            .all(|(m, f)| leading_ws(m) == leading_ws(f))
        {
            return None;
        }
        // Every matched line one space short, in a file indented with spaces: the model dropped the ' ' prefix of
        // its context lines (the hunk's own lines are in file columns already). No indentation style differs by
        // exactly one column everywhere.
        if matched_pairs.iter().all(|(m, f)| {
            let (mw, fw) = (leading_ws(m), leading_ws(f));
            !fw.contains('\t') && !mw.contains('\t') && fw.len() == mw.len() + 1
        }) {
            return None;
        }
        // Removed lines first: they are written with the same prefix discipline as the added lines, so when the
        // context lines drifted differently (a lost prefix space), an added line still finds its true level.
        let removed: HashSet<&str> = hunk
            .lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Remove(s) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        let (mut ordered, others): (Vec<_>, Vec<_>) =
            matched_pairs.iter().partition(|(m, _)| removed.contains(m));
        ordered.extend(others);
        let mut pairs: Vec<(usize, String)> = ordered
            .iter()
            .map(|(m, f)| (width(leading_ws(m), 4), leading_ws(f).to_string()))
            .collect();
        let model_widths = hunk.lines.iter().filter_map(|l| match l {
            HunkLine::Context(s) | HunkLine::Remove(s) | HunkLine::Add(s)
                if !s.trim().is_empty() =>
            {
                Some(width(leading_ws(s), 4))
            }
            _ => None,
        });
        let model_unit = model_widths.fold(0, gcd);
        let use_tabs = pairs.iter().any(|(_, f)| f.contains('\t'));
        // `apply` only ever uses the first pair of each model width.
        let mut widths = HashSet::new();
        pairs.retain(|(w, _)| widths.insert(*w));
        Some(Reindent {
            pairs,
            model_unit: if model_unit == 0 { 4 } else { model_unit },
            file_unit: file_unit.max(1),
            use_tabs,
        })
    }

    fn apply(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return String::new();
        }
        let w = width(leading_ws(line), 4);
        let text = line.trim_start();
        if let Some((_, f)) = self.pairs.iter().find(|(mw, _)| *mw == w) {
            return format!("{f}{text}");
        }
        let Some((mw, f)) = self
            .pairs
            .iter()
            .min_by_key(|(mw, _)| (mw.abs_diff(w), *mw))
        else {
            return line.to_string();
        };
        let delta = (w as f64 - *mw as f64) / self.model_unit as f64;
        let indent = if self.use_tabs {
            let levels = (f.chars().filter(|&c| c == '\t').count() as f64 + delta)
                .round()
                .max(0.0);
            "\t".repeat(levels as usize)
        } else {
            let cols = (width(f, self.file_unit) as f64 + delta * self.file_unit as f64)
                .round()
                .max(0.0);
            " ".repeat(cols as usize)
        };
        format!("{indent}{text}")
    }
}

/// The hunks turning the file's lines into `new` (a whole-file answer), with exact context from the file.
fn hunks_between(keys: &[&str], new: &[String]) -> Vec<Hunk> {
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
    use super::*;
    use crate::patch::Hunk;

    fn edit(path: &str, lines: Vec<HunkLine>) -> FileEdit {
        FileEdit {
            path: path.into(),
            creates: false,
            hunks: vec![Hunk {
                old_start_hint: None,
                maybe_cut_off: false,
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
        assert!(
            err.to_string().contains("matches 2 places (lines 1, 3)"),
            "{err}"
        );
    }

    #[test]
    fn a_line_number_breaks_a_tie_but_never_overrides_content() {
        let mut e = edit("a", vec![R("x".into()), Add("y".into())]);
        e.hunks[0].old_start_hint = Some(3);
        let c = locate_file(&e, Some(&pre("x\nz\nx\n"))).unwrap();
        assert_eq!(c.post, b"x\nz\ny\n");
        assert!(c.hunks[0].line_number_tie_break);
        e.hunks[0].old_start_hint = Some(2);
        assert!(
            locate_file(&e, Some(&pre("x\nz\nx\n"))).is_err(),
            "line 2 does not hold `x`"
        );
    }

    #[test]
    fn a_strict_tier_wins_over_looser_matches() {
        // `  x` matches exactly once; ignoring indentation it would match twice.
        let e = edit("a", vec![R("  x".into()), Add("  y".into())]);
        let c = locate_file(&e, Some(&pre("x\n  x\n"))).unwrap();
        assert_eq!(c.post, b"x\n  y\n");
        assert_eq!(c.hunks[0].tier, MatchTier::Exact);
    }

    #[test]
    fn trailing_whitespace_drift_keeps_the_file_bytes_of_context() {
        let e = edit("a", vec![C("a".into()), R("b".into()), Add("B".into())]);
        let c = locate_file(&e, Some(&pre("a  \nb\t\n"))).unwrap();
        assert_eq!(c.post, b"a  \nB\n");
        assert_eq!(c.hunks[0].tier, MatchTier::TrailingWhitespace);
    }

    #[test]
    fn indentation_drift_is_reindented_to_the_file() {
        // The file uses tabs; the model wrote 4 spaces per level.
        let e = edit(
            "a",
            vec![
                C("def f():".into()),
                R("    return 1".into()),
                Add("    if x:".into()),
                Add("        return 2".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n\treturn 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n\tif x:\n\t\treturn 2\n"
        );
        assert_eq!(c.hunks[0].tier, MatchTier::Indentation);
        // The file uses 2 spaces; the model wrote none.
        let e = edit(
            "a",
            vec![
                R("x = 1".into()),
                Add("x = 2".into()),
                Add("if x:".into()),
                Add("    y()".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n  x = 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n  x = 2\n  if x:\n    y()\n"
        );
    }

    #[test]
    fn reindenting_prefers_the_removed_lines_and_the_first_pair_of_a_width() {
        // The context line and the removed line have the same model width but different file indentation: added
        // lines follow the removed line's, also when shifted by a level (2 columns, the file's step).
        let e = edit(
            "a",
            vec![
                C("def f():".into()),
                C("\tx = 0".into()),
                R("\ty = 1".into()),
                Add("\tz = 2".into()),
                Add("\t\tw = 3".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("def f():\n  x = 0\n   y = 1\n"))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "def f():\n  x = 0\n   z = 2\n     w = 3\n"
        );
        assert_eq!(c.hunks[0].tier, MatchTier::Indentation);
    }

    #[test]
    fn unicode_punctuation_is_folded_when_the_file_does_not_use_it() {
        let e = edit(
            "a",
            vec![
                R("s = \u{201c}hi\u{201d} \u{2014} 1".into()),
                Add("s = \u{201c}hello\u{201d}".into()),
            ],
        );
        let c = locate_file(&e, Some(&pre("s = \"hi\" - 1\n"))).unwrap();
        assert_eq!(c.post, b"s = \"hello\"\n");
        assert_eq!(c.hunks[0].tier, MatchTier::UnicodeFolded);
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
            maybe_cut_off: false,
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

    #[test]
    fn refuses_context_free_insertions_into_a_non_empty_file() {
        let e = edit("a", vec![Add("x".into())]);
        let err = locate_file(&e, Some(&pre("a\n"))).unwrap_err();
        assert!(
            err.to_string().contains("without any context line"),
            "{err}"
        );
    }

    /// The naive search `find_all` replaced: every start where the needle matches item by item.
    fn naive<T: PartialEq>(haystack: &[T], needle: &[T]) -> Vec<usize> {
        if needle.is_empty() || needle.len() > haystack.len() {
            return Vec::new();
        }
        (0..=haystack.len() - needle.len())
            .filter(|&i| haystack[i..i + needle.len()] == *needle)
            .collect()
    }

    #[test]
    fn find_all_finds_overlapping_and_periodic_needles() {
        let hay = [1, 1, 1, 1, 1];
        assert_eq!(find_all(&hay, &[1, 1]), [0, 1, 2, 3]);
        assert_eq!(find_all(&hay, &[1; 5]), [0]);
        assert_eq!(find_all(&hay, &[1; 6]), Vec::<usize>::new());
        let hay = [1, 2, 1, 2, 1, 2, 1];
        assert_eq!(find_all(&hay, &[1, 2, 1]), [0, 2, 4]);
        assert_eq!(find_all(&hay, &[2, 1, 2]), [1, 3]);
        // A border that must fall back twice (a a b inside a a a b).
        assert_eq!(find_all(&[1, 1, 1, 2, 1, 1, 2], &[1, 1, 2]), [1, 4]);
        assert_eq!(find_all(&[3, 1, 2], &[3]), [0], "at the start");
        assert_eq!(find_all(&[1, 2, 3], &[2, 3]), [1], "at the end");
        assert_eq!(
            find_all::<i32>(&[1, 2], &[]),
            Vec::<usize>::new(),
            "empty needle"
        );
        assert_eq!(
            find_all::<i32>(&[], &[1]),
            Vec::<usize>::new(),
            "empty haystack"
        );
    }

    #[test]
    fn find_all_and_the_index_agree_with_the_naive_search() {
        // Every needle of up to 5 items over {0, 1, 2}, against a few periodic and mixed haystacks.
        let hays: [&[u8]; 4] = [
            &[0, 0, 1, 0, 0, 1, 0, 0, 0, 1],
            &[0, 1, 0, 1, 0, 1, 2, 0, 1, 0],
            &[2, 2, 2, 2, 2, 2],
            &[0, 1, 2, 0, 1, 2, 2, 1, 0],
        ];
        let needles: Vec<Vec<u8>> = (1..=5)
            .flat_map(|len| {
                (0..3usize.pow(len))
                    .map(move |code| (0..len).map(|d| (code / 3usize.pow(d) % 3) as u8).collect())
            })
            .collect();
        let as_lines = |v: &[u8]| -> Vec<Cow<'_, str>> {
            v.iter().map(|b| Cow::Owned(b.to_string())).collect()
        };
        let pats: Vec<Vec<Cow<'_, str>>> = needles.iter().map(|n| as_lines(n)).collect();
        for hay in hays {
            let lines = as_lines(hay);
            let index = LineIndex::new(&lines, &pats);
            for (n, needle) in needles.iter().enumerate() {
                let expected = naive(hay, needle);
                assert_eq!(find_all(hay, needle), expected, "{hay:?} {needle:?}");
                assert_eq!(find_all(&lines, &pats[n]), expected, "{hay:?} {needle:?}");
                assert_eq!(index.find_all(n), expected, "{hay:?} {needle:?}");
            }
        }
    }

    #[test]
    fn every_tier_finds_what_the_naive_search_finds_for_every_hunk_of_a_file() {
        // Lines that tiers tell apart or not (whitespace, a byte-order mark, Unicode punctuation, blank lines).
        const LINES: [&str; 12] = [
            "a",
            " a",
            "a ",
            "\ta",
            "\u{feff}a",
            "b",
            "\u{201c}b\u{201d}",
            "\"b\"",
            "\u{200b}b",
            "",
            "  ",
            "\u{a0}",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for _ in 0..300 {
            // Few kinds of lines make long runs and frequent lines (the index's linear scan); many, rare ones.
            let kinds = 1 + next(LINES.len());
            let keys: Vec<&str> = (0..next(40)).map(|_| LINES[next(kinds)]).collect();
            // Several hunks per file, so that each tier goes from unseen to scanned to indexed; parts of the file,
            // and lines drawn at random (which may be missing from it).
            let needles: Vec<Vec<&str>> = (0..6)
                .map(|_| {
                    if !keys.is_empty() && next(2) == 0 {
                        let from = next(keys.len());
                        let to = from + 1 + next((keys.len() - from).min(6));
                        keys[from..to].to_vec()
                    } else {
                        (0..1 + next(4)).map(|_| LINES[next(kinds)]).collect()
                    }
                })
                .collect();
            let mut hay = Haystack::new(&keys, &needles);
            for (n, needle) in needles.iter().enumerate() {
                for (t, (_, norm)) in TIERS.into_iter().enumerate() {
                    let lines: Vec<Cow<'_, str>> = keys.iter().map(|k| norm(k)).collect();
                    let pat: Vec<Cow<'_, str>> = needle.iter().map(|k| norm(k)).collect();
                    assert_eq!(
                        hay.find_all(t, n),
                        naive(&lines, &pat),
                        "tier {t}, {keys:?}, {needle:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_index_checks_candidates_at_the_edges_of_the_file() {
        let cows = |p: &[&'static str]| p.iter().map(|s| Cow::Borrowed(*s)).collect::<Vec<_>>();
        let lines = cows(&["a", "x", "b", "c", "x", "d"]);
        let needles: Vec<Vec<Cow<'_, str>>> = [
            &["a", "x"][..],
            &["x", "d"],
            &["x"],
            // The rarest line (`d` or `a`) first in the needle, or last, with the needle running off either end.
            &["d", "x"],
            &["x", "a"],
            &["a", "x", "b", "c", "x", "d"],
            &["a", "x", "b", "c", "x", "d", "x"],
            &["nope"],
            &["x", "nope"],
            &[],
        ]
        .iter()
        .map(|n| cows(n))
        .collect();
        let index = LineIndex::new(&lines, &needles);
        let found: Vec<Vec<usize>> = (0..needles.len()).map(|n| index.find_all(n)).collect();
        let none = Vec::new();
        assert_eq!(
            found,
            [
                vec![0],
                vec![4],
                vec![1, 4],
                none.clone(),
                none.clone(),
                vec![0],
                none.clone(),
                none.clone(),
                none.clone(),
                none
            ]
        );
        // Lines no old side holds (here all but `x`) share no id with anything.
        let index = LineIndex::new(&lines, &[cows(&["x"]), cows(&["x", "x"])]);
        assert_eq!(
            index.lines,
            [
                LineIndex::NONE,
                0,
                LineIndex::NONE,
                LineIndex::NONE,
                0,
                LineIndex::NONE
            ]
        );
        assert_eq!(index.find_all(0), [1, 4]);
        assert_eq!(index.find_all(1), Vec::<usize>::new());
        // Frequent lines: Knuth-Morris-Pratt over the ids, lines no old side holds included.
        let lines = cows(&["x", "x", "y", "x", "x", "x", "z"]);
        let index = LineIndex::new(&lines, &[cows(&["x", "x"]), cows(&["x", "x", "x"])]);
        assert_eq!(index.find_all(0), [0, 3, 4]);
        assert_eq!(index.find_all(1), [3]);
    }

    #[test]
    fn the_tiers_views_are_made_when_reached_and_shared_by_the_hunks_of_a_file() {
        let keys = [
            "fn f() {", "    a();", "    b();", "}", "fn g() {", "\ta();", "}",
        ];
        let needles: Vec<Vec<&str>> = vec![
            vec!["    a();"],
            vec!["}"],
            vec!["b();"],
            vec!["a();"],
            vec!["a();", "}"],
        ];
        let mut hay = Haystack::new(&keys, &needles);
        assert_eq!(hay.find_all(0, 0), [1]);
        assert!(matches!(hay.tiers[0], TierLines::Lines(_)));
        assert!(matches!(hay.tiers[2], TierLines::Unseen));
        assert_eq!(hay.find_all(0, 1), [3, 6]);
        assert!(matches!(hay.tiers[0], TierLines::Indexed(_)));
        assert_eq!(hay.find_all(0, 2), Vec::<usize>::new());
        assert_eq!(hay.find_all(2, 3), [1, 5]);
        assert_eq!(hay.find_all(2, 4), [5]);
        assert!(matches!(hay.tiers[2], TierLines::Indexed(_)));
        assert!(matches!(hay.tiers[1], TierLines::Unseen));
        assert!(matches!(hay.tiers[3], TierLines::Unseen));
    }

    #[test]
    fn many_hunks_of_one_file_are_placed_through_the_shared_index() {
        // 30 hunks at the indentation tier (tabs in the answer) and one ambiguous hunk, in one file.
        let file: String = (0..300)
            .map(|i| format!("    let v{i} = {i};\n    x();\n"))
            .collect();
        let mut e = edit("a", vec![]);
        e.hunks.clear();
        let mut expected = file.clone();
        for h in 0..30 {
            let i = h * 10;
            e.hunks.push(Hunk {
                old_start_hint: None,
                maybe_cut_off: false,
                lines: vec![
                    C("\tx();".into()),
                    R(format!("\tlet v{} = {};", i + 1, i + 1)),
                    Add(format!("\tlet v{} = 0;", i + 1)),
                    C("\tx();".into()),
                ],
            });
            expected = expected.replace(
                &format!("    let v{} = {};\n", i + 1, i + 1),
                &format!("    let v{} = 0;\n", i + 1),
            );
        }
        let c = locate_file(&e, Some(&pre(&file))).unwrap();
        assert_eq!(String::from_utf8(c.post).unwrap(), expected);
        assert!(c.hunks.iter().all(|h| h.tier == MatchTier::Indentation));
        assert_eq!(c.hunks[29].old_start, 2 * 291);
        e.hunks.push(Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            lines: vec![C("\tx();".into()), Add("\ty();".into())],
        });
        let err = locate_file(&e, Some(&pre(&file))).unwrap_err();
        assert!(
            err.to_string()
                .contains("hunk 31 of a matches 300 places (lines 2, 4, 6, 8, 10, ...)"),
            "{err}"
        );
    }

    #[test]
    fn folded_punctuation_the_file_uses_is_kept_in_every_hunk() {
        // The file uses the em dash but no curly quotes: in added lines, the quotes are folded, the dash kept.
        let file = "a = \"x\" \u{2014} 1\nb = 2\nc = \"y\"\n";
        let mut e = edit(
            "a",
            vec![
                R("a = \u{201c}x\u{201d} \u{2014} 1".into()),
                Add("a = \u{201c}z\u{201d} \u{2014} 3".into()),
            ],
        );
        e.hunks.push(Hunk {
            old_start_hint: None,
            maybe_cut_off: false,
            lines: vec![
                R("c = \u{201c}y\u{201d}".into()),
                Add("c = \u{2018}w\u{2019} \u{2014}".into()),
            ],
        });
        let c = locate_file(&e, Some(&pre(file))).unwrap();
        assert_eq!(
            String::from_utf8(c.post).unwrap(),
            "a = \"z\" \u{2014} 3\nb = 2\nc = 'w' \u{2014}\n"
        );
        assert_eq!(unicode_folded(" \u{201c}a\u{201d}\u{200b}"), "\"a\"");
        assert_eq!(unicode_folded("\u{200b} a \u{2026}"), "a ...");
        assert!(matches!(
            unicode_folded("  plain  "),
            Cow::Borrowed("plain")
        ));
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
