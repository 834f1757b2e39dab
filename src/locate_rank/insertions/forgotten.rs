//! Insertions for a step a function forgets though the file has what it needs: a count kept under a dict's key
//! started at 0 and never counted, a branch that finds the other answer and falls through to the usual one, and a
//! normalising function the file defines and a loop never calls. Pure: lines in, lines out.

use super::super::{is_name, tokens};
use super::{Def, block_below, code_of, ends_flow, first_word, indent_of};

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
    let subscript = format!("[{q}{key}{q}]");
    lines.iter().any(|l| {
        l.match_indices(&subscript).any(|(at, s)| {
            let after = l[at + s.len()..].trim_start();
            ["+=", "-=", "*="].iter().any(|o| after.starts_with(o))
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

/// A function that returns another answer in one branch (`return default` where the entry is missing) and ends
/// with the usual one (`return value`), with an `if` block at its own depth that never leaves (`if now >=
/// expires_at: del cache[key]`): the other answer at the end of that block. The other answer is a parameter or
/// `None`, at most [`MAX_FALLEN`] blocks a function.
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
        let Some(other) = others.first() else {
            continue;
        };
        let mut given = 0;
        for (k, &b) in d.body.iter().enumerate() {
            if indent_of(lines[b]) != d.indent || first_word(lines[b]) != "if" {
                continue;
            }
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

/// A function of one parameter that brings a value to one form (`def normalize_unit(unit):`), and a loop
/// elsewhere that binds a name of that parameter's (`for name, qty, unit in ingredients:`) in a function that never
/// calls it: `unit = normalize_unit(unit)` first in the loop's body.
pub(in crate::locate_rank) fn normalisers_never_called(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for f in defs {
        let first = f.name.split('_').next().unwrap_or("").to_ascii_lowercase();
        let mut params = f.params.iter().filter(|p| *p != "self");
        let (Some(p), None) = (params.next(), params.next()) else {
            continue;
        };
        if !NORMALISING.contains(&first.as_str()) {
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

#[cfg(test)]
mod tests {
    use super::super::tests::offers;

    /// The insertions of `text`, with no error told, as (1-based line after which, line).
    fn lines_of(text: &str) -> Vec<(usize, String)> {
        super::super::tests::lines_of(text, &[], None)
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
    fn a_set_started_in_a_tuple_and_tested_by_a_call_of_its_item_gets_the_update() {
        let text = "def dedupe(titles):\n    seen, result = set(), []\n    for title in titles:\n        if title.lower() not in seen:\n            result.append(title)\n    return result\n";
        let got = lines_of(text);
        assert!(
            got.iter()
                .any(|(at, l)| *at == 5 && l == "            seen.add(title.lower())"),
            "{got:?}"
        );
    }
}
