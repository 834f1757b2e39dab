//! Insertions for a name a function binds and then leaves alone where its code needs it: a result started before a
//! loop that the loop never gathers into (what the body computes, or what a helper makes of the loop's item), a dict of
//! lists a loop never files its item into under the name it binds and never reads, a value a loop unpacks and never adds to the running value it reads
//! (or to the dict entry the loop starts at zero under its key), a dict counted into by key before the key has a value, a method's
//! parameter that is never read, a parameter never read that another function walks as tuples (a log never
//! written), a name a comprehension over lines binds and never filters on, the tuple of a loop's names a docstring
//! writes gathered, a dict entry a loop zeroes with `setdefault` and never adds to, a dict started empty beside one the loop writes
//! by key and never written (counted under the same key), a parameter and a local never
//! read added, the one capped at the other, to the number a function adds up, a list attribute nothing writes given the
//! refusals a method hands back early, a list a ranking copies and never sorts. Pure: lines in, lines out.

use super::super::{defines, is_name, tokens};
use super::{Def, Loop, code_of, indent_of, reads};

/// The words of a name that keeps the greatest of what a loop sees (`best`, `longest_run`).
const GREATEST: &[&str] = &[
    "best", "longest", "max", "maximum", "most", "highest", "largest", "biggest", "top", "peak",
];

/// The words of a name that keeps the least of what a loop sees (`lowest`, `shortest_gap`).
const LEAST: &[&str] = &[
    "min", "minimum", "least", "lowest", "shortest", "smallest", "fewest", "cheapest",
];

/// The most lines written for one result never gathered.
const MAX_GATHERED: usize = 3;

/// The names a line binds, in a fixed order.
fn bound(toks: &[String]) -> Vec<String> {
    let mut names: Vec<String> = defines(toks).into_iter().collect();
    names.sort();
    names
}

/// A result a function starts before a loop, at the loop's depth or above, and reads after it, that the loop
/// never mentions: a list or a set started empty (`protein = []`) gets what the loop computes at the end of the
/// loop's body (`protein.append(amino)`, the names its body binds latest first, then the loop's own); a number
/// started at 0 and named for the greatest or the least (`best = run = 0`) keeps the greatest or the least of a
/// name the loop updates, just after each update (`best = max(best, run)` after `run += 1`), and any other number
/// started at 0 adds it up (`total += spent` after `spent = totals.get(category, 0.0)`), or what a helper of one
/// parameter named for it makes of the loop's item (`weight += order_weight(order)`). A list or a set gets too what
/// a helper makes of the loop's item ([`helper_made`]: `entries.append(parse_entry(line))`).
pub(in crate::locate_rank) fn results_never_gathered(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for Loop {
            at: k,
            depth,
            block,
            first,
            end,
        } in d.loops(lines, &toks, &["for", "while"])
        {
            let t = &toks[k];
            let head = t.first().map(String::as_str);
            let inner = &toks[k + 1..k + 1 + block.len()];
            let after = &toks[k + 1 + block.len()..];
            let targets = if head == Some("for") {
                bound(t)
            } else {
                Vec::new()
            };
            let mut computed: Vec<String> = Vec::new();
            for u in inner.iter().rev() {
                for n in bound(u) {
                    if !computed.contains(&n) && !targets.contains(&n) {
                        computed.push(n);
                    }
                }
            }
            for (j, b) in toks[..k].iter().enumerate() {
                if indent_of(lines[d.body[j]]).len() > depth {
                    continue;
                }
                // Each name of a chain (`best = run = 0`) and the value it starts at.
                let mut i = 0;
                while i + 1 < b.len() && is_name(&b[i]) && b[i + 1] == "=" {
                    i += 2;
                }
                let value: Vec<&str> = b[i..].iter().map(String::as_str).collect();
                for name in b[..i].iter().step_by(2) {
                    let touched = toks[j + 1..k + 1 + block.len()]
                        .iter()
                        .any(|u| u.contains(name));
                    if touched || !after.iter().any(|u| reads(u, name)) {
                        continue;
                    }
                    let method = match value.as_slice() {
                        ["[", "]"] | ["list", "(", ")"] => Some("append"),
                        ["set", "(", ")"] => Some("add"),
                        _ => None,
                    };
                    if let Some(method) = method {
                        let indent = indent_of(lines[first]);
                        let gathered = tuples_said(lines, d, &targets, &computed)
                            .into_iter()
                            .chain(tuples_read_after(after, name, &computed, &targets))
                            .chain(computed.iter().chain(&targets).take(MAX_GATHERED).cloned())
                            .chain(helper_made(lines, defs, d, &targets));
                        // A `while` loop steps its name last: what it gathers comes first in its block.
                        let header = (head == Some("while")).then_some(d.body[k]);
                        let made: Vec<String> = gathered
                            .map(|x| format!("{indent}{name}.{method}({x})"))
                            .collect();
                        for at in header.into_iter().chain([end]) {
                            out.extend(made.iter().map(|l| (at, l.clone())));
                        }
                        continue;
                    }
                    if zero_start(&value, lines[d.body[j]]) {
                        let loop_ = (inner, block.as_slice(), targets.as_slice());
                        out.extend(extremes_kept(lines, name, loop_));
                        let indent = indent_of(lines[first]);
                        for field in fields_named(lines, &d.name, &block, &targets) {
                            out.push((end, format!("{indent}{name} += {field}")));
                        }
                        for sum in helper_sums(defs, d, name, &targets) {
                            out.push((end, format!("{indent}{sum}")));
                        }
                    }
                    let loop_ = (&toks[..k], inner, block.as_slice());
                    out.extend(choices_kept(
                        lines,
                        name,
                        (&value, lines[d.body[j]]),
                        t,
                        loop_,
                    ));
                }
            }
        }
    }
    out
}

/// A choice a function starts before a loop and the loop never keeps, where the loop's body sets a sibling started
/// before the loop too (`best_seats = seats`): started at `None` (`best = None`), the loop's item kept there
/// (`best = room`); started from the first item of what the loop walks (`best_rider = runs[0]["rider"]` beside
/// `best_time = final_time(runs[0])`, `for run in runs[1:]:`), the same made of the loop's item
/// (`best_rider = run["rider"]`). `value` is the start's tokens and its line; `header` the loop's tokens; `loop_`
/// the tokens before the loop, the block's tokens and its lines.
fn choices_kept(
    lines: &[&str],
    name: &str,
    (value, line): (&[&str], &str),
    header: &[String],
    (before, inner, block): (&[Vec<String>], &[Vec<String>], &[usize]),
) -> Vec<(usize, String)> {
    let targets = if header.first().is_some_and(|h| h == "for") {
        bound(header)
    } else {
        Vec::new()
    };
    let made: Vec<String> = if value == ["None"] {
        targets.clone()
    } else {
        // `for run in runs[1:]:` or `for run in runs:`, and a start that reads `runs[0]`.
        let walked = header
            .iter()
            .position(|w| w == "in")
            .and_then(|i| header.get(i + 1));
        let first = walked.map(|w| format!("{w}[0]"));
        let start = line.split_once(" = ").map(|(_, v)| v.trim());
        match (first, start, targets.as_slice()) {
            (Some(first), Some(start), [item]) if start.contains(&first) => {
                vec![start.replace(&first, item)]
            }
            _ => Vec::new(),
        }
    };
    if made.is_empty() {
        return Vec::new();
    }
    let started = |y: &String| {
        before
            .iter()
            .any(|b| b.first() == Some(y) && b.get(1).is_some_and(|e| e == "="))
    };
    let sets = inner
        .iter()
        .zip(block)
        .filter(|(u, _)| u.len() > 2 && u[0] != name && u[1] == "=" && started(&u[0]));
    let mut out = Vec::new();
    for (_, &at) in sets.take(MAX_GATHERED) {
        for x in &made {
            out.push((at, format!("{}{name} = {x}", indent_of(lines[at]))));
        }
    }
    out
}

/// A loop that binds a name it never reads (`status = expiry_status(item["expires"], today)`) beside a dict of
/// lists started before it (`report = {"expired": [], "soon": [], "ok": []}`, or `defaultdict(list)`) that the
/// loop never touches and the function reads after it: the loop's item filed under that name at the end of the
/// loop's body (`report[status].append(item["name"])`, the item's `"name"` or `"id"` as the file reads it first,
/// then the item itself).
pub(in crate::locate_rank) fn groups_never_filled(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
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
            let targets = bound(&toks[k]);
            let inner = &toks[k + 1..k + 1 + block.len()];
            let after = &toks[k + 1 + block.len()..];
            let reads = |u: &Vec<String>, n: &String| {
                u.iter().skip(2).any(|w| w == n) || u.first() != Some(n) && u.contains(n)
            };
            let unread: Vec<&String> = inner
                .iter()
                .enumerate()
                .filter_map(|(j, u)| {
                    (u.len() > 2 && is_name(&u[0]) && u[1] == "=").then_some((j, &u[0]))
                })
                .filter(|(j, n)| {
                    !targets.contains(n) && !inner[j + 1..].iter().chain(after).any(|u| reads(u, n))
                })
                .map(|(_, n)| n)
                .collect();
            let Some(key) = unread.last() else { continue };
            for (j, b) in toks[..k].iter().enumerate() {
                let (Some(r), Some("=")) = (b.first(), b.get(1).map(String::as_str)) else {
                    continue;
                };
                let lists = b.get(2).is_some_and(|o| o == "{")
                    && b.windows(3)
                        .any(|w| w[0] == ":" && w[1] == "[" && w[2] == "]")
                    || b[2..].starts_with(&["defaultdict".into(), "(".into(), "list".into()]);
                let untouched = !inner.iter().any(|u| u.contains(r));
                let used = after.iter().any(|u| u.contains(r));
                if !lists || !untouched || !used || indent_of(lines[d.body[j]]).len() > depth {
                    continue;
                }
                let pad = indent_of(lines[first]);
                for x in &targets {
                    for v in keys_read_off(lines, x).into_iter().chain([x.clone()]) {
                        out.push((end, format!("{pad}{r}[{key}].append({v})")));
                    }
                }
            }
        }
    }
    out
}

/// What the file reads off `x` under a name-like key (`x["name"]`, `x["id"]`), the first such key it reads.
fn keys_read_off(lines: &[&str], x: &str) -> Vec<String> {
    const NAMING: &[&str] = &["name", "id", "title", "code", "label"];
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        for q in ['"', '\''] {
            let open = format!("{x}[{q}");
            for (at, _) in line.match_indices(&open) {
                let before = line[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                    continue;
                }
                let rest = &line[at + open.len()..];
                let Some(k) = rest.split(q).next().filter(|k| NAMING.contains(k)) else {
                    continue;
                };
                let read = format!("{x}[{q}{k}{q}]");
                if out.is_empty() && rest[k.len()..].starts_with(&format!("{q}]")) {
                    out.push(read);
                }
            }
        }
    }
    out
}

/// Whether a name starts at zero: `0`, `0.0`, `Decimal("0")` (`value`: the tokens after `=`; `line`: its text).
fn zero_start(value: &[&str], line: &str) -> bool {
    matches!(value, ["0"] | ["0", ".", "0"])
        || (value.first() == Some(&"Decimal")
            && ["Decimal(\"0\")", "Decimal('0')", "Decimal(0)"]
                .iter()
                .any(|z| line.trim_end().ends_with(z)))
}

/// The tuples a list is read as after its loop (`[premises for _, premises in poor]`), made of the loop's names:
/// each position the later line names with one of them keeps it, each other takes what the loop computes, then
/// the loop's own names (`(stars, premises)`), the two-item ones only.
fn tuples_read_after(
    after: &[Vec<String>],
    name: &str,
    computed: &[String],
    targets: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in after {
        for (f, _) in t.iter().enumerate().filter(|(_, w)| *w == "for") {
            let Some(at) = t[f..].iter().position(|w| w == "in").map(|i| f + i) else {
                continue;
            };
            if t.get(at + 1).is_none_or(|n| n != name) {
                continue;
            }
            let unpacked: Vec<&String> = t[f + 1..at].iter().filter(|w| *w != ",").collect();
            if unpacked.len() != 2 || t[f + 1..at].len() != 3 {
                continue;
            }
            let known = |w: &String| computed.contains(w) || targets.contains(w);
            let fill = computed
                .iter()
                .chain(targets)
                .filter(|c| !unpacked.contains(c));
            for other in fill.take(MAX_GATHERED) {
                let items: Vec<&String> = unpacked
                    .iter()
                    .map(|w| if known(w) { *w } else { other })
                    .collect();
                let tuple = format!("({}, {})", items[0], items[1]);
                if items[0] != items[1] && !out.contains(&tuple) {
                    out.push(tuple);
                }
            }
        }
    }
    out
}

/// A dict a function starts empty beside another (`points, counts = {}, {}`, or on lines of their own) and reads
/// after a loop that never mentions it, where the loop writes the other under a key it binds (`points[child] =
/// points.get(child, 0) + chore_value(chore)`): the same key counted in it just after that write (`counts[child] =
/// counts.get(child, 0) + 1`).
pub(in crate::locate_rank) fn dicts_beside_never_written(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        // Each name the function starts as an empty dict, with the index of the line that starts it.
        let mut empty: Vec<(usize, String)> = Vec::new();
        for (j, t) in toks.iter().enumerate() {
            let Some(eq) = t.iter().position(|w| w == "=") else {
                continue;
            };
            let names: Vec<&String> = t[..eq].iter().filter(|w| *w != ",").collect();
            let values: Vec<&[String]> = t[eq + 1..].split(|w| w == ",").collect();
            let dicts = values.len() == names.len()
                && values.iter().all(|v| {
                    matches!(v, [a, b] if a == "{" && b == "}")
                        || matches!(v, [a, b, c] if a == "dict" && b == "(" && c == ")")
                });
            if dicts && names.iter().all(|n| is_name(n)) {
                empty.extend(names.into_iter().map(|n| (j, n.clone())));
            }
        }
        for Loop { at: k, block, .. } in d.loops(lines, &toks, &["for"]) {
            let inner = &toks[k..k + 1 + block.len()];
            let after = &toks[k + 1 + block.len()..];
            for (j, name) in empty.iter().filter(|(j, _)| *j < k) {
                let untouched = !toks[j + 1..k + 1 + block.len()]
                    .iter()
                    .any(|u| u.contains(name));
                if !untouched || !after.iter().any(|u| reads(u, name)) {
                    continue;
                }
                // The other dict's keyed write in the loop: `other[key] = ...` or `other[key] += ...`.
                let write = inner[1..].iter().zip(&block).find(|(u, _)| {
                    matches!(u.as_slice(), [o, open, key, close, op, ..]
                        if o != name
                            && empty.iter().any(|(_, e)| e == o)
                            && open == "["
                            && is_name(key)
                            && close == "]"
                            && matches!(op.as_str(), "=" | "+="))
                });
                if let Some((u, &b)) = write {
                    let key = &u[2];
                    let indent = indent_of(lines[b]);
                    out.push((
                        b,
                        format!("{indent}{name}[{key}] = {name}.get({key}, 0) + 1"),
                    ));
                }
            }
        }
    }
    out
}

/// The tuples the docstring of `d` writes out in brackets, in its words (`(tray id, crop) for trays ready to cut`:
/// `(tray_id, crop)`), each once, when every word is one of a loop's names ([`said_item`]).
fn tuples_said(lines: &[&str], d: &Def, targets: &[String], computed: &[String]) -> Vec<String> {
    let prose = super::super::prose_lines(&lines.join("\n"));
    let mut out: Vec<String> = Vec::new();
    for b in d.docstring(&prose) {
        for group in lines[b].split('(').skip(1) {
            let Some((inside, _)) = group.split_once(')') else {
                continue;
            };
            let items: Vec<String> = inside
                .split(',')
                .map(|i| i.trim().to_lowercase().replace([' ', '-'], "_"))
                .collect();
            if items.len() < 2 {
                continue;
            }
            let said: Option<Vec<String>> = items
                .iter()
                .map(|i| said_item(lines, i, targets, computed))
                .collect();
            if let Some(said) = said {
                let tuple = format!("({})", said.join(", "));
                if !out.contains(&tuple) {
                    out.push(tuple);
                }
            }
        }
    }
    out
}

/// What a loop gathers for one word of a docstring's tuple: the loop's name or a name its body binds that is the
/// word (`crop`), or the only one that shortens it (`t` for `time`); else, for a loop over one item, the item's key
/// of that word that the file reads elsewhere (`e["skipper"]`), or its attribute (`e.skipper`).
fn said_item(
    lines: &[&str],
    word: &str,
    targets: &[String],
    computed: &[String],
) -> Option<String> {
    let names = || targets.iter().chain(computed);
    if let Some(n) = names().find(|n| *n == word) {
        return Some(n.clone());
    }
    let short: Vec<&String> = names()
        .filter(|n| n.len() < word.len() && word.starts_with(n.as_str()))
        .collect();
    if let [n] = short.as_slice() {
        return Some((*n).clone());
    }
    let [item] = targets else { return None };
    if !is_name(word) {
        return None;
    }
    for q in ['"', '\''] {
        let key = format!("{q}{word}{q}");
        let read = [format!("[{key}]"), format!(".get({key}")];
        if lines
            .iter()
            .any(|l| read.iter().any(|r| l.contains(r.as_str())))
        {
            return Some(format!("{item}[{key}]"));
        }
    }
    let attribute = format!(".{word}");
    let read_as_attribute = lines.iter().any(|l| {
        l.match_indices(&attribute).any(|(i, _)| {
            let after = l[i + attribute.len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    });
    read_as_attribute.then(|| format!("{item}.{word}"))
}

/// A dict a loop gives each key a zero with `setdefault` (`totals.setdefault(variety, 0.0)`) and no line of the
/// function adds to: right after, the key's entry added what a helper of the file makes of the loop's other names
/// ([`helper_made`]: `totals[variety] += flour_from_grain(grain_kg)`), then each of them as it is.
pub(in crate::locate_rank) fn zeros_never_added_to(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for Loop { at: k, block, .. } in d.loops(lines, &toks, &["for"]) {
            let targets = bound(&toks[k]);
            for (u, &b) in toks[k + 1..k + 1 + block.len()].iter().zip(&block) {
                let zero = match u.as_slice() {
                    [dict, dot, call, open, key, comma, rest @ ..]
                        if dot == "." && call == "setdefault" && open == "(" && comma == "," =>
                    {
                        matches!(rest, [z, c] | [z, _, _, c] if z == "0" && c == ")")
                            .then_some((dict, key))
                    }
                    _ => None,
                };
                let Some((dict, key)) = zero.filter(|(x, k)| is_name(x) && is_name(k)) else {
                    continue;
                };
                let added = toks.iter().any(|t| {
                    t.first() == Some(dict)
                        && t.get(1).is_some_and(|o| o == "[")
                        && t.iter().any(|o| matches!(o.as_str(), "+=" | "-=" | "="))
                });
                if added {
                    continue;
                }
                let others: Vec<String> = targets.iter().filter(|t| *t != key).cloned().collect();
                let indent = indent_of(lines[b]);
                for x in helper_made(lines, defs, d, &others).iter().chain(&others) {
                    out.push((b, format!("{indent}{dict}[{key}] += {x}")));
                }
            }
        }
    }
    out
}

/// A parameter and a local that a function never reads, beside a number it adds up (`claim += food_allowance(...)`,
/// with `lost_earnings` and `cap = ...` unread): the parameter added capped at the local (`claim +=
/// min(lost_earnings, cap)`), then as it is, right after the last line that adds to the number at the function's
/// own depth.
pub(in crate::locate_rank) fn capped_parameters_never_added(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let read = |n: &String, skip: Option<usize>| {
            toks.iter()
                .enumerate()
                .any(|(i, t)| Some(i) != skip && reads(t, n))
        };
        let mut params: Vec<&String> = d
            .params
            .iter()
            .filter(|p| *p != "self" && !read(p, None))
            .collect();
        params.sort();
        let locals: Vec<(usize, &String)> = toks
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.as_slice() {
                [n, eq, ..] if eq == "=" && is_name(n) && !d.params.contains(n) => Some((i, n)),
                _ => None,
            })
            .filter(|(i, n)| {
                !read(n, Some(*i)) && !toks[..*i].iter().any(|t| t.first() == Some(*n))
            })
            .collect();
        let added = toks.iter().enumerate().rev().find(|(i, t)| {
            t.get(1).is_some_and(|o| o == "+=") && indent_of(lines[d.body[*i]]) == d.indent
        });
        let Some((at, total)) = added.map(|(i, t)| (d.body[i], &t[0])) else {
            continue;
        };
        for p in params {
            for (_, cap) in &locals {
                out.push((at, format!("{}{total} += min({p}, {cap})", d.indent)));
            }
            out.push((at, format!("{}{total} += {p}", d.indent)));
        }
    }
    out
}

/// The most helpers one loop's item is handed to ([`helper_made`]).
const MAX_HELPERS: usize = 2;

/// What a helper of the file that takes one parameter makes of a loop's item (`parse_entry(line)`), for the
/// helpers but `d` itself whose parameter has the item's name, or that no line of the file calls; at most
/// [`MAX_HELPERS`].
fn helper_made(lines: &[&str], defs: &[Def], d: &Def, targets: &[String]) -> Vec<String> {
    let called = |h: &Def| {
        lines.iter().any(|l| {
            let t = tokens(&code_of(l));
            t.first().is_none_or(|f| f != "def")
                && t.windows(2).any(|w| w[0] == h.name && w[1] == "(")
        })
    };
    let mut out = Vec::new();
    for h in defs
        .iter()
        .filter(|h| h.name != d.name && h.params.len() == 1)
    {
        let param = h.params.iter().next();
        // The file's lines read once a helper, not once a loop name.
        let uncalled = !called(h);
        for x in targets {
            if param == Some(x) || uncalled {
                out.push(format!("{}({x})", h.name));
            }
        }
    }
    out.truncate(MAX_HELPERS);
    out
}

/// What a helper of one parameter named for a total (`order_weight` for `weight`) makes of each of a loop's
/// `targets`, added to the total (`weight += order_weight(order)`), for the helpers of the file but `d` itself.
fn helper_sums(defs: &[Def], d: &Def, name: &str, targets: &[String]) -> Vec<String> {
    let helpers = defs.iter().filter(|h| {
        h.name != d.name && h.params.len() == 1 && h.name.split('_').any(|w| w == name)
    });
    let mut out = Vec::new();
    for h in helpers {
        for x in targets {
            out.push(format!("{name} += {}({x})", h.name));
        }
    }
    out
}

/// The most lines written for one loop's value never used.
const MAX_ADDED: usize = 4;

/// A `for` loop that unpacks a value it never reads (`for label, amount in transactions:` and no `amount` in its
/// body) and a value started before the loop that its body reads and never updates (`balance = opening`, read in
/// `history.append((label, balance))`): the running value updated by it, first in the body, then last (`balance
/// += amount`, then `-=`); and a dict entry the body starts at a number under its key and never adds to
/// (`paid[person] = 0.0`): `paid[person] += amount` last in the body.
pub(in crate::locate_rank) fn loop_values_never_used(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
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
            let inner = &toks[k + 1..k + 1 + block.len()];
            let unread: Vec<String> = bound(t)
                .into_iter()
                .filter(|v| v != "_" && !inner.iter().any(|u| u.contains(v)))
                .collect();
            let updated = |x: &str| {
                inner.iter().any(|u| {
                    u.first().is_some_and(|w| w == x)
                        && u.get(1).is_some_and(|o| o.ends_with('=') && o != "==")
                })
            };
            let mut running: Vec<&String> = Vec::new();
            for (j, b) in toks[..k].iter().enumerate() {
                let plain = b.len() > 2 && is_name(&b[0]) && b[1] == "=";
                let collection = matches!(
                    b.get(2).map(String::as_str),
                    Some("[" | "{" | "list" | "set" | "dict")
                );
                let shallow = indent_of(lines[d.body[j]]).len() <= depth;
                if plain && !collection && shallow && !running.contains(&&b[0]) {
                    running.push(&b[0]);
                }
            }
            running.retain(|x| inner.iter().any(|u| reads(u, x)) && !updated(x));
            let indent = indent_of(lines[first]);
            let mut given = 0;
            // A dict entry the loop starts at a number under its key and never adds to (`paid[person] = 0.0`):
            // `paid[person] += amount` at the end of the body.
            let number = |w: &str| w.chars().next().is_some_and(|c| c.is_ascii_digit());
            for u in inner {
                // The number may lex as several tokens (`0.0`: `0`, `.`, `0`).
                let started = (6..=8).contains(&u.len())
                    && is_name(&u[0])
                    && u[1] == "["
                    && is_name(&u[2])
                    && u[3] == "]"
                    && u[4] == "="
                    && number(&u[5])
                    && u[6..].iter().all(|w| w == "." || number(w));
                let added = |w: &Vec<String>| w.len() > 4 && w[..4] == u[..4] && w[4] != "=";
                if started && !inner.iter().any(added) {
                    for v in &unread {
                        if given < MAX_ADDED {
                            out.push((end, format!("{indent}{}[{}] += {v}", u[0], u[2])));
                            given += 1;
                        }
                    }
                }
            }
            for op in ["+=", "-="] {
                for x in &running {
                    for v in &unread {
                        for at in [d.body[k], end] {
                            if given < MAX_ADDED {
                                out.push((at, format!("{indent}{x} {op} {v}")));
                                given += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// For a number `name` started at 0 before a loop (its body's tokens, its lines and its own names): when its name
/// says it keeps the greatest or the least, `name = max(name, x)` (or `min`), else (a total) `name += x`, just after
/// each line of the body that updates another name `x`.
fn extremes_kept(
    lines: &[&str],
    name: &str,
    (inner, block, targets): (&[Vec<String>], &[usize], &[String]),
) -> Vec<(usize, String)> {
    let words: Vec<String> = name
        .to_ascii_lowercase()
        .split('_')
        .map(str::to_string)
        .collect();
    let said = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let keep = if said(GREATEST) {
        Some("max")
    } else if said(LEAST) {
        Some("min")
    } else {
        None
    };
    let mut out = Vec::new();
    for (u, &at) in inner.iter().zip(block) {
        // A total adds up what a plain assignment computes (not a running value of its own, not an entry).
        let plain = |x: &String| u.first() == Some(x) && u.get(1).is_some_and(|e| e == "=");
        for x in bound(u)
            .iter()
            .filter(|x| *x != name && !targets.contains(x))
        {
            let indent = indent_of(lines[at]);
            match keep {
                Some(keep) => out.push((at, format!("{indent}{name} = {keep}({name}, {x})"))),
                None if plain(x) => out.push((at, format!("{indent}{name} += {x}"))),
                None => {}
            }
        }
    }
    out.truncate(MAX_GATHERED);
    out
}

/// The words of a function's name that say what it counts or adds up rather than how (`balls_of`: `balls`).
const NOT_A_FIELD: &[&str] = &[
    "of",
    "to",
    "for",
    "by",
    "in",
    "on",
    "at",
    "per",
    "the",
    "get",
    "all",
    "how",
    "many",
    "total",
    "totals",
    "count",
    "sum",
    "number",
    "num",
    "calc",
    "calculate",
    "compute",
    "find",
    "left",
    "owed",
    "due",
];

/// What a loop's item holds under a word of its function's name (`balls_of`, `for skein in stash:` reading
/// `skein["colour"]`: `skein["balls"]`), for a loop name its block reads with a quoted key and never under that
/// word; a total started at 0 that the loop never touches adds it up.
fn fields_named(
    lines: &[&str],
    function: &str,
    block: &[usize],
    targets: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for target in targets {
        for q in ['"', '\''] {
            let opened = format!("{target}[{q}");
            if !block.iter().any(|&b| lines[b].contains(&opened)) {
                continue;
            }
            for word in function.to_ascii_lowercase().split('_') {
                let key = format!("{opened}{word}{q}]");
                let fits = word.len() >= 3 && !NOT_A_FIELD.contains(&word);
                if fits && !block.iter().any(|&b| lines[b].contains(&key)) && !out.contains(&key) {
                    out.push(key);
                }
            }
        }
    }
    out.truncate(MAX_GATHERED);
    out
}

/// A dict started empty and then counted into by key (`result[project] += minutes`, `groups[key].append(x)`)
/// with no first value for a new key anywhere in its function (no `setdefault`, `get`, `in` test or
/// `defaultdict`): `result.setdefault(project, 0)` (or `[]`, `set()`) just before the line, at its indentation.
pub(in crate::locate_rank) fn counts_never_started(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for (j, t) in toks.iter().enumerate() {
            let empty = matches!(
                t.iter().map(String::as_str).collect::<Vec<_>>().as_slice(),
                [_, "=", "{", "}"] | [_, "=", "dict", "(", ")"]
            );
            let Some(name) = t.first().filter(|n| empty && is_name(n)) else {
                continue;
            };
            let started = toks.iter().any(|u| {
                u.windows(3).any(|w| {
                    w[0] == *name && w[1] == "." && matches!(w[2].as_str(), "setdefault" | "get")
                }) || u.windows(2).any(|w| w[0] == "in" && w[1] == *name)
            });
            if started {
                continue;
            }
            for i in j + 1..toks.len() {
                let u: Vec<&str> = toks[i].iter().map(String::as_str).collect();
                let first = match u.as_slice() {
                    [n, "[", key, "]", "+=" | "-=", ..] if *n == name && is_name(key) => "0",
                    [n, "[", key, "]", ".", "append" | "extend", ..]
                        if *n == name && is_name(key) =>
                    {
                        "[]"
                    }
                    [n, "[", key, "]", ".", "add", ..] if *n == name && is_name(key) => "set()",
                    _ => continue,
                };
                let indent = indent_of(lines[d.body[i]]);
                let line = format!("{indent}{name}.setdefault({}, {first})", u[2]);
                out.push((d.body[i - 1], line));
            }
        }
    }
    out
}

/// The most calls written for one parameter never read.
const MAX_CALLS: usize = 2;

/// The parameters of a `def` line's tokens, in order, without their defaults.
pub(super) fn positional(header: &[String]) -> Vec<String> {
    let Some(open) = header.iter().position(|t| t == "(") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut depth = 0;
    for (i, t) in header.iter().enumerate().skip(open) {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ if depth == 1 && matches!(header[i - 1].as_str(), "(" | ",") && is_name(t) => {
                out.push(t.clone());
            }
            _ => {}
        }
    }
    out
}

/// A method's parameter that its body never reads (`other` of `transfer(self, other, amount)`): a call of
/// another method of its class on it, after the method's last line, passing the parameters the method does read
/// when that method takes as many (`other.deposit(amount)`), the methods it does not already call first.
pub(in crate::locate_rank) fn parameters_never_read(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let methods: Vec<(&Def, Vec<String>)> = defs
        .iter()
        .map(|d| (d, positional(&d.header(lines))))
        .filter(|(_, p)| p.first().is_some_and(|s| s == "self"))
        .collect();
    for (d, params) in &methods {
        let body = d.tokens(lines);
        let read = |p: &String| body.iter().any(|u| u.contains(p));
        let args: Vec<&String> = params[1..].iter().filter(|p| read(p)).collect();
        let calls = |m: &str| {
            body.iter().any(|u| {
                u.windows(3)
                    .any(|w| w[0] == "." && w[1] == m && w[2] == "(")
            })
        };
        // Its siblings in the class: methods at its indentation, not itself, not a dunder.
        let mut siblings: Vec<&(&Def, Vec<String>)> = methods
            .iter()
            .filter(|(s, p)| {
                s.indent == d.indent
                    && s.name != d.name
                    && !s.name.starts_with("__")
                    && p.len() - 1 == args.len()
            })
            .collect();
        siblings.sort_by_key(|(s, _)| calls(&s.name));
        for p in params[1..]
            .iter()
            .filter(|p| !read(p) && !p.starts_with('_'))
        {
            for (s, _) in siblings.iter().take(MAX_CALLS) {
                let args = args
                    .iter()
                    .map(|a| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push((d.last, format!("{}{p}.{}({args})", d.indent, s.name)));
            }
        }
    }
    out
}

/// The most records written for one parameter never read ([`logs_never_written`]).
const MAX_RECORDS: usize = 3;

/// A parameter a function never reads (`log` of `pour(casks, name, pints, log)`) that another function of the file
/// walks as tuples (`for n, p in log`): a tuple of as many of the parameters it does read appended to it, before
/// its last `return` at its own depth (else after its last line), those whose first letters match the walk's
/// names first, then in the order they come (`log.append((name, pints))`), at most [`MAX_RECORDS`].
pub(in crate::locate_rank) fn logs_never_written(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let header = positional(&d.header(lines));
        let body = d.tokens(lines);
        let read = |p: &String| body.iter().any(|u| reads(u, p));
        let args: Vec<&String> = header.iter().filter(|p| *p != "self" && read(p)).collect();
        for p in header
            .iter()
            .filter(|p| *p != "self" && !p.starts_with('_') && !read(p))
        {
            // `for a, b in p` in another function: the names it unpacks.
            let walked = defs.iter().filter(|o| o.name != d.name).find_map(|o| {
                o.tokens(lines).into_iter().find_map(|u| {
                    let at = u.windows(2).position(|w| w[0] == "in" && w[1] == *p)?;
                    let start = u[..at].iter().rposition(|t| t == "for")?;
                    let names: Vec<String> = u[start + 1..at].iter().step_by(2).cloned().collect();
                    let commas = u[start + 1..at].iter().skip(1).step_by(2).all(|t| t == ",");
                    (names.len() >= 2 && commas && names.iter().all(|n| is_name(n)))
                        .then_some(names)
                })
            });
            let Some(names) = walked.filter(|n| n.len() <= args.len()) else {
                continue;
            };
            let mut tuples: Vec<Vec<&String>> = Vec::new();
            choose(&args, names.len(), &mut Vec::new(), &mut tuples);
            let initials = |t: &Vec<&String>| {
                !t.iter()
                    .zip(&names)
                    .all(|(a, n)| a.chars().next() == n.chars().next())
            };
            tuples.sort_by_key(initials);
            let last = d.last;
            let returns =
                super::first_word(lines[last]) == "return" && indent_of(lines[last]) == d.indent;
            let at = match d.body.iter().rev().nth(1) {
                Some(&before) if returns => before,
                _ => last,
            };
            for t in tuples.iter().take(MAX_RECORDS) {
                let joined = t.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ");
                out.push((at, format!("{}{p}.append(({joined}))", d.indent)));
            }
        }
    }
    out
}

/// A list attribute `__init__` starts empty that no line of the file adds to and no method reads (`self.refused =
/// []`, read only by the callers): the record of a refusal, the tuple of a method's parameters
/// (`self.refused.append((person, item, quantity))`, or its one parameter) before each `return False` or
/// `return None` a block of the method hands back early.
pub(in crate::locate_rank) fn refusals_never_logged(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let all: Vec<usize> = (0..lines.len()).collect();
    let methods = || defs.iter().filter(|d| d.name != "__init__");
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for &b in &init.body {
            let toks = tokens(&code_of(lines[b]));
            let [s, dot, name, eq, open, close] = toks.as_slice() else {
                continue;
            };
            let attr = format!("self.{name}");
            let empty = s == "self" && dot == "." && eq == "=" && open == "[" && close == "]";
            let read = methods().any(|d| d.body.iter().any(|&k| code_of(lines[k]).contains(&attr)));
            if !empty || read || super::updated(lines, &all, name) {
                continue;
            }
            for d in methods() {
                let header = positional(&d.header(lines));
                let params: Vec<&str> = header
                    .iter()
                    .map(String::as_str)
                    .filter(|p| *p != "self")
                    .collect();
                let item = match params.as_slice() {
                    [] => continue,
                    [p] => p.to_string(),
                    many => format!("({})", many.join(", ")),
                };
                for (k, &r) in d.body.iter().enumerate().skip(1) {
                    let refuses = matches!(lines[r].trim(), "return False" | "return None");
                    if refuses && indent_of(lines[r]).len() > d.indent.len() {
                        let indent = indent_of(lines[r]);
                        out.push((d.body[k - 1], format!("{indent}{attr}.append({item})")));
                    }
                }
            }
        }
    }
    out
}

/// The words of a function's or a list's name that say it is ranked (`run_order`, `ranked`, `leaderboard`).
const RANKED: &[&str] = &["order", "rank", "sort", "priorit", "leader", "queue", "top"];

/// The most scoring functions a ranked list is sorted by.
const MAX_SCORERS: usize = 2;

/// A list a function copies (`ranked = list(routes)`) and hands on unsorted, where the function's or the list's
/// name says it is ranked (`run_order`, `ranked`): sorted by each function of the file that scores one item
/// (`def priority(route):` with a `return`), highest first and then lowest first, just after the copy
/// (`ranked.sort(key=priority, reverse=True)`).
pub(in crate::locate_rank) fn rankings_never_sorted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let scorers: Vec<&str> = defs
        .iter()
        .filter(|f| {
            let header = positional(&f.header(lines));
            let returns = f
                .tokens(lines)
                .iter()
                .any(|u| u.first().is_some_and(|w| w == "return") && u.len() > 1);
            header.len() == 1 && header[0] != "self" && f.indent.len() == 4 && returns
        })
        .map(|f| f.name.as_str())
        .collect();
    let ranked = |n: &str| RANKED.iter().any(|w| n.to_ascii_lowercase().contains(w));
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        for (j, t) in toks.iter().enumerate() {
            let [x, eq, call, open, _, close] = t.as_slice() else {
                continue;
            };
            let copy = eq == "=" && call == "list" && open == "(" && close == ")";
            let sorted = toks.iter().flatten().any(|w| w == "sort" || w == "sorted");
            if !copy || sorted || !(ranked(x) || ranked(&d.name)) {
                continue;
            }
            let indent = indent_of(lines[d.body[j]]);
            for f in scorers.iter().filter(|f| **f != d.name).take(MAX_SCORERS) {
                out.push((
                    d.body[j],
                    format!("{indent}{x}.sort(key={f}, reverse=True)"),
                ));
                out.push((d.body[j], format!("{indent}{x}.sort(key={f})")));
            }
        }
    }
    out
}

/// Every choice of `k` of `from`, each in the order they come.
fn choose<'a>(
    from: &[&'a String],
    k: usize,
    took: &mut Vec<&'a String>,
    out: &mut Vec<Vec<&'a String>>,
) {
    if took.len() == k {
        out.push(took.clone());
        return;
    }
    for (i, a) in from.iter().enumerate() {
        took.push(a);
        choose(&from[i + 1..], k, took, out);
        took.pop();
    }
}

/// A comprehension written over lines whose `for` clause, on a line of its own, binds a name nothing in it reads
/// and filters nothing (`name for date, name, seats in sorted(shows)` between `[` and `]`): the filter it left
/// out on a line after the clause, truthy or positive (`if seats`, `if seats > 0`).
pub(in crate::locate_rank) fn comprehension_filters_left_out(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let open = |u: &[String]| {
        u.iter()
            .map(|w| match w.as_str() {
                "(" | "[" | "{" => 1,
                ")" | "]" | "}" => -1,
                _ => 0,
            })
            .sum::<i32>()
    };
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        // Each statement's lines (indices into the body), split where the brackets close.
        let mut statements: Vec<Vec<usize>> = Vec::new();
        let mut depth = 0;
        for (k, u) in toks.iter().enumerate() {
            if depth == 0 {
                statements.push(Vec::new());
            }
            if let Some(s) = statements.last_mut() {
                s.push(k);
            }
            depth = (depth + open(u)).max(0);
        }
        for s in statements.iter().filter(|s| s.len() > 2) {
            for &k in &s[1..] {
                let u = &toks[k];
                let Some(f) = u.iter().position(|w| w == "for") else {
                    continue;
                };
                let Some(i) = u[f..].iter().position(|w| w == "in").map(|i| f + i) else {
                    continue;
                };
                // A filter after the clause, on its line or below it.
                let filters = u[f..].contains(&"if".into())
                    || s.iter().any(|&j| j > k && toks[j].contains(&"if".into()));
                if open(u) != 0 || filters {
                    continue;
                }
                let reads = |v: &String| {
                    s.iter().any(|&j| {
                        toks[j].iter().enumerate().any(|(x, w)| {
                            let bound_here = j == k && f < x && x < i;
                            w == v && !bound_here && (x == 0 || toks[j][x - 1] != ".")
                        })
                    })
                };
                let indent = indent_of(lines[d.body[k]]);
                for v in bound(&u[f..])
                    .iter()
                    .filter(|v| !v.starts_with('_') && !reads(v))
                {
                    out.push((d.body[k], format!("{indent}if {v}")));
                    out.push((d.body[k], format!("{indent}if {v} > 0")));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{offers, untold as lines_of};

    #[test]
    fn a_list_read_as_pairs_after_its_loop_gathers_pairs_and_a_decimal_zero_is_a_total() {
        let poor = "def revisit(inspections, most=2):\n    poor = []\n    for premises, scores in inspections:\n        stars = rating(scores)\n        if stars > most:\n            continue\n    poor.sort()\n    return [premises for _, premises in poor]\n";
        let got = lines_of(poor);
        assert!(
            got.contains(&(6, "        poor.append((stars, premises))".to_string())),
            "{got:?}"
        );
        let paid = "def shares(left, shares):\n    paid = Decimal(\"0\")\n    for name, weight in shares.items():\n        amount = left * weight\n        result[name] = amount\n    return left - paid\n";
        let got = lines_of(paid);
        assert!(
            got.contains(&(4, "        paid += amount".to_string())),
            "{got:?}"
        );
    }

    #[test]
    fn a_parameter_never_read_is_added_capped_at_a_local_never_read() {
        let text = "def daily_claim(day, miles, lost):\n    cap = 64.95 if day <= 10 else 129.91\n    claim = miles * 0.3\n    claim += food(day)\n    return round(claim, 2)\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(4, "    claim += min(lost, cap)".to_string())),
            "{got:?}"
        );
        assert!(
            got.contains(&(4, "    claim += lost".to_string())),
            "{got:?}"
        );
        // The parameter read already: nothing of the kind.
        let read = text.replace("food(day)", "food(lost)");
        assert!(!offers(&read, "min(lost, cap)"));
    }

    #[test]
    fn a_while_loop_gathers_what_it_steps_first_in_its_block() {
        let text = "def days(every, last, start=1):\n    \"\"\"The days to mist on.\"\"\"\n    out = []\n    day = start\n    while day <= last:\n        day += every\n    return out\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        out.append(day)".to_string())),
            "{got:?}"
        );
        assert!(
            got.contains(&(6, "        out.append(day)".to_string())),
            "{got:?}"
        );
    }

    #[test]
    fn a_dict_started_beside_one_the_loop_writes_by_key_counts_the_same_key() {
        let text = "def tally(done):\n    \"\"\"Return (points, counts) per child.\"\"\"\n    points, counts = {}, {}\n    for child, chore in done:\n        points[child] = points.get(child, 0) + value(chore)\n    return points, counts\n";
        let want = (
            5,
            "        counts[child] = counts.get(child, 0) + 1".to_string(),
        );
        assert!(lines_of(text).contains(&want), "{:?}", lines_of(text));
        // On lines of their own too.
        let apart = text.replace(
            "    points, counts = {}, {}\n",
            "    points = {}\n    counts = dict()\n",
        );
        let want = (
            6,
            "        counts[child] = counts.get(child, 0) + 1".to_string(),
        );
        assert!(lines_of(&apart).contains(&want), "{:?}", lines_of(&apart));
        // Written by the loop already, or never read after it: nothing.
        let written = text.replace(
            "value(chore)\n",
            "value(chore)\n        counts[chore] = 1\n",
        );
        assert!(!offers(&written, "counts[child] = counts.get"));
        let unread = text.replace("return points, counts", "return points");
        assert!(!offers(&unread, "counts[child] = counts.get"));
    }

    #[test]
    fn a_tuple_the_docstring_writes_is_gathered_and_a_zeroed_entry_is_added_to() {
        let ready = "def ready_trays(trays, today):\n    \"\"\"(tray id, crop) for trays ready to cut by `today`.\"\"\"\n    ready = []\n    for tray_id, crop, sown in trays:\n        if sown > today:\n            continue\n    return ready\n";
        assert!(
            lines_of(ready).contains(&(6, "        ready.append((tray_id, crop))".to_string()))
        );
        // Words the loop does not bind make no tuple.
        let other = ready.replace("(tray id, crop)", "(tray id, colour)");
        assert!(!offers(&other, "ready.append((tray_id"));
        // A name the body binds that shortens a word (`t` for time), and the item's key the file reads elsewhere.
        let boats = "def finishers(entries):\n    \"\"\"Return (skipper, time) for boats that finished, fastest first.\"\"\"\n    results = []\n    for e in entries:\n        t = race_time(e[\"laps\"])\n    results.sort(key=lambda r: r[1])\n    return results\n\n\ndef retired(entries):\n    return [e[\"skipper\"] for e in entries if not e[\"laps\"]]\n";
        let got = lines_of(boats);
        assert!(
            got.contains(&(5, "        results.append((e[\"skipper\"], t))".to_string())),
            "{got:?}"
        );
        // A key the file never reads is no word of the tuple.
        let unread = boats.replace("e[\"skipper\"] for", "e[\"name\"] for");
        assert!(
            !offers(&unread, "results.append((e["),
            "{:?}",
            lines_of(&unread)
        );
        let totals = "def flour(kg):\n    return kg * 0.75\n\n\ndef totals_by_variety(batches):\n    totals = {}\n    for variety, grain_kg in batches:\n        totals.setdefault(variety, 0.0)\n    return totals\n";
        let got = lines_of(totals);
        assert!(
            got.contains(&(8, "        totals[variety] += flour(grain_kg)".to_string())),
            "{got:?}"
        );
        assert!(
            got.contains(&(8, "        totals[variety] += grain_kg".to_string())),
            "{got:?}"
        );
        // Added to already: nothing of the kind.
        let added = totals.replace("0.0)\n", "0.0)\n        totals[variety] += grain_kg\n");
        assert!(!offers(&added, "totals[variety] += flour("));
    }

    #[test]
    fn a_total_never_touched_adds_what_a_helper_named_for_it_makes_of_the_item() {
        let text = "def order_weight(order):\n    return order[\"bales\"] * 22\n\n\ndef summary(orders):\n    bales = 0\n    weight = 0\n    for order in orders:\n        bales += order[\"bales\"]\n    return bales, weight\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(9, "        weight += order_weight(order)".to_string())),
            "{got:?}"
        );
        let added = text.replace(
            "    return bales",
            "        weight += order_weight(order)\n    return bales",
        );
        assert!(!offers(&added, "weight += order_weight"));
    }

    #[test]
    fn a_log_never_written_gets_a_tuple_of_the_read_parameters_before_the_return() {
        let text = "def pour(casks, name, pints, log):\n    cask = casks[name]\n    cask[\"left\"] -= pints\n    return cask[\"left\"]\n\n\ndef sold(log, name):\n    return sum(p for n, p in log if n == name)\n";
        let got = lines_of(text);
        let first = got.iter().position(|(_, l)| l.contains("log.append("));
        assert_eq!(
            first.map(|i| got[i].clone()),
            Some((3, "    log.append((name, pints))".to_string())),
            "{got:?}"
        );
        // Written already: nothing.
        let kept = text.replace(
            "    return cask",
            "    log.append((name, pints))\n    return cask",
        );
        assert!(!offers(&kept, "log.append(("));
    }

    #[test]
    fn a_ranked_copy_never_sorted_is_sorted_by_each_function_that_scores_an_item() {
        let text = "def score(team):\n    return team[\"won\"] * 3\n\n\ndef table_order(teams):\n    ranked = list(teams)\n    return [t[\"name\"] for t in ranked]\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "    ranked.sort(key=score, reverse=True)".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&(6, "    ranked.sort(key=score)".into())),
            "{got:?}"
        );
        // Sorted already, or no name that says it is ranked: nothing.
        let sorted = text.replace("list(teams)", "sorted(teams)");
        assert!(!offers(&sorted, ".sort(key="));
        let plain = text
            .replace("table_order", "names")
            .replace("ranked", "copied");
        assert!(!offers(&plain, ".sort(key="));
    }

    #[test]
    fn a_list_nothing_writes_is_given_the_refusals_a_method_hands_back_early() {
        let text = "class Cupboard:\n    def __init__(self):\n        self.stock = {}\n        self.refused = []\n\n    def request(self, person, item, quantity=1):\n        if self.stock.get(item, 0) < quantity:\n            return False\n        self.stock[item] -= quantity\n        return True\n";
        let got = lines_of(text);
        let line = "            self.refused.append((person, item, quantity))";
        assert!(got.contains(&(7, line.into())), "{got:?}");
        // Written already, or read by a method (another rule's): nothing.
        let kept = text.replace(
            "            return False",
            &format!("{line}\n            return False"),
        );
        assert!(!refusals(&kept));
        let read = format!("{text}\n    def count(self):\n        return len(self.refused)\n");
        assert!(!refusals(&read));
        // A refusal at the method's own depth is its answer, not an early one.
        let own = text.replace(
            "            return False\n        self.stock[item] -= quantity\n",
            "            pass\n        return False\n",
        );
        assert!(!refusals(&own));
    }

    fn refusals(text: &str) -> bool {
        let lines: Vec<&str> = text.lines().collect();
        !super::refusals_never_logged(&lines, &super::super::Def::all(&lines)).is_empty()
    }

    #[test]
    fn a_total_never_added_to_adds_what_the_item_holds_under_a_word_of_the_function_s_name() {
        let text = "def balls_of(stash, colour):\n    count = 0\n    for skein in stash:\n        if skein[\"colour\"] != colour:\n            continue\n    return count\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        count += skein[\"balls\"]".into())),
            "{got:?}"
        );
        assert!(!got.iter().any(|(_, l)| l.contains("[\"of\"]")), "{got:?}");
        // Added to already, or an item read with no quoted key: nothing.
        let added = text.replace(
            "            continue\n",
            "            continue\n        count += 1\n",
        );
        assert!(!offers(&added, "skein[\"balls\"]"));
        let plain = text.replace("skein[\"colour\"]", "skein.colour");
        assert!(!offers(&plain, "skein[\"balls\"]"));
    }

    #[test]
    fn a_comprehension_over_lines_that_never_reads_a_name_it_binds_gets_the_filter_on_it() {
        let text = "def available(shows):\n    return [\n        name for date, name, seats in sorted(shows)\n    ]\n";
        let got = lines_of(text);
        assert!(got.contains(&(3, "        if seats > 0".into())), "{got:?}");
        assert!(got.contains(&(3, "        if date".into())), "{got:?}");
        assert!(!offers(text, "if name"));
        // Not when it filters already.
        let filtered = text.replace("sorted(shows)\n", "sorted(shows)\n        if date\n");
        assert!(!offers(&filtered, "if seats"));
    }

    #[test]
    fn a_list_the_loop_never_gathers_into_gets_what_the_loop_computes_at_its_end() {
        let text = "def translate(seq):\n    protein = []\n    for i in range(0, len(seq), 3):\n        amino = CODONS.get(seq[i:i + 3], \"X\")\n        if amino == \"*\":\n            break\n    return \"\".join(protein)\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "        protein.append(amino)".into())),
            "{got:?}"
        );
        // What the body binds comes before the loop's own name.
        let amino = got.iter().position(|(_, l)| l.ends_with("append(amino)"));
        let i = got.iter().position(|(_, l)| l.ends_with("append(i)"));
        assert!(amino < i, "{got:?}");
        // Not when the loop gathers into it already, nor when nothing reads it after the loop.
        let gathered = text.replace(
            "            break\n",
            "            break\n        protein.append(amino)\n",
        );
        assert!(!offers(&gathered, "protein.append"));
        let unread = text.replace("\"\".join(protein)", "None");
        assert!(!offers(&unread, "protein.append"));
    }

    #[test]
    fn a_dict_of_lists_the_loop_never_fills_gets_the_item_under_the_name_it_never_reads() {
        let text = "def audit(stock, today):\n    report = {\"expired\": [], \"ok\": []}\n    for item in stock:\n        status = status_of(item[\"expires\"], today)\n    return report\n\n\ndef names(stock):\n    return [item[\"name\"] for item in stock]\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::groups_never_filled(&lines, &super::Def::all(&lines));
        assert_eq!(
            got,
            [
                (
                    3,
                    "        report[status].append(item[\"name\"])".to_string()
                ),
                (3, "        report[status].append(item)".to_string())
            ]
        );
        // Not once the loop fills it, nor when the name is read.
        let filled = text.replace(
            "today)\n    return",
            "today)\n        report[status].append(item)\n    return",
        );
        let lines: Vec<&str> = filled.lines().collect();
        assert!(super::groups_never_filled(&lines, &super::Def::all(&lines)).is_empty());
        let read = text.replace("    return report", "    return report, status");
        let lines: Vec<&str> = read.lines().collect();
        assert!(super::groups_never_filled(&lines, &super::Def::all(&lines)).is_empty());
    }

    #[test]
    fn a_list_the_loop_never_gathers_into_gets_what_an_uncalled_helper_makes_of_the_item() {
        let text = "def parse(row):\n    return row.split(\";\")\n\n\ndef load(lines):\n    entries = []\n    for line in lines:\n        line = line.strip()\n        if not line:\n            continue\n    return entries\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(10, "        entries.append(parse(line))".into())),
            "{got:?}"
        );
        // A helper the file calls already, of a parameter of another name, is no candidate.
        let called = format!("{text}\n\ndef first(lines):\n    return parse(lines[0])\n");
        assert!(!offers(&called, "entries.append(parse(line))"));
        // One whose parameter has the item's name is, called or not.
        let named = called.replace(
            "def parse(row):\n    return row.",
            "def parse(line):\n    return line.",
        );
        assert!(offers(&named, "entries.append(parse(line))"));
    }

    #[test]
    fn a_choice_started_at_none_keeps_the_loop_s_item_where_its_sibling_is_set() {
        let text = "def best_room(n):\n    best = None\n    best_seats = None\n    for room in ROOMS:\n        seats = ROOMS[room]\n        if seats >= n and (best_seats is None or seats < best_seats):\n            best_seats = seats\n    return best\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(7, "            best = room".into())),
            "{got:?}"
        );
        // Not after a line that sets no sibling started before the loop.
        assert!(!got.contains(&(5, "        best = room".into())), "{got:?}");
    }

    #[test]
    fn a_total_the_loop_never_adds_to_adds_up_what_the_body_computes() {
        let text = "def summary(totals):\n    total = 0.0\n    over = []\n    for category, limit in BUDGET.items():\n        spent = totals.get(category, 0.0)\n        if spent > limit:\n            over.append(category)\n    return round(total, 2), over\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        total += spent".into())),
            "{got:?}"
        );
    }

    #[test]
    fn a_dict_entry_the_loop_starts_at_zero_and_never_adds_to_adds_the_value_it_never_reads() {
        let text = "def paid_by(expenses):\n    paid = {}\n    for person, amount in expenses:\n        if person not in paid:\n            paid[person] = 0.0\n    return paid\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "        paid[person] += amount".into())),
            "{got:?}"
        );
        // Not when the loop adds to it already.
        let added = text.replace(
            "    return paid\n",
            "        paid[person] += amount\n    return paid\n",
        );
        assert!(!offers(&added, "paid[person] += amount"));
    }

    #[test]
    fn a_value_a_loop_unpacks_and_never_reads_updates_the_running_value_it_reads() {
        let text = "def running(opening, moves):\n    balance = opening\n    history = []\n    for label, amount in moves:\n        history.append((label, balance))\n    return history\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(4, "        balance += amount".into())),
            "{got:?}"
        );
        assert!(got.contains(&(5, "        balance -= amount".into())));
        // `label` is read, and a list is no running value.
        assert!(!offers(text, "+= label"), "{got:?}");
        assert!(!offers(text, "history +="), "{got:?}");
        // Not when the loop updates it already.
        let updated = text.replace(
            "        history.append",
            "        balance = balance + 1\n        history.append",
        );
        assert!(!offers(&updated, "balance += amount"));
    }

    #[test]
    fn a_best_so_far_never_kept_takes_the_greatest_after_each_update() {
        let text = "def longest_run(highs):\n    best = run = 0\n    for high in highs:\n        if high >= 30:\n            run += 1\n        else:\n            run = 0\n    return best\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(5, "            best = max(best, run)".into())),
            "{got:?}"
        );
        // The loop's own name is not what it keeps, and a name of no extreme is no best.
        assert!(
            !got.iter().any(|(_, l)| l.contains("max(best, high)")),
            "{got:?}"
        );
        let plain = text.replace("best", "total");
        assert!(!offers(&plain, "max("));
        let least = text.replace("best", "shortest");
        assert!(
            lines_of(&least).contains(&(5, "            shortest = min(shortest, run)".into()))
        );
    }

    #[test]
    fn a_dict_counted_into_before_its_key_has_a_value_starts_the_key() {
        let text = "def totals(entries):\n    result = {}\n    for project, start, end in entries:\n        result[project] += end - start\n    return result\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(3, "        result.setdefault(project, 0)".into())),
            "{got:?}"
        );
        let grouped = "def groups(pairs):\n    out = {}\n    for k, v in pairs:\n        out[k].append(v)\n    return out\n";
        assert!(lines_of(grouped).contains(&(3, "        out.setdefault(k, [])".into())));
        // Not where a key is started already.
        let started = text.replace("        result[project]", "        if project not in result:\n            result[project] = 0\n        result[project]");
        assert!(!offers(&started, "setdefault"));
    }

    #[test]
    fn a_parameter_a_method_never_reads_is_handed_another_method_s_call() {
        let text = "class Account:\n    def __init__(self, balance=0):\n        self.balance = balance\n\n    def deposit(self, amount):\n        self.balance += amount\n\n    def withdraw(self, amount):\n        self.balance -= amount\n\n    def report(self):\n        return self.balance\n\n    def transfer(self, other, amount):\n        self.withdraw(amount)\n";
        let got = lines_of(text);
        // The method it does not call already first; one of another arity never.
        let deposit = got
            .iter()
            .position(|l| *l == (15, "        other.deposit(amount)".into()));
        let withdraw = got
            .iter()
            .position(|l| *l == (15, "        other.withdraw(amount)".into()));
        assert!(deposit.is_some() && deposit < withdraw, "{got:?}");
        assert!(
            !got.iter().any(|(_, l)| l.contains("other.report")),
            "{got:?}"
        );
        // A parameter it reads needs nothing.
        let read = text.replace("self.withdraw(amount)", "other.deposit(amount)");
        assert!(!offers(&read, "other."));
    }

    #[test]
    fn a_choice_started_from_the_first_item_is_made_of_the_loop_s_item_where_its_sibling_is_set() {
        let text = "def fastest(runs):\n    best_rider = runs[0][\"rider\"]\n    best_time = final_time(runs[0])\n    for run in runs[1:]:\n        if final_time(run) < best_time:\n            best_time = final_time(run)\n    return best_rider, best_time\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::results_never_gathered(&lines, &super::Def::all(&lines));
        assert!(
            got.contains(&(5, "            best_rider = run[\"rider\"]".to_string())),
            "{got:?}"
        );
        // Kept already: nothing.
        let kept = text.replace(
            "            best_time = final_time(run)\n",
            "            best_time = final_time(run)\n            best_rider = run[\"rider\"]\n",
        );
        let lines: Vec<&str> = kept.lines().collect();
        let got = super::results_never_gathered(&lines, &super::Def::all(&lines));
        assert!(
            !got.iter().any(|(_, l)| l.contains("best_rider")),
            "{got:?}"
        );
    }
}
