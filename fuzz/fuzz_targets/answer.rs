//! The reader and locator on arbitrary model answers, with a correctness oracle.
//!
//! Input layout: byte 0 is a control byte, the rest is `FILES 0xFF ANSWER` (both read as lossy UTF-8; without a
//! 0xFF byte the whole rest is the answer and the first file is empty). `FILES` is `FIRST [0xFE SECOND]`.
//! Control bits: 0-1 the answer format (udiff, search_replace, whole_file, json); 2 a second file is selected;
//! 3 that second file does not exist yet (only its path is selected); 4 the first file is executable.
//!
//! On success the located changes must be well formed, keep each file's BOM and final newline, and their
//! canonical patch must parse and re-apply to the pre-images giving exactly the post-images.

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use local_llm_delegator::patch::reader::AnswerFormat;
use local_llm_delegator::patch::{self, MODE_EXECUTABLE, MODE_REGULAR, PreImage, canonical};

/// The selected paths; scenario answers are rewritten to name these when the corpus is seeded.
const FIRST: &str = "src/app/main.py";
const SECOND: &str = "lib/util.txt";

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let format = match control & 3 {
        0 => AnswerFormat::Udiff,
        1 => AnswerFormat::SearchReplace,
        2 => AnswerFormat::WholeFile,
        _ => AnswerFormat::Json,
    };
    let (files, answer) = match rest.iter().position(|&b| b == 0xFF) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (&[][..], rest),
    };
    let (first, second) = match files.iter().position(|&b| b == 0xFE) {
        Some(i) => (&files[..i], &files[i + 1..]),
        None => (files, &[][..]),
    };
    let answer = String::from_utf8_lossy(answer);

    let mut pre: BTreeMap<String, Option<PreImage>> = BTreeMap::new();
    pre.insert(
        FIRST.to_string(),
        Some(PreImage {
            text: String::from_utf8_lossy(first).into_owned(),
            mode: if control & 16 != 0 {
                MODE_EXECUTABLE
            } else {
                MODE_REGULAR
            },
        }),
    );
    if control & 4 != 0 {
        let second = (control & 8 == 0).then(|| PreImage {
            text: String::from_utf8_lossy(second).into_owned(),
            mode: MODE_REGULAR,
        });
        pre.insert(SECOND.to_string(), second);
    }

    let Ok(changes) = patch::changes_from_answer(&answer, format, &pre) else {
        return;
    };
    check(&changes, &pre);
});

/// The oracle: what every accepted answer must satisfy.
fn check(changes: &[patch::FileChange], pre: &BTreeMap<String, Option<PreImage>>) {
    assert!(!changes.is_empty(), "success with no change");
    let mut last: Option<&str> = None;
    for c in changes {
        assert!(
            last.is_none_or(|l| l < c.path.as_str()),
            "changes not sorted by path or repeated: {:?}",
            c.path
        );
        last = Some(&c.path);
        let Some(before) = pre.get(&c.path) else {
            panic!("{} changed but was not selected", c.path);
        };
        let before_bytes = before.as_ref().map(|p| p.text.as_bytes().to_vec());
        assert_eq!(c.pre, before_bytes, "{}: pre-image is not the file", c.path);
        assert_ne!(
            c.pre.as_deref(),
            Some(c.post.as_slice()),
            "{}: reported as changed but identical",
            c.path
        );
        assert_eq!(
            c.mode,
            before.as_ref().map_or(MODE_REGULAR, |p| p.mode),
            "{}: mode changed",
            c.path
        );
        if let Some(old) = &c.pre {
            // A file's BOM and final newline survive any edit. (The reverse is not asserted: a model may write a
            // U+FEFF at the very start, or end the file with an empty last line, which reads as a newline.)
            let bom = "\u{feff}".as_bytes();
            if old.starts_with(bom) {
                assert!(c.post.starts_with(bom), "{}: BOM lost", c.path);
            }
            let body_old = old.strip_prefix(bom).unwrap_or(old);
            let body_new = c.post.strip_prefix(bom).unwrap_or(&c.post);
            if body_old.ends_with(b"\n") && !body_new.is_empty() {
                assert!(body_new.ends_with(b"\n"), "{}: final newline lost", c.path);
            }
        }
    }

    // The canonical patch reproduces exactly the post-images from the pre-images.
    let bytes = canonical::render(changes);
    let parsed = canonical::parse(&bytes).unwrap_or_else(|e| {
        panic!(
            "the canonical patch does not parse: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(
        parsed.len(),
        changes.len(),
        "files lost in the canonical patch"
    );
    for (f, c) in parsed.iter().zip(changes) {
        assert_eq!(f.path, c.path);
        assert_eq!(f.creates(), c.pre.is_none(), "{}: creation state", c.path);
        assert_eq!(f.mode, c.mode, "{}: mode in the patch", c.path);
        let post = canonical::apply_file(f, c.pre.as_deref()).unwrap_or_else(|e| {
            panic!(
                "the canonical patch does not re-apply: {e}\n{}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(
            post, c.post,
            "{}: re-applying the canonical patch gives other bytes",
            c.path
        );
    }
}
