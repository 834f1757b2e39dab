//! Insertions for the half of a pair a function leaves out: the write a place parameter gets and its partner does
//! not (stock taken from `source` and never put at `target`), the write a block makes for one of two parameters the
//! function otherwise treats alike (a draw's point for `home` and none for `away`), the normalisation the file's other functions give
//! a parameter of the same name and one function takes as it came, and the update a constant's sibling makes in
//! one branch and the constant never makes in another (`POINTS_WIN` awarded, `POINTS_DRAW` never read), and the
//! count one function keeps beside a collection that the function making the opposite call never keeps, and the
//! half of a transfer a function leaves out (taken from one dict parameter, never put in the other), and the check
//! one method makes first and a sibling writing the same attribute never makes, and the mirror of a second
//! collection's change a method leaves out where another method changes both the other way (`self.available.remove(tool)`
//! beside `self.loans[tool] = member`), and what a method puts into a kept collection that the method named as its
//! opposite never takes back (`del self.out[key]` in `sign_in`), and an amount constant never read that belongs in
//! a list of labelled amounts beside the others (`items.append(("fitting", FITTING_FEE))`). Pure: lines in, lines out.

use std::collections::HashSet;

use super::super::{is_identifier, is_name, prose_lines, tokens};
use super::{Def, block_below, code_of, first_word, indent_of, renamed, unread_constants};

/// The most mirrored writes one function is given by [`counterparts_never_updated`].
const MAX_MIRRORED: usize = 4;

/// The 0-based line after which a line goes first in `d`'s body: its docstring's last line, else the line before
/// its first.
pub(super) fn body_start(d: &Def, prose: &[bool]) -> Option<usize> {
    let first = *d.body.first()?;
    Some(
        d.docstring(prose)
            .last()
            .copied()
            .unwrap_or(first.saturating_sub(1)),
    )
}

/// `text` with each ` + ` written ` - ` and the other way round.
fn signs_turned(text: &str) -> String {
    text.replace(" + ", " \u{0} ")
        .replace(" - ", " + ")
        .replace(" \u{0} ", " - ")
}

/// Whether the tokens `t` hold an operator of arithmetic outside brackets.
fn arithmetic_at_top(t: &[String]) -> bool {
    let mut depth = 0i32;
    t.iter().any(|w| {
        match w.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        depth == 0 && matches!(w.as_str(), "+" | "-" | "*" | "/" | "//" | "%")
    })
}

/// A write through a place parameter (`ledger[source][sku] = available - qty`, `balances[sender] -= amount`) in a
/// function with a partner parameter that indexes nothing, is not on that line, and is read only beside the first
/// (`if source == target:`), or not at all: the same write for the partner after it, its locals computed from the first
/// parameter computed afresh (`ledger[target][sku] = on_hand(ledger, target, sku) + qty`), the signs turned, then
/// as they were.
pub(in crate::locate_rank) fn counterparts_never_updated(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let mut params: Vec<&String> = d.params.iter().filter(|p| *p != "self").collect();
        params.sort();
        let mut given = 0;
        for (k, t) in toks.iter().enumerate() {
            let Some(op) = t
                .iter()
                .position(|w| matches!(w.as_str(), "=" | "+=" | "-="))
            else {
                continue;
            };
            let place = t.len() > 4 && is_name(&t[0]) && t[1] == "[" && t[3] == "]";
            if !place || !d.params.contains(&t[2]) || t[..op].iter().any(|w| w == "(") {
                continue;
            }
            let p = &t[2];
            let raw = lines[d.body[k]];
            let code = code_of(raw);
            let Some(at) = code
                .find(t[op].as_str())
                .filter(|_| code.len() <= raw.len())
            else {
                continue;
            };
            for q in params.iter().filter(|q| **q != p && **q != &t[0]) {
                let indexes = toks.iter().any(|u| {
                    u.windows(3)
                        .any(|w| w[0] == "[" && w[1] == **q && w[2] == "]")
                });
                let alone = toks
                    .iter()
                    .any(|u| u.contains(q) && !u.contains(p) || u.first() == Some(q));
                if indexes || alone || t.contains(q) || given >= MAX_MIRRORED {
                    continue;
                }
                let lhs = renamed(&raw[..at], p, q);
                let mut rhs = raw[at + t[op].len()..].to_string();
                // A local the function computes from the first parameter, computed for the partner.
                for (j, u) in toks[..k].iter().enumerate() {
                    let local = u.len() > 2 && is_name(&u[0]) && u[1] == "=" && u[2..].contains(p);
                    if !local || d.params.contains(&u[0]) || !t[op + 1..].contains(&u[0]) {
                        continue;
                    }
                    let line = lines[d.body[j]].trim();
                    let Some(value) = line.split_once('=').map(|(_, v)| v.trim()) else {
                        continue;
                    };
                    let value = renamed(value, p, q);
                    let value = if arithmetic_at_top(&u[2..]) {
                        format!("({value})")
                    } else {
                        value
                    };
                    rhs = renamed(&rhs, &u[0], &value);
                }
                let rhs = renamed(&rhs, p, q);
                let turned = match t[op].as_str() {
                    "+=" => format!("{}-={rhs}", lhs),
                    "-=" => format!("{}+={rhs}", lhs),
                    _ => format!("{lhs}={}", signs_turned(&rhs)),
                };
                let plain = format!("{lhs}{}{rhs}", t[op]);
                for line in [turned, plain] {
                    if !out.contains(&(d.body[k], line.clone())) {
                        out.push((d.body[k], line));
                    }
                }
                given += 1;
            }
        }
    }
    out
}

/// `line` with each name of `pairs` written as its partner, all at once (`a` to `b` and `b` to `a`).
fn swapped(line: &str, pairs: &[(String, String)]) -> String {
    let mut out = line.to_string();
    // Each name first to a character no code holds (a private-use one), then to its partner.
    let marks: Vec<char> = (0..pairs.len())
        .filter_map(|i| char::from_u32(0xE000 + i as u32))
        .collect();
    for ((from, _), m) in pairs.iter().zip(&marks) {
        out = renamed(&out, from, &m.to_string());
    }
    for ((_, to), m) in pairs.iter().zip(&marks) {
        out = out.replace(*m, to);
    }
    out
}

/// The names that stand for `a` and `b` in the function's names `names`, each with its partner both ways: the two
/// themselves, and each name made of `a` among other words (`home_goals`) whose twin made of `b` (`away_goals`) is
/// one of them too.
fn partner_names(a: &str, b: &str, names: &HashSet<&str>) -> Vec<(String, String)> {
    let mut pairs = vec![
        (a.to_string(), b.to_string()),
        (b.to_string(), a.to_string()),
    ];
    for n in names {
        let words: Vec<&str> = n.split('_').collect();
        if words.len() < 2 || !words.contains(&a) {
            continue;
        }
        let twin: Vec<&str> = words.iter().map(|w| if *w == a { b } else { w }).collect();
        let twin = twin.join("_");
        if names.contains(twin.as_str()) {
            pairs.push((n.to_string(), twin.clone()));
            pairs.push((twin, n.to_string()));
        }
    }
    pairs
}

/// Two parameters a function treats alike (`table[home]["gf"] += home_goals` beside `table[away]["gf"] +=
/// away_goals`) and a block that writes for one of them only (`table[home]["points"] += POINTS_DRAW` alone under
/// `else:`) where no other block makes the partner's write: that write after it, each name of the pair written as
/// its partner.
pub(in crate::locate_rank) fn partner_writes_left_out(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let names: HashSet<&str> = toks
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|w| is_name(w))
            .collect();
        let own: Vec<&str> = d.body.iter().map(|&b| lines[b].trim()).collect();
        // A write: an assignment whose target holds a name of the pair.
        let writes = |k: usize, pairs: &[(String, String)]| {
            let t = &toks[k];
            let op = t
                .iter()
                .position(|w| matches!(w.as_str(), "=" | "+=" | "-=" | "*=" | "/="));
            op.is_some_and(|op| {
                op > 0
                    && is_name(&t[0])
                    && t[..op].iter().any(|w| pairs.iter().any(|(n, _)| n == w))
            })
        };
        let mut params: Vec<&String> = d.params.iter().filter(|p| *p != "self").collect();
        params.sort();
        let mut given = 0;
        // The writes whose partner's write the function holds, with the names of `pairs` turned.
        let alike = |pairs: &[(String, String)]| {
            (0..own.len())
                .filter(|&k| {
                    let m = swapped(own[k], pairs);
                    writes(k, pairs) && m != own[k] && own.contains(&m.as_str())
                })
                .count()
        };
        for (i, a) in params.iter().enumerate() {
            for b in &params[i + 1..] {
                let mut pairs = partner_names(a, b, &names);
                let mut best = alike(&pairs);
                if best == 0 {
                    continue;
                }
                // Two more parameters that turn with them (`hg` and `ag` beside `home` and `away`), where that
                // makes more writes alike.
                for (j, c) in params.iter().enumerate() {
                    for e in &params[j + 1..] {
                        if [a, b].contains(&c) || [a, b].contains(&e) {
                            continue;
                        }
                        let mut more = pairs.clone();
                        more.extend(partner_names(c, e, &names));
                        let n = alike(&more);
                        if n > best {
                            (pairs, best) = (more, n);
                        }
                    }
                }
                for k in (0..own.len()).filter(|&k| writes(k, &pairs)) {
                    let m = swapped(own[k], &pairs);
                    // Its partner's write anywhere in the function (another branch makes it) is no omission.
                    if m == own[k] || own.contains(&m.as_str()) || given >= MAX_MIRRORED {
                        continue;
                    }
                    out.push((d.body[k], format!("{}{m}", indent_of(lines[d.body[k]]))));
                    given += 1;
                }
            }
        }
    }
    out
}

/// Whether the file's function `name` of one parameter keeps only some of its items: it returns a comprehension
/// over that parameter with a filter (`return [a for a in attempts if a["minutes"] is not None]`).
fn filtering(lines: &[&str], defs: &[Def], name: &str) -> bool {
    defs.iter()
        .filter(|g| g.name == name && g.params.len() == 1)
        .any(|g| {
            let Some(&last) = g.body.last() else {
                return false;
            };
            let t = tokens(&code_of(lines[last]));
            let over = t
                .windows(2)
                .any(|w| w[0] == "in" && g.params.contains(&w[1]));
            t.len() > 2
                && t[0] == "return"
                && t[1] == "["
                && t.contains(&"for".to_string())
                && t.contains(&"if".to_string())
                && over
        })
}

/// A parameter the file's functions bring to one form first (`address = normalize_address(address)`,
/// `name = name.strip().lower()`, or a call of a normalising function on it, `normalize_address(address) in
/// members`; or of a function that keeps only some of its items, `done = completed(attempts)`) and one function of
/// the same parameter reads as it came: the same line first in that function.
pub(in crate::locate_rank) fn parameters_never_normalised(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    // (parameter, the value it is given, the function that gives it).
    let mut forms: Vec<(String, String, &str)> = Vec::new();
    // A normaliser's own steps are its business, not its callers'.
    for f in defs
        .iter()
        .filter(|f| !super::forgotten::normalising(&f.name))
    {
        for &b in &f.body {
            let t = tokens(&code_of(lines[b]));
            let own = t.len() > 3 && f.params.contains(&t[0]) && t[1] == "=";
            if own && t[2..].contains(&t[0]) && t[2..].iter().any(|w| w == "(") {
                let value = lines[b].trim().split_once('=').map(|(_, v)| v.trim());
                if let Some(v) = value {
                    forms.push((t[0].clone(), v.to_string(), &f.name));
                }
                continue;
            }
            for w in t.windows(4) {
                let normaliser = defs.iter().any(|g| g.name == w[0] && g.params.len() == 1)
                    && (super::forgotten::normalising(&w[0]) || filtering(lines, defs, &w[0]));
                if normaliser && w[1] == "(" && w[3] == ")" && f.params.contains(&w[2]) {
                    forms.push((w[2].clone(), format!("{}({})", w[0], w[2]), &f.name));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (p, value, giver) in &forms {
        let value_toks = tokens(&code_of(value));
        for g in defs
            .iter()
            .filter(|g| g.name != *giver && g.params.contains(p))
        {
            let toks = g.tokens(lines);
            let callee = value_toks.first().is_some_and(|c| *c == g.name);
            let assigned = toks
                .iter()
                .any(|u| u.first() == Some(p) && u.get(1).is_some_and(|o| o == "="));
            let given = toks.iter().any(|u| {
                u.windows(value_toks.len())
                    .any(|w| w == value_toks.as_slice())
            });
            let read = toks.iter().any(|u| u.contains(p));
            let Some(at) = body_start(g, &prose) else {
                continue;
            };
            let line = format!("{}{p} = {value}", g.indent);
            if callee || assigned || given || !read || out.contains(&(at, line.clone())) {
                continue;
            }
            out.push((at, line));
        }
    }
    out
}

/// The most branches one constant never read is tried in by [`sibling_constants_never_read`].
const MAX_BRANCHES: usize = 3;

/// A module constant never read (`POINTS_DRAW = 1`) that shares a word with one an update in a branch reads
/// (`row["points"] += POINTS_WIN` under `if scored > conceded:`): the same update with the constant never read, at
/// the end of each other block of that `if` chain that does not update the same target.
pub(in crate::locate_rank) fn sibling_constants_never_read(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let unread = unread_constants(lines);
    for d in defs {
        let toks = d.tokens(lines);
        for (k, t) in toks.iter().enumerate() {
            let Some(op) = t
                .iter()
                .position(|w| matches!(w.as_str(), "=" | "+=" | "-="))
            else {
                continue;
            };
            let depth = indent_of(lines[d.body[k]]).len();
            // The block's header: the nearest line above it that is less indented.
            let Some(h) = (0..k)
                .rev()
                .find(|&j| indent_of(lines[d.body[j]]).len() < depth)
            else {
                continue;
            };
            let head = indent_of(lines[d.body[h]]).len();
            if !matches!(
                toks[h].first().map(String::as_str),
                Some("if" | "elif" | "else")
            ) {
                continue;
            }
            // The chain's headers: `if`, `elif` and `else` lines at the header's depth, around it.
            let at_head = |j: &usize| indent_of(lines[d.body[*j]]).len() == head;
            let first = (0..=h)
                .rev()
                .filter(at_head)
                .find(|&j| toks[j].first().is_some_and(|w| w == "if"))
                .unwrap_or(h);
            let mut chain = vec![first];
            for j in first + 1..toks.len() {
                let here = indent_of(lines[d.body[j]]).len();
                let word = toks[j].first().map(String::as_str);
                if here < head || (here == head && !matches!(word, Some("elif" | "else"))) {
                    break;
                }
                if here == head {
                    chain.push(j);
                }
            }
            // The target as written (a key's text is blanked in the tokens).
            let own = lines[d.body[k]].trim();
            let Some(target) = own.find(&format!(" {} ", t[op])).map(|at| &own[..at]) else {
                continue;
            };
            for (_, u, _) in &unread {
                let words: Vec<&str> = u.split('_').filter(|w| w.len() > 1).collect();
                let sibling = t[op + 1..].iter().find(|w| {
                    w.split('_').any(|x| words.contains(&x))
                        && w.chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                });
                let Some(sibling) = sibling else { continue };
                let line = renamed(own, sibling, u);
                let mut given = 0;
                for &c in chain.iter().filter(|&&c| c != h) {
                    let block = block_below(lines, &d.body[c + 1..], head);
                    let (Some(&b0), Some(&end)) = (block.first(), block.last()) else {
                        continue;
                    };
                    let updates = block.iter().any(|&b| {
                        let rest = lines[b].trim().strip_prefix(target);
                        rest.is_some_and(|r| r.trim_start().starts_with(t[op].as_str()))
                    });
                    if updates || given == MAX_BRANCHES {
                        continue;
                    }
                    out.push((end, format!("{}{line}", indent_of(lines[b0]))));
                    given += 1;
                }
            }
        }
    }
    out
}

/// The last words of a constant's name that say it is an amount (`FITTING_FEE`), left out of the label it is listed
/// under (`"fitting"`).
const AMOUNT_WORDS: &[&str] = &["FEE", "PRICE", "CHARGE", "COST", "SURCHARGE", "AMOUNT"];

/// A module number constant never read (`FITTING_FEE = 120.00`) in a file whose function lists labelled amounts in
/// a list it returns (`items.append((extra, EXTRA_PRICES[extra]))`, then `return items`): the constant listed too,
/// labelled by its name's other words (`items.append(("fitting", FITTING_FEE))`), just before that `return`.
pub(in crate::locate_rank) fn amounts_never_listed(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let numbers: Vec<String> = unread_constants(lines)
        .into_iter()
        .filter(|(_, _, v)| v.starts_with(|c: char| c.is_ascii_digit()))
        .map(|(_, name, _)| name)
        .collect();
    let mut out = Vec::new();
    if numbers.is_empty() {
        return out;
    }
    for d in defs {
        let toks = d.tokens(lines);
        // `NAME.append((A, B))`: a pair appended to a local list.
        let listed = toks.iter().find_map(|t| {
            let pair = t.len() > 6
                && t[1] == "."
                && t[2] == "append"
                && t[3] == "("
                && t[4] == "("
                && t.iter().filter(|w| *w == ",").count() == 1
                && t.ends_with(&[")".to_string(), ")".to_string()]);
            pair.then(|| t[0].clone())
        });
        let Some(list) = listed else { continue };
        let Some(k) = toks
            .iter()
            .position(|t| t.len() == 2 && t[0] == "return" && t[1] == list)
        else {
            continue;
        };
        let (Some(&before), Some(&ret)) =
            (k.checked_sub(1).and_then(|j| d.body.get(j)), d.body.get(k))
        else {
            continue;
        };
        for name in &numbers {
            let words: Vec<&str> = name.split('_').collect();
            let kept = match words.split_last() {
                Some((last, rest)) if AMOUNT_WORDS.contains(last) && !rest.is_empty() => rest,
                _ => &words[..],
            };
            let label = kept.join(" ").to_ascii_lowercase();
            let indent = indent_of(lines[ret]);
            out.push((
                before,
                format!("{indent}{list}.append((\"{label}\", {name}))"),
            ));
        }
    }
    out
}

/// The methods that take an item out of a collection and put it in, each with its opposite.
const OPPOSITE_METHODS: &[(&str, &str)] = &[
    ("remove", "append"),
    ("append", "remove"),
    ("discard", "add"),
    ("add", "discard"),
];

/// A line `base[...].method(...)` of one of [`OPPOSITE_METHODS`]: its base name and method.
fn collection_call(code: &str) -> Option<(&str, &str)> {
    let open = code.find('[')?;
    let base = &code[..open];
    OPPOSITE_METHODS.iter().find_map(|&(m, _)| {
        let at = code.find(&format!("].{m}("))?;
        (is_name(base) && at > open && code.ends_with(')')).then_some((base, m))
    })
}

/// A count a function keeps beside a collection of the same dict parameter (`cls["students"].remove(student)` and
/// `cls["spaces"] += 1`), where another function makes the opposite call on its own dict parameter
/// (`cls["students"].append(student)`) and never changes that count: the opposite update just after that call
/// (`cls["spaces"] -= 1`).
pub(in crate::locate_rank) fn opposite_updates_left_out(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    // The line with its strings kept (a key's text matters here), a trailing comment dropped.
    let code: Vec<&str> = lines
        .iter()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .collect();
    let mut out = Vec::new();
    for g in defs {
        for &b in &g.body {
            let line = code[b];
            let Some((base, method)) = collection_call(line) else {
                continue;
            };
            // The count `g` keeps beside it: `base[...] += n` or `-= n`.
            let counts = g.body.iter().filter_map(|&c| {
                let l = code[c];
                let (lhs, op, n) = [" += ", " -= "].iter().find_map(|op| {
                    l.split_once(op)
                        .map(|(a, n)| (a.to_string(), *op, n.to_string()))
                })?;
                let key = lhs.strip_prefix(base)?.to_string();
                (key.starts_with('[') && key.ends_with(']')).then_some((key, op, n))
            });
            let counts: Vec<(String, &str, String)> = counts.collect();
            let opposite = OPPOSITE_METHODS
                .iter()
                .find(|(m, _)| *m == method)
                .map(|(_, o)| *o);
            for f in defs.iter().filter(|f| !std::ptr::eq(*f, g)) {
                for &a in &f.body {
                    let there = code[a];
                    let Some((other, _)) =
                        collection_call(there).filter(|(_, m)| Some(*m) == opposite)
                    else {
                        continue;
                    };
                    for (key, op, n) in &counts {
                        let place = format!("{other}{key}");
                        let kept = f.body.iter().any(|&c| {
                            let l = code[c];
                            l.starts_with(&place) && (l.contains(" += ") || l.contains(" -= "))
                        });
                        if !kept && f.params.contains(other) {
                            let turned = if *op == " += " { "-=" } else { "+=" };
                            out.push((a, format!("{}{place} {turned} {n}", indent_of(lines[a]))));
                        }
                    }
                }
            }
        }
    }
    out
}

/// A function that takes from one dict parameter's entry (`stock[flavour] -= scoops`) and never reads another dict
/// parameter (`sales`, only ever indexed or counted elsewhere in the file): the other half of the transfer just
/// after it, the entry started if missing (`sales[flavour] = sales.get(flavour, 0) + scoops`), then added to.
pub(in crate::locate_rank) fn transfers_left_half_done(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let unread: Vec<&String> = {
            let mut u: Vec<&String> = d
                .params
                .iter()
                .filter(|p| *p != "self" && !toks.iter().flatten().any(|w| w == *p))
                .collect();
            u.sort();
            u
        };
        for (k, t) in toks.iter().enumerate() {
            // `p [ key ] -= n`, one name a key and one a value.
            let [p, open, key, close, op, n] = t.as_slice() else {
                continue;
            };
            let taken = open == "[" && close == "]" && op == "-=" && d.params.contains(p);
            if !taken || !is_name(key) || !is_name(n) {
                continue;
            }
            let indent = indent_of(lines[d.body[k]]);
            for u in &unread {
                out.push((
                    d.body[k],
                    format!("{indent}{u}[{key}] = {u}.get({key}, 0) + {n}"),
                ));
                out.push((d.body[k], format!("{indent}{u}[{key}] += {n}")));
            }
        }
    }
    out
}

/// The attributes a method's lines write (`self.items[sku] = ...`, `self.items[sku] -= amount`, `self.total = ...`).
fn attributes_written(lines: &[&str], d: &Def) -> HashSet<String> {
    let mut out = HashSet::new();
    for &b in &d.body {
        let t = tokens(&code_of(lines[b]));
        let Some(op) = t
            .iter()
            .position(|w| matches!(w.as_str(), "=" | "+=" | "-=" | "*=" | "/="))
        else {
            continue;
        };
        if let [s, dot, name, ..] = &t[..op]
            && s == "self"
            && dot == "."
        {
            out.insert(name.clone());
        }
    }
    out
}

/// A check a method makes first (`self._check(sku, amount)`: a method that raises and returns nothing), handed that
/// method's parameters in order, and a sibling that writes an attribute the first writes too (`self.items[sku]`),
/// takes as many parameters and never makes the check: the check first in the sibling with its own parameters
/// (`self._check(sku, qty)`).
pub(in crate::locate_rank) fn checks_never_made(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let prose = prose_lines(&lines.join("\n"));
    // A method's parameters in order, without `self`.
    let own = |d: &Def| -> Vec<String> {
        let mut params = super::untouched::positional(&d.header(lines));
        params.retain(|p| p != "self");
        params
    };
    // The checks: methods whose body raises and never returns a value.
    let checks: Vec<&str> = defs
        .iter()
        .filter(|c| {
            let t = c.tokens(lines);
            let raises = t.iter().any(|u| u.first().is_some_and(|w| w == "raise"));
            let answers = t
                .iter()
                .any(|u| u.first().is_some_and(|w| w == "return") && u.len() > 1);
            raises && !answers && !own(c).is_empty()
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut out = Vec::new();
    for s in defs.iter().filter(|s| !checks.contains(&s.name.as_str())) {
        let Some(first) = s.body.iter().find(|&&b| prose.get(b) != Some(&true)) else {
            continue;
        };
        let t = tokens(&code_of(lines[*first]));
        let params = own(s);
        let [me, dot, check, open, args @ .., close] = t.as_slice() else {
            continue;
        };
        let handed: Vec<&String> = args.iter().step_by(2).collect();
        let commas = args.iter().skip(1).step_by(2).all(|w| w == ",");
        let made = me == "self" && dot == "." && open == "(" && close == ")" && commas;
        if !made || !checks.contains(&check.as_str()) || handed != params.iter().collect::<Vec<_>>()
        {
            continue;
        }
        let writes = attributes_written(lines, s);
        let call = format!("self.{check}(");
        for t in defs
            .iter()
            .filter(|t| t.name != s.name && t.name != "__init__" && t.name != *check)
        {
            let theirs = own(t);
            let calls = t.body.iter().any(|&b| code_of(lines[b]).contains(&call));
            let shared = attributes_written(lines, t)
                .iter()
                .any(|a| writes.contains(a));
            if theirs.len() != params.len() || calls || !shared {
                continue;
            }
            if let Some(at) = body_start(t, &prose) {
                out.push((
                    at,
                    format!("{}self.{check}({})", t.indent, theirs.join(", ")),
                ));
            }
        }
    }
    out
}

/// A collection an object keeps, changed by a key: (the attribute, whether it puts, the method, the key).
type KeptChange<'a> = (&'a str, bool, &'a str, &'a str);

/// What one line does to a collection an object keeps, by a parameter `key`: puts it in (`self.loans[tool] = ...`,
/// `self.available.add(tool)`, `.append(tool)`) or takes it out (`self.loans.pop(tool)`, `.remove(tool)`,
/// `.discard(tool)`, `del self.loans[tool]`), as (the attribute, whether it puts, the method, the key).
fn kept_change(code: &str) -> Option<KeptChange<'_>> {
    let code = code.trim();
    let code = code
        .split_once(" = ")
        .filter(|(l, _)| is_identifier(l))
        .map_or(code, |(_, r)| r);
    if let Some(rest) = code.strip_prefix("del self.") {
        let (attr, key) = rest.strip_suffix(']')?.split_once('[')?;
        return (is_identifier(attr) && is_identifier(key)).then_some((attr, false, "del", key));
    }
    let rest = code.strip_prefix("self.")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let (attr, after) = rest.split_at(end);
    if let Some(item) = after.strip_prefix('[') {
        let (key, value) = item.split_once(']')?;
        let puts = value.trim_start().strip_prefix("= ").is_some();
        return (puts && is_identifier(key)).then_some((attr, true, "set", key));
    }
    let (method, key) = after
        .strip_prefix('.')?
        .strip_suffix(')')?
        .split_once('(')?;
    let puts = match method {
        "add" | "append" => true,
        "remove" | "discard" | "pop" => false,
        _ => return None,
    };
    is_identifier(key).then_some((attr, puts, method, key))
}

/// Two methods that each change two collections an object keeps by a parameter, one the mirror of the other: one
/// takes a tool off the loans and puts it on the shelf (`self.loans.pop(tool)`, `self.available.add(tool)`), the
/// other puts it on the loans (`self.loans[tool] = member`) and never takes it off the shelf: the mirror of the
/// shelf's change just after, by its own parameter (`self.available.remove(tool)`). Only where the mirror is sure:
/// an `add` or an `append` taken back by `remove`, an item set taken back by `del`, a `remove` or `discard` put
/// back by `add` on a set `__init__` starts and `append` on a list. The second collection may hold what the first
/// keeps under the key (`self.free.discard(bike)` beside `self.riders[rider] = bike`): the mirror then takes the
/// name the other method takes it out under (`bike = self.riders.pop(rider)`, `self.free.add(bike)`).
pub(in crate::locate_rank) fn kept_pairs_left_half_done(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
    let changes = |d: &Def| -> Vec<(usize, KeptChange<'_>)> {
        d.body
            .iter()
            .filter_map(|&b| {
                kept_change(&code[b])
                    .filter(|c| d.params.contains(c.3) || d.bound.contains(c.3))
                    .map(|c| (b, c))
            })
            .collect()
    };
    let started = |attr: &str| {
        let at = format!("self.{attr} = ");
        code.iter()
            .find_map(|c| c.trim().strip_prefix(at.as_str()).map(str::to_string))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for other in defs.iter().filter(|d| d.name != "__init__") {
        let theirs = changes(other);
        for d in defs
            .iter()
            .filter(|d| d.name != "__init__" && d.name != other.name)
        {
            let ours = changes(d);
            for &(b, (attr, puts, _, key)) in &ours {
                // The other method changes the same collection the other way, and a second one we never touch.
                let Some((_, first)) = theirs.iter().find(|(_, t)| t.0 == attr && t.1 != puts)
                else {
                    continue;
                };
                // What our line takes out under a name (`bike = self.riders.pop(rider)`).
                let taken = code[b].trim().split_once(" = ").map(|(l, _)| l);
                for (_, (second, their_put, method, their_key)) in &theirs {
                    if *second == attr || ours.iter().any(|(_, o)| o.0 == *second) {
                        continue;
                    }
                    // The second kept by the same key, or by the value the first keeps under it (`self.free` of
                    // bikes beside `self.riders[rider] = bike`), taken out here under the same name.
                    let key = match their_key {
                        k if *k == first.3 && d.params.contains(key) => key,
                        k if taken == Some(*k) => *k,
                        _ => continue,
                    };
                    let start = started(second);
                    let mirror = match (*their_put, *method) {
                        (true, "add" | "append") => format!("self.{second}.remove({key})"),
                        (true, "set") => format!("del self.{second}[{key}]"),
                        (false, "remove" | "discard") if start.starts_with("set(") => {
                            format!("self.{second}.add({key})")
                        }
                        (false, "remove" | "discard") if start.starts_with('[') => {
                            format!("self.{second}.append({key})")
                        }
                        _ => continue,
                    };
                    out.push((b, format!("{}{mirror}", indent_of(lines[b]))));
                }
            }
        }
    }
    out
}

/// Words that name the opposite of one another in a method's name: one puts in what the other takes back.
const OPPOSITE_WORDS: &[(&str, &str)] = &[
    ("out", "in"),
    ("on", "off"),
    ("open", "close"),
    ("start", "stop"),
    ("borrow", "return"),
    ("lend", "return"),
    ("hire", "return"),
    ("rent", "return"),
    ("take", "return"),
    ("book", "cancel"),
    ("reserve", "cancel"),
    ("add", "remove"),
    ("arrive", "leave"),
    ("arrive", "depart"),
    ("join", "leave"),
    ("seat", "leave"),
    ("enter", "exit"),
    ("enter", "leave"),
    ("park", "leave"),
    ("admit", "discharge"),
    ("lock", "unlock"),
];

/// Whether two method names are the same but for one word and its opposite (`sign_out` and `sign_in`,
/// `book_bike` and `cancel_bike`).
fn opposite_names(a: &str, b: &str) -> bool {
    let (x, y): (Vec<&str>, Vec<&str>) = (a.split('_').collect(), b.split('_').collect());
    if x.len() != y.len() {
        return false;
    }
    let differ: Vec<(&str, &str)> = x
        .iter()
        .zip(&y)
        .filter(|(p, q)| p != q)
        .map(|(p, q)| (*p, *q))
        .collect();
    matches!(differ.as_slice(), [(p, q)] if OPPOSITE_WORDS.iter().any(|&(u, v)| (u, v) == (*p, *q) || (v, u) == (*p, *q)))
}

/// A method that puts an item into a collection the object keeps by a parameter (`self.out[key] = person`,
/// `self.seated.add(table)`) and a method named as its opposite (`sign_in` for `sign_out`) that takes the same
/// parameter and never changes that collection: the item taken back out (`del self.out[key]`, `self.out.pop(key,
/// None)`, `.discard`, `.remove`), after the first guard of its body that only leaves, and at its end (before a
/// closing `return`).
pub(in crate::locate_rank) fn opposites_never_undone(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
    let mut out = Vec::new();
    for a in defs {
        for b in defs.iter().filter(|b| opposite_names(&a.name, &b.name)) {
            let (Some(&first), Some(&last)) = (b.body.first(), b.body.last()) else {
                continue;
            };
            for &l in &a.body {
                let Some((attr, true, method, key)) = kept_change(&code[l]) else {
                    continue;
                };
                // Any removal from the collection, in any form (`self.out.pop(key, None)`, `return self.out.pop(key)`).
                let removals =
                    ["pop(", "discard(", "remove(", "clear("].map(|m| format!("self.{attr}.{m}"));
                let touched = b.body.iter().any(|&m| {
                    removals.iter().any(|r| code[m].contains(r.as_str()))
                        || code[m].contains(&format!("del self.{attr}["))
                });
                if !a.params.contains(key) || !b.params.contains(key) || touched {
                    continue;
                }
                let undo: &[String] = &match method {
                    "set" => [
                        format!("del self.{attr}[{key}]"),
                        format!("self.{attr}.pop({key}, None)"),
                    ],
                    "add" => [
                        format!("self.{attr}.discard({key})"),
                        format!("self.{attr}.remove({key})"),
                    ],
                    _ => [format!("self.{attr}.remove({key})"), String::new()],
                };
                // After the first `if` at the body's depth that only leaves (`if person is None: raise ...`), not
                // before an `elif` or `else` of it; and at the end, before a closing `return`.
                let depth = indent_of(lines[first]).len();
                let word = |m: usize| first_word(lines[m]);
                let guard = b
                    .body
                    .iter()
                    .position(|&m| indent_of(lines[m]).len() == depth && word(m) == "if");
                let after_guard = guard.and_then(|g| {
                    let block = block_below(lines, &b.body[g + 1..], depth);
                    let next = b.body.get(g + 1 + block.len()).map(|&n| word(n));
                    let chained = next.is_some_and(|w| w == "elif" || w == "else");
                    block
                        .last()
                        .copied()
                        .filter(|&e| !chained && matches!(word(e).as_str(), "raise" | "return"))
                });
                let end = match b.body.len() {
                    n if n >= 2 && word(last) == "return" => b.body[n - 2],
                    _ => last,
                };
                for at in after_guard.into_iter().chain([end]) {
                    let pad = indent_of(lines[first]);
                    for u in undo.iter().filter(|u| !u.is_empty()) {
                        out.push((at, format!("{pad}{u}")));
                    }
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
    fn a_check_one_method_makes_first_is_made_first_in_a_sibling_writing_the_same_attribute() {
        let text = "class Cellar:\n    def __init__(self):\n        self.bottles = {}\n\n    def _ensure(self, wine, n):\n        if n > self.bottles.get(wine, 0):\n            raise ValueError(wine)\n\n    def pour(self, wine, glasses):\n        \"\"\"Serve from an open bottle.\"\"\"\n        self.bottles[wine] -= glasses\n\n    def set_aside(self, wine, count):\n        self._ensure(wine, count)\n        self.bottles[wine] -= count\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(10, "        self._ensure(wine, glasses)".into())),
            "{got:?}"
        );
        // Made already, or a sibling that writes nothing the checked method writes: nothing.
        let made = text.replace(
            "\"\"\"Serve from an open bottle.\"\"\"\n",
            "\"\"\"Serve.\"\"\"\n        self._ensure(wine, glasses)\n",
        );
        assert!(
            !lines_of(&made)
                .iter()
                .any(|(_, l)| l.contains("self._ensure(wine, glasses)"))
        );
        let apart = text.replace(
            "        self.bottles[wine] -= glasses",
            "        self.poured = glasses",
        );
        assert!(!offers(&apart, "self._ensure(wine, glasses)"));
    }

    #[test]
    fn a_comment_at_the_depth_of_an_if_chain_ends_the_chain_without_a_panic() {
        let text = "FIXING_FEE = 85.0\nVAT_RATE = 0.2\n\n\ndef quote_total(net, on_site=False, discount=0.0):\n    if on_site:\n        net += FIXING_FEE\n    # any discount is agreed before VAT\n    net += discount\n    return round(net * (1 + VAT_RATE), 2)\n";
        // No line of the chain's `if` is a counterpart to add; the point is that reading the chain ends.
        assert!(!offers(text, "net += VAT_RATE"));
    }

    #[test]
    fn a_transfer_from_one_dict_parameter_is_made_to_the_one_never_read() {
        let text = "def sell(stock, sales, flavour, scoops):\n    if stock.get(flavour, 0) < scoops:\n        return False\n    stock[flavour] -= scoops\n    return True\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(
                4,
                "    sales[flavour] = sales.get(flavour, 0) + scoops".into()
            )),
            "{got:?}"
        );
        // Read already: nothing.
        let read = text.replace(
            "    return True",
            "    sales[flavour] = scoops\n    return True",
        );
        assert!(!offers(&read, "sales.get(flavour, 0)"));
    }

    #[test]
    fn a_count_kept_beside_a_collection_is_kept_by_the_opposite_call_too() {
        let text = "def book(cls, student):\n    if cls[\"spaces\"] <= 0:\n        return False\n    cls[\"students\"].append(student)\n    return True\n\n\ndef cancel(cls, student):\n    cls[\"students\"].remove(student)\n    cls[\"spaces\"] += 1\n    return True\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(4, "    cls[\"spaces\"] -= 1".into())),
            "{got:?}"
        );
        // Kept already: nothing.
        let kept = text.replace(
            "    return True\n\n",
            "    cls[\"spaces\"] -= 1\n    return True\n\n",
        );
        assert!(
            !lines_of(&kept).iter().any(|(_, l)| l.contains("spaces")),
            "{:?}",
            lines_of(&kept)
        );
    }

    #[test]
    fn a_block_that_writes_for_one_of_two_parameters_treated_alike_gets_the_partner_s_write() {
        let text = "def result(t, home, away, hg, ag):\n    t[home][\"for\"] += hg\n    t[away][\"for\"] += ag\n    if hg > ag:\n        t[home][\"pts\"] += WIN\n    elif ag > hg:\n        t[away][\"pts\"] += WIN\n    else:\n        t[home][\"pts\"] += DRAW\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(9, "        t[away][\"pts\"] += DRAW".into())),
            "{got:?}"
        );
        // A block that already holds the partner's write gets nothing.
        assert!(!got.iter().any(|(at, _)| *at == 2 || *at == 3), "{got:?}");
        // Names made of a parameter's name turn with it: `home_goals` to `away_goals`, and back.
        let text = "def f(t, home, away, home_goals, away_goals):\n    t[home] += home_goals - away_goals\n    t[away] += away_goals - home_goals\n    if home_goals == away_goals:\n        t[home] += 1\n";
        let got = lines_of(text);
        assert!(got.contains(&(5, "        t[away] += 1".into())), "{got:?}");
        // Two parameters never written alike: no partner.
        let text = "def f(t, home, away):\n    t[home] += 1\n    t[away] -= 1\n    if home:\n        t[home] += 2\n";
        let got = lines_of(text);
        assert!(
            !got.iter().any(|(_, l)| l.contains("t[away] += 2")),
            "{got:?}"
        );
    }

    #[test]
    fn a_write_through_one_place_parameter_is_mirrored_for_its_partner() {
        let text = "def move(seats, origin, dest, n):\n    \"\"\"Move n seats.\"\"\"\n    if origin == dest:\n        return\n    free = count(seats, origin)\n    seats[origin] = free - n\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "    seats[dest] = count(seats, dest) + n".into())),
            "{got:?}"
        );
        assert!(got.contains(&(6, "    seats[dest] = count(seats, dest) - n".into())));
        // `n` is read without `origin`: no partner of it, and no write indexes by it.
        assert!(!got.iter().any(|(_, l)| l.contains("seats[n]")), "{got:?}");
        // An augmented write is turned round.
        let text = "def pay(balances, sender, receiver, amount):\n    balances[sender] -= amount\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(2, "    balances[receiver] += amount".into())),
            "{got:?}"
        );
        // Not when the partner is written already.
        let both = "def pay(balances, sender, receiver, amount):\n    balances[sender] -= amount\n    balances[receiver] += amount\n";
        assert!(
            !offers(both, "balances[receiver] -="),
            "{:?}",
            lines_of(both)
        );
        assert!(!lines_of(both).iter().any(|(at, _)| *at == 2));
    }

    #[test]
    fn a_parameter_another_function_filters_first_is_filtered_first() {
        let text = "def completed(attempts):\n    return [a for a in attempts if a[\"minutes\"] is not None]\n\n\ndef average(attempts):\n    \"\"\"Mean time over finished attempts.\"\"\"\n    return sum(a[\"minutes\"] for a in attempts) / len(attempts)\n\n\ndef fastest(attempts):\n    done = completed(attempts)\n    return min(done, key=lambda a: a[\"minutes\"])\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "    attempts = completed(attempts)".into())),
            "{got:?}"
        );
        // A function that keeps every item is no filter.
        let all = text.replace(" if a[\"minutes\"] is not None]", "]");
        assert!(!offers(&all, "attempts = completed(attempts)"));
    }

    #[test]
    fn a_parameter_the_other_functions_normalise_is_normalised_first() {
        let text = "def clean_tag(tag):\n    return tag.strip().lower()\n\n\ndef add(tags, tag):\n    \"\"\"Add a tag.\"\"\"\n    tag = clean_tag(tag)\n    tags.add(tag)\n\n\ndef has(tags, tag):\n    return clean_tag(tag) in tags\n\n\ndef remove(tags, tag):\n    \"\"\"Remove a tag; True if it was there.\"\"\"\n    if tag not in tags:\n        return False\n    tags.discard(tag)\n    return True\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(16, "    tag = clean_tag(tag)".into())),
            "{got:?}"
        );
        // Not for the functions that normalise it already, nor for the normaliser itself.
        assert!(
            !got.iter().any(|(at, _)| *at == 6 || *at == 11 || *at == 1),
            "{got:?}"
        );
        // A form written with methods is copied too.
        let text = "def add(names, name):\n    name = name.strip().lower()\n    names.add(name)\n\n\ndef drop(names, name):\n    names.discard(name)\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(6, "    name = name.strip().lower()".into())),
            "{got:?}"
        );
    }

    #[test]
    fn an_amount_never_read_is_listed_before_the_list_of_labelled_amounts_is_returned() {
        let text = "LADDERS = {\"timber\": 210.0}\nEXTRAS = {\"rail\": 35.0}\nFITTING_FEE = 120.00\n\n\ndef items(ladder, extras=()):\n    out = [(ladder, LADDERS[ladder])]\n    for extra in extras:\n        out.append((extra, EXTRAS[extra]))\n    return out\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(9, "    out.append((\"fitting\", FITTING_FEE))".into())),
            "{got:?}"
        );
        // Read somewhere already, or a list of single items: nothing.
        let read = text.replace(
            "    return out",
            "    out.append((\"fit\", FITTING_FEE))\n    return out",
        );
        assert!(!offers(&read, "FITTING_FEE))"), "{:?}", lines_of(&read));
        let single = text.replace("out.append((extra, EXTRAS[extra]))", "out.append(extra)");
        assert!(!offers(&single, "FITTING_FEE"), "{:?}", lines_of(&single));
    }

    #[test]
    fn a_constant_never_read_makes_its_sibling_s_update_in_the_other_branches() {
        let text = "BONUS_GOLD = 50\nBONUS_SILVER = 20\n\n\ndef award(player, medal):\n    if medal == \"gold\":\n        player[\"medals\"] += 1\n        player[\"score\"] += BONUS_GOLD\n    elif medal == \"silver\":\n        player[\"medals\"] += 1\n    else:\n        player[\"entries\"] += 1\n";
        let got = lines_of(text);
        assert!(
            got.contains(&(10, "        player[\"score\"] += BONUS_SILVER".into())),
            "{got:?}"
        );
        assert!(got.contains(&(12, "        player[\"score\"] += BONUS_SILVER".into())));
        // Not in the branch that updates it already, nor once the constant is read.
        assert!(
            !got.iter()
                .any(|(at, l)| *at == 8 && l.contains("BONUS_SILVER"))
        );
        let read = text.replace(
            "player[\"medals\"] += 1\n    else",
            "player[\"score\"] += BONUS_SILVER\n    else",
        );
        assert!(!offers(&read, "+= BONUS_SILVER"), "{:?}", lines_of(&read));
    }

    #[test]
    fn a_method_that_mirrors_another_s_change_of_one_collection_mirrors_its_second_too() {
        let text = "class Library:\n    def __init__(self, tools):\n        self.available = set(tools)\n        self.loans = {}\n\n    def lend(self, tool, member):\n        if tool not in self.available:\n            raise ValueError(tool)\n        self.loans[tool] = member\n\n    def give_back(self, tool):\n        member = self.loans.pop(tool)\n        self.available.add(tool)\n        return member\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::kept_pairs_left_half_done(&lines, &super::Def::all(&lines));
        assert_eq!(
            got,
            [(8, "        self.available.remove(tool)".to_string())]
        );
        // Both halves made already: nothing.
        let whole = text.replace(
            "        self.loans[tool] = member\n",
            "        self.loans[tool] = member\n        self.available.discard(tool)\n",
        );
        let lines: Vec<&str> = whole.lines().collect();
        assert!(super::kept_pairs_left_half_done(&lines, &super::Def::all(&lines)).is_empty());
        // The second collection holds what the first keeps under the key: the mirror takes the name it comes out as.
        let bikes = "class Spin:\n    def __init__(self):\n        self.free = set(range(1, 4))\n        self.riders = {}\n\n    def book(self, rider):\n        bike = min(self.free)\n        self.free.discard(bike)\n        self.riders[rider] = bike\n\n    def cancel(self, rider):\n        bike = self.riders.pop(rider)\n        return bike\n";
        let lines: Vec<&str> = bikes.lines().collect();
        let got = super::kept_pairs_left_half_done(&lines, &super::Def::all(&lines));
        assert_eq!(got, [(11, "        self.free.add(bike)".to_string())]);
        // Taken out under another name than the second is kept by: nothing.
        let other = bikes.replace(
            "        bike = self.riders.pop(rider)\n        return bike",
            "        b = self.riders.pop(rider)\n        return b",
        );
        let lines: Vec<&str> = other.lines().collect();
        assert!(super::kept_pairs_left_half_done(&lines, &super::Def::all(&lines)).is_empty());
    }

    #[test]
    fn a_method_named_as_another_s_opposite_takes_back_what_the_other_puts_in() {
        let text = "class KeyLog:\n    def __init__(self):\n        self.out = {}\n\n    def sign_out(self, key, person):\n        self.out[key] = person\n\n    def sign_in(self, key):\n        person = self.out.get(key)\n        if person is None:\n            raise ValueError(key)\n        self.log(key)\n";
        let lines: Vec<&str> = text.lines().collect();
        let got = super::opposites_never_undone(&lines, &super::Def::all(&lines));
        assert_eq!(
            got,
            [
                (10, "        del self.out[key]".to_string()),
                (10, "        self.out.pop(key, None)".to_string()),
                (11, "        del self.out[key]".to_string()),
                (11, "        self.out.pop(key, None)".to_string()),
            ]
        );
        assert!(
            super::opposite_names("check_in", "check_out")
                && super::opposite_names("book", "cancel")
        );
        assert!(
            !super::opposite_names("sign_in", "sign_up")
                && !super::opposite_names("in_out", "out_in")
        );
        // A guard with an `else` takes nothing between its blocks; a closing `return` keeps its place last.
        let chained = text.replace(
            "        self.log(key)",
            "        else:\n            self.log(key)\n        return person",
        );
        let lines: Vec<&str> = chained.lines().collect();
        let got = super::opposites_never_undone(&lines, &super::Def::all(&lines));
        assert_eq!(
            got,
            [
                (12, "        del self.out[key]".to_string()),
                (12, "        self.out.pop(key, None)".to_string()),
            ]
        );
        // Taken back already, or a method whose name is no opposite: nothing.
        for other in [
            text.replace("        self.log(key)", "        self.out.pop(key)"),
            text.replace(
                "        self.log(key)",
                "        return self.out.pop(key, None)",
            ),
            text.replace("sign_in", "sign_up"),
        ] {
            let lines: Vec<&str> = other.lines().collect();
            assert!(super::opposites_never_undone(&lines, &super::Def::all(&lines)).is_empty());
        }
    }
}
