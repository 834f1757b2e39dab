//! Insertions for a value a function is handed or tests for and never stores: a parameter it never reads, written
//! into the item its loop finds (`t["last"] = when`), a parameter named for a record's field that nothing writes
//! (`hire["returned"] = returned_on`), a list under a dict's key that it tests for membership and
//! that no line ever adds to (`member["awards"].append(name)`), and a key it reads and no line keeps
//! (`state["last"] = candidate`), and an amount a guard checks a parameter against and no line takes it from
//! (`stock[key] -= qty` after `if stock.get(key, 0) < qty: raise ...`), and a total a dict keeps beside the list of
//! its parts that a function appends a part to and never adds to (`account["paid"] += amount`), and the other half
//! of an exchange between two keys of one dict (`stock["empty"][size] += 1` after `stock["full"][size] -= 1`), and
//! a share worked out from a kept amount and never taken from it (`b["tubs"] -= take` after `take = min(...)`),
//! and a remainder worked out from a kept amount and a parameter and never kept (`self.balance[name] = remaining`
//! after `remaining = self.balance[name] - amount`), a number an object hands out and never steps, a threshold a
//! claim never spends, the part of an object's state a reset leaves out, and the latest of something an object keeps
//! that the method recording it never keeps, and what a method takes whole and never starts again
//! (`self.litres = 0` before `return taken`), and a kept list walked in order and never sorted (`self.slots.sort()`
//! after its append), and an amount handed back from a kept place and never kept (`self.levels[item] = on_hand -
//! qty` before `return on_hand - qty`), and an entry another method steps started again where a method reads it
//! (`self.days_since[name] = 0`), and a count of units a method guards as run out and never lowers
//! (`self.remaining -= 1`), or an entry of a dict of counts it guards likewise (`self.passes[name] -= 1`). Pure:
//! lines in, lines out.

use super::super::{is_name, tokens};
use super::{
    Def, block_below, code_of, code_with_strings, ends_flow, first_word, indent_of, reads,
};

/// The most fields one parameter never read is written into.
const MAX_FIELDS: usize = 4;

/// A plain string key of a subscript in a line's raw text (`item["last"]`, `['last']`): the name subscripted,
/// the key without its quotes and the quote, for each subscript in order.
pub(super) fn subscripts(line: &str) -> Vec<(String, String, char)> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices('[') {
        let rest = &line[at + 1..];
        let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(len) = rest[1..].find(q) else {
            continue;
        };
        let key = &rest[1..1 + len];
        if !rest[1 + len + 1..].starts_with(']') || !is_name(key) {
            continue;
        }
        let before = &line[..at];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &before[start..];
        if is_name(name) {
            out.push((name.to_string(), key.to_string(), q));
        }
    }
    out
}

/// The fields the file reads of its records, in order, each once: the keys its subscripts hold (`t["last"]`,
/// written with their quotes) and the attributes it reads and never calls (`booking.days`), `self`'s left out.
fn fields(lines: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |f: String| {
        if !out.contains(&f) {
            out.push(f);
        }
    };
    for line in lines {
        for (_, key, q) in subscripts(line) {
            push(format!("[{q}{key}{q}]"));
        }
        let t = tokens(&code_of(line));
        for w in t.windows(4) {
            let plain = is_name(&w[0]) && w[0] != "self" && !w[0].starts_with(char::is_uppercase);
            if plain && w[1] == "." && is_name(&w[2]) && w[3] != "(" && w[3] != "=" {
                push(format!(".{}", w[2]));
            }
        }
    }
    out
}

/// A parameter a function never reads (`when` of `repot(trees, name, when)`): written into a field the file reads
/// of its records (`t["last"] = when`), on the item its loop walks, before each `return` inside the loop (the item
/// found), else at the end of the loop's body; the fields this function does not read itself first, at most
/// [`MAX_FIELDS`].
pub(in crate::locate_rank) fn parameters_never_stored(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let all = fields(lines);
    let mut out = Vec::new();
    for d in defs {
        let toks = d.tokens(lines);
        let mut unread: Vec<&String> = d
            .params
            .iter()
            .filter(|p| *p != "self" && !p.starts_with('_') && !toks.iter().any(|u| reads(u, p)))
            .collect();
        unread.sort();
        if unread.is_empty() {
            continue;
        }
        let own: Vec<String> = fields(&d.body.iter().map(|&b| lines[b]).collect::<Vec<_>>());
        let mut order: Vec<&String> = all.iter().filter(|f| !own.contains(f)).collect();
        order.extend(all.iter().filter(|f| own.contains(f)));
        for lp in d.loops(lines, &toks, &["for"]) {
            let t = &toks[lp.at];
            let [_, item, within, ..] = t.as_slice() else {
                continue;
            };
            if !is_name(item) || within != "in" {
                continue;
            }
            // Before each `return` of the loop's body, else at its end.
            let mut places: Vec<(usize, &str)> = Vec::new();
            for (i, &b) in lp.block.iter().enumerate() {
                if first_word(lines[b]) == "return" && i > 0 {
                    places.push((lp.block[i - 1], indent_of(lines[b])));
                }
            }
            if places.is_empty() {
                places.push((lp.end, indent_of(lines[lp.first])));
            }
            for p in &unread {
                for (at, pad) in &places {
                    for f in order.iter().take(MAX_FIELDS) {
                        out.push((*at, format!("{pad}{item}{f} = {p}")));
                    }
                }
            }
        }
    }
    out
}

/// A list or a set a dict literal starts under a key (`"awards": []`) that a function tests for membership
/// (`if name in member["awards"] or ...:`) and no line of the file ever adds to: the item added
/// (`member["awards"].append(name)`), right after the test's block where that block leaves (the item is new),
/// then before the function's last `return`; where the test is negated (`if name not in member["awards"]:`), at
/// the end of its block.
pub(in crate::locate_rank) fn keyed_members_never_added(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &b) in d.body.iter().enumerate() {
            let line = lines[b];
            if first_word(line) != "if" {
                continue;
            }
            for (dict, key, q) in subscripts(line) {
                let subscript = format!("{dict}[{q}{key}{q}]");
                let Some(at) = line.find(&subscript) else {
                    continue;
                };
                let Some((item, negated)) = member_before(&line[..at]) else {
                    continue;
                };
                let Some(add) = started_empty(lines, &key, q) else {
                    continue;
                };
                if ever_added(lines, &key, q) {
                    continue;
                }
                let update = format!("{subscript}.{add}({item})");
                let block = block_below(lines, &d.body[k + 1..], indent_of(line).len());
                let Some(&end) = block.last() else { continue };
                if negated {
                    let pad = indent_of(lines[block[0]]);
                    out.push((end, format!("{pad}{update}")));
                    continue;
                }
                let pad = indent_of(line);
                if block.iter().any(|&i| ends_flow(lines[i])) {
                    out.push((end, format!("{pad}{update}")));
                }
                let last = d.last;
                let returns = first_word(lines[last]) == "return" && indent_of(lines[last]) == pad;
                if last > end
                    && returns
                    && let Some(&before) = d.body.iter().rev().nth(1)
                {
                    out.push((before, format!("{pad}{update}")));
                }
            }
        }
    }
    out
}

/// The item a membership test ending in `text` names (`if name in `, `x not in `), and whether it is negated.
fn member_before(text: &str) -> Option<(String, bool)> {
    let t = tokens(text);
    let [.., item, last] = t.as_slice() else {
        return None;
    };
    if last != "in" {
        return None;
    }
    if item == "not" {
        let [.., item, _, _] = t.as_slice() else {
            return None;
        };
        return is_name(item).then(|| (item.clone(), true));
    }
    is_name(item).then(|| (item.clone(), false))
}

/// How a dict literal of the file starts the key `key` (in quote `q`): `"append"` for `[]` or `list()`, `"add"`
/// for `set()`; `None` where none starts it empty.
fn started_empty(lines: &[&str], key: &str, q: char) -> Option<&'static str> {
    let mapped = format!("{q}{key}{q}:");
    lines.iter().find_map(|l| {
        let at = l.find(&mapped)?;
        let value = l[at + mapped.len()..].trim_start();
        if value.starts_with("[]") || value.starts_with("list()") {
            Some("append")
        } else if value.starts_with("set()") {
            Some("add")
        } else {
            None
        }
    })
}

/// Whether a line of the file adds to, sets or extends what a dict holds under `key`.
fn ever_added(lines: &[&str], key: &str, q: char) -> bool {
    let adds = [
        ".append(", ".add(", ".extend(", ".update(", ".insert(", "+=", "|=",
    ];
    super::forgotten::key_written(lines, key, q, &adds)
}

/// The most keys one function is given by [`keys_never_kept`].
const MAX_KEPT: usize = 2;

/// Whether a dict literal of the file starts the key `key` (in quote `q`) at a plain value: `None`, a number or an
/// empty text (`{"last": None}`): a state kept under it, not a collection.
fn starts_plain(lines: &[&str], key: &str, q: char) -> bool {
    let head = format!("{q}{key}{q}:");
    lines.iter().any(|l| {
        l.match_indices(&head).any(|(at, h)| {
            let v = l[at + h.len()..].trim_start();
            let end = v.find([',', '}']).unwrap_or(v.len());
            let v = v[..end].trim();
            v == "None" || v == "\"\"" || v == "''" || v.parse::<f64>().is_ok()
        })
    })
}

/// A key a function reads off its dict parameter (`state["last"]`), started plain in a literal (`"last": None`)
/// and that no line of the file ever writes, and a block of that function that writes another key of the same
/// dict from one name (`state["history"].append(candidate)`, `state["count"] = n`): that name written under the
/// key first in the block (`state["last"] = candidate`), the state a choice forgets to keep. At most
/// [`MAX_KEPT`] a function.
pub(in crate::locate_rank) fn keys_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let mut read: Vec<(String, String, char)> = Vec::new();
        for &b in &d.body {
            for sub in subscripts(lines[b]) {
                let kept = super::forgotten::key_written(lines, &sub.1, sub.2, &["+=", "-="]);
                if d.params.contains(&sub.0)
                    && !kept
                    && starts_plain(lines, &sub.1, sub.2)
                    && !read.contains(&sub)
                {
                    read.push(sub);
                }
            }
        }
        let mut given = 0;
        for (k, &b) in d.body.iter().enumerate() {
            let line = lines[b].trim();
            let Some((dict, other, q)) = subscripts(line).into_iter().next() else {
                continue;
            };
            let head = format!("{dict}[{q}{other}{q}]");
            let Some(rest) = line.strip_prefix(&head) else {
                continue;
            };
            let value = [" = ", " += ", ".append(", ".add("]
                .iter()
                .find_map(|op| rest.strip_prefix(op))
                .map(|v| v.trim_end_matches(')').trim());
            let Some(value) = value.filter(|v| is_name(v)) else {
                continue;
            };
            // The block's header: the nearest line above, less indented.
            let depth = indent_of(lines[b]).len();
            let Some(&header) = d.body[..k]
                .iter()
                .rev()
                .find(|&&h| indent_of(lines[h]).len() < depth)
            else {
                continue;
            };
            if !code_of(lines[header]).trim_end().ends_with(':') {
                continue;
            }
            for (_, key, kq) in read
                .iter()
                .filter(|(n, key, _)| *n == dict && *key != other)
            {
                if given < MAX_KEPT {
                    given += 1;
                    out.push((
                        header,
                        format!("{}{dict}[{kq}{key}{kq}] = {value}", indent_of(lines[b])),
                    ));
                }
            }
        }
    }
    out
}

/// A key the file reads off its records (`h["returned"] is None`), started plain in a literal (`"returned": None`)
/// and that no line ever writes, and a function taking such a record and a parameter named by one of the key's
/// words (`check_in(hire, returned_on)`): the parameter written under the key (`hire["returned"] = returned_on`)
/// before the function's closing `return`, else at its end. At most [`MAX_KEPT`] a function.
pub(in crate::locate_rank) fn fields_never_marked(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut keys: Vec<(String, char)> = Vec::new();
    for line in lines {
        for (_, key, q) in subscripts(line) {
            let fresh = !keys.iter().any(|(k, _)| *k == key);
            if fresh
                && starts_plain(lines, &key, q)
                && !super::forgotten::key_written(lines, &key, q, &["+=", "-="])
            {
                keys.push((key, q));
            }
        }
    }
    let mut out = Vec::new();
    for d in defs {
        let Some(&last) = d.body.last() else { continue };
        let records: Vec<String> = d
            .body
            .iter()
            .flat_map(|&b| subscripts(lines[b]))
            .map(|(dict, _, _)| dict)
            .filter(|dict| d.params.contains(dict))
            .collect();
        let Some(record) = records.first() else {
            continue;
        };
        let closing = tokens(&code_of(lines[last]))
            .first()
            .is_some_and(|w| w == "return")
            && indent_of(lines[last]) == d.indent;
        let at = if closing {
            d.body.iter().rev().nth(1).copied()
        } else {
            Some(last)
        };
        let Some(at) = at else { continue };
        let mut given = 0;
        for (key, q) in &keys {
            let words: Vec<&str> = key.split('_').filter(|w| w.len() > 2).collect();
            let mut params: Vec<&String> = d.params.iter().collect();
            params.sort();
            for p in params {
                let named = p != record && p.split('_').any(|w| words.contains(&w));
                if named && given < MAX_KEPT {
                    given += 1;
                    out.push((at, format!("{}{record}[{q}{key}{q}] = {p}", d.indent)));
                }
            }
        }
    }
    out
}

/// Where a comparison `<`, `<=`, `>` or `>=` splits a condition at its top level (outside brackets and strings):
/// the two sides, when there is exactly one.
fn compared(cond: &str) -> Option<(&str, &str)> {
    let b = cond.as_bytes();
    let (mut depth, mut quote, mut found) = (0i32, None, None);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'<' | b'>' if depth == 0 => {
                    let next = b.get(i + 1).copied();
                    if next == Some(c) || (i > 0 && (b[i - 1] == b'-' || b[i - 1] == c)) {
                        return None;
                    }
                    if found.is_some() {
                        return None;
                    }
                    let len = if next == Some(b'=') { 2 } else { 1 };
                    found = Some((i, len));
                    i += len;
                    continue;
                }
                _ => {}
            },
        }
        i += 1;
    }
    let (at, len) = found?;
    Some((cond[..at].trim(), cond[at + len..].trim()))
}

/// A place a value is kept in (`stock[key]`, `self.balance`, `card["credit"]`), as it is written to: a read with a
/// default (`stock.get(key, 0)`) as its subscript; a plain name is no place.
fn kept_place(side: &str) -> Option<String> {
    let head_end = side
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(side.len());
    let head = &side[..head_end];
    let rest = &side[head_end..];
    if head.is_empty() || head.starts_with('.') || head.ends_with('.') || !is_name(&head[..1]) {
        return None;
    }
    if let Some(args) = rest.strip_prefix('(') {
        let dict = head.strip_suffix(".get")?;
        let args = args.strip_suffix(')')?;
        let (key, _default) = args.rsplit_once(',')?;
        return (!dict.is_empty() && !key.contains(',')).then(|| format!("{dict}[{}]", key.trim()));
    }
    if rest.is_empty() {
        return head.contains('.').then(|| head.to_string());
    }
    (rest.starts_with('[') && rest.ends_with(']') && !rest[1..].contains('['))
        .then(|| side.to_string())
}

/// A guard that refuses (`raise` or `return` closing its block) when a kept amount is short of a parameter
/// (`if stock.get(key, 0) < qty:`, `if amount > self.balance:`), or over a limit once the parameter is added
/// (`if self.booked + seats > CAPACITY:`), where the function never writes the place: the withdrawal (`stock[key] -= qty`) or the addition (`self.booked += seats`) right
/// after the guard's block.
pub(in crate::locate_rank) fn withdrawals_never_taken(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for (k, &b) in d.body.iter().enumerate() {
            let Some(cond) = code_with_strings(lines[b])
                .trim()
                .strip_prefix("if ")
                .and_then(|c| c.strip_suffix(':'))
            else {
                continue;
            };
            let Some((left, right)) = compared(cond) else {
                continue;
            };
            let block = block_below(lines, &d.body[k + 1..], indent_of(lines[b]).len());
            let Some(&end) = block.last().filter(|&&e| ends_flow(lines[e])) else {
                continue;
            };
            // A parameter, not a limit named like a constant (`LIMIT`).
            let param =
                |s: &str| d.params.contains(s) && s != "self" && !s.starts_with(char::is_uppercase);
            let update = [(left, right), (right, left)]
                .iter()
                .find_map(|&(a, other)| {
                    if param(a) {
                        return kept_place(other).map(|place| (place, a, "-="));
                    }
                    let (x, y) = a.split_once(" + ")?;
                    let (place, p) = if param(y) { (x, y) } else { (y, x) };
                    (param(p) && !p.contains(' ')).then_some(())?;
                    kept_place(place.trim()).map(|place| (place, p, "+="))
                });
            let Some((place, p, op)) = update else {
                continue;
            };
            if !written(lines, d, &place) {
                out.push((end, format!("{}{place} {op} {p}", indent_of(lines[b]))));
            }
        }
    }
    out
}

/// A share worked out as the smaller of a kept amount and a name (`take = min(b["tubs"], tubs)`) where the function
/// never writes the kept place: the share taken from it right after (`b["tubs"] -= take`); the stock side of a
/// withdrawal whose request side (`tubs -= take`) is there.
pub(in crate::locate_rank) fn shares_never_taken(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    defs.iter()
        .flat_map(|d| d.body.iter().filter_map(move |&b| share_taken(lines, d, b)))
        .collect()
}

/// [`shares_never_taken`] of one line `b` of the function `d`.
fn share_taken(lines: &[&str], d: &Def, b: usize) -> Option<(usize, String)> {
    let code = code_with_strings(lines[b]);
    let (share, call) = code.trim().split_once(" = ")?;
    let args = call.strip_prefix("min(")?.strip_suffix(')')?;
    let (x, y) = args.split_once(", ").filter(|(_, y)| !y.contains(','))?;
    let (x, y) = (x.trim(), y.trim());
    let place = match (kept_place(x), kept_place(y)) {
        (Some(p), None) if is_name(y) => p,
        (None, Some(p)) if is_name(x) => p,
        _ => return None,
    };
    (is_name(share) && !written(lines, d, &place))
        .then(|| (b, format!("{}{place} -= {share}", indent_of(lines[b]))))
}

/// A new amount worked out from a kept one and a parameter or a whole number (`remaining =
/// round(self.balance[name] - amount, 2)`, `left = stock[key] - qty`, `count = self.credits.get(name, 0) + 1`) where the function never writes the kept place and the file writes it elsewhere (it
/// is state, not a figure): the amount kept right after (`self.balance[name] = remaining`).
pub(in crate::locate_rank) fn remainders_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for &b in &d.body {
            let code = code_with_strings(lines[b]);
            let Some((name, value)) = code.trim().split_once(" = ") else {
                continue;
            };
            if !is_name(name) {
                continue;
            }
            let Some(place) = amount_changed(value, d) else {
                continue;
            };
            if written_elsewhere(lines, d, &place) && !written(lines, d, &place) {
                out.push((b, format!("{}{place} = {name}", indent_of(lines[b]))));
            }
        }
    }
    out
}

/// Whether a line outside `d` writes the kept place's base (`self.balance` of `self.balance[name]`): the place is
/// state the file keeps, not a figure.
fn written_elsewhere(lines: &[&str], d: &Def, place: &str) -> bool {
    let base = place.split('[').next().unwrap_or(place);
    lines.iter().enumerate().any(|(i, l)| {
        !d.body.contains(&i) && {
            let c = code_with_strings(l);
            let c = c.trim_start();
            c.starts_with(base) && c.contains(" = ") && !c.starts_with(&format!("{base} =="))
        }
    })
}

/// A new amount a function hands back as `return on_hand - qty`, where `on_hand` is a local read out of a kept
/// place (`on_hand = self.levels.get(item, 0)`) that the function never writes and the file writes elsewhere: the
/// amount kept just before the `return` (`self.levels[item] = on_hand - qty`).
pub(in crate::locate_rank) fn returned_amounts_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        let [.., before, last] = d.body[..] else {
            continue;
        };
        let code = code_with_strings(lines[last]);
        let Some(value) = code.trim().strip_prefix("return ") else {
            continue;
        };
        let Some((local, _)) = value.split_once(' ') else {
            continue;
        };
        if !is_name(local) {
            continue;
        }
        let bound = d.body.iter().find_map(|&b| {
            let c = code_with_strings(lines[b]);
            let (name, read) = c.trim().split_once(" = ")?;
            (name == local).then(|| kept_place(read.trim())).flatten()
        });
        let Some(place) = bound else {
            continue;
        };
        let changed = amount_changed(&value.replacen(local, &place, 1), d);
        if changed.as_ref() == Some(&place)
            && written_elsewhere(lines, d, &place)
            && !written(lines, d, &place)
        {
            out.push((
                before,
                format!("{}{place} = {value}", indent_of(lines[last])),
            ));
        }
    }
    out
}

/// The kept place (`self.balance[name]`, `stock[key]`, `self.credit`) that `value` adds a parameter of `d` or a
/// whole number to or takes one from (`self.balance[name] - amount`, inside a `round(...)` or not,
/// `self.credits.get(name, 0) + 1`), when there is one such place.
fn amount_changed(value: &str, d: &Def) -> Option<String> {
    let mut found = None;
    for op in [" - ", " + "] {
        for (at, _) in value.match_indices(op) {
            let after = &value[at + op.len()..];
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let p = &after[..end];
            let number = !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
            if !(number || d.params.contains(p)) || p == "self" {
                continue;
            }
            let before = &value[..at];
            let mut depth = 0;
            let start = before
                .char_indices()
                .rev()
                .find(|&(_, c)| {
                    match c {
                        ']' | ')' => depth += 1,
                        '[' | '(' if depth > 0 => depth -= 1,
                        _ if depth > 0 => {}
                        _ => return !(c.is_alphanumeric() || c == '_' || c == '.'),
                    }
                    false
                })
                .map_or(0, |(i, c)| i + c.len_utf8());
            let Some(place) = kept_place(&before[start..]) else {
                continue;
            };
            if found.as_ref().is_some_and(|f| *f != place) {
                return None;
            }
            found = Some(place);
        }
    }
    found
}

/// Whether a line of the function assigns to, adds to or takes from `place`.
fn written(lines: &[&str], d: &Def, place: &str) -> bool {
    d.body.iter().any(|&i| {
        let t = code_with_strings(lines[i]);
        t.trim_start()
            .strip_prefix(place)
            .is_some_and(|r| [" = ", " -= ", " += "].iter().any(|o| r.starts_with(o)))
    })
}

/// A function that takes from an entry under one key of a dict (`stock["full"][size] -= 1`) where the file reads
/// another key of that dict (`stock["empty"]`) and no line writes under it: the same amount given to the other
/// key's entry right after, started if missing (`stock["empty"][size] = stock["empty"].get(size, 0) + 1`), then
/// added to; the other half of an exchange.
pub(in crate::locate_rank) fn exchanges_left_half_done(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for d in defs {
        for &b in &d.body {
            let code = code_with_strings(lines[b]).trim();
            let Some((target, amount)) = code.split_once(" -= ") else {
                continue;
            };
            let Some((dict, key, q)) = subscripts(target).into_iter().next() else {
                continue;
            };
            let head = format!("{dict}[{q}{key}{q}]");
            let Some(entry) = target.strip_prefix(&head) else {
                continue;
            };
            let inner = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']'));
            if entry.is_empty()
                || inner.is_none_or(|i| !is_name(i))
                || !is_name(amount) && amount.parse::<f64>().is_err()
            {
                continue;
            }
            let inner = inner.unwrap_or_default();
            let mut others: Vec<String> = Vec::new();
            for line in lines {
                for (n, other, oq) in subscripts(code_with_strings(line)) {
                    if n == dict && oq == q && other != key && !others.contains(&other) {
                        others.push(other);
                    }
                }
            }
            for other in others {
                let place = format!("{dict}[{q}{other}{q}]");
                let written = lines.iter().any(|l| {
                    let c = code_with_strings(l);
                    c.match_indices(&place).any(|(at, _)| {
                        let after = &c[at + place.len()..];
                        let after = after
                            .strip_prefix('[')
                            .and_then(|a| a.find(']').map(|e| &a[e + 1..]))
                            .unwrap_or(after)
                            .trim_start();
                        (after.starts_with('=') && !after.starts_with("=="))
                            || ["+=", "-=", ".append(", ".add(", ".update(", ".setdefault("]
                                .iter()
                                .any(|o| after.starts_with(o))
                    })
                });
                if written {
                    continue;
                }
                let pad = indent_of(lines[b]);
                out.push((
                    b,
                    format!("{pad}{place}[{inner}] = {place}.get({inner}, 0) + {amount}"),
                ));
                out.push((b, format!("{pad}{place}[{inner}] += {amount}")));
            }
        }
    }
    out
}

/// The entries of the dict literals of `lines` (0-based line, key, quote, value as written), each a quoted word
/// key followed by `:` and a value up to the next top-level `,` or `}` of its line.
fn literal_entries<'l>(lines: &[&'l str]) -> Vec<(usize, String, char, &'l str)> {
    let mut out = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let line = code_with_strings(line);
        for (at, q) in line.match_indices(['"', '\'']) {
            let q = q.chars().next().unwrap_or('"');
            let rest = &line[at + 1..];
            let Some(len) = rest.find(q) else { continue };
            let key = &rest[..len];
            let Some(value) = rest[len + 1..].trim_start().strip_prefix(':') else {
                continue;
            };
            let open = line[..at].trim_end();
            if !is_name(key) || !(open.is_empty() || open.ends_with('{') || open.ends_with(',')) {
                continue;
            }
            let mut depth = 0i32;
            let end = value
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' | '[' | '{' => depth += 1,
                        ')' | ']' | '}' => depth -= 1,
                        _ => {}
                    }
                    depth < 0 || (depth == 0 && c == ',')
                })
                .map_or(value.len(), |(i, _)| i);
            out.push((n, key.to_string(), q, value[..end].trim()));
        }
    }
    out
}

/// A number a dict literal keeps beside the list of its parts (`"paid": deposit, "payments": [deposit]`, or `0`
/// beside `[]`), within three lines, that some line reads: where a function appends to the list
/// (`account["payments"].append(amount)`) and writes the number nowhere, the number added to right after
/// (`account["paid"] += amount`).
pub(in crate::locate_rank) fn totals_beside_parts(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let entries = literal_entries(lines);
    let mut pairs: Vec<(String, String, char)> = Vec::new();
    for (n, list, q, value) in &entries {
        let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
            continue;
        };
        let inner = inner.trim();
        for (m, total, _, start) in &entries {
            let near = n.abs_diff(*m) <= 3 && total != list;
            let zero = inner.is_empty() && start.parse::<f64>().is_ok_and(|v| v == 0.0);
            let same = !inner.is_empty() && is_name(inner) && start == &inner;
            if near && (zero || same) && !pairs.iter().any(|p| p.0 == *total && p.1 == *list) {
                pairs.push((total.clone(), list.clone(), *q));
            }
        }
    }
    let mut out = Vec::new();
    for (total, list, q) in pairs {
        let read = format!("[{q}{total}{q}]");
        if !lines.iter().any(|l| code_with_strings(l).contains(&read)) {
            continue;
        }
        for d in defs {
            let writes = d.body.iter().any(|&b| {
                let c = code_with_strings(lines[b]);
                c.match_indices(&read).any(|(at, _)| {
                    let after = c[at + read.len()..].trim_start();
                    ["=", "+=", "-="]
                        .iter()
                        .any(|o| after.starts_with(o) && !after.starts_with("=="))
                })
            });
            if writes {
                continue;
            }
            for &b in &d.body {
                let c = code_with_strings(lines[b]).trim();
                let Some((obj, rest)) = c.split_once(&format!("[{q}{list}{q}].append(")) else {
                    continue;
                };
                let Some(v) = rest.strip_suffix(')') else {
                    continue;
                };
                if is_name(obj) && !v.contains('(') {
                    out.push((b, format!("{}{obj}{read} += {v}", indent_of(lines[b]))));
                }
            }
        }
    }
    out
}

/// Whether a line of `defs` other than `__init__` sets or changes the attribute `self.{name}` (`self.next = ...`,
/// `self.stamps -= ...`).
fn attribute_changed<'d>(
    lines: &[&str],
    defs: impl IntoIterator<Item = &'d Def>,
    name: &str,
) -> bool {
    defs.into_iter().filter(|d| d.name != "__init__").any(|d| {
        d.body.iter().any(|&b| {
            let t = tokens(&code_of(lines[b]));
            t.windows(4).any(|w| {
                let op = matches!(w[3].as_str(), "=" | "+=" | "-=" | "*=" | "/=" | "//=");
                w[0] == "self" && w[1] == "." && w[2] == name && op
            })
        })
    })
}

/// A number an object hands out (`self.next_ticket = first_ticket` in `__init__`, from a parameter or a number)
/// that a method reads into a local (`ticket = self.next_ticket`) and no line outside `__init__` ever changes:
/// stepped by one just after that read (`self.next_ticket += 1`), so each call gets the next.
pub(in crate::locate_rank) fn numbers_never_handed_on(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for &b in &init.body {
            let t = tokens(&code_of(lines[b]));
            let [s, dot, name, eq, value] = t.as_slice() else {
                continue;
            };
            let number = value.bytes().all(|c| c.is_ascii_digit()) || init.params.contains(value);
            let set = s == "self" && dot == "." && eq == "=" && value != "self";
            if !set || !number || attribute_changed(lines, defs, name) {
                continue;
            }
            for d in defs.iter().filter(|d| d.name != "__init__") {
                for &k in &d.body {
                    let t = tokens(&code_of(lines[k]));
                    if let [local, eq, s, dot, n] = t.as_slice()
                        && is_name(local)
                        && eq == "="
                        && s == "self"
                        && dot == "."
                        && n == name
                    {
                        out.push((k, format!("{}self.{name} += 1", indent_of(lines[k]))));
                    }
                }
            }
        }
    }
    out
}

/// A threshold a guard asks a predicate method about (`if not self.can_claim(): raise ...`, where `can_claim`
/// returns `self.stamps >= STAMPS_FOR_FREE`), in a method that never changes `self.stamps`: the threshold taken
/// off right after the guard's block (`self.stamps -= STAMPS_FOR_FREE`), the claim spending what it needed.
pub(in crate::locate_rank) fn thresholds_never_spent(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    // Each predicate: its name, the attribute it tests and the threshold (a name or a number).
    let predicates: Vec<(&str, String, String)> = defs
        .iter()
        .filter_map(|p| {
            let t = tokens(&code_of(lines[*p.body.last()?]));
            match t.as_slice() {
                [r, s, dot, x, op, c]
                    if r == "return"
                        && s == "self"
                        && dot == "."
                        && matches!(op.as_str(), ">=" | ">") =>
                {
                    let plain = is_name(c) || c.bytes().all(|b| b.is_ascii_digit());
                    plain.then(|| (p.name.as_str(), x.clone(), c.clone()))
                }
                _ => None,
            }
        })
        .collect();
    let mut out = Vec::new();
    for d in defs {
        for (k, &b) in d.body.iter().enumerate() {
            let t = tokens(&code_of(lines[b]));
            let [i, not, s, dot, p, open, close, colon] = t.as_slice() else {
                continue;
            };
            let guard = i == "if" && not == "not" && s == "self" && dot == "." && open == "(";
            let Some((_, x, c)) = predicates.iter().find(|(n, _, _)| n == p) else {
                continue;
            };
            if !guard || close != ")" || colon != ":" || attribute_changed(lines, [d], x) {
                continue;
            }
            let block = block_below(lines, &d.body[k + 1..], indent_of(lines[b]).len());
            if block.last().is_some_and(|&e| ends_flow(lines[e])) {
                let end = *block.last().unwrap_or(&b);
                out.push((end, format!("{}self.{x} -= {c}", indent_of(lines[b]))));
            }
        }
    }
    out
}

/// A count of units an object holds that a method guards as run out (`if self.remaining <= 0: raise ...`, `< 1`,
/// `== 0`, `if not self.remaining:`) and then never lowers, where no method outside `__init__` lowers it: one unit
/// used (`self.remaining -= 1`) just before the method's closing `return` at its own depth (else at its end), and
/// right after the guard's block.
pub(in crate::locate_rank) fn units_never_used(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let lowered = |x: &str| {
        defs.iter().filter(|d| d.name != "__init__").any(|d| {
            d.body.iter().any(|&b| {
                let t = tokens(&code_of(lines[b]));
                t.windows(4)
                    .any(|w| w[0] == "self" && w[1] == "." && w[2] == x && w[3] == "-=")
            })
        })
    };
    let mut out = Vec::new();
    for d in defs.iter().filter(|d| d.name != "__init__") {
        for (k, &b) in d.body.iter().enumerate() {
            let t = tokens(&code_of(lines[b]));
            let x = match t.as_slice() {
                [i, s, dot, x, op, n, colon]
                    if i == "if"
                        && s == "self"
                        && dot == "."
                        && colon == ":"
                        && matches!(
                            (op.as_str(), n.as_str()),
                            ("<=", "0") | ("<", "1") | ("==", "0")
                        ) =>
                {
                    x
                }
                [i, not, s, dot, x, colon]
                    if i == "if" && not == "not" && s == "self" && dot == "." && colon == ":" =>
                {
                    x
                }
                _ => continue,
            };
            if !is_name(x) || attribute_changed(lines, [d], x) || lowered(x) {
                continue;
            }
            used_after_guard(lines, d, k, &format!("self.{x} -= 1"), &mut out);
        }
    }
    out
}

/// Where a unit is `used` (`self.remaining -= 1`) after the guard on the `k`th line of `d`'s body, when the
/// guard's block leaves: just before the method's closing `return` at its own depth (else at its end), and right
/// after the guard's block; each once in `out`.
fn used_after_guard(lines: &[&str], d: &Def, k: usize, used: &str, out: &mut Vec<(usize, String)>) {
    let b = d.body[k];
    let depth = indent_of(lines[b]).len();
    let block = block_below(lines, &d.body[k + 1..], depth);
    let Some(&end) = block.last().filter(|&&e| ends_flow(lines[e])) else {
        return;
    };
    let line = format!("{}{used}", indent_of(lines[b]));
    let own: Vec<usize> = d.body[k + 1..]
        .iter()
        .copied()
        .filter(|&c| indent_of(lines[c]).len() == depth)
        .collect();
    let closing = match own.last() {
        Some(&r) if code_of(lines[r]).trim_start().starts_with("return") => {
            d.body.iter().rev().find(|&&c| c < r).copied()
        }
        Some(_) => d.body.last().copied(),
        None => None,
    };
    for at in closing.into_iter().chain([end]) {
        if !out.contains(&(at, line.clone())) {
            out.push((at, line.clone()));
        }
    }
}

/// An entry of a dict of counts an object keeps (`self.passes[name]`) that a method guards as run out, alone or
/// among other conditions (`if self.is_full() or self.passes.get(name, 0) < 1: return False`, `self.passes[name]
/// <= 0`, `== 0`), where no method lowers an entry and another adds to one (`self.passes[name] += 1`): one unit
/// used (`self.passes[name] -= 1`) just before the method's closing `return` at its own depth (else at its end),
/// and right after the guard's block.
pub(in crate::locate_rank) fn entries_never_used(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    // Whether a method writes an entry of `self.x` with an operator that `lowers` (else raises) it.
    let written = |x: &str, lowers: bool| {
        let (step, sign) = if lowers { ("-=", "-") } else { ("+=", "+") };
        defs.iter().filter(|d| d.name != "__init__").any(|d| {
            d.body.iter().any(|&b| {
                let t = tokens(&code_of(lines[b]));
                let entry =
                    t.len() > 4 && t[0] == "self" && t[1] == "." && t[2] == x && t[3] == "[";
                let assigned = t.iter().position(|w| w == "=");
                entry
                    && (t.iter().any(|w| w == step)
                        || assigned.is_some_and(|a| t[a..].iter().any(|w| w == sign)))
            })
        })
    };
    let run_out = |op: &str, n: &str| matches!((op, n), ("<=", "0") | ("<", "1") | ("==", "0"));
    let mut out = Vec::new();
    for d in defs.iter().filter(|d| d.name != "__init__") {
        for (k, &b) in d.body.iter().enumerate() {
            let t = tokens(&code_of(lines[b]));
            if t.first().is_none_or(|w| w != "if") || t.last().is_none_or(|w| w != ":") {
                continue;
            }
            // `self.x.get(key, 0) < 1` or `self.x[key] <= 0`.
            let guarded = t.windows(12).find_map(|w| {
                let get = w[0] == "self" && w[1] == "." && w[3] == "." && w[4] == "get";
                let rest = w[5] == "(" && w[7] == "," && w[8] == "0" && w[9] == ")";
                (get && rest && run_out(&w[10], &w[11])).then(|| (w[2].clone(), w[6].clone()))
            });
            let guarded = guarded.or_else(|| {
                t.windows(8).find_map(|w| {
                    let entry = w[0] == "self" && w[1] == "." && w[3] == "[" && w[5] == "]";
                    (entry && run_out(&w[6], &w[7])).then(|| (w[2].clone(), w[4].clone()))
                })
            });
            let Some((x, key)) = guarded.filter(|(x, key)| is_name(x) && is_name(key)) else {
                continue;
            };
            if written(&x, true) || !written(&x, false) {
                continue;
            }
            used_after_guard(lines, d, k, &format!("self.{x}[{key}] -= 1"), &mut out);
        }
    }
    out
}

/// The attributes `__init__` sets (`self.NAME = VALUE` at its own depth), each with its line (0-based) and value,
/// in order.
fn init_sets<'l>(lines: &[&'l str], init: &Def) -> Vec<(usize, &'l str, &'l str)> {
    init.body
        .iter()
        .filter(|&&b| indent_of(lines[b]) == init.indent)
        .filter_map(|&b| {
            let (target, value) = lines[b].trim().split_once(" = ")?;
            let name = target.strip_prefix("self.").filter(|n| is_name(n))?;
            Some((b, name, value.trim()))
        })
        .collect()
}

/// A method that starts some of the object's state afresh as `__init__` started it (`self.issued_today = []`) and
/// leaves out another part that other methods change (`self.next_number = FIRST_TICKET`, then `+= 1` elsewhere):
/// that part's first value again, after the fresh start of the part `__init__` sets just before it (else before
/// the method's first fresh start); a method whose name says it starts afresh or closes a period (`new_canister`,
/// `reset`, `close_week`) the same, at its end when it starts nothing afresh as `__init__` did. A part started
/// empty (`self.this_week = []`) counts as changed where another method fills it (`self.this_week.append(name)`).
pub(in crate::locate_rank) fn resets_left_out(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        let sets = init_sets(lines, init);
        for m in defs
            .iter()
            .filter(|m| m.name != "__init__" && m.indent == init.indent)
        {
            // Where the method sets each attribute, and whether to its first value.
            let own: Vec<(usize, &str, bool)> = init_sets(lines, m)
                .into_iter()
                .map(|(b, n, v)| (b, n, sets.iter().any(|&(_, sn, sv)| sn == n && sv == v)))
                .collect();
            // Or one whose name says it starts afresh (`new_canister`, `reset`): at its end.
            let named = [
                "new_", "reset", "restart", "start_", "clear", "begin_", "close_", "end_", "finish",
            ]
            .iter()
            .any(|w| m.name.starts_with(w));
            let fresh = own
                .iter()
                .find(|(_, _, fresh)| *fresh)
                .map(|&(b, _, _)| b.saturating_sub(1));
            let Some(first) = fresh.or_else(|| m.body.last().copied().filter(|_| named)) else {
                continue;
            };
            for (i, &(_, name, value)) in sets.iter().enumerate() {
                let empty = matches!(value, "[]" | "{}" | "set()");
                let changed = defs.iter().filter(|o| o.name != m.name).any(|o| {
                    attribute_changed(lines, [o], name)
                        || (empty && attribute_filled(lines, o, name))
                });
                let literal = value.parse::<f64>().is_ok()
                    || empty
                    || (is_name(value) && value.bytes().all(|c| !c.is_ascii_lowercase()));
                if !changed || !literal || own.iter().any(|(_, n, _)| *n == name) {
                    continue;
                }
                // After the part set just before it, where the method sets that part.
                let before = sets[..i]
                    .iter()
                    .rev()
                    .find_map(|(_, p, _)| own.iter().find(|(_, n, _)| n == p).map(|&(b, _, _)| b));
                let at = before.unwrap_or(first);
                out.push((at, format!("{}self.{name} = {value}", m.indent)));
            }
        }
    }
    out
}

/// Whether a line of `d` fills the collection `self.{name}` (`self.{name}.append(`, `.add(`, `.extend(`,
/// `.update(`, `.insert(`, `.setdefault(`, or a write of an item: `self.{name}[key] = ...`).
fn attribute_filled(lines: &[&str], d: &Def, name: &str) -> bool {
    let attr = format!("self.{name}");
    d.body.iter().any(|&b| {
        let code = code_of(lines[b]);
        code.match_indices(&attr).any(|(at, _)| {
            let rest = &code[at + attr.len()..];
            let method = [
                "append(",
                "add(",
                "extend(",
                "update(",
                "insert(",
                "setdefault(",
            ]
            .iter()
            .any(|m| rest.strip_prefix('.').is_some_and(|r| r.starts_with(m)));
            let item = rest.starts_with('[')
                && rest
                    .split_once(']')
                    .is_some_and(|(_, after)| after.trim_start().starts_with("= "));
            method || item
        })
    })
}

/// Whether two names share a stem of at least five letters (`inspection` and `last_inspected`: `inspect`).
fn share_stem(a: &str, b: &str) -> bool {
    a.split('_').any(|x| {
        b.split('_').any(|y| {
            let common = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
            common >= 5
        })
    })
}

/// The most parameters one kept attribute is tried with by [`latest_never_kept`].
const MAX_LATEST: usize = 3;

/// An attribute `__init__` sets from the parameter of its name (`self.last_inspected = last_inspected`) that other
/// methods read and no method changes, and a method whose name shares its stem (`record_inspection`): each of that
/// method's parameters kept in it first in its body (`self.last_inspected = day`), at most [`MAX_LATEST`].
pub(in crate::locate_rank) fn latest_never_kept(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let prose = super::super::prose_lines(&lines.join("\n"));
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for (_, name, value) in init_sets(lines, init) {
            let attr = format!("self.{name}");
            let read = defs
                .iter()
                .filter(|o| o.name != "__init__")
                .any(|o| o.body.iter().any(|&b| code_of(lines[b]).contains(&attr)));
            if name != value
                || !init.params.contains(value)
                || !read
                || attribute_changed(lines, defs, name)
            {
                continue;
            }
            for m in defs
                .iter()
                .filter(|m| m.name != "__init__" && share_stem(&m.name, name))
            {
                let Some(at) = super::counterparts::body_start(m, &prose) else {
                    continue;
                };
                let params = super::untouched::positional(&m.header(lines));
                let params = params.iter().filter(|p| *p != "self");
                for p in params.take(MAX_LATEST) {
                    out.push((at, format!("{}{attr} = {p}", m.indent)));
                }
            }
        }
    }
    out
}

/// A method that takes the whole of an attribute into a local and hands it back (`taken = self.litres`, then
/// `return taken`) and never starts it again, where other methods add to it: what was taken stays behind to be
/// taken twice. The attribute's first value from `__init__` (`self.litres = 0`, a number, an empty collection or a
/// constant), just before the method's `return`.
pub(in crate::locate_rank) fn taken_never_reset(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        let sets = init_sets(lines, init);
        for m in defs
            .iter()
            .filter(|m| m.name != "__init__" && m.indent == init.indent)
        {
            let [.., before, last] = m.body[..] else {
                continue;
            };
            let Some(local) = lines[last]
                .trim()
                .strip_prefix("return ")
                .filter(|n| is_name(n))
            else {
                continue;
            };
            for &b in &m.body {
                let Some((target, value)) = lines[b].trim().split_once(" = ") else {
                    continue;
                };
                let Some(name) = value.trim().strip_prefix("self.").filter(|n| is_name(n)) else {
                    continue;
                };
                let Some(&(_, _, first)) = sets.iter().find(|(_, n, _)| *n == name) else {
                    continue;
                };
                let fresh = first.parse::<f64>().is_ok()
                    || matches!(first, "[]" | "{}" | "set()" | "\"\"")
                    || (is_name(first) && first.bytes().all(|c| !c.is_ascii_lowercase()));
                let others = defs.iter().filter(|o| o.name != m.name);
                if target != local
                    || !fresh
                    || !attribute_changed(lines, others, name)
                    || attribute_changed(lines, [m], name)
                {
                    continue;
                }
                out.push((before, format!("{}self.{name} = {first}", m.indent)));
            }
        }
    }
    out
}

/// A list an object keeps (`self.slots = []` in `__init__`) that a method appends to and another walks
/// (`for start, group in self.slots:`, `[g for _, g in self.slots]`) or reads an end of (`self.slots[0]`), where
/// no line ever sorts it: sorted just after the append (`self.slots.sort()`), so that it is walked in order.
pub(in crate::locate_rank) fn kept_lists_never_sorted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
    for init in defs.iter().filter(|d| d.name == "__init__") {
        for (_, name, value) in init_sets(lines, init) {
            let attr = format!("self.{name}");
            let sorted = code.iter().any(|c| {
                c.contains(&format!("{attr}.sort(")) || c.contains(&format!("sorted({attr}"))
            });
            let walked = code.iter().any(|c| {
                [":", "]", ")"]
                    .iter()
                    .any(|end| c.contains(&format!(" in {attr}{end}")))
                    || c.contains(&format!("{attr}[0]"))
                    || c.contains(&format!("{attr}[-1]"))
            });
            if value != "[]" || sorted || !walked {
                continue;
            }
            for d in defs.iter().filter(|d| d.name != "__init__") {
                for &b in &d.body {
                    if code[b].trim_start().starts_with(&format!("{attr}.append(")) {
                        out.push((b, format!("{}{attr}.sort()", indent_of(lines[b]))));
                    }
                }
            }
        }
    }
    out
}

/// An entry an object keeps by key that one method starts (`self.days_since[name] = 0` in `add`) and another steps
/// (`self.days_since[name] += 1`), read by a third method under its own parameter (`self.days_since[name]` in `fed`)
/// that never writes it and ends on a statement, not a `return`: started again at that method's end, as the first
/// method starts it (`self.days_since[name] = 0`).
pub(in crate::locate_rank) fn entries_never_restarted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let code: Vec<String> = lines.iter().map(|l| code_of(l)).collect();
    let mut out = Vec::new();
    for a in defs.iter().filter(|d| d.name != "__init__") {
        for &b in &a.body {
            let Some((place, value)) = code[b].trim().split_once(" = ") else {
                continue;
            };
            let Some((attr, key)) = place
                .strip_prefix("self.")
                .and_then(|p| p.strip_suffix(']'))
                .and_then(|p| p.split_once('['))
            else {
                continue;
            };
            let fresh = value.trim().parse::<f64>().is_ok() || value.trim() == "[]";
            if !fresh || !is_name(attr) || !a.params.contains(key) {
                continue;
            }
            let entry = format!("self.{attr}[");
            let stepped = defs.iter().filter(|d| d.name != a.name).any(|d| {
                d.body.iter().any(|&k| {
                    let c = code[k].trim();
                    c.starts_with(&entry) && (c.contains("] += ") || c.contains("] -= "))
                })
            });
            if !stepped {
                continue;
            }
            for m in defs
                .iter()
                .filter(|d| d.name != a.name && d.name != "__init__")
            {
                let Some(&last) = m.body.last() else {
                    continue;
                };
                let read = m.params.iter().find(|p| {
                    *p != "self"
                        && m.body
                            .iter()
                            .any(|&k| code[k].contains(&format!("{entry}{p}]")))
                });
                let writes = m.body.iter().any(|&k| code[k].trim().starts_with(&entry));
                let ends = code[last].trim();
                let returns = ends.starts_with("return") || ends.starts_with("raise");
                if let Some(p) = read.filter(|_| !writes && !returns) {
                    out.push((last, format!("{}{entry}{p}] = {}", m.indent, value.trim())));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Def, Kind};
    use super::*;

    fn run(kind: Kind, text: &str) -> Vec<(usize, String)> {
        let lines: Vec<&str> = text.lines().collect();
        kind(&lines, &Def::all(&lines))
    }

    #[test]
    fn a_record_s_plain_field_never_written_takes_the_parameter_named_for_it() {
        let text = "def new(wig):\n    return {\"wig\": wig, \"deposit\": 40.0, \"returned\": None}\n\n\ndef check_in(hire, returned_on, cleaning=False):\n    charges = fee(hire, returned_on)\n    if cleaning:\n        charges += 12\n    return hire[\"deposit\"] - charges\n\n\ndef on_loan(hires):\n    return [h[\"wig\"] for h in hires if h[\"returned\"] is None]\n";
        let got = run(fields_never_marked, text);
        assert_eq!(
            got,
            [(7, "    hire[\"returned\"] = returned_on".to_string())]
        );
        // Written somewhere already, or no parameter named for it: nothing.
        let written = text.replace(
            "    charges = fee",
            "    hire[\"returned\"] = returned_on\n    charges = fee",
        );
        assert!(run(fields_never_marked, &written).is_empty());
        let unnamed = text.replace("returned_on", "when");
        assert!(run(fields_never_marked, &unnamed).is_empty());
    }

    #[test]
    fn a_number_an_object_hands_out_and_never_changes_is_stepped_after_it_is_read() {
        let text = "class Queue:\n    def __init__(self, start=1):\n        self.next_number = start\n        self.names = {}\n\n    def join(self, name):\n        number = self.next_number\n        self.names[number] = name\n        return number\n";
        let got = run(numbers_never_handed_on, text);
        assert_eq!(got, [(6, "        self.next_number += 1".to_string())]);
        // Changed elsewhere already, or started from something that is no number: nothing.
        let stepped = text.replace(
            "        return number",
            "        self.next_number = number + 1\n        return number",
        );
        assert!(run(numbers_never_handed_on, &stepped).is_empty());
        let listed = text.replace("self.next_number = start", "self.next_number = []");
        assert!(run(numbers_never_handed_on, &listed).is_empty());
    }

    #[test]
    fn a_threshold_a_predicate_guards_is_spent_after_the_guard() {
        let text = "class Card:\n    def __init__(self):\n        self.points = 0\n\n    def can_redeem(self):\n        return self.points >= REWARD_AT\n\n    def redeem(self):\n        if not self.can_redeem():\n            raise ValueError(\"too few\")\n        self.redeemed += 1\n        return True\n";
        let got = run(thresholds_never_spent, text);
        assert_eq!(got, [(9, "        self.points -= REWARD_AT".to_string())]);
        // Spent already, or a guard that does not leave: nothing.
        let spent = text.replace("self.redeemed += 1", "self.points -= REWARD_AT");
        assert!(run(thresholds_never_spent, &spent).is_empty());
        let stays = text.replace(
            "            raise ValueError(\"too few\")",
            "            print(\"too few\")",
        );
        assert!(run(thresholds_never_spent, &stays).is_empty());
    }

    #[test]
    fn a_count_guarded_as_run_out_and_never_lowered_is_used_before_the_return_and_after_the_guard()
    {
        let text = "class Pack:\n    def __init__(self, size):\n        self.remaining = size\n        self.history = []\n\n    def book(self, when):\n        \"\"\"Use one lesson and return how many are left.\"\"\"\n        if self.remaining <= 0:\n            raise ValueError(\"none left\")\n        self.history.append(when)\n        return self.remaining\n\n    def top_up(self, n):\n        self.remaining += n\n";
        let got = run(units_never_used, text);
        let used = "        self.remaining -= 1".to_string();
        assert_eq!(got, [(9, used.clone()), (8, used.clone())]);
        // `if not self.remaining:` too; with no closing return, at the method's end.
        let bare = text
            .replace("if self.remaining <= 0:", "if not self.remaining:")
            .replace("        return self.remaining\n", "");
        assert_eq!(run(units_never_used, &bare), [(9, used.clone()), (8, used)]);
        // Lowered already, here or in another method, or a guard that does not leave: nothing.
        let lowered = text.replace("self.history.append(when)", "self.remaining -= 1");
        assert!(run(units_never_used, &lowered).is_empty());
        let elsewhere = text.replace("self.remaining += n", "self.remaining -= n");
        assert!(run(units_never_used, &elsewhere).is_empty());
        let stays = text.replace("raise ValueError(\"none left\")", "print(\"none left\")");
        assert!(run(units_never_used, &stays).is_empty());
    }

    #[test]
    fn an_entry_guarded_as_run_out_and_never_lowered_is_used_before_the_return_and_after_the_guard()
    {
        let text = "class Register:\n    def __init__(self):\n        self.booked = []\n        self.passes = {}\n\n    def buy(self, name):\n        self.passes[name] = self.passes.get(name, 0) + 10\n\n    def book(self, name):\n        if name in self.booked or self.passes.get(name, 0) < 1:\n            return False\n        self.booked.append(name)\n        return True\n";
        let got = run(entries_never_used, text);
        let used = "        self.passes[name] -= 1".to_string();
        assert_eq!(got, [(11, used.clone()), (10, used.clone())]);
        // `self.passes[name] <= 0` alone too.
        let bare = text.replace(
            "name in self.booked or self.passes.get(name, 0) < 1",
            "self.passes[name] <= 0",
        );
        assert_eq!(
            run(entries_never_used, &bare),
            [(11, used.clone()), (10, used)]
        );
        // Lowered already, in any method; never added to (no count); or a guard that does not leave: nothing.
        let lowered = text.replace("self.booked.append(name)", "self.passes[name] -= 1");
        assert!(run(entries_never_used, &lowered).is_empty());
        let taken = text.replace("+ 10", "- 10");
        assert!(run(entries_never_used, &taken).is_empty());
        let stays = text.replace("            return False\n", "            print(name)\n");
        assert!(run(entries_never_used, &stays).is_empty());
    }

    #[test]
    fn a_reset_that_leaves_out_a_part_others_change_gives_it_its_first_value_in_init_s_order() {
        let text = "class Pager:\n    def __init__(self):\n        self.shift = None\n        self.next_page = FIRST_PAGE\n        self.sent = []\n\n    def new_shift(self, shift):\n        self.shift = shift\n        self.sent = []\n\n    def page(self):\n        self.next_page += 1\n        return self.next_page\n";
        let got = run(resets_left_out, text);
        assert_eq!(
            got,
            [(7, "        self.next_page = FIRST_PAGE".to_string())]
        );
        // Reset already, or a part no other method changes: nothing.
        let reset = text.replace(
            "        self.sent = []\n\n",
            "        self.sent = []\n        self.next_page = FIRST_PAGE\n\n",
        );
        assert!(run(resets_left_out, &reset).is_empty());
        let kept = text.replace("self.next_page += 1", "print(self.next_page)");
        assert!(run(resets_left_out, &kept).is_empty());
        // A method named for a fresh start that starts nothing as `__init__` did: at its end.
        let named = text.replace(
            "        self.shift = shift\n        self.sent = []\n",
            "        self.shifts += 1\n",
        );
        assert_eq!(
            run(resets_left_out, &named),
            [(7, "        self.next_page = FIRST_PAGE".to_string())]
        );
        let plain = named.replace("new_shift", "add_shift");
        assert!(run(resets_left_out, &plain).is_empty());
        // A period closed leaves empty what another method fills during it.
        let week = "class Register:\n    def __init__(self):\n        self.this_week = []\n        self.totals = []\n\n    def sign_in(self, name):\n        self.this_week.append(name)\n\n    def close_week(self):\n        self.totals.append(len(self.this_week))\n";
        assert_eq!(
            run(resets_left_out, week),
            [(9, "        self.this_week = []".to_string())]
        );
        let unfilled = week.replace("self.this_week.append(name)", "print(self.this_week)");
        assert!(run(resets_left_out, &unfilled).is_empty());
    }

    #[test]
    fn the_latest_an_object_keeps_is_kept_by_the_method_that_records_it() {
        let text = "class Boiler:\n    def __init__(self, last_serviced):\n        self.last_serviced = last_serviced\n        self.log = []\n\n    def record_service(self, day, engineer):\n        self.log.append((day, engineer))\n\n    def overdue(self, today):\n        return today - self.last_serviced > 365\n";
        let got = run(latest_never_kept, text);
        assert_eq!(
            got,
            [
                (5, "        self.last_serviced = day".to_string()),
                (5, "        self.last_serviced = engineer".to_string())
            ]
        );
        // Changed somewhere already, or no method of its stem: nothing.
        let kept = text.replace(
            "self.log.append((day, engineer))",
            "self.last_serviced = day",
        );
        assert!(run(latest_never_kept, &kept).is_empty());
        let other = text.replace("record_service", "record_visit");
        assert!(run(latest_never_kept, &other).is_empty());
    }

    #[test]
    fn a_parameter_never_read_is_written_into_the_item_the_loop_finds() {
        let text = "def due(trees, today):\n    return [t[\"name\"] for t in trees if t[\"last\"] < today]\n\n\ndef repot(trees, name, when):\n    for t in trees:\n        if t[\"name\"] == name:\n            return True\n    return False\n";
        let got = run(parameters_never_stored, text);
        assert_eq!(got[0], (6, "            t[\"last\"] = when".to_string()));
        assert!(got.contains(&(6, "            t[\"name\"] = when".to_string())));
        // Every parameter read: nothing.
        let read = text.replace("return True", "return when");
        assert!(run(parameters_never_stored, &read).is_empty());
    }

    #[test]
    fn a_guarded_withdrawal_never_taken_is_taken_after_the_guard() {
        let text = "def sell(stock, item, size, qty=1):\n    key = (item, size)\n    if stock.get(key, 0) < qty:\n        raise ValueError(f\"only {stock.get(key, 0)} left\")\n    return stock[key]\n";
        assert_eq!(
            run(withdrawals_never_taken, text),
            [(3, "    stock[key] -= qty".to_string())]
        );
        let class = "class Account:\n    def withdraw(self, amount):\n        if amount > self.balance:\n            return False\n        return True\n\n    def book(self, seats):\n        if self.booked + seats > CAPACITY:\n            raise ValueError(\"full\")\n        return self.booked\n";
        assert_eq!(
            run(withdrawals_never_taken, class),
            [
                (3, "        self.balance -= amount".to_string()),
                (8, "        self.booked += seats".to_string()),
            ]
        );
        // Taken already, or a guard that does not refuse: nothing.
        let taken = text.replace(
            "    return stock[key]",
            "    stock[key] -= qty\n    return stock[key]",
        );
        assert!(run(withdrawals_never_taken, &taken).is_empty());
        // The parameter used past the guard as well (logged, `log.append((day, qty))`) still leaves it untaken.
        let logged = text.replace(
            "    return stock[key]",
            "    log.append(qty)\n    return stock[key]",
        );
        assert_eq!(run(withdrawals_never_taken, &logged).len(), 1);
        let warns = text.replace(
            "        raise ValueError(f\"only {stock.get(key, 0)} left\")",
            "        log(key)",
        );
        assert!(run(withdrawals_never_taken, &warns).is_empty());
        // A plain name is no kept place, and a chained comparison is no guard of this kind.
        let card = "def pay(card, fare):\n    if card[\"balance\"] < fare:  # short\n        raise ValueError\n    return card\n";
        assert_eq!(
            run(withdrawals_never_taken, card),
            [(2, "    card[\"balance\"] -= fare".to_string())]
        );
        let plain = "def pay(balance, fare):\n    if balance < fare:\n        raise ValueError\n    return balance\n";
        assert!(run(withdrawals_never_taken, plain).is_empty());
        let chained = "def pay(card, fare):\n    if 0 < card[\"balance\"] < fare:\n        raise ValueError\n    return card\n";
        assert!(run(withdrawals_never_taken, chained).is_empty());
    }

    #[test]
    fn a_remainder_of_a_kept_amount_is_kept_where_the_function_never_writes_it() {
        let ledger = "class Ledger:\n    def join(self, name):\n        self.balance[name] = 36.0\n\n    def pay(self, name, amount):\n        remaining = round(self.balance[name] - amount, 2)\n        return remaining\n";
        assert_eq!(
            run(remainders_never_kept, ledger),
            [(5, "        self.balance[name] = remaining".to_string())]
        );
        let kept = ledger.replace(
            "        return remaining",
            "        self.balance[name] = remaining\n        return remaining",
        );
        assert!(run(remainders_never_kept, &kept).is_empty());
        // A place the file never writes is a figure, not state; a plain name is no place; a local is no parameter.
        let figure = ledger.replace("        self.balance[name] = 36.0", "        pass");
        assert!(run(remainders_never_kept, &figure).is_empty());
        let plain = "def pay(balance, amount):\n    left = balance - amount\n    return left\n";
        assert!(run(remainders_never_kept, plain).is_empty());
        let local = ledger.replace("self.balance[name] - amount", "self.balance[name] - fee");
        assert!(run(remainders_never_kept, &local).is_empty());
        // A count read with a default and one added: the count kept.
        let count = "class Log:\n    def __init__(self):\n        self.credits = {}\n\n    def record(self, name):\n        count = self.credits.get(name, 0) + 1\n        return count\n";
        assert_eq!(
            run(remainders_never_kept, count),
            [(5, "        self.credits[name] = count".to_string())]
        );
    }

    #[test]
    fn a_share_of_a_kept_amount_is_taken_from_it_after_it_is_worked_out() {
        let sell = "def sell(batches, tubs):\n    for b in batches:\n        take = min(b[\"tubs\"], tubs)\n        tubs -= take\n    return tubs\n";
        let cases: [(&str, &[(usize, &str)]); 5] = [
            (sell, &[(2, "        b[\"tubs\"] -= take")]),
            (
                "def pay(self, due):\n    part = min(due, self.credit)\n    return due - part\n",
                &[(1, "    self.credit -= part")],
            ),
            // Taken already, two plain names, or two kept places: nothing.
            (&sell.replace("tubs -= take", "b[\"tubs\"] -= take"), &[]),
            ("def f(a, b):\n    c = min(a, b)\n    return c\n", &[]),
            (
                "def f(a, b):\n    c = min(a[\"x\"], b.y)\n    return c\n",
                &[],
            ),
        ];
        for (text, want) in cases {
            let want: Vec<(usize, String)> =
                want.iter().map(|(n, l)| (*n, l.to_string())).collect();
            assert_eq!(run(shares_never_taken, text), want, "{text}");
        }
    }

    #[test]
    fn an_exchange_takes_from_one_key_and_gives_to_the_other_the_file_reads() {
        let text = "def swap(stock, size):\n    stock[\"full\"][size] -= 1\n    return PRICE\n\n\ndef note(stock):\n    return sorted(stock[\"empty\"].items())\n";
        assert_eq!(
            run(exchanges_left_half_done, text),
            [
                (
                    1,
                    "    stock[\"empty\"][size] = stock[\"empty\"].get(size, 0) + 1".to_string()
                ),
                (1, "    stock[\"empty\"][size] += 1".to_string()),
            ]
        );
        // Given to already: nothing.
        let given = text.replace(
            "    return PRICE",
            "    stock[\"empty\"][size] += 1\n    return PRICE",
        );
        assert!(run(exchanges_left_half_done, &given).is_empty());
    }

    #[test]
    fn a_total_kept_beside_its_parts_is_added_to_where_a_part_is_appended() {
        let text = "def open(price):\n    deposit = price / 5\n    return {\"price\": price,\n            \"paid\": deposit, \"payments\": [deposit]}\n\n\ndef balance(a):\n    return a[\"price\"] - a[\"paid\"]\n\n\ndef pay(a, amount):\n    a[\"payments\"].append(amount)\n    return balance(a)\n";
        assert_eq!(
            run(totals_beside_parts, text),
            [(11, "    a[\"paid\"] += amount".to_string())]
        );
        // Added to already, or a number not kept beside the list: nothing.
        let kept = text.replace(
            "    return balance(a)",
            "    a[\"paid\"] += amount\n    return balance(a)",
        );
        assert!(run(totals_beside_parts, &kept).is_empty());
        let apart = text.replace("\"paid\": deposit, ", "\"paid\": 5, ");
        assert!(run(totals_beside_parts, &apart).is_empty());
    }

    #[test]
    fn a_key_read_and_never_kept_is_kept_where_a_block_writes_its_sibling() {
        let text = "def new(members):\n    return {\"members\": members, \"last\": None, \"history\": []}\n\n\ndef next_host(state, away=()):\n    start = state[\"members\"].index(state[\"last\"]) + 1 if state[\"last\"] else 0\n    for c in state[\"members\"][start:]:\n        if c not in away:\n            state[\"history\"].append(c)\n            return c\n    return None\n";
        let got = run(keys_never_kept, text);
        assert_eq!(got, [(7, "            state[\"last\"] = c".to_string())]);
        // Kept already: nothing.
        let kept = text.replace(
            "            return c",
            "            state[\"last\"] = c\n            return c",
        );
        assert!(run(keys_never_kept, &kept).is_empty());
    }

    #[test]
    fn a_list_under_a_key_tested_and_never_added_to_gets_the_item_after_the_guard() {
        let text = "def new(name):\n    return {\"name\": name, \"awards\": []}\n\n\ndef award(member, name):\n    if name in member[\"awards\"]:\n        return False\n    log(name)\n    return True\n";
        let got = run(keyed_members_never_added, text);
        let line = "    member[\"awards\"].append(name)".to_string();
        assert_eq!(got, [(6, line.clone()), (7, line)]);
        // A line that adds to it: nothing.
        let added = text.replace("    log(name)", "    member[\"awards\"].append(name)");
        assert!(run(keyed_members_never_added, &added).is_empty());
        // Negated: at the end of its own block.
        let negated = "def new():\n    return {\"tags\": set()}\n\n\ndef tag(item, t):\n    if t not in item[\"tags\"]:\n        log(t)\n    return item\n";
        assert_eq!(
            run(keyed_members_never_added, negated),
            [(6, "        item[\"tags\"].add(t)".to_string())]
        );
    }

    #[test]
    fn what_a_method_takes_whole_and_hands_back_starts_again() {
        let text = "class Tank:\n    def __init__(self):\n        self.litres = 0\n        self.taken = []\n\n    def add(self, litres):\n        self.litres += litres\n\n    def collect(self):\n        taken = self.litres\n        self.taken.append(taken)\n        return taken\n";
        let got = run(taken_never_reset, text);
        assert_eq!(got, [(10, "        self.litres = 0".to_string())]);
        // Started again already, never added to elsewhere, or not handed back: nothing.
        let reset = text.replace(
            "        return taken",
            "        self.litres = 0\n        return taken",
        );
        assert!(run(taken_never_reset, &reset).is_empty());
        let kept = text.replace("self.litres += litres", "print(litres)");
        assert!(run(taken_never_reset, &kept).is_empty());
        let other = text.replace("        return taken", "        return len(self.taken)");
        assert!(run(taken_never_reset, &other).is_empty());
    }

    #[test]
    fn a_kept_list_walked_in_order_is_sorted_where_it_grows() {
        let text = "class Rota:\n    def __init__(self):\n        self.slots = []\n\n    def add(self, start, group):\n        self.slots.append((start, group))\n\n    def next_slot(self, now):\n        for start, group in self.slots:\n            if start >= now:\n                return start, group\n";
        assert_eq!(
            run(kept_lists_never_sorted, text),
            [(5, "        self.slots.sort()".to_string())]
        );
        // Sorted already, or never walked: nothing.
        let sorted = text.replace("in self.slots:", "in sorted(self.slots):");
        assert!(run(kept_lists_never_sorted, &sorted).is_empty());
        let counted = text.replace(
            "for start, group in self.slots:",
            "for _ in range(len(self.slots)):",
        );
        assert!(run(kept_lists_never_sorted, &counted).is_empty());
    }

    #[test]
    fn an_amount_handed_back_from_a_kept_place_is_kept() {
        let text = "class Stock:\n    def __init__(self, levels):\n        self.levels = dict(levels)\n\n    def receive(self, item, qty):\n        self.levels[item] = self.levels.get(item, 0) + qty\n\n    def sell(self, item, qty=1):\n        on_hand = self.levels.get(item, 0)\n        if qty > on_hand:\n            raise ValueError(item)\n        return on_hand - qty\n";
        assert_eq!(
            run(returned_amounts_never_kept, text),
            [(10, "        self.levels[item] = on_hand - qty".to_string())]
        );
        // Kept already, a place no other function writes, or a figure of no parameter: nothing.
        let kept = text.replace(
            "        return on_hand - qty",
            "        self.levels[item] -= qty\n        return on_hand - qty",
        );
        assert!(run(returned_amounts_never_kept, &kept).is_empty());
        let unwritten = text
            .replace(
                "        self.levels[item] = self.levels.get(item, 0) + qty",
                "        print(item, qty)",
            )
            .replace("self.levels = dict(levels)", "print(levels)");
        assert!(run(returned_amounts_never_kept, &unwritten).is_empty());
        let figure = text.replace("return on_hand - qty", "return on_hand - spare");
        assert!(run(returned_amounts_never_kept, &figure).is_empty());
    }

    #[test]
    fn an_entry_another_method_steps_is_started_again_where_a_method_reads_it() {
        let text = "class Chart:\n    def __init__(self):\n        self.days_since = {}\n        self.history = []\n\n    def add(self, name):\n        self.days_since[name] = 0\n\n    def end_of_day(self):\n        for name in self.days_since:\n            self.days_since[name] += 1\n\n    def fed(self, name, item):\n        self.history.append((name, item, self.days_since[name]))\n\n    def days(self, name):\n        return self.days_since[name]\n";
        assert_eq!(
            run(entries_never_restarted, text),
            [(13, "        self.days_since[name] = 0".to_string())]
        );
        // Never stepped elsewhere: nothing.
        let still = text.replace("self.days_since[name] += 1", "print(name)");
        assert!(run(entries_never_restarted, &still).is_empty());
    }
}
