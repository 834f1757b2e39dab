//! The canonical patch: the exact bytes the primary approves, their rendering and their strict application. Pure.
//!
//! Format (a subset of `git diff --full-index`, accepted by `git apply`), one section per file, sorted by path:
//! ```text
//! diff --git a/P b/P
//! new file mode 100644                    (only when P is created)
//! index <old-blob-id>..<new-blob-id>[ <mode>]   (mode only when P exists; old id is 40 zeros for a new file)
//! --- a/P                                 (`--- /dev/null` for a new file)
//! +++ b/P
//! @@ ... hunks with 3 lines of context, rendered by diffy
//! ```
//! A deletion and a move (both only where the policy allows them) are git's too:
//! ```text
//! diff --git a/P b/P                      diff --git a/F b/T
//! deleted file mode 100644                rename from F
//! index <old-blob-id>..<40 zeros>         rename to T
//! --- a/P                                 index <old-blob-id>..<new-blob-id> <mode>
//! +++ /dev/null                           --- a/F        (these three only when the content changes)
//! @@ every line removed                   +++ b/T
//!                                         @@ ...
//! ```
//! (An empty file deleted has no `---`/`+++` lines and no hunk.) A move's section sorts by its destination `T`.
//! The blob ids are git's: they pin the exact pre-image a patch may be applied to and the exact post-image it must
//! produce. Parsing is strict: anything else (copies, mode changes, binary patches) is refused, and so is a path
//! named by two sections.

mod diff;

use super::{ChangeOp, FileChange, MODE_EXECUTABLE, MODE_REGULAR};
use crate::digest::{NULL_BLOB_ID, git_blob_id};

/// The git blob id of empty content.
const EMPTY_BLOB_ID: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
use crate::error::{Error, Result};

/// Render the canonical patch for `changes`. Files are sorted by path, so the same change always has the same bytes.
/// Its time is linear in the files for the edits a model makes, however many hunks (see `diff`).
pub fn render(changes: &[FileChange]) -> Vec<u8> {
    let mut sorted: Vec<&FileChange> = changes.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = Vec::new();
    for c in sorted {
        match &c.op {
            ChangeOp::Edit => render_edit(c, &mut out),
            ChangeOp::Delete => render_delete(c, &mut out),
            ChangeOp::MoveFrom(from) => render_move(c, from, &mut out),
        }
    }
    out
}

/// The section of a deletion.
fn render_delete(c: &FileChange, out: &mut Vec<u8>) {
    let p = &c.path;
    let pre = c.pre.as_deref().unwrap_or(b"");
    out.extend_from_slice(
        format!(
            "diff --git a/{p} b/{p}\ndeleted file mode {:o}\nindex {}..{NULL_BLOB_ID}\n",
            c.mode,
            git_blob_id(pre)
        )
        .as_bytes(),
    );
    if !pre.is_empty() {
        out.extend_from_slice(format!("--- a/{p}\n+++ /dev/null\n").as_bytes());
        diff::write_hunks(pre, b"", out);
    }
}

/// The section of a move from `from`.
fn render_move(c: &FileChange, from: &str, out: &mut Vec<u8>) {
    let p = &c.path;
    let pre = c.pre.as_deref().unwrap_or(b"");
    out.extend_from_slice(
        format!(
            "diff --git a/{from} b/{p}\nrename from {from}\nrename to {p}\nindex {}..{} {:o}\n",
            git_blob_id(pre),
            git_blob_id(&c.post),
            c.mode
        )
        .as_bytes(),
    );
    if pre != c.post.as_slice() {
        out.extend_from_slice(format!("--- a/{from}\n+++ b/{p}\n").as_bytes());
        diff::write_hunks(pre, &c.post, out);
    }
}

/// The section of an edit or a new file.
fn render_edit(c: &FileChange, out: &mut Vec<u8>) {
    {
        let p = &c.path;
        let new_id = git_blob_id(&c.post);
        out.extend_from_slice(format!("diff --git a/{p} b/{p}\n").as_bytes());
        let old_name = match &c.pre {
            None => {
                out.extend_from_slice(
                    format!(
                        "new file mode {:o}\nindex {NULL_BLOB_ID}..{new_id}\n",
                        c.mode
                    )
                    .as_bytes(),
                );
                "/dev/null".to_string()
            }
            Some(pre) => {
                out.extend_from_slice(
                    format!("index {}..{new_id} {:o}\n", git_blob_id(pre), c.mode).as_bytes(),
                );
                format!("a/{p}")
            }
        };
        if c.pre.is_none() && c.post.is_empty() {
            // An empty new file: git writes no `---`/`+++` lines and no hunk for it.
            return;
        }
        out.extend_from_slice(format!("--- {old_name}\n+++ b/{p}\n").as_bytes());
        // Git's own format: an empty context line is written as a single space, never as a bare newline.
        diff::write_hunks(c.pre.as_deref().unwrap_or(b""), &c.post, out);
    }
}

/// One file's section of a canonical patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalFile {
    /// Workspace-relative path with `/` separators.
    pub path: String,
    /// The git blob id of the pre-image; `None` when the patch creates the file.
    pub old_id: Option<String>,
    /// The git blob id of the post-image.
    pub new_id: String,
    /// The file's git mode after the patch.
    pub mode: u32,
    /// The `---` line onwards: a plain unified diff of this one file (empty for an empty file created or deleted
    /// and for a move that keeps the content).
    pub body: Vec<u8>,
    /// The path a move takes the file from (`rename from`); its pre-image is that file's.
    pub from: Option<String>,
    /// The patch deletes the file (`deleted file mode`); `new_id` is then 40 zeros.
    pub deletes: bool,
}

impl CanonicalFile {
    /// Whether the patch creates the file.
    pub fn creates(&self) -> bool {
        self.old_id.is_none()
    }

    /// The path whose current bytes are the pre-image: the move's source, else the file's own path.
    pub fn source(&self) -> &str {
        self.from.as_deref().unwrap_or(&self.path)
    }
}

fn malformed(line_no: usize, why: &str) -> Error {
    Error::Patch(format!(
        "not a canonical patch from local-llm-worker (line {line_no}: {why}); pass the exact `patch` bytes that propose returned"
    ))
}

/// Parse a canonical patch into its file sections, refusing anything outside the canonical format.
pub fn parse(bytes: &[u8]) -> Result<Vec<CanonicalFile>> {
    let text = std::str::from_utf8(bytes).map_err(|_| malformed(0, "the patch is not UTF-8"))?;
    if text.is_empty() {
        return Err(malformed(0, "the patch is empty"));
    }
    if !text.ends_with('\n') {
        return Err(malformed(
            text.lines().count(),
            "the patch does not end with a newline",
        ));
    }
    let lines = lines_with_offsets(text);
    let mut files: Vec<CanonicalFile> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut i = 0;
    while i < lines.len() {
        let n = i + 1;
        let header = parse_section_header(&lines, &mut i)?;
        let section_ends = lines.get(i).is_none_or(|l| l.1.starts_with("diff --git "));
        let no_body =
            (header.created_mode.is_some() && header.new == EMPTY_BLOB_ID && section_ends)
                || (header.deleted && header.old == EMPTY_BLOB_ID)
                || (header.from.is_some() && header.old == header.new);
        let body = if no_body {
            // An empty new or deleted file, and a move that keeps the content, have no body.
            Vec::new()
        } else {
            let (from, to) = parse_section_body(&lines, &mut i, &header, text.len())?;
            bytes[from..to].to_vec()
        };
        for path in std::iter::once(&header.path).chain(&header.from) {
            if !seen.insert(path.clone()) {
                return Err(malformed(n, &format!("{path} appears twice")));
            }
        }
        files.push(CanonicalFile {
            path: header.path,
            old_id: (header.old != NULL_BLOB_ID).then(|| header.old.to_string()),
            new_id: header.new.to_string(),
            mode: header.mode,
            body,
            from: header.from,
            deletes: header.deleted,
        });
    }
    Ok(files)
}

/// Every line of `text` without its `\n`, with the byte offset it starts at.
fn lines_with_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut v = Vec::new();
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        v.push((off, l.strip_suffix('\n').unwrap_or(l)));
        off += l.len();
    }
    v
}

/// The header of one file's section: the lines before its `---` line.
struct SectionHeader<'a> {
    path: String,
    /// The source of a move (`rename from`).
    from: Option<String>,
    /// `deleted file mode`: the section deletes the file.
    deleted: bool,
    /// The mode of `new file mode`, when the section creates the file.
    created_mode: Option<u32>,
    /// The blob ids of the `index` line (the old one is 40 zeros for a new file).
    old: &'a str,
    new: &'a str,
    /// The file's mode after the patch.
    mode: u32,
}

/// The paths of the `diff --git` line at line index `*i` and, for a move, its `rename from`/`rename to` lines:
/// (path, the move's source), moving `*i` past them.
fn parse_section_paths(lines: &[(usize, &str)], i: &mut usize) -> Result<(String, Option<String>)> {
    let n = *i + 1;
    let line = lines[*i].1;
    let Some(rest) = line.strip_prefix("diff --git a/") else {
        return Err(malformed(n, "expected `diff --git a/PATH b/PATH`"));
    };
    *i += 1;
    let rename = |k: usize, p: &str| lines.get(k).and_then(|l| l.1.strip_prefix(p));
    if let (Some(from), Some(to)) = (rename(*i, "rename from "), rename(*i + 1, "rename to ")) {
        if from.is_empty()
            || to.is_empty()
            || from == to
            || line != format!("diff --git a/{from} b/{to}")
        {
            return Err(malformed(
                n,
                "the `rename from`/`rename to` lines do not fit `diff --git`",
            ));
        }
        *i += 2;
        return Ok((to.to_string(), Some(from.to_string())));
    }
    let path = rest
        .split_once(" b/")
        .filter(|(a, b)| a == b && !a.is_empty())
        .map(|(a, _)| a.to_string())
        .ok_or_else(|| malformed(n, "the two paths of `diff --git` differ or are empty"))?;
    Ok((path, None))
}

/// Parse the header of the section starting at line index `*i` (`diff --git`, `rename from`/`rename to`, `new file
/// mode` or `deleted file mode`, `index`), moving `*i` past it.
fn parse_section_header<'a>(
    lines: &[(usize, &'a str)],
    i: &mut usize,
) -> Result<SectionHeader<'a>> {
    let (path, from) = parse_section_paths(lines, i)?;
    let mut created_mode = None;
    let mut deleted_mode = None;
    let mode_line = |p: &str| lines.get(*i).and_then(|l| l.1.strip_prefix(p));
    if let Some(m) = mode_line("new file mode ") {
        created_mode =
            Some(parse_mode(m).ok_or_else(|| malformed(*i + 1, "unsupported file mode"))?);
        *i += 1;
    } else if let Some(m) = mode_line("deleted file mode ") {
        deleted_mode =
            Some(parse_mode(m).ok_or_else(|| malformed(*i + 1, "unsupported file mode"))?);
        *i += 1;
    }
    if from.is_some() && (created_mode.is_some() || deleted_mode.is_some()) {
        return Err(malformed(*i, "a move neither creates nor deletes"));
    }
    let index = lines
        .get(*i)
        .and_then(|l| l.1.strip_prefix("index "))
        .ok_or_else(|| malformed(*i + 1, "expected an `index OLD..NEW` line"))?;
    let (ids, mode_str) = match index.split_once(' ') {
        Some((ids, m)) => (ids, Some(m)),
        None => (index, None),
    };
    let (old, new) = ids
        .split_once("..")
        .ok_or_else(|| malformed(*i + 1, "bad `index` line"))?;
    if !is_blob_id(old) || !is_blob_id(new) {
        return Err(malformed(
            *i + 1,
            "`index` ids must be full 40-hex git blob ids",
        ));
    }
    let mode = match (created_mode, deleted_mode, mode_str) {
        (Some(m), None, None) if old == NULL_BLOB_ID && new != NULL_BLOB_ID => m,
        (None, Some(m), None) if old != NULL_BLOB_ID && new == NULL_BLOB_ID => m,
        (None, None, Some(m)) if old != NULL_BLOB_ID && new != NULL_BLOB_ID => {
            parse_mode(m).ok_or_else(|| malformed(*i + 1, "unsupported file mode"))?
        }
        _ => {
            return Err(malformed(
                *i + 1,
                "`index` line does not fit `new file mode` or `deleted file mode`",
            ));
        }
    };
    *i += 1;
    Ok(SectionHeader {
        path,
        from,
        deleted: deleted_mode.is_some(),
        created_mode,
        old,
        new,
        mode,
    })
}

/// Check the body of the section whose `---` line is at line index `*i` (`---`, `+++`, then hunks up to the next
/// section), moving `*i` past it; returns its byte range in the patch, whose length is `text_len`.
fn parse_section_body(
    lines: &[(usize, &str)],
    i: &mut usize,
    header: &SectionHeader<'_>,
    text_len: usize,
) -> Result<(usize, usize)> {
    let path = &header.path;
    let body_start = lines
        .get(*i)
        .map(|l| l.0)
        .ok_or_else(|| malformed(*i + 1, "missing `---` line"))?;
    let want_old = if header.created_mode.is_some() {
        "--- /dev/null".to_string()
    } else {
        format!("--- a/{}", header.from.as_deref().unwrap_or(path))
    };
    let want_new = if header.deleted {
        "+++ /dev/null".to_string()
    } else {
        format!("+++ b/{path}")
    };
    if lines.get(*i).map(|l| l.1) != Some(want_old.as_str()) {
        return Err(malformed(*i + 1, &format!("expected `{want_old}`")));
    }
    if lines.get(*i + 1).map(|l| l.1) != Some(want_new.as_str()) {
        return Err(malformed(*i + 2, &format!("expected `{want_new}`")));
    }
    *i += 2;
    if !lines.get(*i).is_some_and(|l| l.1.starts_with("@@ ")) {
        return Err(malformed(*i + 1, "expected a `@@` hunk"));
    }
    while *i < lines.len() && !lines[*i].1.starts_with("diff --git ") {
        let l = lines[*i].1;
        if !(l.starts_with("@@ ") || l.starts_with([' ', '+', '-', '\\'])) {
            return Err(malformed(*i + 1, "unexpected line inside a hunk"));
        }
        *i += 1;
    }
    let body_end = lines.get(*i).map(|l| l.0).unwrap_or(text_len);
    Ok((body_start, body_end))
}

fn parse_mode(s: &str) -> Option<u32> {
    match s {
        "100644" => Some(MODE_REGULAR),
        "100755" => Some(MODE_EXECUTABLE),
        _ => None,
    }
}

fn is_blob_id(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Apply one file's section to its current bytes (`None`: the file does not exist). Refuses when the current bytes
/// are not the pre-image the patch was made for, or the result is not the post-image it promises.
pub fn apply_file(file: &CanonicalFile, current: Option<&[u8]>) -> Result<Vec<u8>> {
    let p = &file.path;
    match (&file.old_id, current) {
        (None, Some(_)) => {
            return Err(Error::Stale(format!(
                "{p} now exists, but the patch creates it; make a new proposal against the current files"
            )));
        }
        (Some(_), None) => {
            return Err(Error::Stale(format!(
                "{p} no longer exists; make a new proposal against the current files"
            )));
        }
        (Some(old), Some(cur)) => {
            let now = git_blob_id(cur);
            if &now != old {
                return Err(Error::Stale(format!(
                    "{p} changed since the proposal (blob {} expected, {} found); make a new proposal",
                    &old[..12],
                    &now[..12]
                )));
            }
        }
        (None, None) => {}
    }
    // The post-image's blob id: a deleted file is left empty.
    let want = if file.deletes {
        EMPTY_BLOB_ID
    } else {
        file.new_id.as_str()
    };
    if file.body.is_empty() {
        // Only an empty new or deleted file and a move that keeps the content have no body (checked by `parse`).
        return match current {
            Some(cur) if file.from.is_some() && file.old_id.as_deref() == Some(want) => {
                Ok(cur.to_vec())
            }
            _ if want == EMPTY_BLOB_ID => Ok(Vec::new()),
            _ => Err(Error::Patch(format!("the section of {p} has no hunk"))),
        };
    }
    let post = apply_hunks(current.unwrap_or(b""), &file.body).map_err(|e| {
        Error::Patch(format!(
            "the hunks of {p} do not apply to its pre-image: {e}; pass the exact `patch` bytes that propose returned"
        ))
    })?;
    let got = git_blob_id(&post);
    if got != want {
        return Err(Error::Patch(format!(
            "applying the patch to {p} gives blob {} instead of the promised {}; the patch bytes were altered",
            &got[..12],
            &want[..12]
        )));
    }
    Ok(post)
}

/// Apply the hunks of one file's body (from its `---` line) to `pre`, each exactly where its header says: every
/// context and removed line must be the pre-image's line at that place, byte for byte (`\r` included), and hunks
/// must come in order without overlapping. No search, no fuzz: the canonical patch was made for exactly this
/// pre-image, whose blob id the caller has checked. One pass over the pre-image and the body, slices copied whole.
fn apply_hunks(pre: &[u8], body: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut lines = body.split_inclusive(|&b| b == b'\n').peekable();
    for prefix in [&b"--- "[..], b"+++ "] {
        if !lines.next().is_some_and(|l| l.starts_with(prefix)) {
            return Err(format!(
                "expected a `{}` line",
                String::from_utf8_lossy(prefix).trim_end()
            ));
        }
    }
    let mut out = Vec::with_capacity(pre.len() + body.len());
    // The next pre-image line to copy: its 0-based number and its byte offset.
    let (mut line_no, mut at) = (0usize, 0usize);
    // The pre-image line starting at byte `at`, with its `\n` (the last line may have none).
    let line_at = |at: usize| -> &[u8] {
        match memchr::memchr(b'\n', &pre[at..]) {
            Some(i) => &pre[at..at + i + 1],
            None => &pre[at..],
        }
    };
    while let Some(header) = lines.next() {
        let (old_start, old_len, new_len) =
            hunk_header(header).ok_or("a hunk header is not `@@ -A,B +C,D @@`")?;
        // A hunk that removes nothing and keeps no context (B = 0) goes after line A; otherwise it starts at line A.
        let start = if old_len == 0 {
            old_start
        } else {
            old_start.saturating_sub(1)
        };
        if start < line_no {
            return Err(format!(
                "the hunk at line {old_start} overlaps the previous one"
            ));
        }
        // Copy the lines up to the hunk in one piece.
        let from = at;
        for _ in line_no..start {
            if at == pre.len() {
                return Err(format!("the hunk at line {old_start} lies past the end"));
            }
            at += line_at(at).len();
        }
        out.extend_from_slice(&pre[from..at]);
        line_no = start;
        let (mut seen_old, mut seen_new) = (0usize, 0usize);
        while seen_old < old_len || seen_new < new_len {
            let line = lines
                .next()
                .ok_or_else(|| format!("the hunk at line {old_start} ends early"))?;
            let (kind, text) = line.split_first().ok_or("an empty hunk line")?;
            // `\ No newline at end of file` right after a line: that line has no `\n`.
            let content = if lines.peek().is_some_and(|n| n.starts_with(b"\\")) {
                lines.next();
                text.strip_suffix(b"\n").unwrap_or(text)
            } else {
                text
            };
            match kind {
                b' ' | b'-' => {
                    if at == pre.len() || line_at(at) != content {
                        return Err(format!(
                            "line {} is not the hunk's context or removed line",
                            line_no + 1
                        ));
                    }
                    at += content.len();
                    line_no += 1;
                    seen_old += 1;
                    if *kind == b' ' {
                        out.extend_from_slice(content);
                        seen_new += 1;
                    }
                }
                b'+' => {
                    out.extend_from_slice(content);
                    seen_new += 1;
                }
                _ => {
                    return Err(format!(
                        "the hunk at line {old_start} holds an unexpected line"
                    ));
                }
            }
            if seen_old > old_len || seen_new > new_len {
                return Err(format!(
                    "the hunk at line {old_start} does not match its line counts"
                ));
            }
        }
    }
    out.extend_from_slice(&pre[at..]);
    Ok(out)
}

/// `(A, B, D)` of a hunk header `@@ -A[,B] +C[,D] @@[ section]`; a missing count is 1.
fn hunk_header(line: &[u8]) -> Option<(usize, usize, usize)> {
    let line = std::str::from_utf8(line).ok()?;
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (_, d) = range(new)?;
    Some((a, b, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, pre: Option<&str>, post: &str) -> FileChange {
        FileChange {
            path: path.into(),
            pre: pre.map(|s| s.as_bytes().to_vec()),
            post: post.as_bytes().to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: ChangeOp::Edit,
        }
    }

    #[test]
    fn twenty_thousand_changes_render_as_twenty_thousand_hunks_that_apply() {
        // 20,000 changes, one every 10 lines of a 200,000-line file: Myers over the whole file took minutes here.
        // How long it takes is a measurement, not a test: `cargo bench --bench reader` series E (BENCHMARKS.md).
        let pre: String = (0..200_000)
            .map(|i| format!("let v{i} = f({i});\n"))
            .collect();
        let post: String = (0..200_000)
            .map(|i| match i % 10 {
                5 => format!("let v{i} = 0;\n"),
                _ => format!("let v{i} = f({i});\n"),
            })
            .collect();
        let bytes = render(&[change("big.rs", Some(&pre), &post)]);
        let files = parse(&bytes).unwrap();
        assert_eq!(
            apply_file(&files[0], Some(pre.as_bytes())).unwrap(),
            post.as_bytes()
        );
        // A hunk per change: 9 lines apart, their 3 lines of context do not touch.
        let hunks = bytes
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"@@ "))
            .count();
        assert_eq!(hunks, 20_000);
    }

    #[test]
    fn renders_git_headers_and_round_trips() {
        let changes = vec![
            change("b.txt", None, "new\n"),
            change("a.txt", Some("x\ny\n"), "x\nz\n"),
        ];
        let patch = render(&changes);
        let text = String::from_utf8(patch.clone()).unwrap();
        assert!(
            text.starts_with("diff --git a/a.txt b/a.txt\nindex "),
            "{text}"
        );
        assert!(
            text.contains("new file mode 100644\nindex 0000000000000000000000000000000000000000.."),
            "{text}"
        );
        let files = parse(&patch).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(apply_file(&files[0], Some(b"x\ny\n")).unwrap(), b"x\nz\n");
        assert_eq!(apply_file(&files[1], None).unwrap(), b"new\n");
    }

    #[test]
    fn empty_context_lines_keep_their_space() {
        let patch = render(&[change("a", Some("x\n\ny\n"), "X\n\ny\n")]);
        let text = String::from_utf8(patch.clone()).unwrap();
        assert!(text.contains("\n \n"), "{text}");
        let files = parse(&patch).unwrap();
        assert_eq!(
            apply_file(&files[0], Some(b"x\n\ny\n")).unwrap(),
            b"X\n\ny\n"
        );
    }

    #[test]
    fn an_empty_new_file_round_trips() {
        let patch = render(&[
            change("pkg/__init__.py", None, ""),
            change("a", Some("x\n"), "y\n"),
        ]);
        let files = parse(&patch).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(apply_file(&files[1], None).unwrap(), b"");
        assert!(String::from_utf8(patch).unwrap().ends_with("new file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"));
    }

    #[test]
    fn keeps_a_missing_final_newline() {
        let patch = render(&[change("a", Some("x\ny"), "x\nz")]);
        let files = parse(&patch).unwrap();
        assert_eq!(apply_file(&files[0], Some(b"x\ny")).unwrap(), b"x\nz");
    }

    #[test]
    fn refuses_a_stale_pre_image_and_an_existing_file_to_create() {
        let files = parse(&render(&[change("a", Some("x\n"), "y\n")])).unwrap();
        let err = apply_file(&files[0], Some(b"other\n")).unwrap_err();
        assert!(matches!(err, Error::Stale(_)), "{err}");
        let files = parse(&render(&[change("n", None, "y\n")])).unwrap();
        assert!(matches!(
            apply_file(&files[0], Some(b"")).unwrap_err(),
            Error::Stale(_)
        ));
    }

    #[test]
    fn refuses_altered_hunks() {
        let patch = String::from_utf8(render(&[change("a", Some("x\n"), "y\n")])).unwrap();
        let altered = patch.replace("+y", "+Y");
        let files = parse(altered.as_bytes()).unwrap();
        let err = apply_file(&files[0], Some(b"x\n")).unwrap_err();
        assert!(err.to_string().contains("altered"), "{err}");
    }

    #[test]
    fn refuses_what_is_not_canonical() {
        for bad in [
            "",
            "hello\n",
            "diff --git a/a b/b\n",
            "diff --git a/a b/a\ndeleted file mode 100644\n",
            "diff --git a/a b/a\nold mode 100644\nnew mode 100755\n",
            "diff --git a/a b/a\nindex 1234567..89abcde 100644\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n",
            "diff --git a/a b/a\nindex e69de29bb2d1d6434b8b29ae775ad8c2e48c5391..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 100644\nGIT binary patch\n",
        ] {
            assert!(
                matches!(parse(bad.as_bytes()), Err(Error::Patch(_))),
                "accepted {bad:?}"
            );
        }
    }

    /// Random pre- and post-images (lines from a small alphabet, so context repeats; CRLF, blank lines, missing
    /// final newlines, empty files), rendered and applied back: the applier must give the post-image every time.
    #[test]
    fn rendered_patches_apply_back_exactly() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        const LINES: &[&str] = &["a\n", "b\n", "\n", "c\r\n", "  d\n", "a", "e\n"];
        let make = |next: &mut dyn FnMut(u64) -> u64, len: u64| -> String {
            let mut s = String::new();
            for _ in 0..next(len) {
                let l = LINES[next(LINES.len() as u64) as usize];
                s.push_str(l.strip_suffix('\n').unwrap_or(l));
                s.push('\n');
            }
            if next(4) == 0 && s.ends_with('\n') {
                s.pop();
            }
            s
        };
        for round in 0..3000 {
            let pre = make(&mut next, 40);
            let mut post = String::new();
            for l in pre.split_inclusive('\n') {
                match next(6) {
                    0 => {}
                    1 => post.push_str(&make(&mut next, 3)),
                    _ => post.push_str(l),
                }
            }
            if next(3) == 0 {
                post.push_str(&make(&mut next, 4));
            }
            if pre == post {
                continue;
            }
            let patch = render(&[change("f", Some(&pre), &post)]);
            let files = parse(&patch).unwrap();
            let got = apply_file(&files[0], Some(pre.as_bytes())).unwrap_or_else(|e| {
                panic!("round {round}: {e}\n{}", String::from_utf8_lossy(&patch))
            });
            assert_eq!(got, post.as_bytes(), "round {round}");
        }
    }

    #[test]
    fn refuses_hunks_whose_lines_or_places_do_not_fit() {
        let pre = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let patch = String::from_utf8(render(&[change(
            "f",
            Some(pre),
            "1\n2\n3\n4\nV\n6\n7\n8\n9\n",
        )]))
        .unwrap();
        let cases = [
            ("@@ -2,7 +2,7 @@", "@@ -3,7 +3,7 @@"),
            ("@@ -2,7 +2,7 @@", "@@ -2,6 +2,7 @@"),
            ("@@ -2,7 +2,7 @@", "@@ -2,7 +2,8 @@"),
            ("@@ -2,7 +2,7 @@", "@@ -x,7 +2,7 @@"),
            ("@@ -2,7 +2,7 @@", "@@ -99,7 +99,7 @@"),
            (" 3\n", " three\n"),
        ];
        for (from, to) in cases {
            assert!(patch.contains(from), "{patch}");
            let altered = patch.replace(from, to);
            let files = parse(altered.as_bytes()).unwrap();
            let err = apply_file(&files[0], Some(pre.as_bytes())).unwrap_err();
            assert!(matches!(err, Error::Patch(_)), "{from} -> {to}: {err}");
        }
    }
}
