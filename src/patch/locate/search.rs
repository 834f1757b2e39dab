//! Finding where a hunk's old side occurs in its file: the one place it matches at the strictest tier that finds it
//! ([`find_unique`]), and the searches behind it.
//!
//! Searching costs each hunk at most time linear in the file and the hunk, whatever their content, and usually
//! much less. A tier's view of the file's lines is made once per file, when a hunk first reaches that tier, and
//! shared by the file's later hunks ([`Haystack`]). The first hunk to reach a tier scans those lines with
//! Knuth-Morris-Pratt ([`find_all`]); the next one turns the view (once) into integer ids, equal lines sharing an
//! id, for the lines that the old sides of the file's hunks hold (the other lines of the file can match none of
//! them), with the positions of each id ([`LineIndex`]). Through these every later hunk checks only the places where
//! its rarest line occurs (or runs Knuth-Morris-Pratt over the ids when even that line is frequent). Every match is
//! found either way, so the refusals and tie-breaks do not depend on the search.
//!
//! What it is not: what a tier counts as equal lies in [`super::normalise`], and what a narrowed file allows in
//! [`super::within`]; nothing here builds a post-image.

use std::borrow::Cow;
use std::collections::HashMap;

use super::normalise::TIERS;
use super::within::Within;
use crate::error::{Error, Result, excerpt};
use crate::patch::{Hunk, MatchTier};

/// Find the one place the old side of hunk `n` matches in the file: (start, tier, whether the line-number hint broke
/// a tie).
///
/// With `within`, only places whose old side lies inside one shown block count; when only places elsewhere match,
/// the refusal names the first line the hunk would change there.
pub(super) fn find_unique(
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
            let (inside, outside): (Vec<usize>, Vec<usize>) =
                matches.into_iter().partition(|&m| w.shows(m, k));
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
                if let Some(one) = anchored(many, hunk, haystack.keys, needle.len()) {
                    return Ok((one, tier, false));
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
        return Err(w.refuse_elsewhere(hunk, n, at, needle.len(), haystack.keys.len(), path));
    }
    Err(Error::ModelAnswer(format!(
        "hunk {} of {path} does not match the file (even ignoring whitespace and Unicode punctuation): these lines \
         were not found together: {:?}",
        n + 1,
        excerpt(&needle.join("\n"), 400)
    )))
}

/// The one of `many` (places of an old side of `len` lines in the file `keys`) that the hunk's [`Anchor`] names:
/// inside the block of its scope lines (each one inside the block of the one before) and, with `*** End of File`,
/// ending at the file's last line; `None` when the hunk has no anchor or it leaves more or fewer than one place.
///
/// A scope line matches a file line that, trimmed, starts with it trimmed (`@@ class A` matches `class A(B):`); its
/// block runs from the next line to the first non-blank line indented no deeper than it (a closing brace, the next
/// definition). Every line matching a scope opens a block: a scope line that occurs twice leaves both blocks.
///
/// [`Anchor`]: crate::patch::Anchor
fn anchored(many: &[usize], hunk: &Hunk, keys: &[&str], len: usize) -> Option<usize> {
    let anchor = &hunk.anchor;
    if anchor.scope.is_empty() && !anchor.end_of_file {
        return None;
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut blocks = vec![(0usize, keys.len())];
    for scope in &anchor.scope {
        let s = scope.trim();
        let mut inner = Vec::new();
        for &(from, to) in &blocks {
            for j in (from..to).filter(|&j| keys[j].trim().starts_with(s)) {
                let end = (j + 1..keys.len())
                    .find(|&k| !keys[k].trim().is_empty() && indent(keys[k]) <= indent(keys[j]))
                    .unwrap_or(keys.len())
                    .min(to);
                inner.push((j + 1, end));
            }
        }
        blocks = inner;
    }
    let at: Vec<usize> = many
        .iter()
        .copied()
        .filter(|&m| blocks.iter().any(|&(from, to)| from <= m && m + len <= to))
        .filter(|&m| !anchor.end_of_file || m + len == keys.len())
        .collect();
    match at.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The lines of one file as the tiers see them, shared by all the hunks of the file. A tier's view is made when a
/// hunk first reaches the tier, so a tier no hunk reaches costs nothing.
pub(super) struct Haystack<'a> {
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
    /// The file's lines (`keys`, without terminators) for the hunks whose old sides are `needles`; no view made yet.
    pub(super) fn new(keys: &'a [&'a str], needles: &'a [Vec<&'a str>]) -> Haystack<'a> {
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
        let mut ids: HashMap<&str, usize> =
            HashMap::with_capacity(needles.iter().map(Vec::len).sum());
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

    /// The line indexes of id `id` in the file, increasing.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::HunkLine::{Add, Context as C, Remove as R};
    use crate::patch::locate::locate_file;
    use crate::patch::locate::tests::{edit, pre};

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
    fn refuses_a_hunk_that_is_not_in_the_file() {
        let e = edit("a", vec![R("nope".into()), Add("y".into())]);
        let err = locate_file(&e, Some(&pre("x\n"))).unwrap_err();
        assert!(err.to_string().contains("does not match the file"), "{err}");
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
                anchor: Default::default(),
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
            anchor: Default::default(),
            lines: vec![C("\tx();".into()), Add("\ty();".into())],
        });
        let err = locate_file(&e, Some(&pre(&file))).unwrap_err();
        assert!(
            err.to_string()
                .contains("hunk 31 of a matches 300 places (lines 2, 4, 6, 8, 10, ...)"),
            "{err}"
        );
    }
}
