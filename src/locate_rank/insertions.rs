//! The insertion probe's lines: the one missing line of Python that a routine omission leaves out, written from the
//! file's own code and the failing check's error, for [`super::mutants::probe`] to run against the check that fails
//! before any edit. A place where one makes that check pass is very likely where the fix adds its line (a missing
//! line has no one-token mutant). The omissions are the classic ones:
//! - a module used and never imported (the check's `NameError` names it): `import math` among the plain imports
//!   in the order of names (before the `from` ones), else after the last import;
//! - an attribute the constructor never sets (the check's `AttributeError` names it): `self.errors = []` at the end
//!   of `__init__`, its first value read from how the file uses it (`.append` a list, `.add` a set, `[k] =` a dict,
//!   `.popleft` a `deque` when the file imports one);
//! - a function that computes its result and never returns it, whose result is used: `return digits` after its
//!   last line, for the names it assigns, latest first;
//! - a collection tested for membership and never updated (`if key in seen:` and no `seen.add`): the update after
//!   the loop body's last line;
//! - a normalisation a sibling got (`key, _, value = ...` then `value = value.strip()`): the same for the other name;
//! - a normalisation one parameter got (`current = parse_day(start)`) and another read as it came did not:
//!   `end = parse_day(end)` after it;
//! - a call on the same object another method makes (`self._data.move_to_end(key)` in `put`, missing in `get`),
//!   before a `return` of a method the checks ran, when every local name it uses is bound there;
//! - an accumulator updated and never given a first value (`total += r` with no `total = 0`): the first value,
//!   from how it is updated, before the outermost loop that holds the update;
//! - a collection attribute read and never added to (`len(self.calls)` and no `self.calls.append`), or a counting
//!   dict never counted: the record, before the returns of a method the checks ran that reads it, or that makes a
//!   local and returns it without keeping it (`self.adoptions.append(record)` before `return record`);
//! - the last group a loop collects on each change (`runs.append(...)` in a block of the loop) and never after it:
//!   the same line after the loop; and the other way round, a group collected only after the loop and started
//!   afresh in it (`current = []` on a change): the collection before the fresh start;
//! - a counter started at 0 and read, never counted: `spoiled += 1` first in an `if` block of a loop;
//! - a loop's state never updated in it: a name started empty or from what the loop walks and read in the loop
//!   (`previous = None`, `previous = readings[0][1]`) given the loop's names at the end of its body (`previous =
//!   day`), a number started at 0 and read after the loop given
//!   what another update of the loop adds (`bought += qty` beside `spent += qty * price`);
//! - a pending value handed to a collecting call in the loop (`current = flush(current, tokens)`) and not after it:
//!   the same call after the loop;
//! - a group collected in its loop and never started afresh: its first value again after the collection;
//! - the parts of a split text used spaces and all (`for part in text.split(","):`): `part = part.strip()` first;
//! - a parameter looked up in a dict whose keys are all capitals (or all lower case), as it came:
//!   `code = code.strip().upper()` first in the function;
//! - a name a loop keeps adding to, not started afresh beside another that is (`length = 0` after `current = []`);
//! - a `while` loop that never moves on: its name stepped by the local the function computes and never reads
//!   (`current += step`), or by 1;
//! - a cap the file defines and never applies (`amount = min(amount, MAX_FINE)`), where a function concerns it;
//! - a guard a docstring promises (`"..., or None when ..."`: `if not interval: return None`);
//! - a list sorted before an order statistic is taken of it (`seconds.sort()` in `median_time`);
//! - a case a docstring promises (`"a lowercase slug"`: `text = text.lower()`);
//! - the update of one name of a loop's pair copied for the other (`table[away] += DRAW_POINTS`);
//! - a constant defined and never read put to use: defaults merged under keyword parameters
//!   (`values = {**DEFAULTS, **values}`), a comment marker cut off a text (`text.split(COMMENT)[0].strip()`);
//! - a loop's `continue` or `break` missing at the end of an `if` block the checks ran;
//! - a result a loop never gathers into (a tuple of its names a docstring writes too), a dict entry a loop zeroes
//!   and never adds to, a dict key counted into before it has a value, a method's parameter never
//!   read, a log parameter never written that another function walks as tuples ([`untouched`]);
//! - a count a dict literal starts at 0 and no line counts, a branch that finds the other answer and falls through
//!   to the usual one, a function that returns inside a loop and falls off its end, a normalising function a loop
//!   never calls, an item a search loop finds and never returns ([`forgotten`]);
//! - a parameter never read written into the item a loop finds, a list under a dict's key tested for membership
//!   and never added to, an amount a guard checks a parameter against and never takes it from, a total kept beside
//!   the list of its parts and never added to, the other half of an exchange between two keys of a dict, a
//!   remainder worked out from a kept amount and a parameter and never kept ([`stored`]).
//!
//! Pure: text in, lines out.

mod counterparts;
mod forgotten;
mod idioms;
mod stored;
mod untouched;

pub(super) use forgotten::normalising;

use std::collections::HashSet;

use super::executed::Reach;
use super::failing::Missing;
use super::{defines, definition, implied, is_name, prose_lines, tokens, without_strings};

/// One line to insert: after the 1-based line `after`, the text `line` (its indentation included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Insertion {
    /// The 1-based line it goes after.
    pub after: usize,
    /// The new line, indented, without a line ending.
    pub line: String,
    /// The check's error names what the line supplies (a module, an attribute, a `None` used as a value).
    pub told: bool,
}

/// The most names of one line a conversion is told for ([`numbers_told`]).
const MAX_CONVERTED: usize = 3;

/// The conversions a `TypeError` of a text used as a number tells ([`Missing::Number`]), for the 1-based line `at`
/// of `text` that the error names: each local of its function that the line reads (`total += amount`) made a
/// number just before it (`amount = float(amount)`, then `int`), at most [`MAX_CONVERTED`] names; a parameter no
/// line before it binds again is converted first where the body starts, once, before any loop that reads it.
pub(super) fn numbers_told(text: &str, at: usize) -> Vec<Insertion> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let Some(k) = at.checked_sub(1).filter(|&k| k < lines.len()) else {
        return Vec::new();
    };
    let defs = Def::all(&lines);
    let Some(d) = defs.iter().find(|d| d.body.contains(&k)) else {
        return Vec::new();
    };
    let toks = tokens(&code_of(lines[k]));
    let mut names: Vec<&String> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let called = toks.get(i + 1).is_some_and(|n| n == "(");
        let attribute = i > 0 && toks[i - 1] == ".";
        if is_name(t) && d.bound.contains(t) && !called && !attribute && !names.contains(&t) {
            names.push(t);
        }
    }
    // The value before the target of an augmented assignment (`total += amount`: `amount` first).
    if toks
        .get(1)
        .is_some_and(|o| o.ends_with('=') && o.len() == 2)
        && names.len() > 1
    {
        names.rotate_left(1);
    }
    let indent = indent_of(lines[k]);
    let prose = prose_lines(&lines.join("\n"));
    let start = counterparts::body_start(d, &prose);
    let mut out = Vec::new();
    for name in names.into_iter().take(MAX_CONVERTED) {
        let rebound = d
            .body
            .iter()
            .take_while(|&&b| b < k)
            .any(|&b| defines(&tokens(&code_of(lines[b]))).contains(name));
        let first = start.filter(|&s| d.params.contains(name) && !rebound && s + 1 < k);
        let places = first
            .map(|s| (s + 1, d.indent.as_str()))
            .into_iter()
            .chain([(k, indent)]);
        for (after, indent) in places {
            for conv in ["float", "int"] {
                out.push(Insertion {
                    after,
                    line: format!("{indent}{name} = {conv}({name})"),
                    told: true,
                });
            }
        }
    }
    out
}

/// The most insertions written for one file.
pub(super) const MAX_INSERTIONS: usize = 16;

/// The most names `return NAME` is tried with for one function.
const MAX_RETURNS: usize = 2;

/// Calls that are not an object's state kept in step (copying them elsewhere fixes nothing).
const NOT_COPIED: &[&str] = &[
    "print", "super", "assert", "raise", "return", "del", "yield",
];

/// One kind of missing line: the lines of a file and its functions in, (0-based line after which, line) out.
type Kind = fn(&[&str], &[Def]) -> Vec<(usize, String)>;

/// The kinds of missing line no error tells, after the records and the copied calls, in the order they are tried.
const UNTOLD: &[Kind] = &[
    last_group_flushes,
    group_flushes_on_change,
    counters_never_counted,
    forgotten::attribute_counts_never_counted,
    loop_state_never_updated,
    untouched::results_never_gathered,
    untouched::dicts_beside_never_written,
    untouched::groups_never_filled,
    untouched::zeros_never_added_to,
    untouched::capped_parameters_never_added,
    untouched::loop_values_never_used,
    untouched::counts_never_started,
    untouched::parameters_never_read,
    untouched::logs_never_written,
    untouched::refusals_never_logged,
    untouched::rankings_never_sorted,
    stored::parameters_never_stored,
    stored::keys_never_kept,
    stored::fields_never_marked,
    stored::withdrawals_never_taken,
    stored::totals_beside_parts,
    stored::exchanges_left_half_done,
    stored::shares_never_taken,
    stored::remainders_never_kept,
    stored::returned_amounts_never_kept,
    stored::numbers_never_handed_on,
    stored::thresholds_never_spent,
    stored::units_never_used,
    stored::entries_never_used,
    stored::resets_left_out,
    stored::latest_never_kept,
    stored::taken_never_reset,
    stored::kept_lists_never_sorted,
    counterparts::kept_pairs_left_half_done,
    counterparts::opposites_never_undone,
    stored::entries_never_restarted,
    untouched::comprehension_filters_left_out,
    forgotten::key_counts_never_counted,
    forgotten::tallies_never_counted,
    forgotten::entry_counts_never_counted,
    forgotten::counts_from_unread_tables,
    forgotten::entries_never_taken,
    forgotten::last_values_never_returned,
    forgotten::numbers_never_stepped,
    forgotten::budgets_never_changed,
    forgotten::records_never_kept,
    forgotten::returns_fallen_through,
    forgotten::ends_fallen_off,
    forgotten::found_never_returned,
    forgotten::normalisers_never_called,
    forgotten::helpers_never_called,
    groups_never_reset,
    split_parts_stripped,
    siblings_never_reset,
    while_never_advances,
    caps_never_applied,
    guards_never_written,
    order_never_sorted,
    case_never_normalised,
    sibling_updates,
    unread_constants_applied,
    unread_numbers_applied,
    unread_characters_stripped,
    keys_in_case,
    forgotten::streaks_never_reset,
    forgotten::pool_items_never_taken,
    forgotten::moved_items_never_taken_out,
    forgotten::marks_never_kept,
    forgotten::chosen_never_taken,
    forgotten::totals_never_reset_on_change,
    forgotten::nones_never_dropped,
    counterparts::counterparts_never_updated,
    counterparts::partner_writes_left_out,
    counterparts::parameters_never_normalised,
    counterparts::sibling_constants_never_read,
    counterparts::amounts_never_listed,
    counterparts::opposite_updates_left_out,
    counterparts::transfers_left_half_done,
    counterparts::checks_never_made,
    idioms::siblings_converted_anywhere,
    idioms::read_rows_never_converted,
    idioms::headings_never_skipped,
];

/// The insertions for the Python file `text`, those the error `missing` tells first, then the others, at most
/// `most` (the probe gives [`MAX_INSERTIONS`] when it runs one check a mutant), each a line the file does not
/// already hold at that place. `reach`: what the checks ran of the file (the copied calls go only into functions
/// they ran).
pub(super) fn of_file(
    text: &str,
    missing: &[Missing],
    reach: Option<&[Reach]>,
    most: usize,
) -> Vec<Insertion> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let defs = Def::all(&lines);
    let mut out = Vec::new();
    let mut add = |after0: usize, line: String, told: bool| {
        let doubled = lines
            .get(after0 + 1)
            .is_some_and(|n| n.trim() == line.trim())
            || lines[after0].trim() == line.trim();
        if !doubled
            && !out
                .iter()
                .any(|i: &Insertion| i.after == after0 + 1 && i.line == line)
        {
            out.push(Insertion {
                after: after0 + 1,
                line,
                told,
            });
        }
    };
    let none_used = missing.contains(&Missing::Value);
    for m in missing {
        match m {
            Missing::Name(name) => {
                if let Some(at) = import_for(text, &lines, name) {
                    add(at, format!("import {name}"), true);
                }
            }
            Missing::Attribute(name) => {
                for (at, line) in attribute_inits(&lines, &defs, name) {
                    add(at, line, true);
                }
            }
            Missing::Unbound(_) | Missing::Value | Missing::Number => {}
        }
    }
    for (at, line, name) in accumulator_inits(&lines, &defs) {
        let told = missing.contains(&Missing::Unbound(name));
        add(at, line, told);
    }
    for (at, line) in returns(&lines, &defs) {
        add(at, line, none_used);
    }
    let records = attribute_records(&lines, &defs, reach);
    let copied = reach.map_or_else(Vec::new, |r| copied_calls(&lines, &defs, r));
    let kinds = |list: &[Kind]| {
        list.iter()
            .flat_map(|kind| kind(&lines, &defs))
            .collect::<Vec<_>>()
    };
    let untold = [
        kinds(&[membership_updates, stored::keyed_members_never_added]),
        records,
        kinds(&[sibling_normalisations, parameter_normalisations]),
        copied,
        kinds(UNTOLD),
    ];
    for (at, line) in untold.into_iter().flatten() {
        add(at, line, false);
    }
    for (at, line) in loop_exits(&lines, &defs, reach) {
        add(at, line, false);
    }
    // Told first, each kind in the order written.
    out.sort_by_key(|i| !i.told);
    out.truncate(most);
    out
}

/// The generic insertions ([`idioms`]) for the Python file `text`, in the functions holding its 0-based lines
/// `near` (best ranked first), each a line the file does not already hold at that place.
pub(super) fn generic(
    text: &str,
    reach: Option<&[Reach]>,
    near: &[usize],
    task: &str,
) -> Vec<Insertion> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let prose = prose_lines(text);
    let mut seen = HashSet::new();
    idioms::of_defs(&lines, &prose, reach, near, task)
        .into_iter()
        .filter(|(after0, line)| {
            let doubled = lines
                .get(after0 + 1)
                .is_some_and(|n| n.trim() == line.trim())
                || lines[*after0].trim() == line.trim();
            !doubled && seen.insert((*after0, line.clone()))
        })
        .map(|(after0, line)| Insertion {
            after: after0 + 1,
            line,
            told: false,
        })
        .collect()
}

/// Whether the checks ran the 0-based line `k`; with no `reach`, every line may have run.
fn ran_at(reach: Option<&[Reach]>, k: usize) -> bool {
    reach.is_none_or(|r| {
        matches!(
            r.get(k),
            Some(Reach::Failing | Reach::FailingAndBefore | Reach::Ran)
        )
    })
}

/// `text` with the line `line` inserted after its 1-based line `after` (with that line's ending; a last line
/// without one gets `\n`).
pub(super) fn with_inserted(text: &str, after: usize, line: &str) -> String {
    let mut out = String::with_capacity(text.len() + line.len() + 2);
    for (k, l) in text.split_inclusive('\n').enumerate() {
        out.push_str(l);
        if k + 1 == after {
            let ending = if l.ends_with("\r\n") { "\r\n" } else { "\n" };
            if !l.ends_with('\n') {
                out.push_str(ending);
            }
            out.push_str(line);
            // The inserted line ends as the line before it did (a last line without an ending stays without one).
            if l.ends_with('\n') {
                out.push_str(ending);
            }
        }
    }
    out
}

/// One function (or method) of the file.
struct Def {
    /// Its name.
    name: String,
    /// The body's last line (0-based).
    last: usize,
    /// The lines (0-based) of its body after its header, blank lines left out.
    body: Vec<usize>,
    /// The indentation of its body's first line.
    indent: String,
    /// Its parameters.
    params: HashSet<String>,
    /// Its parameters and every name its body assigns (`x =`, `for x in`, `as x`, `import x`).
    bound: HashSet<String>,
}

/// A loop of a function's body: where its header stands and the lines of its block.
struct Loop {
    /// The header's index in the body (`Def::body`), and its indentation's width.
    at: usize,
    depth: usize,
    /// The block's lines (0-based), never empty: its first and last.
    block: Vec<usize>,
    first: usize,
    end: usize,
}

impl Def {
    /// The loops of its body whose header starts with one of `heads` (`for`, `while`) and that have a block, given
    /// the tokens `toks` of each body line ([`Def::tokens`]).
    fn loops(&self, lines: &[&str], toks: &[Vec<String>], heads: &[&str]) -> Vec<Loop> {
        let mut out = Vec::new();
        for (k, t) in toks.iter().enumerate() {
            if !t.first().is_some_and(|h| heads.contains(&h.as_str())) {
                continue;
            }
            let depth = indent_of(lines[self.body[k]]).len();
            let block = block_below(lines, &self.body[k + 1..], depth);
            if let (Some(&first), Some(&end)) = (block.first(), block.last()) {
                out.push(Loop {
                    at: k,
                    depth,
                    block,
                    first,
                    end,
                });
            }
        }
        out
    }

    /// The lines (0-based) of the docstring its body opens with, if any: the prose lines before its first code.
    fn docstring(&self, prose: &[bool]) -> Vec<usize> {
        let doc = self.body.iter().copied();
        doc.take_while(|&b| prose.get(b) == Some(&true)).collect()
    }

    /// The code tokens of each line of its body, strings and comments left out.
    fn tokens(&self, lines: &[&str]) -> Vec<Vec<String>> {
        self.body
            .iter()
            .map(|&b| tokens(&code_of(lines[b])))
            .collect()
    }

    /// The tokens of its `def` line: its parameters in the order written, with their defaults.
    fn header(&self, lines: &[&str]) -> Vec<String> {
        let first = self.body.first().copied().unwrap_or(0);
        let def = (0..first)
            .rev()
            .find(|&k| matches!(first_word(lines[k]).as_str(), "def" | "async"));
        def.map_or_else(Vec::new, |k| tokens(&code_of(lines[k])))
    }

    /// The file's functions and methods, in order (a nested function is one of its own, and its lines are its
    /// enclosing function's too).
    fn all(lines: &[&str]) -> Vec<Def> {
        let mut out = Vec::new();
        for (d, line) in lines.iter().enumerate() {
            let toks = tokens(&without_strings(line));
            if toks.first().is_some_and(|t| t == "class") || definition(&toks).is_none() {
                continue;
            }
            if !matches!(toks.first().map(String::as_str), Some("def" | "async")) {
                continue;
            }
            // The header ends at the first line ending in `:` (a signature over several lines).
            let Some(end) =
                (d..lines.len().min(d + 20)).find(|&k| code_of(lines[k]).trim_end().ends_with(':'))
            else {
                continue;
            };
            let mut header = Vec::new();
            for l in &lines[d..=end] {
                header.extend(tokens(&without_strings(l)));
            }
            let body: Vec<usize> = super::body_lines(lines, d)
                .into_iter()
                .filter(|&b| b > end)
                .collect();
            let Some(&first) = body.first() else { continue };
            let params = defines(&header);
            let mut bound = params.clone();
            for &b in &body {
                bound.extend(defines(&tokens(&without_strings(lines[b]))));
            }
            out.push(Def {
                name: definition(&toks).unwrap_or_default().to_string(),
                last: body.last().copied().unwrap_or(first),
                indent: indent_of(lines[first]).to_string(),
                body,
                params,
                bound,
            });
        }
        out
    }
}

/// A line's leading whitespace.
fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// A line without its comment and with its strings blanked.
fn code_of(line: &str) -> String {
    let code = without_strings(line);
    match code.find('#') {
        Some(i) => code[..i].to_string(),
        None => code,
    }
}

/// A line without its comment, its strings kept (`job["due"]`).
fn code_with_strings(line: &str) -> &str {
    match without_strings(line).chars().position(|c| c == '#') {
        Some(n) => &line[..line.char_indices().nth(n).map_or(line.len(), |(i, _)| i)],
        None => line,
    }
}

/// The first token of a line's code.
fn first_word(line: &str) -> String {
    tokens(&code_of(line))
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// Whether a line ends its block's flow: what follows it in the block never runs.
pub(super) fn ends_flow(line: &str) -> bool {
    matches!(
        first_word(line).as_str(),
        "return" | "raise" | "continue" | "break"
    )
}

/// Where `import name` goes (0-based line after which) in `text` (its `lines`), when the file defines `name`
/// nowhere.
fn import_for(text: &str, lines: &[&str], name: &str) -> Option<usize> {
    let defined = lines
        .iter()
        .any(|l| defines(&tokens(&without_strings(l))).contains(name));
    if defined {
        return None;
    }
    implied::import_spot(lines, &prose_lines(text), name)
}

/// `self.NAME = ...` at the end of each `__init__`, when the file reads `self.NAME` and never assigns it: its first
/// value from how the file uses it.
fn attribute_inits(lines: &[&str], defs: &[Def], name: &str) -> Vec<(usize, String)> {
    let attr = format!("self.{name}");
    let (attr_ref, len) = (attr.as_str(), attr.len());
    let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
    let uses: Vec<&str> = code
        .iter()
        .flat_map(|l| l.match_indices(attr_ref).map(move |(i, _)| &l[i + len..]))
        .filter(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        .collect();
    let assigned = uses.iter().any(|rest| {
        let r = rest.trim_start();
        (r.starts_with('=') && !r.starts_with("==")) || r.starts_with(':')
    });
    if uses.is_empty() || assigned {
        return Vec::new();
    }
    let used_as = |methods: &[&str]| {
        uses.iter()
            .any(|r| methods.iter().any(|m| r.starts_with(&format!(".{m}("))))
    };
    // A queue's ends: a `deque`, by the name the file imports it under (a list has no `popleft`).
    let deque = if lines.iter().any(|l| {
        let t = tokens(&code_of(l));
        t.first().is_some_and(|f| f == "from") && t.iter().any(|w| w == "deque")
    }) {
        Some("deque()")
    } else {
        let imported = lines
            .iter()
            .any(|l| code_of(l).trim() == "import collections");
        imported.then_some("collections.deque()")
    };
    let value = if let Some(d) = deque.filter(|_| used_as(&["popleft", "appendleft", "rotate"])) {
        d
    } else if used_as(&["append", "extend", "insert", "pop", "remove", "sort"]) {
        "[]"
    } else if used_as(&["add", "discard"]) {
        "set()"
    } else if uses.iter().any(|r| r.starts_with('['))
        || used_as(&["get", "items", "keys", "values", "setdefault", "update"])
    {
        "{}"
    } else if uses.iter().any(|r| {
        let r = r.trim_start();
        r.starts_with("+=") || r.starts_with("-=")
    }) {
        "0"
    } else {
        "None"
    };
    defs.iter()
        .filter(|d| d.name == "__init__" && d.bound.contains("self"))
        .map(|d| (d.last, format!("{}{attr} = {value}", d.indent)))
        .collect()
}

/// `return NAME` after the last line of each function that returns no value although its result is used (a call
/// of it that is not a statement of its own, or, for a function that is no method, no call in the file at all: the
/// checks call it), for the names it
/// assigns (in a nested block too, a parameter it reassigns included), the latest first.
fn returns(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let returns_value = d.body.iter().any(|&b| {
            let toks = tokens(&code_of(lines[b]));
            matches!(toks.first().map(String::as_str), Some("yield"))
                || toks.first().is_some_and(|t| t == "return") && toks.len() > 1
        });
        let last = lines[d.last];
        if d.name == "__init__" || returns_value || ends_flow(last) || last.trim() == "pass" {
            continue;
        }
        let method = d.params.contains("self") || d.params.contains("cls");
        if !result_used(lines, &d.name) && (method || called(lines, &d.name)) {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for &b in d.body.iter().rev() {
            // Assignments, in a nested block too (`if ...: digits = digits[1:]`); not a loop's variable.
            let toks = tokens(&code_of(lines[b]));
            if toks
                .first()
                .is_some_and(|t| t == "for" || t == "def" || t == "with")
            {
                continue;
            }
            let mut assigned: Vec<String> = defines(&toks).into_iter().collect();
            assigned.sort();
            for n in assigned {
                if n != "_" && n != "self" && !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        for n in names.into_iter().take(MAX_RETURNS) {
            out.push((d.last, format!("{}return {n}", d.indent)));
        }
    }
    out
}

/// Whether some line of the file calls the function `name` (`name(`, not its `def`).
fn called(lines: &[&str], name: &str) -> bool {
    lines.iter().any(|l| {
        let toks = tokens(&code_of(l));
        toks.windows(2)
            .any(|w| w[0] == name && w[1] == "(" && toks.first().is_none_or(|t| t != "def"))
    })
}

/// Whether some call of the function `name` uses its result: a call that is not a statement on its own.
fn result_used(lines: &[&str], name: &str) -> bool {
    lines.iter().any(|l| {
        let toks = tokens(&code_of(l));
        (0..toks.len().saturating_sub(1)).any(|k| {
            if toks[k] != name || toks[k + 1] != "(" {
                return false;
            }
            // `def name(` is no call; `self.name(` is a method's.
            let start = if k >= 2 && toks[k - 1] == "." && toks[k - 2] == "self" {
                k - 2
            } else {
                k
            };
            let before = start.checked_sub(1).map(|p| toks[p].as_str());
            !matches!(before, None | Some("def" | "."))
        })
    })
}

/// The update of a collection a function tests for membership and never updates (`seen = set()`, then
/// `if key in seen:` and no `seen.add`): just after the test's own block where that block leaves (`continue`),
/// then after the last line the test's block runs, at the test's indentation (`if x not in seen:`: at the end of
/// its own block).
fn membership_updates(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for &b in &d.body {
            let toks = tokens(&code_of(lines[b]));
            for (name, kind) in collection_starts(&toks) {
                let name = &name;
                if updated(lines, &d.body, name) {
                    continue;
                }
                for &t in d.body.iter().filter(|&&t| t > b) {
                    let test = tokens(code_with_strings(lines[t]));
                    let Some((item, negated)) = membership_test(&test, name) else {
                        continue;
                    };
                    let update = match kind {
                        "set" => format!("{name}.add({item})"),
                        "list" => format!("{name}.append({item})"),
                        _ => format!("{name}[{item}] = True"),
                    };
                    let depth = indent_of(lines[t]).len();
                    let inner = |k: &usize| *k > t && indent_of(lines[*k]).len() > depth;
                    let block: Vec<usize> = if negated {
                        d.body
                            .iter()
                            .copied()
                            .skip_while(|k| *k <= t)
                            .take_while(|k| inner(k))
                            .collect()
                    } else {
                        let rest = d.body.iter().copied().skip_while(|k| *k <= t);
                        rest.take_while(|k| indent_of(lines[*k]).len() >= depth)
                            .collect()
                    };
                    let Some(&end) = block.last() else { continue };
                    // A test whose own block leaves (`if family in seen: continue`): the item is new just after it.
                    let own: Vec<usize> = d
                        .body
                        .iter()
                        .copied()
                        .skip_while(|k| *k <= t)
                        .take_while(|k| inner(k))
                        .collect();
                    let leaves = own.last().is_some_and(|&l| ends_flow(lines[l]));
                    if !negated && leaves && own.last() != Some(&end) {
                        out.push((
                            own[own.len() - 1],
                            format!("{}{update}", indent_of(lines[t])),
                        ));
                    }
                    let indent = if negated {
                        indent_of(lines[block[0]])
                    } else {
                        indent_of(lines[t])
                    };
                    // Before a last statement that leaves the block.
                    let at = if ends_flow(lines[end]) && indent_of(lines[end]) == indent {
                        match block.iter().rev().nth(1) {
                            Some(&p) => p,
                            None => t,
                        }
                    } else {
                        end
                    };
                    out.push((at, format!("{indent}{update}")));
                }
            }
        }
    }
    out
}

/// The names a line starts as empty collections, with their kinds: `seen = set()`, or each of a tuple's
/// (`seen, result = set(), []`).
fn empty_starts(toks: &[String]) -> Vec<(String, &'static str)> {
    if let Some(kind) = empty_collection(toks) {
        return vec![(toks[0].clone(), kind)];
    }
    let Some(eq) = toks.iter().position(|t| t == "=") else {
        return Vec::new();
    };
    let names: Vec<&String> = toks[..eq].iter().step_by(2).collect();
    let commas = toks[..eq].iter().skip(1).step_by(2).all(|t| t == ",");
    if names.len() < 2 || !commas || !names.iter().all(|n| is_name(n)) {
        return Vec::new();
    }
    // The values, split at the commas outside brackets.
    let mut values: Vec<Vec<String>> = vec![Vec::new()];
    let mut depth = 0usize;
    for t in &toks[eq + 1..] {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                values.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(v) = values.last_mut() {
            v.push(t.clone());
        }
    }
    if values.len() != names.len() {
        return Vec::new();
    }
    names
        .into_iter()
        .zip(values)
        .filter_map(|(n, v)| {
            let line: Vec<String> = [n.clone(), "=".to_string()].into_iter().chain(v).collect();
            empty_collection(&line).map(|kind| (n.clone(), kind))
        })
        .collect()
}

/// The collections a line starts ([`empty_starts`]), and a set or a list it makes of another's items
/// (`seen = set(designs_on_file)`).
fn collection_starts(toks: &[String]) -> Vec<(String, &'static str)> {
    let mut out = empty_starts(toks);
    if let [name, eq, made, open, .., close] = toks
        && out.is_empty()
        && is_name(name)
        && eq == "="
        && open == "("
        && close == ")"
        && !toks[4..toks.len() - 1].iter().any(|t| t == "(" || t == ")")
    {
        match made.as_str() {
            "set" => out.push((name.clone(), "set")),
            "list" => out.push((name.clone(), "list")),
            _ => {}
        }
    }
    out
}

/// The kind of empty collection a line `NAME = set()` / `[]` / `{}` / `dict()` / `list()` starts, if it does.
fn empty_collection(toks: &[String]) -> Option<&'static str> {
    let rest: Vec<&str> = toks.iter().skip(2).map(String::as_str).collect();
    if toks.len() < 3 || !is_name(&toks[0]) || toks[1] != "=" {
        return None;
    }
    match rest.as_slice() {
        ["set", "(", ")"] => Some("set"),
        ["[", "]"] | ["list", "(", ")"] => Some("list"),
        ["{", "}"] | ["dict", "(", ")"] => Some("dict"),
        _ => None,
    }
}

/// The first value of an accumulator a function updates (`total += r`, `seen.add(x)`, `rows.append(r)`) and never
/// assigns, nor takes as a parameter: `total = 0` (`[]`, `set()`, `{}`, `""` from how it is updated) before the
/// outermost loop that holds its first update, or else before that update; each with the name.
fn accumulator_inits(lines: &[&str], defs: &[Def]) -> Vec<(usize, String, String)> {
    let mut out: Vec<(usize, String, String)> = Vec::new();
    for d in defs {
        let toks_of = |b: usize| tokens(&code_of(lines[b]));
        for &b in &d.body {
            let toks = toks_of(b);
            let Some(name) = toks.first().filter(|n| is_name(n) && *n != "self") else {
                continue;
            };
            let value = match toks.get(1).map(String::as_str) {
                Some("+=") => match toks.get(2).map(String::as_str) {
                    Some("\"" | "'") => "\"\"",
                    Some("[") => "[]",
                    _ => "0",
                },
                Some("-=") => "0",
                Some("*=") => "1",
                Some(".") => match toks.get(2).map(String::as_str) {
                    Some("append" | "extend" | "insert")
                        if toks.get(3).is_some_and(|o| o == "(") =>
                    {
                        "[]"
                    }
                    Some("add") if toks.get(3).is_some_and(|o| o == "(") => "set()",
                    _ => continue,
                },
                _ => continue,
            };
            let set_here = d.body.iter().any(|&o| {
                let t = toks_of(o);
                let plain = t.first() == Some(name) && t.get(1).is_some_and(|e| e == "=");
                let global = t.first().is_some_and(|g| g == "global" || g == "nonlocal");
                let looped = t.first().is_some_and(|f| f == "for" || f == "with")
                    && defines(&t).contains(name);
                plain || looped || (global && t.contains(name))
            });
            // A module's name (`sys.path.append`) or a global is no local to start.
            let module = lines.iter().any(|l| {
                !l.starts_with(char::is_whitespace) && defines(&tokens(&code_of(l))).contains(name)
            });
            let seen = out.iter().any(|(_, _, n)| n == name);
            if set_here || module || seen || d.params.contains(name) {
                continue;
            }
            // The outermost loop of the function that holds the update.
            let mut depth = indent_of(lines[b]).len();
            let mut at = b;
            for &p in d.body.iter().rev().filter(|&&p| p < b) {
                let i = indent_of(lines[p]).len();
                if i < depth {
                    depth = i;
                    if matches!(first_word(lines[p]).as_str(), "for" | "while") {
                        at = p;
                    }
                }
            }
            let before = d.body.iter().rev().find(|&&p| p < at).copied();
            let before = before.unwrap_or(d.body[0].saturating_sub(1));
            let line = format!("{}{name} = {value}", indent_of(lines[at]));
            out.push((before, line, name.clone()));
        }
    }
    out
}

/// The record of what a method permits or sees, in a collection attribute the file reads and never adds to
/// (`self.calls = []`, then `len(self.calls)`, never `self.calls.append`): `self.calls.append(now)` before each
/// `return` of the method's own block that ran (and after its last line, when that is no `return`), in each method
/// the checks ran that reads it or that makes a local and returns it (`return record`: made and never kept), for
/// its latest locals and else its parameters, at most two.
fn attribute_records(
    lines: &[&str],
    defs: &[Def],
    reach: Option<&[Reach]>,
) -> Vec<(usize, String)> {
    let all: Vec<usize> = (0..lines.len()).collect();
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for &b in &init.body {
            let toks = tokens(&code_of(lines[b]));
            let [s, dot, name, rest @ ..] = toks.as_slice() else {
                continue;
            };
            let kind = {
                let mut as_local = vec![name.clone()];
                as_local.extend(rest.iter().cloned());
                empty_collection(&as_local)
            };
            if s != "self" || dot != "." || updated(lines, &all, name) {
                continue;
            }
            if !matches!(kind, Some("list" | "set" | "dict")) {
                continue;
            }
            let attr = format!("self.{name}");
            for d in defs.iter().filter(|d| d.name != "__init__") {
                let reads = d.body.iter().any(|&k| code_of(lines[k]).contains(&attr));
                // Or a method that makes a record and hands it back without keeping it (`return record`).
                let makes = d.body.iter().any(|&k| {
                    let t = tokens(&code_of(lines[k]));
                    matches!(t.as_slice(), [r, x] if r == "return" && d.bound.contains(x) && !d.params.contains(x))
                });
                if !(reads || makes) || !d.body.iter().any(|&k| ran_at(reach, k)) {
                    continue;
                }
                for call in records(lines, d, &attr, kind) {
                    for (k, &r) in d.body.iter().enumerate() {
                        let own = indent_of(lines[r]) == d.indent;
                        let last = k + 1 == d.body.len();
                        if own && first_word(lines[r]) == "return" && ran_at(reach, r) && k > 0 {
                            out.push((d.body[k - 1], format!("{}{call}", d.indent)));
                        } else if own && last && !ends_flow(lines[r]) {
                            out.push((r, format!("{}{call}", d.indent)));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The records a method `d` may keep in the collection attribute `attr` of `kind`: a list's `.append` or a set's
/// `.add` of its latest locals and else its parameters, a counting dict's `attr[k] = attr.get(k, 0) + 1` for each
/// `attr.get(k, 0)` it reads; at most [`MAX_RETURNS`].
fn records(lines: &[&str], d: &Def, attr: &str, kind: Option<&str>) -> Vec<String> {
    if kind == Some("dict") {
        let get = format!("{attr}.get(");
        let mut out: Vec<String> = Vec::new();
        for &k in &d.body {
            let code = code_of(lines[k]);
            for (at, _) in code.match_indices(&get) {
                let rest = &code[at + get.len()..];
                let Some((key, _)) = rest.split_once(", 0)") else {
                    continue;
                };
                let simple = key.split('.').all(is_name);
                let call = format!("{attr}[{key}] = {attr}.get({key}, 0) + 1");
                if simple && !out.contains(&call) {
                    out.push(call);
                }
            }
        }
        out.truncate(MAX_RETURNS);
        return out;
    }
    let method = if kind == Some("set") { "add" } else { "append" };
    let mut items: Vec<String> = Vec::new();
    for &k in d.body.iter().rev() {
        let t = tokens(&code_of(lines[k]));
        if t.len() > 2 && is_name(&t[0]) && t[1] == "=" && !items.contains(&t[0]) {
            items.push(t[0].clone());
        }
    }
    let mut params: Vec<String> = d.params.iter().filter(|&p| p != "self").cloned().collect();
    params.sort();
    items.extend(params);
    items
        .iter()
        .take(MAX_RETURNS)
        .map(|item| format!("{attr}.{method}({item})"))
        .collect()
}

/// The lines of a body after a line indented `depth` deep that are indented deeper: the block that line opens.
fn block_below(lines: &[&str], rest: &[usize], depth: usize) -> Vec<usize> {
    rest.iter()
        .copied()
        .take_while(|&b| indent_of(lines[b]).len() > depth)
        .collect()
}

/// The last group a loop collects on each change (`runs.append((current, count))` in a block of the loop's body)
/// and never after it: the same line after the loop, at the loop's indentation, when every name it uses is bound
/// before the loop.
fn last_group_flushes(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            if !matches!(first_word(lines[f]).as_str(), "for" | "while") {
                continue;
            }
            let depth = indent_of(lines[f]).len();
            let body = block_below(lines, &d.body[k + 1..], depth);
            let Some(&end) = body.last() else { continue };
            let before: HashSet<String> = d
                .params
                .iter()
                .cloned()
                .chain(
                    d.body[..k]
                        .iter()
                        .flat_map(|&b| defines(&tokens(&code_of(lines[b])))),
                )
                .collect();
            let after = &d.body[k + 1 + body.len()..];
            for &a in &body {
                let toks = tokens(&code_of(lines[a]));
                let appends =
                    toks.len() > 4 && is_name(&toks[0]) && toks[1] == "." && toks[2] == "append";
                // Or a pending value handed to a call that collects it and starts it afresh
                // (`current = flush(current, tokens)`).
                let flushes = toks.len() > 5
                    && is_name(&toks[0])
                    && toks[1] == "="
                    && is_name(&toks[2])
                    && toks[3] == "("
                    && toks[4..].contains(&toks[0]);
                let from = if flushes { 4 } else { 3 };
                // In a nested block (on a change), of a collection started before the loop.
                let nested = indent_of(lines[a]).len() > indent_of(lines[body[0]]).len();
                let names_bound = toks
                    .iter()
                    .skip(from)
                    .filter(|t| is_name(t))
                    .all(|t| before.contains(t));
                let call = lines[a].trim();
                let already = after.iter().any(|&n| lines[n].trim() == call);
                if (appends || flushes)
                    && nested
                    && names_bound
                    && before.contains(&toks[0])
                    && !already
                {
                    out.push((end, format!("{}{call}", indent_of(lines[f]))));
                }
            }
        }
    }
    out
}

/// The most places one counter never counted is counted at.
const MAX_COUNTED: usize = 3;

/// A counter a function starts at 0 and returns or reads, and never updates but to start it at 0 again
/// (`spoiled = 0` ... `return counts, spoiled`): `spoiled += 1` first in each `if` block of a loop after it (the
/// case it counts), at most [`MAX_COUNTED`]; and just before the first `if` of a loop that tests it (`stamps += 1`
/// before `if stamps == STAMPS_FOR_FREE:`, after a guard that skips the item).
fn counters_never_counted(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let starts = (0..toks.len()).flat_map(|k| {
            first_values(lines[d.body[k]])
                .into_iter()
                .filter(|(_, v)| v == "0")
                .map(move |(name, _)| (k, name))
        });
        for (k, name) in starts {
            let name = &name;
            let mut read = false;
            let mut set = false;
            for u in &toks[k + 1..] {
                for (i, w) in u.iter().enumerate() {
                    if w != name || (i > 0 && u[i - 1] == ".") {
                        continue;
                    }
                    let next = u.get(i + 1).map(String::as_str);
                    let reset = next == Some("=") && u.len() == 3 && u[2] == "0";
                    if i == 0 && matches!(next, Some("=" | "+=" | "-=")) {
                        set |= !reset;
                    } else {
                        read = true;
                    }
                }
            }
            if set || !read {
                continue;
            }
            let in_loop = |j: usize| {
                (k + 1..j).any(|l| {
                    matches!(toks[l].first().map(String::as_str), Some("for" | "while"))
                        && indent_of(lines[d.body[l]]).len() < indent_of(lines[d.body[j]]).len()
                })
            };
            let blocks = (k + 1..d.body.len()).filter(|&j| {
                toks[j]
                    .first()
                    .is_some_and(|w| w == "if" || w == "elif" || w == "else")
                    && in_loop(j)
            });
            let mut tested = None;
            for j in blocks.take(MAX_COUNTED) {
                if tested.is_none() && toks[j].contains(name) && toks[j][0] == "if" {
                    tested = Some(j);
                }
                let Some(first) = d.body.get(j + 1) else {
                    continue;
                };
                if indent_of(lines[*first]).len() > indent_of(lines[d.body[j]]).len() {
                    out.push((
                        d.body[j],
                        format!("{}{name} += 1", indent_of(lines[*first])),
                    ));
                }
            }
            if let Some(j) = tested.filter(|&j| j > 0) {
                let indent = indent_of(lines[d.body[j]]);
                out.push((d.body[j - 1], format!("{indent}{name} += 1")));
            }
        }
    }
    out
}

/// The most of a loop's names one name the loop never updates is given.
const MAX_LOOP_NAMES: usize = 3;

/// The calls a loop walks what it is handed through: not what it walks.
const WALKERS: &[&str] = &[
    "zip",
    "enumerate",
    "range",
    "sorted",
    "reversed",
    "len",
    "list",
    "items",
    "values",
    "keys",
];

/// A name a function starts before a `for` loop and the loop never sets: one the loop reads that starts empty
/// (`previous = None`, then `day - previous` in the loop) or from what the loop walks (`previous = readings[0][1]`,
/// `for month, value in readings[1:]`) is given the loop's names at the end of its body (`previous = day`), then
/// those its body binds at its own depth from them (`t = to_seconds(clock)`: `previous = t`), and one started at 0
/// the loop reads added to (`used + needed > usable`) has that added (`used += needed`); a number started at 0 and read
/// after the loop (`bought = 0.0` ... `spent / bought`) has
/// those of them added to it there that another update in the loop adds (`spent += qty * price`: `bought += qty`).
fn loop_state_never_updated(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for Loop {
            at: k,
            depth,
            block,
            first,
            end,
        } in d.loops(lines, &toks, &["for"])
        {
            let t = &toks[k];
            let targets: Vec<&String> = t
                .iter()
                .skip(1)
                .take_while(|w| *w != "in")
                .filter(|w| is_name(w) && !w.starts_with('_'))
                .collect();
            let inner = &toks[k + 1..k + 1 + block.len()];
            let after = &toks[k + 1 + block.len()..];
            let indent = indent_of(lines[first]);
            // Then the names the body binds at its own depth (`t = to_seconds(clock)`), in order.
            let mut given: Vec<&String> = targets.clone();
            for (u, &l) in inner.iter().zip(&block) {
                if indent_of(lines[l]) != indent || u.first().is_some_and(|w| w == "for") {
                    continue;
                }
                // Of what the loop walks, and new to the loop (not an accumulator started before it).
                let of_item = u.iter().skip(2).any(|w| targets.contains(&w));
                let n = u.first().filter(|n| {
                    u.get(1).is_some_and(|e| e == "=")
                        && is_name(n)
                        && !n.starts_with('_')
                        && of_item
                        && !toks[..k].iter().any(|b| defines(b).contains(*n))
                });
                if let Some(n) = n.filter(|n| !given.contains(n)) {
                    given.push(n);
                }
            }
            for (j, b) in toks[..k].iter().enumerate() {
                let [name, eq, value @ ..] = b.as_slice() else {
                    continue;
                };
                let value: Vec<&str> = value.iter().map(String::as_str).collect();
                let shallow = indent_of(lines[d.body[j]]).len() <= depth;
                let set_later = toks[j + 1..k + 1 + block.len()]
                    .iter()
                    .any(|u| defines(u).contains(name));
                if !is_name(name) || eq != "=" || !shallow || set_later {
                    continue;
                }
                let zero = matches!(value.as_slice(), ["0"] | ["0", ".", "0"]);
                let empty = zero || matches!(value.as_slice(), ["None"] | ["False"]);
                // Or taken from what the loop walks (`previous = readings[0][1]`, `for month, value in
                // readings[1:]`): the value before the first one the loop sees.
                // What it walks may be handed to a call (`for prev, hour in zip(hours, hours[1:])`).
                let seeded = t
                    .iter()
                    .skip_while(|w| *w != "in")
                    .skip(1)
                    .filter(|w| is_name(w) && !WALKERS.contains(&w.as_str()))
                    .any(|w| value.contains(&w.as_str()));
                if (empty || seeded) && inner.iter().any(|u| reads(u, name)) {
                    // A loop whose last line is in a block of its own (`if` a run ends: `result.append(...)`)
                    // starts the name anew there as well (`start = hour`).
                    let deeper = indent_of(lines[end]);
                    let deeper = (seeded && deeper.len() > indent.len() && !ends_flow(lines[end]))
                        .then_some(deeper);
                    // A total started at 0 the loop reads added to (`if used + needed > usable:`): added to.
                    if let Some(x) = inner
                        .iter()
                        .find_map(|u| added_in(u, name))
                        .filter(|_| zero)
                    {
                        out.push((end, format!("{indent}{name} += {x}")));
                    }
                    for t in given.iter().filter(|t| **t != name).take(MAX_LOOP_NAMES) {
                        out.push((end, format!("{indent}{name} = {t}")));
                        if let Some(deeper) = deeper {
                            out.push((end, format!("{deeper}{name} = {t}")));
                        }
                    }
                } else if zero && after.iter().any(|u| reads(u, name)) {
                    // Beside another accumulator: the loop's names that another update adds.
                    let adds = |t: &String| {
                        inner
                            .iter()
                            .any(|u| u.get(1).is_some_and(|o| o == "+=") && u[2..].contains(t))
                    };
                    for t in targets.iter().filter(|t| adds(t)).take(MAX_LOOP_NAMES) {
                        out.push((end, format!("{indent}{name} += {t}")));
                    }
                }
            }
        }
    }
    out
}

/// The name a line's tokens `u` add to `name` itself (`used + needed`: `needed`), where it is a plain name.
fn added_in<'u>(u: &'u [String], name: &str) -> Option<&'u String> {
    u.windows(4).find_map(|w| {
        let plain = !matches!(w[3].as_str(), "(" | "." | "[");
        (w[0] == name && w[1] == "+" && is_name(&w[2]) && plain && w[2] != name).then_some(&w[2])
    })
}

/// Whether a line's tokens `u` read `name` itself, not an attribute of that name (`.name`).
fn reads(u: &[String], name: &str) -> bool {
    u.iter()
        .enumerate()
        .any(|(i, w)| w == name && (i == 0 || u[i - 1] != "."))
}

/// The parts of a text split apart and used as they came, spaces and all (`for part in text.split(","):` and no
/// `part.strip()`): `part = part.strip()` first in the loop, and `part = part.strip().lower()` where the function's
/// docstring speaks of lower case.
fn split_parts_stripped(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            let toks = tokens(&code_of(lines[f]));
            let [f0, part, inn, ..] = toks.as_slice() else {
                continue;
            };
            let splits = toks.windows(3).any(|w| {
                w[0] == "." && matches!(w[1].as_str(), "split" | "splitlines") && w[2] == "("
            });
            if f0 != "for" || inn != "in" || !is_name(part) || !splits {
                continue;
            }
            let body = block_below(lines, &d.body[k + 1..], indent_of(lines[f]).len());
            let Some(&first) = body.first() else { continue };
            let stripped = body.iter().any(|&b| {
                let t = tokens(&code_of(lines[b]));
                t.windows(3)
                    .any(|w| w[0] == *part && w[1] == "." && w[2].contains("strip"))
            });
            if !stripped {
                let indent = indent_of(lines[first]);
                out.push((f, format!("{indent}{part} = {part}.strip()")));
                // A function that says its parts come out in lower case (`a list of lowercase tags`).
                let says = d.body.iter().take(3).any(|&b| {
                    let l = lines[b].to_ascii_lowercase();
                    l.contains("lower") || l.contains(" case")
                });
                if says {
                    out.push((f, format!("{indent}{part} = {part}.strip().lower()")));
                }
            }
        }
    }
    out
}

/// The first values of a function's names, started before a loop at its depth (`length = 0`, `current = []`, each
/// of a tuple's: `sets, current, used = [], [], 0`).
fn started_before(lines: &[&str], d: &Def, k: usize) -> Vec<(String, String)> {
    let depth = indent_of(lines[d.body[k]]).len();
    let mut out: Vec<(String, String)> = Vec::new();
    for &b in &d.body[..k] {
        if indent_of(lines[b]).len() > depth {
            continue;
        }
        for (name, value) in first_values(lines[b]) {
            out.retain(|(n, _)| *n != name);
            out.push((name, value));
        }
    }
    out
}

/// The most names started afresh beside another.
const MAX_SIBLINGS: usize = 2;

/// A loop that starts one of its names afresh (`current = []` on a line break, as it was started before the loop)
/// and not another it keeps adding to (`length += extra`, started `length = 0` before the loop): the other's first
/// value just after the fresh start (`length = 0`).
fn siblings_never_reset(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            if !matches!(first_word(lines[f]).as_str(), "for" | "while") {
                continue;
            }
            let started = started_before(lines, d, k);
            let body = block_below(lines, &d.body[k + 1..], indent_of(lines[f]).len());
            let toks: Vec<Vec<String>> = body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
            let value_of = |b: usize| lines[b].split_once('=').map(|(_, v)| v.trim().to_string());
            let added: Vec<&(String, String)> = started
                .iter()
                .filter(|(n, _)| {
                    toks.iter().any(|t| {
                        t.first() == Some(n) && t.get(1).is_some_and(|o| o == "+=" || o == "-=")
                    })
                })
                .collect();
            for (j, t) in toks.iter().enumerate() {
                let (Some(g), Some(eq)) = (t.first(), t.get(1)) else {
                    continue;
                };
                let afresh = eq == "="
                    && started
                        .iter()
                        .any(|(n, v)| n == g && value_of(body[j]).as_ref() == Some(v));
                if !afresh {
                    continue;
                }
                // The block of the fresh start: the lines beside it, at its depth.
                let depth = indent_of(lines[body[j]]).len();
                let beside: Vec<&Vec<String>> = body
                    .iter()
                    .zip(&toks)
                    .filter(|(b, _)| indent_of(lines[**b]).len() == depth)
                    .map(|(_, t)| t)
                    .collect();
                let indent = indent_of(lines[body[j]]);
                let missing = added.iter().filter(|(n, _)| {
                    n != g
                        && !beside
                            .iter()
                            .any(|t| t.first() == Some(n) && t.get(1).is_some_and(|e| e == "="))
                });
                for (n, v) in missing.take(MAX_SIBLINGS) {
                    out.push((body[j], format!("{indent}{n} = {v}")));
                }
            }
        }
    }
    out
}

/// The most names a `while` loop that never moves on is given a step for.
const MAX_ADVANCED: usize = 2;

/// A `while` loop that reads a name started before it and never moves it on (`current = start`, read in the loop,
/// never set in it nor changed by a method of its own): the name stepped at the end of the loop's body, by a local
/// the function computes and never reads (`current += step`), or by 1 for a name started at a number. The names
/// the loop reads on the most lines first, at most [`MAX_ADVANCED`].
fn while_never_advances(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let all = d.tokens(lines);
        // The locals assigned and never read in the function.
        let unread: Vec<&String> = all
            .iter()
            .filter_map(|t| {
                t.first()
                    .filter(|n| is_name(n) && t.get(1).is_some_and(|e| e == "="))
            })
            .filter(|n| {
                all.iter()
                    .map(|t| {
                        t.iter()
                            .enumerate()
                            .filter(|(i, w)| {
                                *w == *n && !(*i == 0 && t.get(1).is_some_and(|e| e == "="))
                            })
                            .count()
                    })
                    .sum::<usize>()
                    == 0
            })
            .collect();
        for (k, &f) in d.body.iter().enumerate() {
            if first_word(lines[f]) != "while" {
                continue;
            }
            let body = block_below(lines, &d.body[k + 1..], indent_of(lines[f]).len());
            let Some(&end) = body.last() else { continue };
            let indent = indent_of(lines[body[0]]);
            let looped: Vec<&Vec<String>> = all[k..=k + body.len()].iter().collect();
            let mut candidates: Vec<(usize, &String, &String)> = Vec::new();
            let started = started_before(lines, d, k);
            for (name, value) in &started {
                let reads = looped.iter().filter(|t| t.contains(name)).count();
                let moved = looped.iter().any(|t| {
                    defines(t).contains(name)
                        || t.windows(2)
                            .any(|w| w[0] == *name && matches!(w[1].as_str(), "." | "["))
                });
                if reads > 0 && !moved {
                    candidates.push((reads, name, value));
                }
            }
            candidates.sort_by_key(|(reads, _, _)| std::cmp::Reverse(*reads));
            for (_, name, value) in candidates.into_iter().take(MAX_ADVANCED) {
                let number = value.parse::<f64>().is_ok();
                if unread.is_empty() && number {
                    out.push((end, format!("{indent}{name} += 1")));
                }
                for u in unread.iter().filter(|u| **u != name).take(MAX_ADVANCED) {
                    out.push((end, format!("{indent}{name} += {u}")));
                }
            }
        }
    }
    out
}

/// A module constant that caps or floors a value (`MAX_FINE`, `MIN_ORDER`, `FEE_CAP`) and is never read: in each
/// function whose name or docstring it concerns (a word of its name, or the name itself), the value the function
/// returns (`amount`, of `return round(amount, 2)`) capped (`amount = min(amount, MAX_FINE)`) just after its last
/// assignment, and first just before the `return` where blocks between change it (`amount *= NIGHT_SURCHARGE`).
/// So too for a constant read only where no bound is applied (`{"minimum": MINIMUM_FARE}`), and for such a
/// constant read elsewhere, in a function whose docstring names it and whose body never reads it (`"""..., never
/// more than MAX_FINE."""`). A parameter the constant is named for (`tables` for `MAX_TABLES`) is capped first in
/// the body, before the value returned.
fn caps_never_applied(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let prose = prose_lines(&lines.join("\n"));
    let code: Vec<Vec<String>> = lines.iter().map(|l| tokens(&code_of(l))).collect();
    let unread: Vec<String> = unread_constants(lines)
        .into_iter()
        .map(|(_, n, _)| n)
        .collect();
    for (_, name, _) in module_constants(lines, false) {
        let words: Vec<String> = name
            .to_ascii_lowercase()
            .split('_')
            .map(str::to_string)
            .collect();
        let bound = if words
            .iter()
            .any(|w| matches!(w.as_str(), "max" | "maximum" | "cap" | "limit" | "ceiling"))
        {
            "min"
        } else if words
            .iter()
            .any(|w| matches!(w.as_str(), "min" | "minimum" | "floor"))
        {
            "max"
        } else {
            continue;
        };
        let topic: Vec<&String> = words
            .iter()
            .filter(|w| {
                w.len() >= 3
                    && !matches!(
                        w.as_str(),
                        "max"
                            | "maximum"
                            | "min"
                            | "minimum"
                            | "cap"
                            | "limit"
                            | "ceiling"
                            | "floor"
                    )
            })
            .collect();
        // Read only where no bound is applied (`{"minimum": MINIMUM_FARE}` on a tariff card): as good as unread.
        let applied = code.iter().any(|t| {
            t.contains(&name)
                && t.iter()
                    .any(|w| matches!(w.as_str(), "min" | "max" | "<" | ">" | "<=" | ">="))
        });
        for d in defs {
            let doc = d
                .body
                .first()
                .map(|&b| lines[b].to_ascii_lowercase())
                .unwrap_or_default();
            let named = lines[d.body[0]].contains(name.as_str());
            let concerns = if unread.contains(&name) || !applied {
                named
                    || topic.iter().any(|w| {
                        d.name.to_ascii_lowercase().contains(w.as_str()) || doc.contains(w.as_str())
                    })
            } else {
                named && !d.body[1..].iter().any(|&b| code[b].contains(&name))
            };
            if concerns {
                out.extend(parameters_capped(d, &code, &prose, &topic, (&name, bound)));
            }
            let last = &code[d.last];
            if !concerns || last.first().map(String::as_str) != Some("return") {
                continue;
            }
            let depth = d.indent.len();
            for value in last
                .iter()
                .skip(1)
                .filter(|w| is_name(w) && d.bound.contains(*w) && !d.params.contains(*w))
            {
                let at = d.body.iter().rev().find(|&&b| {
                    b < d.last
                        && indent_of(lines[b]).len() == depth
                        && code[b].first() == Some(value)
                        && code[b].get(1).is_some_and(|e| e == "=")
                });
                if let Some(&at) = at {
                    let line = format!("{}{value} = {bound}({value}, {name})", d.indent);
                    // And just before the `return`, past the blocks that change it after (`amount *= NIGHT`).
                    let before = d.body.iter().rev().find(|&&b| b < d.last).copied();
                    if let Some(before) = before.filter(|&b| b != at) {
                        out.push((before, line.clone()));
                    }
                    out.push((at, line));
                    break;
                }
            }
        }
    }
    out
}

/// In a function a cap `(name, bound)` concerns whose body never reads it, each parameter it is named for (a word
/// of its `topic`: `tables` for `MAX_TABLES`) capped first in the body (`tables = min(tables, MAX_TABLES)`).
fn parameters_capped(
    d: &Def,
    code: &[Vec<String>],
    prose: &[bool],
    topic: &[&String],
    (name, bound): (&String, &str),
) -> Vec<(usize, String)> {
    if d.body.iter().any(|&b| code[b].contains(name)) {
        return Vec::new();
    }
    let mut named: Vec<&String> = d.params.iter().filter(|p| topic.contains(p)).collect();
    named.sort();
    let at = counterparts::body_start(d, prose);
    named
        .into_iter()
        .filter_map(|p| at.map(|at| (at, format!("{}{p} = {bound}({p}, {name})", d.indent))))
        .collect()
}

/// The module constants assigned at the top level of `lines` and read nowhere else: (0-based line, name, value).
fn unread_constants(lines: &[&str]) -> Vec<(usize, String, String)> {
    module_constants(lines, true)
}

/// The module constants assigned at the top level of `lines` (with `unread`, only those read nowhere else):
/// (0-based line, name, value).
fn module_constants(lines: &[&str], unread: bool) -> Vec<(usize, String, String)> {
    let code: Vec<Vec<String>> = lines.iter().map(|l| tokens(&code_of(l))).collect();
    let mut out = Vec::new();
    for (c, t) in code.iter().enumerate() {
        let (Some(name), Some(eq)) = (t.first(), t.get(1)) else {
            continue;
        };
        let upper = name.len() >= 2
            && name
                .chars()
                .all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_')
            && name.starts_with(|ch: char| ch.is_ascii_uppercase());
        let read = code
            .iter()
            .enumerate()
            .any(|(j, u)| j != c && u.contains(name));
        let Some((_, value)) = lines[c].split_once('=') else {
            continue;
        };
        if upper && eq == "=" && !lines[c].starts_with(char::is_whitespace) && !(read && unread) {
            out.push((c, name.clone(), value.trim().to_string()));
        }
    }
    out
}

/// The most places one constant never read is tried at.
const MAX_UNREAD_PLACES: usize = 2;

/// A module constant the file defines and never reads, put to the use its kind and name say, where a function's
/// docstring or parameters concern it:
/// - a dict of defaults (`DEFAULTS = {...}`) merged under a function's keyword parameters or its parameter that
///   holds settings first in its body (`values = {**DEFAULTS, **values}`);
/// - a marker text (`COMMENT = "#"`) cut off a text of a function whose docstring speaks of it, just after the
///   function's first assignment (`text = text.split(COMMENT)[0].strip()`), then first for its first parameter.
fn unread_constants_applied(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for (_, name, value) in unread_constants(lines) {
        let word = name.to_ascii_lowercase().replace('_', " ");
        let defaults = value.starts_with('{') && name.contains("DEFAULT");
        let marker = value.starts_with(['"', '\'']) && value.len() <= 5;
        let mut n = 0;
        for d in defs {
            let doc = d.docstring(&prose);
            let (Some(&code), Some(&header)) = (d.body.get(doc.len()), d.body.first()) else {
                continue;
            };
            let after_doc = doc.last().copied().unwrap_or(header.saturating_sub(1));
            let said = doc
                .iter()
                .map(|&b| lines[b].to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            let indent = indent_of(lines[code]);
            let params = d.header(lines);
            if defaults {
                let starred = params
                    .windows(2)
                    .filter(|w| w[0] == "**")
                    .map(|w| w[1].clone());
                let settings = params
                    .iter()
                    .filter(|p| {
                        d.params.contains(*p)
                            && ["options", "settings", "config", "overrides", "values"]
                                .contains(&p.as_str())
                    })
                    .cloned();
                for p in starred.chain(settings) {
                    if n < MAX_UNREAD_PLACES && d.params.contains(&p) {
                        n += 1;
                        out.push((after_doc, format!("{indent}{p} = {{**{name}, **{p}}}")));
                    }
                }
            } else if marker && said.contains(word.as_str()) {
                let depth = indent.len();
                let first = d.body.iter().find(|&&b| {
                    let t = tokens(&code_of(lines[b]));
                    b >= code
                        && indent_of(lines[b]).len() == depth
                        && t.len() > 2
                        && is_name(&t[0])
                        && t[1] == "="
                });
                if let Some(&b) = first {
                    let x = tokens(&code_of(lines[b]))[0].clone();
                    out.push((b, format!("{indent}{x} = {x}.split({name})[0].strip()")));
                }
                if let Some(p) = params
                    .iter()
                    .find(|p| d.params.contains(*p) && !matches!(p.as_str(), "self" | "cls"))
                {
                    out.push((after_doc, format!("{indent}{p} = {p}.split({name})[0]")));
                }
            }
        }
    }
    out
}

/// A module constant that is a number (`MINUTES_PER_DAY = 24 * 60`) the file never reads, and a local named by one
/// of its words (`minutes`): the local wrapped by it (`minutes %= MINUTES_PER_DAY`) or held to it (`minutes =
/// min(minutes, MINUTES_PER_DAY)`) just after each line that assigns it, at most [`MAX_UNREAD_PLACES`] a constant.
fn unread_numbers_applied(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (_, name, value) in unread_constants(lines) {
        let number = value
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '*' | '+' | ' ' | '_'))
            && value.starts_with(|c: char| c.is_ascii_digit());
        if !number {
            continue;
        }
        let words: Vec<String> = name
            .to_ascii_lowercase()
            .split('_')
            .map(str::to_string)
            .collect();
        let mut n = 0;
        for d in defs {
            for &b in &d.body {
                let t = tokens(&code_of(lines[b]));
                let assigns = t.len() > 2 && is_name(&t[0]) && t[1] == "=";
                if !assigns || !words.contains(&t[0]) || n == MAX_UNREAD_PLACES {
                    continue;
                }
                let (x, indent) = (&t[0], indent_of(lines[b]));
                out.push((b, format!("{indent}{x} %= {name}")));
                out.push((b, format!("{indent}{x} = min({x}, {name})")));
                n += 1;
            }
        }
    }
    out
}

/// A module text constant the file never reads (`PUNCTUATION = ".,;:!?()"`) and a function whose docstring speaks
/// of it (a word of its name: "with punctuation removed"): each text that function makes by a text method (`word =
/// raw.lower()`) stripped of those characters just after (`word = word.strip(PUNCTUATION)`), at most
/// [`MAX_UNREAD_PLACES`] a constant.
fn unread_characters_stripped(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for (_, name, value) in unread_constants(lines) {
        // Several characters: one short marker is cut off instead (`unread_constants_applied`).
        if !value.starts_with(['"', '\'']) || value.len() <= 5 {
            continue;
        }
        let words: Vec<String> = name
            .to_ascii_lowercase()
            .split('_')
            .filter(|w| w.len() >= 4)
            .map(str::to_string)
            .collect();
        let mut n = 0;
        for d in defs {
            let said = d
                .docstring(&prose)
                .iter()
                .map(|&b| lines[b].to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            if !words.iter().any(|w| said.contains(w.as_str())) {
                continue;
            }
            for &b in &d.body {
                let t = tokens(&code_of(lines[b]));
                let text = t.len() > 4
                    && is_name(&t[0])
                    && t[1] == "="
                    && t.windows(2).any(|w| {
                        w[0] == "."
                            && matches!(w[1].as_str(), "lower" | "upper" | "strip" | "casefold")
                    });
                if text && n < MAX_UNREAD_PLACES {
                    let (x, indent) = (&t[0], indent_of(lines[b]));
                    out.push((b, format!("{indent}{x} = {x}.strip({name})")));
                    n += 1;
                }
            }
        }
    }
    out
}

/// The most updates copied for a loop's other name.
const MAX_SIBLING_UPDATES: usize = 3;

/// A loop over pairs (`for home, away, hg, ag in matches:`) that updates an entry of one name of the pair in a
/// branch (`table[home] += DRAW_POINTS`) and the loop indexes the same collection by another (`table[away]`), but
/// that branch never updates it: the same update for the other name just after (`table[away] += DRAW_POINTS`).
fn sibling_updates(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            let t = tokens(&code_of(lines[f]));
            if t.first().map(String::as_str) != Some("for") {
                continue;
            }
            let targets: Vec<&String> = t[1..]
                .iter()
                .take_while(|w| *w != "in")
                .filter(|w| is_name(w))
                .collect();
            if targets.len() < 2 {
                continue;
            }
            let body = block_below(lines, &d.body[k + 1..], indent_of(lines[f]).len());
            let toks: Vec<Vec<String>> = body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
            let indexed = |x: &String, n: &String| {
                toks.iter().any(|u| {
                    u.windows(4)
                        .any(|w| w[0] == *x && w[1] == "[" && w[2] == *n && w[3] == "]")
                })
            };
            let mut n = 0;
            for (j, u) in toks.iter().enumerate() {
                let [x, open, name, close, op, ..] = u.as_slice() else {
                    continue;
                };
                let update =
                    open == "[" && close == "]" && matches!(op.as_str(), "+=" | "-=" | "=");
                if !update || !is_name(x) || !targets.contains(&name) {
                    continue;
                }
                // The branch the update is in: the lines beside it at its depth, up to a shallower one.
                let depth = indent_of(lines[body[j]]).len();
                let around = |r: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
                    r.take_while(|&i| indent_of(lines[body[i]]).len() >= depth)
                        .filter(|&i| indent_of(lines[body[i]]).len() == depth)
                        .collect()
                };
                let mut branch = around(&mut (0..j).rev());
                branch.extend(around(&mut (j + 1..body.len())));
                for other in targets.iter().filter(|o| **o != name && indexed(x, o)) {
                    let done = branch.iter().any(|&i| {
                        toks[i]
                            .windows(3)
                            .any(|w| w[0] == *x && w[1] == "[" && w[2] == **other)
                    });
                    if !done && n < MAX_SIBLING_UPDATES {
                        n += 1;
                        let code = lines[body[j]].replacen(
                            &format!("{x}[{name}]"),
                            &format!("{x}[{other}]"),
                            1,
                        );
                        out.push((body[j], code));
                    }
                }
            }
        }
    }
    out
}

/// The most names a case its docstring promises is given.
const MAX_CASED: usize = 2;

/// A function whose docstring promises text in one case (`"Return a lowercase slug"`, `"use capital letters"`) and
/// that never changes a text's case: `text = text.lower()` (or `.upper()`) just after each of its first plain
/// assignments, then first in its body for its first parameter.
fn case_never_normalised(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for d in defs {
        let doc = d.docstring(&prose);
        let (Some(&last_doc), Some(&code)) = (doc.last(), d.body.get(doc.len())) else {
            continue;
        };
        let said = doc
            .iter()
            .map(|&b| lines[b].to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(" ");
        let case = if ["lowercase", "lower case", "lower-case"]
            .iter()
            .any(|w| said.contains(w))
        {
            "lower"
        } else if ["capital", "uppercase", "upper case", "upper-case"]
            .iter()
            .any(|w| said.contains(w))
        {
            "upper"
        } else {
            continue;
        };
        let changes = d.body.iter().any(|&b| {
            let l = code_of(lines[b]);
            [
                ".lower(",
                ".upper(",
                ".casefold(",
                ".capitalize(",
                ".title(",
            ]
            .iter()
            .any(|m| l.contains(m))
        });
        if changes {
            continue;
        }
        let depth = indent_of(lines[code]).len();
        let mut n = 0;
        for &b in d
            .body
            .iter()
            .filter(|&&b| b >= code && indent_of(lines[b]).len() == depth)
        {
            let t = tokens(&code_of(lines[b]));
            let [x, eq, _, ..] = t.as_slice() else {
                continue;
            };
            if n < MAX_CASED
                && is_name(x)
                && eq == "="
                && !x.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            {
                n += 1;
                out.push((b, format!("{}{x} = {x}.{case}()", indent_of(lines[b]))));
            }
        }
        let header = d.header(lines);
        if let Some(p) = header
            .iter()
            .find(|p| d.params.contains(*p) && !matches!(p.as_str(), "self" | "cls"))
        {
            out.push((
                last_doc,
                format!("{}{p} = {p}.{case}()", indent_of(lines[code])),
            ));
        }
    }
    out
}

/// The most parameters a missing guard is written for.
const MAX_GUARDED: usize = 2;

/// The value a docstring says a function gives for some inputs (`"Date it is due, or None when it is never
/// watered."`, `"or 0 for an empty list"`): `None` or a number written after an `or`.
fn value_said(doc: &str) -> Option<String> {
    let words: Vec<&str> = doc
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '`'))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).find_map(|w| {
        let value = w[1].trim_end_matches(['.', ':']);
        let said = value == "None" || (value.parse::<f64>().is_ok() && !value.contains('e'));
        (w[0] == "or" && said).then(|| value.to_string())
    })
}

/// A function whose docstring says it gives `None` (or a number) for some inputs and that never returns it: the
/// guard first in its body, for each of its first parameters (`if not interval: return None`).
fn guards_never_written(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for d in defs {
        let doc = d.docstring(&prose);
        let (Some(&last_doc), Some(&code)) = (doc.last(), d.body.get(doc.len())) else {
            continue;
        };
        let text: Vec<&str> = doc.iter().map(|&b| lines[b]).collect();
        let Some(value) = value_said(&text.join(" ")) else {
            continue;
        };
        let returned = d.body.iter().any(|&b| {
            let t = tokens(&code_of(lines[b]));
            t.first().is_some_and(|r| r == "return")
                && (t.len() == 1 || t[1..].concat() == value.replace(' ', ""))
        });
        if returned {
            continue;
        }
        // The parameters in the order the `def` line writes them.
        let header = d.header(lines);
        let params = header
            .iter()
            .filter(|p| d.params.contains(*p) && !matches!(p.as_str(), "self" | "cls"));
        let indent = indent_of(lines[code]);
        let mut seen: Vec<&String> = Vec::new();
        for p in params {
            if !seen.contains(&p) && seen.len() < MAX_GUARDED {
                seen.push(p);
                out.push((last_doc, format!("{indent}if not {p}: return {value}")));
            }
        }
    }
    out
}

/// A function that takes an order statistic (its name says `median`, `percentile`, `quantile`) of a list it
/// builds and indexes but never sorts: `seconds.sort()` just after the list's assignment.
fn order_never_sorted(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let name = d.name.to_ascii_lowercase();
        if !["median", "percentile", "quantile", "middle"]
            .iter()
            .any(|w| name.contains(w))
        {
            continue;
        }
        let toks = d.tokens(lines);
        let sorts = |x: &String| {
            toks.iter().any(|t| {
                t.windows(3)
                    .any(|w| w[0] == *x && w[1] == "." && w[2] == "sort")
                    || t.windows(3)
                        .any(|w| w[0] == "sorted" && w[1] == "(" && w[2] == *x)
            })
        };
        for (j, t) in toks.iter().enumerate() {
            let [x, eq, rest @ ..] = t.as_slice() else {
                continue;
            };
            let list =
                rest.first().is_some_and(|r| r == "[") || rest.starts_with(&["list".to_string()]);
            let indexed = toks[j + 1..]
                .iter()
                .any(|u| u.windows(2).any(|w| w[0] == *x && w[1] == "["));
            if is_name(x) && eq == "=" && list && indexed && !sorts(x) {
                out.push((
                    d.body[j],
                    format!("{}{x}.sort()", indent_of(lines[d.body[j]])),
                ));
            }
        }
    }
    out
}

/// A parameter looked up in a module's dict whose keys are all in one case (`COUPONS.get(code)` with keys like
/// `"SPRING10"`) and never brought to that case: `code = code.strip().upper()` (or `.lower()`) first in the
/// function, after its docstring.
fn keys_in_case(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for d in defs {
        let Some(&code) = d.body.iter().find(|&&b| prose.get(b) != Some(&true)) else {
            continue;
        };
        let mut done: Vec<String> = Vec::new();
        for &b in &d.body {
            let toks = tokens(&code_of(lines[b]));
            for (i, t) in toks.iter().enumerate() {
                // `NAME.get(p` or `NAME[p]`, NAME a module constant, p a parameter.
                let get = toks.get(i + 1..i + 5).is_some_and(|w| {
                    w[0] == "." && w[1] == "get" && w[2] == "(" && d.params.contains(&w[3])
                });
                let index = toks
                    .get(i + 1..i + 4)
                    .is_some_and(|w| w[0] == "[" && d.params.contains(&w[1]) && w[2] == "]");
                if !(get || index) || !t.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    continue;
                }
                let p = if get { &toks[i + 4] } else { &toks[i + 2] };
                let Some(case) = dict_case(lines, t) else {
                    continue;
                };
                let normalised = d.body.iter().any(|&q| {
                    let c = code_of(lines[q]);
                    c.contains(&format!("{p}.{case}()"))
                        || c.contains(&format!("{p}.strip().{case}()"))
                });
                if !normalised && !done.contains(p) {
                    done.push(p.clone());
                    out.push((
                        code - 1,
                        format!("{}{p} = {p}.strip().{case}()", indent_of(lines[code])),
                    ));
                }
            }
        }
    }
    out
}

/// `upper` or `lower` when the module-level dict literal `name = {...}` (on one line) has string keys, every one
/// with letters in that case.
fn dict_case(lines: &[&str], name: &str) -> Option<&'static str> {
    let line = lines.iter().find(|l| {
        l.strip_prefix(name)
            .is_some_and(|r| r.trim_start().starts_with("= {"))
    })?;
    let (_, body) = line.split_once('{')?;
    let mut keys = Vec::new();
    for item in body.split(',') {
        let k = item.split(':').next()?.trim();
        let k = k
            .strip_prefix(['"', '\''])
            .and_then(|k| k.strip_suffix(['"', '\'']));
        keys.extend(k.filter(|k| k.chars().any(char::is_alphabetic)));
    }
    let all = |f: fn(&char) -> bool| {
        !keys.is_empty()
            && keys
                .iter()
                .all(|k| k.chars().filter(char::is_ascii_alphabetic).all(|c| f(&c)))
    };
    if all(char::is_ascii_uppercase) {
        Some("upper")
    } else if all(char::is_ascii_lowercase) {
        Some("lower")
    } else {
        None
    }
}

/// A group a loop starts afresh on each change (`current, used = [], 0` in a block of the loop's body) and collects
/// only after the loop (`sets.append(current)`): the same collection just before the fresh start, so that each full
/// group is kept and not only the last.
fn group_flushes_on_change(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            if !matches!(first_word(lines[f]).as_str(), "for" | "while") {
                continue;
            }
            let depth = indent_of(lines[f]).len();
            let body = block_below(lines, &d.body[k + 1..], depth);
            let Some(&first) = body.first() else { continue };
            let after = &d.body[k + 1 + body.len()..];
            for &a in after {
                let toks = tokens(&code_of(lines[a]));
                let [s, dot, append, open, g, close] = toks.as_slice() else {
                    continue;
                };
                let collects =
                    is_name(s) && dot == "." && append == "append" && open == "(" && close == ")";
                let call = lines[a].trim();
                if !collects || !is_name(g) || body.iter().any(|&b| lines[b].trim() == call) {
                    continue;
                }
                for (j, &r) in body.iter().enumerate().skip(1) {
                    let rt = tokens(&code_of(lines[r]));
                    let eq = rt.iter().position(|t| t == "=");
                    let fresh = eq.is_some_and(|e| {
                        rt[..e].contains(g) && rt[e + 1..].windows(2).any(|w| w == ["[", "]"])
                    });
                    if fresh && indent_of(lines[r]).len() > indent_of(lines[first]).len() {
                        out.push((body[j - 1], format!("{}{call}", indent_of(lines[r]))));
                    }
                }
            }
        }
    }
    out
}

/// A group a loop collects (`chunks.append(current)` in the loop) and builds up (`current.append(x)`) but never
/// starts afresh: it starts empty before the loop (`current = []`) and no line of the loop sets it, so each
/// collected group holds every earlier one. The first value again just after the collection (`current = []`).
fn groups_never_reset(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &f) in d.body.iter().enumerate() {
            if !matches!(first_word(lines[f]).as_str(), "for" | "while") {
                continue;
            }
            let body = block_below(lines, &d.body[k + 1..], indent_of(lines[f]).len());
            let toks: Vec<Vec<String>> = body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
            for (j, t) in toks.iter().enumerate() {
                for (g, bare) in collected(t) {
                    let g = &g;
                    // Started empty (or at 0) before the loop, at the function's depth.
                    let Some(first) = d.body[..k]
                        .iter()
                        .rev()
                        .find_map(|&b| first_values(lines[b]).into_iter().find(|(n, _)| n == g))
                        .map(|(_, v)| v)
                    else {
                        continue;
                    };
                    let value = tokens(&first);
                    let line: Vec<String> = [g.clone(), "=".into()]
                        .into_iter()
                        .chain(value.clone())
                        .collect();
                    let empty = empty_collection(&line).is_some()
                        || value == ["0"]
                        || value == ["0", ".", "0"];
                    let built = toks.iter().any(|u| {
                        u.windows(3)
                            .any(|w| w[0] == *g && w[1] == "." && w[2] == "append")
                            || u.windows(2).any(|w| w[0] == *g && w[1] == "+=")
                            || (u.first() == Some(g)
                                && u.get(1).is_some_and(|b| b == "[")
                                && u.iter().any(|o| o == "=" || o == "+="))
                    });
                    let reset = toks
                        .iter()
                        .any(|u| u.first() == Some(g) && u.get(1).is_some_and(|e| e == "="));
                    if !empty || !built || reset {
                        continue;
                    }
                    let fresh = format!("{g} = {first}");
                    let after = (body[j], format!("{}{fresh}", indent_of(lines[body[j]])));
                    // A collection (`lines = []`) appended starts afresh just after it is collected, a tuple's
                    // item too (`scenes.append((title, lines))`); one stored under a key (`log[room] = items`),
                    // where the key changes.
                    let appended = t.windows(2).any(|w| w[0] == "." && w[1] == "append");
                    let collection = empty_collection(&line).is_some() && appended;
                    if collection {
                        out.push(after.clone());
                    }
                    // A total collected in an expression (`summary.append((current, round(net, 2)))`) starts afresh
                    // where its group changes: at the end of the loop's block that holds the collection.
                    if let Some((end, indent)) = outer_block_end(lines, &body, j).filter(|_| !bare)
                    {
                        out.push((end, format!("{indent}{fresh}")));
                    }
                    if !collection {
                        out.push(after);
                    }
                }
            }
        }
    }
    out
}

/// The names a line `S.append(...)` collects, each with whether it is the whole argument (`runs.append(current)`)
/// or a name the argument reads (`summary.append((current, round(net, 2)))`, not `round`); and the name a line
/// stores under a key (`log[room] = items`), started afresh where its key changes, at the end of the block that
/// holds the store, as a name read.
fn collected(t: &[String]) -> Vec<(String, bool)> {
    if let [s, open, .., close, eq, g] = t
        && is_name(s)
        && open == "["
        && close == "]"
        && eq == "="
        && is_name(g)
        && g != s
    {
        return vec![(g.clone(), false)];
    }
    let [s, dot, append, open, inner @ .., close] = t else {
        return Vec::new();
    };
    if !is_name(s) || dot != "." || append != "append" || open != "(" || close != ")" {
        return Vec::new();
    }
    if let [g] = inner {
        return if is_name(g) && g != s {
            vec![(g.clone(), true)]
        } else {
            Vec::new()
        };
    }
    let mut out: Vec<(String, bool)> = Vec::new();
    for (i, w) in inner.iter().enumerate() {
        let called = inner.get(i + 1).is_some_and(|n| n == "(");
        let attribute = i > 0 && inner[i - 1] == ".";
        if is_name(w) && w != s && !called && !attribute && !out.iter().any(|(n, _)| n == w) {
            out.push((w.clone(), false));
        }
    }
    out
}

/// The block of a loop's `body` (its lines) that holds the line `j` of it, one level in: its last line and the
/// indentation of its first; `None` when line `j` is at the body's own depth.
fn outer_block_end<'l>(lines: &[&'l str], body: &[usize], j: usize) -> Option<(usize, &'l str)> {
    let depth = indent_of(lines[*body.first()?]).len();
    let head = (0..j)
        .rev()
        .find(|&h| indent_of(lines[body[h]]).len() == depth)?;
    if indent_of(lines[body[j]]).len() == depth {
        return None;
    }
    let block = block_below(lines, &body[head + 1..], depth);
    Some((*block.last()?, indent_of(lines[*block.first()?])))
}

/// The first values a line gives names: `total = 0`, or each of a tuple's (`current, net = None, 0.0`); values
/// split at the commas outside brackets and strings.
fn first_values(line: &str) -> Vec<(String, String)> {
    if let Some(chain) = chained_values(line) {
        return chain;
    }
    let code = code_of(line);
    let Some((names, values)) = code.split_once('=') else {
        return Vec::new();
    };
    if values.starts_with('=')
        || names.ends_with(['!', '<', '>', '+', '-', '*', '/', '%', '|', '&'])
    {
        return Vec::new();
    }
    let names: Vec<&str> = names.split(',').map(str::trim).collect();
    if !names.iter().all(|n| is_name(n) && !n.contains(' ')) {
        return Vec::new();
    }
    // The values from the line itself (strings are blanked in `code`, not in `line`).
    let Some((_, raw)) = line.split_once('=') else {
        return Vec::new();
    };
    let raw = raw.trim();
    let parts: Vec<String> = if names.len() == 1 {
        vec![raw.to_string()]
    } else {
        let mut parts = vec![String::new()];
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        for c in raw.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '(' | '[' | '{') => depth += 1,
                (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
                (None, ',') if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            if let Some(p) = parts.last_mut() {
                p.push(c);
            }
        }
        parts.into_iter().map(|p| p.trim().to_string()).collect()
    };
    if parts.len() != names.len() || parts.iter().any(String::is_empty) {
        return Vec::new();
    }
    names.into_iter().map(str::to_string).zip(parts).collect()
}

/// The names a chained assignment binds (`wins = draws = losses = 0`), each with the one value; `None` for a line
/// that is no chain of two or more names.
fn chained_values(line: &str) -> Option<Vec<(String, String)>> {
    let code: Vec<char> = code_of(line).chars().collect();
    let mut cuts = Vec::new();
    for (i, &c) in code.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| code[p]);
        let joined = prev.is_some_and(|p| "=!<>+-*/%|&:^@".contains(p));
        if c == '=' && !joined && code.get(i + 1) != Some(&'=') {
            cuts.push(i);
        }
    }
    if cuts.len() < 2 {
        return None;
    }
    let mut names = Vec::new();
    let mut from = 0;
    for &cut in &cuts {
        let name: String = code[from..cut].iter().collect();
        let name = name.trim();
        if !is_name(name) || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        names.push(name.to_string());
        from = cut + 1;
    }
    // The value from the line itself (strings are blanked in `code`, not in `line`), its comment left out.
    let value: String = line.chars().take(code.len()).skip(from).collect();
    let value = value.trim().to_string();
    (!value.is_empty()).then(|| names.into_iter().map(|n| (n, value.clone())).collect())
}

/// A loop's `continue` (or `break`) missing at the end of an `if` block the checks ran, when the block does not
/// leave on its own: `continue` when the loop's body goes on after the block (a blank line skipped and counted,
/// then parsed all the same), `break` when the block ends by setting a name (the first match kept, not the last)
/// or by taking the item it stored out of a list (`plan[t.name] = number` then `free.pop(i)`).
fn loop_exits(lines: &[&str], defs: &[Def], reach: Option<&[Reach]>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &t) in d.body.iter().enumerate() {
            if !matches!(first_word(lines[t]).as_str(), "if" | "elif") || !ran_at(reach, t) {
                continue;
            }
            let depth = indent_of(lines[t]).len();
            // The loop the `if` is in: the nearest line before it, less indented, that is a `for` or `while`.
            let mut outer = depth;
            let mut in_loop = None;
            for &p in d.body[..k].iter().rev() {
                let i = indent_of(lines[p]).len();
                if i < outer {
                    outer = i;
                    match first_word(lines[p]).as_str() {
                        "for" | "while" => {
                            in_loop = Some(i);
                            break;
                        }
                        "def" | "class" => break,
                        _ => {}
                    }
                }
            }
            let Some(loop_depth) = in_loop else { continue };
            let block = block_below(lines, &d.body[k + 1..], depth);
            let Some(&end) = block.last() else { continue };
            if ends_flow(lines[end]) || indent_of(lines[end]) != indent_of(lines[block[0]]) {
                continue;
            }
            let indent = indent_of(lines[block[0]]);
            let goes_on = d.body[k + 1 + block.len()..].first().is_some_and(|&n| {
                indent_of(lines[n]).len() > loop_depth && !first_word(lines[n]).starts_with("el")
            });
            if goes_on {
                out.push((end, format!("{indent}continue")));
            }
            let etoks = tokens(&code_of(lines[end]));
            // Or a block that takes the item it chose out of the list the loop walks (`free.pop(i)`) after it
            // stored it (`plan[t.name] = number`).
            let sets = |b: &usize| {
                let t = tokens(&code_of(lines[*b]));
                is_name(&t[0]) && t.iter().skip(1).take_while(|x| *x != "(").any(|x| x == "=")
            };
            let taken = etoks
                .windows(3)
                .any(|w| w[1] == "." && matches!(w[2].as_str(), "pop" | "remove"))
                && block
                    .iter()
                    .any(|b| !tokens(&code_of(lines[*b])).is_empty() && sets(b));
            if (etoks.len() > 2 && is_name(&etoks[0]) && etoks[1] == "=") || taken {
                out.push((end, format!("{indent}break")));
            }
        }
    }
    out
}

/// Whether a function's body updates the collection `name` (a method call that changes it, an item set, `|=`).
fn updated(lines: &[&str], body: &[usize], name: &str) -> bool {
    const CHANGES: &[&str] = &[
        "add",
        "append",
        "extend",
        "insert",
        "update",
        "setdefault",
        "discard",
        "remove",
        "pop",
    ];
    body.iter().any(|&b| {
        let toks = tokens(&code_of(lines[b]));
        toks.windows(3).any(|w| {
            w[0] == *name && (w[1] == "." && CHANGES.contains(&w[2].as_str()) || w[1] == "[")
        }) || toks
            .windows(2)
            .any(|w| w[0] == *name && (w[1] == "|=" || w[1] == "+="))
    })
}

/// `if ITEM in NAME:` (`negated`: `if ITEM not in NAME:`): the item, a name or a dotted name.
fn membership_test(toks: &[String], name: &str) -> Option<(String, bool)> {
    let t: Vec<&str> = toks.iter().map(String::as_str).collect();
    let (first, rest) = t.split_first()?;
    if t.len() < 5
        || !matches!(*first, "if" | "elif")
        || t[t.len() - 1] != ":"
        || t[t.len() - 2] != name
    {
        return None;
    }
    let cond = &rest[..rest.len() - 2];
    let (item, negated) = match cond {
        [item @ .., "not", "in"] => (item, true),
        [item @ .., "in"] => (item, false),
        _ => return None,
    };
    // A dotted name, a call of one without arguments (`title.lower()`), or one subscripted by a quoted key or a
    // name (`line["design"]`, `row[key]`).
    let name = match item {
        [name @ .., "(", ")"] => name,
        [name @ .., "[", q, key, q2, "]"]
            if q == q2 && matches!(*q, "\"" | "'") && is_name(key) =>
        {
            name
        }
        [name @ .., "[", key, "]"] if is_name(key) => name,
        name => name,
    };
    let dotted = !name.is_empty()
        && name
            .iter()
            .enumerate()
            .all(|(k, p)| if k % 2 == 0 { is_name(p) } else { *p == "." })
        && name.len() % 2 == 1;
    dotted.then(|| (item.concat(), negated))
}

/// The normalisation a sibling name got: for `A = ...A...` (a call on `A`), each other name `B` the same or one of
/// the three lines before binds at the same indentation, `B = ...B...` after the line that binds `B`.
fn sibling_normalisations(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &s) in d.body.iter().enumerate() {
            let toks = tokens(&code_of(lines[s]));
            let Some(a) = self_update(&toks) else {
                continue;
            };
            let indent = indent_of(lines[s]);
            for &p in d.body[k.saturating_sub(3)..k].iter().rev() {
                if indent_of(lines[p]) != indent {
                    continue;
                }
                let ptoks = tokens(&code_of(lines[p]));
                if ptoks.first().is_some_and(|t| t == "for" || t == "if") {
                    continue;
                }
                let mut others: Vec<String> = defines(&ptoks)
                    .into_iter()
                    .filter(|b| b != a && b != "_" && b != "self")
                    .collect();
                others.sort();
                for b in others {
                    // A name that gets its own update already needs none.
                    let has_one = d
                        .body
                        .iter()
                        .any(|&q| self_update(&tokens(&code_of(lines[q]))) == Some(b.as_str()));
                    if !has_one {
                        out.push((p, renamed(lines[s], a, &b)));
                    }
                }
            }
        }
    }
    out
}

/// The most parameters one normalising call is copied to.
const MAX_NORMALISED: usize = 2;

/// A normalisation one parameter gets and another of the same function does not (`current = parse_day(start)`,
/// then `end` compared as it came; or inside an assignment, through the file's own function of one parameter:
/// `width = blind_width(parse_cm(width), inside)`): `end = parse_day(end)` after it, for each other parameter the
/// body reads and never passes to that function, in the order the body first reads them, at most
/// [`MAX_NORMALISED`].
fn parameter_normalisations(lines: &[&str], defs: &[Def]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let body = d.tokens(lines);
        for (k, toks) in body.iter().enumerate() {
            // `V = f(P)`: one call of a plain name on one parameter; or, anywhere in an assignment, a call of the
            // file's own function of one parameter on one (`width = blind_width(parse_cm(width), inside)`).
            let whole = match toks.as_slice() {
                [_, eq, f, open, p, close] if eq == "=" && open == "(" && close == ")" => {
                    Some((f, p))
                }
                _ => None,
            };
            let nested = || {
                let assigns = toks.get(1).is_some_and(|e| e == "=");
                toks.windows(4).skip(2).find_map(|w| {
                    let own = defs.iter().any(|g| g.name == w[0] && g.params.len() == 1);
                    (assigns && own && w[1] == "(" && w[3] == ")").then_some((&w[0], &w[2]))
                })
            };
            let Some((f, p)) = whole.or_else(nested) else {
                continue;
            };
            let normalising =
                is_name(f) && !NOT_COPIED.contains(&f.as_str()) && d.params.contains(p);
            if !normalising {
                continue;
            }
            let passed = |q: &str| {
                body.iter()
                    .any(|t| t.windows(3).any(|w| w[0] == *f && w[1] == "(" && w[2] == q))
            };
            // Each other parameter with the body line (an index into `body`) that first reads it.
            let mut others: Vec<(&String, usize)> = Vec::new();
            for (j, t) in body.iter().enumerate().skip(k + 1) {
                for (i, q) in t.iter().enumerate() {
                    let read = d.params.contains(q) && (i == 0 || t[i - 1] != ".");
                    let other = q != p && !matches!(q.as_str(), "self" | "cls");
                    if read && other && !others.iter().any(|(o, _)| *o == q) {
                        others.push((q, j));
                    }
                }
            }
            let indent = indent_of(lines[d.body[k]]);
            let others = others.into_iter().filter(|(q, _)| !passed(q));
            for (q, first) in others.take(MAX_NORMALISED) {
                // Just before the statement of the normalising line's block that first reads it.
                let statement = (k + 1..=first)
                    .rev()
                    .find(|&j| indent_of(lines[d.body[j]]) == indent)
                    .unwrap_or(k + 1);
                out.push((d.body[statement - 1], format!("{indent}{q} = {f}({q})")));
            }
        }
    }
    out
}

/// The name `A` of a line `A = ...A...` whose right side calls something on or with `A`.
fn self_update(toks: &[String]) -> Option<&str> {
    let (a, rest) = (toks.first()?, toks.get(2..)?);
    let calls = rest.iter().any(|t| t == "(");
    (is_name(a) && toks.get(1)? == "=" && calls && rest.iter().any(|t| t == a))
        .then_some(a.as_str())
}

/// `line` with the name `from` (whole words, outside strings) written `to`.
fn renamed(line: &str, from: &str, to: &str) -> String {
    // Blanking strings keeps one char for each char, so the two line up char by char.
    let text: Vec<char> = line.chars().collect();
    let code: Vec<char> = without_strings(line).chars().collect();
    let from: Vec<char> = from.chars().collect();
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '.');
    let mut out = String::with_capacity(line.len());
    let mut k = 0;
    while k < text.len() {
        let at_word = code.len() == text.len()
            && code[k..].starts_with(&from)
            && !word(k.checked_sub(1).and_then(|p| code.get(p)))
            && !code
                .get(k + from.len())
                .is_some_and(|c| c.is_alphanumeric() || *c == '_');
        if at_word {
            out.push_str(to);
            k += from.len();
        } else {
            out.push(text[k]);
            k += 1;
        }
    }
    out
}

/// A call statement on an object (`self._data.move_to_end(key)`) copied into another function the checks ran,
/// before each of its `return` lines that ran and after its last line, when every name local to the copied line's
/// own function is bound there and the function does not already hold it.
fn copied_calls(lines: &[&str], defs: &[Def], reach: &[Reach]) -> Vec<(usize, String)> {
    let ran = |k: usize| {
        matches!(
            reach.get(k),
            Some(Reach::Failing | Reach::FailingAndBefore | Reach::Ran)
        )
    };
    let mut out = Vec::new();
    for (si, source) in defs.iter().enumerate() {
        for &s in &source.body {
            let Some(names) = call_statement(lines[s]) else {
                continue;
            };
            let call = lines[s].trim();
            for (ti, target) in defs.iter().enumerate() {
                let unbound = names
                    .iter()
                    .any(|n| source.bound.contains(n) && !target.bound.contains(n));
                let holds = target.body.iter().any(|&b| lines[b].trim() == call);
                if ti == si || unbound || holds || !target.body.iter().any(|&b| ran(b)) {
                    continue;
                }
                for (k, &b) in target.body.iter().enumerate() {
                    let last = k + 1 == target.body.len();
                    if first_word(lines[b]) == "return" && ran(b) && k > 0 {
                        let before = target.body[k - 1];
                        out.push((before, format!("{}{call}", indent_of(lines[b]))));
                    } else if last && !ends_flow(lines[b]) {
                        out.push((b, format!("{}{call}", target.indent)));
                    }
                }
            }
        }
    }
    out
}

/// The names a line uses when it is a call statement on a name (`obj.method(args)`, `helper(x)`) that keeps state
/// in step, not output or control flow: its names that are not attributes or keyword arguments.
fn call_statement(line: &str) -> Option<Vec<String>> {
    let code = code_of(line);
    let toks = tokens(&code);
    let open = toks.iter().position(|t| t == "(")?;
    let chain = &toks[..open];
    let dotted = chain.len() >= 3
        && chain
            .iter()
            .enumerate()
            .all(|(k, p)| if k % 2 == 0 { is_name(p) } else { p == "." })
        && chain.len() % 2 == 1;
    if !dotted || NOT_COPIED.contains(&chain[0].as_str()) || toks.last()? != ")" {
        return None;
    }
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "=" if depth == 1 && k > 0 && is_name(&toks[k - 1]) => {}
            "=" | "+=" | "-=" => return None,
            _ => {}
        }
        if depth == 0 && k + 1 != toks.len() {
            return None;
        }
    }
    let names = toks
        .iter()
        .enumerate()
        .filter(|(k, t)| {
            is_name(t)
                && (*k == 0 || toks[k - 1] != ".")
                && toks.get(k + 1).is_none_or(|n| n != "=")
        })
        .map(|(_, t)| t.clone())
        .collect();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The insertions of `text` as (1-based line after which, line); shared with the submodules' tests.
    pub(super) fn lines_of(
        text: &str,
        missing: &[Missing],
        reach: Option<&[Reach]>,
    ) -> Vec<(usize, String)> {
        of_file(text, missing, reach, MAX_INSERTIONS)
            .into_iter()
            .map(|i| (i.after, i.line))
            .collect()
    }

    /// The insertions of `text`, with no error told, as (1-based line after which, line).
    pub(super) fn untold(text: &str) -> Vec<(usize, String)> {
        lines_of(text, &[], None)
    }

    /// Whether any insertion of `text`, with no error told, holds `needle`.
    pub(super) fn offers(text: &str, needle: &str) -> bool {
        lines_of(text, &[], None)
            .iter()
            .any(|(_, l)| l.contains(needle))
    }

    /// The insertions of `text`, with no error told, hold `line` after the 1-based line `at`.
    fn inserts(text: &str, at: usize, line: &str) {
        let got = lines_of(text, &[], None);
        assert!(got.contains(&(at, line.to_string())), "{got:?}");
    }

    /// No insertion of `text`, with no error told, holds `needle`.
    fn never_inserts(text: &str, needle: &str) {
        let got = lines_of(text, &[], None);
        assert!(!got.iter().any(|(_, l)| l.contains(needle)), "{got:?}");
    }

    #[test]
    fn a_text_used_as_a_number_is_converted_just_before_the_line_the_error_names() {
        let text = "def cash(entries):\n    total = 0.0\n    for e in entries:\n        amount = e.strip()\n        total += amount\n    return total\n";
        let got: Vec<(usize, String)> = numbers_told(text, 5)
            .into_iter()
            .map(|i| (i.after, i.line))
            .collect();
        assert_eq!(
            got[..2],
            [
                (4, "        amount = float(amount)".to_string()),
                (4, "        amount = int(amount)".to_string())
            ]
        );
        assert!(got.iter().all(|(_, l)| !l.contains("e.strip")));
        // A parameter read in a loop is converted first where the body starts, then just before the line.
        let text = "def price(height):\n    \"\"\"Heights arrive as text.\"\"\"\n    for top, p in RATES:\n        if height <= top:\n            return p\n";
        let got: Vec<(usize, String)> = numbers_told(text, 4)
            .into_iter()
            .map(|i| (i.after, i.line))
            .collect();
        assert_eq!(got[0], (2, "    height = float(height)".to_string()));
        assert!(got.contains(&(3, "        height = float(height)".to_string())));
        // A parameter bound again before the line is converted only there.
        let text = "def f(x):\n    x = x.strip()\n    return x + 1\n";
        let got: Vec<usize> = numbers_told(text, 3).iter().map(|i| i.after).collect();
        assert_eq!(got, [2, 2]);
        // A line outside any function, or past the end: nothing.
        assert!(numbers_told("x = '1' + 2\n", 1).is_empty());
        assert!(numbers_told(text, 99).is_empty());
    }

    #[test]
    fn a_module_the_error_names_is_imported_after_the_imports_or_the_docstring() {
        let text = "\"\"\"Shapes.\"\"\"\n\nimport re\n\n\ndef area(r):\n    return math.pi * r\n";
        let told = [Missing::Name("math".into())];
        let got = of_file(text, &told, None, MAX_INSERTIONS);
        // Among the plain imports in the order of names (before `import re`), before the `from` ones.
        assert_eq!(got[0].after, 2);
        assert_eq!(got[0].line, "import math");
        assert!(got[0].told);
        let csv = text.replace("import re", "import csv\nfrom statistics import mean");
        assert_eq!(lines_of(&csv, &told, None)[0], (3, "import math".into()));
        let from = text.replace("import re", "from statistics import mean");
        assert_eq!(lines_of(&from, &told, None)[0], (3, "import math".into()));
        let text = "\"\"\"Shapes.\"\"\"\n\n\ndef area(r):\n    return math.pi * r\n";
        assert_eq!(lines_of(text, &told, None)[0], (1, "import math".into()));
        // A name the file defines is no module to import.
        let text = "math = None\n\n\ndef area(r):\n    return math.pi * r\n";
        assert!(lines_of(text, &told, None).is_empty());
    }

    #[test]
    fn an_attribute_the_error_names_is_set_at_the_end_of_the_constructor_as_the_file_uses_it() {
        let text = "class Form:\n    def __init__(self, data):\n        self.data = data\n\n    def err(self, m):\n        self.errors.append(m)\n";
        let told = [Missing::Attribute("errors".into())];
        assert_eq!(
            lines_of(text, &told, None),
            [(3, "        self.errors = []".into())]
        );
        let text = text.replace("self.errors.append(m)", "self.errors[m] = 1");
        assert_eq!(
            lines_of(&text, &told, None),
            [(3, "        self.errors = {}".into())]
        );
        // An attribute the file sets is not missing.
        let text = "class F:\n    def __init__(self):\n        self.n = 0\n\n    def f(self):\n        self.errors = []\n        return self.errors\n";
        assert!(lines_of(text, &told, None).is_empty());
    }

    #[test]
    fn a_function_whose_result_is_used_and_never_returned_returns_what_it_assigns_last() {
        let text = "def digits(raw):\n    d = raw.strip()\n    if d.startswith(\"1\"):\n        d = d[1:]\n\n\ndef valid(raw):\n    return len(digits(raw)) == 10\n";
        let got = of_file(text, &[Missing::Value], None, MAX_INSERTIONS);
        assert_eq!(got[0].after, 4);
        assert_eq!(got[0].line, "    return d");
        assert!(got[0].told);
        // A parameter reassigned in a nested block is returned too.
        let text = "def national(digits):\n    if digits.startswith(\"1\"):\n        digits = digits[1:]\n\n\ndef f(t):\n    return len(national(t))\n";
        assert_eq!(
            lines_of(text, &[Missing::Value], None),
            [(3, "    return digits".into())]
        );
        // A function called only as a statement keeps its None.
        let text = "def log(m):\n    line = m.strip()\n    print(line)\n\n\ndef run():\n    log(\"x\")\n    return 1\n";
        assert!(lines_of(text, &[], None).is_empty());
        // A function the file never calls: the checks call it, and may use its result.
        let text = "def shortfall(pledges):\n    remaining = 150 - sum(pledges)\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(2, "    return remaining".into())]
        );
    }

    #[test]
    fn a_collection_tested_and_never_updated_is_updated_at_the_end_of_the_loop_body() {
        // Just after the test's block that leaves, then at the end of the loop's body.
        let text = "def unique(xs):\n    seen = set()\n    out = []\n    for x in xs:\n        key = x.lower()\n        if key in seen:\n            continue\n        out.append(key)\n    return out\n";
        assert_eq!(
            lines_of(text, &[], None),
            [
                (7, "        seen.add(key)".into()),
                (8, "        seen.add(key)".into())
            ]
        );
        let text = "def unique(xs):\n    seen = []\n    out = []\n    for x in xs:\n        if x not in seen:\n            out.append(x)\n    return out\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(6, "            seen.append(x)".into())]
        );
        // A set made of another's items, tested with a record's key: the key added at the end of the block.
        let text = "def total(lines, known=()):\n    seen = set(known)\n    t = 0\n    for line in lines:\n        if line[\"design\"] not in seen:\n            t += FEE\n        t += line[\"qty\"]\n    return t\n";
        assert_eq!(
            lines_of(text, &[], None)[0],
            (6, "            seen.add(line[\"design\"])".into())
        );
        // One updated already needs nothing.
        let text = "def unique(xs):\n    seen = set()\n    for x in xs:\n        if x in seen:\n            continue\n        seen.add(x)\n    return seen\n";
        assert!(lines_of(text, &[], None).is_empty());
    }

    #[test]
    fn a_name_bound_beside_one_that_is_normalised_gets_the_same_normalisation() {
        let text = "def parse(line):\n    key, _, value = line.partition(\"=\")\n    value = value.strip()\n    return key, value\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(2, "    key = key.strip()".into())]
        );
        // A string's text is kept as it is, whatever its width, and a name inside it is no name.
        let text = "def parse(line):\n    key, value = line.split(\"=\")\n    value = value.replace(\"é value\", \"e\")\n    return key, value\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(2, "    key = key.replace(\"é value\", \"e\")".into())]
        );
    }

    #[test]
    fn a_parameter_a_cap_is_named_for_is_capped_first() {
        let text = "MAX_TABLES = 3\nPRICE = 25\n\n\ndef fee(tables, electric=False):\n    \"\"\"The fee; nobody is given more than MAX_TABLES tables.\"\"\"\n    fee = tables * PRICE\n    return round(fee, 2)\n\n\ndef given(bookings):\n    return sum(min(b, MAX_TABLES) for b in bookings)\n";
        inserts(text, 6, "    tables = min(tables, MAX_TABLES)");
        // Read in the body already: nothing.
        let read = text.replace(
            "fee = tables * PRICE",
            "fee = min(tables, MAX_TABLES) * PRICE",
        );
        never_inserts(&read, "tables = min(tables");
    }

    #[test]
    fn a_parameter_beside_one_converted_inside_an_assignment_is_converted_after_it() {
        let text = "def parse_cm(text):\n    return float(str(text).strip().removesuffix(\"cm\"))\n\n\ndef order_line(room, width, drop, inside=True):\n    width = blind_width(parse_cm(width), inside)\n    return {\"room\": room, \"width\": width, \"drop\": drop}\n";
        inserts(text, 6, "    drop = parse_cm(drop)");
        // A builtin inside an assignment is no conversion of the file's to copy.
        let builtin = text.replace(
            "blind_width(parse_cm(width), inside)",
            "blind_width(abs(width), inside)",
        );
        never_inserts(&builtin, "drop = abs(drop)");
    }

    #[test]
    fn a_parameter_read_as_it_came_gets_the_normalisation_another_got_before_its_first_use() {
        let text = "def between(start, end, skip=None):\n    current = parse_day(start)\n    count = 0\n    while current < end:\n        current = step(current, skip)\n        count += 1\n    return count\n";
        assert_eq!(
            lines_of(text, &[], None),
            [
                (3, "    end = parse_day(end)".into()),
                (3, "    skip = parse_day(skip)".into())
            ]
        );
        // One passed through it already, an attribute of that name, and a builtin statement are left alone.
        let text = "def between(start, end):\n    a = parse_day(start)\n    b = parse_day(end)\n    return b - a\n";
        assert!(lines_of(text, &[], None).is_empty());
        let text = "def f(a, b):\n    x = norm(a)\n    return x.b\n";
        assert!(lines_of(text, &[], None).is_empty());
        let text = "def f(a, b):\n    x = print(a)\n    return b\n";
        assert!(lines_of(text, &[], None).is_empty());
    }

    #[test]
    fn a_queue_attribute_the_error_names_starts_as_the_deque_the_file_imports() {
        let text = "from collections import deque\n\n\nclass Limiter:\n    def __init__(self, limit):\n        self.limit = limit\n\n    def prune(self, now):\n        while self._hits and self._hits[0] < now:\n            self._hits.popleft()\n        self._hits.append(now)\n";
        let told = [Missing::Attribute("_hits".into())];
        assert_eq!(
            lines_of(text, &told, None),
            [(6, "        self._hits = deque()".into())]
        );
        let text = text.replace("from collections import deque", "import collections");
        assert_eq!(
            lines_of(&text, &told, None),
            [(6, "        self._hits = collections.deque()".into())]
        );
        // Without a deque imported, a list.
        let text = text.replace("import collections", "import os");
        assert_eq!(
            lines_of(&text, &told, None),
            [(6, "        self._hits = []".into())]
        );
    }

    #[test]
    fn a_call_another_method_makes_on_the_object_is_copied_before_a_return_that_ran() {
        let text = "class C:\n    def get(self, key):\n        if key not in self.d:\n            return None\n        return self.d[key]\n\n    def put(self, key, value):\n        self.d.touch(key)\n        self.d[key] = value\n";
        let mut reach = vec![Reach::Neutral; 9];
        for k in [2, 3, 4] {
            reach[k] = Reach::Ran;
        }
        let got = lines_of(text, &[], Some(&reach));
        assert!(
            got.contains(&(4, "        self.d.touch(key)".into())),
            "{got:?}"
        );
        // Not into a function the checks never ran, and not without a trace.
        assert!(!got.iter().any(|(a, _)| *a >= 8), "{got:?}");
        assert!(lines_of(text, &[], None).is_empty());
        // A name local to the copied line's function must be bound where it goes.
        let text = "class C:\n    def size(self):\n        return len(self.d)\n\n    def put(self, key):\n        self.d.touch(key)\n";
        let reach = vec![Reach::Ran; 6];
        assert!(lines_of(text, &[], Some(&reach)).is_empty());
    }

    #[test]
    fn an_accumulator_the_error_says_is_unbound_starts_before_its_outermost_loop() {
        let text = "def summary(answers):\n    \"\"\"Mean and share.\"\"\"\n    total = 0\n    for r in answers:\n        total += r\n        if r > 3:\n            positive += 1\n    return total, positive\n";
        let told = [Missing::Unbound("positive".into())];
        let got = of_file(text, &told, None, MAX_INSERTIONS);
        assert_eq!(
            (got[0].after, got[0].line.as_str(), got[0].told),
            (3, "    positive = 0", true)
        );
        // Untold, it is still written, as any accumulator never started; a list is started as a list.
        assert_eq!(lines_of(text, &[], None)[0], (3, "    positive = 0".into()));
        let text = "def rows(lines):\n    for l in lines:\n        out.append(l)\n    return out\n";
        assert_eq!(lines_of(text, &[], None)[0], (1, "    out = []".into()));
        // Not a parameter, a loop's variable, a name set once, a global, or a module's name.
        for text in [
            "def f(total, xs):\n    for x in xs:\n        total += x\n    return total\n",
            "def f(xs):\n    total = 1\n    for x in xs:\n        total += x\n    return total\n",
            "def f(xs):\n    global total\n    for x in xs:\n        total += x\n",
            "import sys\n\n\ndef f(p):\n    sys.path.append(p)\n",
        ] {
            let got = lines_of(text, &[], None);
            assert!(
                !got.iter()
                    .any(|(_, l)| l.ends_with(" = 0") || l.ends_with(" = []")),
                "{text:?}: {got:?}"
            );
        }
    }

    #[test]
    fn a_collection_attribute_never_added_to_records_the_method_s_latest_local_before_its_return() {
        let text = "class Limiter:\n    def __init__(self, most):\n        self.most = most\n        self.calls = []\n\n    def allow(self, at):\n        now = at + 1\n        if len(self.calls) >= self.most:\n            return False\n        return True\n";
        let reach = vec![Reach::Ran; 10];
        let got = lines_of(text, &[], Some(&reach));
        assert_eq!(
            got[..2],
            [
                (9, "        self.calls.append(now)".into()),
                (9, "        self.calls.append(at)".into())
            ]
        );
        // Not when the file adds to it somewhere, nor into a method the checks never ran.
        let added = text.replace(
            "        return True",
            "        self.calls.append(now)\n        return True",
        );
        assert!(
            !lines_of(&added, &[], Some(&reach))
                .iter()
                .any(|(_, l)| l.contains("calls.append"))
        );
        let mut not_run = reach.clone();
        for r in &mut not_run[6..] {
            *r = Reach::NotRun;
        }
        assert!(lines_of(text, &[], Some(&not_run)).is_empty());
        // A method that makes a record and returns it without keeping it keeps it.
        let made = "class Register:\n    def __init__(self):\n        self.adoptions = []\n\n    def adopt(self, who):\n        record = {\"who\": who}\n        return record\n\n    def count(self):\n        return len(self.adoptions)\n";
        let reach = vec![Reach::Ran; 10];
        let got = lines_of(made, &[], Some(&reach));
        assert!(
            got.contains(&(6, "        self.adoptions.append(record)".into())),
            "{got:?}"
        );
    }

    #[test]
    fn a_counting_dict_attribute_never_set_counts_what_the_method_reads() {
        let text = "class Limiter:\n    def __init__(self):\n        self.counts = {}\n\n    def allow(self, client):\n        used = self.counts.get(client, 0)\n        if used >= 3:\n            return False\n        return True\n";
        let reach = vec![Reach::Ran; 9];
        assert_eq!(
            lines_of(text, &[], Some(&reach)),
            [(
                8,
                "        self.counts[client] = self.counts.get(client, 0) + 1".into()
            )]
        );
    }

    #[test]
    fn the_last_group_a_loop_collects_on_each_change_is_collected_after_it() {
        let text = "def encode(data):\n    runs = []\n    current, count = data[0], 1\n    for s in data[1:]:\n        if s == current:\n            count += 1\n        else:\n            runs.append((current, count))\n            current, count = s, 1\n    return runs\n";
        let got = lines_of(text, &[], None);
        assert!(
            got.contains(&(9, "    runs.append((current, count))".into())),
            "{got:?}"
        );
        // Not when the line after the loop holds it already, nor with a name the loop binds.
        let flushed = text.replace(
            "    return runs",
            "    runs.append((current, count))\n    return runs",
        );
        assert!(
            !lines_of(&flushed, &[], None)
                .iter()
                .any(|(_, l)| l == "    runs.append((current, count))")
        );
        let own = text.replace("runs.append((current, count))", "runs.append((s, count))");
        assert!(
            !lines_of(&own, &[], None)
                .iter()
                .any(|(_, l)| l.starts_with("    runs.append"))
        );
    }

    #[test]
    fn a_group_collected_only_after_its_loop_is_collected_before_each_fresh_start() {
        let text = "def split(tracks, most):\n    sets, current, used = [], [], 0\n    for t, m in tracks:\n        if current and used + m > most:\n            current, used = [], 0\n        current.append(t)\n        used += m\n    if current:\n        sets.append(current)\n    return sets\n";
        assert!(
            lines_of(text, &[], None).contains(&(4, "            sets.append(current)".into())),
            "{:?}",
            lines_of(text, &[], None)
        );
        // Collected in the loop already: nothing to add.
        let text = text.replace(
            "            current, used = [], 0\n",
            "            sets.append(current)\n            current, used = [], 0\n",
        );
        assert!(
            !lines_of(&text, &[], None)
                .iter()
                .any(|(_, l)| l.contains("sets.append"))
        );
    }

    #[test]
    fn a_counter_started_and_never_counted_is_counted_in_the_if_blocks_of_its_loop() {
        let text = "def tally(ballots):\n    counts = {}\n    spoiled = 0\n    for mark in ballots:\n        if mark not in counts:\n            continue\n        counts[mark] += 1\n    return counts, spoiled\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(5, "            spoiled += 1".into())]
        );
        // Counted already, or never read: nothing.
        let counted = text.replace(
            "            continue\n",
            "            spoiled += 1\n            continue\n",
        );
        assert!(lines_of(&counted, &[], None).is_empty());
        let unread = text.replace("return counts, spoiled", "return counts");
        assert!(lines_of(&unread, &[], None).is_empty());
        // Started at 0 again and never counted: counted just before the `if` that tests it too.
        let stamps = "def free(visits):\n    stamps = 0\n    free = 0\n    for scoops in visits:\n        if scoops <= 0:\n            continue\n        if stamps == 10:\n            free += 1\n            stamps = 0\n    return free\n";
        let got = lines_of(stamps, &[], None);
        assert!(got.contains(&(6, "        stamps += 1".into())), "{got:?}");
        // A counter started in a chain of names.
        let chained = text.replace("    spoiled = 0\n", "    spoiled = valid = 0\n");
        let got = lines_of(&chained, &[], None);
        assert!(
            got.contains(&(5, "            spoiled += 1".into())),
            "{got:?}"
        );
        assert_eq!(
            chained_values("    a = b = 0  # both"),
            Some(vec![("a".into(), "0".into()), ("b".into(), "0".into())])
        );
        assert_eq!(chained_values("    a = b == 0"), None);
        assert_eq!(chained_values("    a[i] = b = 0"), None);
    }

    #[test]
    fn a_total_a_loop_reads_added_to_is_added_to_at_the_end_of_its_body() {
        let text = "def plan(rooms):\n    used = 0\n    done = []\n    for name, area in rooms:\n        needed = area * 2\n        if used + needed > 80:\n            break\n        done.append(name)\n    return done\n";
        let got = lines_of(text, &[], None);
        assert!(
            got.contains(&(8, "        used += needed".into())),
            "{got:?}"
        );
        // Not a call's name, nor a total that is not started at 0.
        let call = text.replace("used + needed", "used + size(area)");
        assert!(
            !lines_of(&call, &[], None)
                .iter()
                .any(|(_, l)| l.contains("used += size"))
        );
        let seeded = text.replace("used = 0", "used = rooms[0][1]");
        let got = lines_of(&seeded, &[], None);
        assert!(
            !got.iter().any(|(_, l)| l.contains("used += needed")),
            "{got:?}"
        );
    }

    #[test]
    fn a_loop_s_state_never_updated_takes_its_names_and_a_pending_value_is_flushed_after_it() {
        let text = "def longest(days):\n    best = current = 0\n    previous = None\n    for day in sorted(days):\n        if previous is not None and day - previous == 1:\n            current += 1\n        else:\n            current = 1\n        best = max(best, current)\n    return best\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(9, "        previous = day".into())]
        );
        // Started from what the loop walks, too.
        // A name its body binds from what it walks, after the loop's own names.
        let splits = "def splits(clocks):\n    out = []\n    prev = 0\n    for clock in clocks:\n        t = seconds(clock)\n        out.append(t - prev)\n    return out\n";
        let got = lines_of(splits, &[], None);
        let given = |n: &str| (6, format!("        prev = {n}"));
        assert!(
            got.contains(&given("clock")) && got.contains(&given("t")),
            "{got:?}"
        );
        let usage = "def usage(readings):\n    out = []\n    previous = readings[0][1]\n    for month, value in readings[1:]:\n        out.append((month, value - previous))\n    return out\n";
        let got = lines_of(usage, &[], None);
        assert!(
            got.contains(&(5, "        previous = value".into())),
            "{got:?}"
        );
        // What it walks handed to a call (`zip`), and a run's start begun anew in the block that ends a run.
        let runs = "def runs(hours):\n    result = []\n    start = hours[0]\n    for prev, hour in zip(hours, hours[1:]):\n        if hour != prev + 1:\n            result.append((start, prev))\n    result.append((start, hours[-1]))\n    return result\n";
        let got = lines_of(runs, &[], None);
        assert!(
            got.contains(&(6, "            start = hour".into()))
                && got.contains(&(6, "        start = hour".into())),
            "{got:?}"
        );
        let set = text.replace(
            "        best = max",
            "        previous = day\n        best = max",
        );
        assert!(
            !lines_of(&set, &[], None)
                .iter()
                .any(|(_, l)| l.ends_with("= day"))
        );
        let text = "def basis(trades):\n    spent = 0.0\n    bought = 0.0\n    for _sym, qty, price in trades:\n        spent += qty * price\n    return spent / bought if bought else 0.0\n";
        assert_eq!(
            lines_of(text, &[], None),
            [
                (5, "        bought += qty".into()),
                (5, "        bought += price".into())
            ]
        );
        let text = "def tokenize(text):\n    tokens = []\n    current = \"\"\n    for ch in text:\n        if ch == \" \":\n            current = flush(current, tokens)\n        else:\n            current += ch\n    return tokens\n";
        assert_eq!(
            lines_of(text, &[], None)[0],
            (8, "    current = flush(current, tokens)".into())
        );
    }

    #[test]
    fn a_group_stored_under_a_key_and_never_started_afresh_is_reset_where_the_key_changes() {
        let log = "def parse(lines):\n    log = {}\n    room = None\n    items = {}\n    for line in lines:\n        word, value = line.split()\n        if word == \"room\":\n            if room is not None:\n                log[room] = items\n            room = int(value)\n        else:\n            items[word] = items.get(word, 0) + int(value)\n    return log\n";
        let lines: Vec<&str> = log.lines().collect();
        let got = groups_never_reset(&lines, &Def::all(&lines));
        assert_eq!(
            got.first(),
            Some(&(9, "            items = {}".to_string())),
            "{got:?}"
        );
        // A collection appended starts afresh just after it is appended.
        let scenes = log.replace("log[room] = items", "scenes.append((room, items))");
        let lines: Vec<&str> = scenes.lines().collect();
        let got = groups_never_reset(&lines, &Def::all(&lines));
        assert_eq!(
            got.first(),
            Some(&(8, "                items = {}".to_string())),
            "{got:?}"
        );
        // A block that takes the item it stored out of the list the loop walks gets a `break`.
        let alloc = "def allocate(traders, free):\n    plan = {}\n    for t in traders:\n        for i, number in enumerate(free):\n            if number:\n                plan[t] = number\n                free.pop(i)\n    return plan\n";
        let lines: Vec<&str> = alloc.lines().collect();
        let got = loop_exits(&lines, &Def::all(&lines), None);
        assert!(
            got.contains(&(6, "                break".to_string())),
            "{got:?}"
        );
    }

    #[test]
    fn a_group_collected_in_its_loop_and_never_started_afresh_is_reset_after_the_collection() {
        let text = "def chunks(items, size):\n    out = []\n    current = []\n    for item in items:\n        current.append(item)\n        if len(current) == size:\n            out.append(current)\n    return out\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(7, "            current = []".into())]
        );
        let reset = text.replace(
            "out.append(current)\n",
            "out.append(current)\n            current = []\n",
        );
        assert!(
            !lines_of(&reset, &[], None)
                .iter()
                .any(|(_, l)| l.ends_with("current = []"))
        );
    }

    #[test]
    fn split_parts_are_stripped_and_a_key_is_brought_to_the_case_of_the_dict_it_is_looked_up_in() {
        let text = "def tags(text):\n    out = []\n    for part in text.split(SEP):\n        if part:\n            out.append(part.lower())\n    return out\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(3, "        part = part.strip()".into())]
        );
        let stripped = text.replace("part.lower()", "part.strip().lower()");
        assert!(lines_of(&stripped, &[], None).is_empty());
        let text = "COUPONS = {\"SPRING10\": 0.1, 'VIP25': 0.25}\n\n\ndef discount(code):\n    \"\"\"The rate.\"\"\"\n    return COUPONS.get(code, 0.0)\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(5, "    code = code.strip().upper()".into())]
        );
        let lower = text
            .replace("SPRING10", "spring10")
            .replace("VIP25", "vip25");
        assert_eq!(
            lines_of(&lower, &[], None),
            [(5, "    code = code.strip().lower()".into())]
        );
        // Keys of mixed case, or a key already brought to the case, give nothing.
        let mixed = text.replace("VIP25", "Vip25");
        assert!(lines_of(&mixed, &[], None).is_empty());
        let done = text.replace("COUPONS.get(code,", "COUPONS.get(code.upper(),");
        assert!(lines_of(&done, &[], None).is_empty());
    }

    #[test]
    fn an_if_block_in_a_loop_that_does_not_leave_gets_its_continue_or_break() {
        let text = "def read(text):\n    skipped = 0\n    for raw in text.splitlines():\n        line = raw.strip()\n        if not line:\n            skipped += 1\n        parse(line)\n    return skipped\n";
        let reach = vec![Reach::Ran; 8];
        assert_eq!(
            lines_of(text, &[], Some(&reach)),
            [(6, "            continue".into())]
        );
        // A block that leaves already, or that ends the loop's body, gets none; one that ends by setting a name
        // gets a `break`.
        let leaves = text.replace("skipped += 1", "continue");
        assert!(
            !lines_of(&leaves, &[], Some(&reach))
                .iter()
                .any(|(_, l)| l.contains("continue") || l.contains("break"))
        );
        let text = "def first(xs):\n    found = None\n    for x in xs:\n        if x > 2:\n            found = x\n    return found\n";
        assert_eq!(
            lines_of(text, &[], Some(&reach)),
            [(5, "            break".into())]
        );
        // Not in an `if` the checks never ran.
        let mut not_run = reach.clone();
        not_run[3] = Reach::NotRun;
        assert!(lines_of(text, &[], Some(&not_run)).is_empty());
    }

    #[test]
    fn a_sibling_a_while_loop_s_step_a_cap_and_a_lowercase_part_are_inserted() {
        // A name kept adding to is started afresh beside the one that is (`length = 0` after `current = []`).
        let text = "def wrap(words, width):\n    lines = []\n    current = []\n    length = 0\n    for word in words:\n        if length + len(word) > width:\n            lines.append(current)\n            current = []\n        current.append(word)\n        length += len(word)\n    return lines\n";
        inserts(text, 8, "            length = 0");
        // Started as one of a tuple's names.
        let tuple = text.replace(
            "    lines = []\n    current = []\n    length = 0\n",
            "    lines, current, length = [], [], 0\n",
        );
        inserts(&tuple, 6, "            length = 0");
        let fresh = text.replace(
            "            current = []\n",
            "            current = []\n            length = 0\n",
        );
        assert!(
            !lines_of(&fresh, &[], None)
                .iter()
                .any(|(_, l)| l.trim() == "length = 0")
        );
        // A `while` loop that never moves on is stepped by the local never read, not by a name it changes.
        let text = "def dates(start, count, days):\n    step = days * 1\n    out = []\n    current = start\n    while len(out) < count:\n        out.append(current)\n    return out\n";
        inserts(text, 6, "        current += step");
        never_inserts(text, "out +=");
        let counted =
            "def f(xs):\n    i = 0\n    while i < len(xs):\n        print(xs[i])\n    return i\n";
        assert!(lines_of(counted, &[], None).contains(&(4, "        i += 1".into())));
        // A cap never read is applied to what the function it concerns returns; a cap read elsewhere is not.
        let text = "MAX_FINE = 10.0\nPER_DAY = 0.25\n\n\ndef fine(late):\n    \"\"\"The fine.\"\"\"\n    amount = late * PER_DAY\n    return round(amount, 2)\n\n\ndef other(x):\n    y = x\n    return y\n";
        inserts(text, 7, "    amount = min(amount, MAX_FINE)");
        never_inserts(text, "y = min");
        let read = text.replace("round(amount, 2)", "round(min(amount, MAX_FINE), 2)");
        never_inserts(&read, "MAX_FINE");
        // A cap read elsewhere, in a function whose docstring names it and whose body never reads it.
        let named = "MAX_FINE = 10.0\n\n\ndef fine(late):\n    \"\"\"The fine, never more than MAX_FINE.\"\"\"\n    amount = late * 0.25\n    return round(amount, 2)\n\n\ndef ok(owed):\n    return owed < MAX_FINE\n";
        inserts(named, 6, "    amount = min(amount, MAX_FINE)");
        never_inserts(
            &named.replace(", never more than MAX_FINE", ""),
            "min(amount",
        );
        // A floor read only on a card that applies no bound is as good as unread; past the block that changes
        // the value after its last assignment, just before the `return` too.
        let card = "MINIMUM_FARE = 6.0\n\n\ndef fare(miles, night):\n    amount = 3.2 + miles * 2.1\n    if night:\n        amount *= 1.5\n    return round(amount, 2)\n\n\ndef card():\n    return {\"minimum\": MINIMUM_FARE}\n";
        inserts(card, 7, "    amount = max(amount, MINIMUM_FARE)");
        inserts(card, 5, "    amount = max(amount, MINIMUM_FARE)");
        let applied = card.replace(
            "return {\"minimum\": MINIMUM_FARE}",
            "return 1.0 < MINIMUM_FARE",
        );
        never_inserts(&applied, "max(amount");
        // A row's field converted in place where the rows are read, another compared in another function:
        // converted beside it, wherever the ranking points.
        let rows = "def read(text):\n    rows = parse(text)\n    for row in rows:\n        row[\"wax_g\"] = float(row[\"wax_g\"])\n    return rows\n\n\ndef biggest(rows):\n    return max(rows, key=lambda r: r[\"jars\"])\n";
        inserts(rows, 4, "        row[\"jars\"] = float(row[\"jars\"])");
        inserts(rows, 4, "        row[\"jars\"] = int(row[\"jars\"])");
        // Split parts a docstring wants in lower case are lowered as well as stripped.
        let text = "def tags(raw):\n    \"\"\"A list of lowercase tags.\"\"\"\n    out = []\n    for tag in raw.split(\",\"):\n        out.append(tag)\n    return out\n";
        inserts(text, 4, "        tag = tag.strip()");
        inserts(text, 4, "        tag = tag.strip().lower()");
        let plain = text.replace("lowercase ", "");
        never_inserts(&plain, "lower()");
    }

    #[test]
    fn a_guard_a_docstring_promises_and_a_sort_before_a_median_are_inserted() {
        // The docstring says `or None`, and nothing returns it: a guard for each first parameter.
        let text = "def next_watering(last, interval=7):\n    \"\"\"The date it is next due, or None when never watered.\"\"\"\n    return last + interval\n";
        let got = lines_of(text, &[], None);
        assert_eq!(
            got,
            [
                (2, "    if not last: return None".into()),
                (2, "    if not interval: return None".into())
            ]
        );
        // None when it already returns the value, or says none.
        let guarded = text.replace(
            "    return last",
            "    if not interval:\n        return None\n    return last",
        );
        assert!(
            lines_of(&guarded, &[], None)
                .iter()
                .all(|(_, l)| !l.contains("if not"))
        );
        assert!(lines_of(&text.replace(", or None when never watered", ""), &[], None).is_empty());
        let zero = "def mean(xs):\n    \"\"\"The mean, or 0.0 for an empty list.\"\"\"\n    return sum(xs) / len(xs)\n";
        assert_eq!(
            lines_of(zero, &[], None),
            [(2, "    if not xs: return 0.0".into())]
        );
        // A median of a list built and indexed, never sorted: sorted just after it is built.
        let text = "def median_time(times):\n    seconds = [int(t) for t in times]\n    middle = len(seconds) // 2\n    return seconds[middle]\n";
        assert!(lines_of(text, &[], None).contains(&(2, "    seconds.sort()".into())));
        let sorted = text.replace("    middle =", "    seconds.sort()\n    middle =");
        never_inserts(&sorted, "sort");
        assert!(
            !lines_of(&text.replace("median_time", "first_time"), &[], None)
                .iter()
                .any(|(_, l)| l.contains("sort"))
        );
    }

    #[test]
    fn a_case_a_docstring_promises_is_given_after_an_assignment_then_to_the_parameter() {
        let text = "def slugify(title):\n    \"\"\"Return a lowercase slug.\"\"\"\n    text = fold(title)\n    slug = text.replace(\" \", \"-\")\n    return slug\n";
        assert_eq!(
            lines_of(text, &[], None),
            [
                (3, "    text = text.lower()".into()),
                (4, "    slug = slug.lower()".into()),
                (2, "    title = title.lower()".into())
            ]
        );
        let upper =
            "def clean(seq):\n    \"\"\"Drop spaces, use capital letters.\"\"\"\n    return seq\n";
        assert_eq!(
            lines_of(upper, &[], None),
            [(2, "    seq = seq.upper()".into())]
        );
        // Not where the case is already changed, nor where the docstring says nothing of it.
        assert!(
            lines_of(
                &text.replace("fold(title)", "fold(title).lower()"),
                &[],
                None
            )
            .is_empty()
        );
        assert!(lines_of(&text.replace("lowercase ", ""), &[], None).is_empty());
    }

    #[test]
    fn an_update_of_one_of_a_pair_is_copied_for_the_other_where_its_branch_lacks_it() {
        let text = "def table(matches):\n    t = {}\n    for home, away, hg, ag in matches:\n        if hg > ag:\n            t[home] += 3\n        elif ag > hg:\n            t[away] += 3\n        else:\n            t[home] += 1\n    return t\n";
        inserts(text, 9, "            t[away] += 1");
        let got = lines_of(text, &[], None);
        // Not where the branch updates both, nor for a name the loop never indexes the collection by.
        let both = text.replace(
            "            t[home] += 1\n",
            "            t[home] += 1\n            t[away] += 1\n",
        );
        assert!(
            !lines_of(&both, &[], None)
                .iter()
                .any(|(a, l)| *a >= 9 && l.contains("t["))
        );
        assert!(
            !got.iter()
                .any(|(_, l)| l.contains("t[hg]") || l.contains("t[ag]"))
        );
    }

    #[test]
    fn a_constant_never_read_is_put_to_use_where_a_function_concerns_it() {
        // Defaults merged under the keyword parameters.
        let text = "DEFAULTS = {\"sender\": \"Team\"}\n\n\ndef render(kind, **values):\n    \"\"\"Fill a template.\"\"\"\n    return fill(kind, values)\n";
        assert_eq!(
            lines_of(text, &[], None),
            [(5, "    values = {**DEFAULTS, **values}".into())]
        );
        let read = text.replace("fill(kind, values)", "fill(kind, {**DEFAULTS, **values})");
        assert!(lines_of(&read, &[], None).is_empty());
        // A comment marker cut off the text a function whose docstring speaks of comments reads.
        let text = "COMMENT = \"#\"\n\n\ndef parse_line(line):\n    \"\"\"A setting; a comment runs to the end.\"\"\"\n    text = line.strip()\n    return text\n";
        assert_eq!(
            lines_of(text, &[], None),
            [
                (6, "    text = text.split(COMMENT)[0].strip()".into()),
                (5, "    line = line.split(COMMENT)[0]".into())
            ]
        );
        assert!(lines_of(&text.replace("a comment runs", "it runs"), &[], None).is_empty());
        // A text of characters never read strips a text the function its docstring concerns makes.
        let text = "PUNCTUATION = \".,!?\"\n\n\ndef words(text):\n    \"\"\"Lower-cased words, punctuation removed.\"\"\"\n    out = []\n    for raw in text.split():\n        word = raw.lower()\n        out.append(word)\n    return out\n";
        let got = lines_of(text, &[], None);
        assert!(
            got.contains(&(8, "        word = word.strip(PUNCTUATION)".into())),
            "{got:?}"
        );
        let plain = text.replace("punctuation removed", "as they come");
        assert!(
            !lines_of(&plain, &[], None)
                .iter()
                .any(|(_, l)| l.contains("PUNCTUATION"))
        );
        // A number never read wraps or holds the local one of its words names.
        let text = "MINUTES_PER_DAY = 24 * 60\n\n\ndef length(start, end):\n    minutes = end - start\n    return minutes\n";
        let got = lines_of(text, &[], None);
        assert!(
            got.contains(&(5, "    minutes %= MINUTES_PER_DAY".into())),
            "{got:?}"
        );
        assert!(got.contains(&(5, "    minutes = min(minutes, MINUTES_PER_DAY)".into())));
        // Not a local its words do not name.
        let other = text.replace("minutes", "span");
        assert!(
            !lines_of(&other, &[], None)
                .iter()
                .any(|(_, l)| l.contains("MINUTES_PER_DAY"))
        );
    }

    #[test]
    fn odd_files_give_no_insertion_and_no_panic() {
        let every = [
            Missing::Name("x".into()),
            Missing::Attribute("y".into()),
            Missing::Unbound("s".into()),
            Missing::Value,
        ];
        for text in [
            "",
            "def",
            "def f(:",
            "def f():\n",
            "def f(a,\n      b):\n    return",
            "class C:\n\tdef __init__(self):\n\t\tself.a = 1\n\tdef g(self):\n\t\tself.y.append(1)",
            "def f(s):\r\n    s = s.strip()\r\n    if s in \"é\u{1F600}\":\r\n        pass\r\n",
            "def f():\n    seen = set()\n    if in seen:\n        x",
            "def f():\n    x = \"unterminated\n    if x in",
            "    return y\n",
        ] {
            let reach = vec![Reach::Ran; 8];
            for i in of_file(text, &every, Some(&reach), MAX_INSERTIONS) {
                assert!(
                    i.after >= 1 && i.after <= text.lines().count(),
                    "{text:?}: {i:?}"
                );
            }
        }
    }

    #[test]
    fn a_line_is_inserted_with_the_ending_of_the_line_before_it() {
        assert_eq!(with_inserted("a\r\nb\r\n", 1, "x"), "a\r\nx\r\nb\r\n");
        assert_eq!(with_inserted("a\nb", 2, "x"), "a\nb\nx");
        assert_eq!(with_inserted("a\nb\n", 2, "x"), "a\nb\nx\n");
    }
}
