//! Lines a task implies are missing without asking to add one: an import ("math is never imported", a failing
//! check's `NameError`), a function's last `return` ("median returns None for ..."), the `raise` or `return` a
//! function that gives a value on some paths lacks at its end ("a TypeError about NoneType"), a guard clause ("...
//! for an empty list"). Each gives the place after the line where such a line goes, scored. Pure.

use std::collections::HashSet;

use super::{body_lines, defines, definition, is_name, prose_lines, tokens, without_strings};

/// What an implied place adds to the place after its line: above a line the task's words merely share.
const IMPLIED_WEIGHT: f64 = 3.0;
/// A guard clause: an edge case the task names is often, not always, a first line of its own.
const GUARD_WEIGHT: f64 = 2.0;
/// A missing import the task or the check names: above the line that uses the name (which a `NameError` names).
const IMPORT_WEIGHT: f64 = 5.0;

/// Words saying a function gives nothing back.
const NO_RETURN: &[&str] = &[
    "returns none",
    "return none",
    "returns nothing",
    "never returns",
    "doesn't return",
    "does not return",
    "forgets to return",
    "forgot to return",
    "without returning",
    "missing return",
    "no return",
    "never hands",
    "never gives",
    "hands back",
    "gives back",
    "hand back",
];

/// Words naming an edge case a guard clause handles.
const EDGE_CASES: &[&str] = &[
    "empty",
    "is none",
    "none input",
    "given none",
    "passed none",
    "no items",
    "zero",
    "negative",
    "blank",
];

/// The places after lines of `text` (0-based index of the line) where the `task` (lower case) implies a missing
/// line, each with its score: after the last import (or the module docstring) for a name used but never imported
/// that the task or the check's `words` name; after the last line of a `named` function's body that does not end
/// in a `return`; where the task or the check speaks of `None` without saying a function returns it, after the
/// last line of each function that gives a value on some paths and can run past its end ([`valueless_ends`]);
/// after a `named` function's `def` line (and its docstring) for an edge case.
pub(super) fn places(
    task: &str,
    text: &str,
    named: &dyn Fn(&str) -> bool,
    words: &[String],
) -> Vec<(usize, f64)> {
    let lines: Vec<&str> = text.lines().collect();
    let prose = prose_lines(text);
    let mut out = Vec::new();
    if let Some(i) = import_place(task, &lines, &prose, words) {
        out.push((i, IMPORT_WEIGHT));
    }
    if let Some(i) = init_place(task, &lines, words) {
        out.push((i, IMPLIED_WEIGHT));
    }
    let no_return = NO_RETURN.iter().any(|w| task.contains(w));
    let edge = EDGE_CASES.iter().any(|w| task.contains(w));
    if !no_return && says_none(task, words) {
        out.extend(valueless_ends(&lines, named));
    }
    if !no_return && !edge {
        return out;
    }
    for (d, line) in lines.iter().enumerate() {
        let toks = tokens(line);
        let Some(name) = definition(&toks) else {
            continue;
        };
        if toks.first().is_some_and(|t| t == "class") || !named(name) {
            continue;
        }
        let body = body_lines(&lines, d);
        let Some(&last) = body.last() else { continue };
        if no_return && falls_off_its_end(&lines, &body) {
            out.push((last, IMPLIED_WEIGHT));
        }
        if edge && line.trim_end().ends_with(':') {
            // After the docstring, when the body opens with one.
            let after = body
                .iter()
                .take_while(|&&b| prose.get(b).copied().unwrap_or(false))
                .last()
                .copied()
                .unwrap_or(d);
            out.push((after, GUARD_WEIGHT));
        }
    }
    out
}

/// Whether the task or the check's output `words` speak of `None` ("a TypeError about NoneType", "subtracting
/// None"): a value some path of a function never gave.
fn says_none(task: &str, words: &[String]) -> bool {
    let none = |w: &str| w == "none" || w == "nonetype";
    task.split(|c: char| !c.is_alphanumeric()).any(none) || words.iter().any(|w| none(w))
}

/// The places after the last line of the functions that give a value on some paths (`return rate` inside its
/// `if`) and can still run past their end, which gives `None`: the one for a kind nobody listed lacks its `raise`
/// or its last `return`. The functions the task (or the check) names when it names such a function, each at
/// [`IMPLIED_WEIGHT`]; else every such function, the weight shared among them.
fn valueless_ends(lines: &[&str], named: &dyn Fn(&str) -> bool) -> Vec<(usize, f64)> {
    let mut ends = Vec::new();
    for (d, line) in lines.iter().enumerate() {
        let toks = tokens(line);
        let Some(name) = definition(&toks) else {
            continue;
        };
        if toks.first().is_some_and(|t| t == "class") {
            continue;
        }
        let body = body_lines(lines, d);
        let gives = body.iter().any(|&b| {
            let t = tokens(lines[b]);
            t.first().is_some_and(|w| w == "return") && t.len() > 1
        });
        if let Some(&last) = body
            .last()
            .filter(|_| gives && falls_off_its_end(lines, &body))
        {
            ends.push((last, named(name)));
        }
    }
    let any_named = ends.iter().any(|(_, n)| *n);
    let chosen: Vec<usize> = ends
        .into_iter()
        .filter(|(_, n)| *n || !any_named)
        .map(|(last, _)| last)
        .collect();
    let weight = IMPLIED_WEIGHT / chosen.len().max(1) as f64;
    chosen.into_iter().map(|last| (last, weight)).collect()
}

/// Whether a body (its non-blank lines, 0-based) can run past its last line: its last statement at the body's
/// own depth is not a `return`, `raise` or `yield`, nor an `else` or `finally` block (or `while True`
/// loop) whose own last line is one. A `return` inside the last `if` (`if goods >= FREE: return goods`) still
/// falls off the end when the test fails.
fn falls_off_its_end(lines: &[&str], body: &[usize]) -> bool {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(&first) = body.first() else {
        return false;
    };
    let depth = indent(lines[first]);
    let Some(&head) = body.iter().rev().find(|&&b| indent(lines[b]) == depth) else {
        return true;
    };
    let ends = |n: usize| {
        matches!(
            tokens(lines[n]).first().map(String::as_str),
            Some("return" | "raise" | "yield")
        )
    };
    let last = *body.last().unwrap_or(&head);
    let header = tokens(lines[head]);
    match header.first().map(String::as_str) {
        Some("return" | "raise" | "yield") => false,
        Some("else" | "finally") => !ends(last),
        Some("while") if header.get(1).is_some_and(|t| t == "True") => false,
        _ => true,
    }
}

/// The place of a missing attribute: after the last line of the first `__init__` (of a class the task names, else
/// any), when the task or the check speaks of an attribute missing (`AttributeError`, "no attribute", "initialise
/// ... in the constructor").
fn init_place(task: &str, lines: &[&str], words: &[String]) -> Option<usize> {
    let said = task.contains("no attribute")
        || task.contains("attributeerror")
        || task.contains("constructor")
        || task.contains("__init__")
        || task.contains("initialis")
        || task.contains("initializ")
        || words.iter().any(|w| w == "attributeerror");
    if !said {
        return None;
    }
    let mut inits = Vec::new();
    let mut class: Option<String> = None;
    for (d, line) in lines.iter().enumerate() {
        let toks = tokens(line);
        if toks.first().is_some_and(|t| t == "class") {
            class = toks.get(1).map(|n| n.to_lowercase());
            continue;
        }
        if definition(&toks) != Some("__init__") {
            continue;
        }
        let last = body_lines(lines, d).last().copied().unwrap_or(d);
        let named = class.as_ref().is_some_and(|c| task.contains(c.as_str()));
        inits.push((named, last));
    }
    inits
        .iter()
        .find(|(named, _)| *named)
        .or(inits.first())
        .map(|(_, last)| *last)
}

/// The place of a missing import ([`import_spot`]: after the plain imports, else the last `import` / `from` line
/// or the module docstring), when the task speaks of importing (or the check says `NameError`) or a name the task or the check
/// writes is used as a module (`math.sqrt`) and defined nowhere in the file.
fn import_place(task: &str, lines: &[&str], prose: &[bool], words: &[String]) -> Option<usize> {
    let task_words: Vec<&str> = task
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .collect();
    let said_import = task_words.iter().any(|w| {
        matches!(
            *w,
            "import" | "imported" | "imports" | "importing" | "nameerror"
        )
    }) || task.contains("not defined")
        || words.iter().any(|w| w == "nameerror");
    let defined: HashSet<String> = lines.iter().flat_map(|l| defines(&tokens(l))).collect();
    let said: HashSet<&str> = words.iter().map(String::as_str).collect();
    let missing = lines.iter().zip(prose).find_map(|(l, is_prose)| {
        let toks = tokens(&without_strings(l));
        let used = (0..toks.len().saturating_sub(2)).find(|&k| {
            let name = &toks[k];
            // `math.sqrt`, not the `laps` of `self.laps.append`.
            (k == 0 || toks[k - 1] != ".")
                && toks[k + 1] == "."
                && is_name(name)
                && is_name(&toks[k + 2])
                && !defined.contains(name)
                && (said.contains(name.to_lowercase().as_str())
                    || task_words.contains(&name.as_str()))
        });
        used.filter(|_| !is_prose).map(|k| toks[k].clone())
    });
    match missing {
        // Where the file's order of imports puts that module.
        Some(name) => import_spot(lines, prose, &name),
        None if said_import => import_line(lines, prose),
        None => None,
    }
}

/// The line (0-based) a new top-level import goes after: the last line of the last top-level `import` / `from`
/// statement, else the module docstring's last line; none when the file has neither.
pub(super) fn import_line(lines: &[&str], prose: &[bool]) -> Option<usize> {
    let top_import = lines.iter().rposition(|l| {
        let t = l.trim_end();
        (t.starts_with("import ") || t.starts_with("from ")) && !l.starts_with([' ', '\t'])
    });
    if let Some(i) = top_import {
        // Past the end of the statement: `from typing import (` ... `)`, or lines ended by `\`.
        let mut end = i;
        if without_strings(lines[i]).contains('(') && !without_strings(lines[i]).contains(')') {
            while end + 1 < lines.len() && !lines[end].contains(')') {
                end += 1;
            }
        }
        while lines[end].trim_end().ends_with('\\') && end + 1 < lines.len() {
            end += 1;
        }
        return Some(end);
    }
    // The module docstring: the prose lines the file opens with.
    let docstring_end = prose.iter().take_while(|p| **p).count();
    (docstring_end > 0).then(|| docstring_end - 1)
}

/// The line (0-based) a new `import name` goes after: among the file's plain top-level `import` lines, which come
/// before its `from` imports, where the order of names puts it (`import math` before `import re`, as isort
/// would), else at their end; with none, as [`import_line`].
pub(super) fn import_spot(lines: &[&str], prose: &[bool], name: &str) -> Option<usize> {
    let plain = |l: &&str| l.starts_with("import ") && !l.trim_end().ends_with(['(', '\\']);
    let Some(last) = lines.iter().rposition(&plain) else {
        return import_line(lines, prose);
    };
    let first = lines.iter().position(&plain).unwrap_or(last);
    let later = (first..=last)
        .find(|&k| plain(&lines[k]) && lines[k]["import ".len()..].trim() > name && k > 0);
    Some(later.map_or(last, |k| k - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str) -> bool {
        ["median", "batches"].contains(&n)
    }

    #[test]
    fn a_name_used_as_a_module_and_never_imported_goes_after_the_plain_imports() {
        let text = "\"\"\"Distances.\"\"\"\n\nfrom collections import namedtuple\n\nP = namedtuple(\"P\", \"x y\")\n\n\ndef d(p):\n    return math.sqrt(p.x)\n";
        assert_eq!(
            places("d fails: math is never imported.", text, &named, &[]),
            vec![(2, IMPORT_WEIGHT)]
        );
        // The check's NameError says so when the task does not.
        let words = vec!["nameerror".to_string(), "math".to_string()];
        assert_eq!(
            places("d is broken", text, &named, &words),
            vec![(2, IMPORT_WEIGHT)]
        );
        // A plain import goes among the plain imports in the order of names, before the `from` ones.
        let plain = text.replace("from collections", "import re\nfrom collections");
        assert_eq!(
            places("d fails: math is never imported.", &plain, &named, &[]),
            vec![(1, IMPORT_WEIGHT)]
        );
        let plain = text.replace("from collections", "import json\nfrom collections");
        assert_eq!(
            places("d fails: math is never imported.", &plain, &named, &[]),
            vec![(2, IMPORT_WEIGHT)]
        );
        // No imports: after the module docstring.
        let text = "\"\"\"Distances.\"\"\"\n\n\ndef d(p):\n    return math.sqrt(p.x)\n";
        assert_eq!(
            places("import math in it", text, &named, &[]),
            vec![(0, IMPORT_WEIGHT)]
        );
        // A string's text is not code: "gmail.com" uses no module `gmail`.
        let text = "\"\"\"Mail.\"\"\"\n\nDOMAINS = {\"gmail.com\"}\n";
        let words = vec!["gmail".to_string()];
        assert!(places("normalize lower-cases", text, &named, &words).is_empty());
        // "important" is not "import"; a statement over several lines is passed whole.
        let text = "from typing import (\n    List,\n    Dict,\n)\n\n\ndef d(p):\n    return math.sqrt(p)\n";
        assert!(places("it is important that d rounds", text, &named, &[]).is_empty());
        assert_eq!(
            places("math is never imported", text, &named, &[]),
            vec![(3, IMPORT_WEIGHT)]
        );
        // A name the file defines is not missing, and a task that says nothing of it points nowhere.
        let text = "import math\n\n\ndef d(p):\n    return p.x\n";
        assert!(places("d must return p.y", text, &named, &[]).is_empty());
    }

    #[test]
    fn a_named_function_that_returns_none_gets_the_place_after_its_last_line() {
        let text = "def median(xs):\n    s = sorted(xs)\n    if len(s) % 2:\n        return s[0]\n    value = s[0] + s[1]\n\n\ndef spread(xs):\n    return 1\n";
        assert_eq!(
            places("median returns none for even lengths", text, &named, &[]),
            vec![(4, IMPLIED_WEIGHT)]
        );
        // A return only inside the last `if` still falls off the end.
        let text = "def median(xs):\n    if xs:\n        return xs[0]\n\n\ndef spread(xs):\n    return 1\n";
        assert_eq!(
            places("median returns none for [2, 4]", text, &named, &[]),
            vec![(2, IMPLIED_WEIGHT)]
        );
        // A function that ends in its return (or in an `else` or `while True` that does) is not missing one.
        for ending in [
            "    return xs[0]\n",
            "    if xs:\n        return xs[0]\n    else:\n        return 0\n",
            "    while True:\n        return 1\n",
        ] {
            let text = format!("def median(xs):\n{ending}");
            assert!(
                places("median returns none for []", &text, &named, &[]).is_empty(),
                "{ending}"
            );
        }
    }

    #[test]
    fn a_function_that_gives_none_for_a_kind_nobody_listed_gets_the_place_after_its_last_line() {
        let text = "def rate(kind):\n    if kind == \"a\":\n        return 1\n    if kind == \"b\":\n        return 2\n\n\ndef price(n, kind):\n    return n * rate(kind)\n\n\ndef log(x):\n    print(x)\n";
        // The task names the caller, not the function that gives None: every such function, here the one.
        let task = "price crashes with a typeerror about nonetype for kind 'c'";
        assert_eq!(places(task, text, &named, &[]), vec![(4, IMPLIED_WEIGHT)]);
        // The check's output says NoneType when the task does not; a function that never gives a value (`log`)
        // is not one.
        let words = vec!["typeerror".to_string(), "nonetype".to_string()];
        assert_eq!(
            places("price fails for kind c", text, &named, &words),
            vec![(4, IMPLIED_WEIGHT)]
        );
        // Two such functions share the weight; one the task names takes it all.
        let two = format!(
            "{text}\n\ndef size(k):\n    for s in (1, 2):\n        if k <= s:\n            return s\n"
        );
        assert_eq!(
            places(task, &two, &named, &[]),
            vec![(4, IMPLIED_WEIGHT / 2.0), (18, IMPLIED_WEIGHT / 2.0)]
        );
        let batches = two.replace("size", "batches");
        assert_eq!(
            places(task, &batches, &named, &[]),
            vec![(18, IMPLIED_WEIGHT)]
        );
        // Without a word of None, nothing; "nonetheless" is not None.
        assert!(places("price is wrong for kind c", text, &named, &[]).is_empty());
        assert!(places("price fails nonetheless", text, &named, &[]).is_empty());
    }

    #[test]
    fn a_missing_attribute_goes_after_the_last_line_of_the_constructor() {
        let text = "class Timer:\n    def __init__(self):\n        self.start = 0\n\n    def lap(self):\n        self.laps.append(1)\n";
        assert_eq!(
            places(
                "lap() raises attributeerror: 'timer' object has no attribute 'laps'",
                text,
                &named,
                &[]
            ),
            vec![(2, IMPLIED_WEIGHT)]
        );
        let words = vec!["attributeerror".to_string()];
        assert_eq!(
            places("lap is broken", text, &named, &words),
            vec![(2, IMPLIED_WEIGHT)]
        );
        assert!(places("lap must count", text, &named, &[]).is_empty());
    }

    #[test]
    fn an_edge_case_gets_the_place_after_the_def_line_and_its_docstring() {
        let text =
            "def batches(items):\n    \"\"\"Split.\"\"\"\n    out = [items[:3]]\n    return out\n";
        assert_eq!(
            places("batches must return [] for empty input", text, &named, &[]),
            vec![(1, GUARD_WEIGHT)]
        );
    }
}
