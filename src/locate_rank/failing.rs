//! What a failing check's output says of the selected files: the places it names (Python tracebacks,
//! `file:line:col` of compilers, pytest's `file:line:`) and the names its quoted code writes. Read for the repair
//! round ([`failing_place`]) and, before any edit, as evidence for the ranking ([`Failing`]). A check's output is
//! hostile bytes: it is only parsed, and at most its first [`MAX_READ`] bytes. Pure.

use std::collections::{BTreeMap, HashSet};

use super::{Spot, defines, definition, is_name, named_scopes, tokens, without_strings, words_of};
use crate::patch::PreImage;
use crate::patch::focus::{self, Focus};

/// The most bytes of a check's output read for evidence (a check's output is already bounded where it is kept).
pub const MAX_READ: usize = 256 * 1024;

/// What the project's checks said of the files before any edit, when they failed: the places of the selected files
/// their output names, most telling first, and the words of its other lines (the failing assertion a traceback
/// quotes, pytest's `>` and `E` lines, an error's message), in order. Empty when the checks passed or did not run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failing {
    /// (selected file, 1-based line), most telling first ([`named_lines`]).
    pub places: Vec<(String, usize)>,
    /// The words of the output's lines other than its frames and `file:line` locations, lower case, in order.
    pub words: Vec<String>,
    /// The lines of the selected files the checks ran, where a tracer could see them ([`super::executed`]).
    pub ran: super::executed::Executed,
    /// What the output's errors say is missing (a module, an attribute, a value), for the insertion probe.
    pub missing: Vec<Missing>,
    /// The places where a mutation or an inserted line made the failing check pass, the probe's first pass first
    /// ([`super::mutants::probe`], [`super::batch::Probed::fixed`]).
    pub fixed: Vec<Fixed>,
    /// The places where a mutant got the failing check further on without passing: its first failing assertion
    /// passed, a later one failed ([`super::batch::Probed::further`]).
    pub further: Vec<Fixed>,
    /// The probe ran at least one mutant: with `fixed` empty, no small change of the best ranked lines passed.
    pub probed: bool,
}

/// A place where the probe made the failing check pass: a line a mutant changed, or (`insert`) the place after a
/// line where an inserted line did ([`super::mutants::probe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// The selected file.
    pub path: String,
    /// The 1-based line changed, or the line the new one went after.
    pub line: usize,
    /// A line was inserted after `line`.
    pub insert: bool,
}

/// What a failing check's error says is missing: the insertion probe writes the line that supplies it
/// ([`super::insertions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// A name used and never defined: `NameError: name 'math' is not defined` (a module never imported).
    Name(String),
    /// An attribute used and never set: `AttributeError: 'Form' object has no attribute 'errors'`.
    Attribute(String),
    /// A local variable read before any value is bound to it: `UnboundLocalError: cannot access local variable
    /// 'total' where it is not associated with a value` (`local variable 'total' referenced before assignment`
    /// before Python 3.11): an accumulator never set to its first value.
    Unbound(String),
    /// A `None` used as a value (`object of type 'NoneType' has no len()`, `'NoneType' object is not
    /// subscriptable`): a function that never returns its result.
    Value,
    /// A text used where a number was meant (`unsupported operand type(s) for +=: 'float' and 'str'`, `'<' not
    /// supported between instances of 'str' and 'int'`): a conversion never made before the line the error names.
    Number,
}

/// The most errors of one output read for [`Missing`].
const MAX_MISSING: usize = 4;

/// What the error lines of a check's `output` say is missing, in order, each once, at most [`MAX_MISSING`]. A
/// name is kept only when it is an identifier: the output is hostile bytes.
fn missing_of(output: &str) -> Vec<Missing> {
    let quoted = |line: &str, after: &str| -> Option<String> {
        let rest = &line[line.find(after)? + after.len()..];
        let name = &rest[..rest.find('\'')?];
        let ok = name.len() <= 64
            && name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ok.then(|| name.to_string())
    };
    let mut out = Vec::new();
    for line in output.lines() {
        let text_for_number = line.contains("TypeError")
            && line.contains("'str'")
            && ["operand type", "not supported between", "can't multiply"]
                .iter()
                .any(|w| line.contains(w));
        let found = if line.contains("NoneType") && line.contains("Error") {
            Some(Missing::Value)
        } else if text_for_number {
            Some(Missing::Number)
        } else if line.contains("UnboundLocalError") {
            quoted(line, "local variable '").map(Missing::Unbound)
        } else if line.contains("NameError") {
            quoted(line, "name '").map(Missing::Name)
        } else if line.contains("AttributeError") {
            quoted(line, "has no attribute '").map(Missing::Attribute)
        } else {
            None
        };
        if let Some(m) = found.filter(|m| !out.contains(m)) {
            out.push(m);
            if out.len() == MAX_MISSING {
                break;
            }
        }
    }
    out
}

impl Failing {
    /// Read a failing check's `output` for the `selected` files (their paths as the workspace names them), the
    /// check having run in the folder `root` (the sandbox copy, under every name it has): an absolute path names a
    /// selected file only under it (a frame of an installed library's `utils.py` is not the selected `utils.py`).
    pub fn read(output: &str, selected: &[&str], roots: &[String]) -> Failing {
        let mut end = MAX_READ.min(output.len());
        while !output.is_char_boundary(end) {
            end -= 1;
        }
        let output = &output[..end];
        let mut words = Vec::new();
        for line in output.lines() {
            let t = line.trim_start();
            // A frame or a location names a place, not the code: its path's words ("invoice") are not names; nor
            // are a traceback's header and a test runner's session lines.
            if t.starts_with("File \"") || locates(t) || boilerplate(t) {
                continue;
            }
            words.extend(words_of(t));
        }
        Failing {
            places: named_lines_under(output, selected, Some(roots)),
            words,
            ran: Default::default(),
            missing: missing_of(output),
            fixed: Vec::new(),
            further: Vec::new(),
            probed: false,
        }
    }

    /// Whether there is nothing to go on.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
            && self.words.is_empty()
            && self.ran.is_empty()
            && self.fixed.is_empty()
    }

    /// For each line of the selected file `path` (0-based), how strongly the output points at it: 1 for the first
    /// place it names in that file, 0.5 for the others, 0 elsewhere.
    pub(super) fn place_scores(&self, path: &str, lines: usize) -> Vec<f64> {
        let mut out = vec![0.0; lines];
        let mut first = true;
        for (p, n) in &self.places {
            if p != path || *n == 0 || *n > lines {
                continue;
            }
            let w = if first { 1.0 } else { 0.5 };
            first = false;
            out[n - 1] = f64::max(out[n - 1], w);
        }
        out
    }

    /// Whether the output writes `name` (three characters or more: a call of the function in a failing assertion).
    pub(super) fn said(&self, name: &str) -> bool {
        let lower = name.to_lowercase();
        lower.chars().count() >= 3 && self.words.contains(&lower)
    }

    /// For each line of `text` (0-based), whether it is within the reach of a call the output writes (a failing
    /// assertion's `level_name(30)`): 1 for the body of a definition the output names and for what that body uses
    /// of the file's top level (the `LEVELS = {...}` it reads, every line of it, the body of a helper it calls), 0.5 for the named
    /// definition's own line, 0 elsewhere. A test says which function it exercises, not which of its lines is wrong.
    pub(super) fn reach(&self, text: &str) -> Vec<f64> {
        let mut out = named_scopes(text, 0.5, |name| f64::from(u8::from(self.said(name))));
        let lines: Vec<&str> = text.lines().collect();
        let used: HashSet<String> = lines
            .iter()
            .zip(&out)
            .filter(|(_, s)| **s >= 1.0)
            .flat_map(|(l, _)| tokens(l))
            .filter(|t| is_name(t))
            .collect();
        let helpers = named_scopes(text, 0.5, |name| f64::from(u8::from(used.contains(name))));
        let mut open = 0i32; // brackets a top-level definition used there leaves open (`UNITS = {` ... `}`)
        for (k, line) in lines.iter().enumerate() {
            let toks = tokens(&without_strings(line));
            let depth: i32 = toks
                .iter()
                .map(|t| match t.as_str() {
                    "(" | "[" | "{" => 1,
                    ")" | "]" | "}" => -1,
                    _ => 0,
                })
                .sum();
            let top_level = !line.starts_with([' ', '\t']);
            if open > 0 {
                out[k] = 1.0;
                open = (open + depth).max(0);
            } else if top_level
                && definition(&toks).is_none()
                && defines(&toks).iter().any(|n| used.contains(n))
            {
                out[k] = 1.0;
                open = depth.max(0);
            }
            if helpers[k] >= 1.0 {
                out[k] = f64::max(out[k], 1.0);
            }
        }
        out
    }
}

/// Whether a line of output is a traceback's header or a test runner's session line, which name no code.
fn boilerplate(line: &str) -> bool {
    line.starts_with("Traceback (most recent call last)")
        || line.starts_with("During handling of the above exception")
        || line.starts_with("The above exception was the direct cause")
        || line.starts_with("====")
        || line.starts_with("----")
        || [
            "platform ",
            "rootdir:",
            "plugins:",
            "cachedir:",
            "configfile:",
            "collected ",
            "collecting ",
        ]
        .iter()
        .any(|p| line.starts_with(p))
}

/// Whether a line of output starts with a `PATH:N:` location (a compiler's message, pytest's short summary).
fn locates(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or_default();
    let mut parts = first.splitn(3, ':');
    matches!(
        (parts.next(), parts.next()),
        (Some(p), Some(n)) if !p.is_empty() && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
    )
}

/// The places of the selected files a failing check's output names, most telling first: the frames of Python
/// tracebacks (`File "PATH", line N`), innermost first, then `PATH:N:` (compilers' `PATH:N:M`, pytest's `PATH:N:`)
/// in the order written. A path matches a selected file when it is the file's path or ends with `/` and it (the
/// check ran in a copy of the workspace). Each place once.
pub fn named_lines(output: &str, selected: &[&str]) -> Vec<(String, usize)> {
    named_lines_under(output, selected, None)
}

/// [`named_lines`], with the folders the check ran in when known: an absolute path then matches only under one.
fn named_lines_under(
    output: &str,
    selected: &[&str],
    roots: Option<&[String]>,
) -> Vec<(String, usize)> {
    let matches = |p: &str| -> Option<String> {
        let p = p.trim();
        selected
            .iter()
            .find(|s| {
                p == **s
                    || p.strip_prefix("./") == Some(**s)
                    || match roots {
                        Some(roots) => roots
                            .iter()
                            .any(|r| p == format!("{}/{s}", r.trim_end_matches('/'))),
                        None => p.ends_with(&format!("/{s}")),
                    }
            })
            .map(|s| s.to_string())
    };
    let mut frames = Vec::new();
    let mut located = Vec::new();
    for line in output.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("File \"") {
            let Some((path, tail)) = rest.split_once('"') else {
                continue;
            };
            let n = tail
                .trim_start_matches(',')
                .trim_start()
                .strip_prefix("line ")
                .map(|n| {
                    n.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                });
            if let (Some(f), Some(Ok(n))) = (matches(path), n.map(|n| n.parse::<usize>())) {
                frames.push((f, n));
            }
            continue;
        }
        for word in t.split_whitespace() {
            let mut parts = word.splitn(3, ':');
            let (Some(path), Some(n)) = (parts.next(), parts.next()) else {
                continue;
            };
            if parts.next().is_none() && !word.ends_with(':') {
                continue;
            }
            if let (Some(f), Ok(n)) = (matches(path), n.parse::<usize>()) {
                located.push((f, n));
            }
        }
    }
    frames.reverse();
    let mut seen = HashSet::new();
    frames
        .into_iter()
        .chain(located)
        .filter(|p| p.1 > 0 && seen.insert(p.clone()))
        .collect()
}

/// The line of `pre` that line `n` (1-based) of `post` stands for, when `post` is `pre` with one region changed (the
/// lines they share at the start and the end kept): a line of the shared start or end maps to itself; a line in the
/// changed region to the region's first line in `pre` (the line the edit replaced), or, when the edit only added
/// lines, to the line before them.
pub fn line_before_edit(pre: &str, post: &str, n: usize) -> Option<usize> {
    let a: Vec<&str> = pre.lines().collect();
    let b: Vec<&str> = post.lines().collect();
    if n == 0 || n > b.len() {
        return None;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let i = n - 1;
    if i < prefix {
        return Some(n);
    }
    if i >= b.len() - suffix {
        return Some(i + a.len() - b.len() + 1);
    }
    if a.len() - suffix > prefix {
        Some(prefix + 1)
    } else {
        (prefix > 0).then_some(prefix)
    }
}

/// The place a repair round is pinned to: the first place in a selected file that the failing check's output names
/// ([`named_lines`]; the check ran on the files with the previous edit in `changes`, so its line numbers are mapped
/// back to the files as the model is shown them, [`line_before_edit`]), when that line is a non-blank line the
/// model may edit (inside the file's ranges, when narrowed). `None` when the output names no such place.
pub fn failing_place(
    output: &str,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    changes: &[crate::patch::FileChange],
) -> Option<Spot> {
    let selected: Vec<&str> = files
        .iter()
        .filter(|(_, f)| f.is_some())
        .map(|(p, _)| p.as_str())
        .collect();
    named_lines(output, &selected)
        .into_iter()
        .find_map(|(path, n)| {
            let pre = files.get(&path)?.as_ref()?;
            let n = match changes.iter().find(|c| c.path == path) {
                Some(c) => line_before_edit(&pre.text, &String::from_utf8_lossy(&c.post), n)?,
                None => n,
            };
            let text = pre.text.lines().nth(n - 1)?;
            let text = text.strip_suffix('\r').unwrap_or(text);
            let inside = focus.get(&path).is_none_or(|r| focus::contains(r, n - 1));
            (inside && !text.trim().is_empty()).then(|| Spot {
                path: path.clone(),
                line: n,
                text: text.to_string(),
                insert: false,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_errors_say_what_is_missing_and_a_name_that_is_no_identifier_is_dropped() {
        let output = "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n\
                      NameError: name 'math' is not defined. Did you forget to import 'math'?\n\
                      E   AttributeError: 'Form' object has no attribute 'errors'\n\
                      TypeError: object of type 'NoneType' has no len()\n\
                      NameError: name 'math' is not defined\n\
                      NameError: name 'a b; rm' is not defined\n";
        assert_eq!(
            Failing::read(output, &["m.py"], &[]).missing,
            [
                Missing::Name("math".into()),
                Missing::Attribute("errors".into()),
                Missing::Value
            ]
        );
        // A text used as a number, in the wordings of an operator and of a comparison; not other type errors.
        for e in [
            "TypeError: unsupported operand type(s) for +=: 'float' and 'str'",
            "TypeError: '<' not supported between instances of 'str' and 'int'",
        ] {
            assert_eq!(
                Failing::read(e, &["m.py"], &[]).missing,
                [Missing::Number],
                "{e}"
            );
        }
        for other in [
            "TypeError: unsupported operand type(s) for +: 'int' and 'list'",
            "TypeError: can only concatenate str (not \"int\") to str",
        ] {
            assert!(Failing::read(other, &["m.py"], &[]).missing.is_empty());
        }
        // Both wordings of an unbound local, the newer and the one before Python 3.11.
        let output = "UnboundLocalError: cannot access local variable 'positive' where it is not associated with a value\n\
                      UnboundLocalError: local variable 'total' referenced before assignment\n";
        assert_eq!(
            Failing::read(output, &["m.py"], &[]).missing,
            [
                Missing::Unbound("positive".into()),
                Missing::Unbound("total".into())
            ]
        );
        assert!(
            Failing::read("AssertionError: 2\n", &["m.py"], &[])
                .missing
                .is_empty()
        );
    }
    use crate::locate_rank::{Signals, rank};
    use crate::patch::MODE_REGULAR;
    use crate::task::Task;

    const SETTINGS: &str = "\"\"\"Database settings: host and port, with defaults.\"\"\"\n\nDEFAULTS = {\"host\": \"localhost\", \"port\": 5432}\n\n\ndef port(settings):\n    return int(settings.get(\"port\", DEFAULTS[\"port\"]))\n\n\ndef host(settings):\n    return settings[\"hostname\"]\n";

    const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/tmp/sbx/test_settings.py\", line 2, in <module>\n    assert host({}) == \"localhost\"\n           ^^^^^^^^\n  File \"/tmp/sbx/settings.py\", line 11, in host\n    return settings[\"hostname\"]\n           ~~~~~~~~^^^^^^^^^^^^\nKeyError: 'hostname'\n";

    fn roots() -> Vec<String> {
        vec!["/tmp/sbx".to_string(), "/s/".to_string()]
    }

    #[test]
    fn a_frame_outside_the_folder_the_check_ran_in_is_not_a_selected_file() {
        let out = "Traceback (most recent call last):\n  File \"/tmp/sbx/settings.py\", line 2, in call\n    return last(x)\n  File \"/usr/lib/python3/dist-packages/lib/settings.py\", line 5, in last\n    raise ValueError\nValueError\n";
        let f = Failing::read(out, &["settings.py"], &roots());
        assert_eq!(f.places, vec![("settings.py".to_string(), 2)]);
        assert!(
            !f.words.iter().any(|w| w == "most" || w == "recent"),
            "the header is not code: {:?}",
            f.words
        );
    }

    #[test]
    fn a_bracket_in_a_string_does_not_open_a_definition() {
        let text = "OPEN = \"(\"\nOTHER = 1\n\n\ndef wrap(s):\n    return OPEN + s\n\n\ndef other():\n    return 2\n";
        let out = "  File \"t.py\", line 2, in <module>\n    assert wrap(\"x\") == \"(x)\"\nAssertionError\n";
        let reach = Failing::read(out, &["settings.py"], &roots()).reach(text);
        assert_eq!(reach[0], 1.0, "the table it reads");
        assert_eq!(reach[1], 0.0, "{reach:?}");
        assert_eq!(reach[9], 0.0, "{reach:?}");
    }

    fn ranked(t: &str, text: &str, failing: &Failing) -> Vec<(usize, bool)> {
        let files = [(
            "settings.py".to_string(),
            Some(PreImage {
                text: text.into(),
                mode: MODE_REGULAR,
            }),
        )]
        .into();
        let task = Task {
            task: t.into(),
            ..Task::default()
        };
        rank(&task, &files, &Focus::new(), failing, Signals::ALL, 3)
            .iter()
            .map(|s| (s.line, s.insert))
            .collect()
    }

    #[test]
    fn a_traceback_gives_its_places_innermost_first_and_the_words_of_its_code_not_of_its_paths() {
        let f = Failing::read(TRACEBACK, &["settings.py"], &roots());
        assert_eq!(f.places, vec![("settings.py".to_string(), 11)]);
        assert!(f.words.contains(&"host".to_string()), "{:?}", f.words);
        assert!(f.words.contains(&"keyerror".to_string()), "{:?}", f.words);
        assert!(
            !f.words.iter().any(|w| w == "sbx" || w == "test_settings"),
            "a frame's path is not code: {:?}",
            f.words
        );
        // pytest's location lines are places, not words.
        let f = Failing::read("settings.py:11: KeyError\n", &["settings.py"], &roots());
        assert_eq!(f.places, vec![("settings.py".to_string(), 11)]);
        assert!(f.words.is_empty(), "{:?}", f.words);
        // Only the first MAX_READ bytes are read, cut at a character's boundary.
        let huge = format!("{}é{}", "x".repeat(MAX_READ - 1), "\nsettings.py:3: late\n");
        assert!(
            Failing::read(&huge, &["settings.py"], &roots())
                .places
                .is_empty()
        );
    }

    #[test]
    fn the_line_a_failing_check_names_ranks_first_though_the_task_shares_no_word_with_it() {
        let t = "Fall back to the default when no host is given.";
        let before = ranked(t, SETTINGS, &Failing::default());
        assert_ne!(before.first(), Some(&(11, false)), "before: {before:?}");
        let after = ranked(
            t,
            SETTINGS,
            &Failing::read(TRACEBACK, &["settings.py"], &roots()),
        );
        assert_eq!(after.first(), Some(&(11, false)), "{after:?}");
    }

    #[test]
    fn a_failing_assertion_points_at_what_the_function_it_calls_reads_when_the_task_names_none() {
        // The test calls `level_name`; the fix is in the table it reads, not in its body.
        let text = "\"\"\"Names for levels.\"\"\"\n\nLEVELS = {\n    10: \"DEBUG\",\n    30: \"WARN\",\n}\nOTHER = {30: \"x\"}\n\n\ndef level_name(n):\n    return LEVELS.get(n, \"UNKNOWN\")\n\n\ndef shout(n):\n    return str(n).upper()\n";
        let out = "Traceback (most recent call last):\n  File \"t.py\", line 2, in <module>\n    assert level_name(30) == \"WARNING\"\nAssertionError\n";
        let f = Failing::read(out, &["settings.py"], &roots());
        let reach = f.reach(text);
        let at = |n: usize| reach[n - 1];
        assert_eq!((at(10), at(11)), (0.5, 1.0), "the def line and its body");
        assert_eq!(
            (at(3), at(4), at(5), at(6)),
            (1.0, 1.0, 1.0, 1.0),
            "every line of the table it reads"
        );
        assert_eq!((at(7), at(15)), (0.0, 0.0), "what it does not use");
        let t = "Level 30 must be called WARNING.";
        let after = ranked(t, text, &f);
        assert_eq!(after.first(), Some(&(5, false)), "{after:?}");
    }

    #[test]
    fn a_guard_goes_before_the_line_that_crashed() {
        let text = "def average(xs):\n    return sum(xs) / len(xs)\n";
        let out = "  File \"/s/settings.py\", line 2, in average\n    return sum(xs) / len(xs)\nZeroDivisionError: division by zero\n";
        let ranked = ranked(
            "average fails on an empty list; add a guard that returns 0 for it",
            text,
            &Failing::read(out, &["settings.py"], &roots()),
        );
        assert_eq!(ranked.first(), Some(&(1, true)), "{ranked:?}");
    }
}
