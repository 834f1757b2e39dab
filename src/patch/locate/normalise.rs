//! What a line looks like to each matching tier: the tiers, strictest first, with the normalisation each compares
//! lines by, and the folding of Unicode punctuation to ASCII that the loosest tier uses.
//!
//! The folding serves twice: to compare (an old side the model wrote with curly quotes matches the file's straight
//! ones), and to write the added lines of a hunk matched at that tier, where the characters the file itself never
//! uses are folded too ([`fold_foreign`]).
//!
//! What it is not: it does not search for a hunk nor decide which tier places it ([`super::search`]), and it does not
//! change indentation ([`super::reindent`]).

use std::borrow::Cow;

use crate::patch::MatchTier;

/// How a tier normalises a line before comparing.
pub(super) type Normalise = fn(&str) -> Cow<'_, str>;

/// The matching tiers, strictest first, with the comparison each uses.
pub(super) const TIERS: [(MatchTier, Normalise); 4] = [
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

/// `s` with every [`FOLDS`] character replaced by its ASCII form.
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
pub(super) struct FileFolds<'a> {
    text: &'a str,
    uses: [Option<bool>; FOLDS.len()],
}

impl<'a> FileFolds<'a> {
    /// Nothing looked up yet in `text` (the whole file).
    pub(super) fn new(text: &'a str) -> FileFolds<'a> {
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
pub(super) fn fold_foreign(line: &str, file: &mut FileFolds<'_>) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match FOLDS.iter().position(|(u, _)| *u == c) {
            Some(i) if !file.uses(i) => out.push_str(FOLDS[i].1),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::Hunk;
    use crate::patch::HunkLine::{Add, Remove as R};
    use crate::patch::locate::locate_file;
    use crate::patch::locate::tests::{edit, pre};

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
            anchor: Default::default(),
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
}
