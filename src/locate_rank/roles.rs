//! What a task says of each definition it names: the one it reports going wrong, others it reports, and those it
//! only says work. A bug report names the function that misbehaves first ("parse_stock loses quantities") and often
//! lists others that are fine ("load, by_position and find work"); a definition named only to say it works is an
//! unlikely place for the slip. Pure.
//!
//! The task is cut into clauses at sentence ends, `;`, and the words that set a contrast against what went before
//! ("although", "though", "whereas"). A clause says something works when, outside quoted text, it has a word of
//! working ("works", "fine", "correctly", "is right") and nothing that takes it back or narrows it: a word of failing
//! ("not", "wrong", "instead", "only", "but"), or a condition after the word of working ("works for small lists").

/// What a definition the task names only in clauses saying it works adds to its lines (nothing: as if unnamed).
pub const WORKS_WEIGHT: f64 = 0.0;

/// What a definition the task reports, other than the first it reports, adds to its lines.
pub const OTHER_WEIGHT: f64 = 0.75;

/// Words that say something works, alone.
const WORKING: &[&str] = &[
    "work",
    "works",
    "worked",
    "working",
    "fine",
    "correct",
    "correctly",
    "unaffected",
];

/// Words after which "right" says something works ("is right", "look right", "comes out right").
const BEFORE_RIGHT: &[&str] = &[
    "is", "are", "looks", "look", "seems", "seem", "out", "still",
];

/// Words that take back or narrow a clause's working ("works only for", "fine, but", "works when").
const NOT_WORKING: &[&str] = &[
    "not",
    "no",
    "never",
    "nothing",
    "doesn",
    "don",
    "isn",
    "aren",
    "won",
    "fails",
    "fail",
    "wrong",
    "wrongly",
    "instead",
    "only",
    "but",
    "except",
    "unless",
    "until",
    "breaks",
    "broken",
    "crashes",
    "raises",
    "error",
    "incorrect",
    "incorrectly",
];

/// Words that, after the word of working, make it hold only under a condition ("works for lists", "fine when").
const CONDITIONS: &[&str] = &["for", "with", "when", "if", "on", "as", "in", "while"];

/// Words that start a clause of contrast.
const CONTRASTS: &[&str] = &["although", "though", "whereas"];

/// The task's clauses, each as its words (lower case, quoted text left out) and whether it says something works.
#[derive(Debug, Clone, PartialEq)]
pub struct Roles {
    clauses: Vec<(Vec<String>, bool)>,
}

impl Roles {
    /// Read the task's text.
    pub fn of(task: &str) -> Roles {
        let clauses = clauses(&unquoted(task))
            .into_iter()
            .map(|words| {
                let works = says_working(&words);
                (words, works)
            })
            .collect();
        Roles { clauses }
    }

    /// What each definition of `defs` (by name, in any order) adds to its lines, given `named`: whether a list of
    /// words (in order) names a definition. 1 for the definition the task reports first, [`OTHER_WEIGHT`] for the
    /// others it reports, [`WORKS_WEIGHT`] for one it names only where it says it works, and 0 for one it does not
    /// name.
    pub fn weights(&self, defs: &[&str], named: impl Fn(&[String], &str) -> bool) -> Vec<f64> {
        // Where each definition is first named in a clause that does not say it works: (clause, word).
        let reported: Vec<Option<(usize, usize)>> = defs
            .iter()
            .map(|d| {
                self.clauses
                    .iter()
                    .enumerate()
                    .find_map(|(c, (words, works))| {
                        if *works {
                            return None;
                        }
                        (0..words.len())
                            .find(|&w| named(&words[w..], d) && starts_naming(&words[w..], d))
                            .map(|w| (c, w))
                    })
            })
            .collect();
        let first = reported.iter().flatten().min().copied();
        defs.iter()
            .zip(&reported)
            .map(|(d, at)| match at {
                Some(at) if Some(*at) == first => 1.0,
                Some(_) => OTHER_WEIGHT,
                None if self.clauses.iter().any(|(w, _)| named(w, d)) => WORKS_WEIGHT,
                None => 0.0,
            })
            .collect()
    }
}

/// Whether `words` start with a mention of the definition `name`: the name itself, or its first part.
fn starts_naming(words: &[String], name: &str) -> bool {
    let lower = name.to_lowercase();
    words
        .first()
        .is_some_and(|w| *w == lower || super::name_parts(name).first().is_some_and(|p| p == w))
}

/// The task's text with what it quotes (`"80% (ok)"`, `'ok'`) blanked: a quoted word is a value, not a verdict.
/// Backquoted text is code (`` `Reservation.fits` ``) and stays.
fn unquoted(task: &str) -> String {
    let mut out = String::with_capacity(task.len());
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for c in task.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(' ');
            }
            Some(_) => out.push(' '),
            // A `'` opens a quote only where a word does not go on (`'ok'`, not `doesn't`).
            None if c == '"' || (c == '\'' && !prev.is_alphanumeric()) => {
                quote = Some(c);
                out.push(' ');
            }
            None => out.push(c),
        }
        prev = c;
    }
    out
}

/// The clauses of a text, each as its words in lower case: cut at a sentence's end (`.` `!` `?` before a space or
/// the end), at `;` and `:`, and before a word of contrast.
fn clauses(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut clause: Vec<String> = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() || c == '_' {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            if CONTRASTS.contains(&word.as_str()) && !clause.is_empty() {
                out.push(std::mem::take(&mut clause));
            }
            clause.push(std::mem::take(&mut word));
        }
        let ends = matches!(c, ';' | ':')
            || (matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()));
        if ends && !clause.is_empty() {
            out.push(std::mem::take(&mut clause));
        }
    }
    if !word.is_empty() {
        clause.push(word);
    }
    if !clause.is_empty() {
        out.push(clause);
    }
    out
}

/// Whether a clause's words say something works, without a word that takes it back or a condition after it.
fn says_working(words: &[String]) -> bool {
    let at = words.iter().enumerate().position(|(k, w)| {
        WORKING.contains(&w.as_str())
            || (w == "right" && k > 0 && BEFORE_RIGHT.contains(&words[k - 1].as_str()))
            || (w == "expected" && k > 0 && words[k - 1] == "as")
    });
    let Some(at) = at else { return false };
    !words.iter().any(|w| NOT_WORKING.contains(&w.as_str()))
        && !words[at + 1..]
            .iter()
            .any(|w| CONDITIONS.contains(&w.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(words: &[String], name: &str) -> bool {
        words.iter().any(|w| *w == name.to_lowercase())
    }

    fn weights(task: &str, defs: &[&str]) -> Vec<f64> {
        Roles::of(task).weights(defs, named)
    }

    #[test]
    fn the_definitions_a_task_says_work_weigh_nothing_and_the_first_reported_most() {
        let task = "In roster.py, sorted_by_number puts double-digit shirts before single-digit ones: for shirts 9 \
                    and 10 it returns 10, 9 instead of 9, 10. load, by_position and find work.";
        assert_eq!(
            weights(
                task,
                &["load", "by_position", "sorted_by_number", "find", "other"]
            ),
            [WORKS_WEIGHT, WORKS_WEIGHT, 1.0, WORKS_WEIGHT, 0.0]
        );
    }

    #[test]
    fn a_consequence_the_task_reports_weighs_less_than_the_definition_it_reports_first() {
        let task = "In weather.py, longest_heatwave never reports a heatwave: longest_heatwave([31, 32]) returns 0 \
                    instead of 2, so summary() shows \"heatwave\": 0. The means and frost_days are right.";
        assert_eq!(
            weights(task, &["summary", "frost_days", "longest_heatwave"]),
            [OTHER_WEIGHT, WORKS_WEIGHT, 1.0]
        );
    }

    #[test]
    fn a_clause_of_contrast_is_its_own_and_a_quoted_ok_is_a_value() {
        let task = "In tipping.py, split(100, 4) returns the wrong shares, although with_tip(10000) correctly gives \
                    11500; per_person(100, 4) is right.";
        assert_eq!(
            weights(task, &["split", "with_tip", "per_person"]),
            [1.0, WORKS_WEIGHT, WORKS_WEIGHT]
        );
        let task = "In battery.py, summary(4020) returns \"80% (low)\", and status(15) gives \"ok\" for a low battery.";
        assert_eq!(weights(task, &["summary", "status"]), [1.0, OTHER_WEIGHT]);
    }

    #[test]
    fn working_taken_back_or_narrowed_is_not_working() {
        for task in [
            "parse works for lists but returns None for tuples.",
            "parse works only for plain versions.",
            "parse is fine when the text is short, and wrong otherwise.",
            "parse does not work.",
            "parse works with one argument.",
        ] {
            assert_eq!(weights(task, &["parse"]), [1.0], "{task}");
        }
        // A right triangle is no verdict.
        assert_eq!(
            weights("area of a right triangle is 7.5.", &["area"]),
            [1.0]
        );
        assert_eq!(
            weights("parse and compare fine.", &["parse", "compare"]),
            [WORKS_WEIGHT, WORKS_WEIGHT]
        );
    }

    #[test]
    fn a_definition_reported_and_also_said_to_work_elsewhere_is_reported() {
        let task = "parse(\"v1.4.0\") raises ValueError instead of returning (1, 4, 0). Plain versions parse and \
                    compare fine.";
        assert_eq!(weights(task, &["parse", "compare"]), [1.0, WORKS_WEIGHT]);
    }
}
