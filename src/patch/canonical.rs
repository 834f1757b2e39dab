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
//! The blob ids are git's: they pin the exact pre-image a patch may be applied to and the exact post-image it must
//! produce. Parsing is strict: anything else (renames, deletions, mode changes, binary patches) is refused.

use super::{FileChange, MODE_EXECUTABLE, MODE_REGULAR};
use crate::digest::{NULL_BLOB_ID, git_blob_id};

/// The git blob id of empty content.
const EMPTY_BLOB_ID: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
use crate::error::{Error, Result};

/// Render the canonical patch for `changes`. Files are sorted by path, so the same change always has the same bytes.
pub fn render(changes: &[FileChange]) -> Vec<u8> {
    let mut sorted: Vec<&FileChange> = changes.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut out = Vec::new();
    for c in sorted {
        let p = &c.path;
        let new_id = git_blob_id(&c.post);
        out.extend_from_slice(format!("diff --git a/{p} b/{p}\n").as_bytes());
        let mut opts = diffy::DiffOptions::new();
        match &c.pre {
            None => {
                out.extend_from_slice(
                    format!(
                        "new file mode {:o}\nindex {NULL_BLOB_ID}..{new_id}\n",
                        c.mode
                    )
                    .as_bytes(),
                );
                opts.set_original_filename("/dev/null");
            }
            Some(pre) => {
                out.extend_from_slice(
                    format!("index {}..{new_id} {:o}\n", git_blob_id(pre), c.mode).as_bytes(),
                );
                opts.set_original_filename(format!("a/{p}"));
            }
        }
        if c.pre.is_none() && c.post.is_empty() {
            // An empty new file: git writes no `---`/`+++` lines and no hunk for it.
            continue;
        }
        opts.set_modified_filename(format!("b/{p}"));
        let pre: &[u8] = c.pre.as_deref().unwrap_or(b"");
        // Git's own format: an empty context line is written as a single space, never as a bare newline.
        diffy::PatchFormatter::new()
            .suppress_blank_empty(false)
            .write_patch_into(&opts.create_patch_bytes(pre, &c.post), &mut out)
            .expect("writing to a Vec cannot fail");
    }
    out
}

/// One file's section of a canonical patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalFile {
    pub path: String,
    /// `None` when the patch creates the file.
    pub old_id: Option<String>,
    pub new_id: String,
    pub mode: u32,
    /// The `---` line onwards: a plain unified diff of this one file.
    pub body: Vec<u8>,
}

impl CanonicalFile {
    pub fn creates(&self) -> bool {
        self.old_id.is_none()
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
    // Byte offsets of every line start.
    let lines: Vec<(usize, &str)> = {
        let mut v = Vec::new();
        let mut off = 0;
        for l in text.split_inclusive('\n') {
            v.push((off, l.strip_suffix('\n').unwrap_or(l)));
            off += l.len();
        }
        v
    };
    let mut files: Vec<CanonicalFile> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let n = i + 1;
        let line = lines[i].1;
        let Some(rest) = line.strip_prefix("diff --git a/") else {
            return Err(malformed(n, "expected `diff --git a/PATH b/PATH`"));
        };
        let path = rest
            .split_once(" b/")
            .filter(|(a, b)| a == b && !a.is_empty())
            .map(|(a, _)| a.to_string())
            .ok_or_else(|| malformed(n, "the two paths of `diff --git` differ or are empty"))?;
        i += 1;
        let mut created_mode = None;
        if let Some(m) = lines
            .get(i)
            .and_then(|l| l.1.strip_prefix("new file mode "))
        {
            created_mode =
                Some(parse_mode(m).ok_or_else(|| malformed(i + 1, "unsupported file mode"))?);
            i += 1;
        }
        let index = lines
            .get(i)
            .and_then(|l| l.1.strip_prefix("index "))
            .ok_or_else(|| malformed(i + 1, "expected an `index OLD..NEW` line"))?;
        let (ids, mode_str) = match index.split_once(' ') {
            Some((ids, m)) => (ids, Some(m)),
            None => (index, None),
        };
        let (old, new) = ids
            .split_once("..")
            .ok_or_else(|| malformed(i + 1, "bad `index` line"))?;
        if !is_blob_id(old) || !is_blob_id(new) {
            return Err(malformed(
                i + 1,
                "`index` ids must be full 40-hex git blob ids",
            ));
        }
        let mode = match (created_mode, mode_str) {
            (Some(m), None) if old == NULL_BLOB_ID => m,
            (None, Some(m)) if old != NULL_BLOB_ID => {
                parse_mode(m).ok_or_else(|| malformed(i + 1, "unsupported file mode"))?
            }
            _ => {
                return Err(malformed(
                    i + 1,
                    "`index` line does not fit `new file mode`",
                ));
            }
        };
        i += 1;
        if created_mode.is_some()
            && new == EMPTY_BLOB_ID
            && lines.get(i).is_none_or(|l| l.1.starts_with("diff --git "))
        {
            // An empty new file has no body.
            if files.iter().any(|f| f.path == path) {
                return Err(malformed(n, &format!("{path} appears twice")));
            }
            files.push(CanonicalFile {
                path,
                old_id: None,
                new_id: new.to_string(),
                mode,
                body: Vec::new(),
            });
            continue;
        }
        let body_start = lines
            .get(i)
            .map(|l| l.0)
            .ok_or_else(|| malformed(i + 1, "missing `---` line"))?;
        let want_old = if created_mode.is_some() {
            "--- /dev/null".to_string()
        } else {
            format!("--- a/{path}")
        };
        if lines.get(i).map(|l| l.1) != Some(want_old.as_str()) {
            return Err(malformed(i + 1, &format!("expected `{want_old}`")));
        }
        if lines.get(i + 1).map(|l| l.1) != Some(format!("+++ b/{path}").as_str()) {
            return Err(malformed(i + 2, &format!("expected `+++ b/{path}`")));
        }
        i += 2;
        if !lines.get(i).is_some_and(|l| l.1.starts_with("@@ ")) {
            return Err(malformed(i + 1, "expected a `@@` hunk"));
        }
        while i < lines.len() && !lines[i].1.starts_with("diff --git ") {
            let l = lines[i].1;
            if !(l.starts_with("@@ ") || l.starts_with([' ', '+', '-', '\\'])) {
                return Err(malformed(i + 1, "unexpected line inside a hunk"));
            }
            i += 1;
        }
        let body_end = lines.get(i).map(|l| l.0).unwrap_or(text.len());
        if files.iter().any(|f| f.path == path) {
            return Err(malformed(n, &format!("{path} appears twice")));
        }
        files.push(CanonicalFile {
            path,
            old_id: (old != NULL_BLOB_ID).then(|| old.to_string()),
            new_id: new.to_string(),
            mode,
            body: bytes[body_start..body_end].to_vec(),
        });
    }
    Ok(files)
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
    if file.body.is_empty() {
        // Only an empty new file has no body (checked by `parse`).
        return if file.new_id == EMPTY_BLOB_ID {
            Ok(Vec::new())
        } else {
            Err(Error::Patch(format!("the section of {p} has no hunk")))
        };
    }
    let patch = diffy::Patch::from_bytes(&file.body)
        .map_err(|e| Error::Patch(format!("the hunks of {p} cannot be parsed: {e}")))?;
    let post = diffy::apply_bytes(current.unwrap_or(b""), &patch).map_err(|e| {
        Error::Patch(format!(
            "the hunks of {p} do not apply to its pre-image: {e}"
        ))
    })?;
    let got = git_blob_id(&post);
    if got != file.new_id {
        return Err(Error::Patch(format!(
            "applying the patch to {p} gives blob {} instead of the promised {}; the patch bytes were altered",
            &got[..12],
            &file.new_id[..12]
        )));
    }
    Ok(post)
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
        }
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
}
