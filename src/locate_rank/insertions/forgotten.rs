//! Insertions for a step a function forgets though the file has what it needs: a count kept under a dict's key
//! started at 0 and never counted, a tally of every key started at 0 and tested but never counted, a record compared against and never kept, a branch that finds the other answer
//! and falls through to the usual one, a function that returns inside a loop and falls off its end, a normalising
//! function the file defines and a loop never calls, a helper the file defines and nothing calls, a dict a loop
//! tests for a key and never marks it in, an item chosen out of a collection handed in and never taken out of it,
//! a running number never started afresh where its loop notices the group change, an item a search loop finds
//! and never returns, and an item moved to a new position in a list and never taken out of its old one. Pure: lines in, lines out.

use super::super::{defines, is_identifier, is_name, tokens};
use super::{
    Def, block_below, code_of, code_with_strings, ends_flow, first_values, first_word, indent_of,
    unread_constants,
};

/// The first words of a function's name that say it brings a value to one form (`normalize_unit`).
const NORMALISING: &[&str] = &[
    "normalize",
    "normalise",
    "canonical",
    "canonicalize",
    "canonicalise",
    "standardize",
    "standardise",
    "clean",
];

/// Whether a function's name says it brings a value to one form: its first word is one of [`NORMALISING`].
pub(in crate::locate_rank) fn normalising(name: &str) -> bool {
    let first = name.split('_').next().unwrap_or("").to_ascii_lowercase();
    NORMALISING.contains(&first.as_str())
}

/// The most `return` lines one function is given by [`returns_fallen_through`].
const MAX_FALLEN: usize = 2;

/// The keys a dict literal of the file starts at 0 (`{"renewals": 0}`), with the quote they are written in.
fn zero_keys(lines: &[&str]) -> Vec<(String, char)> {
    let mut out: Vec<(String, char)> = Vec::new();
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let q = chars[i];
            if q != '"' && q != '\'' {
                i += 1;
                continue;
            }
            let Some(len) = chars[i + 1..].iter().position(|c| *c == q) else {
                break;
            };
            let key: String = chars[i + 1..i + 1 + len].iter().collect();
            let rest: String = chars[i + 2 + len..].iter().collect();
            let value = rest.trim_start().strip_prefix(':').map(str::trim_start);
            let zero = value.is_some_and(|v| {
                v.strip_prefix('0')
                    .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '.'))
            });
            if zero && is_name(&key) && !out.iter().any(|(k, _)| *k == key) {
                out.push((key, q));
            }
            i += len + 2;
        }
    }
    out
}

/// Whether a line of the file sets the key `["key"]` of some dict (`x["key"] += 1`, `x["key"] = n`).
fn key_set(lines: &[&str], key: &str, q: char) -> bool {
    key_written(lines, key, q, &["+=", "-=", "*="])
}

/// Whether a line of the file assigns what a dict holds under `key` (in quote `q`), or follows that subscript
/// with one of `ops` (`+=`, `.append(`).
pub(super) fn key_written(lines: &[&str], key: &str, q: char, ops: &[&str]) -> bool {
    let subscript = format!("[{q}{key}{q}]");
    lines.iter().any(|l| {
        l.match_indices(&subscript).any(|(at, s)| {
            let after = l[at + s.len()..].trim_start();
            ops.iter().any(|o| after.starts_with(o))
                || (after.starts_with('=') && !after.starts_with("=="))
        })
    })
}

/// A count a dict literal starts at 0 (`"renewals": 0`) that no line ever counts, read by a function through a
/// name (`loan["renewals"] >= MAX_RENEWALS`, `(priority, queue["seq"], job)`): `loan["renewals"] += 1` at the end
/// of that function's body, before its last `return`.
pub(in crate::locate_rank) fn key_counts_never_counted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (key, q) in zero_keys(lines) {
        if key_set(lines, &key, q) {
            continue;
        }
        let subscript = format!("[{q}{key}{q}]");
        for d in defs {
            let Some(dict) = d.body.iter().find_map(|&b| {
                let at = lines[b].find(&subscript)?;
                let before = lines[b][..at].trim_end();
                let start = before
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                let name = &before[start..];
                (is_name(name) && before.len() == at).then(|| name.to_string())
            }) else {
                continue;
            };
            let (Some(&last), Some(&first)) = (d.body.last(), d.body.first()) else {
                continue;
            };
            let at = if first_word(lines[last]) == "return" && indent_of(lines[last]) == d.indent {
                match d.body.iter().rev().nth(1) {
                    Some(&p) => p,
                    None => first.saturating_sub(1),
                }
            } else {
                last
            };
            out.push((at, format!("{}{dict}{subscript} += 1", d.indent)));
        }
    }
    out
}

/// A tally a function starts at 0 for every key (`used = {horse: 0 for horse in horses}`, `dict.fromkeys(horses,
/// 0)`), tests in an `if` (`if used[horse] < RIDES_PER_DAY:`) and never writes: the key counted at the end of
/// that `if` block, before the `break` or `return` that ends it (`used[horse] += 1`).
pub(in crate::locate_rank) fn tallies_never_counted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let code = |b: usize| code_with_strings(lines[b]).trim();
        let tallies: Vec<&str> = d
            .body
            .iter()
            .filter_map(|&b| tally_started(code(b)))
            .collect();
        for name in tallies {
            let open = format!("{name}[");
            let written = d.body.iter().any(|&b| {
                code(b).strip_prefix(&open).is_some_and(|r| {
                    r.split_once(']').is_some_and(|(_, op)| {
                        [" =", " +=", " -="].iter().any(|o| op.starts_with(o))
                    })
                })
            });
            if written {
                continue;
            }
            for (k, &b) in d.body.iter().enumerate() {
                let c = code(b);
                let Some(at) = c.find(&open).filter(|_| c.starts_with("if ")) else {
                    continue;
                };
                let Some((key, _)) = c[at + open.len()..].split_once(']') else {
                    continue;
                };
                let block = block_below(lines, &d.body[k + 1..], indent_of(lines[b]).len());
                let place = match block.as_slice() {
                    [.., before, last] if ends_flow(lines[*last]) => *before,
                    [.., last] if !ends_flow(lines[*last]) => *last,
                    _ => continue,
                };
                let indent = indent_of(lines[block[0]]);
                out.push((place, format!("{indent}{name}[{key}] += 1")));
            }
        }
    }
    out
}

/// The name a line starts at 0 for every key: `name = {k: 0 for k in ...}` or `name = dict.fromkeys(..., 0)`.
fn tally_started(code: &str) -> Option<&str> {
    let (name, value) = code.split_once(" = ")?;
    let zero_each = value.starts_with('{') && value.ends_with('}') && value.contains(": 0 for ")
        || value.starts_with("dict.fromkeys(") && value.ends_with(", 0)");
    (is_name(name) && zero_each).then_some(name)
}

/// A count a dict literal starts at 0 (`"lost": 0`) under each of a table's entries, that no line ever counts, and
/// a function with a parameter it never reads (`loser`) that counts another key of the entry another parameter
/// names (`table[winner]["won"] += 1`): the same count for the unread parameter's entry and the count never made
/// just after it (`table[loser]["lost"] += 1`).
pub(in crate::locate_rank) fn entry_counts_never_counted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let keys: Vec<(String, char)> = zero_keys(lines)
        .into_iter()
        .filter(|(k, q)| !key_set(lines, k, *q))
        .collect();
    let mut out = Vec::new();
    for d in defs {
        let body: Vec<Vec<String>> = d.body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
        let unread = d
            .params
            .iter()
            .filter(|p| !body.iter().flatten().any(|t| t == *p));
        for p in unread {
            for (&b, t) in d.body.iter().zip(&body) {
                // `table [ winner ] [ "won" ] += ...`: strings are blanked in the tokens.
                let counted = t.len() > 8
                    && is_name(&t[0])
                    && t[1] == "["
                    && d.params.contains(&t[2])
                    && t[3] == "]"
                    && t[4] == "["
                    && t.iter().any(|w| w == "+=");
                if !counted {
                    continue;
                }
                for (key, q) in &keys {
                    let indent = indent_of(lines[b]);
                    out.push((b, format!("{indent}{}[{p}][{q}{key}{q}] += 1", t[0])));
                }
            }
        }
    }
    out
}

/// A dict parameter a function hands with another to the call of a guard (`if not in_stock(stock, parts): raise
/// ...`) and never writes, where a loop of the function walks the other in pairs (`for part, n in
/// parts.items():`): each pair's count taken off the first's entry first in the loop's body (`stock[part] -= n`),
/// then added to it.
pub(in crate::locate_rank) fn entries_never_taken(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let body = d.tokens(lines);
        let written = |x: &str| {
            body.iter().any(|t| {
                t.first().is_some_and(|f| f == x)
                    && matches!(t.get(1).map(String::as_str), Some("[" | "."))
                    && t.iter()
                        .any(|o| matches!(o.as_str(), "=" | "+=" | "-=" | "pop" | "update"))
            })
        };
        let guards: Vec<&Vec<String>> = body
            .iter()
            .filter(|t| t.first().is_some_and(|f| f == "if") && t.contains(&"(".to_string()))
            .collect();
        for (k, t) in body.iter().enumerate() {
            // `for a , b in y . items ( ) :`
            let [head, a, comma, b, inn, y, dot, items, ..] = t.as_slice() else {
                continue;
            };
            let pairs =
                head == "for" && comma == "," && inn == "in" && dot == "." && items == "items";
            if !pairs || !d.params.contains(y) {
                continue;
            }
            let Some(&first) = d.body.get(k + 1) else {
                continue;
            };
            let indent = indent_of(lines[first]);
            let mut params: Vec<&String> = d.params.iter().filter(|x| *x != y).collect();
            params.sort();
            for x in params {
                let checked = guards.iter().any(|g| g.contains(x) && g.contains(y));
                if checked && !written(x) {
                    for op in ["-=", "+="] {
                        out.push((d.body[k], format!("{indent}{x}[{a}] {op} {b}")));
                    }
                }
            }
        }
    }
    out
}

/// The most locals a count from a lookup table never read is tried with ([`counts_from_unread_tables`]).
const MAX_LOOKED_UP: usize = 3;

/// A count a dict literal starts at 0 (`{"minutes": 0, "majors": 0}`) that no line counts, where a function binds
/// a name to the dict that literal makes (`row = table.setdefault(name, {...})`), and a module constant that is a
/// dict no line reads (`MINUTES = {"minor": 2, ...}`): the table's value for each local bound before it added to
/// the count just after that line (`row["minutes"] += MINUTES[kind]`), the locals bound last first.
pub(in crate::locate_rank) fn counts_from_unread_tables(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let tables: Vec<String> = unread_constants(lines)
        .into_iter()
        .filter(|(_, _, value)| value.trim_start().starts_with('{'))
        .map(|(_, name, _)| name)
        .collect();
    if tables.is_empty() {
        return Vec::new();
    }
    let keys: Vec<(String, char)> = zero_keys(lines)
        .into_iter()
        .filter(|(k, q)| !key_set(lines, k, *q))
        .collect();
    let mut out = Vec::new();
    for d in defs {
        let mut seen: Vec<String> = Vec::new();
        for &b in &d.body {
            let t = tokens(&code_of(lines[b]));
            let literal = |(k, q): &&(String, char)| {
                let quoted = format!("{q}{k}{q}");
                lines[b].contains(&quoted)
            };
            let bound = t.len() > 2 && is_name(&t[0]) && t[1] == "=" && d.bound.contains(&t[0]);
            if bound {
                let indent = indent_of(lines[b]);
                for (key, q) in keys.iter().filter(literal) {
                    for table in &tables {
                        let latest = seen.iter().rev().filter(|l| **l != t[0]);
                        for local in latest.take(MAX_LOOKED_UP) {
                            let line = format!("{indent}{}[{q}{key}{q}] += {table}[{local}]", t[0]);
                            out.push((b, line));
                        }
                    }
                }
            }
            // The names this line binds, the latest last.
            let binds = defines(&t);
            for w in t.iter().filter(|w| binds.contains(*w)) {
                seen.retain(|s| s != w);
                seen.push(w.clone());
            }
        }
    }
    out
}

/// A budget a loop tests against and never changes: in `if cost <= tickets:` (or `tickets >= cost`), where no line
/// of the function writes `tickets`, the cost taken off it at the end of the block (`tickets -= cost`); in `if need
/// > remaining:` (or `remaining < need`), where the loop takes from `remaining` elsewhere and the block never sets
/// it, the block refilling it from each parameter the function does not loop over (`remaining = stock`).
pub(in crate::locate_rank) fn budgets_never_changed(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let body: Vec<Vec<String>> = d.body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
        let written = |name: &str, op: &str, among: &[Vec<String>]| {
            among
                .iter()
                .any(|t| t.first().is_some_and(|f| f == name) && t.get(1).is_some_and(|o| o == op))
        };
        let looped: Vec<&String> = body
            .iter()
            .filter(|t| t.first().is_some_and(|f| f == "for"))
            .flat_map(|t| t.iter().skip_while(|w| *w != "in"))
            .collect();
        for (k, t) in body.iter().enumerate() {
            // `if a op b :`, both plain names.
            let [head, a, op, b, colon] = t.as_slice() else {
                continue;
            };
            if !matches!(head.as_str(), "if" | "elif") || colon != ":" || !is_name(a) || !is_name(b)
            {
                continue;
            }
            if !matches!(op.as_str(), "<=" | "<" | ">=" | ">") {
                continue;
            }
            // Which side is the budget: a parameter never written (spent), or a name the loop takes from
            // (refilled); `enough` when the test says the cost fits in it.
            let never_written = |n: &str| !["=", "-=", "+="].iter().any(|o| written(n, o, &body));
            let spendable = |n: &String| d.params.contains(n) && never_written(n);
            let taken = |n: &String| written(n, "-=", &body);
            let right_small = matches!(op.as_str(), "<=" | "<");
            let side = |left: bool, right: bool| match (left, right) {
                (false, true) => Some((b, a, right_small)),
                (true, false) => Some((a, b, !right_small)),
                _ => None,
            };
            let (budget, cost, spend) =
                match (side(spendable(a), spendable(b)), side(taken(a), taken(b))) {
                    (Some((bu, co, true)), _) => (bu, co, true),
                    (_, Some((bu, co, false))) => (bu, co, false),
                    _ => continue,
                };
            let depth = indent_of(lines[d.body[k]]).len();
            let block = block_below(lines, &d.body[k + 1..], depth);
            let (Some(&first), Some(&last)) = (block.first(), block.last()) else {
                continue;
            };
            if ends_flow(lines[last]) {
                continue;
            }
            let indent = indent_of(lines[first]);
            let in_block: Vec<Vec<String>> =
                block.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
            if spend {
                out.push((last, format!("{indent}{budget} -= {cost}")));
            } else if !written(budget, "=", &in_block) {
                let refills = d
                    .params
                    .iter()
                    .filter(|p| *p != budget && *p != cost && !looped.contains(p));
                let mut refills: Vec<&String> = refills.collect();
                refills.sort();
                for p in refills {
                    out.push((last, format!("{indent}{budget} = {p}")));
                }
            }
        }
    }
    out
}

/// A function that returns another answer in one branch (`return default` where the entry is missing) and ends
/// with the usual one (`return value`), with an `if` block at its own depth that never leaves (`if now >=
/// expires_at: del cache[key]`): the other answer at the end of that block. The other answer is a parameter or
/// `None`, at most [`MAX_FALLEN`] blocks a function. With no other answer, a block that finds a key missing which
/// the usual answer then looks up (`if code not in PROMO_CODES:` before `PROMO_CODES[code]`) returns the first
/// other parameter the usual answer reads (`return total`), and a block that finds a name the usual answer or a
/// later line at the function's depth reads to be nothing (`if size is None:` before `return price(size)`, `if
/// snatch is None or clean_jerk is None:` before `snatch + clean_jerk`) returns `None`.
pub(in crate::locate_rank) fn returns_fallen_through(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let Some(&last) = d.body.last() else { continue };
        let value_of = |b: usize| {
            let code = code_of(lines[b]);
            let t = code.trim();
            t.strip_prefix("return ").map(|v| v.trim().to_string())
        };
        if indent_of(lines[last]) != d.indent {
            continue;
        }
        let Some(usual) = value_of(last) else {
            continue;
        };
        let mut others: Vec<String> = Vec::new();
        for &b in &d.body {
            let Some(v) = value_of(b) else { continue };
            let plain = v == "None" || (d.params.contains(&v) && v != "self");
            if v != usual && plain && !others.contains(&v) {
                others.push(v);
            }
        }
        let guarded = others.is_empty();
        let usual_reads = tokens(&code_of(lines[last]));
        if guarded {
            // No other answer: a parameter the usual answer reads, where a block tests that a key is missing
            // and the usual answer then looks it up (`if code not in PROMO_CODES:` ... `PROMO_CODES[code]`).
            let read = &usual_reads;
            let mut params: Vec<&String> = d
                .params
                .iter()
                .filter(|p| *p != "self" && read.contains(p))
                .collect();
            params.sort_by_key(|p| read.iter().position(|t| t == *p));
            others.extend(params.into_iter().cloned());
        }
        let none = "None".to_string();
        let other = others.first().unwrap_or(&none);
        let mut given = 0;
        for (k, &b) in d.body.iter().enumerate() {
            if indent_of(lines[b]) != d.indent || first_word(lines[b]) != "if" {
                continue;
            }
            let h = tokens(&code_of(lines[b]));
            let usual = &usual_reads;
            let missing_key = match h.as_slice() {
                [_, key, not, is_in, dict, ..] if not == "not" && is_in == "in" => usual
                    .windows(4)
                    .any(|w| w[0] == *dict && w[1] == "[" && w[2] == *key && w[3] == "]")
                    .then_some(key),
                _ => None,
            };
            // Or a block that finds a name the usual answer reads to be nothing (`if size is None:` before
            // `price(size)`): the answer for nothing, `None`.
            // Read by the usual answer, or by a later line at the function's depth (`snatch + clean_jerk`).
            let later = |n: &String| {
                d.body[k + 1..].iter().any(|&j| {
                    indent_of(lines[j]) == d.indent && tokens(&code_of(lines[j])).contains(n)
                })
            };
            let nothing = tested_for_nothing(&h)
                .into_iter()
                .find(|n| is_name(n) && (usual.contains(n) || later(n)));
            if guarded && missing_key.is_none() && nothing.is_none() {
                continue;
            }
            let other = if guarded && missing_key.is_none() {
                &none
            } else {
                others
                    .iter()
                    .find(|o| Some(*o) != missing_key)
                    .unwrap_or(other)
            };
            let block = block_below(lines, &d.body[k + 1..], d.indent.len());
            let leaves = block.iter().any(|&i| ends_flow(lines[i]));
            let (Some(&first), Some(&end)) = (block.first(), block.last()) else {
                continue;
            };
            if leaves || given == MAX_FALLEN {
                continue;
            }
            out.push((end, format!("{}return {other}", indent_of(lines[first]))));
            given += 1;
        }
    }
    out
}

/// The names an `if` header's tokens `h` test for nothing, one or several joined by `or` (`if size is None:`, `if
/// not size:`, `if snatch is None or clean_jerk is None:`); none for any other header.
fn tested_for_nothing(h: &[String]) -> Vec<&String> {
    let Some(cond) = h
        .strip_prefix(&["if".to_string()])
        .and_then(|c| c.strip_suffix(&[":".to_string()]))
    else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for part in cond.split(|t| t == "or") {
        match part {
            [n, is, none] if is == "is" && none == "None" => names.push(n),
            [not, n] if not == "not" => names.push(n),
            _ => return Vec::new(),
        }
    }
    names
}

/// The most `if` blocks one attribute never counted is counted in.
const MAX_ATTRIBUTE_COUNTS: usize = 3;

/// A count an object keeps (`self.hits = 0` in `__init__`, or `0.0`) that the file reads and no line ever changes: a
/// parameter a method adds to it in a test (`if self.booked + rooms > self.max_rooms:`), or one of its own name
/// (`self.hours` and `log_visit(self, client, hours)`), added before that method's last `return` (`self.booked +=
/// rooms`), else, in a method that keeps another tally (`self.takings += price`),
/// the parameter it adds elsewhere (or 1) added just after it (`self.items_sold += quantity`), or in one that takes
/// an item off another collection (`self.orders.pop(0)`) one more after that (`self.completed += 1`), and `self.hits += 1`
/// first in each `if` block of its other methods (the case it counts), at most [`MAX_ATTRIBUTE_COUNTS`] of those.
pub(in crate::locate_rank) fn attribute_counts_never_counted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let prose = super::super::prose_lines(&lines.join("\n"));
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for &b in &init.body {
            let code = code_of(lines[b]);
            let Some(attr) = code
                .trim()
                .strip_prefix("self.")
                .and_then(|r| r.strip_suffix("= 0").or_else(|| r.strip_suffix("= 0.0")))
                .map(str::trim)
                .filter(|a| is_name(a))
            else {
                continue;
            };
            let field = format!("self.{attr}");
            let mut set = 0;
            let mut read = false;
            for l in lines {
                let t = tokens(&code_of(l));
                for (i, w) in t.iter().enumerate() {
                    let on_self = i >= 2 && t[i - 1] == "." && t[i - 2] == "self";
                    if w != attr || !on_self {
                        continue;
                    }
                    let next = t.get(i + 1).map(String::as_str);
                    if i == 2 && matches!(next, Some("=" | "+=" | "-=")) {
                        set += 1;
                    } else {
                        read = true;
                    }
                }
            }
            // Or read in an f-string's field (`f"{self.completed} done"`).
            let field_read = |l: &&str| {
                let with = code_with_strings(l);
                with.contains(['f', 'F']) && with.contains(&format!("{{{field}"))
            };
            if set != 1 || !(read || lines.iter().any(field_read)) {
                continue;
            }
            let methods = defs.iter().filter(|m| {
                m.name != "__init__" && m.params.contains("self") && m.indent == init.indent
            });
            let mut given = 0;
            for m in methods {
                // A method that adds a parameter to it in a test (`if self.rooms_booked + rooms > ...`): the
                // parameter added, before its last `return` (or after its last line).
                let toks = m.tokens(lines);
                // Or a parameter of the count's own name (`log_visit(self, client, hours)` for `self.hours`).
                let added = m.params.iter().filter(|p| *p != "self").find(|p| {
                    toks.iter().any(|u| {
                        u.windows(5).any(|w| {
                            (w[..4] == ["self", ".", attr, "+"] && w[4] == **p)
                                || (w[0] == **p && w[1..] == ["+", "self", ".", attr])
                        })
                    })
                });
                let added = added.or_else(|| m.params.iter().find(|p| *p == attr));
                // Or the one parameter of a method whose body is only its docstring (`record_payment(self,
                // amount)` over `"""Record money received."""`: `self.paid += amount`).
                let stub = m.body.iter().all(|&b| prose.get(b) == Some(&true));
                let only: Vec<&String> = m.params.iter().filter(|p| *p != "self").collect();
                let added = added.or(match only.as_slice() {
                    [p] if stub => Some(*p),
                    _ => None,
                });
                if let (Some(p), Some(&last)) = (added, m.body.last()) {
                    let returns =
                        first_word(lines[last]) == "return" && indent_of(lines[last]) == m.indent;
                    let before = m.body.iter().rev().nth(1).copied().filter(|_| returns);
                    out.push((
                        before.unwrap_or(last),
                        format!("{}{field} += {p}", m.indent),
                    ));
                } else if let Some(count) = counted_beside(lines, m, &toks, attr) {
                    out.push(count);
                }
                for (j, &h) in m.body.iter().enumerate() {
                    let first = m.body.get(j + 1).copied();
                    let opens = matches!(first_word(lines[h]).as_str(), "if" | "elif" | "else");
                    let Some(first) = first.filter(|&f| {
                        opens && indent_of(lines[f]).len() > indent_of(lines[h]).len()
                    }) else {
                        continue;
                    };
                    if given < MAX_ATTRIBUTE_COUNTS {
                        given += 1;
                        out.push((h, format!("{}{field} += 1", indent_of(lines[first]))));
                    }
                }
            }
        }
    }
    out
}

/// Where a method that never adds a parameter to the count `self.{attr}` counts it: beside another tally it keeps
/// (`self.takings += price`), by the parameter it adds elsewhere (`... + quantity`) or else by 1, or after an item
/// it takes off another collection (`order = self.orders.pop(0)`), by 1; just after that line.
fn counted_beside(
    lines: &[&str],
    m: &Def,
    toks: &[Vec<String>],
    attr: &str,
) -> Option<(usize, String)> {
    let field = format!("self.{attr}");
    let tally = toks
        .iter()
        .position(|u| u.len() > 4 && u[..2] == ["self", "."] && u[2] != attr && u[3] == "+=");
    if let Some(k) = tally {
        let mut params: Vec<&String> = m.params.iter().filter(|p| *p != "self").collect();
        params.sort();
        let step = params.into_iter().find(|p| {
            toks.iter()
                .any(|u| u.windows(2).any(|w| w[0] == "+" && w[1] == **p))
        });
        let step = step.map_or("1", String::as_str);
        let at = m.body[k];
        return Some((at, format!("{}{field} += {step}", indent_of(lines[at]))));
    }
    let taken = toks.iter().position(|u| {
        u.windows(5)
            .any(|w| w[..2] == ["self", "."] && w[2] != attr && w[3] == "." && w[4] == "pop")
    })?;
    let at = m.body[taken];
    Some((at, format!("{}{field} += 1", indent_of(lines[at]))))
}

/// A search that finds an item in its loop, marks it or works on it, and never hands it back: a function whose
/// only answer is `return None` at its end, with a `for x in ...:` loop at its own depth holding an `if` block
/// that never leaves (`if order["status"] == "waiting": order["status"] = "steaming"`): `return x` at the end of
/// that block, or for a loop that unpacks (`for number, seats in ...`) each of its first two names.
pub(in crate::locate_rank) fn found_never_returned(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let Some(&last) = d.body.last() else { continue };
        let none = |b: usize| code_of(lines[b]).trim() == "return None";
        let only_none = d
            .body
            .iter()
            .filter(|&&b| first_word(lines[b]) == "return")
            .all(|&b| none(b));
        if indent_of(lines[last]) != d.indent || !none(last) || !only_none {
            continue;
        }
        let depth = d.indent.len();
        for (k, &b) in d.body.iter().enumerate() {
            let t = tokens(&code_of(lines[b]));
            // The names the loop binds (`for number, seats in ...`), the first first.
            let Some(within) = t.iter().position(|w| w == "in").filter(|_| t[0] == "for") else {
                continue;
            };
            let found: Vec<&String> = t[1..within]
                .iter()
                .filter(|w| is_name(w) && *w != "_")
                .collect();
            let plain = t[1..within]
                .iter()
                .all(|w| is_name(w) || matches!(w.as_str(), "," | "(" | ")"));
            if found.is_empty() || !plain || indent_of(lines[b]).len() != depth {
                continue;
            }
            let block = block_below(lines, &d.body[k + 1..], depth);
            let Some(&first) = block.first() else {
                continue;
            };
            let inner = indent_of(lines[first]).len();
            for (j, &h) in block.iter().enumerate() {
                if first_word(lines[h]) != "if" || indent_of(lines[h]).len() != inner {
                    continue;
                }
                let body = block_below(lines, &block[j + 1..], inner);
                if let (Some(&top), Some(&end)) = (body.first(), body.last())
                    && !ends_flow(lines[end])
                {
                    for x in found.iter().take(2) {
                        out.push((end, format!("{}return {x}", indent_of(lines[top]))));
                    }
                }
            }
        }
    }
    out
}

/// The most values one function that falls off its end is given.
const MAX_LAST_VALUES: usize = 2;

/// A function that returns a value inside a loop or an `if` and, when none is found, falls off its end (`for people
/// in sorted(PARCEL_SIZES): if household <= people: return ...` and nothing after the loop): the answer its
/// docstring quotes (`"..., else 'large'."`: `return "large"`), a constant never read whose words it says
/// (`return STANDARD_DEPOSIT` for "anything not listed takes the standard deposit"), `False` where the others
/// are all `True`, or `0` where they may all be numbers, at the end of its body, at most [`MAX_LAST_VALUES`]; then
/// its first parameter refused (`raise ValueError(kind)`).
pub(in crate::locate_rank) fn ends_fallen_off(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let prose = super::super::prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for d in defs {
        let Some(&last) = d.body.last() else { continue };
        if indent_of(lines[last]) == d.indent || first_word(lines[last]) == "raise" {
            continue;
        }
        let returned: Vec<String> = d
            .body
            .iter()
            .filter(|&&b| first_word(lines[b]) == "return")
            .map(|&b| {
                code_of(lines[b]).trim()["return".len()..]
                    .trim()
                    .to_string()
            })
            .collect();
        if returned.is_empty() || returned.iter().any(|r| r.is_empty() || r == "None") {
            continue;
        }
        let mut values: Vec<String> = Vec::new();
        for &b in &d.docstring(&prose) {
            let doc = lines[b].replace("\"\"\"", "").replace("'''", "");
            for q in ['\'', '"'] {
                let parts: Vec<&str> = doc.split(q).collect();
                for quoted in parts.iter().skip(1).step_by(2).take(parts.len() / 2) {
                    let word = !quoted.is_empty()
                        && quoted.len() <= 24
                        && quoted
                            .chars()
                            .all(|c| c.is_alphanumeric() || "_- ".contains(c));
                    let value = format!("{q}{quoted}{q}");
                    if word && !values.contains(&value) && !returned.contains(&value) {
                        values.push(value);
                    }
                }
            }
        }
        // A constant never read whose words the docstring says (`STANDARD_DEPOSIT`: "... takes the standard
        // deposit").
        let said: Vec<String> = d
            .docstring(&prose)
            .iter()
            .flat_map(|&b| tokens(lines[b]))
            .map(|w| w.to_lowercase())
            .collect();
        for (_, name, _) in super::unread_constants(lines) {
            let lower = name.to_lowercase();
            if lower.split('_').all(|w| said.iter().any(|s| s == w)) && !values.contains(&name) {
                values.push(name);
            }
        }
        if returned.iter().all(|r| r == "True") {
            values.push("False".into());
        } else if returned.iter().all(|r| numeric(r)) {
            // A rate or an amount found in a table: none found is nothing (`return 0`).
            values.push("0".into());
        }
        for v in values.iter().take(MAX_LAST_VALUES) {
            out.push((last, format!("{}return {v}", d.indent)));
        }
        // Or what it was handed is refused: a kind nobody listed (`raise ValueError(kind)`).
        if let Some(p) = d.params.iter().find(|p| *p != "self") {
            out.push((last, format!("{}raise ValueError({p})", d.indent)));
        }
    }
    out
}

/// Whether a returned value may be a number: a number, a name or a subscript (`rate`, `RATES[kind]`), arithmetic
/// of them; not a string, a collection, a call or `True`/`False`.
fn numeric(value: &str) -> bool {
    let t = tokens(value);
    !t.is_empty()
        && !matches!(t[0].as_str(), "True" | "False" | "None" | "not")
        && value
            .chars()
            .all(|c| c.is_alphanumeric() || "_.[] +-*/".contains(c))
}

/// A function that returns a value elsewhere (`return 0.0` for an edge case) and ends on an assignment at its own
/// depth to a name it never reads (`pct = round(...)` last): that name returned after it (`return pct`).
pub(in crate::locate_rank) fn last_values_never_returned(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let (Some(&last), toks) = (d.body.last(), d.tokens(lines)) else {
            continue;
        };
        let t = &toks[toks.len() - 1];
        let returns = d.body.iter().any(|&b| first_word(lines[b]) == "return");
        if indent_of(lines[last]) != d.indent
            || !returns
            || t.len() < 3
            || t[1] != "="
            || !is_name(&t[0])
        {
            continue;
        }
        let read = toks[..toks.len() - 1].iter().any(|u| {
            u.iter()
                .enumerate()
                .any(|(i, w)| *w == t[0] && !(i == 0 && u.get(1).is_some_and(|o| o == "=")))
        });
        if !read {
            out.push((last, format!("{}return {}", d.indent, t[0])));
        }
    }
    out
}

/// A number a function starts before a `for` loop from a parameter or a number (`number = start_number`), that
/// the loop's block reads and no line of the function ever changes: stepped by one at the end of the block
/// (`number += 1`), so each item gets the next.
pub(in crate::locate_rank) fn numbers_never_stepped(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for l in d.loops(lines, &toks, &["for"]) {
            // Read in the block, an f-string's fields too (the tokens blank strings).
            let mentions = |name: &str| {
                l.block.iter().any(|&b| {
                    lines[b]
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .any(|w| w == name)
                })
            };
            for t in &toks[..l.at] {
                let [name, eq, value] = t.as_slice() else {
                    continue;
                };
                let number = value.bytes().all(|c| c.is_ascii_digit());
                if eq != "=" || !is_name(name) || !(number || d.params.contains(value)) {
                    continue;
                }
                let changed = toks.iter().filter(|u| *u != t).any(|u| {
                    u.first() == Some(name)
                        && u.get(1)
                            .is_some_and(|o| matches!(o.as_str(), "=" | "+=" | "-="))
                });
                if !changed && mentions(name) {
                    out.push((l.end, format!("{}{name} += 1", indent_of(lines[l.first]))));
                }
            }
        }
    }
    out
}

/// A function of one parameter that brings a value to one form (`def normalize_unit(unit):`), and a loop
/// elsewhere that binds a name of that parameter's (`for name, qty, unit in ingredients:`) in a function that never
/// calls it: `unit = normalize_unit(unit)` first in the loop's body.
pub(in crate::locate_rank) fn normalisers_never_called(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for f in defs {
        let mut params = f.params.iter().filter(|p| *p != "self");
        let (Some(p), None) = (params.next(), params.next()) else {
            continue;
        };
        if !normalising(&f.name) {
            continue;
        }
        for g in defs.iter().filter(|g| g.name != f.name) {
            let toks: Vec<Vec<String>> =
                g.body.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
            let calls = toks
                .iter()
                .any(|t| t.windows(2).any(|w| w[0] == f.name && w[1] == "("));
            if calls {
                continue;
            }
            for (k, t) in toks.iter().enumerate() {
                let Some(at) = t.iter().position(|w| w == "in") else {
                    continue;
                };
                if t.first().is_none_or(|w| w != "for") || !t[1..at].contains(p) {
                    continue;
                }
                let depth = indent_of(lines[g.body[k]]).len();
                let Some(&inner) = block_below(lines, &g.body[k + 1..], depth).first() else {
                    continue;
                };
                let indent = indent_of(lines[inner]);
                out.push((g.body[k], format!("{indent}{p} = {}({p})", f.name)));
            }
        }
    }
    out
}

/// The parameters of the function `name`, in order, as its one-line `def` writes them (no `self`, no starred
/// ones, defaults and annotations left out). None for a `def` the file does not write on one line.
fn ordered_params(lines: &[&str], name: &str) -> Option<Vec<String>> {
    let head = format!("def {name}(");
    let line = lines.iter().find(|l| l.trim_start().starts_with(&head))?;
    let inner = line.trim_start()[head.len()..].split_once(')')?.0;
    let mut out = Vec::new();
    for p in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let name = p.split([':', '=']).next().unwrap_or("").trim();
        if !is_name(name) {
            return None;
        }
        if name != "self" {
            out.push(name.to_string());
        }
    }
    Some(out)
}

/// A function the file defines, returns a value from and never calls or names anywhere else (`def to_kg(weight,
/// unit)`), where another function binds every one of its parameters' names (`unit = ...`, then `weight =
/// float(...)`): the first parameter given the function's answer just after the line that binds the last of them
/// (`weight = to_kg(weight, unit)`), a helper written and then forgotten.
pub(in crate::locate_rank) fn helpers_never_called(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let code: Vec<Vec<String>> = lines.iter().map(|l| tokens(&code_of(l))).collect();
    for f in defs {
        let Some(params) = ordered_params(lines, &f.name).filter(|p| !p.is_empty()) else {
            continue;
        };
        let returns = f.body.iter().any(|&b| {
            let t = &code[b];
            t.first().is_some_and(|w| w == "return") && t.len() > 1
        });
        let named = code.iter().filter(|t| t.contains(&f.name)).count();
        if !returns || named != 1 {
            continue;
        }
        for g in defs.iter().filter(|g| g.name != f.name) {
            let mut bound: Vec<&String> = params.iter().filter(|p| g.params.contains(*p)).collect();
            for &b in &g.body {
                let code = code_of(lines[b]);
                if code.trim_end().ends_with(':') {
                    continue;
                }
                let assigned = first_values(lines[b]);
                let before = bound.len();
                for p in &params {
                    if !bound.contains(&p) && assigned.iter().any(|(n, _)| n == p) {
                        bound.push(p);
                    }
                }
                if bound.len() == params.len() && before < bound.len() {
                    let call = format!("{}({})", f.name, params.join(", "));
                    out.push((b, format!("{}{} = {call}", indent_of(lines[b]), params[0])));
                    break;
                }
            }
        }
    }
    out
}

/// Whether the tokens `t` are those of `words`.
fn are(t: &[String], words: &[&str]) -> bool {
    t.len() == words.len() && t.iter().zip(words).all(|(a, b)| a == b)
}

/// A run length started before a loop at a number (`current = 0`), counted in the loop (`current += 1`) and read
/// there beside another name (`longest = max(longest, current)`), never started afresh in it: its first value
/// first in each block of the loop's `if`, `elif` or `else` that does not count it (`if temp <= threshold:
/// continue`), and before that at the block's end when the block reads the run and does not leave (`else: best =
/// max(best, streak)`, then `streak = 0`).
pub(in crate::locate_rank) fn streaks_never_reset(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let at = |b: usize| d.body.iter().position(|&x| x == b).unwrap_or(0);
        for (k, t) in toks.iter().enumerate() {
            if !matches!(t.first().map(String::as_str), Some("for" | "while")) {
                continue;
            }
            let depth = indent_of(lines[d.body[k]]).len();
            let block = block_below(lines, &d.body[k + 1..], depth);
            let starts = (0..k).flat_map(|j| first_values(lines[d.body[j]]));
            for (n, start) in starts.filter(|(_, v)| v.parse::<f64>().is_ok()) {
                let n = &n;
                let sets = |b: &usize, op: &str| {
                    let v = &toks[at(*b)];
                    v.first() == Some(n) && v.get(1).is_some_and(|o| o == op)
                };
                let counted: Vec<usize> = block.iter().copied().filter(|b| sets(b, "+=")).collect();
                let reset = block.iter().any(|b| sets(b, "="));
                let read = block.iter().any(|&b| {
                    let v = &toks[at(b)];
                    v.first() != Some(n) && v.contains(n)
                });
                if counted.is_empty() || reset || !read {
                    continue;
                }
                for &b in &block {
                    let v = &toks[at(b)];
                    if !matches!(v.first().map(String::as_str), Some("if" | "elif" | "else")) {
                        continue;
                    }
                    let inner = block_below(lines, &d.body[at(b) + 1..], indent_of(lines[b]).len());
                    let Some(&first) = inner.first() else {
                        continue;
                    };
                    if inner.iter().any(|i| counted.contains(i)) {
                        continue;
                    }
                    let reset = format!("{}{n} = {start}", indent_of(lines[first]));
                    // After the block's lines that read the run (`best = max(best, streak)`), unless it leaves.
                    let last = *inner.last().unwrap_or(&first);
                    let reads = inner.iter().any(|&i| toks[at(i)].contains(n));
                    if reads && !ends_flow(lines[last]) {
                        out.push((last, reset.clone()));
                    }
                    out.push((b, reset));
                }
            }
        }
    }
    out
}

/// An item put into a list at a position (`self.players.insert(at, challenger)`) by a function that never takes
/// anything out of that list (no `remove`, `pop` or `del`): a move that leaves the item where it was too. The item
/// taken out just before the insert (`self.players.remove(challenger)`), then just after it.
pub(in crate::locate_rank) fn moved_items_never_taken_out(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for (k, t) in toks.iter().enumerate() {
            // `LIST.insert(POSITION, ITEM)` with a plain name for the item, the list a name or `self.name`.
            let Some(m) = t
                .windows(3)
                .position(|w| w[0] == "." && w[1] == "insert" && w[2] == "(")
            else {
                continue;
            };
            let list = t[..m].concat();
            let plain_list = matches!(m, 1) || (m == 3 && t[0] == "self" && t[1] == ".");
            let [.., comma, item, close] = t.as_slice() else {
                continue;
            };
            if !plain_list || comma != "," || close != ")" || !is_name(item) || k == 0 {
                continue;
            }
            let takes = toks.iter().any(|u| {
                let code = u.concat();
                ["remove(", "pop(", "discard("]
                    .iter()
                    .any(|w| code.contains(&format!("{list}.{w}")))
                    || code.starts_with(&format!("del{list}["))
            });
            if takes {
                continue;
            }
            let (at, indent) = (d.body[k], indent_of(lines[d.body[k]]));
            let take = format!("{indent}{list}.remove({item})");
            out.push((d.body[k - 1], take.clone()));
            out.push((at, take));
        }
    }
    out
}

/// A list copied to be used up (`tiles = list(rack)`, `left = seats.copy()`) that a loop tests for its item (`if
/// letter not in tiles: return False`, `if seat in left:`) and no line ever takes from: `tiles.remove(letter)`
/// after the test's block (that leaves the loop's turn) or at the end of the block (that does not).
pub(in crate::locate_rank) fn pool_items_never_taken(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    const TAKING: &[&str] = &["remove", "pop", "discard", "clear"];
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let at = |b: usize| d.body.iter().position(|&x| x == b).unwrap_or(0);
        for (j, u) in toks.iter().enumerate() {
            let copy = u.len() > 3
                && is_name(&u[0])
                && u[1] == "="
                && (matches!(u[2].as_str(), "list" | "sorted") && u[3] == "("
                    || u.ends_with(&[".".into(), "copy".into(), "(".into(), ")".into()])
                    || u.ends_with(&["[".into(), ":".into(), "]".into()]));
            if !copy {
                continue;
            }
            let c = &u[0];
            let taken = toks.iter().any(|v| {
                v.windows(3)
                    .any(|w| w[0] == *c && w[1] == "." && TAKING.contains(&w[2].as_str()))
                    || v.first().is_some_and(|f| f == "del") && v.contains(c)
            });
            if taken {
                continue;
            }
            for (k, t) in toks.iter().enumerate().skip(j + 1) {
                let (Some("for"), Some(x), Some("in")) = (
                    t.first().map(String::as_str),
                    t.get(1).filter(|x| is_name(x)),
                    t.get(2).map(String::as_str),
                ) else {
                    continue;
                };
                let block = block_below(lines, &d.body[k + 1..], indent_of(lines[d.body[k]]).len());
                for &b in &block {
                    let v = &toks[at(b)];
                    let not_in = are(v, &["if", x, "not", "in", c, ":"]);
                    if !not_in && !are(v, &["if", x, "in", c, ":"]) {
                        continue;
                    }
                    let inner = block_below(lines, &d.body[at(b) + 1..], indent_of(lines[b]).len());
                    let (Some(&first), Some(&last)) = (inner.first(), inner.last()) else {
                        continue;
                    };
                    let leaves = inner.iter().any(|&i| ends_flow(lines[i]));
                    let indent = if not_in && leaves {
                        indent_of(lines[b])
                    } else if !not_in && !leaves {
                        indent_of(lines[first])
                    } else {
                        continue;
                    };
                    out.push((last, format!("{indent}{c}.remove({x})")));
                }
            }
        }
    }
    out
}

/// An item a function chooses out of a collection it is handed (`plot_id = min(free_plots, key=free_plots.get)`,
/// `max(...)`, `next(iter(...))`) where no line of it ever takes from that collection: the item taken out just
/// after (`del free_plots[plot_id]`, then `.pop` and `.remove`), so the next call does not choose it again.
pub(in crate::locate_rank) fn chosen_never_taken(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    const TAKING: &[&str] = &["pop", "remove", "discard", "clear", "popitem"];
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let taken = |c: &str| {
            toks.iter().any(|t| {
                t.windows(3)
                    .any(|w| w[0] == c && w[1] == "." && TAKING.contains(&w[2].as_str()))
                    || t.first().is_some_and(|f| f == "del") && t.iter().any(|x| x == c)
                    || t.first().is_some_and(|f| f == c) && t.get(1).is_some_and(|b| b == "[")
            })
        };
        for (j, t) in toks.iter().enumerate() {
            let [k, eq, rest @ ..] = t.as_slice() else {
                continue;
            };
            let chosen = match rest {
                [f, open, c, next, ..] if matches!(f.as_str(), "min" | "max") && open == "(" => {
                    matches!(next.as_str(), "," | ")").then_some(c)
                }
                [f, o1, i, o2, c, ..] if f == "next" && o1 == "(" && i == "iter" && o2 == "(" => {
                    Some(c)
                }
                _ => None,
            };
            let Some(c) = chosen.filter(|c| d.params.contains(*c) && !taken(c)) else {
                continue;
            };
            if eq != "=" || !is_name(k) {
                continue;
            }
            let pad = indent_of(lines[d.body[j]]);
            for took in [
                format!("del {c}[{k}]"),
                format!("{c}.pop({k})"),
                format!("{c}.remove({k})"),
            ] {
                out.push((d.body[j], format!("{pad}{took}")));
            }
        }
    }
    out
}

/// A loop that notices its group change (`if day != current_day:` whose block sets `current_day = day`) and keeps a
/// running value started before it (`spent_today = 0.0`, added to: `+=`, or `spent_today = round(spent_today + fare,
/// 2)`) that no line of the loop starts afresh: its first value again just after the group's name is moved on
/// (`spent_today = 0.0`), at most two such values; and each started at a number the file defines and never reads
/// instead (`amount = CALLOUT_FEE`, one fee a group).
pub(in crate::locate_rank) fn totals_never_reset_on_change(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // A number the file defines and never reads: what each group starts with (a fee charged once a group). Found
    // only once a group change is (the constants are read across the whole file).
    let mut charges: Option<Vec<String>> = None;
    let mut charges_of = || -> Vec<String> {
        charges
            .get_or_insert_with(|| {
                unread_constants(lines)
                    .into_iter()
                    .filter(|(_, _, v)| {
                        let v = v.split('#').next().unwrap_or_default().trim();
                        v.starts_with(|c: char| c.is_ascii_digit()) && v.parse::<f64>().is_ok()
                    })
                    .map(|(_, n, _)| n)
                    .take(2)
                    .collect()
            })
            .clone()
    };
    for d in defs {
        let toks = d.tokens(lines);
        for (k, t) in toks.iter().enumerate() {
            if !t.first().is_some_and(|h| h == "for" || h == "while") {
                continue;
            }
            let depth = indent_of(lines[d.body[k]]).len();
            let body = block_below(lines, &d.body[k + 1..], depth);
            let at = |b: usize| d.body.iter().position(|&x| x == b).unwrap_or(0);
            let started: Vec<(String, String)> = d.body[..k]
                .iter()
                .flat_map(|&b| first_values(lines[b]))
                .filter(|(_, v)| matches!(v.as_str(), "0" | "0.0"))
                .collect();
            let kept = |n: &str| {
                body.iter().any(|&b| {
                    let u = &toks[at(b)];
                    u.first().is_some_and(|f| f == n)
                        && (u.get(1).is_some_and(|o| o == "+=" || o == "-=")
                            || u.get(1).is_some_and(|o| o == "=") && u[2..].iter().any(|w| w == n)
                            || u.get(1).is_some_and(|o| o == ".")
                                && u.get(2).is_some_and(|m| m == "append"))
                })
            };
            let afresh = |n: &str, v: &str| {
                body.iter()
                    .any(|&b| first_values(lines[b]).iter().any(|(m, w)| m == n && w == v))
            };
            for &b in &body {
                let u = &toks[at(b)];
                if u.first().is_none_or(|f| f != "if") {
                    continue;
                }
                let changed: Vec<&String> = u
                    .windows(3)
                    .filter(|w| w[1] == "!=" && is_name(&w[0]) && is_name(&w[2]))
                    .flat_map(|w| [&w[0], &w[2]])
                    .collect();
                let block = block_below(lines, &d.body[at(b) + 1..], indent_of(lines[b]).len());
                let moved = block.iter().find(|&&c| {
                    let v = &toks[at(c)];
                    v.len() > 2 && changed.contains(&&v[0]) && v[1] == "="
                });
                let Some(&moved) = moved else { continue };
                let pad = indent_of(lines[moved]);
                let fresh = started.iter().filter(|(n, v)| kept(n) && !afresh(n, v));
                for (n, v) in fresh.take(2) {
                    out.push((moved, format!("{pad}{n} = {v}")));
                    for c in &charges_of() {
                        out.push((moved, format!("{pad}{n} = {c}")));
                    }
                }
            }
        }
    }
    out
}

/// The most values one key is marked with ([`marks_never_kept`]).
const MAX_MARKS: usize = 3;

/// A dict a function binds (`occupied = dict(occupied or {})`) that a loop tests for a key (`if locker not in
/// occupied and fits(size, locker):`) and that no line ever writes: the key marked as taken in the block where it
/// was not there (`occupied[locker] = parcel_id` first in the block, then before the block's `break`, with the names
/// of the loops around it, then `True`), and after a block that leaves the loop's turn where it was there (`if key
/// in done: continue`). A set or a list tested so has its own rule (`seen.add(key)`).
pub(in crate::locate_rank) fn marks_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    const ADDING: &[&str] = &["add", "update", "setdefault", "append", "extend", "insert"];
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let written = |c: &str| {
            toks.iter().any(|t| {
                t.first().is_some_and(|f| f == c)
                    && t.get(1)
                        .is_some_and(|o| matches!(o.as_str(), "[" | "|=" | "+="))
                    || t.windows(3)
                        .any(|w| w[0] == c && w[1] == "." && ADDING.contains(&w[2].as_str()))
            })
        };
        // A dict it binds (a set or a list tested so has its own rule: `seen.add(key)`).
        let dict = |c: &str| {
            toks.iter().any(|t| {
                t.len() > 2
                    && t[0] == c
                    && t[1] == "="
                    && matches!(t[2].as_str(), "{" | "dict" | "defaultdict" | "OrderedDict")
            })
        };
        for (j, t) in toks.iter().enumerate() {
            if t.first().is_none_or(|f| f != "if") {
                continue;
            }
            let depth = indent_of(lines[d.body[j]]).len();
            // The names of the `for` loops around the test, the nearest first.
            let mut around: Vec<String> = Vec::new();
            let mut inner = depth;
            for k in (0..j).rev() {
                let width = indent_of(lines[d.body[k]]).len();
                if width < inner && toks[k].first().is_some_and(|f| f == "for") {
                    let names = toks[k].iter().skip(1).take_while(|w| *w != "in");
                    around.extend(names.filter(|w| is_name(w)).cloned());
                }
                inner = inner.min(width);
            }
            if around.is_empty() {
                continue;
            }
            let block = block_below(lines, &d.body[j + 1..], depth);
            let (Some(&first), Some(&last)) = (block.first(), block.last()) else {
                continue;
            };
            for i in (1..t.len()).filter(|&i| t[i] == "in") {
                let absent = i >= 2 && t[i - 1] == "not";
                let k = if absent { i - 2 } else { i - 1 };
                let key = &t[k];
                let dotted = k >= 1 && t[k - 1] == ".";
                let Some(c) = t.get(i + 1) else { continue };
                let bare = t
                    .get(i + 2)
                    .is_none_or(|n| !matches!(n.as_str(), "." | "[" | "("));
                if dotted || !is_name(key) || !is_name(c) || !bare || !dict(c) || written(c) {
                    continue;
                }
                let values = around.iter().filter(|v| *v != key).map(String::as_str);
                let values = values.chain(["True"]).take(MAX_MARKS);
                let marks: Vec<String> = values.map(|v| format!("{c}[{key}] = {v}")).collect();
                let leaves = ends_flow(lines[last]);
                let places = if absent {
                    // First in the block where the key was new, then last (before it leaves the loop's turn).
                    let end = if leaves {
                        block.iter().rev().nth(1).copied().unwrap_or(d.body[j])
                    } else {
                        last
                    };
                    let mut at = vec![
                        (d.body[j], indent_of(lines[first])),
                        (end, indent_of(lines[first])),
                    ];
                    at.dedup();
                    at
                } else if leaves {
                    vec![(last, indent_of(lines[d.body[j]]))]
                } else {
                    Vec::new()
                };
                for (after, pad) in places {
                    out.extend(marks.iter().map(|m| (after, format!("{pad}{m}"))));
                }
            }
        }
    }
    out
}

/// A list of what a function of the file gives (`scores = [response_score(r) for r in responses]`), where that
/// function returns `None` on some path, then summed or taken the least or most of (`sum(scores)`) with no line
/// dropping the `None`s: `scores = [value for value in scores if value is not None]` after it.
pub(in crate::locate_rank) fn nones_never_dropped(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    const FOLDS: &[&str] = &["sum", "max", "min", "sorted", "mean", "median", "fmean"];
    let gives_none: Vec<&str> = defs
        .iter()
        .filter(|f| {
            let toks = f.tokens(lines);
            toks.iter()
                .any(|t| are(t, &["return", "None"]) || are(t, &["return"]))
        })
        .map(|f| f.name.as_str())
        .collect();
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for (k, t) in toks.iter().enumerate() {
            let listed = t.len() > 5
                && is_name(&t[0])
                && t[1] == "="
                && t[2] == "["
                && t[3] != d.name
                && gives_none.contains(&t[3].as_str())
                && t[4] == "("
                && t.iter().any(|w| w == "for");
            if !listed {
                continue;
            }
            let l = &t[0];
            let rest = &toks[k + 1..];
            let folded = rest.iter().any(|v| {
                v.windows(4).any(|w| {
                    FOLDS.contains(&w[0].as_str()) && w[1] == "(" && w[2] == *l && w[3] == ")"
                })
            });
            let dropped = rest
                .iter()
                .any(|v| v.contains(l) && v.iter().any(|w| w == "None"));
            let Some(v) = ["value", "item", "v"]
                .into_iter()
                .find(|n| !d.bound.contains(*n))
            else {
                continue;
            };
            if folded && !dropped {
                let indent = indent_of(lines[d.body[k]]);
                out.push((
                    d.body[k],
                    format!("{indent}{l} = [{v} for {v} in {l} if {v} is not None]"),
                ));
            }
        }
    }
    out
}

/// A place that holds a record (`club["record"]`, `self.best`), read as one whole operand of a comparison: the
/// dict's or object's name, and the key with its quote or the attribute.
fn record_place(side: &str) -> Option<(String, Option<char>)> {
    if let Some((obj, attr)) = side.split_once('.') {
        return (is_identifier(obj) && is_identifier(attr)).then(|| (side.to_string(), None));
    }
    let (dict, rest) = side.split_once('[')?;
    let inner = rest.strip_suffix(']')?;
    let q = inner.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let key = inner.strip_prefix(q)?.strip_suffix(q)?;
    (is_identifier(dict) && is_name(key)).then(|| (side.to_string(), Some(q)))
}

/// A dict read under a name's key (`best[breed]`, `best.get(breed, -1)`): the place written `best[breed]`, and the
/// dict's name.
fn keyed_place(side: &str) -> Option<(String, String)> {
    if let Some((dict, rest)) = side.split_once(".get(") {
        let key = rest.strip_suffix(')')?.split(',').next()?.trim();
        return (is_identifier(dict) && is_identifier(key))
            .then(|| (format!("{dict}[{key}]"), dict.to_string()));
    }
    let (dict, rest) = side.split_once('[')?;
    let key = rest.strip_suffix(']')?;
    (is_identifier(dict) && is_identifier(key)).then(|| (side.to_string(), dict.to_string()))
}

/// Whether the line writes into the dict `dict`: an item set or updated (`dict[k] = ...`, `dict[k] += ...`), or a
/// method that changes it (`update`, `setdefault`, `pop`, `clear`).
fn writes_into(line: &str, dict: &str) -> bool {
    let t = tokens(&code_of(line));
    let set = t.first().is_some_and(|w| w == dict)
        && t.get(1).is_some_and(|w| w == "[")
        && t.iter()
            .any(|w| matches!(w.as_str(), "=" | "+=" | "-=" | "*="));
    let changed = t.windows(3).any(|w| {
        w[0] == dict
            && w[1] == "."
            && matches!(w[2].as_str(), "update" | "setdefault" | "pop" | "clear")
    });
    set || changed
}

/// Whether a line of the file outside an `__init__` writes the record `place` (`x["record"] = ...`,
/// `self.best += ...`): with `q`, the dict's key under any name; without, the attribute off any object.
fn record_written(lines: &[&str], defs: &[Def], place: &str, q: Option<char>) -> bool {
    let init: Vec<usize> = defs
        .iter()
        .filter(|d| d.name == "__init__")
        .flat_map(|d| d.body.iter().copied())
        .collect();
    let outside: Vec<&str> = (0..lines.len())
        .filter(|i| !init.contains(i))
        .map(|i| lines[i])
        .collect();
    match q {
        Some(q) => {
            let key = place
                .split_once('[')
                .map_or("", |(_, k)| &k[1..k.len() - 2]);
            key_written(&outside, key, q, &["+=", "-=", "*="])
        }
        None => {
            let attr = place.split_once('.').map_or("", |(_, a)| a);
            let dotted = format!(".{attr}");
            outside.iter().any(|l| {
                let code = code_of(l);
                code.match_indices(&dotted).any(|(at, d)| {
                    let after = code[at + d.len()..].trim_start();
                    let word_end = !code[at + d.len()..]
                        .starts_with(|c: char| c.is_alphanumeric() || c == '_');
                    word_end
                        && (["+=", "-=", "*="].iter().any(|o| after.starts_with(o))
                            || (after.starts_with('=') && !after.starts_with("==")))
                })
            })
        }
    }
}

/// A record a function compares a value against and that no line ever keeps (`if altitude_m > club["record"]:`
/// where no line writes `club["record"]`; `if score > self.best:` where only `__init__` sets `self.best`): the
/// value written into it first in the comparison's `if` block (`club["record"] = altitude_m`), a best so far that
/// never moves.
pub(in crate::locate_rank) fn records_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &b) in d.body.iter().enumerate() {
            let line = lines[b].trim();
            let Some(cond) = line
                .strip_prefix("if ")
                .or_else(|| line.strip_prefix("elif "))
                .and_then(|c| c.strip_suffix(':'))
            else {
                continue;
            };
            let Some((left, right)) = [" >= ", " <= ", " > ", " < "]
                .iter()
                .find_map(|op| cond.split_once(op))
            else {
                continue;
            };
            let (left, right) = (left.trim(), right.trim());
            // A record under a name's key of a dict the function keeps (`best.get(breed, -1)`) never written in it.
            let keyed = |side: &str| {
                keyed_place(side).filter(|(_, dict)| {
                    d.bound.contains(dict) && !d.body.iter().any(|&l| writes_into(lines[l], dict))
                })
            };
            let (value, place) = match (record_place(left), record_place(right)) {
                (None, Some((p, q))) => (left, (!record_written(lines, defs, &p, q)).then_some(p)),
                (Some((p, q)), None) => (right, (!record_written(lines, defs, &p, q)).then_some(p)),
                _ => match (keyed(left), keyed(right)) {
                    (None, Some((p, _))) => (left, Some(p)),
                    (Some((p, _)), None) => (right, Some(p)),
                    _ => continue,
                },
            };
            let plain = is_name(value) && value.chars().any(|c| c.is_ascii_lowercase());
            let Some(place) = place.filter(|_| plain && d.bound.contains(value)) else {
                continue;
            };
            let block = block_below(lines, &d.body[k + 1..], indent_of(lines[b]).len());
            let Some(&first) = block.first() else {
                continue;
            };
            let kept = format!("{}{place} = {value}", indent_of(lines[first]));
            // A dict's record goes after what the block keeps under the same key (`best[breed] = name`) too.
            let last = block.last().copied().unwrap_or(first);
            if place.contains('[') && !place.contains(['"', '\'']) && !ends_flow(lines[last]) {
                out.push((last, kept.clone()));
            }
            out.push((b, kept));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{offers, untold as lines_of};

    #[test]
    fn a_method_left_as_its_docstring_adds_its_one_parameter_to_a_count_never_changed() {
        let text = "class Log:\n    def __init__(self):\n        self.visits = []\n        self.paid = 0.0\n\n    def record_payment(self, amount):\n        \"\"\"Record money received from the client.\"\"\"\n\n    def owed(self):\n        return sum(self.visits) - self.paid\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "        self.paid += amount".to_string())),
            "{got:?}"
        );
        // A method with a body of its own is no stub.
        let body = text.replace(
            "from the client.\"\"\"\n",
            "from the client.\"\"\"\n        print(amount)\n",
        );
        assert!(!offers(&body, "self.paid += amount"));
    }

    #[test]
    fn a_count_started_at_zero_point_zero_is_given_the_parameter_of_its_name() {
        let text = "class Timesheet:\n    def __init__(self, cleaner):\n        self.visits = []\n        self.hours = 0.0\n\n    def log_visit(self, client, hours):\n        if hours <= 0:\n            raise ValueError(\"hours\")\n        self.visits.append((client, hours))\n\n    def pay(self):\n        return self.hours * RATE\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(9, "        self.hours += hours".to_string())),
            "{got:?}"
        );
        // Counted already: nothing.
        let counted = text.replace("self.visits.append((client, hours))", "self.hours += hours");
        assert!(!offers(&counted, "self.hours += hours"));
    }

    #[test]
    fn a_count_never_counted_is_added_to_beside_another_tally_by_the_parameter_added_elsewhere() {
        let text = "class Till:\n    def __init__(self):\n        self.cash = 0.0\n        self.units = 0\n        self.per_kind = {}\n\n    def sell(self, kind, quantity=1):\n        price = PRICES[kind] * quantity\n        self.cash += price\n        self.per_kind[kind] = self.per_kind.get(kind, 0) + quantity\n        return price\n\n    def average(self):\n        return self.cash / self.units\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(9, "        self.units += quantity".to_string())),
            "{got:?}"
        );
        // Nothing added elsewhere: by one.
        let one = text.replace("self.per_kind.get(kind, 0) + quantity", "price");
        assert!(lines_of(&one).contains(&(9, "        self.units += 1".to_string())));
        // An item taken off another collection: one more.
        let done = "class Room:\n    def __init__(self):\n        self.orders = []\n        self.done = 0\n\n    def finish(self):\n        order = self.orders.pop(0)\n        return order\n\n    def summary(self):\n        return self.done\n";
        assert!(lines_of(done).contains(&(7, "        self.done += 1".to_string())));
        // Read only in an f-string's field, it is read all the same.
        let shown = done.replace("return self.done", "return f\"{self.done} done\"");
        assert!(lines_of(&shown).contains(&(7, "        self.done += 1".to_string())));
    }

    #[test]
    fn an_item_moved_to_a_new_position_is_taken_out_of_its_old_one() {
        let text = "class Ladder:\n    def record(self, challenger, opponent, won):\n        if won:\n            self.players.insert(self.rank(opponent) - 1, challenger)\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(3, "            self.players.remove(challenger)".into())),
            "{got:?}"
        );
        assert!(got.contains(&(4, "            self.players.remove(challenger)".into())));
        // Taken out already, or an item that is no plain name: nothing.
        let taken = text.replace(
            "        if won:\n",
            "        if won:\n            self.players.pop(self.rank(challenger) - 1)\n",
        );
        assert!(
            !offers(&taken, ".remove(challenger)"),
            "{:?}",
            lines_of(&taken)
        );
        let call = text.replace(", challenger)", ", name(challenger))");
        assert!(!offers(&call, ".remove("), "{:?}", lines_of(&call));
    }

    #[test]
    fn a_best_kept_per_key_and_never_written_is_written_where_it_is_beaten() {
        let text = "def winners(entries):\n    best = {}\n    best_score = {}\n    for e in entries:\n        score = total(e)\n        breed = e[\"breed\"]\n        if score > best_score.get(breed, -1):\n            best[breed] = e[\"name\"]\n    return best\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(8, "            best_score[breed] = score".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&(7, "            best_score[breed] = score".into())),
            "{got:?}"
        );
        // Written somewhere in the function, or a value that is no name of the function: nothing.
        let written = text.replace(
            "    return best\n",
            "        best_score.update({breed: score})\n    return best\n",
        );
        assert!(!offers(&written, "best_score[breed] = score"));
        let unbound = text.replace("if score > best_score", "if e.score > best_score");
        assert!(!offers(&unbound, "best_score[breed] ="));
    }

    #[test]
    fn a_block_that_finds_either_of_two_names_missing_returns_none_before_a_later_line_reads_them()
    {
        let text = "class Meet:\n    def record(self, name, a, b):\n        snatch = best(a)\n        clean = best(b)\n        if snatch is None or clean is None:\n            self.out.append(name)\n        self.totals[name] = snatch + clean\n        return self.totals[name]\n";
        assert!(lines_of(text).contains(&(6, "            return None".to_string())));
        // A header that tests something else is no such block.
        let other = text.replace("clean is None:", "clean > 3:");
        assert!(!offers(&other, "            return None"));
    }

    #[test]
    fn a_found_item_never_handed_back_is_returned_at_the_end_of_its_block() {
        let text = "def start_next(queue):\n    \"\"\"Mark the oldest waiting order and return it.\"\"\"\n    for order in queue:\n        if order[\"status\"] == \"waiting\":\n            order[\"status\"] = \"steaming\"\n    return None\n";
        assert!(lines_of(text).contains(&(5, "            return order".to_string())));
        // A block that leaves already, or a function with another answer: nothing.
        for other in [
            text.replace("\"steaming\"\n", "\"steaming\"\n            return order\n"),
            text.replace("    return None", "    return queue"),
        ] {
            assert!(
                !offers(&other, "return order\n") && !offers(&other, "            return order")
            );
        }
        // A loop that unpacks: its first two names, the first first.
        let tables = "def seat(tables, size):\n    for number, (seats, kind) in tables:\n        if seats >= size:\n            taken.add(number)\n    return None\n";
        let got = lines_of(tables);
        let at = |l: &str| got.iter().position(|g| *g == (4, l.to_string()));
        assert!(
            at("            return number") < at("            return seats"),
            "{got:?}"
        );
        assert!(at("            return number").is_some());
        assert!(!offers(tables, "return kind"));
        let unnamed = tables.replace("for number, (seats, kind)", "for _, seats");
        assert!(!offers(&unnamed, "return _"));
    }

    #[test]
    fn a_budget_a_loop_tests_and_never_changes_is_spent_or_refilled() {
        let text = "def redeem(tickets, wishlist):\n    given = []\n    for prize in wishlist:\n        cost = PRIZES[prize]\n        if cost <= tickets:\n            given.append(prize)\n    return given, tickets\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "            tickets -= cost".into())),
            "{got:?}"
        );
        let spent = text.replace(
            "            given.append(prize)\n",
            "            given.append(prize)\n            tickets -= cost\n",
        );
        assert!(!offers(&spent, "tickets -= cost"));
        let text = "def boards(cuts, stock=2400, kerf=3):\n    n = 0\n    remaining = 0\n    for cut in sorted(cuts):\n        need = cut + kerf\n        if need > remaining:\n            n += 1\n        remaining -= need\n    return n\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "            remaining = stock".into())),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|(_, l)| l.contains("remaining = cuts")),
            "{got:?}"
        );
    }

    #[test]
    fn an_entry_s_count_never_made_is_made_for_the_parameter_never_read() {
        let text = "def new(players):\n    return {n: {\"won\": 0, \"lost\": 0} for n in players}\n\n\ndef bout(table, winner, loser):\n    table[winner][\"won\"] += 1\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "    table[loser][\"lost\"] += 1".into())),
            "{got:?}"
        );
        // Counted somewhere already: nothing.
        let counted = format!("{text}    table[loser][\"lost\"] += 1\n");
        assert!(!offers(&counted, "[loser][\"lost\"]"));
    }

    #[test]
    fn a_last_value_never_returned_is_returned_and_a_number_never_stepped_is_stepped() {
        let text = "def margin(cost, sale):\n    if sale == 0:\n        return 0.0\n    pct = round((sale - cost) / sale * 100, 1)\n";
        let got = lines_of(text);
        assert!(got.contains(&(4, "    return pct".into())), "{got:?}");
        // Read afterwards, or no return anywhere in a function called only as a statement: nothing.
        assert!(!offers(&format!("{text}    print(pct)\n"), "return pct"));
        assert!(!offers(
            &(text.replace("        return 0.0\n", "        pass\n") + "\n\nmargin(1, 2)\n"),
            "return pct"
        ));
        let text = "def issue(start_number, party):\n    tickets = []\n    number = start_number\n    for kind in party:\n        tickets.append(f\"MV-{number:05d}-{kind}\")\n    return tickets\n";
        let got = lines_of(text);
        assert!(got.contains(&(5, "        number += 1".into())), "{got:?}");
        let stepped = text.replace(
            "    return tickets",
            "        number += 1\n    return tickets",
        );
        assert!(!offers(&stepped, "number += 1\n"));
    }

    #[test]
    fn an_entry_a_guard_checks_and_the_function_never_takes_is_taken_in_its_loop() {
        let text = "def fit(stock, parts):\n    if not in_stock(stock, parts):\n        raise ValueError(\"short\")\n    used = 0.0\n    for part, n in parts.items():\n        used += PRICES[part] * n\n    return used\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        stock[part] -= n".into())),
            "{got:?}"
        );
        // Taken already, or never checked with the loop's dict: nothing.
        let taken = text.replace(
            "        used +=",
            "        stock[part] -= n\n        used +=",
        );
        assert!(!offers(&taken, "stock[part] += n"));
        let unchecked = text.replace("in_stock(stock, parts)", "in_stock(stock)");
        assert!(!offers(&unchecked, "stock[part]"));
    }

    #[test]
    fn a_count_never_counted_takes_its_value_from_a_table_never_read() {
        let text = "MINUTES = {\"minor\": 2, \"major\": 5}\n\n\ndef table(lines):\n    out = {}\n    for line in lines:\n        name, kind = line.split(\",\")\n        row = out.setdefault(name, {\"minutes\": 0, \"majors\": 0})\n        if kind == \"major\":\n            row[\"majors\"] += 1\n    return out\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(8, "        row[\"minutes\"] += MINUTES[kind]".into())),
            "{got:?}"
        );
        // The table read somewhere, or the count counted: nothing.
        let read = format!("{text}\n\ndef worst():\n    return max(MINUTES.values())\n");
        assert!(!offers(&read, "+= MINUTES["));
        let counted = text.replace(
            "        if kind",
            "        row[\"minutes\"] += 2\n        if kind",
        );
        assert!(!offers(&counted, "+= MINUTES["));
    }

    #[test]
    fn a_helper_never_called_is_called_where_its_parameters_are_all_bound() {
        let text = "def to_kg(weight, unit):\n    return weight * 0.45 if unit == \"lb\" else weight\n\n\ndef parse(text):\n    amount, cut = text.split(\" \", 1)\n    unit = \"lb\" if amount.endswith(\"lb\") else \"kg\"\n    weight = float(amount[:-2])\n    return cut, weight\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(8, "    weight = to_kg(weight, unit)".into())),
            "{got:?}"
        );
        // Called already, or named elsewhere (`key=to_kg`): nothing.
        let called = text.replace(
            "    return cut, weight",
            "    return cut, to_kg(weight, unit)",
        );
        assert!(!offers(&called, "weight = to_kg"));
        let named = text.replace("    return cut, weight", "    return cut, weight, to_kg");
        assert!(!offers(&named, "weight = to_kg"));
    }

    #[test]
    fn a_record_compared_against_and_never_kept_is_kept_first_in_the_block() {
        let text = "def new():\n    return {\"record\": 0, \"holder\": None}\n\n\ndef fly(club, rocket, height):\n    \"\"\"True for a new record.\"\"\"\n    if height > club[\"record\"]:\n        club[\"holder\"] = rocket\n        return True\n    return False\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "        club[\"record\"] = height".into())),
            "{got:?}"
        );
        // Kept already: nothing.
        let kept = text.replace(
            "        club[\"holder\"]",
            "        club[\"record\"] = height\n        club[\"holder\"]",
        );
        assert!(!offers(&kept, "club[\"record\"] = height"));
        // An attribute only `__init__` sets, compared the other way round.
        let text = "class Board:\n    def __init__(self):\n        self.best = 0\n\n    def score(self, points):\n        if self.best < points:\n            log(points)\n";
        assert!(lines_of(text).contains(&(6, "            self.best = points".into())));
        let kept = text.replace("            log(points)", "            self.best = points");
        assert!(!offers(&kept, "self.best = points"));
        // A constant compared against is no record.
        let text = "def f(club, LIMIT):\n    if LIMIT > club[\"cap\"]:\n        return 1\n";
        assert!(!offers(text, "= LIMIT"));
    }

    #[test]
    fn a_function_that_falls_off_its_end_returns_the_unread_constant_its_docstring_says() {
        let text = "DEPOSITS = [(\"club\", 5.0)]\nSTANDARD_DEPOSIT = 10.0\n\n\ndef deposit_for(item):\n    \"\"\"Anything not listed takes the standard deposit.\"\"\"\n    for prefix, amount in DEPOSITS:\n        if item.startswith(prefix):\n            return amount\n";
        assert!(lines_of(text).contains(&(9, "    return STANDARD_DEPOSIT".into())));
        let unsaid = text.replace("the standard deposit", "the usual amount");
        assert!(!offers(&unsaid, "return STANDARD_DEPOSIT"));
    }

    #[test]
    fn a_tally_started_at_zero_for_every_key_and_tested_is_counted_at_the_end_of_the_test_s_block()
    {
        let text = "def assign(riders, horses):\n    used = {h: 0 for h in horses}\n    plan = {}\n    for r in riders:\n        for h in horses:\n            if used[h] < MAX:\n                plan[r] = h\n                break\n    return plan\n";
        assert!(lines_of(text).contains(&(7, "                used[h] += 1".into())));
        let fromkeys = text.replace("{h: 0 for h in horses}", "dict.fromkeys(horses, 0)");
        assert!(offers(&fromkeys, "used[h] += 1"));
        // Counted already: nothing.
        let counted = text.replace(
            "                break\n",
            "                used[h] += 1\n                break\n",
        );
        assert!(run_tallies(&counted).is_empty());
    }

    fn run_tallies(text: &str) -> Vec<(usize, String)> {
        let lines: Vec<&str> = text.lines().collect();
        super::tallies_never_counted(&lines, &super::Def::all(&lines))
    }

    #[test]
    fn a_function_that_returns_in_its_loop_and_falls_off_its_end_returns_what_its_docstring_quotes()
    {
        let text = "SIZES = {1: \"single\", 4: \"family\"}\n\n\ndef size(n):\n    \"\"\"Smallest parcel that covers n, else 'large'.\"\"\"\n    for people in sorted(SIZES):\n        if n <= people:\n            return SIZES[people]\n";
        assert!(lines_of(text).contains(&(8, "    return 'large'".into())));
        // A predicate's other answer.
        let text =
            "def has(xs, y):\n    for x in xs:\n        if x == y:\n            return True\n";
        assert!(lines_of(text).contains(&(4, "    return False".into())));
        // A rate from a table: none found is 0, or the kind is refused.
        let text = "RATES = [(10, 0.1), (5, 0.05)]\n\n\ndef rate(boxes):\n    for at_least, r in RATES:\n        if boxes >= at_least:\n            return r\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "    return 0".into()))
                && got.contains(&(7, "    raise ValueError(boxes)".into())),
            "{got:?}"
        );
        assert!(!offers(
            &text.replace("return r", "return f\"{r}%\""),
            "return 0"
        ));
        // A function that ends at its own depth, or returns None itself: nothing.
        let ends = "def f(xs):\n    \"\"\"Else 'none'.\"\"\"\n    for x in xs:\n        return x\n    return 0\n";
        assert!(!offers(ends, "'none'"));
    }

    #[test]
    fn a_count_an_object_starts_at_zero_and_never_changes_is_counted_first_in_an_if_block() {
        let text = "class Card:\n    def __init__(self, numbers):\n        self.numbers = set(numbers)\n        self.hits = 0\n\n    def mark(self, n):\n        if n in self.numbers:\n            return True\n        return False\n\n    def full(self):\n        return self.hits == len(self.numbers)\n";
        assert!(lines_of(text).contains(&(7, "            self.hits += 1".into())));
        let counted = text.replace(
            "            return True",
            "            self.hits += 1\n            return True",
        );
        assert!(!offers(&counted, "self.hits += 1"));
        // A parameter a method adds to it in a test: added before its last return.
        let text = "class Van:\n    def __init__(self, most):\n        self.most = most\n        self.booked = 0\n\n    def book(self, rooms):\n        if self.booked + rooms > self.most:\n            return False\n        log(rooms)\n        return True\n";
        assert!(lines_of(text).contains(&(9, "        self.booked += rooms".into())));
    }

    #[test]
    fn a_count_a_dict_starts_at_zero_and_never_counts_is_counted_before_the_last_return() {
        let text = "MAX = 2\n\n\ndef new_loan(title):\n    return {\"title\": title, \"renewals\": 0}\n\n\ndef renew(loan):\n    \"\"\"Extend the loan; False once renewals run out.\"\"\"\n    if loan[\"renewals\"] >= MAX:\n        return False\n    loan[\"due\"] += 14\n    return True\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(12, "    loan[\"renewals\"] += 1".into())),
            "{got:?}"
        );
        // Not when a line counts it already, nor for a key started at something else.
        let counted = text.replace(
            "    return True\n",
            "    loan[\"renewals\"] += 1\n    return True\n",
        );
        assert!(!offers(&counted, "+= 1"));
        let other = text.replace("\"renewals\": 0}", "\"renewals\": 0.5}");
        assert!(!offers(&other, "+= 1"));
        // A function without a last `return`: after its last line.
        let text = "def new():\n    return {'heap': [], 'seq': 0}\n\n\ndef submit(queue, job):\n    queue['heap'].append((queue['seq'], job))\n";
        assert!(
            lines_of(text).contains(&(6, "    queue['seq'] += 1".into())),
            "{:?}",
            lines_of(text)
        );
    }

    #[test]
    fn a_branch_that_finds_the_other_answer_and_falls_through_returns_it() {
        let text = "def get(cache, key, default=None):\n    entry = cache.get(key)\n    if entry is None:\n        return default\n    value, expires = entry\n    if expires < 10:\n        del cache[key]\n    return value\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "        return default".into())),
            "{got:?}"
        );
        // A block that leaves already is not given one, and a function with one answer gets none.
        assert!(!got.contains(&(4, "        return default".into())));
        let one = "def get(cache, key):\n    value = cache[key]\n    if value < 0:\n        value = 0\n    return value\n";
        assert!(!offers(one, "return"), "{:?}", lines_of(one));
        // A key found missing that the one answer then looks up: the answer left unchanged.
        let promo = "def apply(total, code, notes):\n    if code not in CODES:\n        notes.append(code)\n    return round(total * (1 - CODES[code]), 2)\n";
        let got = lines_of(promo);
        assert!(got.contains(&(3, "        return total".into())), "{got:?}");
        assert!(
            !got.iter().any(|(_, l)| l.trim() == "return code"),
            "{got:?}"
        );
    }

    #[test]
    fn a_normaliser_the_file_defines_is_called_first_in_a_loop_that_binds_its_parameter() {
        let text = "UNITS = {\"grams\": \"g\"}\n\n\ndef normalize_unit(unit):\n    return UNITS.get(unit, unit)\n\n\ndef combine(lists):\n    totals = {}\n    for items in lists:\n        for name, qty, unit in items:\n            key = (name, unit)\n            totals[key] = totals.get(key, 0) + qty\n    return totals\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(11, "            unit = normalize_unit(unit)".into())),
            "{got:?}"
        );
        // Not where the loop's function calls it already, nor for a function that is no normaliser.
        let called = text.replace("key = (name, unit)", "key = (name, normalize_unit(unit))");
        assert!(!offers(&called, "= normalize_unit"));
        let other = text.replace("normalize_unit", "unit_label");
        assert!(!offers(&other, "= unit_label"));
    }

    #[test]
    fn a_total_collected_in_an_expression_starts_afresh_where_its_group_changes() {
        let text = "def monthly(rows):\n    out = []\n    current, net = None, 0.0\n    for when, amount in rows:\n        month = when[:7]\n        if month != current:\n            if current is not None:\n                out.append((current, round(net, 2)))\n            current = month\n        net += amount\n    return out\n";
        let got = lines_of(text);
        let fresh = got
            .iter()
            .position(|l| *l == (9, "            net = 0.0".into()));
        let inner = got
            .iter()
            .position(|l| *l == (8, "                net = 0.0".into()));
        assert!(fresh.is_some() && fresh < inner, "{got:?}");
        // `round` is called, not collected; a total started afresh already gets nothing.
        assert!(!got.iter().any(|(_, l)| l.contains("round =")));
        let reset = text.replace(
            "            current = month\n",
            "            current = month\n            net = 0.0\n",
        );
        assert!(
            !lines_of(&reset)
                .iter()
                .any(|(_, l)| l.trim() == "net = 0.0")
        );
    }

    #[test]
    fn a_running_value_is_started_afresh_where_the_loop_notices_its_group_change() {
        let text = "def charge(journeys):\n    charged = []\n    current = None\n    spent = 0.0\n    for day, zone in journeys:\n        if day != current:\n            current = day\n        fare = min(FARES[zone], CAP - spent)\n        charged.append(fare)\n        spent = round(spent + fare, 2)\n    return charged\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::totals_never_reset_on_change(&lines, &super::Def::all(&lines));
        assert_eq!(got, [(6, "            spent = 0.0".to_string())]);
        // Not once it is started afresh.
        let reset = text.replace(
            "            current = day\n",
            "            current = day\n            spent = 0.0\n",
        );
        let lines: Vec<&str> = reset.lines().collect();
        assert!(super::totals_never_reset_on_change(&lines, &super::Def::all(&lines)).is_empty());
        // A number the file defines and never reads is tried as each group's start too (a fee once a group).
        let fee = format!("CALLOUT_FEE = 15.0\nNOTE = \"x\"\n\n\n{text}");
        let lines: Vec<&str> = fee.lines().collect();
        let got = super::totals_never_reset_on_change(&lines, &super::Def::all(&lines));
        assert_eq!(
            got,
            [
                (10, "            spent = 0.0".to_string()),
                (10, "            spent = CALLOUT_FEE".to_string())
            ]
        );
    }

    #[test]
    fn an_item_chosen_out_of_a_collection_handed_in_is_taken_out_of_it() {
        let text = "def offer(waiting, free):\n    \"\"\"Give the first person the smallest free plot.\"\"\"\n    if not free:\n        return None\n    plot = min(free, key=free.get)\n    return waiting.pop(0), plot\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::chosen_never_taken(&lines, &super::Def::all(&lines));
        assert!(
            got.contains(&(4, "    del free[plot]".to_string())),
            "{got:?}"
        );
        assert!(
            got.contains(&(4, "    free.pop(plot)".to_string())),
            "{got:?}"
        );
        // Not once a line takes it out, nor out of a collection the function made itself.
        let taken = text.replace(
            "    return waiting",
            "    free.pop(plot)\n    return waiting",
        );
        let lines: Vec<&str> = taken.lines().collect();
        assert!(super::chosen_never_taken(&lines, &super::Def::all(&lines)).is_empty());
        let own = text
            .replace("if not free:", "free = dict(SIZES)\n    if not free:")
            .replace("(waiting, free)", "(waiting)");
        let lines: Vec<&str> = own.lines().collect();
        assert!(super::chosen_never_taken(&lines, &super::Def::all(&lines)).is_empty());
    }

    #[test]
    fn a_dict_a_loop_tests_for_a_key_and_never_writes_marks_the_key_where_it_was_new() {
        let text = "def allocate(parcels, occupied=None):\n    occupied = dict(occupied or {})\n    result = {}\n    for parcel_id, size in parcels:\n        for locker in ORDER:\n            if locker not in occupied and fits(size, locker):\n                result[parcel_id] = locker\n                break\n    return result\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::marks_never_kept(&lines, &super::Def::all(&lines));
        let marked = |at: usize, l: &str| got.iter().any(|(a, x)| *a == at && x == l);
        assert!(
            marked(5, "                occupied[locker] = parcel_id"),
            "{got:?}"
        );
        assert!(
            marked(6, "                occupied[locker] = parcel_id"),
            "{got:?}"
        );
        assert!(
            marked(5, "                occupied[locker] = True"),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|(_, l)| l.contains("[locker] = locker")),
            "{got:?}"
        );
        // Not once a line writes it, nor outside a loop.
        let kept = text.replace(
            "                break\n",
            "                occupied[locker] = parcel_id\n                break\n",
        );
        let lines: Vec<&str> = kept.lines().collect();
        assert!(super::marks_never_kept(&lines, &super::Def::all(&lines)).is_empty());
        let once = "def take(name, taken):\n    if name not in taken:\n        return True\n    return False\n";
        let lines: Vec<&str> = once.lines().collect();
        assert!(super::marks_never_kept(&lines, &super::Def::all(&lines)).is_empty());
        // A dict that a loop skips on: the key marked after the skip; a set is left to its own rule.
        let seen = "def firsts(words):\n    seen = {}\n    out = []\n    for w in words:\n        if w in seen:\n            continue\n        out.append(w)\n    return out\n";
        let lines: Vec<&str> = seen.lines().collect();
        let got = super::marks_never_kept(&lines, &super::Def::all(&lines));
        assert_eq!(got, [(5, "        seen[w] = True".to_string())]);
        let set = seen.replace("seen = {}", "seen = set()");
        let lines: Vec<&str> = set.lines().collect();
        assert!(super::marks_never_kept(&lines, &super::Def::all(&lines)).is_empty());
    }

    #[test]
    fn a_set_started_in_a_tuple_and_tested_by_a_call_of_its_item_gets_the_update() {
        let text = "def dedupe(titles):\n    seen, result = set(), []\n    for title in titles:\n        if title.lower() not in seen:\n            result.append(title)\n    return result\n";
        let got = lines_of(text);
        assert!(
            got.iter()
                .any(|(at, l)| *at == 5 && l == "            seen.add(title.lower())"),
            "{got:?}"
        );
    }

    #[test]
    fn a_run_counted_in_a_loop_and_never_started_afresh_is_reset_where_the_loop_skips() {
        let text = "def best_run(days):\n    \"\"\"The most days in a row with rain.\"\"\"\n    best = 0\n    run = 0\n    for mm in days:\n        if mm == 0:\n            continue\n        run += 1\n        best = max(best, run)\n    return best\n";
        let got = lines_of(text);
        assert!(got.contains(&(6, "            run = 0".into())), "{got:?}");
        // Not when the loop starts it afresh already, nor in the block that counts it.
        let reset = text.replace(
            "            continue\n",
            "            run = 0\n            continue\n",
        );
        assert!(!lines_of(&reset).iter().any(|(_, l)| l.trim() == "run = 0"));
        let chained = text.replace("    best = 0\n    run = 0\n", "    best = run = 0\n");
        assert!(
            lines_of(&chained).contains(&(5, "            run = 0".into())),
            "{:?}",
            lines_of(&chained)
        );
        // After the block that records the run, where it does not leave.
        let streak = "def longest(days):\n    best = streak = 0\n    for present in days:\n        if present:\n            streak += 1\n        else:\n            best = max(best, streak)\n    return max(best, streak)\n";
        let got = lines_of(streak);
        let end = got
            .iter()
            .position(|l| *l == (7, "            streak = 0".into()));
        let first = got
            .iter()
            .position(|l| *l == (6, "            streak = 0".into()));
        assert!(end.is_some() && end < first, "{got:?}");
        let inside = "def hits(xs):\n    n = 0\n    for x in xs:\n        if x:\n            n += 1\n    return n\n";
        assert!(
            !lines_of(inside).iter().any(|(_, l)| l.trim() == "n = 0"),
            "{:?}",
            lines_of(inside)
        );
    }

    #[test]
    fn a_copied_list_a_loop_tests_and_never_takes_from_gives_up_the_item() {
        let text = "def can_pay(price, coins):\n    purse = list(coins)\n    for coin in price:\n        if coin not in purse:\n            return False\n    return True\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        purse.remove(coin)".into())),
            "{got:?}"
        );
        // A test that does not leave takes the item inside its block.
        let text = "def seat(wanted, free):\n    left = free.copy()\n    got = []\n    for s in wanted:\n        if s in left:\n            got.append(s)\n    return got\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "            left.remove(s)".into())),
            "{got:?}"
        );
        // Not when a line takes from it already, nor for a list the function did not copy.
        let taken = text.replace("got.append(s)\n", "got.append(s)\n            left.pop()\n");
        assert!(!offers(&taken, ".remove("));
        let uncopied = text.replace("left = free.copy()", "left = free");
        assert!(!offers(&uncopied, ".remove("));
    }

    #[test]
    fn the_nones_a_list_gathers_from_a_function_that_gives_them_are_dropped_before_the_sum() {
        let text = "def rating(r):\n    if not r:\n        return None\n    return sum(r) / len(r)\n\n\ndef average(rows):\n    ratings = [rating(r) for r in rows]\n    return sum(ratings) / len(ratings)\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(
                8,
                "    ratings = [value for value in ratings if value is not None]".into()
            )),
            "{got:?}"
        );
        // Not for a function that never gives `None`, nor when a line drops them already.
        let never = text.replace("        return None\n", "        return 0\n");
        assert!(!offers(&never, "is not None"));
        let dropped = text.replace(
            "    return sum(ratings)",
            "    ratings = [x for x in ratings if x is not None]\n    return sum(ratings)",
        );
        assert!(!offers(&dropped, "value is not None"));
    }
}
