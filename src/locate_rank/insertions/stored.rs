//! Insertions for a value a function is handed or tests for and never stores: a parameter it never reads, written
//! into the item its loop finds (`t["last"] = when`), a list under a dict's key that it tests for membership and
//! that no line ever adds to (`member["awards"].append(name)`), and a key it reads and no line keeps
//! (`state["last"] = candidate`). Pure: lines in, lines out.

use super::super::{is_name, tokens};
use super::{Def, code_of, ends_flow, first_word, indent_of, reads};

/// The most fields one parameter never read is written into.
const MAX_FIELDS: usize = 4;

/// A plain string key of a subscript in a line's raw text (`item["last"]`, `['last']`): the name subscripted,
/// the key without its quotes and the quote, for each subscript in order.
fn subscripts(line: &str) -> Vec<(String, String, char)> {
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
                let depth = indent_of(line).len();
                let block: Vec<usize> = d.body[k + 1..]
                    .iter()
                    .copied()
                    .take_while(|&i| indent_of(lines[i]).len() > depth)
                    .collect();
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

#[cfg(test)]
mod tests {
    use super::super::{Def, Kind};
    use super::*;

    fn run(kind: Kind, text: &str) -> Vec<(usize, String)> {
        let lines: Vec<&str> = text.lines().collect();
        kind(&lines, &Def::all(&lines))
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
}
