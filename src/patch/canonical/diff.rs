//! The line diff behind the canonical patch: the hunks of a unified diff of a pre- and a post-image, with git's 3
//! lines of context, in time linear in the files for the edits a model makes.
//!
//! Myers' algorithm (diffy's) costs time proportional to the files' length times the number of changes: 100,000
//! hunks in a file of a million lines took minutes. So the diff is cut into chunks, each diffed on its own by Myers,
//! and their hunks written one after the other with their line numbers moved. A cut lies where the two files
//! certainly agree: at a line that occurs once in the pre-image and once in the post-image (the longest run of such
//! lines in the same order in both, as patience diff finds them), inside 8 lines equal on both sides, so no hunk's
//! context crosses it and no two hunks on either side would have been merged. A chunk holds at least 32 changes
//! before it is cut: an edit of fewer changes (almost every edit) is one chunk, diffed whole exactly as before, and
//! a chunk's Myers cost stays bounded by its length times about 64, so the whole is linear.
//!
//! What it is not: the patch's headers and its strict parse are [`super`]'s. A pair of files that share no line
//! that is unique in both (a file of identical lines) cannot be cut and is diffed whole, as before.

use std::hash::BuildHasher;

/// Equal lines on each side of a cut: more than the 3 lines of context, so hunks on either side stay apart.
const CUT_MARGIN: usize = 4;
/// The changes (runs of lines between two unique lines that differ) a chunk holds before it may be cut.
const CHANGES_PER_CHUNK: usize = 32;
/// What diffy writes after a last line without a line ending.
const NO_NEWLINE_AT_EOF: &[u8] = b"\\ No newline at end of file\n";

/// Write the hunks of the unified diff of `pre` and `post` (3 lines of context, git's format) into `out`.
pub(super) fn write_hunks(pre: &[u8], post: &[u8], out: &mut Vec<u8>) {
    let (old, new) = (lines(pre), lines(post));
    let byte_at = |text: &[u8], lines: &[&[u8]], k: usize| match lines.get(k) {
        Some(l) => l.as_ptr() as usize - text.as_ptr() as usize,
        None => text.len(),
    };
    let mut from = (0, 0);
    for to in cuts(&old, &new).into_iter().chain([(old.len(), new.len())]) {
        let a = &pre[byte_at(pre, &old, from.0)..byte_at(pre, &old, to.0)];
        let b = &post[byte_at(post, &new, from.1)..byte_at(post, &new, to.1)];
        write_chunk(a, b, from, out);
        from = to;
    }
}

/// The lines of `text`, each with its `\n` (the last may have none), as diffy splits them.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

/// Where the diff of `old` and `new` is cut into chunks: (old line, new line) pairs, increasing in both, each the
/// first line of a chunk.
fn cuts(old: &[&[u8]], new: &[&[u8]]) -> Vec<(usize, usize)> {
    let (n, m) = (old.len(), new.len());
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let anchors = unique_in_order(&old[prefix..n - suffix], &new[prefix..m - suffix]);
    let mut cuts = Vec::new();
    let mut last = (0, 0);
    // The lines after the previous anchor, and the changes since the last cut.
    let mut after = (prefix, prefix);
    let mut changes = 0;
    for (i, j) in anchors.into_iter().map(|(i, j)| (i + prefix, j + prefix)) {
        if old[after.0..i] != new[after.1..j] {
            changes += 1;
        }
        after = (i + 1, j + 1);
        if changes >= CHANGES_PER_CHUNK
            && i >= last.0 + 2 * CUT_MARGIN
            && j >= last.1 + 2 * CUT_MARGIN
            && i + CUT_MARGIN <= n
            && j + CUT_MARGIN <= m
            && old[i - CUT_MARGIN..i + CUT_MARGIN] == new[j - CUT_MARGIN..j + CUT_MARGIN]
        {
            cuts.push((i, j));
            last = (i, j);
            changes = 0;
        }
    }
    cuts
}

/// The lines that occur exactly once in `old` and once in `new`, as (old index, new index) pairs: the longest
/// sequence of them that is in the same order in both (patience sorting, O(k log k)).
///
/// The lines are grouped by sorting their hashes (keyed per process, so no input can aim at collisions) rather than
/// through a hash map: a million lines then cost sequential passes instead of a million cache misses. Two different
/// lines with one hash only make a group that is not counted as unique: a cut is then missed, never misplaced.
fn unique_in_order(old: &[&[u8]], new: &[&[u8]]) -> Vec<(usize, usize)> {
    let keyed = std::hash::RandomState::new();
    // (hash, 2 * index for a line of `old`, 2 * index + 1 for a line of `new`)
    let mut lines: Vec<(u64, usize)> = Vec::with_capacity(old.len() + new.len());
    lines.extend(
        old.iter()
            .enumerate()
            .map(|(i, l)| (keyed.hash_one(l), 2 * i)),
    );
    lines.extend(
        new.iter()
            .enumerate()
            .map(|(j, l)| (keyed.hash_one(l), 2 * j + 1)),
    );
    lines.sort_unstable();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    while k < lines.len() {
        let group = lines[k..].iter().take_while(|l| l.0 == lines[k].0).count();
        if let [(_, x), (_, y)] = lines[k..k + group]
            && x % 2 != y % 2
        {
            let (a, b) = if x % 2 == 0 {
                (x / 2, y / 2)
            } else {
                (y / 2, x / 2)
            };
            if old[a] == new[b] {
                pairs.push((a, b));
            }
        }
        k += group;
    }
    pairs.sort_unstable();
    // tails[l]: the pair (by index) with the smallest new index that ends an increasing run of l + 1 pairs.
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; pairs.len()];
    for (k, &(_, j)) in pairs.iter().enumerate() {
        // Most pairs extend the longest run (unique lines in the same order in both): no search for those.
        let l = match tails.last() {
            Some(&t) if pairs[t].1 < j => tails.len(),
            _ => tails.partition_point(|&t| pairs[t].1 < j),
        };
        before[k] = l.checked_sub(1).map(|p| tails[p]);
        match tails.get_mut(l) {
            Some(t) => *t = k,
            None => tails.push(k),
        }
    }
    let mut run = Vec::with_capacity(tails.len());
    let mut k = tails.last().copied();
    while let Some(x) = k {
        run.push(pairs[x]);
        k = before[x];
    }
    run.reverse();
    run
}

/// Write the hunks of the diff of one chunk, `a` (old) and `b` (new), which start at line indexes `at` of the
/// files, with their line numbers moved there.
fn write_chunk(a: &[u8], b: &[u8], at: (usize, usize), out: &mut Vec<u8>) {
    let patch = diffy::DiffOptions::new().create_patch_bytes(a, b);
    for hunk in patch.hunks() {
        out.extend_from_slice(b"@@ -");
        write_range(hunk.old_range(), at.0, out);
        out.extend_from_slice(b" +");
        write_range(hunk.new_range(), at.1, out);
        out.extend_from_slice(b" @@\n");
        for line in hunk.lines() {
            let (sign, text) = match line {
                diffy::Line::Context(t) => (b' ', *t),
                diffy::Line::Delete(t) => (b'-', *t),
                diffy::Line::Insert(t) => (b'+', *t),
            };
            out.push(sign);
            out.extend_from_slice(text);
            if !text.ends_with(b"\n") {
                out.push(b'\n');
                out.extend_from_slice(NO_NEWLINE_AT_EOF);
            }
        }
    }
}

/// A hunk range as git writes it (`START` when it is one line long, else `START,LEN`), `offset` lines further.
fn write_range(range: diffy::HunkRange, offset: usize, out: &mut Vec<u8>) {
    out.extend_from_slice((range.start() + offset).to_string().as_bytes());
    if range.len() != 1 {
        out.extend_from_slice(format!(",{}", range.len()).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// diffy's own patch of `pre` and `post`, hunks only: what `write_hunks` must give for a single chunk.
    fn diffy_hunks(pre: &[u8], post: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        diffy::PatchFormatter::new()
            .suppress_blank_empty(false)
            .write_patch_into(
                &diffy::DiffOptions::new().create_patch_bytes(pre, post),
                &mut out,
            )
            .unwrap();
        out
    }

    fn ours(pre: &[u8], post: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_hunks(pre, post, &mut out);
        out
    }

    /// A small random generator (xorshift), so every run tests the same cases.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// `lines` lines, mostly unique, with some repeated ones (blank lines, braces), and a random edit of it with
    /// `edits` changes (replacements, insertions, deletions), and maybe no final newline.
    fn case(rng: &mut Rng, lines: usize, edits: usize) -> (Vec<u8>, Vec<u8>) {
        let pre: Vec<String> = (0..lines)
            .map(|i| match rng.below(6) {
                0 => "\n".to_string(),
                1 => "}\n".to_string(),
                _ => format!("line {i}\n"),
            })
            .collect();
        let mut post = pre.clone();
        for e in 0..edits {
            let at = rng.below(post.len() + 1);
            match rng.below(3) {
                0 if at < post.len() => post[at] = format!("changed {e}\n"),
                1 if at < post.len() => {
                    post.remove(at);
                }
                _ => post.insert(at, format!("added {e}\n")),
            }
        }
        let (mut pre, mut post) = (pre.concat().into_bytes(), post.concat().into_bytes());
        if rng.below(4) == 0 {
            pre.pop();
        }
        if rng.below(4) == 0 {
            post.pop();
        }
        (pre, post)
    }

    #[test]
    fn a_single_chunk_is_written_as_diffy_writes_it() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let lines = rng.below(60);
            let edits = rng.below(12);
            let (pre, post) = case(&mut rng, lines, edits);
            let want = diffy_hunks(&pre, &post);
            // diffy writes `--- original` / `+++ modified` first.
            let want = want.splitn(3, |&b| b == b'\n').nth(2).unwrap_or_default();
            assert_eq!(
                String::from_utf8_lossy(&ours(&pre, &post)),
                String::from_utf8_lossy(want)
            );
        }
        assert_eq!(ours(b"a\n", b"a\n"), b"");
        assert_eq!(
            ours(b"", b"x"),
            b"@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn a_cost_that_grows_faster_than_its_input_is_cut_into_chunks_that_apply() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..40 {
            let lines = 2_000 + rng.below(3_000);
            let edits = if round % 2 == 0 {
                200
            } else {
                40 + rng.below(100)
            };
            let (pre, post) = case(&mut rng, lines, edits);
            let (old, new) = (lines_of(&pre), lines_of(&post));
            let cuts = cuts(&old, &new);
            assert!(
                !cuts.is_empty(),
                "round {round}: {edits} changes in {lines} lines make chunks"
            );
            let patch = ours(&pre, &post);
            // The hunks apply with the strict applier and give the post-image; they come in order, apart.
            let mut body = b"--- a/f\n+++ b/f\n".to_vec();
            body.extend_from_slice(&patch);
            assert_eq!(
                super::super::apply_hunks(&pre, &body).unwrap(),
                post,
                "round {round}"
            );
            // As small as Myers' own diff of the whole files, or nearly (the cuts only fall in equal lines).
            let count = |p: &[u8]| {
                p.split(|&b| b == b'\n')
                    .filter(|l| l.starts_with(b"+") || l.starts_with(b"-"))
                    .count()
            };
            let whole = diffy_hunks(&pre, &post);
            assert!(
                count(&patch) <= count(&whole) + count(&whole) / 10,
                "round {round}"
            );
        }
    }

    fn lines_of(t: &[u8]) -> Vec<&[u8]> {
        lines(t)
    }

    #[test]
    fn cuts_need_unique_lines_in_order_and_equal_lines_around_them() {
        let text = |v: &[String]| v.concat().into_bytes();
        // 100 changes, every 10th line of 1,000 unique ones.
        let pre: Vec<String> = (0..1000).map(|i| format!("l{i}\n")).collect();
        let mut post = pre.clone();
        for k in 0..100 {
            post[k * 10 + 5] = format!("c{k}\n");
        }
        let (a, b) = (text(&pre), text(&post));
        let (old, new) = (lines(&a), lines(&b));
        let c = cuts(&old, &new);
        assert_eq!(c.len(), 3, "{c:?}");
        for &(i, j) in &c {
            assert_eq!(i, j);
            assert_eq!(
                old[i - CUT_MARGIN..i + CUT_MARGIN],
                new[j - CUT_MARGIN..j + CUT_MARGIN]
            );
        }
        // Fewer changes than a chunk holds: one chunk, diffed whole.
        let mut few = pre.clone();
        for k in 0..CHANGES_PER_CHUNK - 1 {
            few[k * 10 + 5] = format!("c{k}\n");
        }
        let few = text(&few);
        assert!(cuts(&old, &lines(&few)).is_empty());
        // Identical lines only: nothing to cut at.
        let same = "x\n".repeat(1000);
        let other = "x\ny\n".repeat(500);
        assert!(cuts(&lines(same.as_bytes()), &lines(other.as_bytes())).is_empty());
        // Unique lines out of order (a moved block) are left out of the anchors.
        let order = unique_in_order(
            &[b"a\n", b"b\n", b"c\n", b"d\n"],
            &[b"c\n", b"a\n", b"b\n", b"d\n"],
        );
        assert_eq!(order, [(0, 1), (1, 2), (3, 3)]);
    }
}
