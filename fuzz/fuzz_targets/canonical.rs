//! The strict canonical-patch parser and applier on arbitrary bytes.
//!
//! Input layout: `CURRENT 0xFF PATCH` (without a 0xFF byte, everything is the patch and the file does not exist).
//! Any patch that parses must either be refused by `apply_file` or give bytes whose blob id it promised. Independently,
//! `CURRENT` -> `PATCH` taken as a pair of file contents must round-trip through render, parse and apply.

#![no_main]

use libfuzzer_sys::fuzz_target;
use local_llm_delegator::digest::git_blob_id;
use local_llm_delegator::patch::{FileChange, MODE_REGULAR, canonical};

fuzz_target!(|data: &[u8]| {
    let (current, patch) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (Some(&data[..i]), &data[i + 1..]),
        None => (None, data),
    };

    // 1. Arbitrary bytes as a patch: never a panic; an applied file is the promised one.
    if let Ok(files) = canonical::parse(patch) {
        for f in &files {
            let cur = if f.creates() { None } else { current };
            if let Ok(post) = canonical::apply_file(f, cur) {
                assert_eq!(git_blob_id(&post), f.new_id, "{}: promised blob id", f.path);
            }
            // The same with the pre-image id made to match, so that the hunks themselves are applied to CURRENT
            // (random bytes never match a SHA-1): never a panic, and still only the promised bytes.
            if let Some(cur) = current.filter(|_| !f.creates()) {
                let mut forced = f.clone();
                forced.old_id = Some(git_blob_id(cur));
                if let Ok(post) = canonical::apply_file(&forced, Some(cur)) {
                    assert_eq!(git_blob_id(&post), f.new_id, "{}: promised blob id", f.path);
                }
            }
        }
    }

    // 2. The pair (CURRENT, PATCH) as the pre- and post-image of one file: render, parse, apply round-trips.
    // (Left out: no change at all.)
    let post = patch;
    if current == Some(post) {
        return;
    }
    if std::str::from_utf8(post).is_err()
        || current.is_some_and(|c| std::str::from_utf8(c).is_err())
    {
        return;
    }
    let change = FileChange {
        path: "dir/file.txt".into(),
        pre: current.map(<[u8]>::to_vec),
        post: post.to_vec(),
        mode: MODE_REGULAR,
        hunks: Vec::new(),
        op: Default::default(),
    };
    let bytes = canonical::render(std::slice::from_ref(&change));
    let files = canonical::parse(&bytes).unwrap_or_else(|e| {
        panic!(
            "a rendered patch does not parse: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(files.len(), 1);
    let got = canonical::apply_file(&files[0], current).unwrap_or_else(|e| {
        panic!(
            "a rendered patch does not apply: {e}\n{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    assert_eq!(got, post, "the rendered patch gives other bytes");
});
