//! The places next to the probe's first pass: a routine fix has its equivalents one place off (a counter's
//! `count += 1` before or after the update beside it, `sorted(...)` around a comprehension or `.sort()` after it,
//! a normalisation inserted as its own line or written into the line that binds the name), and the fix the task
//! means may be any of them. [`super::batch::probe_many`] runs [`mutants`] (every one of them, in one more run of
//! the check) once a mutant passed, and ranks the places where one passed too right after the first
//! ([`ordered`]): the true place is then among the first three where it used to be one place off.
//!
//! Pure: texts in, mutants and places out.

use std::collections::BTreeMap;

use super::failing::Fixed;
use super::insertions::{ends_flow, with_inserted};
use super::mutants::with_line;
use super::without_strings;
use crate::patch::PreImage;

/// Where the mutant `text` of `before` changed it, as the probe reports it: the 1-based line it changed
/// (`false`), or the line after which it inserted one (`true`); a line inserted just before a lone `pass` of its
/// own indentation reports the `pass` changed. None when it is neither.
pub(super) fn place_of(before: &str, text: &str) -> Option<(usize, bool)> {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = text.lines().collect();
    let k = (0..new.len()).find(|&k| old.get(k) != new.get(k))?;
    if new.len() == old.len() {
        return Some((k + 1, false));
    }
    if new.len() != old.len() + 1 || old[k..] != new[k + 1..] {
        return None;
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let placeholder = old
        .get(k)
        .is_some_and(|n| n.trim() == "pass" && indent(n) == indent(new[k]));
    Some(if placeholder {
        (k + 1, false)
    } else {
        (k, true)
    })
}

/// A change of the 1-based line `at` to `changed` that normalises a name where it is read (`if needle in title` to
/// `if needle.lower() in title`), written instead where the function binds the name (`needle = query` to `needle
/// = query.lower()`) and as a line after that binding (`needle = needle.lower()`): the fix made where the value
/// is made rather than where it is used.
fn upstream_twins(lines: &[&str], at: usize, changed: &str) -> Vec<(usize, bool, String)> {
    let Some(old) = at.checked_sub(1).and_then(|k| lines.get(k)) else {
        return Vec::new();
    };
    let head = old
        .char_indices()
        .zip(changed.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, a), _)| i + a.len_utf8());
    let tail = old[head..]
        .chars()
        .rev()
        .zip(changed[head..].chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    // Only something added, right after a name: `.lower()`.
    if head + tail != old.len() || changed.len() < head + tail {
        return Vec::new();
    }
    let added = &changed[head..changed.len() - tail];
    let before = &old[..head];
    let name_at = before
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &before[name_at..];
    let attribute = before[..name_at].ends_with('.');
    let call = added.starts_with('.') && added.ends_with(')');
    if !call || attribute || !identifier(name) {
        return Vec::new();
    }
    let depth = |l: &str| l.len() - l.trim_start().len();
    for k in (0..at - 1).rev() {
        let l = lines[k];
        if l.trim_start().starts_with("def ") {
            break;
        }
        if l.trim().is_empty() || depth(l) > depth(old) {
            continue;
        }
        let Some((target, value)) = l.trim().split_once(" = ") else {
            continue;
        };
        if target != name || value.contains(" = ") {
            continue;
        }
        let indent = &l[..depth(l)];
        let value = if plain(value) {
            value.to_string()
        } else {
            format!("({value})")
        };
        return vec![
            (k + 1, false, format!("{indent}{name} = {value}{added}")),
            (k + 1, true, format!("{indent}{name} = {name}{added}")),
        ];
    }
    Vec::new()
}

/// The whole text of the first mutant of `all` that passed (by its `verdicts`) at the place `f`.
pub(super) fn passed_text<'a>(
    files: &BTreeMap<String, Option<PreImage>>,
    all: &'a [(String, String)],
    verdicts: &[Option<bool>],
    f: &Fixed,
) -> Option<&'a str> {
    let Some(Some(pre)) = files.get(&f.path) else {
        return None;
    };
    all.iter()
        .zip(verdicts)
        .find(|((path, text), v)| {
            **v == Some(true)
                && *path == f.path
                && place_of(&pre.text, text) == Some((f.line, f.insert))
        })
        .map(|((_, text), _)| text.as_str())
}

/// Whether the change from `before` to `after` leaves a name that a line of `after` assigns (`rows = sorted(...)`)
/// and that `before` read never read (`for r in records` where `for r in rows` was): dead code a fix would not
/// leave.
pub(super) fn leaves_unread(before: &str, after: &str) -> bool {
    let uses = |text: &str, name: &str| reads(text, name).count();
    let local = after.lines().any(|l| {
        let Some((target, value)) = l.trim().split_once(" = ") else {
            return false;
        };
        identifier(target)
            && !value.starts_with('=')
            && uses(before, target) >= 2
            && uses(after, target) == 1
    });
    local || leaves_parameter_unread(before, after) || leaves_attribute_unset(before, after)
}

/// Whether the change leaves an attribute `before` set never set (`self.catalogue_value = catalogue_value`
/// turned `self.face_value = catalogue_value`): the object's other field then holds both values.
fn leaves_attribute_unset(before: &str, after: &str) -> bool {
    let set = |text: &str, attr: &str| {
        text.lines().any(|l| {
            l.trim_start()
                .strip_prefix(attr)
                .is_some_and(|r| r.starts_with(" = "))
        })
    };
    before.lines().any(|l| {
        let code = l.trim_start();
        let Some((target, _)) = code.split_once(" = ") else {
            return false;
        };
        let attr = target.strip_prefix("self.").is_some_and(identifier);
        attr && !set(after, target)
    })
}

/// Whether the change leaves a parameter its function read never read (`>= interval` to `>=
/// BLADE_INTERVAL_HOURS`, the `interval` of `def blade_due(hours, interval=...)` then read nowhere): a workaround
/// where the function's caller or its default was to change.
fn leaves_parameter_unread(before: &str, after: &str) -> bool {
    let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let indent = |l: &str| l.len() - l.trim_start().len();
    let function = |lines: &[&str], j: usize| {
        let end = (j + 1..lines.len())
            .find(|&k| !lines[k].trim().is_empty() && indent(lines[k]) <= indent(lines[j]))
            .unwrap_or(lines.len());
        lines[j..end].join("\n")
    };
    a.iter().enumerate().any(|(j, def)| {
        let Some(i) = b
            .iter()
            .position(|l| l == def)
            .filter(|_| def.trim_start().starts_with("def "))
        else {
            return false;
        };
        let Some(params) = def
            .split_once('(')
            .and_then(|(_, p)| p.rsplit_once(')'))
            .map(|(p, _)| p)
        else {
            return false;
        };
        let (was, now) = (function(&b, i), function(&a, j));
        params.split(',').any(|p| {
            let p = p
                .split(['=', ':'])
                .next()
                .unwrap_or("")
                .trim()
                .trim_start_matches('*');
            identifier(p)
                && p != "self"
                && reads(&was, p).count() >= 2
                && reads(&now, p).count() == 1
        })
    })
}

/// Whether the change from `before` to `after` (one line changed or inserted) turns an order round where none was
/// (`sorted(dates)` to `sorted(dates, reverse=True)`, `reversed(...)`, `[::-1]`, `dates.reverse()`): a workaround
/// that makes the last item the wanted one (the latest match kept, `dates[-1]` read) where another place's fix
/// reads or keeps the right one. Taking a reversal away (`reverse=True` dropped) is the usual fix of an order.
pub(super) fn order_turned(before: &str, after: &str) -> bool {
    if place_of(before, after).is_none() {
        return false;
    }
    let count = |l: &str, n: &str| l.matches(n).count();
    ["reverse=True", "reversed(", "[::-1]", ".reverse()"]
        .iter()
        .any(|n| count(after, n) > count(before, n))
        || sign_turned(before, after)
}

/// Where `after` changes exactly one line of `before` and nothing else: `before`'s lines, the 0-based line, and
/// what it became.
fn one_line_changed<'a>(before: &'a str, after: &'a str) -> Option<(Vec<&'a str>, usize, &'a str)> {
    let (old, new): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    if old.len() != new.len() {
        return None;
    }
    let mut changed = (0..old.len()).filter(|&k| old[k] != new[k]);
    let (Some(k), None) = (changed.next(), changed.next()) else {
        return None;
    };
    Some((old, k, new[k]))
}

/// Whether the change from `before` to `after` only takes one slice of a line's first items from the other end
/// (`scores[:3]` to `scores[-3:]`, or back): the mirror of an order turned round before it.
pub(super) fn slice_mirrored(before: &str, after: &str) -> bool {
    let Some((old, k, now)) = one_line_changed(before, after) else {
        return false;
    };
    let mirrored = |was: &str, now: &str| {
        was.match_indices("[:").any(|(i, _)| {
            let Some(len) = was[i..].find(']') else {
                return false;
            };
            let n = &was[i + 2..i + len];
            let plain = !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_');
            plain && now == format!("{}[-{n}:]{}", &was[..i], &was[i + len + 1..])
        })
    };
    mirrored(old[k], now) || mirrored(now, old[k])
}

/// Whether the change from `before` to `after` turns one `+` of a line into `-` where the line adds to a name
/// (`totals[species] = totals.get(species, 0) - grams`, `score -= points`) that a later line orders by (`min(`,
/// `max(`, `sorted(`, `.sort(`): the values come out negated, so the order is turned round (`min` then finds the
/// largest), a workaround where the later line's own fix (`max`) is the usual one.
fn sign_turned(before: &str, after: &str) -> bool {
    let Some((old, k, now)) = one_line_changed(before, after) else {
        return false;
    };
    let was = old[k];
    let (w, n) = (was.as_bytes(), now.as_bytes());
    let one_plus = n.len() == w.len()
        && (0..w.len())
            .any(|i| w[i] == b'+' && n[i] == b'-' && w[..i] == n[..i] && w[i + 1..] == n[i + 1..]);
    let target: String = was
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    one_plus
        && !target.is_empty()
        && old[k + 1..].iter().any(|l| {
            l.contains(target.as_str())
                && ["min(", "max(", "sorted(", ".sort("]
                    .iter()
                    .any(|o| l.contains(o))
        })
}

/// The line the first pass wrote: the line it inserted, or the line it changed to, as the mutant's text holds it.
pub(super) fn passed_line<'a>(
    files: &BTreeMap<String, Option<PreImage>>,
    all: &'a [(String, String)],
    verdicts: &[Option<bool>],
    first: &Fixed,
) -> Option<&'a str> {
    let at = if first.insert {
        first.line
    } else {
        first.line.checked_sub(1)?
    };
    passed_text(files, all, verdicts, first).and_then(|text| text.lines().nth(at))
}

/// The mutants to try at the places next to `first`, where the first mutant passed (`added`: the line it
/// inserted, if it inserted one; `changed`: the line it changed to, if it changed one): that line moved one place
/// up and one down, the same normalisation written the other ways ([`normalisation_twins`]), a normalisation
/// where a name is read written where it is bound ([`upstream_twins`]), a fresh start past the block that only
/// tests the name ([`past_its_test`]), then the probe's own mutants of those
/// places that its run never reached (it stops at the first pass), in its order.
pub(super) fn mutants(
    files: &BTreeMap<String, Option<PreImage>>,
    all: &[(String, String)],
    verdicts: &[Option<bool>],
    first: &Fixed,
    (added, changed): (Option<&str>, Option<&str>),
) -> Vec<(String, String)> {
    let Some(Some(pre)) = files.get(&first.path) else {
        return Vec::new();
    };
    let before = &pre.text;
    let lines: Vec<&str> = before.lines().collect();
    let mut out: Vec<(String, String)> = Vec::new();
    let push = |out: &mut Vec<(String, String)>, text: String| {
        if !out.iter().any(|(_, t)| *t == text) && text != *before {
            out.push((first.path.clone(), text));
        }
    };
    // Each written twin: a line changed, or (`true`) one inserted after it.
    let written = |(at, insert, line): (usize, bool, String)| {
        if insert {
            with_inserted(before, at, &line)
        } else {
            with_line(before, at, &line)
        }
    };
    if let Some(added) = added {
        for one in each_of_a_tuple(added) {
            for twin in normalisation_twins(&lines, first.line, &one) {
                push(&mut out, written(twin));
            }
        }
        if let Some(twin) = folded_into_return(&lines, first.line, added) {
            push(&mut out, written(twin));
        }
        if let Some((after, line)) = ordered_after_loop(&lines, first.line, added) {
            push(&mut out, with_inserted(before, after, &line));
        }
        if let Some((after, line)) = past_its_test(&lines, first.line, added) {
            push(&mut out, with_inserted(before, after, &line));
        }
        for after in [first.line.checked_sub(1), Some(first.line + 1)]
            .into_iter()
            .chain(statements_apart(&lines, first.line, added))
            .chain([before_return(&lines, first.line, added)])
            .flatten()
            .filter(|&a| a <= lines.len())
        {
            push(&mut out, with_inserted(before, after, added));
        }
    }
    if let Some(changed) = changed {
        for twin in upstream_twins(&lines, first.line, changed)
            .into_iter()
            .chain(unfolded_twin(&lines, first.line, changed))
        {
            push(&mut out, written(twin));
        }
    }
    for ((path, text), v) in all.iter().zip(verdicts) {
        if v.is_none()
            && *path == first.path
            && place_of(before, text).is_some_and(|p| near(first, p))
        {
            push(&mut out, text.clone());
        }
    }
    out
}

/// The places one statement up and one down from a line `added` inserted after the 1-based line `n`, at its
/// depth, where a block stands between (`previous = g` after an `if steady >= N:` block's `return True`: before
/// that `if`): each the line after which it goes, `None` where no block stands there.
fn statements_apart(lines: &[&str], n: usize, added: &str) -> [Option<usize>; 2] {
    let depth = added.len() - added.trim_start().len();
    let deeper = |k: usize| {
        lines
            .get(k)
            .is_some_and(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > depth)
    };
    // Up: over the block that ends at `n` to its header at the added line's depth.
    let mut k = n;
    while k > 0 && deeper(k - 1) {
        k -= 1;
    }
    let up = (k > 0 && k < n).then(|| k - 1);
    // Down: the next statement, with its block.
    let header = lines.get(n).is_some_and(|l| {
        !l.trim().is_empty()
            && l.len() - l.trim_start().len() == depth
            && l.trim_end().ends_with(':')
    });
    let mut m = n + 1;
    while header && deeper(m) {
        m += 1;
    }
    let down = (header && m > n + 1).then_some(m);
    [up, down]
}

/// For an update (`self.withdrawn_today += amount`) inserted after the 1-based line `n`: the place just before the
/// `return` that ends its block further on, past the guards and updates between (`self.balance -= amount`), where
/// that is more than one place off; `None` for any other line, or where the block ends without a `return`.
fn before_return(lines: &[&str], n: usize, added: &str) -> Option<usize> {
    updated(added)?;
    let depth = added.len() - added.trim_start().len();
    for (k, l) in lines.iter().enumerate().skip(n) {
        let indent = l.len() - l.trim_start().len();
        if l.trim().is_empty() || indent > depth {
            continue;
        }
        if indent < depth {
            return None;
        }
        if l.trim() == "return" || l.trim_start().starts_with("return ") {
            return (k > n + 1).then_some(k);
        }
    }
    None
}

/// For a sort of a list (`finishers.sort()`, `.reverse()`) inserted after the 1-based line `n` inside a loop
/// that grows that list (`finishers.append(...)`): the place just after the loop, at the loop's depth, where the
/// list is whole and is put in order once, as (the 1-based line after which, the line); `None` otherwise.
fn ordered_after_loop(lines: &[&str], n: usize, added: &str) -> Option<(usize, String)> {
    let code = added.trim();
    let list = code
        .strip_suffix(')')
        .and_then(|c| c.split_once(".sort(").or_else(|| c.split_once(".reverse(")))
        .map(|(list, _)| list)
        .filter(|l| identifier(l))?;
    let depth = added.len() - added.trim_start().len();
    let indent = |l: &str| l.len() - l.trim_start().len();
    // The innermost loop above the place that holds it.
    let header = (0..n.min(lines.len())).rev().find(|&k| {
        let l = lines[k];
        let t = l.trim_start();
        !l.trim().is_empty()
            && indent(l) < depth
            && (t.starts_with("for ") || t.starts_with("while "))
    })?;
    let outer = indent(lines[header]);
    let blocked = lines[header + 1..n.min(lines.len())]
        .iter()
        .any(|l| !l.trim().is_empty() && indent(l) <= outer);
    if blocked {
        return None;
    }
    let end = (header + 1..lines.len())
        .take_while(|&k| lines[k].trim().is_empty() || indent(lines[k]) > outer)
        .filter(|&k| !lines[k].trim().is_empty())
        .last()?;
    let grows = lines[header + 1..=end]
        .iter()
        .any(|l| l.trim_start().starts_with(&format!("{list}.append(")));
    let pad = &lines[header][..outer];
    (grows && end + 1 != n).then(|| (end + 1, format!("{pad}{code}")))
}

/// A line `name = value` inserted after the 1-based line `n` where the next line is `return name`: that `return`
/// changed to `return value` instead (`needed = max(needed, MIN)` then `return needed`: `return max(needed, MIN)`),
/// as (1-based line, false, the line).
fn folded_into_return(lines: &[&str], n: usize, added: &str) -> Option<(usize, bool, String)> {
    let (name, value) = added.trim().split_once(" = ")?;
    let next = lines.get(n)?;
    let indent = &next[..next.len() - next.trim_start().len()];
    let returns = identifier(name) && next.trim() == format!("return {name}");
    returns.then(|| (n + 1, false, format!("{indent}return {value}")))
}

/// A line that normalises several names at once (`qty, price = float(qty), float(price)`) as one line a name
/// (`qty = float(qty)`, `price = float(price)`); any other line as it is.
fn each_of_a_tuple(added: &str) -> Vec<String> {
    let indent = &added[..added.len() - added.trim_start().len()];
    let one = || vec![added.to_string()];
    let Some((targets, values)) = added.trim().split_once(" = ") else {
        return one();
    };
    let targets: Vec<&str> = targets.split(", ").collect();
    let values: Vec<&str> = values.split(", ").collect();
    if targets.len() < 2 || targets.len() != values.len() {
        return one();
    }
    let lines: Vec<String> = targets
        .iter()
        .zip(&values)
        .map(|(t, v)| format!("{indent}{t} = {v}"))
        .collect();
    if lines.iter().all(|l| normalisation(l).is_some()) {
        lines
    } else {
        one()
    }
}

/// A change of the 1-based line `n` that wrapped what it assigns (`fields = line.split(";")` to `fields =
/// [part.strip() for part in line.split(";")]`) made as a line of its own after it instead, the line kept: `fields
/// = [part.strip() for part in fields]`.
fn unfolded_twin(lines: &[&str], n: usize, changed: &str) -> Option<(usize, bool, String)> {
    let old = lines.get(n.checked_sub(1)?)?;
    let indent = &old[..old.len() - old.trim_start().len()];
    let (target, value) = old.trim().split_once(" = ")?;
    let (new_target, new_value) = changed.trim().split_once(" = ")?;
    let wrapped = identifier(target)
        && new_target == target
        && changed.starts_with(indent)
        && new_value != value
        && new_value.matches(value).count() == 1;
    wrapped.then(|| {
        let unfolded = new_value.replacen(value, target, 1);
        (n, true, format!("{indent}{target} = {unfolded}"))
    })
}

/// Whether the change of the 1-based line `n` passed what the line assigns through a call, a method or a
/// comprehension ([`unfolded_twin`]: `int(line.strip())`, `code.strip().upper()`, `[p.strip() for p in
/// line.split(";")]`), not into arithmetic (`price * qty + fee`).
fn wrapped(lines: &[&str], n: usize, changed: &str) -> bool {
    let Some(old) = n.checked_sub(1).and_then(|k| lines.get(k)) else {
        return false;
    };
    let (Some((_, value)), Some((_, new_value))) = (
        old.trim().split_once(" = "),
        changed.trim().split_once(" = "),
    ) else {
        return false;
    };
    let Some((pre, post)) = new_value.split_once(value) else {
        return false;
    };
    let call =
        pre.ends_with('(') && post.starts_with(')') && !pre.trim_end_matches('(').ends_with(' ');
    let method = pre.is_empty() && post.starts_with('.') && post.ends_with(')');
    let comprehension = pre.starts_with('[') && pre.contains(" for ") && post == "]";
    unfolded_twin(lines, n, changed).is_some() && (call || method || comprehension)
}

/// Whether the change of the 1-based line `n` sorts what the line assigns (`times = [f(c) for c in clocks]` to
/// `times = sorted(f(c) for c in clocks)`, `weights = list(weights)` to `sorted(weights)`): the same target, its
/// new value `sorted(...)` holding the old one's words.
fn sorted_whole(lines: &[&str], n: usize, changed: &str) -> bool {
    let Some(old) = n.checked_sub(1).and_then(|k| lines.get(k)) else {
        return false;
    };
    let (Some((target, value)), Some((new_target, new_value))) = (
        old.trim().split_once(" = "),
        changed.trim().split_once(" = "),
    ) else {
        return false;
    };
    let inner = value
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')'])
        .trim_start_matches("list(");
    identifier(target)
        && new_target == target
        && new_value.starts_with("sorted(")
        && !value.starts_with("sorted(")
        && new_value.contains(inner)
}

/// Whether the place (1-based line, a line inserted after it) is next to `first` and not it: after a line
/// inserted after n, the place after n - 1 or n + 1, or a change of n or n + 1; after a change of n, a change of
/// n - 1 or n + 1, or a line after n - 1 or n.
fn near(first: &Fixed, (line, insert): (usize, bool)) -> bool {
    let n = first.line;
    if (line, insert) == (n, first.insert) {
        return false;
    }
    let within = |lo: usize, hi: usize| (lo..=hi).contains(&line);
    match (first.insert, insert) {
        (true, true) => within(n.saturating_sub(1), n + 1),
        (true, false) => line == n || line == n + 1,
        (false, false) => within(n.saturating_sub(1), n + 1),
        (false, true) => within(n.saturating_sub(1), n),
    }
}

/// The first pass and the places next to it where a mutant passed too, in the order they rank: the first pass
/// first, unless it turned round an `if` whose block only skips the item (`continue`, `break`) where a line
/// inserted in that block passed too (`run = 0` before the `continue`), or it inserted an update (`count += 1`, `seen.add(key)`) that its twin one place off puts on the
/// other side of the update beside it in the order the two names were started (`total = 0` then `count = 0`: the
/// count's update after the total's; a collection grown beside a value written too: the sets put `seen.add(key)`
/// before `score += POINTS` as often as `box.append(title)` after `stock[title] -= 1`), or it inserted an update before a guard that may still refuse the call where
/// twins past that guard passed too (the latest of them first), or it gathered a value past a block that never
/// names the collection where a twin gathers it just after the line that makes it, or it sorted a list inside the
/// loop that grows it where a twin sorts it after the loop ([`ordered_after_loop`]), or it changed a line to wrap
/// or sort what it assigns where the same made as a line of its own after it passed too ([`wrapped`],
/// [`sorted_whole`]), or it started a name afresh inside the block of an `if` that only tests that name where
/// the same just past that block passed too ([`past_its_test`]). A value worked out on a line of its own just before
/// its `return` and the same value folded into the `return` rank as they passed: sets of tasks written blind put
/// the fix either way.
pub(super) fn ordered(
    files: &BTreeMap<String, Option<PreImage>>,
    first: &Fixed,
    (added, changed): (Option<&str>, Option<&str>),
    twins: Vec<Fixed>,
) -> Vec<Fixed> {
    let lines: Vec<&str> = match files.get(&first.path) {
        Some(Some(pre)) => pre.text.lines().collect(),
        _ => Vec::new(),
    };
    let moved = twins.iter().position(|t| {
        let update =
            t.insert && added.is_some_and(|a| in_start_order(&lines, first.line, t.line, a));
        // A normalisation first in a function that passed written where the value is made too: there; not where
        // the very name it normalised is read (`if float(height_m) <= top:`), which the first pass does once.
        let made = t.line > first.line + 1
            && added
                .and_then(normalisation)
                .is_some_and(|(name, _, _)| !line_reads(&lines, t.line, name))
            && added.is_some_and(|a| {
                normalisation_twins(&lines, first.line, a)
                    .iter()
                    .any(|&(at, insert, _)| (at, insert) == (t.line, t.insert))
            })
            && first_in_function(&lines, first.line);
        // A guard that only skips the item, turned round to skip the others: the line its block was missing.
        let skipped =
            !first.insert && t.insert && t.line == first.line && guards_a_skip(&lines, first.line);
        // Gathered where the value is made (`totals.append(total)` just after `total = ...`) rather than past a
        // block that never reads what gathers it.
        let gathered = t.insert
            && first.insert
            && t.line < first.line
            && added.is_some_and(|a| gathered_where_made(&lines, t.line, first.line, a));
        // A list put in order once it is whole, after the loop that grows it, not at each turn of the loop.
        let whole = t.insert
            && first.insert
            && added
                .and_then(|a| ordered_after_loop(&lines, first.line, a))
                .is_some_and(|(after, _)| after == t.line);
        // A change that wrapped what a line assigns (`times = sorted(...)`, `score = int(score.strip())`) where
        // the same made as a line of its own after it passed too: that line (`times.sort()`, `score =
        // int(score)`), as tasks written blind put a missing normalisation of a name just bound.
        let unfolded = t.insert
            && !first.insert
            && t.line == first.line
            && changed.is_some_and(|c| {
                wrapped(&lines, first.line, c) || sorted_whole(&lines, first.line, c)
            });
        // A collection or a count started afresh inside the block that only tests it (`if houses:`) where the
        // same just past that block, where the group changes whatever it held, passed too.
        let unguarded = t.insert
            && first.insert
            && added
                .and_then(|a| past_its_test(&lines, first.line, a))
                .is_some_and(|(after, _)| after == t.line);
        t.path == first.path
            && (update || made || skipped || gathered || whole || unfolded || unguarded)
    });
    // An update the first pass made before a guard that may still refuse (`if amount > self.balance: raise`):
    // the latest twin past it, where the update no longer happens for a refused call.
    let moved = moved.or_else(|| {
        let added = added.filter(|a| updated(a).is_some())?;
        let depth = added.len() - added.trim_start().len();
        let past = |t: &Fixed| {
            let refused = refusal_between(&lines, first.line, t.line, depth);
            t.insert && t.path == first.path && first.insert && refused
        };
        let latest = twins.iter().filter(|t| past(t)).map(|t| t.line).max()?;
        twins.iter().position(|t| past(t) && t.line == latest)
    });
    let mut out = vec![first.clone()];
    out.extend(twins);
    if let Some(k) = moved {
        let twin = out.remove(k + 1);
        out.insert(0, twin);
    }
    out
}

/// Where `added`, inserted after the 1-based line `at`, starts a name afresh (`houses = []`, `total = 0`) at the
/// end of the block of an `if` that only tests that name (`if houses:`), the same just past that block, where the
/// group changes whatever the name held: after the next line at the `if`'s own depth (`current = street`), as a
/// 1-based line to insert after and the line at that depth.
fn past_its_test(lines: &[&str], at: usize, added: &str) -> Option<(usize, String)> {
    let depth = |l: &str| l.len() - l.trim_start().len();
    let (name, value) = added.trim().split_once(" = ")?;
    let fresh = ["[]", "{}", "0", "0.0", "\"\"", "set()"].contains(&value.trim());
    if !fresh || !identifier(name) || at == 0 || at > lines.len() {
        return None;
    }
    // The `if` whose block the insertion ends: the nearest line above shallower than the added line.
    let h = (0..at)
        .rev()
        .find(|&k| !lines[k].trim().is_empty() && depth(lines[k]) < depth(added))?;
    let header = lines[h].trim();
    if header != format!("if {name}:") && header != format!("if len({name}):") {
        return None;
    }
    let next = (at..lines.len()).find(|&k| !lines[k].trim().is_empty())?;
    let code = lines[next].trim_end();
    let own = depth(code) == depth(lines[h]) && !code.ends_with(':') && !ends_flow(code);
    let indent = &lines[h][..depth(lines[h])];
    own.then(|| (next + 1, format!("{indent}{}", added.trim())))
}

/// Whether a `raise` or a `return` in a block deeper than `depth` stands in the 1-based lines after `from` up to
/// `to`: a guard that may refuse the call between two places.
fn refusal_between(lines: &[&str], from: usize, to: usize, depth: usize) -> bool {
    lines.iter().take(to).skip(from).any(|l| {
        let code = l.trim();
        let refuses = code == "return" || ["raise ", "return "].iter().any(|w| code.starts_with(w));
        refuses && l.len() - l.trim_start().len() > depth
    })
}

/// Whether the update `added` (`totals.append(total)`, `seen += total`) of a value made on the 1-based line `at`
/// (`total = ...`) may go just after it: no line after it up to the 1-based line `to` names what it updates.
fn gathered_where_made(lines: &[&str], at: usize, to: usize, added: &str) -> bool {
    let Some(name) = updated(added) else {
        return false;
    };
    let code = added.trim();
    let value = code.split_once(['(', '=']).map_or("", |(_, v)| {
        v.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
    });
    let made = at
        .checked_sub(1)
        .and_then(|k| lines.get(k))
        .is_some_and(|l| {
            l.trim()
                .split_once(" = ")
                .is_some_and(|(target, _)| identifier(target) && target == value)
        });
    made && (at..to.min(lines.len())).all(|k| first_read(lines[k], name).is_none())
}

/// Whether the 1-based line `n` of `lines` reads `name` ([`first_read`]: outside strings, not an attribute).
fn line_reads(lines: &[&str], n: usize, name: &str) -> bool {
    n.checked_sub(1)
        .and_then(|k| lines.get(k))
        .is_some_and(|l| first_read(l, name).is_some())
}

/// Whether the 1-based line `n` is an `if` whose block is a lone `continue` or `break`.
fn guards_a_skip(lines: &[&str], n: usize) -> bool {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let (Some(head), Some(next)) = (n.checked_sub(1).and_then(|k| lines.get(k)), lines.get(n))
    else {
        return false;
    };
    let after = lines.get(n + 1).copied();
    head.trim_start().starts_with("if ")
        && matches!(next.trim(), "continue" | "break")
        && indent(next) > indent(head)
        && after.is_none_or(|a| a.trim().is_empty() || indent(a) <= indent(head))
}

/// Whether the place after the 1-based line `after` is the top of a function's body: only its `def` line, its
/// docstring and blank lines above it, up to the `def`.
fn first_in_function(lines: &[&str], after: usize) -> bool {
    let mut in_doc = false;
    for k in (0..after.min(lines.len())).rev() {
        let code = lines[k].trim();
        if code.starts_with("def ") && !in_doc {
            return true;
        }
        let quotes = code.matches("\"\"\"").count() + code.matches("'''").count();
        if quotes == 1 {
            in_doc = !in_doc;
        } else if !(in_doc || code.is_empty() || quotes == 2) {
            return false;
        }
    }
    false
}

/// Whether the update `added`, inserted after the 1-based line `theirs` instead of after `ours` (one place off,
/// across the update of another name), follows the order the two names were given their first values in.
fn in_start_order(lines: &[&str], ours: usize, theirs: usize, added: &str) -> bool {
    let between = if theirs == ours + 1 {
        ours
    } else if theirs + 1 == ours {
        theirs
    } else {
        return false;
    };
    let (Some(x), Some(y)) = (updated(added), lines.get(between).and_then(|l| updated(l))) else {
        return false;
    };
    // An object's attributes are started in `__init__`, not in the order a method's updates follow.
    if x.contains('.') || y.contains('.') {
        return false;
    }
    let upto = ours.min(theirs);
    let (Some(sx), Some(sy)) = (started(lines, x, upto), started(lines, y, upto)) else {
        return false;
    };
    // Ours goes before the other update when theirs goes after it, and the other way round.
    if sx == sy {
        return false;
    }
    (theirs > ours) == (sx > sy)
}

/// The name a statement updates, or the attribute (`self.sold`): `x += ...`, `x -= ...`, `x[k] = ...`,
/// `x.append(...)`, `x.add(...)`, `x.extend(...)`.
fn updated(line: &str) -> Option<&str> {
    let code = line.trim();
    let end = code
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(code.len());
    let (dotted, rest) = code.split_at(end);
    let named = |n: &str| !n.is_empty() && n.split('.').all(identifier);
    if [" += ", " -= ", " *= "]
        .iter()
        .any(|op| rest.starts_with(op))
        || rest.starts_with('[')
    {
        return named(dotted).then_some(dotted);
    }
    let name = [".append", ".add", ".extend"]
        .iter()
        .find_map(|m| dotted.strip_suffix(m))
        .filter(|_| rest.starts_with('('))?;
    named(name).then_some(name)
}

/// The 0-based line, before the 1-based line `upto`, that last gave `name` a first value (`name = ...`, or one of
/// the names of `a = b = 0`).
fn started(lines: &[&str], name: &str, upto: usize) -> Option<usize> {
    (0..upto.min(lines.len())).rev().find(|&k| {
        let code = lines[k].trim();
        let parts: Vec<&str> = code.split(" = ").collect();
        parts.len() >= 2
            && parts[..parts.len() - 1]
                .iter()
                .any(|t| t.split(',').any(|n| n.trim() == name))
    })
}

/// The other ways of writing a normalisation that passed as a line of its own (`text = text.lower()` or `x =
/// parse(x)`, inserted after the 1-based line `after`): folded into the line before when that binds the name
/// (`text = normalize(title).lower()`, a change of that line), or applied to each name the line after binds from
/// it (`amount, unit, name = text.split(maxsplit=2)`: `name = name.lower()` after it). Each as (1-based line,
/// whether a line goes after it, the line).
fn normalisation_twins(lines: &[&str], after: usize, added: &str) -> Vec<(usize, bool, String)> {
    let Some((name, prefix, suffix)) = normalisation(added) else {
        return Vec::new();
    };
    let indent = &added[..added.len() - added.trim_start().len()];
    let mut out = Vec::new();
    let same_depth = |l: &str| l.len() - l.trim_start().len() == indent.len();
    let assignment = |l: &str| {
        l.trim()
            .split_once(" = ")
            .filter(|(t, v)| !v.contains(" = ") && !t.contains(['[', '.', '(']))
            .map(|(t, v)| (t.to_string(), v.to_string()))
    };
    let before = after.checked_sub(1).and_then(|k| lines.get(k));
    if let Some((target, value)) = before
        .filter(|l| same_depth(l))
        .and_then(|l| assignment(l))
        .filter(|(t, _)| t == name)
    {
        let value = if suffix.starts_with('.') && !plain(&value) {
            format!("({value})")
        } else {
            value
        };
        out.push((
            after,
            false,
            format!("{indent}{target} = {prefix}{value}{suffix}"),
        ));
    }
    let next = lines.get(after);
    if let Some((targets, _)) = next
        .filter(|l| same_depth(l))
        .and_then(|l| assignment(l))
        .filter(|(_, v)| super::tokens(v).iter().any(|t| t == name))
    {
        for t in targets
            .split(',')
            .map(|t| t.trim().trim_matches(['(', ')', '[', ']']))
        {
            if identifier(t) && t != name {
                out.push((
                    after + 1,
                    true,
                    format!("{indent}{t} = {prefix}{t}{suffix}"),
                ));
            }
        }
    }
    out.extend(downstream(lines, after, name, (&prefix, &suffix)));
    out
}

/// The most lines of a function below a normalisation that [`downstream`] writes it into.
const MAX_DOWNSTREAM: usize = 3;

/// A normalisation of `name` inserted after the 1-based line `after`, written instead into the values the rest
/// of its function derives from the name (`for raw in text.split():` then `word = raw.strip(PUNCTUATION)`: `word =
/// raw.strip(PUNCTUATION).lower()`, or `word = word.lower()` after it), the fix written where the value is made
/// rather than first in the function. At most [`MAX_DOWNSTREAM`] lines, each as a change and as a line after it.
fn downstream(
    lines: &[&str],
    after: usize,
    name: &str,
    (prefix, suffix): (&str, &str),
) -> Vec<(usize, bool, String)> {
    let depth = |l: &str| l.len() - l.trim_start().len();
    let Some(def) = (0..after.min(lines.len()))
        .rev()
        .find(|&k| lines[k].trim_start().starts_with("def "))
    else {
        return Vec::new();
    };
    let mut derived = vec![name.to_string()];
    let reads =
        |code: &str, derived: &[String]| super::tokens(code).iter().any(|t| derived.contains(t));
    let mut out = Vec::new();
    let mut written = 0;
    for k in after..lines.len() {
        let line = lines[k];
        if line.trim().is_empty() {
            continue;
        }
        if depth(line) <= depth(lines[def]) || written == MAX_DOWNSTREAM {
            break;
        }
        let code = line.trim();
        let indent = &line[..depth(line)];
        // A value returned or tested as it came: the normalisation where it is read (`return cleaned.split()` to
        // `return cleaned.lower().split()`, `if word in STOPWORDS:` to `if word.lower() in STOPWORDS:`).
        let used = ["return ", "if ", "elif "]
            .iter()
            .any(|w| code.starts_with(w));
        let read_at = derived.iter().find_map(|d| first_read(line, d));
        if let Some(at) = read_at.filter(|_| used && written < MAX_DOWNSTREAM) {
            let (before, rest) = line.split_at(at);
            let n = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (read, after) = rest.split_at(n);
            out.push((
                k + 1,
                false,
                format!("{before}{prefix}{read}{suffix}{after}"),
            ));
            written += 1;
        }
        if let Some(header) = code.strip_prefix("for ").and_then(|c| c.strip_suffix(':')) {
            if let Some((targets, _)) = header
                .split_once(" in ")
                .filter(|(_, iterated)| reads(iterated, &derived))
            {
                derived.extend(targets.split(',').map(|t| t.trim().to_string()));
            }
            continue;
        }
        let Some((target, value)) = code.split_once(" = ") else {
            continue;
        };
        if !identifier(target) || target == name || value.contains(" = ") || !reads(value, &derived)
        {
            continue;
        }
        derived.push(target.to_string());
        let value = if suffix.starts_with('.') && !plain(value) {
            format!("({value})")
        } else {
            value.to_string()
        };
        out.push((
            k + 1,
            false,
            format!("{indent}{target} = {prefix}{value}{suffix}"),
        ));
        out.push((
            k + 1,
            true,
            format!("{indent}{target} = {prefix}{target}{suffix}"),
        ));
        written += 1;
    }
    out
}

/// The byte offset in `line` of the first read of the name `name` as a whole word, not after a `.`.
fn first_read(line: &str, name: &str) -> Option<usize> {
    reads(line, name).next()
}

/// The byte offsets in `text` of each read of the name `name` as a whole word, not after a `.`, never inside a
/// string literal (`"qty": qty` reads `qty` once).
fn reads(text: &str, name: &str) -> impl Iterator<Item = usize> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    // The strings blanked byte for byte, so an offset in `code` is the same offset in `text`.
    let code: String = text
        .chars()
        .zip(without_strings(text).chars())
        .flat_map(|(c, blank)| {
            let n = if blank == c { 0 } else { c.len_utf8() };
            std::iter::repeat_n(' ', n).chain((n == 0).then_some(c))
        })
        .collect();
    let hits: Vec<usize> = code
        .match_indices(name)
        .map(|(i, _)| i)
        .filter(|&i| {
            let before = code[..i].chars().next_back();
            let after = code[i + name.len()..].chars().next();
            !before.is_some_and(|c| word(c) || c == '.') && !after.is_some_and(word)
        })
        .collect();
    hits.into_iter()
}

/// A line that normalises one name in place, `x = x.strip().lower()`, `x = parse(x)` or
/// `x = " ".join(x.split())`: the name, and what goes before and after a value to normalise it the same way
/// (`("", ".strip().lower()")`, `("parse(", ")")`, `("\" \".join(", ".split())")`).
fn normalisation(line: &str) -> Option<(&str, String, String)> {
    let (target, value) = line.trim().split_once(" = ")?;
    if !identifier(target) {
        return None;
    }
    if let Some(rest) = value.strip_prefix(target) {
        return (rest.starts_with('.') && rest.ends_with(')'))
            .then(|| (target, String::new(), rest.to_string()));
    }
    let open = value.find('(')?;
    let callee = &value[..open];
    if value[open..] == format!("({target})") && callee.split('.').all(identifier) {
        return Some((target, format!("{callee}("), ")".to_string()));
    }
    // A text's parts joined again: `SEP.join(x.split())`.
    let joined = value.strip_suffix(&format!("({target}.split())"))?;
    let sep = joined.strip_suffix(".join")?;
    let quoted = sep.len() >= 2
        && (sep.starts_with('"') && sep.ends_with('"')
            || sep.starts_with('\'') && sep.ends_with('\''))
        && !sep[1..sep.len() - 1].contains(['"', '\'', '\\']);
    quoted.then(|| (target, format!("{joined}("), ".split())".to_string()))
}

/// A Python identifier.
fn identifier(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// An expression a method call may follow as it is: no space or operator outside its brackets and strings
/// (`normalize(title)`, `row["name"]`, `text`).
fn plain(expr: &str) -> bool {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for c in expr.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                c if depth == 0 && !(c.is_alphanumeric() || c == '_' || c == '.') => return false,
                _ => {}
            },
        }
    }
    depth == 0 && quote.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> BTreeMap<String, Option<PreImage>> {
        let pre = PreImage {
            text: text.into(),
            mode: crate::patch::MODE_REGULAR,
        };
        [("m.py".to_string(), Some(pre))].into()
    }

    fn at(line: usize, insert: bool) -> Fixed {
        Fixed {
            path: "m.py".into(),
            line,
            insert,
        }
    }

    const AVERAGE: &str = "def average(scores):\n    total = 0\n    count = 0\n    for s in scores:\n        if s is None:\n            continue\n        total += s\n    return total / count\n";

    #[test]
    fn the_places_next_to_a_pass_are_one_off_either_way_and_never_the_pass_itself() {
        let after = at(6, true);
        assert!(near(&after, (5, true)) && near(&after, (7, true)));
        assert!(near(&after, (6, false)) && near(&after, (7, false)));
        assert!(!near(&after, (6, true)) && !near(&after, (4, true)) && !near(&after, (5, false)));
        let change = at(6, false);
        assert!(near(&change, (5, false)) && near(&change, (7, false)));
        assert!(near(&change, (5, true)) && near(&change, (6, true)));
        assert!(
            !near(&change, (6, false)) && !near(&change, (7, true)) && !near(&change, (4, false))
        );
    }

    #[test]
    fn the_inserted_line_moves_one_place_up_and_down_and_unrun_mutants_of_the_places_next_follow() {
        let passed = with_inserted(AVERAGE, 6, "        count += 1");
        let unrun_near = with_line(AVERAGE, 7, "        total -= s");
        let unrun_far = with_line(AVERAGE, 2, "    total = 1");
        let failed_near = with_line(AVERAGE, 7, "        total *= s");
        let all: Vec<(String, String)> = [&failed_near, &passed, &unrun_near, &unrun_far]
            .iter()
            .map(|t| ("m.py".to_string(), t.to_string()))
            .collect();
        let verdicts = [Some(false), Some(true), None, None];
        let files = file(AVERAGE);
        let first = at(6, true);
        let added = passed_line(&files, &all, &verdicts, &first);
        assert_eq!(added, Some("        count += 1"));
        let tried: Vec<String> = mutants(&files, &all, &verdicts, &first, (added, None))
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            tried,
            [
                with_inserted(AVERAGE, 5, "        count += 1"),
                with_inserted(AVERAGE, 7, "        count += 1"),
                // One statement up, over the guard's block.
                with_inserted(AVERAGE, 4, "        count += 1"),
                unrun_near,
            ]
        );
    }

    #[test]
    fn an_update_ranks_on_the_side_of_the_update_beside_it_that_the_order_of_first_values_says() {
        let files = file(AVERAGE);
        // `count += 1` passed before `total += s` (after line 6) and after it (after line 7); `total` was started
        // first, so its update comes first too.
        let order = ordered(
            &files,
            &at(6, true),
            (Some("        count += 1"), None),
            vec![at(7, true)],
        );
        assert_eq!(order, [at(7, true), at(6, true)]);
        // Started the other way round, the first pass stays first.
        let swapped = AVERAGE.replace(
            "    total = 0\n    count = 0\n",
            "    count = 0\n    total = 0\n",
        );
        let order = ordered(
            &file(&swapped),
            &at(6, true),
            (Some("        count += 1"), None),
            vec![at(7, true)],
        );
        assert_eq!(order, [at(6, true), at(7, true)]);
        // Not an update, or started on one line: the first pass first.
        let order = ordered(
            &files,
            &at(6, true),
            (Some("        s = int(s)"), None),
            vec![at(7, true)],
        );
        assert_eq!(order, [at(6, true), at(7, true)]);
        let chained = AVERAGE.replace(
            "    total = 0\n    count = 0\n",
            "    total = count = 0\n\n",
        );
        let order = ordered(
            &file(&chained),
            &at(6, true),
            (Some("        count += 1"), None),
            vec![at(7, true)],
        );
        assert_eq!(order, [at(6, true), at(7, true)]);
        // A total beside a list's growth, and the growth beside the total's update, by the same order.
        let listed = AVERAGE
            .replace("    count = 0\n", "    kept = []\n")
            .replace("        total += s\n", "        kept.append(s)\n")
            .replace("total / count", "total / len(kept)");
        let order = ordered(
            &file(&listed),
            &at(7, true),
            (Some("        total += s"), None),
            vec![at(6, true)],
        );
        assert_eq!(order, [at(6, true), at(7, true)]);
        let grown = AVERAGE
            .replace("    count = 0\n", "    kept = []\n")
            .replace("total / count", "total / len(kept)");
        let order = ordered(
            &file(&grown),
            &at(7, true),
            (Some("        kept.append(s)"), None),
            vec![at(6, true)],
        );
        assert_eq!(order, [at(7, true), at(6, true)]);
    }

    #[test]
    fn an_update_before_a_guard_that_may_refuse_ranks_behind_its_twins_past_the_guard() {
        let shop = "class Till:\n    def sell(self, price):\n        if self.sold + price > LIMIT:\n            raise ValueError(\"over\")\n        if price > self.cash:\n            raise ValueError(\"short\")\n        self.cash -= price\n        return price\n";
        let lines: Vec<&str> = shop.lines().collect();
        let added = "        self.sold += price";
        // Past the guards and the update beside it, before the `return`; not for a line that updates nothing.
        assert_eq!(before_return(&lines, 4, added), Some(7));
        assert_eq!(before_return(&lines, 6, added), None);
        assert_eq!(before_return(&lines, 4, "        price = int(price)"), None);
        // Passed after the first guard, and past the second: the latest place past it first.
        let order = ordered(
            &file(shop),
            &at(4, true),
            (Some(added), None),
            vec![at(6, true), at(7, true)],
        );
        assert_eq!(order, [at(7, true), at(4, true), at(6, true)]);
        // No guard between: the first pass stays first.
        let order = ordered(
            &file(shop),
            &at(6, true),
            (Some(added), None),
            vec![at(7, true)],
        );
        assert_eq!(order, [at(6, true), at(7, true)]);
    }

    #[test]
    fn a_value_worked_out_just_before_its_return_is_folded_into_the_return_as_a_twin() {
        let text = "def staff(n):\n    needed = -(-n // 25)\n    return needed\n";
        let lines: Vec<&str> = text.lines().collect();
        let added = "    needed = max(needed, 2)";
        assert_eq!(
            folded_into_return(&lines, 2, added),
            Some((3, false, "    return max(needed, 2)".to_string()))
        );
        assert_eq!(folded_into_return(&lines, 1, added), None);
        let order = ordered(
            &file(text),
            &at(2, true),
            (Some(added), None),
            vec![at(3, false)],
        );
        assert_eq!(order, [at(2, true), at(3, false)]);
    }

    #[test]
    fn a_value_is_gathered_where_it_is_made_unless_the_block_between_reads_what_gathers_it() {
        let text = "def summary(rows):\n    totals = []\n    slow = []\n    for name, a, b in rows:\n        total = a + b\n        if total > 9:\n            slow.append(name)\n    return totals, slow\n";
        let added = "        totals.append(total)";
        let order = ordered(
            &file(text),
            &at(7, true),
            (Some(added), None),
            vec![at(5, true)],
        );
        assert_eq!(order, [at(5, true), at(7, true)]);
        // A block between that reads it: the first pass stays first.
        let reads = text.replace("if total > 9:", "if len(totals) > 9:");
        let order = ordered(
            &file(&reads),
            &at(7, true),
            (Some(added), None),
            vec![at(5, true)],
        );
        assert_eq!(order, [at(7, true), at(5, true)]);
    }

    #[test]
    fn a_fresh_start_inside_the_block_that_only_tests_the_name_ranks_behind_the_same_past_that_block()
     {
        let runs = "def group(stops):\n    runs = []\n    current = None\n    houses = []\n    for street, house in stops:\n        if street != current:\n            if houses:\n                runs.append((current, houses))\n            current = street\n        houses.append(house)\n    return runs\n";
        let added = "                houses = []";
        // The twin past the block: after `current = street`, at the `if`'s depth.
        let lines: Vec<&str> = runs.lines().collect();
        let past = Some((9, "            houses = []".to_string()));
        assert_eq!(past_its_test(&lines, 8, added), past);
        assert_eq!(
            past_its_test(&lines, 8, "                houses = list(runs)"),
            None
        );
        // `houses = []` passed after line 8, inside `if houses:`, and just past that block, after line 9.
        let order = ordered(
            &file(runs),
            &at(8, true),
            (Some(added), None),
            vec![at(9, true)],
        );
        assert_eq!(order, [at(9, true), at(8, true)]);
        // Not a fresh start, or a block that tests something else: the first pass stays first.
        let other = (Some("                houses = houses[1:]"), None);
        let order = ordered(&file(runs), &at(8, true), other, vec![at(9, true)]);
        assert_eq!(order, [at(8, true), at(9, true)]);
        let tested = runs.replace("if houses:", "if len(runs) < 9:");
        let order = ordered(
            &file(&tested),
            &at(8, true),
            (Some(added), None),
            vec![at(9, true)],
        );
        assert_eq!(order, [at(8, true), at(9, true)]);
    }

    #[test]
    fn a_guard_that_only_skips_turned_round_ranks_behind_the_line_its_block_was_missing() {
        let spell = "def longest(readings):\n    best = run = 0\n    for mm in readings:\n        if mm >= DRY:\n            continue\n        run += 1\n        best = max(best, run)\n    return best\n";
        // `if mm < DRY:` passed at line 4, and `run = 0` inserted after it: the insertion first.
        let order = ordered(&file(spell), &at(4, false), (None, None), vec![at(4, true)]);
        assert_eq!(order, [at(4, true), at(4, false)]);
        // A guard whose block does more than skip: the first pass first.
        let more = spell.replace(
            "            continue\n",
            "            run = 0\n            continue\n",
        );
        let order = ordered(&file(&more), &at(4, false), (None, None), vec![at(4, true)]);
        assert_eq!(order, [at(4, false), at(4, true)]);
    }

    #[test]
    fn a_change_that_leaves_a_local_never_read_is_seen() {
        let before = "def t(records):\n    rows = sorted(records)\n    return [r for r in rows]\n";
        assert!(leaves_unread(
            before,
            &before.replace("in rows]", "in records]")
        ));
        assert!(!leaves_unread(
            before,
            &before.replace("sorted(records)", "list(records)")
        ));
        // A parameter its function read, read no more; not one another function reads on.
        let due = "def due(hours, every=25):\n    return hours >= every\n\n\ndef late(every):\n    return every > 9\n";
        assert!(leaves_unread(
            due,
            &due.replace("hours >= every", "hours >= BLADES")
        ));
        assert!(!leaves_unread(
            due,
            &due.replace("hours >= every", "hours > every")
        ));
        assert!(!leaves_unread(due, &due.replace("every=25", "every=50")));
        // An attribute its constructor set, set no more.
        let stamp = "class S:\n    def __init__(self, face, worth):\n        self.face = face\n        self.worth = worth\n";
        assert!(leaves_unread(
            stamp,
            &stamp.replace("self.worth = worth", "self.face = worth")
        ));
        assert!(!leaves_unread(
            stamp,
            &stamp.replace("self.worth = worth", "self.worth = worth * 2")
        ));
    }

    #[test]
    fn a_change_that_only_turns_an_order_round_is_seen() {
        let before = "def use(p):\n    dates = sorted(p)\n    return dates[-1]\n";
        let turned = before.replace("sorted(p)", "sorted(p, reverse=True)");
        assert!(order_turned(before, &turned));
        assert!(!order_turned(&turned, before));
        assert!(order_turned(
            before,
            &before.replace("sorted(p)", "reversed(sorted(p))")
        ));
        assert!(order_turned(
            before,
            &before.replace("    return", "    dates.reverse()\n    return")
        ));
        // Reading the other end, or sorting, is no order turned.
        assert!(!order_turned(before, &before.replace("[-1]", "[0]")));
        // A slice of the first items taken from the other end, either way: mirrored; another index is not.
        let best = "def best(xs):\n    scores = sorted(xs)\n    return sum(scores[:3])\n";
        assert!(slice_mirrored(best, &best.replace("[:3]", "[-3:]")));
        assert!(slice_mirrored(&best.replace("[:3]", "[-3:]"), best));
        assert!(!slice_mirrored(best, &best.replace("[:3]", "[1:]")));
        assert!(!slice_mirrored(best, &best.replace("[:3]", "[:-3]")));
        // Values added up negated where a later line takes the least of them: the order turned too.
        let totals = "def most(finds):\n    totals = {}\n    for s, g in finds:\n        totals[s] = totals.get(s, 0) + g\n    return min(totals, key=totals.get)\n";
        let negated = totals.replace(") + g", ") - g");
        assert!(order_turned(totals, &negated));
        let stepped = totals.replace("] = totals.get(s, 0) + g", "] += g");
        assert!(order_turned(&stepped, &stepped.replace("+=", "-=")));
        // Not where nothing later orders by them, nor a `-` turned into `+`.
        let kept = totals.replace("min(totals, key=totals.get)", "totals");
        assert!(!order_turned(&kept, &kept.replace(") + g", ") - g")));
        assert!(!order_turned(&negated, totals));
        assert!(!order_turned(
            before,
            &before.replace("    return", "    dates.sort()\n    return")
        ));
    }

    #[test]
    fn a_normalisation_is_also_folded_into_the_line_that_binds_it_and_applied_to_the_names_bound_from_it()
     {
        let slug = [
            "def slug(title):",
            "    text = normalize(title)",
            "    return text",
        ];
        assert_eq!(
            normalisation_twins(&slug, 2, "    text = text.lower()"),
            [
                (2, false, "    text = normalize(title).lower()".to_string()),
                (3, false, "    return text.lower()".to_string()),
            ]
        );
        let joined = [
            "def find(name):",
            "    key = name.lower()",
            "    return BOOK.get(key)",
        ];
        assert_eq!(
            normalisation_twins(&joined, 2, "    key = \" \".join(key.split())"),
            [
                (
                    2,
                    false,
                    "    key = \" \".join(name.lower().split())".to_string()
                ),
                (
                    3,
                    false,
                    "    return BOOK.get(\" \".join(key.split()))".to_string()
                ),
            ]
        );
        // A name normalised where it is read: where it is bound too.
        let search = [
            "def search(books, query):",
            "    needle = query",
            "    return [b for b in books if needle in b.title.lower()]",
        ];
        let read = "    return [b for b in books if needle.lower() in b.title.lower()]";
        assert_eq!(
            upstream_twins(&search, 3, read),
            [
                (2, false, "    needle = query.lower()".to_string()),
                (2, true, "    needle = needle.lower()".to_string()),
            ]
        );
        // Not an attribute, nor anything but a call added after a name.
        assert!(upstream_twins(&search, 3, &read.replace("needle.lower()", "needle.x")).is_empty());
        assert!(upstream_twins(&search, 2, "    needle = query.title.lower()").is_empty());
        let sum = ["def f(a, b):", "    text = a + b", "    return text"];
        assert_eq!(
            normalisation_twins(&sum, 2, "    text = text.strip()"),
            [
                (2, false, "    text = (a + b).strip()".to_string()),
                (3, false, "    return text.strip()".to_string()),
            ]
        );
        let parse = [
            "def parse(text):",
            "    \"\"\"Parse an item.\"\"\"",
            "    amount, unit, name = text.split(maxsplit=2)",
            "    return name, amount",
        ];
        assert_eq!(
            normalisation_twins(&parse, 2, "    text = text.strip().lower()"),
            [
                (3, true, "    amount = amount.strip().lower()".to_string()),
                (3, true, "    unit = unit.strip().lower()".to_string()),
                (3, true, "    name = name.strip().lower()".to_string()),
            ]
        );
        assert_eq!(
            normalisation_twins(&parse, 2, "    text = clean(text)"),
            [
                (3, true, "    amount = clean(amount)".to_string()),
                (3, true, "    unit = clean(unit)".to_string()),
                (3, true, "    name = clean(name)".to_string()),
            ]
        );
        // Not a normalisation of one name in place: nothing.
        assert!(normalisation_twins(&parse, 2, "    total += 1").is_empty());
        assert!(normalisation_twins(&parse, 2, "    text = other.lower()").is_empty());
        assert!(
            !plain("a + b") && !plain("f(x) or y") && plain("row[\"a b\"]") && plain("f(a, b)")
        );
    }

    #[test]
    fn a_mutant_s_place_is_the_line_it_changed_or_the_one_it_inserted_after() {
        let before = "def f(x):\n    y = x\n    return y\n";
        assert_eq!(
            place_of(before, "def f(x):\n    y = -x\n    return y\n"),
            Some((2, false))
        );
        assert_eq!(
            place_of(before, "def f(x):\n    y = x\n    y += 1\n    return y\n"),
            Some((2, true))
        );
        // First in the body: after the `def` line.
        assert_eq!(
            place_of(
                before,
                "def f(x):\n    x = abs(x)\n    y = x\n    return y\n"
            ),
            Some((1, true))
        );
        // Before a lone `pass`: the placeholder changed.
        let stub = "def f(x):\n    pass\n";
        assert_eq!(
            place_of(stub, "def f(x):\n    return x\n    pass\n"),
            Some((2, false))
        );
        // Two lines changed apart, or the same text: no place.
        assert_eq!(
            place_of(before, "def g(x):\n    y = x\n    return x\n"),
            Some((1, false))
        );
        assert_eq!(place_of(before, before), None);
        assert_eq!(
            place_of(before, "def f(x):\n    a\n    b\n    y = x\n    return y\n"),
            None
        );
    }

    #[test]
    fn a_normalisation_first_in_a_function_is_also_written_where_the_value_is_made_returned_or_tested()
     {
        // Written where the rest of the function makes a value from it, too.
        let words = [
            "def words(text):",
            "    \"\"\"The words, lower case.\"\"\"",
            "    result = []",
            "    for raw in text.split():",
            "        word = raw.strip(PUNCTUATION)",
            "        result.append(word)",
            "    return result",
        ];
        let got = normalisation_twins(&words, 2, "    text = text.lower()");
        assert!(
            got.contains(&(
                5,
                false,
                "        word = raw.strip(PUNCTUATION).lower()".into()
            )),
            "{got:?}"
        );
        assert!(
            got.contains(&(5, true, "        word = word.lower()".into())),
            "{got:?}"
        );
        assert!(first_in_function(&words, 2) && !first_in_function(&words, 3));
        // Where it is returned or tested as it came, too.
        let tested = [
            "def keywords(text):",
            "    result = []",
            "    for word in text.split():",
            "        if word in STOPWORDS:",
            "            continue",
            "        result.append(word)",
            "    return result",
        ];
        let got = normalisation_twins(&tested, 1, "    text = text.lower()");
        assert!(
            got.contains(&(4, false, "        if word.lower() in STOPWORDS:".into())),
            "{got:?}"
        );
        let cleaned = [
            "def words(text):",
            "    cleaned = strip(text)",
            "    return cleaned.split()",
        ];
        let got = normalisation_twins(&cleaned, 2, "    cleaned = cleaned.lower()");
        assert!(
            got.contains(&(3, false, "    return cleaned.lower().split()".into())),
            "{got:?}"
        );
        // And a twin written there ranks before the pass first in the function.
        let text = words.join("\n") + "\n";
        let order = ordered(
            &file(&text),
            &at(2, true),
            (Some("    text = text.lower()"), None),
            vec![at(1, true), at(5, false)],
        );
        assert_eq!(order, [at(5, false), at(2, true), at(1, true)]);
        // Not a twin that converts the very name the first pass converted where it is read: that stays behind.
        let price = [
            "def price(height):",
            "    \"\"\"Heights arrive as text.\"\"\"",
            "    for top, p in RATES:",
            "        if height <= top:",
            "            return p",
        ];
        let text = price.join("\n") + "\n";
        let order = ordered(
            &file(&text),
            &at(2, true),
            (Some("    height = float(height)"), None),
            vec![at(4, false)],
        );
        assert_eq!(order, [at(2, true), at(4, false)]);
        // Nor the same line moved a statement down, past a block that never reads the name.
        let add = [
            "def add(items, item):",
            "    \"\"\"A new list; the original is kept.\"\"\"",
            "    if len(items) >= 3:",
            "        raise ValueError(\"items is full\")",
            "    items.append(item)",
        ];
        let text = add.join("\n") + "\n";
        let order = ordered(
            &file(&text),
            &at(2, true),
            (Some("    items = list(items)"), None),
            vec![at(4, true)],
        );
        assert_eq!(order, [at(2, true), at(4, true)]);
    }

    #[test]
    fn an_inserted_line_moves_a_statement_up_or_down_over_a_block() {
        let lines = [
            "def done(readings):",
            "    for g in readings:",
            "        if g > 1:",
            "            steady = 1",
            "        if steady >= 3:",
            "            return True",
            "    return False",
        ];
        // After `return True` (line 6) at the loop's depth: up over the `if` to after line 4; nothing down.
        assert_eq!(
            statements_apart(&lines, 6, "        previous = g"),
            [Some(4), None]
        );
        // After line 4: down over the `if` block to after line 6; up over the first `if` to after line 2.
        assert_eq!(
            statements_apart(&lines, 4, "        previous = g"),
            [Some(2), Some(6)]
        );
        // Down over the block below; after a plain line at its depth, the line-wise moves are enough.
        assert_eq!(
            statements_apart(&lines, 2, "        x = 1"),
            [None, Some(4)]
        );
        assert_eq!(statements_apart(&lines, 3, "        x = 1"), [None, None]);
    }

    #[test]
    fn a_tuple_normalised_at_once_is_normalised_a_name_at_a_time() {
        assert_eq!(
            each_of_a_tuple("    qty, price = float(qty), float(price)"),
            ["    qty = float(qty)", "    price = float(price)"]
        );
        // Where the parts are no normalisation of their own, or the counts differ: the line as it is.
        assert_eq!(each_of_a_tuple("    a, b = b, a"), ["    a, b = b, a"]);
        assert_eq!(
            each_of_a_tuple("    a, b = f(a, b)"),
            ["    a, b = f(a, b)"]
        );
        assert_eq!(each_of_a_tuple("    a = a.strip()"), ["    a = a.strip()"]);
        // Written where the value is returned: the name, never the key that spells it (nor in a text with a `£`).
        let parse = [
            "def parse(line):",
            "    item, qty = line.split(\",\")",
            "    return {\"£ qty\": qty, \"qty\": qty}",
        ];
        let got = normalisation_twins(&parse, 2, "    qty = float(qty)");
        let want = "    return {\"£ qty\": float(qty), \"qty\": qty}";
        assert!(got.contains(&(3, false, want.into())), "{got:?}");
    }

    #[test]
    fn a_change_that_wraps_what_a_line_assigns_is_also_made_as_a_line_of_its_own() {
        let lines = [
            "def parse(line):",
            "    fields = line.split(\";\")",
            "    return fields",
        ];
        let changed = "    fields = [part.strip() for part in line.split(\";\")]";
        assert_eq!(
            unfolded_twin(&lines, 2, changed),
            Some((
                2,
                true,
                "    fields = [part.strip() for part in fields]".into()
            ))
        );
        // Not a change of what it assigns, nor of another target.
        assert_eq!(
            unfolded_twin(&lines, 2, "    fields = line.split(\",\")"),
            None
        );
        assert_eq!(
            unfolded_twin(&lines, 2, "    parts = sorted(line.split(\";\"))"),
            None
        );
        assert_eq!(unfolded_twin(&lines, 3, "    return sorted(fields)"), None);
    }

    #[test]
    fn a_list_sorted_inside_the_loop_that_grows_it_ranks_behind_its_twin_after_the_loop() {
        let race = "def finishers(entries):\n    done = []\n    for entry in entries:\n        name, secs = entry\n        if secs:\n            done.append((secs, name))\n    return done\n";
        let lines: Vec<&str> = race.lines().collect();
        let added = "        done.sort()";
        assert_eq!(
            ordered_after_loop(&lines, 4, added),
            Some((6, "    done.sort()".to_string()))
        );
        // Not a sort, a list the loop does not grow, or already after the loop: nothing.
        assert_eq!(ordered_after_loop(&lines, 4, "        done.clear()"), None);
        assert_eq!(ordered_after_loop(&lines, 4, "        other.sort()"), None);
        assert_eq!(ordered_after_loop(&lines, 6, "    done.sort()"), None);
        let order = ordered(
            &file(race),
            &at(4, true),
            (Some(added), None),
            vec![at(6, true)],
        );
        assert_eq!(order, [at(6, true), at(4, true)]);
    }

    #[test]
    fn a_wrapped_value_ranks_behind_the_same_made_as_a_line_of_its_own() {
        let text = "def median(clocks):\n    times = [to_seconds(c) for c in clocks]\n    mid = len(times) // 2\n    return times[mid]\n";
        let lines: Vec<&str> = text.lines().collect();
        let sorted = "    times = sorted(to_seconds(c) for c in clocks)";
        assert!(sorted_whole(&lines, 2, sorted));
        assert!(!sorted_whole(
            &lines,
            2,
            "    times = [to_seconds(c) + 1 for c in clocks]"
        ));
        let order = ordered(
            &file(text),
            &at(2, false),
            (None, Some(sorted)),
            vec![at(2, true)],
        );
        assert_eq!(order, [at(2, true), at(2, false)]);
        // A change that wraps nothing the line assigns: the first pass stays first.
        let other = "    times = [to_seconds(c) for c in reversed(clocks)]";
        let order = ordered(
            &file(text),
            &at(2, false),
            (None, Some(other)),
            vec![at(2, true)],
        );
        assert_eq!(order, [at(2, false), at(2, true)]);
        // A value wrapped in a conversion, and its line of its own.
        let text = "def score(line):\n    score = line.strip()\n    return score\n";
        let order = ordered(
            &file(text),
            &at(2, false),
            (None, Some("    score = int(line.strip())")),
            vec![at(2, true)],
        );
        assert_eq!(order, [at(2, true), at(2, false)]);
        // Arithmetic on the value is no wrapping: the first pass stays first.
        let order = ordered(
            &file(text),
            &at(2, false),
            (None, Some("    score = line.strip() + 1")),
            vec![at(2, true)],
        );
        assert_eq!(order, [at(2, false), at(2, true)]);
    }
}
