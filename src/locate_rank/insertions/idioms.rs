//! The generic missing lines: where the probe runs every mutant in one run of the check
//! ([`crate::locate_rank::batch`]), it can afford, after every kind of omission it knows, the short statements a
//! routine fix adds, tried at every place of the functions the ranking points at: after each line the checks ran,
//! at each depth a new line may stand there. The statements are made of the function's own names, by what the
//! function does with them:
//! - a list it builds (`x = []`, `.append`, `.extend`, `sorted(...)`, `.split(...)`): `x.sort()`, `x.reverse()`,
//!   `x.sort(reverse=True)`, a list of pairs (`list(d.items())`, or one a `for` line walks as pairs:
//!   `for i, (name, _) in enumerate(ranked):`) sorted by its second item either way or largest
//!   first with ties by the other item (`(-pair[0], pair[1])`), and
//!   `x.append(v)` for the names of the loops around the place;
//! - a set (`x = set()`, `.add`): `x.add(v)` for the names of the loops around the place;
//! - a number it counts (`x += ...`, `x -= ...`, `x = 0`): `x += 1`, `x -= 1`, `x += e` for each `e` it is
//!   updated by elsewhere, its first value again (a count started afresh), and `x += p.f` for each field `f` the
//!   file reads of a parameter `p` elsewhere and this function never does (`balance += plan.deposit`);
//! - a parameter or a text it reads as it came (a name the file's other functions take as a text parameter
//!   included): `x = x.strip()`, `x.lower()`, `x.upper()`, both, and its runs of
//!   spaces collapsed (`" ".join(x.split())`), first in the function (and after a guard on it the function opens
//!   with, `if not code: return 0.0`) or right after the line that binds it; and
//!   the characters its docstring says a text has none of (`no spaces or dashes`), or else those the file's other
//!   functions write into a text they make (`code[:4] + "-" + code[4:]`), removed
//!   (`plate = plate.replace(" ", "").replace("-", "")`), right after the last line that binds it, else first;
//! - a row's field it converts in place (`row["made"] = date.fromisoformat(row["made"])`): the row's other keys
//!   converted to numbers right after (`row["kg"] = float(row["kg"])`); the rows of a `csv.DictReader` loop in a
//!   file that converts none converted first in the loop (`row["score"] = int(row["score"])`);
//! - a `csv.reader` it walks and never calls `next` on, where a docstring speaks of a heading row: that row
//!   skipped after the reader is bound (`next(reader, None)`);
//! - a list of records it walks, reads by position or slices: sorted by a field its docstring names or it reads;
//! - a list of dict records it walks and never sorts: sorted by the keys its docstring names, or the task says in
//!   a word of the docstring's stem (`urgency` for `most urgent first`), one or a pair (`(r["due"], not
//!   r["rush"])`);
//! - a difference it binds (`late = a - b`): clamped at zero right after (`late = max(late, 0)`);
//! - a list or a set parameter it changes in place (`.append`, `.add`): a copy first (`playlist = list(playlist)`);
//! - a dict it counts into (`x = {}`, `x[k] += ...`): the loop's names counted (`counts[name] += 1`);
//! - a parameter it does arithmetic or comparisons with: converted first (`tickets = int(tickets)`);
//! - a parameter it reads by position or measures (`scores[mid]`, `len(scores)`): sorted first
//!   (`scores = sorted(scores)`);
//! - a parameter it iterates twice (a generator is spent after once): a list first (`fillups = list(fillups)`);
//! - a list a loop walks whose body first computes a value from the item: sorted by that value before the loop;
//! - lines of text it walks and splits or strips: the blank ones dropped just before the loop and first in the
//!   function (`lines = [line for line in lines if line.strip()]`).
//!
//! Pure: lines in, lines out.

use std::collections::HashSet;

use super::super::{defines, is_name, tokens};
use super::{
    Def, block_below, code_of, code_with_strings, ends_flow, first_word, indent_of, ran_at,
};
use crate::locate_rank::executed::Reach;
use crate::locate_rank::mutants::RETURNS_NEW_TEXT;

/// The most lines written for one function.
const MAX_PER_DEF: usize = 400;

/// The most functions written for.
const MAX_DEFS: usize = 4;

/// Normalisations of a text, as `x = x<suffix>`.
const TEXT_FIXES: &[&str] = &[
    ".strip()",
    ".lower()",
    ".upper()",
    ".strip().lower()",
    ".strip().upper()",
    ".strip().title()",
];

/// The values a text `x` is normalised to: each of [`TEXT_FIXES`], then its runs of spaces collapsed to one
/// (`" ".join(x.split())`, a name pasted with a double space).
fn text_fixes(x: &str) -> impl Iterator<Item = String> + '_ {
    TEXT_FIXES
        .iter()
        .map(move |fix| format!("{x}{fix}"))
        .chain([
            format!("\" \".join({x}.split())"),
            format!("\" \".join({x}.split()).title()"),
            format!("\" \".join({x}.lower().split())"),
        ])
}

/// The characters a docstring may say a text has none of, by the words that name them.
const SEPARATORS: &[(&[&str], &str)] = &[
    (&["space", "spaces", "whitespace", "blank", "blanks"], " "),
    (&["dash", "dashes", "hyphen", "hyphens"], "-"),
    (&["underscore", "underscores"], "_"),
    (&["dot", "dots", "period", "periods"], "."),
    (&["slash", "slashes"], "/"),
    (&["comma", "commas"], ","),
    (&["colon", "colons"], ":"),
    (&["apostrophe", "apostrophes"], "'"),
];

/// The separators the file's other functions write into a text they make (`code[:4] + "-" + code[4:]`), in the
/// order [`SEPARATORS`] has them: a text that comes back in (`redeem(typed)`) holds them and a lookup of the bare
/// text misses it.
fn separators_joined(lines: &[&str], d: &Def) -> Vec<&'static str> {
    let joined = |c: &str| {
        lines.iter().enumerate().any(|(i, l)| {
            !d.body.contains(&i)
                && [format!("+ \"{c}\" +"), format!("+ '{c}' +")]
                    .iter()
                    .any(|p| l.contains(p.as_str()))
        })
    };
    SEPARATORS
        .iter()
        .map(|(_, c)| *c)
        .filter(|c| *c != " " && joined(c))
        .collect()
}

/// The characters the docstring of `d` (its prose lines before `first_code`) says a text has none of or drops
/// (`no spaces or dashes`, `without hyphens`, `spaces removed`), in the order [`SEPARATORS`] has them.
fn separators_said(lines: &[&str], d: &Def, first_code: usize) -> Vec<&'static str> {
    let doc: String = d
        .body
        .iter()
        .filter(|&&b| b < first_code)
        .map(|&b| lines[b].to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = doc
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let denied = words.iter().any(|w| {
        matches!(
            *w,
            "no" | "without" | "removed" | "stripped" | "dropped" | "ignoring" | "ignored"
        )
    });
    if !denied {
        return Vec::new();
    }
    SEPARATORS
        .iter()
        .filter(|(named, _)| named.iter().any(|n| words.contains(n)))
        .map(|(_, c)| *c)
        .collect()
}

/// A text `x` with the characters `cut` removed: all of them, then each alone when there are several.
fn separator_fixes(x: &str, cut: &[&str]) -> Vec<String> {
    if cut.is_empty() {
        return Vec::new();
    }
    let all: String = cut
        .iter()
        .map(|c| format!(".replace({c:?}, \"\")"))
        .collect();
    let mut out = vec![format!("{x}{all}")];
    if cut.len() > 1 {
        out.extend(cut.iter().map(|c| format!("{x}.replace({c:?}, \"\")")));
    }
    out
}

/// The generic insertions (0-based line after which, the line) for the functions holding the 0-based lines
/// `near`, in the order those lines come (at most [`MAX_DEFS`]); `prose`: which lines are docstrings or comments;
/// `reach`: what the checks ran (a place after a line they never reached is left out).
pub(in crate::locate_rank) fn of_defs(
    lines: &[&str],
    prose: &[bool],
    reach: Option<&[Reach]>,
    near: &[usize],
    task: &str,
) -> Vec<(usize, String)> {
    let defs = Def::all(lines);
    let mut chosen: Vec<&Def> = Vec::new();
    for &k in near {
        // The innermost function holding the line.
        let holder = defs
            .iter()
            .filter(|d| d.body.contains(&k))
            .min_by_key(|d| d.body.len());
        if let Some(d) = holder.filter(|d| !chosen.iter().any(|c| std::ptr::eq(*c, *d))) {
            chosen.push(d);
        }
        if chosen.len() == MAX_DEFS {
            break;
        }
    }
    let texts = text_parameters(lines, &defs);
    let mut out = Vec::new();
    for d in chosen {
        let mut mine = of_def(lines, prose, reach, d, &texts);
        mine.extend(entry_taken(lines, prose, d, &defs));
        mine.extend(state_advanced(lines, d, &defs));
        mine.extend(parts_converted(lines, d));
        mine.extend(fields_never_set(lines, prose, d));
        mine.extend(answer_missing(lines, prose, d));
        mine.extend(counterpart_added(lines, prose, d, &defs));
        mine.extend(sorted_by_key(lines, prose, d, task));
        mine.truncate(MAX_PER_DEF);
        out.extend(mine);
    }
    out
}

/// What a function does with its names: the lists, the sets, the counted numbers (with what each is updated by
/// and its first value) and the texts it builds or reads.
#[derive(Default)]
struct Kinds {
    lists: Vec<String>,
    sets: Vec<String>,
    counted: Vec<(String, Vec<String>, Option<String>)>,
    texts: Vec<String>,
    /// Dicts it counts into (`x[k] += ...`, `x = {}`, `defaultdict(int)`, `Counter()`), and lists of counts
    /// (`[0] * 24`).
    counts: Vec<String>,
    /// Parameters it does arithmetic or comparisons with (`tickets * PRICE`, `tickets > 0`).
    numbers: Vec<String>,
    /// Parameters it reads by position (`scores[mid]`) or measures (`len(scores)`).
    sequences: Vec<String>,
    /// Each `in p` of a parameter `p` it iterates (`for x in p`, `... for x in p)`), once an occurrence.
    iterated: Vec<String>,
    /// Lists of pairs it builds (`list(d.items())`, `list(zip(a, b))`): sorted by their second item.
    pairs: Vec<String>,
    /// `p.field` for each parameter `p` and each field the file reads of a name `p` elsewhere but this function
    /// never does (`plan.deposit`): what a counted number may be missing.
    fields: Vec<String>,
    /// The characters its docstring says a text has none of ([`separators_said`]).
    separators: Vec<&'static str>,
    /// The texts its body binds (`plate = plate.upper()`): a further normalisation goes after that line, not first.
    rebound: Vec<String>,
}

impl Kinds {
    fn of(lines: &[&str], d: &Def) -> Kinds {
        let mut k = Kinds::default();
        let push = push_once;
        for &b in &d.body {
            let code = code_of(lines[b]);
            let t = tokens(&code);
            let rhs_at = t.iter().position(|x| x == "=");
            // `name = <value>`: what the value is.
            if let (Some(1), Some(name)) = (rhs_at, t.first().filter(|n| is_name(n))) {
                let rhs: Vec<&str> = t[2..].iter().map(String::as_str).collect();
                let text = code.split_once('=').map_or("", |(_, r)| r).trim();
                match rhs.as_slice() {
                    // A count for each of a range of numbers (`counts = [0] * 24`).
                    ["[", "0", "]", "*", ..] => push(&mut k.counts, name),
                    ["[", ..] | ["list", "(", ..] | ["sorted", "(", ..] => {
                        push(&mut k.lists, name);
                        if text.contains(".items()") || text.contains("zip(") {
                            push(&mut k.pairs, name);
                        }
                    }
                    ["set", "(", ")"] => push(&mut k.sets, name),
                    ["{", "}"]
                    | ["dict", "(", ")"]
                    | ["defaultdict", "(", "int", ")"]
                    | ["Counter", "(", ")"] => {
                        push(&mut k.counts, name);
                    }
                    [n] if n.chars().all(|c| c.is_ascii_digit() || c == '.') => {
                        counted(&mut k.counted, name, None, Some(text.to_string()));
                    }
                    _ if rhs.contains(&"split") => push(&mut k.lists, name),
                    _ if rhs
                        .iter()
                        .any(|r| matches!(*r, "strip" | "lower" | "upper")) =>
                    {
                        push(&mut k.texts, name);
                    }
                    _ => {}
                }
            }
            k.walked_as_pairs(&t);
            // `a, b = [p.strip() for p in line.split(";")]`: the parts of a text are texts.
            if let Some(eq) = t.iter().position(|x| x == "=")
                && eq > 1
                && t[..eq].iter().any(|x| x == ",")
                && t[eq..]
                    .iter()
                    .any(|x| matches!(x.as_str(), "split" | "strip" | "partition"))
            {
                for n in t[..eq].iter().filter(|n| is_name(n)) {
                    push(&mut k.texts, n);
                }
            }
            // `name += <value>`: a counted number, and what it is updated by.
            if let (Some(op), Some(name)) = (t.get(1), t.first().filter(|n| is_name(n)))
                && matches!(op.as_str(), "+=" | "-=")
            {
                let by = code.split_once(op.as_str()).map_or("", |(_, r)| r).trim();
                if !by.is_empty() {
                    counted(&mut k.counted, name, Some(format!("{op} {by}")), None);
                }
            }
            // `x[...] += ...`: a dict counted into.
            if let Some(name) = t.first().filter(|n| is_name(n))
                && t.get(1).is_some_and(|b| b == "[")
                && t.iter().any(|x| x == "+=")
            {
                push(&mut k.counts, name);
            }
            k.parameter_uses(d, &t);
            for w in t.windows(3) {
                if w[1] != "." || !is_name(&w[0]) {
                    continue;
                }
                match w[2].as_str() {
                    "append" | "extend" | "insert" => push(&mut k.lists, &w[0]),
                    "add" | "discard" => push(&mut k.sets, &w[0]),
                    "strip" | "lower" | "upper" | "replace" | "split" | "startswith"
                    | "endswith" | "isdigit" | "isalpha" => push(&mut k.texts, &w[0]),
                    _ => {}
                }
            }
        }
        // A text the function reads as it came: every parameter but `self` and `cls` may be one.
        let mut params: Vec<&String> = d.params.iter().collect();
        params.sort();
        for p in params {
            if !matches!(p.as_str(), "self" | "cls") {
                push(&mut k.texts, p);
            }
        }
        k.fields = unread_fields(lines, d);
        k.lists.retain(|n| d.bound.contains(n));
        k.sets.retain(|n| d.bound.contains(n));
        k.texts.retain(|n| d.bound.contains(n));
        k.counts.retain(|n| d.bound.contains(n));
        k
    }

    /// The parameters the tokens `t` of one line do arithmetic or comparisons with, or read by position or
    /// measure.
    fn parameter_uses(&mut self, d: &Def, t: &[String]) {
        let push = push_once;
        // A parameter in arithmetic or a comparison with a number or a name.
        for w in t.windows(2) {
            let op = |x: &str| {
                matches!(
                    x,
                    "*" | "/" | "//" | "%" | "-" | "+" | "<" | ">" | "<=" | ">="
                )
            };
            if d.params.contains(&w[0]) && op(&w[1]) || op(&w[0]) && d.params.contains(&w[1]) {
                let p = if d.params.contains(&w[0]) {
                    &w[0]
                } else {
                    &w[1]
                };
                push(&mut self.numbers, p);
            }
        }
        // A parameter iterated: once more each time.
        for w in t.windows(2) {
            if w[0] == "in" && d.params.contains(&w[1]) {
                self.iterated.push(w[1].clone());
            }
        }
        // A parameter read by position or measured: a sequence.
        for (i, w) in t.iter().enumerate() {
            let indexed = t.get(i + 1).is_some_and(|n| n == "[");
            let measured = i >= 2 && t[i - 1] == "(" && t[i - 2] == "len";
            if d.params.contains(w) && (indexed || measured) {
                push(&mut self.sequences, w);
            }
        }
    }
}

/// The parameters of `d` but `self` and `cls`, in sorted order.
fn sorted_params(d: &Def) -> Vec<&String> {
    let mut params: Vec<&String> = d
        .params
        .iter()
        .filter(|p| !matches!(p.as_str(), "self" | "cls"))
        .collect();
    params.sort();
    params
}

/// `p.field` for each parameter `p` of `d` and each field the file's other lines read of a name `p` (not a
/// method: no call follows) that `d`'s own body never reads, in the order the file first reads them.
fn unread_fields(lines: &[&str], d: &Def) -> Vec<String> {
    let params = sorted_params(d);
    let fields_in = |k: usize| {
        let t = tokens(&code_of(lines[k]));
        let mut out = Vec::new();
        for (i, w) in t.windows(3).enumerate() {
            let called = t.get(i + 3).is_some_and(|n| n == "(");
            let after_dot = i > 0 && t[i - 1] == ".";
            if w[1] == "." && is_name(&w[2]) && !called && !after_dot && params.contains(&&w[0]) {
                out.push(format!("{}.{}", w[0], w[2]));
            }
        }
        out
    };
    let own: HashSet<String> = d.body.iter().flat_map(|&b| fields_in(b)).collect();
    let mut out = Vec::new();
    for k in (0..lines.len()).filter(|k| !d.body.contains(k)) {
        for f in fields_in(k) {
            if !own.contains(&f) {
                push_once(&mut out, &f);
            }
        }
    }
    out
}

/// The parameters the file's functions call a text's methods on (`email.rsplit("@", 1)`, `name.strip()`).
fn text_parameters(lines: &[&str], defs: &[Def]) -> HashSet<String> {
    let mut out = HashSet::new();
    for d in defs {
        for t in d.tokens(lines) {
            for w in t.windows(3) {
                let text_method = matches!(
                    w[2].as_str(),
                    "strip"
                        | "lstrip"
                        | "rstrip"
                        | "lower"
                        | "upper"
                        | "split"
                        | "rsplit"
                        | "partition"
                        | "rpartition"
                        | "startswith"
                        | "endswith"
                        | "replace"
                );
                if w[1] == "." && text_method && d.params.contains(&w[0]) {
                    out.insert(w[0].clone());
                }
            }
        }
    }
    out
}

/// `n` added to `v` unless it is there.
fn push_once(v: &mut Vec<String>, n: &str) {
    if !v.iter().any(|x| x == n) {
        v.push(n.to_string());
    }
}

/// Record `name` as counted: `by` one of its updates, `first` its first value.
fn counted(
    list: &mut Vec<(String, Vec<String>, Option<String>)>,
    name: &str,
    by: Option<String>,
    first: Option<String>,
) {
    let at = match list.iter().position(|(n, _, _)| n == name) {
        Some(at) => at,
        None => {
            list.push((name.to_string(), Vec::new(), None));
            list.len() - 1
        }
    };
    let entry = &mut list[at];
    if let Some(by) = by.filter(|b| !entry.1.contains(b)) {
        entry.1.push(by);
    }
    if entry.2.is_none() {
        entry.2 = first;
    }
}

/// The last of the lines `d` opens with (from its first code line `first_code`) that each normalise another
/// parameter than `p` through a call and never read `p` (`key = class_key(class_name)`), if any.
fn after_normalisations(lines: &[&str], d: &Def, first_code: usize, p: &str) -> Option<usize> {
    let at = d.body.iter().position(|&b| b == first_code)?;
    let mut last = None;
    for &b in &d.body[at..] {
        if lines[b].trim().is_empty() {
            continue;
        }
        let t = tokens(&code_of(lines[b]));
        let normalises = indent_of(lines[b]) == d.indent
            && t.len() > 3
            && is_name(&t[0])
            && t[1] == "="
            && t[0] != p
            && t.iter().any(|x| x == "(")
            && !t.iter().any(|x| x == p)
            && t[2..].iter().any(|x| d.params.contains(x));
        if !normalises {
            break;
        }
        last = Some(b);
    }
    last
}

/// The lines that go first in the function `d` (after its header or its docstring, before its first code line
/// `first_code`): a text parameter stripped and cased, a parameter used as a number converted, a passed list or
/// set copied, an iterable iterated twice made a list, a sequence read by position sorted (after a guard the
/// function opens with, then before it).
fn first_in_function(
    lines: &[&str],
    d: &Def,
    kinds: &Kinds,
    first_code: usize,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // First in the function: after its header or its docstring.
    let top = (0..first_code)
        .rev()
        .find(|&k| !lines[k].trim().is_empty())
        .unwrap_or(first_code);
    // A text the function cuts into parts on its first line (`item, amount = line.split()`) is normalised in its
    // parts, after that line ([`statements`]), not whole first.
    let first = tokens(&code_of(lines[first_code]));
    let cut = |p: &String| {
        first.iter().position(|x| x == "=").is_some_and(|eq| {
            first[..eq].contains(&",".to_string())
                && first[eq..]
                    .windows(3)
                    .any(|w| w[0] == *p && w[1] == "." && w[2] == "split")
        })
    };
    let guard = guard_end(lines, d, first_code);
    for p in kinds.texts.iter().filter(|p| !cut(p)) {
        if d.params.contains(p) {
            // Beside the normalisations of other parameters the function opens with, after them; and after a
            // guard the function opens with on the text itself (`if not code: return 0.0`: `None` has no
            // `.strip()`).
            let at = after_normalisations(lines, d, first_code, p).unwrap_or(top);
            let guarded = guard.filter(|&g| g != at && first.contains(p));
            for place in [Some(at), guarded].into_iter().flatten() {
                for fixed in text_fixes(p) {
                    out.push((place, format!("{}{p} = {fixed}", d.indent)));
                }
            }
            if !kinds.rebound.contains(p) {
                for fixed in separator_fixes(p, &kinds.separators) {
                    out.push((top, format!("{}{p} = {fixed}", d.indent)));
                }
            }
        }
    }
    // Lines of text the caller passed, each split or stripped in a loop: the blank ones dropped, just before the
    // loop, then first in the function (`lines = [line for line in lines if line.strip()]`).
    for (at, x, p) in lines_walked(lines, d) {
        let kept = format!("{}{p} = [{x} for {x} in {p} if {x}.strip()]", d.indent);
        for place in [at, top] {
            if !out.contains(&(place, kept.clone())) {
                out.push((place, kept.clone()));
            }
        }
    }
    // A number that came as text: converted first.
    for p in d
        .params
        .iter()
        .filter(|p| !matches!(p.as_str(), "self" | "cls"))
    {
        if kinds.numbers.contains(p) {
            for make in ["int", "float"] {
                out.push((top, format!("{}{p} = {make}({p})", d.indent)));
            }
        }
    }
    // A list or a set the caller passed, changed in place: a copy first.
    for (list, make) in [(&kinds.lists, "list"), (&kinds.sets, "set")] {
        for p in list.iter().filter(|p| d.params.contains(*p)) {
            out.push((top, format!("{}{p} = {make}({p})", d.indent)));
        }
    }
    // An iterable the caller passed, iterated twice (a generator is empty the second time): a list first.
    let mut twice: Vec<&String> = kinds
        .iterated
        .iter()
        .filter(|p| kinds.iterated.iter().filter(|q| q == p).count() > 1)
        .filter(|p| !kinds.lists.contains(*p))
        .collect();
    twice.sort();
    twice.dedup();
    for p in twice {
        out.push((top, format!("{}{p} = list({p})", d.indent)));
    }
    // A sequence read by position as it came: put in order first, after a guard the function opens with
    // (`if not prices: raise ...`), then before it.
    for p in kinds
        .sequences
        .iter()
        .filter(|p| !matches!(p.as_str(), "self" | "cls"))
    {
        for at in guard.into_iter().chain([top]) {
            out.push((at, format!("{}{p} = sorted({p})", d.indent)));
        }
    }
    out
}

/// A dict parameter whose entry the function checks against a number parameter (`if store.get(part, 0) < qty:
/// return False`) and never changes, where another function of the file writes the same parameter's entries
/// (`store[part] = store.get(part, 0) + qty`): the entry taken from or added to after the check (`store[part] -=
/// qty`), else first in the function.
fn entry_taken(lines: &[&str], prose: &[bool], d: &Def, defs: &[Def]) -> Vec<(usize, String)> {
    let code: Vec<usize> = d
        .body
        .iter()
        .copied()
        .filter(|&b| prose.get(b) != Some(&true) && !code_of(lines[b]).trim().is_empty())
        .collect();
    let Some(&first_code) = code.first() else {
        return Vec::new();
    };
    let toks: Vec<Vec<String>> = code.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
    let writes = |t: &[String], x: &str| {
        t.first().is_some_and(|f| f == x)
            && t.get(1).is_some_and(|b| b == "[")
            && t.iter().any(|o| matches!(o.as_str(), "=" | "+=" | "-="))
    };
    let compared = |t: &[String], n: &str| {
        t.iter()
            .any(|o| matches!(o.as_str(), "<" | ">" | "<=" | ">="))
            && t.iter().any(|o| o == n)
    };
    let mut params: Vec<&String> = d.params.iter().collect();
    params.sort();
    let mut out = Vec::new();
    for x in &params {
        if toks.iter().any(|t| writes(t, x)) {
            continue;
        }
        let elsewhere = defs.iter().filter(|o| !std::ptr::eq(*o, d)).any(|o| {
            o.params.contains(*x)
                && o.body
                    .iter()
                    .any(|&b| writes(&tokens(&code_of(lines[b])), x))
        });
        if !elsewhere {
            continue;
        }
        let top = (0..first_code)
            .rev()
            .find(|&k| !lines[k].trim().is_empty())
            .unwrap_or(first_code);
        let at = guard_end(lines, d, first_code).unwrap_or(top);
        for t in &toks {
            // `x.get(k` or `x[k]`, k a parameter, in a comparison with another parameter.
            let key = t.windows(4).find_map(|w| {
                let got = w[0] == **x && w[1] == "." && w[2] == "get" && w[3] == "(";
                let index = w[0] == **x && w[1] == "[" && w[3] == "]";
                if !(got || index) {
                    return None;
                }
                let k = if got {
                    t.iter().skip_while(|o| *o != "(").nth(1)?
                } else {
                    &w[2]
                };
                d.params.contains(k).then(|| k.clone())
            });
            let Some(k) = key else {
                continue;
            };
            for n in params
                .iter()
                .filter(|n| **n != *x && ***n != k && compared(t, n))
            {
                for op in ["-=", "+="] {
                    out.push((at, format!("{}{x}[{k}] {op} {n}", d.indent)));
                }
            }
        }
    }
    out
}

/// The code lines of `d` (0-based), docstrings, comments and blank lines left out.
fn code_lines(lines: &[&str], prose: &[bool], d: &Def) -> Vec<usize> {
    d.body
        .iter()
        .copied()
        .filter(|&b| prose.get(b) != Some(&true) && !code_of(lines[b]).trim().is_empty())
        .collect()
}

/// The place a last statement goes in `d` (its `code` lines): before the `return` it ends with, else after its
/// last line.
fn before_the_end(lines: &[&str], d: &Def, code: &[usize]) -> Option<usize> {
    let (&last, rest) = code.split_last()?;
    let returns = first_word(lines[last]) == "return" && indent_of(lines[last]) == d.indent;
    if returns {
        rest.last().copied()
    } else {
        Some(last)
    }
}

/// A field of one of the file's record classes that no line of the file ever sets (`.last_test =`, `.next_ticket
/// +=`), on a record `d` takes as a parameter and reads another field of (`alarm.history.append(...)`): set from
/// another parameter (`alarm.last_test = when`), or stepped where its default is a number (`book.next_ticket +=
/// 1`), just before the function's last `return`.
fn fields_never_set(lines: &[&str], prose: &[bool], d: &Def) -> Vec<(usize, String)> {
    let text = lines.join("\n");
    let classes = crate::locate_rank::mutants::record_fields(&text);
    let code = code_lines(lines, prose, d);
    let Some(at) = before_the_end(lines, d, &code) else {
        return Vec::new();
    };
    let set = |f: &str| {
        lines.iter().any(|l| {
            let t = tokens(&code_of(l));
            t.windows(3)
                .any(|w| w[0] == "." && w[1] == f && matches!(w[2].as_str(), "=" | "+=" | "-="))
        })
    };
    // A field's default as written in its class (`next_ticket: int = 100`).
    let numeric = |f: &str| {
        lines.iter().any(|l| {
            let Some((name, rest)) = l.trim().split_once(':') else {
                return false;
            };
            let default = rest.split_once('=').map(|(_, v)| v.trim());
            name.trim() == f
                && default.is_some_and(|v| {
                    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                })
        })
    };
    let toks: Vec<Vec<String>> = code.iter().map(|&b| tokens(&code_of(lines[b]))).collect();
    let params = sorted_params(d);
    let mut out = Vec::new();
    for p in &params {
        let read = |f: &String| {
            toks.iter().any(|t| {
                t.windows(3)
                    .any(|w| w[0] == **p && w[1] == "." && w[2] == *f)
            })
        };
        for class in classes.iter().filter(|c| c.iter().any(read)) {
            for f in class.iter().filter(|f| !set(f)) {
                if numeric(f) {
                    out.push((at, format!("{}{p}.{f} += 1", d.indent)));
                }
                for q in params.iter().filter(|q| *q != p) {
                    out.push((at, format!("{}{p}.{f} = {q}", d.indent)));
                }
            }
        }
    }
    out
}

/// What another function of the file takes out of a collection (`item["out"].remove(member)`) that `d` reads
/// (`if member in item["out"]`) and never adds to, with the same name for the item among its parameters: added
/// just before `d`'s last `return` (`item["out"].append(member)`; `.add` for `.discard`).
fn counterpart_added(
    lines: &[&str],
    prose: &[bool],
    d: &Def,
    defs: &[Def],
) -> Vec<(usize, String)> {
    let code = code_lines(lines, prose, d);
    let Some(at) = before_the_end(lines, d, &code) else {
        return Vec::new();
    };
    let mine: Vec<&str> = code.iter().map(|&b| lines[b].trim()).collect();
    let mut out = Vec::new();
    for o in defs.iter().filter(|o| !std::ptr::eq(*o, d)) {
        for &b in &o.body {
            let line = lines[b].trim();
            let Some((expr, rest)) = line.rsplit_once('.') else {
                continue;
            };
            let Some((method, arg)) = rest.strip_suffix(')').and_then(|r| r.split_once('(')) else {
                continue;
            };
            let add = match method {
                "remove" => "append",
                "discard" => "add",
                _ => continue,
            };
            let reads = mine.iter().any(|m| m.contains(expr));
            let adds = mine.iter().any(|m| m.contains(&format!("{expr}.{add}(")));
            if is_name(arg) && d.params.contains(arg) && reads && !adds && !expr.contains(' ') {
                out.push((at, format!("{}{expr}.{add}({arg})", d.indent)));
            }
        }
    }
    out
}

/// An `if` block at the depth of a function that ends by answering `True` (or `False`), its block going on to the
/// end: the other answer at the end of the block (`return False` where a declined card still starts a trip).
fn answer_missing(lines: &[&str], prose: &[bool], d: &Def) -> Vec<(usize, String)> {
    let code = code_lines(lines, prose, d);
    let Some(&last) = code.last() else {
        return Vec::new();
    };
    let other = match code_of(lines[last]).trim() {
        "return True" => "return False",
        "return False" => "return True",
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (i, &b) in code.iter().enumerate() {
        if indent_of(lines[b]) != d.indent || first_word(lines[b]) != "if" {
            continue;
        }
        let block: Vec<usize> = code[i + 1..]
            .iter()
            .copied()
            .take_while(|&n| indent_of(lines[n]).len() > d.indent.len())
            .collect();
        let Some(&end) = block.last() else {
            continue;
        };
        if !ends_flow(lines[end]) {
            out.push((end, format!("{}{other}", indent_of(lines[block[0]]))));
        }
    }
    out
}

/// Text methods beside those that return a new text ([`RETURNS_NEW_TEXT`]): a name read through one is a text, not
/// a number that came as text.
const TEXT_TESTS: &[&str] = &[
    "split",
    "startswith",
    "endswith",
    "isdigit",
    "isalpha",
    "partition",
    "join",
    "format",
];

/// The parts of a text a line unpacks (`colour, weight, grams, per_100 = [p.strip() for p in line.split(",")]`),
/// left as text where they are numbers: right after the line, the parts after the first (a label) that the
/// function never reads as text (`weight.lower()`) converted together (`grams, per_100 = int(grams),
/// int(per_100)`), then all of them where the first is no label either (`hg, ag = int(hg), int(ag)`), then each
/// after the first alone, to `int` and to `float`.
fn parts_converted(lines: &[&str], d: &Def) -> Vec<(usize, String)> {
    let toks = d.tokens(lines);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(eq) = t.iter().position(|x| x == "=") else {
            continue;
        };
        let names: Vec<&String> = t[..eq].iter().filter(|x| *x != ",").collect();
        let unpacks = names.len() >= 2
            && names.iter().all(|n| is_name(n))
            && t[..eq].iter().filter(|x| *x == ",").count() + 1 == names.len()
            && t[eq..]
                .iter()
                .any(|x| matches!(x.as_str(), "split" | "partition" | "rsplit"));
        if !unpacks {
            continue;
        }
        let as_text = |n: &str| {
            toks[i + 1..].iter().any(|u| {
                u.windows(3).any(|w| {
                    let m = w[2].as_str();
                    w[0] == n
                        && w[1] == "."
                        && (RETURNS_NEW_TEXT.contains(&m) || TEXT_TESTS.contains(&m))
                })
            })
        };
        let numbers: Vec<&String> = names[1..].iter().copied().filter(|n| !as_text(n)).collect();
        let b = d.body[i];
        let pad = indent_of(lines[b]);
        // The first too where it is no label either (`hg, ag = score.split("-")`, both goals).
        let all: Vec<&String> = names
            .iter()
            .copied()
            .filter(|n| !as_text(n) && !n.starts_with('_'))
            .collect();
        let together = [numbers.clone(), all].into_iter().filter(|g| g.len() >= 2);
        let together: Vec<Vec<&String>> = together.fold(Vec::new(), |mut v, g| {
            if !v.contains(&g) {
                v.push(g);
            }
            v
        });
        for make in ["int", "float"] {
            for group in &together {
                let left: Vec<&str> = group.iter().map(|n| n.as_str()).collect();
                let right: Vec<String> = group.iter().map(|n| format!("{make}({n})")).collect();
                out.push((
                    b,
                    format!("{pad}{} = {}", left.join(", "), right.join(", ")),
                ));
            }
        }
        for n in &numbers {
            for make in ["int", "float"] {
                out.push((b, format!("{pad}{n} = {make}({n})")));
            }
        }
    }
    out
}

/// The most steps a dict entry of state is advanced by.
const MAX_STEPS: usize = 8;

/// A dict started before a loop (`free_at = {g: OPEN for g in groomers}`) that the loop reads by a key it binds
/// (`start = free_at[groomer]`) and never writes: the entry advanced right after the last line that reads it, by
/// one, by a name the loop unpacks, or by the file's own one-parameter function of one
/// (`free_at[groomer] += duration(services)`), at most [`MAX_STEPS`].
fn state_advanced(lines: &[&str], d: &Def, defs: &[Def]) -> Vec<(usize, String)> {
    let toks = d.tokens(lines);
    let converters: Vec<&String> = defs
        .iter()
        .filter(|o| o.params.len() == 1 && !std::ptr::eq(*o, d) && !o.params.contains("self"))
        .map(|o| &o.name)
        .collect();
    let mut out = Vec::new();
    for lp in d.loops(lines, &toks, &["for"]) {
        let head = &toks[lp.at];
        let targets: Vec<&String> = head
            .iter()
            .skip(1)
            .take_while(|t| *t != "in")
            .filter(|t| is_name(t))
            .collect();
        let dicts = toks[..lp.at].iter().filter_map(|t| match t.as_slice() {
            [x, eq, open, ..] if eq == "=" && open == "{" && is_name(x) => Some(x),
            _ => None,
        });
        let block: Vec<(usize, &Vec<String>)> = lp
            .block
            .iter()
            .filter_map(|&b| Some((b, &toks[d.body.iter().position(|&x| x == b)?])))
            .collect();
        for dict in dicts {
            let written = block.iter().any(|(_, t)| {
                t.first() == Some(dict)
                    && t.get(1).is_some_and(|b| b == "[")
                    && t.iter().any(|o| matches!(o.as_str(), "=" | "+=" | "-="))
            });
            if written {
                continue;
            }
            let mut read = None;
            for (b, t) in &block {
                let opens = t.last().is_some_and(|c| c == ":");
                for w in t.windows(4) {
                    if !opens && w[0] == *dict && w[1] == "[" && is_name(&w[2]) && w[3] == "]" {
                        read = Some((*b, w[2].clone()));
                    }
                }
            }
            let Some((b, k)) = read else {
                continue;
            };
            let mut steps = vec!["1".to_string()];
            for v in &targets {
                steps.extend(converters.iter().map(|f| format!("{f}({v})")));
                steps.push(v.to_string());
            }
            steps.truncate(MAX_STEPS);
            for step in steps {
                out.push((b, format!("{}{dict}[{k}] += {step}", indent_of(lines[b]))));
            }
        }
    }
    out
}

/// The most other keys converted beside one.
const MAX_SIBLING_KEYS: usize = 4;

/// The key of five tokens read with their strings that index by a quoted word (`[`, `"`, `kg`, `"`, `]`).
fn quoted_key(w: &[String]) -> Option<String> {
    let [open, q1, k, q2, close] = w else {
        return None;
    };
    (open == "[" && q1 == q2 && (q1 == "\"" || q1 == "'") && is_name(k) && close == "]")
        .then(|| k.clone())
}

/// [`siblings_converted`] in every function of the file, not only those the ranking points at: the rows are often
/// read in one function (`read_batches`) and compared in another (`max(rows, key=lambda r: r["jars"])`).
pub(in crate::locate_rank) fn siblings_converted_anywhere(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    defs.iter()
        .flat_map(|d| siblings_converted(lines, d))
        .collect()
}

/// A row's field converted in place (`row["made"] = date.fromisoformat(row["made"])`) beside others the file reads
/// of rows and never converts: each of them converted to a number right after (`row["kg"] = float(row["kg"])`), at
/// most [`MAX_SIBLING_KEYS`]. The lines are read with their strings (the keys are strings).
fn siblings_converted(lines: &[&str], d: &Def) -> Vec<(usize, String)> {
    let mut keys: Vec<String> = Vec::new();
    for l in lines {
        let t = tokens(l);
        for w in t.windows(5) {
            if let Some(k) = quoted_key(w).filter(|k| !keys.contains(k)) {
                keys.push(k);
            }
        }
    }
    let mut out = Vec::new();
    let mut converted: Vec<String> = Vec::new();
    let mut places: Vec<(usize, String, String)> = Vec::new();
    for &b in &d.body {
        let t = tokens(lines[b]);
        if t.len() < 9
            || !is_name(&t[0])
            || t[6] != "="
            || !is_name(&t[7])
            || !t[8..].contains(&"(".to_string())
        {
            continue;
        }
        let Some(a) = quoted_key(&t[1..6]) else {
            continue;
        };
        // The same field read in the value: converted in place.
        if t[8..]
            .windows(6)
            .any(|w| w[0] == t[0] && quoted_key(&w[1..]).as_ref() == Some(&a))
        {
            converted.push(a);
            places.push((b, t[0].clone(), t[2].clone()));
        }
    }
    for (b, row, q) in places {
        let others = keys
            .iter()
            .filter(|k| !converted.contains(k))
            .take(MAX_SIBLING_KEYS);
        for k in others {
            for make in ["float", "int"] {
                out.push((
                    b,
                    format!(
                        "{}{row}[{q}{k}{q}] = {make}({row}[{q}{k}{q}])",
                        indent_of(lines[b])
                    ),
                ));
            }
        }
    }
    out
}

/// A heading row a `csv.reader` hands over as a row of data: where a function binds a reader (`reader =
/// csv.reader(...)`), walks it, never calls `next` on it, and its docstring or the module's speaks of a heading,
/// a header or the first row naming the columns, that row skipped just after the binding (`next(reader, None)`).
pub(in crate::locate_rank) fn headings_never_skipped(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let speaks = |l: &str| {
        let l = l.to_lowercase();
        [
            "heading",
            "header",
            "column",
            "title row",
            "first row",
            "first line",
        ]
        .iter()
        .any(|w| l.contains(w))
    };
    let module = lines.iter().take(3).any(|l| speaks(l));
    let mut out = Vec::new();
    for d in defs {
        let docstring = d.body.first().is_some_and(|&b| {
            let code = lines[b].trim_start();
            (code.starts_with("\"\"\"") || code.starts_with("'''")) && speaks(code)
        });
        if !(docstring || module) {
            continue;
        }
        let body: Vec<Vec<String>> = d.body.iter().map(|&c| tokens(&code_of(lines[c]))).collect();
        for (&b, t) in d.body.iter().zip(&body) {
            let reader = match t.as_slice() {
                [r, eq, csv, dot, f, open, ..]
                    if eq == "=" && csv == "csv" && dot == "." && f == "reader" && open == "(" =>
                {
                    r
                }
                _ => continue,
            };
            let walked = body.iter().any(|t| {
                t.first().is_some_and(|f| f == "for")
                    && t.windows(2).any(|w| w[0] == "in" && w[1] == *reader)
            });
            let skipped = body.iter().any(|t| {
                t.windows(3)
                    .any(|w| w[0] == "next" && w[1] == "(" && w[2] == *reader)
            });
            if walked && !skipped {
                out.push((b, format!("{}next({reader}, None)", indent_of(lines[b]))));
            }
        }
    }
    out
}

/// Rows a loop reads from a `csv.DictReader` (`for row in csv.DictReader(f):`) in a file that converts none of its
/// keys: each key the file reads off a record, those it orders, compares or adds up first, converted to a number
/// first in the loop (`row["score"] = int(row["score"])`), at most [`MAX_SIBLING_KEYS`]. A CSV field is always text:
/// `"9" > "18"`. The lines are read with their strings (the keys are strings).
pub(in crate::locate_rank) fn read_rows_never_converted(
    lines: &[&str],
    defs: &[Def],
) -> Vec<(usize, String)> {
    let numeric = |t: &[String]| {
        t.iter().any(|w| {
            matches!(
                w.as_str(),
                "<" | ">" | "<=" | ">=" | "+" | "-" | "*" | "/" | "key" | "sum" | "max" | "min"
            )
        })
    };
    let mut keys: Vec<(bool, String)> = Vec::new();
    for l in lines {
        let t = tokens(l);
        if t.windows(2)
            .any(|w| matches!(w[0].as_str(), "int" | "float") && w[1] == "(")
            && t.windows(5).any(|w| quoted_key(w).is_some())
        {
            // A field converted somewhere: the rows are not all text.
            return Vec::new();
        }
        for k in t.windows(5).filter_map(quoted_key) {
            match keys.iter_mut().find(|(_, o)| *o == k) {
                Some((text_only, _)) => *text_only &= !numeric(&t),
                None => keys.push((!numeric(&t), k)),
            }
        }
    }
    keys.sort_by_key(|(text_only, _)| *text_only);
    // The quotes the file reads its keys with.
    let single = lines.iter().any(|l| l.contains("['")) && !lines.iter().any(|l| l.contains("[\""));
    let q = if single { "'" } else { "\"" };
    let mut out = Vec::new();
    for d in defs {
        for (i, &b) in d.body.iter().enumerate() {
            let t = tokens(lines[b]);
            // A whole loop header, its block below it.
            let rows = t.len() > 4
                && t[0] == "for"
                && is_name(&t[1])
                && t[2] == "in"
                && t.iter().any(|w| w == "DictReader")
                && code_of(lines[b]).trim_end().ends_with(':');
            let block = block_below(lines, &d.body[i + 1..], indent_of(lines[b]).len());
            let Some(&inner) = block.first().filter(|_| rows) else {
                continue;
            };
            let row = &t[1];
            for (_, k) in keys.iter().take(MAX_SIBLING_KEYS) {
                for make in ["int", "float"] {
                    out.push((
                        b,
                        format!(
                            "{}{row}[{q}{k}{q}] = {make}({row}[{q}{k}{q}])",
                            indent_of(lines[inner])
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// The most fields a list of records is sorted by.
const MAX_SORT_FIELDS: usize = 4;

/// The fields a list of records `d` handles may be sorted by ([`sorted_by_field`]): those its docstring names, those
/// it reads off a name, then the other fields of the classes it reads a field of (`cheapest first` names none), at
/// most [`MAX_SORT_FIELDS`]; and the first field of each of those classes, to break ties by.
fn sort_fields(lines: &[&str], d: &Def, first_code: usize) -> (Vec<String>, Vec<String>) {
    let classes = crate::locate_rank::mutants::record_fields(&lines.join("\n"));
    let doc: Vec<String> = d
        .body
        .iter()
        .filter(|&&b| b < first_code)
        .flat_map(|&b| tokens(lines[b]))
        .collect();
    let code: Vec<Vec<String>> = d
        .body
        .iter()
        .filter(|&&b| b >= first_code)
        .map(|&b| tokens(&code_of(lines[b])))
        .collect();
    let read = |f: &String| {
        code.iter()
            .any(|t| t.windows(2).any(|w| w[0] == "." && w[1] == *f))
    };
    let all = || classes.iter().flatten();
    let mut fields: Vec<String> = Vec::new();
    let mut push = |f: &String| {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    };
    all().filter(|f| doc.contains(f)).for_each(&mut push);
    all().filter(|f| read(f)).for_each(&mut push);
    let mut ties: Vec<String> = Vec::new();
    for class in classes.iter().filter(|c| c.iter().any(read)) {
        ties.extend(class.first().cloned());
        class.iter().for_each(&mut push);
    }
    fields.truncate(MAX_SORT_FIELDS);
    (fields, ties)
}

/// A list of records (the file's dataclasses, `NamedTuple`s and `namedtuple`s) that `d` walks, reads by position
/// or slices, put in the order of one of their fields: those its docstring names first (`earliest drink_by
/// first`), then those it reads off a name (`cur.start < prev.end`), at most [`MAX_SORT_FIELDS`], either way. A
/// parameter is sorted first in the function (`bookings = sorted(bookings, key=lambda r: r.start)`), a list a
/// call gave right after that line (`due.sort(key=lambda r: r.drink_by)`).
fn sorted_by_field(
    lines: &[&str],
    d: &Def,
    kinds: &Kinds,
    first_code: usize,
) -> Vec<(usize, String)> {
    let (fields, ties) = sort_fields(lines, d, first_code);
    if fields.is_empty() {
        return Vec::new();
    }
    let keys = |x: &str| -> Vec<String> {
        let mut out = Vec::new();
        for f in fields.iter().filter(|_| !x.is_empty()) {
            out.push(format!("key=lambda r: r.{f}"));
            out.push(format!("key=lambda r: r.{f}, reverse=True"));
            // Ties broken by the record's first field (its number or name).
            for t in ties.iter().filter(|t| *t != f) {
                out.push(format!("key=lambda r: (r.{f}, r.{t})"));
            }
        }
        out
    };
    let mut out = Vec::new();
    let top = (0..first_code)
        .rev()
        .find(|&k| !lines[k].trim().is_empty())
        .unwrap_or(first_code);
    let mut params: Vec<&String> = kinds
        .sequences
        .iter()
        .chain(&kinds.iterated)
        .filter(|p| d.params.contains(*p) && !matches!(p.as_str(), "self" | "cls"))
        .collect();
    params.sort();
    params.dedup();
    // A list a call or a comprehension gave (`due = ready(bottles, year)`), then sliced, walked or returned:
    // sorted where it is made, before a parameter is sorted first in the function.
    for (i, &b) in d.body.iter().enumerate().filter(|&(_, &b)| b >= first_code) {
        let t = tokens(&code_of(lines[b]));
        let [x, eq, f, open, ..] = t.as_slice() else {
            continue;
        };
        let call = is_name(f) && open == "(" && f != "sorted";
        if eq != "=" || !is_name(x) || !(call || f == "[") {
            continue;
        }
        let used = d.body[i + 1..].iter().any(|&n| {
            let u = tokens(&code_of(lines[n]));
            u.windows(2).any(|w| {
                (matches!(w[0].as_str(), "in" | "return") && w[1] == *x)
                    || (w[0] == *x && w[1] == "[")
            })
        });
        if used {
            for key in keys(x) {
                out.push((b, format!("{}{x}.sort({key})", indent_of(lines[b]))));
            }
        }
    }
    for p in params {
        for key in keys(p) {
            out.push((top, format!("{}{p} = sorted({p}, {key})", d.indent)));
        }
    }
    out
}

/// The most keys a list of dict records is sorted by ([`sorted_by_key`]).
const MAX_SORT_KEYS: usize = 3;

/// Words saying a list comes in an order.
const ORDER_WORDS: &[&str] = &[
    "first",
    "order",
    "sorted",
    "earliest",
    "latest",
    "oldest",
    "newest",
    "ascending",
    "descending",
];

/// A word without its ending (`calling`, `called`: `call`), where at least three letters stay.
fn stem(word: &str) -> &str {
    ["ing", "ed", "es", "s"]
        .iter()
        .find_map(|e| word.strip_suffix(e).filter(|w| w.len() >= 3))
        .unwrap_or(word)
}

/// Whether two words share a stem: their first five letters (`urgency` and `urgent`).
fn same_stem(a: &str, b: &str) -> bool {
    a.len() >= 5 && b.len() >= 5 && a.as_bytes()[..5] == b.as_bytes()[..5]
}

/// A list of dict records (`job["due"]`) that `d` walks, returns or copies and never sorts, where its docstring or
/// the `task` speaks of an order ([`ORDER_WORDS`]), put in that order (`earliest due day first, rush jobs first on
/// the same day`): by each key the file reads off a record that the docstring or the task names, or that the
/// task gives a value (`urgency 3`) and the docstring says or speaks of in a word of its stem (`most urgent
/// first`) while no code of the file reads it, at most [`MAX_SORT_KEYS`], either way; and by each pair of them in
/// that order, the second also negated where the file reads it as a truth (`if job["rush"]`: `(r["due"], not
/// r["rush"])`). A list a call or a comprehension gave (`queue = list(jobs)`) is sorted right after that line, a
/// parameter the function walks first in the function.
fn sorted_by_key(lines: &[&str], prose: &[bool], d: &Def, task: &str) -> Vec<(usize, String)> {
    let code: Vec<usize> = d
        .body
        .iter()
        .copied()
        .filter(|&b| prose.get(b) != Some(&true))
        .collect();
    let Some(&first_code) = code.first() else {
        return Vec::new();
    };
    let sorts = code.iter().any(|&b| {
        let c = code_of(lines[b]);
        c.contains("sorted(") || c.contains(".sort(")
    });
    if sorts {
        return Vec::new();
    }
    let doc: Vec<String> = d
        .body
        .iter()
        .filter(|&&b| b < first_code)
        .flat_map(|&b| tokens(lines[b]))
        .map(|w| w.to_lowercase())
        .collect();
    let orders = record_orders(lines, &sort_keys(lines, &doc, task));
    let mut out = Vec::new();
    for (i, &b) in code.iter().enumerate() {
        let t = tokens(&code_of(lines[b]));
        let [x, eq, f, open, ..] = t.as_slice() else {
            continue;
        };
        let made = (is_name(f) && open == "(") || f == "[";
        if eq != "=" || !is_name(x) || !made {
            continue;
        }
        let walked = code[i + 1..].iter().any(|&n| {
            let u = tokens(&code_of(lines[n]));
            u.windows(2)
                .any(|w| (w[0] == "in" || w[0] == "return") && w[1] == *x)
        });
        if walked {
            for o in &orders {
                out.push((b, format!("{}{x}.sort({o})", indent_of(lines[b]))));
            }
        }
    }
    let top = (0..first_code)
        .rev()
        .find(|&k| !lines[k].trim().is_empty())
        .unwrap_or(first_code);
    let mut params: Vec<&String> = d.params.iter().filter(|p| *p != "self").collect();
    params.sort();
    for p in params {
        let walked = code.iter().any(|&n| {
            let u = tokens(&code_of(lines[n]));
            u.windows(3)
                .any(|w| w[0] == "in" && w[1] == *p && w[2] == ":")
        });
        if walked {
            for o in &orders {
                out.push((top, format!("{}{p} = sorted({p}, {o})", d.indent)));
            }
        }
    }
    out
}

/// The keys a list of dict records may be sorted by ([`sorted_by_key`]), with the quote each is written in: none
/// unless the docstring's words `doc` or the `task` speak of an order; else the keys the file reads off a record
/// that either names, then the words the task gives a value that the docstring says or speaks of in a word of
/// their stem and no code of the file reads, at most [`MAX_SORT_KEYS`].
fn sort_keys(lines: &[&str], doc: &[String], task: &str) -> Vec<(String, char)> {
    let mut read: Vec<(String, char)> = Vec::new();
    for line in lines {
        for (_, key, q) in super::stored::subscripts(code_with_strings(line)) {
            if !read.iter().any(|(k, _)| *k == key) {
                read.push((key, q));
            }
        }
    }
    let q = read.first().map_or('"', |(_, q)| *q);
    let said: Vec<String> = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .collect();
    if !doc
        .iter()
        .chain(&said)
        .any(|w| ORDER_WORDS.contains(&w.as_str()))
    {
        return Vec::new();
    }
    let mut keys: Vec<(String, char)> = Vec::new();
    for w in doc.iter().chain(&said) {
        if let Some(k) = read.iter().find(|(k, _)| k == w)
            && !keys.contains(k)
        {
            keys.push(k.clone());
        }
    }
    // A key a word of its name speaks of in another form (`last_called` where the docstring says `calling`).
    for w in doc.iter().chain(&said).filter(|w| w.len() >= 4) {
        let spoken = read.iter().find(|(k, _)| {
            k.contains('_')
                && k.split('_')
                    .any(|part| part.len() >= 4 && stem(part) == stem(w))
        });
        if let Some(k) = spoken
            && !keys.contains(k)
        {
            keys.push(k.clone());
        }
    }
    // A word the task gives a value (`urgency 3`, `due 2024-06-12`) that the docstring says or speaks of.
    let names: HashSet<String> = lines.iter().flat_map(|l| tokens(&code_of(l))).collect();
    let valued = task
        .split_whitespace()
        .zip(task.split_whitespace().skip(1))
        .filter(|(_, v)| {
            v.trim_start_matches(['(', '\'', '"'])
                .starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|(w, _)| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        });
    for w in valued {
        let fresh = w.len() >= 3 && is_name(&w) && !names.contains(&w);
        let spoken = doc.iter().any(|x| *x == w || same_stem(x, &w));
        if fresh && spoken && !keys.iter().any(|(k, _)| *k == w) {
            keys.push((w, q));
        }
    }
    keys.truncate(MAX_SORT_KEYS);
    keys
}

/// The sort arguments for `keys` ([`sort_keys`]): each key either way, then each pair in order, the second also
/// negated where the file reads it as a truth (`if job["rush"]`, `... if job["rush"] else ...`).
fn record_orders(lines: &[&str], keys: &[(String, char)]) -> Vec<String> {
    let truth = |(k, q): &(String, char)| {
        let sub = format!("[{q}{k}{q}]");
        lines.iter().any(|l| {
            let c = code_with_strings(l);
            c.match_indices(&sub).any(|(at, _)| {
                let after = c[at + sub.len()..].trim_start();
                let before = c[..at].trim_end();
                let name = before.rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_'));
                let before = name.map_or("", |n| before[..=n].trim_end());
                after.starts_with(':')
                    || after.starts_with("else")
                    || before.ends_with(" if")
                    || before.ends_with("not")
            })
        })
    };
    let field = |(k, q): &(String, char)| format!("r[{q}{k}{q}]");
    let mut orders: Vec<String> = Vec::new();
    for k in keys {
        orders.push(format!("key=lambda r: {}", field(k)));
        orders.push(format!("key=lambda r: {}, reverse=True", field(k)));
    }
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            orders.push(format!("key=lambda r: ({}, {})", field(a), field(b)));
            if truth(b) {
                orders.push(format!("key=lambda r: ({}, not {})", field(a), field(b)));
            }
        }
    }
    orders
}

/// A list a loop of `d` walks whose body first computes a value from the item (`for track in pool:` then `length
/// = parse_length(track["length"])`): the list sorted by that value just before the loop, either way
/// (`pool.sort(key=lambda track: parse_length(track["length"]))`), a loop that picks the shortest first.
fn sorted_by_loop_key(lines: &[&str], d: &Def) -> Vec<(usize, String)> {
    let toks = d.tokens(lines);
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate().skip(1) {
        let [f, v, i, x, c] = t.as_slice() else {
            continue;
        };
        if f != "for" || i != "in" || c != ":" || !is_name(v) || !d.bound.contains(x) {
            continue;
        }
        let Some(&next) = d.body.get(k + 1) else {
            continue;
        };
        // The value as written (its strings kept), with no comment after it.
        let Some((target, value)) = lines[next].trim().split_once(" = ") else {
            continue;
        };
        let reads = tokens(&code_of(value)).iter().any(|w| w == v);
        if !is_name(target) || !reads || value.contains(" = ") || value.contains('#') {
            continue;
        }
        let indent = indent_of(lines[d.body[k]]);
        let key = format!("key=lambda {v}: {}", value.trim());
        out.push((d.body[k - 1], format!("{indent}{x}.sort({key})")));
        out.push((
            d.body[k - 1],
            format!("{indent}{x}.sort({key}, reverse=True)"),
        ));
    }
    out
}

/// Each loop of `d` over a parameter (`for line in lines[1:]:`) whose name the body splits or strips as text: the
/// 0-based line before the loop, the loop's name and the parameter's.
fn lines_walked(lines: &[&str], d: &Def) -> Vec<(usize, String, String)> {
    let toks = d.tokens(lines);
    let texts = |x: &String| {
        toks.iter().any(|t| {
            t.windows(3).any(|w| {
                w[0] == *x && w[1] == "." && matches!(w[2].as_str(), "split" | "strip" | "rsplit")
            })
        })
    };
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let (Some("for"), Some(x), Some("in"), Some(p)) = (
            t.first().map(String::as_str),
            t.get(1),
            t.get(2).map(String::as_str),
            t.get(3),
        ) else {
            continue;
        };
        let Some(before) = k.checked_sub(1).map(|j| d.body[j]) else {
            continue;
        };
        if is_name(x) && d.params.contains(p) && texts(x) {
            out.push((before, x.clone(), p.clone()));
        }
    }
    out
}

/// The last line (0-based) of the guard `d` opens with: an `if` block at the first code line `first_code` that
/// ends by leaving (`raise`, `return`), with more code after it.
fn guard_end(lines: &[&str], d: &Def, first_code: usize) -> Option<usize> {
    if !code_of(lines[first_code]).trim_start().starts_with("if ") {
        return None;
    }
    let depth = indent_of(lines[first_code]).len();
    let at = d.body.iter().position(|&b| b == first_code)?;
    let block: Vec<usize> = d.body[at + 1..]
        .iter()
        .copied()
        .filter(|&b| !lines[b].trim().is_empty())
        .take_while(|&b| indent_of(lines[b]).len() > depth)
        .collect();
    let end = *block.last()?;
    let more = d
        .body
        .iter()
        .any(|&b| b > end && !lines[b].trim().is_empty());
    (ends_flow(lines[end]) && more).then_some(end)
}

/// The texts of `texts` that one of the `code` lines binds again (`plate = plate.upper()`).
fn rebound(lines: &[&str], code: &[usize], texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .filter(|x| {
            code.iter()
                .any(|&b| tokens(&code_of(lines[b])).get(..2) == Some(&[x.to_string(), "=".into()]))
        })
        .cloned()
        .collect()
}

/// A difference a line binds that may fall below zero, clamped at it: `late = a - b` gives `late = max(late, 0)`.
fn clamped(code: &str) -> Option<String> {
    let t = tokens(code);
    let [x, eq, first, rest @ ..] = t.as_slice() else {
        return None;
    };
    let difference = eq == "=" && is_name(x) && first != "-" && rest.iter().any(|r| r == "-");
    difference.then(|| format!("{x} = max({x}, 0)"))
}

/// The generic insertions of one function.
fn of_def(
    lines: &[&str],
    prose: &[bool],
    reach: Option<&[Reach]>,
    d: &Def,
    texts: &HashSet<String>,
) -> Vec<(usize, String)> {
    let mut kinds = Kinds::of(lines, d);
    // A name the file's other functions take as a text parameter (`for email in raw:` beside `def domain(email)`
    // that splits it) is one here too.
    let mut named: Vec<&String> = d.bound.iter().filter(|n| texts.contains(*n)).collect();
    named.sort();
    for n in named {
        push_once(&mut kinds.texts, n);
    }
    let code: Vec<usize> = d
        .body
        .iter()
        .copied()
        .filter(|&b| prose.get(b) != Some(&true))
        .collect();
    let Some(&first_code) = code.first() else {
        return Vec::new();
    };
    kinds.separators = separators_said(lines, d, first_code);
    if kinds.separators.is_empty() {
        kinds.separators = separators_joined(lines, d);
    }
    kinds.rebound = rebound(lines, &code, &kinds.texts);
    let width = |k: usize| indent_of(lines[k]).len();
    let mut out = first_in_function(lines, d, &kinds, first_code);
    let mut first_in_block = Vec::new();
    let mut depth = 0i32;
    for (i, &k) in code.iter().enumerate() {
        let line = code_of(lines[k]);
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        // Only after a whole statement the checks ran.
        if depth != 0 || line.trim_end().ends_with('\\') || !ran_at(reach, k) {
            continue;
        }
        let next = code.get(i + 1).map_or(d.indent.len(), |&n| width(n));
        let opens = line.trim_end().ends_with(':');
        let levels: Vec<usize> = if opens {
            if next > width(k) {
                vec![next]
            } else {
                Vec::new()
            }
        } else {
            open_levels(lines, &code[..=i], d.indent.len())
                .into_iter()
                .filter(|&w| w >= next && !(w == width(k) && ends_flow(lines[k])))
                .collect()
        };
        let bound: HashSet<String> = std::iter::once(&d.params)
            .flatten()
            .cloned()
            .chain(
                code[..=i]
                    .iter()
                    .flat_map(|&b| defines(&tokens(&code_of(lines[b])))),
            )
            .collect();
        let binds: HashSet<String> = defines(&tokens(&line));
        if let Some(clamp) = clamped(&line).filter(|_| !opens) {
            out.push((k, format!("{}{clamp}", indent_of(lines[k]))));
        }
        for w in levels {
            let pad = " ".repeat(w);
            let loops = loop_names(lines, &code[..=i], w);
            // The block at this depth ends after the place (the next line is shallower, or there is none).
            let ends = next < w || code.get(i + 1).is_none();
            for s in statements(&kinds, &bound, &binds, &loops, ends) {
                let line = format!("{pad}{s}");
                if opens {
                    first_in_block.push((k, line));
                } else {
                    out.push((k, line));
                }
            }
        }
    }
    out.extend(sorted_by_loop_key(lines, d));
    out.extend(sorted_by_field(lines, d, &kinds, first_code));
    out.extend(siblings_converted(lines, d));
    // A line first in a block comes after the others: a fix that adds one to a block adds it last more often,
    // and where both pass, the place after the block's last line is the one to report.
    out.extend(first_in_block);
    out
}

/// The depths (in columns) a new line may take after the last of `code` (a function's code lines up to it): its
/// own, and that of each block around it, down to the body's `base`.
fn open_levels(lines: &[&str], code: &[usize], base: usize) -> Vec<usize> {
    let width = |k: usize| indent_of(lines[k]).len();
    let Some(&last) = code.last() else {
        return Vec::new();
    };
    let mut cur = width(last);
    let mut out = vec![cur];
    for &k in code.iter().rev() {
        if cur <= base {
            break;
        }
        if width(k) < cur {
            cur = width(k);
            out.push(cur);
        }
    }
    out
}

/// The names bound by the `for` loops whose bodies hold a new line at depth `w` after the last of `code`, then the
/// names the innermost of them binds in its body before that place (`key = normalise(answer)`).
fn loop_names(lines: &[&str], code: &[usize], w: usize) -> Vec<String> {
    let width = |k: usize| indent_of(lines[k]).len();
    let mut out = Vec::new();
    let mut inside: Vec<String> = Vec::new();
    let mut innermost = true;
    let mut cur = w;
    for &k in code.iter().rev() {
        if width(k) >= cur {
            if innermost {
                let mut bound: Vec<String> =
                    defines(&tokens(&code_of(lines[k]))).into_iter().collect();
                bound.sort();
                inside.extend(bound);
            }
            continue;
        }
        cur = width(k);
        let t = tokens(&code_of(lines[k]));
        if t.first().is_some_and(|f| f == "for") {
            let mut names: Vec<String> = defines(&t).into_iter().collect();
            names.sort();
            out.extend(names);
            innermost = false;
        }
    }
    // Only within a loop: outside one, every name of the function would be a candidate.
    if !innermost {
        for n in inside {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

impl Kinds {
    /// A list the `for` line of tokens `t` walks as pairs is a list of pairs: `ranked` of `for name, points in
    /// ranked:` or of `for i, (name, _) in enumerate(ranked):`.
    fn walked_as_pairs(&mut self, t: &[String]) {
        if let Some(walked) = walked_as_pairs(t)
            && self.lists.contains(&walked)
        {
            push_once(&mut self.pairs, &walked);
        }
    }
}

/// The list a `for` line walks as pairs: `ranked` of `for name, points in ranked:` or of `for i, (name, _) in
/// enumerate(ranked):`.
fn walked_as_pairs(t: &[String]) -> Option<String> {
    if t.first()? != "for" {
        return None;
    }
    let at = t.iter().position(|x| x == "in")?;
    let (target, iter) = (&t[1..at], &t[at + 1..]);
    let pair = |x: &[String]| x.len() == 3 && is_name(&x[0]) && x[1] == "," && is_name(&x[2]);
    let walked = match iter {
        [e, open, list, close, colon]
            if e == "enumerate" && open == "(" && close == ")" && colon == ":" =>
        {
            let inner = target.get(3..target.len().checked_sub(1)?)?;
            (target.len() == 7 && target[1] == "," && target[2] == "(" && pair(inner))
                .then_some(list)
        }
        [list, colon] if colon == ":" => pair(target).then_some(list),
        _ => None,
    }?;
    is_name(walked).then(|| walked.clone())
}

/// The statements for one place: the names `bound` there, `binds` those its line binds, `loops` the names of
/// the loops around it, `ends` whether its block ends after it.
fn statements(
    kinds: &Kinds,
    bound: &HashSet<String>,
    binds: &HashSet<String>,
    loops: &[String],
    ends: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for x in kinds.lists.iter().filter(|x| bound.contains(*x)) {
        out.push(format!("{x}.sort()"));
        out.push(format!("{x}.reverse()"));
        out.push(format!("{x}.sort(reverse=True)"));
        if kinds.pairs.contains(x) {
            out.push(format!("{x}.sort(key=lambda pair: pair[1])"));
            out.push(format!("{x}.sort(key=lambda pair: pair[1], reverse=True)"));
            // Largest first, ties by the other item (a count and a name, either way round).
            out.push(format!("{x}.sort(key=lambda pair: (-pair[0], pair[1]))"));
            out.push(format!("{x}.sort(key=lambda pair: (-pair[1], pair[0]))"));
        }
        for v in loops.iter().filter(|v| *v != x) {
            out.push(format!("{x}.append({v})"));
        }
    }
    for x in kinds.sets.iter().filter(|x| bound.contains(*x)) {
        for v in loops.iter().filter(|v| *v != x) {
            out.push(format!("{x}.add({v})"));
        }
    }
    // A dict that counts by key: the loop's name counted, last in its block.
    for x in kinds.counts.iter().filter(|x| ends && bound.contains(*x)) {
        for v in loops.iter().filter(|v| *v != x) {
            out.push(format!("{x}[{v}] += 1"));
            out.push(format!("{x}[{v}] = {x}.get({v}, 0) + 1"));
        }
    }
    for (x, by, first) in kinds.counted.iter().filter(|(x, _, _)| bound.contains(x)) {
        out.push(format!("{x} += 1"));
        out.push(format!("{x} -= 1"));
        for b in by.iter().filter(|b| !matches!(b.as_str(), "+= 1" | "-= 1")) {
            out.push(format!("{x} {b}"));
        }
        if let Some(first) = first {
            out.push(format!("{x} = {first}"));
        }
        // A field of a parameter the function never reads: the amount it forgot to add (`balance += plan.deposit`).
        for f in &kinds.fields {
            out.push(format!("{x} += {f}"));
        }
    }
    // A text normalised right after the line that binds it.
    for x in kinds.texts.iter().filter(|x| binds.contains(*x)) {
        for fixed in text_fixes(x).chain(separator_fixes(x, &kinds.separators)) {
            out.push(format!("{x} = {fixed}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, near: usize) -> Vec<(usize, String)> {
        let lines: Vec<&str> = text.lines().collect();
        let prose = crate::locate_rank::prose_lines(text);
        of_defs(&lines, &prose, None, &[near - 1], "")
    }

    fn has(list: &[(usize, String)], after: usize, line: &str) -> bool {
        list.iter().any(|(a, l)| *a + 1 == after && l == line)
    }

    #[test]
    fn a_list_of_dict_records_is_sorted_by_the_keys_the_docstring_or_the_task_names() {
        let queue = "RATE = 2\n\n\ndef cost(job):\n    return job[\"hours\"] * (RATE if job[\"rush\"] else 1)\n\n\ndef work_order(jobs):\n    \"\"\"Earliest due day first, rush jobs first on the same day.\"\"\"\n    queue = list(jobs)\n    return [job[\"id\"] for job in queue]\n\n\ndef due_by(jobs, day):\n    return [j[\"id\"] for j in jobs if j[\"due\"] <= day]\n";
        let lines: Vec<&str> = queue.lines().collect();
        let prose = crate::locate_rank::prose_lines(queue);
        let d = Def::all(&lines)
            .into_iter()
            .find(|d| d.name == "work_order");
        let got = sorted_by_key(&lines, &prose, &d.unwrap(), "");
        let pair = "    queue.sort(key=lambda r: (r[\"due\"], not r[\"rush\"]))";
        assert!(has(&got, 10, pair), "{got:?}");
        assert!(
            has(&got, 10, "    queue.sort(key=lambda r: r[\"due\"])"),
            "{got:?}"
        );
        // A key only the task says, of the docstring's stem, sorts a parameter the function walks, first.
        let plan = "def plan_day(jobs, hours=7):\n    \"\"\"Jobs to do today: most urgent first.\"\"\"\n    today = []\n    for job in jobs:\n        today.append(job[\"address\"])\n    return today\n";
        let lines: Vec<&str> = plan.lines().collect();
        let prose = crate::locate_rank::prose_lines(plan);
        let d = &Def::all(&lines)[0];
        let task = "It put '4 Mill Lane' (urgency 3) first, before the job of urgency 1.";
        let got = sorted_by_key(&lines, &prose, d, task);
        let want = "    jobs = sorted(jobs, key=lambda r: r[\"urgency\"])";
        assert!(has(&got, 2, want), "{got:?}");
        // Without the task's value for the word, or where the function sorts already: nothing.
        assert!(sorted_by_key(&lines, &prose, d, "it puts the wrong job first").is_empty());
        assert!(sorted_by_key(&lines, &prose, d, "the urgency is wrong").is_empty());
        let sorted = plan.replace("    for job in jobs:", "    for job in sorted(jobs):");
        let lines: Vec<&str> = sorted.lines().collect();
        assert!(sorted_by_key(&lines, &prose, &Def::all(&lines)[0], task).is_empty());
        // A key a word of whose name the docstring says in another form (`calling`, `last_called`).
        let rota = "def pick(callers, count=2):\n    \"\"\"Callers who have gone longest without calling, longest first.\"\"\"\n    pool = available(callers)\n    return [c[\"name\"] for c in pool[:count]]\n\n\ndef record(callers, month):\n    for c in callers:\n        c[\"last_called\"] = month\n";
        let lines: Vec<&str> = rota.lines().collect();
        let prose = crate::locate_rank::prose_lines(rota);
        let got = sorted_by_key(&lines, &prose, &Def::all(&lines)[0], "");
        let want = "    pool.sort(key=lambda r: r[\"last_called\"])";
        assert!(has(&got, 3, want), "{got:?}");
        assert_eq!(
            (stem("calling"), stem("called"), stem("is")),
            ("call", "call", "is")
        );
    }

    #[test]
    fn a_heading_row_a_csv_reader_hands_over_is_skipped_where_a_docstring_speaks_of_it() {
        let text = "import csv\n\n\ndef parse(text):\n    \"\"\"Rows of the export, whose first row names the columns.\"\"\"\n    reader = csv.reader(text.splitlines())\n    out = []\n    for row in reader:\n        out.append(row)\n    return out\n";
        let run = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            headings_never_skipped(&lines, &Def::all(&lines))
        };
        assert_eq!(run(text), [(5, "    next(reader, None)".to_string())]);
        // Skipped already, or no word of a heading: nothing.
        let skipped = text.replace("    out = []\n", "    next(reader)\n    out = []\n");
        assert!(run(&skipped).is_empty());
        let silent = text.replace(", whose first row names the columns", "");
        assert!(run(&silent).is_empty());
    }

    #[test]
    fn rows_of_a_csv_reader_that_nothing_converts_have_the_fields_the_file_orders_converted_first()
    {
        let sheet = "import csv\n\n\ndef read(text):\n    out = []\n    for row in csv.DictReader(text):\n        out.append(row)\n    return out\n\n\ndef label(e):\n    return e[\"entry\"].upper()\n\n\ndef best(rows):\n    return sorted(rows, key=lambda e: e[\"score\"])[-1]\n";
        let lines: Vec<&str> = sheet.lines().collect();
        let got = read_rows_never_converted(&lines, &Def::all(&lines));
        // The field the file orders by first, then the one it reads only as text; both ways of being a number.
        assert_eq!(
            got[0],
            (5, "        row[\"score\"] = int(row[\"score\"])".into())
        );
        assert_eq!(
            got[1],
            (5, "        row[\"score\"] = float(row[\"score\"])".into())
        );
        assert_eq!(
            got[2],
            (5, "        row[\"entry\"] = int(row[\"entry\"])".into())
        );
        assert_eq!(got.len(), 4);
        // A key first read as text and ordered later is ordered.
        let later = sheet.replace(
            "e[\"entry\"].upper()",
            "e[\"entry\"].upper(), e[\"score\"].upper()",
        );
        let lines: Vec<&str> = later.lines().collect();
        let got = read_rows_never_converted(&lines, &Def::all(&lines));
        assert_eq!(got[0].1, "        row[\"score\"] = int(row[\"score\"])");
        // A file that converts a field already, or reads no CSV rows: nothing.
        let converted = sheet.replace(
            "[\"score\"])[-1]",
            "[\"score\"])[-1]\n    x = int(e[\"score\"])",
        );
        let lines: Vec<&str> = converted.lines().collect();
        assert!(read_rows_never_converted(&lines, &Def::all(&lines)).is_empty());
        let plain = sheet.replace("csv.DictReader(text)", "text");
        let lines: Vec<&str> = plain.lines().collect();
        assert!(read_rows_never_converted(&lines, &Def::all(&lines)).is_empty());
    }

    #[test]
    fn a_row_field_converted_beside_another_a_record_list_sorted_by_a_field_an_entry_taken_and_a_difference_clamped()
     {
        let rows = "import csv\n\n\ndef read(text):\n    \"\"\"Rows.\"\"\"\n    out = []\n    for row in csv.DictReader(text):\n        row[\"made\"] = date.fromisoformat(row[\"made\"])\n        out.append(row)\n    return out\n\n\ndef heaviest(rows):\n    return max(rows, key=lambda w: w[\"kg\"])[\"batch\"]\n";
        let got = at(rows, 8);
        assert!(
            has(&got, 8, "        row[\"kg\"] = float(row[\"kg\"])"),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|(_, l)| l.contains("float(row[\"made\"])")),
            "{got:?}"
        );
        let cellar = "from dataclasses import dataclass\n\n\n@dataclass\nclass Bottle:\n    name: str\n    drink_by: int\n\n\ndef drink_next(bottles, n=3):\n    \"\"\"Most urgent (earliest drink_by) first.\"\"\"\n    due = ready(bottles)\n    return [b.name for b in due[:n]]\n\n\ndef clashes(bookings):\n    found = []\n    for prev, cur in zip(bookings, bookings[1:]):\n        if cur.drink_by < prev.drink_by:\n            found.append(cur.name)\n    return found\n";
        let got = at(cellar, 12);
        assert!(
            has(&got, 12, "    due.sort(key=lambda r: r.drink_by)"),
            "{got:?}"
        );
        assert!(
            has(
                &got,
                12,
                "    due.sort(key=lambda r: r.drink_by, reverse=True)"
            ),
            "{got:?}"
        );
        let got = at(cellar, 17);
        assert!(
            has(
                &got,
                16,
                "    bookings = sorted(bookings, key=lambda r: r.drink_by)"
            ),
            "{got:?}"
        );
        let store = "def check_out(store, loans, part, qty=1):\n    \"\"\"Lend parts.\"\"\"\n    if store.get(part, 0) < qty:\n        return False\n    loans.append(part)\n    return True\n\n\ndef give_back(store, part, qty=1):\n    store[part] = store.get(part, 0) + qty\n";
        let got = at(store, 5);
        assert!(has(&got, 4, "    store[part] -= qty"), "{got:?}");
        // Not where the function writes the entry itself.
        assert!(
            !at(store, 10)
                .iter()
                .any(|(_, l)| l.contains("store[part] -= qty"))
        );
        let late = "def late_fee(due, returned):\n    late = minutes(due, returned) - GRACE\n    return late * FEE\n";
        let got = at(late, 2);
        assert!(has(&got, 2, "    late = max(late, 0)"), "{got:?}");
    }

    #[test]
    fn a_part_normalised_not_the_whole_a_result_sorted_where_made_and_a_taken_item_added_back() {
        // A text cut into parts on the function's first line: its parts normalised after that line, not the
        // whole text first.
        let parse = "def parse(line):\n    \"\"\"'Jean Platt; 3' -> (donor, bags)\"\"\"\n    donor, bags = [p.strip() for p in line.split(\";\")]\n    return donor, int(bags)\n";
        let got = at(parse, 3);
        assert!(
            has(&got, 3, "    donor = \" \".join(donor.split()).title()"),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|(_, l)| l.starts_with("    line = ")),
            "{got:?}"
        );
        // A list a comprehension makes and the function returns: sorted where it is made, before the parameter
        // it came from is sorted first, ties broken by the record's first field.
        let huts = "from dataclasses import dataclass\n\n\n@dataclass\nclass Hut:\n    number: int\n    rate: float\n\n\ndef available(huts, week):\n    \"\"\"Free huts, cheapest first.\"\"\"\n    free = [h for h in huts if h.number != week]\n    return free\n";
        let got = at(huts, 12);
        let made = got
            .iter()
            .position(|(a, l)| *a == 11 && l == "    free.sort(key=lambda r: (r.rate, r.number))");
        let param = got
            .iter()
            .position(|(_, l)| l.starts_with("    huts = sorted(huts, key="));
        assert!(made.is_some() && param.is_some() && made < param, "{got:?}");
        // What a sibling function takes out of a collection, added back where this one reads it.
        let lib = "def lend(library, title, member):\n    item = library[title]\n    if member in item[\"out\"]:\n        return False\n    return True\n\n\ndef give_back(library, title, member):\n    item = library[title]\n    item[\"out\"].remove(member)\n";
        let got = at(lib, 3);
        assert!(has(&got, 4, "    item[\"out\"].append(member)"), "{got:?}");
    }

    #[test]
    fn state_advanced_parts_converted_fields_set_an_answer_given_and_pairs_ordered() {
        // A dict of state a loop reads and never writes, advanced by the file's own function of what it unpacks.
        let plan = "def duration(services):\n    return len(services)\n\n\ndef plan(bookings, groomers):\n    free_at = {g: 0 for g in groomers}\n    for dog, services in bookings:\n        groomer = min(groomers, key=free_at.get)\n        start = free_at[groomer]\n        print(dog, start)\n";
        let got = at(plan, 9);
        assert!(
            has(&got, 9, "        free_at[groomer] += duration(services)"),
            "{got:?}"
        );
        // The parts a line unpacks, converted where they are numbers; the label and the texts left alone.
        let parse = "def parse(text):\n    out = []\n    for line in text.splitlines():\n        colour, weight, grams, per = [p.strip() for p in line.split(\",\")]\n        out.append((colour, weight.lower(), grams, per))\n    return out\n";
        let got = at(parse, 4);
        assert!(
            has(&got, 4, "        grams, per = int(grams), int(per)"),
            "{got:?}"
        );
        assert!(
            !got.iter()
                .any(|(_, l)| l.contains("weight = int(") || l.contains("colour = int(")),
            "{got:?}"
        );
        // A text the function opens by guarding (`None` has no `.strip()`): normalised after the guard as well.
        let rate = "CODES = {\"SPRING\": 0.1}\n\n\ndef rate(code):\n    \"\"\"Rate of a code, ignoring case.\"\"\"\n    if not code:\n        return 0.0\n    return CODES.get(code, 0.0)\n";
        let got = at(rate, 8);
        assert!(has(&got, 7, "    code = code.strip().upper()"), "{got:?}");
        assert!(has(&got, 5, "    code = code.strip().upper()"), "{got:?}");
        let other = rate.replace("if not code:", "if not CODES:");
        assert!(!has(&at(&other, 8), 7, "    code = code.strip().upper()"));
        // A parameter normalised beside the normalisation of another one the function opens with, after it.
        let book = "def book(register, class_name, member):\n    key = class_key(class_name)\n    if member in register[key]:\n        return False\n";
        let got = at(book, 3);
        assert!(
            has(&got, 2, "    member = member.strip().title()"),
            "{got:?}"
        );
        assert!(
            !has(&got, 1, "    member = member.strip().title()"),
            "{got:?}"
        );
        // A record's field no line sets: set from a parameter, or stepped where its default is a number.
        let jobs = "from dataclasses import dataclass\n\n\n@dataclass\nclass Book:\n    jobs: list\n    next_ticket: int = 100\n    last: object = None\n\n\ndef book_in(book, customer):\n    book.jobs.append((book.next_ticket, customer))\n    return book.next_ticket\n";
        let got = at(jobs, 12);
        assert!(has(&got, 12, "    book.next_ticket += 1"), "{got:?}");
        assert!(has(&got, 12, "    book.last = customer"), "{got:?}");
        assert!(
            !got.iter().any(|(_, l)| l.contains("book.jobs += 1")),
            "{got:?}"
        );
        // A function that answers True at its end: the other answer where an `if` block goes on; pairs largest
        // first, ties by the other item.
        let cases = [
            (
                "def tap_in(card, stop):\n    if card[\"balance\"] < MIN:\n        card[\"declined\"] += 1\n    card[\"trip\"] = stop\n    return True\n",
                3,
                "        return False",
            ),
            (
                "def top(index, n=3):\n    ranked = [(len(v), w) for w, v in index.items()]\n    return [w for _, w in ranked[:n]]\n",
                2,
                "    ranked.sort(key=lambda pair: (-pair[0], pair[1]))",
            ),
        ];
        for (text, after, line) in cases {
            assert!(has(&at(text, after), after, line), "{text}");
        }
        let plate = "def normalise(plate):\n    \"\"\"Upper case, no spaces or dashes.\"\"\"\n    plate = plate.upper()\n    return plate\n";
        let got = at(plate, 3);
        assert!(
            has(
                &got,
                3,
                "    plate = plate.replace(\" \", \"\").replace(\"-\", \"\")"
            ),
            "{got:?}"
        );
        // Not first in the function, where the text is bound again below.
        assert!(
            !has(
                &got,
                2,
                "    plate = plate.replace(\" \", \"\").replace(\"-\", \"\")"
            ),
            "{got:?}"
        );
        // A separator another function writes into the text it makes is taken out of the text that comes back.
        let book = "def issue(code):\n    return code[:4] + \"-\" + code[4:]\n\n\ndef redeem(typed, unused):\n    code = typed.strip().upper()\n    return code in unused\n";
        let got = at(book, 6);
        assert!(
            has(&got, 6, "    code = code.replace(\"-\", \"\")"),
            "{got:?}"
        );
    }

    #[test]
    fn a_list_is_sorted_a_set_gets_the_loop_name_and_a_loop_index_steps() {
        let merged = "def merge(*schedules):\n    \"\"\"Merge.\"\"\"\n    merged = []\n    for s in schedules:\n        merged.extend(s)\n    return merged\n";
        let got = at(merged, 5);
        // At the loop's depth and after it.
        assert!(has(&got, 5, "        merged.sort()"), "{got:?}");
        assert!(has(&got, 5, "    merged.sort()"), "{got:?}");
        assert!(has(&got, 5, "        merged.append(s)"), "{got:?}");
        // Never after the return.
        assert!(!got.iter().any(|(a, _)| *a + 1 == 6), "{got:?}");

        let seen = "def valid(numbers):\n    seen = set()\n    for n in numbers:\n        if n in seen:\n            return False\n    return True\n";
        let got = at(seen, 4);
        assert!(has(&got, 5, "        seen.add(n)"), "{got:?}");
        // A name the loop's body binds before the place is added too.
        let keyed = "def score(answers):\n    seen = set()\n    for a in answers:\n        key = a.lower()\n        if key in seen:\n            continue\n    return len(seen)\n";
        let got = at(keyed, 5);
        assert!(has(&got, 6, "        seen.add(key)"), "{got:?}");
        // Not at the depth of the `return` it follows.
        assert!(!has(&got, 5, "            seen.add(n)"), "{got:?}");

        let bowling = "def frames(rolls):\n    i = 0\n    for _ in range(10):\n        if rolls[i] == 10:\n            x = 1\n        elif rolls[i] == 5:\n            i += 2\n    return i\n";
        let got = at(bowling, 5);
        assert!(has(&got, 5, "            i += 1"), "{got:?}");
        assert!(has(&got, 5, "            i += 2"), "{got:?}");
        assert!(has(&got, 7, "    i = 0"), "{got:?}");
    }

    #[test]
    fn pairs_are_sorted_by_their_second_item_a_text_has_its_spaces_collapsed_and_a_count_gets_an_unread_field()
     {
        let seeds = "def seed(players):\n    ranked = list(players.items())\n    return [n for n, _ in ranked]\n";
        let got = at(seeds, 2);
        assert!(has(&got, 2, "    ranked.sort(reverse=True)"), "{got:?}");
        let by_value = "    ranked.sort(key=lambda pair: pair[1], reverse=True)";
        assert!(has(&got, 2, by_value), "{got:?}");
        // A list that is not of pairs is sorted whole only.
        let names = seeds.replace("players.items()", "players");
        assert!(!at(&names, 2).iter().any(|(_, l)| l.contains("pair[1]")));
        // A list a loop walks as pairs is of pairs too, counted or not.
        for walk in [
            "    for i, (name, _) in enumerate(ranked):\n        out[i % 2].append(name)\n",
            "    for name, points in ranked:\n        out[points % 2].append(name)\n",
        ] {
            let pools = format!(
                "def pools(teams):\n    ranked = list(teams)\n    out = [[], []]\n{walk}    return out\n"
            );
            assert!(has(&at(&pools, 2), 2, by_value), "{walk}");
        }

        let find = "def find(name):\n    key = name.strip().lower()\n    return BOOK.get(key)\n";
        let got = at(find, 2);
        assert!(has(&got, 2, "    key = \" \".join(key.split())"), "{got:?}");
        assert!(
            has(&got, 1, "    name = \" \".join(name.split())"),
            "{got:?}"
        );

        // Lines of text split in a loop: the blank ones dropped before it.
        let rows = "def parse(lines):\n    \"\"\"Rows.\"\"\"\n    rows = []\n    for line in lines[1:]:\n        rows.append(line.strip().split(\",\"))\n    return rows\n";
        let kept = "    lines = [line for line in lines if line.strip()]";
        let got = at(rows, 5);
        let places: Vec<usize> = got
            .iter()
            .filter(|(_, l)| l == kept)
            .map(|(a, _)| a + 1)
            .collect();
        assert_eq!(places, [3, 2], "{got:?}");
        // A list of counts, one for each hour, counted by the name the loop's body makes.
        let hours = "def busiest(trips):\n    counts = [0] * 24\n    for start, _ in trips:\n        hour = int(start[:2])\n    return counts.index(max(counts))\n";
        assert!(has(&at(hours, 4), 4, "        counts[hour] += 1"));
        // A list a loop walks, sorted by what the loop computes from each item.
        let fit = "def fit(tracks, budget):\n    pool = list(tracks)\n    chosen = []\n    for track in pool:\n        length = parse(track[\"length\"])\n        if length <= budget:\n            chosen.append(track)\n    return chosen\n";
        let by_length = "    pool.sort(key=lambda track: parse(track[\"length\"]))";
        assert!(has(&at(fit, 5), 3, by_length), "{:?}", at(fit, 5));
        // A loop's name that the file's other functions take as a text.
        let emails = "def domain(email):\n    return email.rsplit(\"@\", 1)[-1]\n\n\ndef clean(raw):\n    out = []\n    for email in raw:\n        if domain(email) in BLOCKED:\n            continue\n        out.append(email)\n    return out\n";
        let got = at(emails, 8);
        assert!(
            has(&got, 7, "        email = email.strip().lower()"),
            "{got:?}"
        );
        let numbers = emails.replace("email.rsplit(\"@\", 1)[-1]", "email[0]");
        assert!(!has(
            &at(&numbers, 8),
            7,
            "        email = email.strip().lower()"
        ));

        let savings = "def total(plan):\n    return plan.start + plan.deposit + plan.fee()\n\n\ndef balance(plan, months):\n    balance = plan.start\n    for _ in range(months):\n        balance += balance * RATE\n    return balance\n";
        let got = at(savings, 8);
        assert!(has(&got, 8, "        balance += plan.deposit"), "{got:?}");
        // Not a field the function reads already, nor a method.
        assert!(
            !got.iter().any(|(_, l)| l.ends_with("+= plan.start")),
            "{got:?}"
        );
        assert!(!got.iter().any(|(_, l)| l.contains("plan.fee")), "{got:?}");
    }

    #[test]
    fn a_parameter_is_normalised_first_and_a_text_after_its_binding() {
        let raffle = "def cost(tickets):\n    \"\"\"Tickets may come as text.\"\"\"\n    return tickets * PRICE\n";
        assert!(has(&at(raffle, 3), 2, "    tickets = int(tickets)"));
        let rota = "def shifts(rota):\n    counts = {}\n    for day, name in rota:\n        counts.setdefault(name, 0)\n    return counts\n";
        let got = at(rota, 4);
        assert!(has(&got, 4, "        counts[name] += 1"), "{got:?}");
        let add = "def add(playlist, track):\n    \"\"\"A new list.\"\"\"\n    playlist.append(track)\n    return playlist\n";
        assert!(has(&at(add, 3), 2, "    playlist = list(playlist)"));
        let valid = "def is_valid(postcode):\n    \"\"\"Ignoring case.\"\"\"\n    return bool(RE.match(postcode))\n";
        let got = at(valid, 3);
        assert!(
            has(&got, 2, "    postcode = postcode.strip().upper()"),
            "{got:?}"
        );
        let split = "def f(text):\n    key, _, value = text.partition(\"=\")\n    return {key.strip(): value}\n";
        let got = at(split, 2);
        assert!(has(&got, 2, "    key = key.strip()"), "{got:?}");
        // A sequence read by position is sorted first; a name read only whole is not.
        let median = "def median(scores, label):\n    \"\"\"The middle one.\"\"\"\n    mid = len(scores) // 2\n    return label, scores[mid]\n";
        let got = at(median, 3);
        assert!(has(&got, 2, "    scores = sorted(scores)"), "{got:?}");
        assert!(!has(&got, 2, "    label = sorted(label)"), "{got:?}");
        // An iterable iterated twice is made a list first.
        let twice = "def average(fillups):\n    \"\"\"Mean of pairs.\"\"\"\n    litres = sum(a for a, _ in fillups)\n    km = sum(b for _, b in fillups)\n    return litres / km\n";
        let got = at(twice, 3);
        assert!(has(&got, 2, "    fillups = list(fillups)"), "{got:?}");
        let once = "def total(items):\n    return sum(x for x in items)\n";
        assert!(!has(&at(once, 2), 1, "    items = list(items)"));
        // After a guard the function opens with, first.
        let guarded = "def median(prices):\n    \"\"\"The middle one.\"\"\"\n    if not prices:\n        raise ValueError(\"none\")\n    mid = len(prices) // 2\n    return prices[mid]\n";
        let got = at(guarded, 5);
        let sorts: Vec<usize> = got
            .iter()
            .filter(|(_, l)| l == "    prices = sorted(prices)")
            .map(|(a, _)| a + 1)
            .collect();
        assert_eq!(sorts, [4, 2], "{got:?}");
        // A statement is never cut in two.
        let open = "def f(a):\n    x = g(\n        a)\n    return x\n";
        assert!(!at(open, 2).iter().any(|(after, _)| *after + 1 == 2));
    }
}
