//! The mutation probe: small classic mutations of one line of Python (a comparison loosened or turned round, an
//! arithmetic or logical operator swapped, a module constant exchanged for another, a whole number or an index
//! moved by one, a condition negated, two digits of a number or two capitals of a code the other way round, the
//! wrong dict key, factor or separator, `append` for `extend`, `split` for `rsplit`, a 1-based count used as an
//! offset, the last item for the first, a slice from the wrong end, a sort key turned round, a percent read as a
//! fraction, a format's precision or a spec another field of the literal has, a window's end that misses its start,
//! two unpacked names the wrong way round, a loop's total set where it was meant to be added to,
//! a default given with `or` meant for `None` only, a sort key passed through the file's own converter, a default the same parameter has elsewhere, a best-so-far started at an infinity,
//! a loop's name read after the loop for the total it built, a line moved across a loop's edge, arithmetic grouped
//! the other way, a difference made a distance, the next unit taken of what the larger one leaves, an order
//! reversed, a strip of some characters for a strip of all white space, a truth test for a test for `None`, every
//! comparison of a kind on a line turned at once, a copy for a second name of a list, a text compared in lower case,
//! a number the task reports as wrong for the one it expected, a loop's name read after the loop for `None`, a
//! record's key for the key a table it looks up is named for, a term of a sum for the sum, the code in an f-string's
//! fields mutated as code, a key's grammatical number turned, a text cut at a space instead of a fixed width, a count
//! for a stored attribute never read, arguments moved to the parameters they are named for) and, when those fail on
//! every probed line, the
//! costlier ones (another local for a local, the file's own offset of a name, a local for a fixed dict key), run against the check that fails
//! before any edit; before all of them, a local never read in a value's place on every probed line. A line where one of them makes that check pass is
//! very likely the line the fix changes (mutation-based fault localization): the signal
//! [`super::Signals::mutants`] ranks it first. The mutations are pure and the probe runs a check only through the
//! closure it is given, so the caller decides where (a confined sandbox copy) and for how long.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;

use super::executed::Reach;
pub use super::failing::Fixed;
use super::insertions::{self, Insertion};
use super::{Failing, Missing, Signals, rank};
use crate::patch::PreImage;
use crate::patch::focus::Focus;
use crate::task::Task;

/// The most mutants of one line that are tried.
pub const MAX_PER_LINE: usize = 14;
/// The most of the costlier mutants of one line ([`kin_of_line`]).
pub const MAX_LOCAL_SWAPS: usize = 6;
/// The most ranked lines that are probed: the best ranked lines to change, without this signal, that give a line
/// of code the checks reached (a docstring or a comment ranked among them does not count).
pub const MAX_LINES: usize = 20;
/// The most names of the file one name is exchanged for (a constant for constants, an attribute for attributes).
const MAX_CONSTANTS: usize = 4;

/// What a token of a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Name,
    Number,
    Op,
    Str,
}

/// One token: its kind and its byte span in the line.
#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Operators and what each is swapped for: the relational, arithmetic and augmented-assignment mutations of the
/// literature (ROR, AOR), each kept to the swaps that stand for a real slip (`<` for `<=`, `+` for `*`).
const OP_SWAPS: &[(&str, &[&str])] = &[
    ("<", &["<=", ">"]),
    ("<=", &["<", ">="]),
    (">", &[">=", "<"]),
    (">=", &[">", "<="]),
    ("==", &["!="]),
    ("!=", &["=="]),
    ("+", &["-", "*"]),
    ("-", &["+"]),
    ("*", &["/", "+"]),
    ("/", &["*", "//"]),
    ("//", &["/", "*", "%"]),
    ("%", &["//"]),
    ("+=", &["-="]),
    ("-=", &["+="]),
    ("*=", &["/="]),
    ("/=", &["*="]),
    ("//=", &["/="]),
];

/// Names and what each is swapped for: logical operators, truth values, and the builtins and methods that come in
/// pairs.
const NAME_SWAPS: &[(&str, &[&str])] = &[
    ("and", &["or"]),
    ("or", &["and"]),
    ("True", &["False"]),
    ("False", &["True"]),
    ("min", &["max"]),
    ("max", &["min"]),
    ("len", &["sum"]),
    ("sum", &["len"]),
    ("any", &["all"]),
    ("all", &["any"]),
    ("strip", &["lstrip", "rstrip"]),
    ("lstrip", &["strip", "rstrip"]),
    ("rstrip", &["strip", "lstrip"]),
    ("lower", &["upper"]),
    ("upper", &["lower"]),
    ("islower", &["isupper"]),
    ("isupper", &["islower"]),
    ("isdigit", &["isalpha"]),
    ("isalpha", &["isdigit"]),
    ("keys", &["values"]),
    ("values", &["keys"]),
    ("ceil", &["floor"]),
    ("floor", &["ceil"]),
    ("startswith", &["endswith"]),
    ("endswith", &["startswith"]),
    ("append", &["extend"]),
    ("pop", &["popleft"]),
    ("popleft", &["pop"]),
    ("appendleft", &["append"]),
    ("extend", &["append"]),
    ("split", &["rsplit"]),
    ("rsplit", &["split"]),
    ("find", &["rfind"]),
    ("rfind", &["find"]),
    ("partition", &["rpartition"]),
    ("rpartition", &["partition"]),
    ("ljust", &["rjust"]),
    ("rjust", &["ljust"]),
    ("removeprefix", &["removesuffix"]),
    ("removesuffix", &["removeprefix"]),
];

/// The exceptions routine code raises, one exchanged for another in an `except` clause.
const EXCEPTIONS: &[&str] = &[
    "ValueError",
    "KeyError",
    "TypeError",
    "IndexError",
    "ZeroDivisionError",
    "AttributeError",
    "Exception",
];

/// Keywords after which an operator is unary (`return -x`, `in *rest`) rather than binary.
const KEYWORDS: &[&str] = &[
    "return", "in", "and", "or", "not", "if", "elif", "else", "while", "for", "lambda", "yield",
    "is", "assert", "await", "print",
];

/// The operators of more than one character, longest first.
const LONG_OPS: &[&str] = &[
    "//=", "**=", ">>=", "<<=", "...", "<=", ">=", "==", "!=", "//", "**", "+=", "-=", "*=", "/=",
    "%=", "->", ":=", "<<", ">>",
];

/// The names of a Python file that a mutant may put in place of one another: its module constants (names in
/// capitals assigned at its top level) and its instance attributes (`self.rate`, not `self.total()`), each in the
/// order they first appear: a slip often takes the wrong one of two alike. And its bindings never read: a value
/// computed or a constant defined and then never used is often the one the slip left out (`visible=6` beside an
/// unused `VISIBLE_DIGITS = 4`, `TARGET - on_hand` beside an unused `available = on_hand - reserved`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Names in capitals assigned at the file's top level.
    pub constants: Vec<String>,
    /// Names read or set as `self.NAME`, not called.
    pub attributes: Vec<String>,
    /// The fields of each record class the file declares (a dataclass's or a `NamedTuple`'s annotated names, a
    /// `namedtuple`'s field names), one list a class: a slip reads the wrong field of a record (`r.high` for
    /// `r.low`).
    pub fields: Vec<Vec<String>>,
    /// Names assigned and never read: the file's unused module constants ([`Names::of`]) and, for one line
    /// ([`Names::at`]), the unused locals its function assigns before it.
    pub unread: Vec<String>,
    /// The names a `for` header of the function unpacks before the line and no other line of it reads (`quantity`
    /// in `for dish, price, quantity in order:`): a value scaled by one is a costlier mutant ([`kin_of_line`]).
    pub loop_unread: Vec<String>,
    /// The keys the file reads out of dicts by a string (`item["sku"]`, `row.get("sku")`) or writes in a dict
    /// literal (`{"sku": sku}`), without their quotes, in order: a slip reads the wrong one of them.
    pub keys: Vec<String>,
    /// The keys each dict of the file is read by (`firing["peak"]`, `firing.get("peak")`) or its literal maps
    /// (`TIERS = {"silver": ...}`), as (the dict's name, the key) in order: a slip most often reads or writes the
    /// wrong one of the same dict's keys.
    pub dict_keys: Vec<(String, String)>,
    /// The plain names each name of the file is subscripted by (`table[winner]`, `table[loser]`), as (the name
    /// subscripted, the name in the brackets) in order, each pair once: a place written for the wrong one of them
    /// ([`holder_swapped`]).
    pub subscripts: Vec<(String, String)>,
    /// How the file can read a date out of an ISO text, by its imports (`date.fromisoformat` for `from datetime
    /// import date`): a date kept as the text it came in ([`dates_from_text`]).
    pub date_parsers: Vec<String>,
    /// The whole numbers of 2 and more the file multiplies or divides by (`* 60`, `// 1000`, `divmod(m, 24)`), in
    /// order: a conversion slip takes the wrong one of the file's own factors.
    pub factors: Vec<String>,
    /// The defaults the file's `def` lines give their parameters, as (parameter, default) in order: a default
    /// slips from the one the same parameter has elsewhere (`tip_percent=0.15` beside
    /// `tip_percent=DEFAULT_TIP_PERCENT`).
    pub defaults: Vec<(String, String)>,
    /// For one line ([`Names::at`]): the locals of the function holding it that are bound before it (its
    /// parameters, then the names its body assigns above the line), in order: a slip reads the wrong one of two
    /// (`range(rows)` for `range(cols)`).
    pub locals: Vec<String>,
    /// The sums and differences the file writes with a name (`ADDRESS_BITS - prefix`, `index + 1`), as (the name,
    /// the expression) in order: a slip reads the name bare where the file's own expression of it was meant
    /// (`FULL_MASK << prefix` for `FULL_MASK << (ADDRESS_BITS - prefix)`).
    pub offsets: Vec<(String, String)>,
    /// The names the file compares by order (`temp < best_temp`): a best-so-far that starts at a number or a
    /// constant instead of an infinity misses every value on the far side of it.
    pub compared: Vec<String>,
    /// For one line ([`Names::at`]): the names of its function's `for` loops that ended above it and that it may
    /// still read (`weight` of `for category, weight in ...` read after the loop), each with the names its loop
    /// assigns, those that add it up first (`used += weight`): a loop's name read after the loop is most often its
    /// total misread.
    pub stale: Vec<(String, Vec<String>)>,
    /// For one line ([`Names::at`]): the indentation it would have one block out or in, across a loop's edge: the
    /// loop's own, for the last line of a loop's body (a `return` that ends the loop at its first item), or the
    /// loop body's, for the line just after a loop (a `total += x` that runs once, after the loop).
    pub indents: Vec<String>,
    /// For one line ([`Names::at`]): what its function divides a name by with `//` or `divmod` above it, as (the
    /// name, the divisor) in order (`seconds // SECONDS_PER_HOUR`): the next unit down is taken of the rest, not
    /// of the whole (`seconds // SECONDS_PER_MINUTE` to `(seconds % SECONDS_PER_HOUR) // SECONDS_PER_MINUTE`).
    pub divided: Vec<(String, String)>,
    /// For one line ([`Names::at`]): whether its function's docstring, or the module's, says that letter case does
    /// not matter (`ignoring case`, `case-insensitive`): a text compared as it came misses its capitals.
    pub cased: bool,
    /// For one line ([`Names::at`]): whether its function's name says it brings a value to one form and nothing
    /// narrower (`normalise(route)`, `clean_code`, not `normalize_whitespace`): a text it strips and leaves in its
    /// case is often the slip.
    pub normaliser: bool,
    /// For one line ([`Names::at`]): the names its function unpacks from a split text before it (`count, kind =
    /// part.split(maxsplit=1)`) and never reads as text (`kind.strip()`) or converts (`int(count)`): a text read
    /// where its number was meant.
    pub parts: Vec<String>,
    /// The numbers a task reports as wrong, each with the one it expected (`returns 16 instead of 48`): a literal
    /// of the file that is the wrong one is often the slip itself (`"cup": 16` for `"cup": 48`). Set by the caller
    /// from the task ([`reported`]).
    pub reported: Vec<(String, String)>,
    /// Whether `None` is spoken of, by the docstring of the line's function ([`Names::at`]) or by the task (set by
    /// the caller): only then is a truth test read as a test for `None` ([`none_for_falsy`]).
    pub none_said: bool,
    /// The whole numbers a task says, in digits or in words (`best of three`), set by the caller from the task
    /// ([`said_numbers`]): a parameter's default that is the wrong one is often one of them.
    pub said: Vec<String>,
    /// The whole numbers the acceptance criteria say and the task does not, set by the caller
    /// ([`criteria_numbers`]): where the task says a constant's value ("marks above ten score zero"), the right one
    /// is often among them ("marks from 0 to 20 are accepted").
    pub criteria_said: Vec<String>,
    /// Every number the task writes in digits, decimals included, each as its [`canonical`] value, set by the
    /// caller ([`written_numbers`]): a literal of the file the task writes as it stands is the user's own figure
    /// (`Lower Ford read exactly 1.10 m, which is its alert level`), and is mutated only to another figure the
    /// task writes; not a whole number below 10, which tasks write as counts and results everywhere.
    pub written: Vec<String>,
    /// Whether the task says a figure is ten times off (`ten times lower`, `a factor of 10`, `the decimal point`),
    /// set by the caller ([`tenfold_said`]): a whole constant is then tried ten times larger and smaller too.
    pub tenfold: bool,
    /// The percentages the task writes (`only 5% VAT not 20%`: 5 and 20), set by the caller ([`percents_said`]): a
    /// fraction of the file (`VAT_RATE = 0.20`) that is the wrong rate is often one of them.
    pub percents: Vec<String>,
    /// The hours of the day the task says on the clock ([`hours_said`]), set by the caller: an hour constant that
    /// is the wrong one is often one of them.
    pub hours: Vec<String>,
    /// For one line ([`Names::at`]): whether its function's docstring speaks of 0-based or 1-based positions: a
    /// value converted between the two is often one off.
    pub based: bool,
    /// For one line ([`Names::at`]): it is an `if` header whose block changes a name its condition reads (`if
    /// due.month in WINTER:` over `due += week`): a step that may need repeating until the condition fails.
    pub repeats: bool,
    /// For one line ([`Names::at`]), or set by the caller from the task: the digits a result is rounded to where its
    /// function's docstring or the task speaks of money to the penny or of decimals (`to the penny`, `two decimal
    /// places`), the file's own `round(x, N)` digits first: a result returned unrounded (`return price`).
    pub rounds_to: Option<String>,
    /// The digits the file's own `round(x, N)` calls give most often, else `2` (money).
    pub round_digits: String,
    /// The fields of the file's records whose names the task says (`nights`), set by the caller: a count
    /// stepped by one where the item's field was meant (`+= 1` for `+= b.nights`).
    pub fields_said: Vec<String>,
    /// The keys of the file ([`Names::keys`]) that the task says as words (`rented`), set by the caller: the value
    /// a dict literal holds under one is often another entry's ([`entry_values_swapped`]).
    pub entries_said: Vec<String>,
    /// The factors of the units a task speaks of (`an hour of work`: 60), set by the caller from the task
    /// ([`units_said`]): a conversion slip divides by the wrong unit's factor.
    pub units: Vec<String>,
    /// The file's top-level functions of one parameter (`parse_time(text)`), in order: a sort key or a comparison
    /// that reads a value as it came is often meant through one of them ([`converted_keys`]).
    pub converters: Vec<String>,
    /// The attributes each method of the file's classes that takes only `self` refines into a value it returns
    /// ([`refiners`]), as (the attribute, the method's call): a read of the bare attribute where the refined value
    /// was meant ([`refined_reads`]).
    pub refiners: Vec<(String, String)>,
    /// For one line ([`Names::at`]): the `if NAME == VALUE:` tests that come after it at its own depth in its
    /// block, as (the name, the value): a bound tested first that takes in the value leaves the later test
    /// unreachable ([`shadowing_bound`]).
    pub later_equals: Vec<(String, String)>,
    /// The sums the function binds before the line, each name with its terms (`food = sets_total(order) +
    /// extras_total(order)`): a line that reads one term where the sum was meant ([`partial_sums`]).
    pub sums: Vec<(String, Vec<String>)>,
    /// The instance attributes the file only ever sets (`self.diners = diners`) and never reads: a count taken of
    /// the wrong thing where the stored one was meant ([`counts_for_unread_attributes`]).
    pub unset_reads: Vec<String>,
    /// The file's top-level functions whose parameters are all plain names (no defaults, no `*`), each with them
    /// in order: a call that passes a name one of them is named for in another's place ([`arguments_by_name`]).
    pub signatures: Vec<(String, Vec<String>)>,
    /// The file's top-level functions, each with the names of all its parameters (defaults dropped, no `*` ones):
    /// a parameter never read passed on by name to a call of one that takes it ([`unread_passed_on`]).
    pub parameter_names: Vec<(String, Vec<String>)>,
}

/// The instance attributes the code tokens of a file set (`self.NAME = ...`) and never read anywhere: every
/// `.NAME` of the file, of any object, is followed by a plain `=`.
fn attributes_never_read(code: &[(usize, Vec<String>)]) -> Vec<String> {
    let mut set: Vec<String> = Vec::new();
    let mut read: HashSet<&str> = HashSet::new();
    for (_, t) in code {
        // Every `.NAME` of any object (`tab.diners` read by a caller too); set only as `self.NAME = ...`.
        for k in (0..t.len()).filter(|&k| t[k] == ".") {
            let Some(name) = t.get(k + 1).filter(|n| super::is_name(n)) else {
                continue;
            };
            let assigned = t.get(k + 2).is_some_and(|n| n == "=");
            let own = k >= 1 && t[k - 1] == "self" && (k < 2 || t[k - 2] != ".");
            if assigned && own && !set.contains(name) {
                set.push(name.clone());
            } else if !assigned {
                read.insert(name);
            }
        }
    }
    set.retain(|n| !read.contains(n.as_str()));
    set
}

/// The top-level functions of a file whose parameters are all plain names, with them in order ([`Names::signatures`]).
fn signatures(text: &str) -> Vec<(String, Vec<String>)> {
    def_headers(text)
        .filter(|(_, params)| params.len() >= 2 && params.iter().all(|p| super::is_identifier(p)))
        .collect()
}

/// Each top-level `def` line's name and its parameters as written (`spare=True`), in order.
fn def_headers(text: &str) -> impl Iterator<Item = (String, Vec<String>)> + '_ {
    text.lines()
        .filter_map(|l| l.strip_prefix("def "))
        .filter_map(|l| {
            let (name, rest) = l.split_once('(')?;
            let (params, _) = rest.split_once(')')?;
            let params = params.split(',').map(|p| p.trim().to_string()).collect();
            Some((name.trim().to_string(), params))
        })
}

/// The run of word characters (letters, digits, `_`) that `text` ends with.
fn word_ending(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map_or(text.len(), |(i, _)| i);
    &text[start..]
}

/// The run of word characters (letters, digits, `_`) that `text` starts with.
fn word_starting(text: &str) -> &str {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// In an f-string that shows a whole count of a unit (`{total // 60 % 24:02d}`), another field's plain name for the
/// rest the unit leaves (`{mins:02d}` to `{total % 60:02d}`): the clock's minutes taken from the start, not the
/// total.
fn remainder_fields(line: &str) -> Vec<String> {
    if !(line.contains("f\"") || line.contains("f'")) {
        return Vec::new();
    }
    let ident = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_');
    let mut units: Vec<(String, String)> = Vec::new();
    for (i, _) in line.match_indices("//") {
        let before = line[..i].trim_end();
        let x = word_ending(before).to_string();
        let n = word_starting(line[i + 2..].trim_start()).to_string();
        let named = ident(&x) && !x.starts_with(|c: char| c.is_ascii_digit());
        if named && ident(&n) && !units.contains(&(x.clone(), n.clone())) {
            units.push((x, n));
        }
    }
    let mut out = Vec::new();
    for (i, _) in line.match_indices('{') {
        let rest = &line[i + 1..];
        let b = word_starting(rest);
        let ends = rest[b.len()..].starts_with([':', '}']);
        if !ident(b) || !ends || b.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        for (x, n) in units.iter().filter(|(x, n)| *x != b && *n != b) {
            out.push(format!("{}{{{x} % {n}{}", &line[..i], &rest[b.len()..]));
        }
    }
    out
}

/// The file's top-level functions with the names of all their parameters ([`Names::parameter_names`]).
fn parameter_names(text: &str) -> Vec<(String, Vec<String>)> {
    def_headers(text)
        .map(|(name, params)| {
            let names = params
                .iter()
                .filter_map(|p| p.split([':', '=']).next().map(str::trim))
                .filter(|p| super::is_identifier(p))
                .map(str::to_string)
                .collect();
            (name, names)
        })
        .collect()
}

/// A parameter the function never reads ([`Names::unread`]) that a call on the line of the file's own function
/// takes by that name and is not given: passed on by name (`metres_needed(pattern_metres)` to
/// `metres_needed(pattern_metres, spare=spare)`).
fn unread_passed_on(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    let called = |k: usize| text(k + 1) == "(" && (k == 0 || !matches!(text(k - 1), "." | "def"));
    for k in (0..toks.len()).filter(|&k| called(k)) {
        let Some((_, params)) = names.parameter_names.iter().find(|(n, _)| n == text(k)) else {
            continue;
        };
        // The call's closing bracket.
        let mut depth = 0usize;
        let Some(close) = (k + 1..toks.len()).find(|&i| {
            match text(i) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
            depth == 0
        }) else {
            continue;
        };
        let given: Vec<&str> = (k + 2..close).map(text).collect();
        for u in names.unread.iter().filter(|u| params.contains(u)) {
            if given.contains(&u.as_str()) {
                continue;
            }
            let at = toks[close].start;
            let sep = if close == k + 2 { "" } else { ", " };
            out.push(format!("{}{sep}{u}={u}{}", &line[..at], &line[at..]));
        }
    }
    out
}

/// A call of the file's own function whose arguments are plain names, some of them named as a parameter other than
/// the one they are passed to (`fits(length, width, room_length, room_width)` for `def fits(room_length,
/// room_width, cut_length, cut_width)`): each such name moved to its parameter's place, the others filling the
/// places left in their order (`fits(room_length, room_width, length, width)`).
fn arguments_by_name(
    line: &str,
    toks: &[Tok],
    signatures: &[(String, Vec<String>)],
) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    let called = |k: usize| text(k + 1) == "(" && (k == 0 || !matches!(text(k - 1), "." | "def"));
    for k in (0..toks.len()).filter(|&k| called(k)) {
        let Some((_, params)) = signatures.iter().find(|(n, _)| n == text(k)) else {
            continue;
        };
        // The plain names passed, each followed by `,` or the closing `)`.
        let args: Vec<usize> = (0..params.len()).map(|i| k + 2 + 2 * i).collect();
        let plain = args.iter().enumerate().all(|(i, &a)| {
            toks.get(a).is_some_and(|t| t.kind == Kind::Name)
                && text(a + 1) == if i + 1 == params.len() { ")" } else { "," }
        });
        if !plain {
            continue;
        }
        let names: Vec<&str> = args.iter().map(|&a| text(a)).collect();
        let mut placed: Vec<Option<&str>> = params
            .iter()
            .map(|p| names.iter().find(|n| *n == p).copied())
            .collect();
        let mut rest = names.iter().filter(|n| !params.iter().any(|p| p == *n));
        for slot in placed.iter_mut().filter(|s| s.is_none()) {
            *slot = rest.next().copied();
        }
        let moved: Option<Vec<&str>> = placed.into_iter().collect();
        if let Some(moved) = moved.filter(|m| *m != names) {
            let (from, to) = (toks[k + 2].start, toks[k + 2 * params.len()].end);
            out.push(format!(
                "{}{}{}",
                &line[..from],
                moved.join(", "),
                &line[to..]
            ));
        }
    }
    out
}

/// The file's top-level functions of exactly one parameter, without a default (`def parse_time(text):`), in order.
fn converters(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("def "))
        .filter_map(|l| {
            let (name, rest) = l.split_once('(')?;
            let (params, _) = rest.split_once(')')?;
            let one = !params.trim().is_empty()
                && !params.contains([',', '=', '*'])
                && params.trim() != "self";
            one.then(|| name.trim().to_string())
        })
        .collect()
}

impl Names {
    /// The names of the file `text`.
    pub fn of(text: &str) -> Names {
        let mut attributes: Vec<String> = Vec::new();
        for (_, rest) in text
            .match_indices("self.")
            .map(|(i, _)| text.split_at(i + 5))
        {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let call = rest[name.len()..].starts_with('(');
            if !name.is_empty() && !call && !attributes.contains(&name) {
                attributes.push(name);
            }
        }
        let code = code_tokens(text);
        let constants = constants(text);
        let fields = fstring_fields(text);
        let unread = constants
            .iter()
            .filter(|c| never_read(code.iter().map(|(_, t)| t), c))
            .cloned()
            .collect();
        Names {
            constants,
            attributes,
            fields: record_fields(text),
            unread,
            loop_unread: Vec::new(),
            keys: keys(text, &fields),
            dict_keys: dict_keys(text),
            subscripts: picked_pairs(&code),
            date_parsers: date_parsers(text),
            factors: factors(text, &fields),
            defaults: defaults(text),
            locals: Vec::new(),
            stale: Vec::new(),
            indents: Vec::new(),
            divided: Vec::new(),
            cased: false,
            normaliser: false,
            parts: Vec::new(),
            reported: Vec::new(),
            none_said: false,
            said: Vec::new(),
            criteria_said: Vec::new(),
            written: Vec::new(),
            tenfold: false,
            percents: Vec::new(),
            hours: Vec::new(),
            units: Vec::new(),
            fields_said: Vec::new(),
            entries_said: Vec::new(),
            based: false,
            repeats: false,
            rounds_to: None,
            round_digits: rounding_digits(text),
            converters: converters(text),
            refiners: refiners(text),
            later_equals: Vec::new(),
            sums: Vec::new(),
            unset_reads: attributes_never_read(&code),
            signatures: signatures(text),
            parameter_names: parameter_names(text),
            offsets: offsets(text),
            compared: picked(text, |line, toks, k| {
                let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
                let order = |s: &str| matches!(s, "<" | ">" | "<=" | ">=");
                let beside = order(text(k.wrapping_sub(1))) || order(text(k + 1));
                (toks[k].kind == Kind::Name && beside && text(k.wrapping_sub(1)) != ".")
                    .then(|| text(k))
            }),
        }
    }

    /// The names for the 1-based line `n` of `text`: the file's, with the locals never read that the function
    /// holding the line assigns (a plain `name = ...` of its body) before it.
    pub fn at(&self, text: &str, n: usize) -> Names {
        let mut out = self.clone();
        let lines: Vec<&str> = text.lines().collect();
        let indent = |l: &str| l.len() - l.trim_start().len();
        let Some(line) = n.checked_sub(1).and_then(|k| lines.get(k)) else {
            return out;
        };
        let depth = indent(line);
        let def = (0..n - 1).rev().find(|&d| {
            let l = lines[d];
            !l.trim().is_empty() && indent(l) < depth && {
                let t = l.trim_start();
                t.starts_with("def ") || t.starts_with("async def ")
            }
        });
        let Some(def) = def else { return out };
        let body = super::body_lines(&lines, def);
        if !body.contains(&(n - 1)) {
            return out;
        }
        let code = code_tokens(text);
        out.later_equals = later_equals(&lines, n - 1);
        out.locals = locals(&code, def, n - 1, &body, &self.constants);
        out.cased = says_case_ignored(&lines, def, &body);
        let name = lines[def]
            .trim_start()
            .trim_start_matches("async ")
            .trim_start_matches("def ");
        let name = name.split('(').next().unwrap_or_default();
        let spacing = ["whitespace", "space", "spaces", "blank", "blanks", "lines"];
        out.normaliser = super::insertions::normalising(name)
            && !name
                .split('_')
                .any(|w| spacing.contains(&w.to_ascii_lowercase().as_str()));
        out.based = says_based(&lines, def, &body);
        out.repeats = steps_what_it_tests(&code, n - 1, &body);
        if body
            .iter()
            .take(3)
            .chain([&def])
            .any(|&b| speaks_of_rounding(lines[b]))
        {
            out.rounds_to = Some(out.round_digits.clone());
        }
        out.none_said = body.iter().take(3).any(|&b| lines[b].contains("None"));
        out.stale = stale_loop_names(&lines, &code, n - 1, &body);
        out.parts = text_parts(&code, &body, n - 1);
        out.indents = loop_edge_indents(&lines, n - 1, &body);
        out.sums = sums_before(&lines, &body, n - 1);
        for (_, t) in code.iter().filter(|(k, _)| body.contains(k) && *k < n - 1) {
            for w in t.windows(3) {
                let pair = (w[0].clone(), w[2].clone());
                if w[1] == "//" && super::is_name(&w[0]) && !out.divided.contains(&pair) {
                    out.divided.push(pair);
                }
            }
        }
        let of_body = || {
            code.iter()
                .filter(|(k, _)| body.contains(k))
                .map(|(_, t)| t)
        };
        for (_, toks) in code.iter().filter(|(k, _)| body.contains(k) && *k < n - 1) {
            // Each name a plain assignment binds (`days, rest = divmod(...)`), not a throwaway `_`.
            let bound = toks[..targets(toks)].iter().step_by(2);
            for name in bound.filter(|t| !t.starts_with('_')) {
                if toks.len() > 2 && !out.unread.contains(name) && never_read(of_body(), name) {
                    out.unread.push(name.clone());
                }
            }
            // Each name a `for` header unpacks (`for dish, price, quantity in order:`) that no other line reads.
            if toks.first().is_some_and(|t| t == "for") {
                let unpacked = toks[1..].iter().take_while(|t| *t != "in");
                for name in unpacked.filter(|t| super::is_name(t) && !t.starts_with('_')) {
                    let read = of_body()
                        .filter(|t| !std::ptr::eq(*t, toks))
                        .any(|t| t.iter().any(|w| w == name));
                    if !read && !out.loop_unread.contains(name) {
                        out.loop_unread.push(name.clone());
                    }
                }
            }
        }
        // Each parameter the body never reads (`base` where the body uses `DEFAULT_SERVINGS`).
        let header = code.iter().find(|(k, _)| *k == def).map(|(_, t)| t);
        for p in header.map(|t| parameters(t)).unwrap_or_default() {
            let read = of_body().any(|t| {
                t.iter()
                    .enumerate()
                    .any(|(k, w)| *w == p && (k == 0 || t[k - 1] != "."))
            });
            if !read && !out.unread.contains(&p) {
                out.unread.push(p);
            }
        }
        out
    }
}

/// Whether the first lines of the function at `def` (its `def` line and docstring) speak of 0-based or 1-based
/// positions.
fn says_based(lines: &[&str], def: usize, body: &[usize]) -> bool {
    body.iter().take(3).chain([&def]).any(|&b| {
        let l = lines[b].to_ascii_lowercase();
        [
            "0-based",
            "1-based",
            "zero-based",
            "one-based",
            "0-indexed",
            "1-indexed",
        ]
        .iter()
        .any(|w| l.contains(w))
    })
}

/// Whether a docstring's or a task's `text` speaks of rounding: money to the penny or cent, decimal places.
pub(super) fn speaks_of_rounding(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_ascii_lowercase)
        .collect();
    let rounding = ["penny", "pence", "cents", "decimal", "decimals", "rounded"];
    words.iter().any(|w| rounding.contains(&w.as_str()))
}

/// The digits the file's own `round(x, N)` calls give most often, else `2` (money).
fn rounding_digits(text: &str) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (i, _) in text.match_indices("round(") {
        let rest = &text[i + 6..];
        // The call's own closing bracket, past those of the calls inside it.
        let mut depth = 0usize;
        let close = rest.char_indices().find_map(|(j, c)| match c {
            '(' | '[' | '{' => {
                depth += 1;
                None
            }
            ')' | ']' | '}' if depth == 0 => Some(j),
            ')' | ']' | '}' => {
                depth -= 1;
                None
            }
            '\n' => Some(j),
            _ => None,
        });
        let Some(close) = close else { continue };
        let Some((_, digits)) = rest[..close].rsplit_once(',') else {
            continue;
        };
        let digits = digits.trim();
        if digits.len() == 1 && digits.chars().all(|c| c.is_ascii_digit()) {
            match counts.iter_mut().find(|(d, _)| d == digits) {
                Some((_, n)) => *n += 1,
                None => counts.push((digits.to_string(), 1)),
            }
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
        .into_iter()
        .next()
        .map_or_else(|| "2".to_string(), |(d, _)| d)
}

/// A result returned unrounded where its function's docstring or the task speaks of pence or decimals
/// ([`Names::rounds_to`]): `return price` to `return round(price, 2)`. Not a value that is no number (a literal
/// text, a truth value, a comparison, a collection) nor one already rounded.
fn rounded_result(line: &str, toks: &[Tok], names: &Names) -> Option<String> {
    let digits = names.rounds_to.as_deref()?;
    let value = line.trim_start().strip_prefix("return ")?.trim_end();
    let text = |t: &Tok| &line[t.start..t.end];
    let first = toks.get(1)?;
    let plain = !matches!(first.kind, Kind::Str)
        && !matches!(
            text(first),
            "[" | "{" | "(" | "not" | "None" | "True" | "False"
        )
        && !toks.iter().any(|t| {
            matches!(
                text(t),
                "round"
                    | "=="
                    | "!="
                    | "<"
                    | ">"
                    | "<="
                    | ">="
                    | "and"
                    | "or"
                    | "in"
                    | "is"
                    | "if"
                    | "for"
            ) || t.kind == Kind::Str
        });
    let indent = &line[..line.len() - line.trim_start().len()];
    plain.then(|| format!("{indent}return round({value}, {digits})"))
}

/// Whether the line `k` (0-based) of a function's `body` is an `if` header whose block's first statement changes a
/// name the condition reads (`due += timedelta(days=7)` under `if due.month in NO_TRIM_MONTHS:`), by the `code`
/// tokens of each line.
fn steps_what_it_tests(code: &[(usize, Vec<String>)], k: usize, body: &[usize]) -> bool {
    let Some((_, head)) = code.iter().find(|(j, _)| *j == k) else {
        return false;
    };
    if head.first().is_none_or(|w| w != "if") || head.last().is_none_or(|w| w != ":") {
        return false;
    }
    let read: Vec<&String> = head.iter().filter(|w| super::is_name(w)).collect();
    let first = code.iter().find(|(j, _)| body.contains(j) && *j > k);
    first.is_some_and(|(_, t)| {
        let op = t.get(1).map(String::as_str);
        t.first().is_some_and(|w| read.contains(&w))
            && matches!(op, Some("+=" | "-=" | "*=" | "/=" | "="))
    })
}

/// The parameters a `def` line's tokens name, in order: not `self` or `cls`, not a default's value, not `*` or `**`.
fn parameters(def: &[String]) -> Vec<String> {
    let Some(open) = def.iter().position(|t| t == "(") else {
        return Vec::new();
    };
    let (mut out, mut depth, mut in_default) = (Vec::new(), 0, false);
    for (k, t) in def.iter().enumerate().skip(open + 1) {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" if depth == 0 => break,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => in_default = false,
            "=" if depth == 0 => in_default = true,
            _ if depth == 0 && !in_default && super::is_name(t) => {
                let annotation = def.get(k - 1).is_some_and(|p| p == ":");
                if !annotation && !matches!(t.as_str(), "self" | "cls") && !t.starts_with('_') {
                    out.push(t.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// The locals bound before the 0-based line `at` of the function whose `def` is the 0-based line `def` (its
/// `body`, by the file's `code` tokens): its parameters, then the names its body's earlier lines assign, in order,
/// without `self`, `cls` and the module's `constants`.
fn locals(
    code: &[(usize, Vec<String>)],
    def: usize,
    at: usize,
    body: &[usize],
    constants: &[String],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let keep = |t: &String, out: &mut Vec<String>| {
        if !matches!(t.as_str(), "self" | "cls") && !constants.contains(t) && !out.contains(t) {
            out.push(t.clone());
        }
    };
    for (k, toks) in code {
        if *k == def {
            // A parameter follows `(`, `,` or a star at the parentheses' first depth; a default's names are no
            // parameters.
            let mut depth = 0;
            for (i, t) in toks.iter().enumerate() {
                match t.as_str() {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    _ => {}
                }
                let after = i.checked_sub(1).map_or("", |p| toks[p].as_str());
                if depth == 1 && super::is_name(t) && matches!(after, "(" | "," | "*" | "**") {
                    keep(t, &mut out);
                }
            }
        } else if *k < at && body.contains(k) {
            let bound = super::defines(toks);
            for t in toks.iter().filter(|t| bound.contains(*t)) {
                keep(t, &mut out);
            }
        }
    }
    out
}

/// The indentations of the 0-based line `at` of a function's `body` one block across a loop's edge
/// ([`Names::indents`]).
fn loop_edge_indents(lines: &[&str], at: usize, body: &[usize]) -> Vec<String> {
    let indent = |k: usize| &lines[k][..lines[k].len() - lines[k].trim_start().len()];
    let looping = |k: usize| {
        let t = lines[k].trim_start();
        (t.starts_with("for ") || t.starts_with("while ")) && t.trim_end().ends_with(':')
    };
    let Some(i) = body.iter().position(|&b| b == at) else {
        return Vec::new();
    };
    let depth = indent(at).len();
    let mut out = Vec::new();
    // The last line of a loop's own body: the loop's indentation.
    let header = body[..i].iter().rev().find(|&&b| indent(b).len() < depth);
    let last = body
        .get(i + 1)
        .is_none_or(|&next| indent(next).len() < depth);
    if let Some(&h) = header.filter(|&&h| looping(h) && last) {
        out.push(indent(h).to_string());
    }
    // The line just after a loop at the loop's depth: the indentation of the loop's body.
    if let Some(&prev) = i
        .checked_sub(1)
        .map(|p| &body[p])
        .filter(|&&p| indent(p).len() > depth)
    {
        let opener = body[..i].iter().rev().find(|&&b| indent(b).len() <= depth);
        if let Some(&o) = opener.filter(|&&o| looping(o) && indent(o).len() == depth) {
            let first = body.iter().find(|&&b| b > o).copied().unwrap_or(prev);
            out.push(indent(first).to_string());
        }
    }
    out
}

/// The names of the `for` loops of a function's `body` (0-based lines of `lines`, tokens `code`) that ended above
/// the 0-based line `at`, which is no deeper than the loop, and are not bound again before it ([`Names::stale`]).
fn stale_loop_names(
    lines: &[&str],
    code: &[(usize, Vec<String>)],
    at: usize,
    body: &[usize],
) -> Vec<(String, Vec<String>)> {
    let indent = |k: usize| lines[k].len() - lines[k].trim_start().len();
    let toks_of = |k: usize| code.iter().find(|(j, _)| *j == k).map(|(_, t)| t);
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for &f in body.iter().filter(|&&f| f < at) {
        let Some(toks) = toks_of(f).filter(|t| t.first().is_some_and(|w| w == "for")) else {
            continue;
        };
        let depth = indent(f);
        let block: Vec<usize> = body
            .iter()
            .copied()
            .skip_while(|&b| b <= f)
            .take_while(|&b| indent(b) > depth)
            .collect();
        let Some(&end) = block.last() else { continue };
        if end >= at || indent(at) > depth {
            continue;
        }
        let targets = toks.iter().skip(1).take_while(|t| *t != "in");
        for target in targets.filter(|t| super::is_name(t)) {
            let bound_again = body
                .iter()
                .filter(|&&b| b > end && b < at)
                .filter_map(|&b| toks_of(b))
                .any(|t| super::defines(t).contains(target));
            if bound_again || out.iter().any(|(n, _)| n == target) {
                continue;
            }
            // Those that add it up as it is (`used += weight`) first, then those that add more of it.
            let mut sums: Vec<String> = Vec::new();
            let mut adders: Vec<String> = Vec::new();
            let mut others: Vec<String> = Vec::new();
            for t in block.iter().filter_map(|&b| toks_of(b)) {
                let Some(name) = t.first().filter(|n| super::is_name(n) && *n != target) else {
                    continue;
                };
                let adds = t.get(1).is_some_and(|o| o == "+=") && t[2..].contains(target);
                if adds && t.len() == 3 && !sums.contains(name) {
                    sums.push(name.clone());
                }
                let assigns = t
                    .get(1)
                    .is_some_and(|o| matches!(o.as_str(), "=" | "+=" | "-="));
                let fresh = !adders.contains(name) && !others.contains(name);
                if adds && !adders.contains(name) {
                    adders.push(name.clone());
                } else if assigns && fresh {
                    others.push(name.clone());
                }
            }
            adders.retain(|a| !sums.contains(a));
            others.retain(|o| !adders.contains(o) && !sums.contains(o));
            sums.extend(adders);
            sums.extend(others);
            // Last, nothing: the loop found none (`return scores, winner` after a match nobody won).
            sums.truncate(MAX_STALE - 1);
            sums.push("None".into());
            out.push((target.clone(), sums));
        }
    }
    out
}

/// The offsets of a Python file ([`Names::offsets`]): each `A - name`, `A + name`, `name - A` or `name + A` its
/// code writes (`A` a name or a number, `name` a name, not an attribute), standing alone between lower-precedence
/// neighbours, once each.
fn offsets(text: &str) -> Vec<(String, String)> {
    let prose = super::prose_lines(text);
    let mut out: Vec<(String, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(toks) = lex(line).filter(|_| prose.get(n) != Some(&true)) else {
            continue;
        };
        let t = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
        for k in 1..toks.len().saturating_sub(1) {
            let operand = |i: usize| {
                matches!(toks[i].kind, Kind::Name | Kind::Number) && !KEYWORDS.contains(&t(i))
            };
            // Nothing that binds tighter on either side: no product, no attribute, call or index.
            let tight =
                |s: &str| matches!(s, "*" | "/" | "//" | "%" | "**" | "." | "~" | "<<" | ">>");
            let before = t(k.wrapping_sub(2));
            let after = t(k + 2);
            let alone =
                !tight(before) && before != "-" && !tight(after) && !matches!(after, "(" | "[");
            if !matches!(t(k), "+" | "-") || !operand(k - 1) || !operand(k + 1) || !alone {
                continue;
            }
            let expr = format!("{} {} {}", t(k - 1), t(k), t(k + 1));
            for name in [k - 1, k + 1] {
                if toks[name].kind == Kind::Name {
                    let pair = (t(name).to_string(), expr.clone());
                    if !out.contains(&pair) {
                        out.push(pair);
                    }
                }
            }
        }
    }
    out
}

/// The defaults of a Python file's `def` lines ([`Names::defaults`]): each `name=value` at the parameters' first
/// depth, its value one token (`-` and a number, at most) as the line writes it.
fn defaults(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let Some(toks) = lex(line) else { continue };
        for (k, _, span) in defaults_of(line, &toks) {
            let pair = (
                line[toks[k].start..toks[k].end].to_string(),
                span.to_string(),
            );
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// The defaults a `def` line gives (none for another line): the parameter's token, and the default's byte span
/// and text, for a default of one token (or `-` and a number).
fn defaults_of<'l>(line: &'l str, toks: &[Tok]) -> Vec<(usize, (usize, usize), &'l str)> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let def = (0..2).any(|i| text(i) == "def");
    let mut out = Vec::new();
    let mut depth = 0;
    for k in 0..toks.len() {
        match text(k) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        let param = toks[k].kind == Kind::Name && matches!(text(k.wrapping_sub(1)), "(" | ",");
        if !def || depth != 1 || !param || text(k + 1) != "=" {
            continue;
        }
        let from = k + 2;
        let to = if text(from) == "-" { from + 1 } else { from };
        let ends = matches!(text(to + 1), "," | ")");
        if to < toks.len() && toks[to].kind != Kind::Op && ends {
            let span = (toks[from].start, toks[to].end);
            out.push((k, span, &line[span.0..span.1]));
        }
    }
    out
}

/// A `def` line's defaults exchanged for what the same parameter defaults to elsewhere in the file, or for a
/// module constant whose name holds the parameter's (`tip_percent=0.15` to `tip_percent=DEFAULT_TIP_PERCENT`), or,
/// for a number or a string, for another of the file's constants (`n=1` to `n=SHOWN`): at most [`MAX_CONSTANTS`].
fn default_swaps(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let mut out = Vec::new();
    for (k, (a, b), value) in defaults_of(line, toks) {
        let param = &line[toks[k].start..toks[k].end];
        let upper = param.to_ascii_uppercase();
        let elsewhere = names
            .defaults
            .iter()
            .filter(|(p, v)| p == param && v != value)
            .map(|(_, v)| v.as_str());
        let named = |c: &&String| upper.len() >= 3 && c.contains(&upper);
        // A literal default may be meant as any of the file's constants, those named after it first.
        let literal = toks[k + 2].kind != Kind::Name;
        let constants = names
            .constants
            .iter()
            .filter(named)
            .chain(names.constants.iter().filter(|c| literal && !named(c)))
            .filter(|c| *c != value)
            .map(String::as_str);
        let mut seen: Vec<&str> = Vec::new();
        for with in elsewhere.chain(constants) {
            if !seen.contains(&with) && seen.len() < MAX_CONSTANTS {
                seen.push(with);
                out.push(format!("{}{with}{}", &line[..a], &line[b..]));
            }
        }
    }
    out
}

/// The file's own sum or difference of a name read bare ([`Names::offsets`]): `FULL_MASK << prefix` to
/// `FULL_MASK << (ADDRESS_BITS - prefix)`, each read name with at most two of them. Not on a `def` line, not a name
/// assigned, called or taken as an attribute, nor one already in such an expression.
fn offset_uses(line: &str, toks: &[Tok], offsets: &[(String, String)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    if matches!(text(0), "def" | "async" | "class") || offsets.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let s = text(k);
        let bare = t.kind == Kind::Name
            && !matches!(text(k.wrapping_sub(1)), "." | "+" | "-")
            && !matches!(text(k + 1), "(" | "=" | "+=" | "-=" | "." | "+" | "-");
        if !bare {
            continue;
        }
        let kin = offsets.iter().filter(|(n, _)| n == s).take(2);
        out.extend(kin.map(|(_, e)| format!("{}({e}){}", &line[..t.start], &line[t.end..])));
    }
    out
}

/// Another local of the function read in the place of a local (`range(rows)` for `range(cols)`), each read of a
/// local ([`Names::locals`]) or of `self` with at most [`MAX_CONSTANTS`] others, the latest bound first. Not on a
/// `def` line, not a name assigned or called, nor a `for` loop's own names. Of an assignment's line, `value` picks
/// the reads of the value it assigns (the likelier slip: `card["spent"] += price` for `+= charged`), or else those
/// of its target; of any other line, `value` picks every read.
fn local_swaps(line: &str, toks: &[Tok], locals: &[String], value: bool) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    if matches!(text(0), "def" | "async" | "class") {
        return Vec::new();
    }
    let targets_end = if text(0) == "for" {
        (0..toks.len()).find(|&i| text(i) == "in").unwrap_or(0)
    } else {
        0
    };
    let assigned = (0..toks.len()).find(|&i| {
        matches!(text(i), "=" | "+=" | "-=" | "*=" | "/=" | "//=" | "%=")
            && depth_at(line, toks, 0, i) == 0
    });
    let (from, to) = match (assigned, value) {
        (Some(a), true) => (a + 1, toks.len()),
        (Some(a), false) => (targets_end, a),
        (None, true) => (targets_end, toks.len()),
        (None, false) => (0, 0),
    };
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate().take(to).skip(from) {
        let s = text(k);
        // `self` too, for a method's call on the wrong object (`self.deposit(amount)` for `other.deposit(amount)`).
        let read = t.kind == Kind::Name
            && (s == "self" || locals.iter().any(|l| l == s))
            && text(k.wrapping_sub(1)) != "."
            && !matches!(text(k + 1), "(" | "=" | "+=" | "-=" | "*=" | "/=");
        if !read {
            continue;
        }
        let mut others: Vec<&String> = locals
            .iter()
            .rev()
            .filter(|l| *l != s && !degenerate(line, toks, k, l))
            .collect();
        // The other operand first (a name the same side of the line reads): the slip of writing one of two names
        // where the other was meant.
        let operand =
            |i: usize| !matches!(text(i + 1), "." | "(" | "[") && text(i.wrapping_sub(1)) != ".";
        others.sort_by_key(|o| !(from..to).any(|i| i != k && text(i) == o.as_str() && operand(i)));
        let others = others.into_iter().take(MAX_CONSTANTS);
        out.extend(others.map(|o| format!("{}{o}{}", &line[..t.start], &line[t.end..])));
    }
    out
}

/// Whether the name `o` put for token `k` makes a name stand on both sides of one operator (`a - a`, `n < n`): a
/// mutant that means nothing.
fn degenerate(line: &str, toks: &[Tok], k: usize, o: &str) -> bool {
    const OPS: &[&str] = &[
        "+", "-", "*", "/", "//", "%", "<", ">", "<=", ">=", "==", "!=", "and", "or",
    ];
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let bare_after = |i: usize| !matches!(text(i + 1), "." | "[" | "(");
    let right = OPS.contains(&text(k + 1)) && text(k + 2) == o && bare_after(k + 2);
    let left =
        k >= 2 && OPS.contains(&text(k - 1)) && text(k - 2) == o && (k < 3 || text(k - 3) != ".");
    right || left
}

/// How tightly a binary arithmetic operator binds (0 for any other token).
fn binding(op: &str) -> u8 {
    match op {
        "**" => 4,
        "*" | "/" | "//" | "%" => 3,
        "+" | "-" => 2,
        _ => 0,
    }
}

/// Whether token `i` of a line is a name or a number standing alone: no keyword, no call, attribute or index.
fn atom_at(line: &str, toks: &[Tok], i: usize) -> bool {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    toks.get(i).is_some_and(|t| {
        matches!(t.kind, Kind::Name | Kind::Number)
            && !KEYWORDS.contains(&text(i))
            && !matches!(text(i + 1), "(" | "." | "[")
            && text(i.wrapping_sub(1)) != "."
    })
}

/// The most regroupings of one line.
const MAX_REGROUPED: usize = 2;

/// Arithmetic grouped the wrong way, its parentheses left out: `a ** b * c` to `a ** (b * c)`, `a / b * c` to
/// `a / (b * c)`, `a - b + c` to `a - (b + c)`; and `a + b / c` to `(a + b) / c`. Each operand a name or a number
/// standing alone, at most [`MAX_REGROUPED`].
fn regrouped(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let atom = |i: usize| atom_at(line, toks, i);
    let mut out = Vec::new();
    for k in 1..toks.len().saturating_sub(3) {
        let (op1, op2) = (binding(text(k)), binding(text(k + 2)));
        if op1 == 0 || op2 == 0 || !atom(k + 1) || !atom(k + 3) {
            continue;
        }
        let binary = atom(k - 1) || matches!(text(k - 1), ")" | "]");
        let next = binding(text(k + 4));
        // `A op1 B op2 C` reads `(A op1 B) op2 C`: the second pair grouped instead.
        // Not after `*` or `+`, where either grouping is the same value.
        let differs = matches!(text(k), "**" | "/" | "//" | "-");
        if binary && differs && op1 >= op2 && next <= op2 {
            let (b, c) = (toks[k + 1].start, toks[k + 3].end);
            out.push(format!("{}({}){}", &line[..b], &line[b..c], &line[c..]));
        }
        // `A + B / C` reads `A + (B / C)`: the first pair grouped instead.
        let before = binding(text(k.wrapping_sub(2)));
        let alone = before == 0 && !matches!(text(k.wrapping_sub(2)), "." | "**");
        if atom(k - 1) && op1 == 2 && op2 == 3 && alone && next <= op2 {
            let (a, b) = (toks[k - 1].start, toks[k + 1].end);
            out.push(format!("{}({}){}", &line[..a], &line[a..b], &line[b..]));
        }
    }
    out.truncate(MAX_REGROUPED);
    out
}

/// Arithmetic grouped where it should not be: the parentheses round a sum or difference of two operands that is
/// multiplied or divided left out (`quantity * (UNIT + setup)` to `quantity * UNIT + setup`, `(a - b) / c` to
/// `a - b / c`), each operand a name or a number standing alone, at most [`MAX_REGROUPED`].
fn ungrouped(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let atom = |i: usize| atom_at(line, toks, i);
    let mut out = Vec::new();
    for k in 0..toks.len().saturating_sub(4) {
        let pair = text(k) == "("
            && atom(k + 1)
            && binding(text(k + 2)) == 2
            && atom(k + 3)
            && text(k + 4) == ")";
        if !pair {
            continue;
        }
        // Multiplied or divided on its left (`x * (`: no call's parentheses) or on its right.
        let left = k >= 2
            && binding(text(k - 1)) == 3
            && (atom(k - 2) || matches!(text(k - 2), ")" | "]"));
        let called = k > 0
            && (matches!(toks[k - 1].kind, Kind::Name) && !KEYWORDS.contains(&text(k - 1))
                || matches!(text(k - 1), ")" | "]"));
        let right = binding(text(k + 5)) == 3 && !called;
        if left || right {
            let (open, close) = (&toks[k], &toks[k + 4]);
            out.push(format!(
                "{}{}{}",
                &line[..open.start],
                &line[open.end..close.start],
                &line[close.end..]
            ));
        }
    }
    out.truncate(MAX_REGROUPED);
    out
}

/// A list's next item made from where it started rather than from its last item: in `xs.append(...)`, a name
/// standing alone read as `xs[-1]` (`concs.append(start / factor)` to `concs.append(concs[-1] / factor)`), at most
/// two.
fn running_last(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let Some(k) = (0..toks.len())
        .find(|&k| text(k + 1) == "." && text(k + 2) == "append" && text(k + 3) == "(")
    else {
        return Vec::new();
    };
    let list = text(k);
    if toks[k].kind != Kind::Name || k > 0 && text(k - 1) == "." {
        return Vec::new();
    }
    let Some(close) = closing(line, toks, k + 3) else {
        return Vec::new();
    };
    // Only a value computed from others: `xs.append(x)` alone is an item, not a step.
    if close <= k + 5 {
        return Vec::new();
    }
    (k + 4..close)
        .filter(|&i| toks[i].kind == Kind::Name && atom_at(line, toks, i) && text(i) != list)
        .take(2)
        .map(|i| {
            format!(
                "{}{list}[-1]{}",
                &line[..toks[i].start],
                &line[toks[i].end..]
            )
        })
        .collect()
}

/// A name divided by a smaller unit where its function divided it by a larger one above ([`Names::divided`]): the
/// rest after the larger unit divided instead (`seconds // MINUTE` to `(seconds % HOUR) // MINUTE`), at most two.
fn rest_divided(line: &str, toks: &[Tok], divided: &[(String, String)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 1..toks.len().saturating_sub(1) {
        let name = text(k - 1);
        let bare =
            toks[k - 1].kind == Kind::Name && !matches!(text(k.wrapping_sub(2)), "." | "%" | "(");
        if text(k) != "//" || !bare {
            continue;
        }
        let larger = divided
            .iter()
            .filter(|(n, d)| n == name && d != text(k + 1))
            .take(2);
        let t = &toks[k - 1];
        out.extend(
            larger.map(|(_, d)| format!("{}({name} % {d}){}", &line[..t.start], &line[t.end..])),
        );
    }
    out
}

/// An order the wrong way round: `sorted(scores)` to `sorted(scores, reverse=True)`, `xs.sort()` to
/// `xs.sort(reverse=True)`, for each call that does not say `reverse`. A bare generator, the call's only argument
/// (`sorted(score(f) for f in flights)`), is put in brackets of its own first: Python takes no other argument
/// beside it.
fn reversed_orders(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 0..toks.len() {
        if !matches!(text(k), "sorted" | "sort") || text(k + 1) != "(" {
            continue;
        }
        let Some(close) = closing(line, toks, k + 1) else {
            continue;
        };
        let at = toks[close].start;
        let open = toks[k + 1].end;
        let inner = &line[open..at];
        if inner.contains("reverse") {
            continue;
        }
        let top = |i: usize| depth_at(line, toks, k + 1, i) == 1;
        // A generator's own commas (`for s, l in ...`) come after its `for`.
        let generator = (k + 2..close).find(|&i| text(i) == "for" && top(i));
        let bare = generator.is_some_and(|g| !(k + 2..g).any(|i| text(i) == "," && top(i)));
        if bare {
            out.push(format!(
                "{}({inner}), reverse=True{}",
                &line[..open],
                &line[at..]
            ));
        } else {
            let comma = if inner.trim().is_empty() { "" } else { ", " };
            out.push(format!("{}{comma}reverse=True{}", &line[..at], &line[at..]));
        }
    }
    out
}

/// A difference meant as a distance, its sign dropped: the first `a - b` of two names or numbers standing alone
/// (nothing tighter on either side) to `abs(a - b)`.
fn absolute_difference(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let atom = |i: usize| atom_at(line, toks, i);
    let loose = |s: &str| binding(s) < 3 && !matches!(s, "." | "-" | "+" | "~" | "abs");
    (1..toks.len().saturating_sub(1)).find_map(|k| {
        let before = if k >= 2 { text(k - 2) } else { "" };
        let wrapped = before == "(" && k >= 3 && text(k - 3) == "abs";
        let alone = loose(before) && loose(text(k + 2)) && !wrapped;
        (text(k) == "-" && atom(k - 1) && atom(k + 1) && alone).then(|| {
            let (a, b) = (toks[k - 1].start, toks[k + 1].end);
            format!("{}abs({}){}", &line[..a], &line[a..b], &line[b..])
        })
    })
}

/// A ratio turned upside down: `a / b` to `b / a` (`distance / litres * 100` to `litres / distance * 100`), for
/// two names or numbers standing alone with nothing tighter on either side; at most two a line.
fn ratio_inverted(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let atom = |i: usize| atom_at(line, toks, i);
    let tighter = |s: &str| matches!(s, "." | "**" | "/" | "//" | "%" | "~");
    let mut out = Vec::new();
    for k in 1..toks.len().saturating_sub(1) {
        let before = if k >= 2 { text(k - 2) } else { "" };
        if text(k) != "/" || !atom(k - 1) || !atom(k + 1) || tighter(before) || text(k + 2) == "**"
        {
            continue;
        }
        let (a, b) = (&toks[k - 1], &toks[k + 1]);
        let (left, right) = (&line[a.start..a.end], &line[b.start..b.end]);
        if left != right {
            out.push(format!(
                "{}{right}{}{left}{}",
                &line[..a.start],
                &line[a.end..b.start],
                &line[b.end..]
            ));
        }
    }
    out.truncate(2);
    out
}

/// A difference taken the wrong way round: `a - b` to `b - a`, for a whole expression (after `=`, `return`, an
/// opening bracket or a comma, up to the next comma, closing bracket or end) that is one subtraction of two
/// operands, each a name, a number, a call, an attribute or a subscript, with no looser operator beside it.
fn operands_swapped(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let opens = |s: &str| matches!(s, "=" | "return" | "(" | "[" | "," | "+=" | "-=");
    let closes = |s: &str| matches!(s, "," | ")" | "]" | ":" | "");
    let mut out = Vec::new();
    for start in (0..toks.len()).filter(|&k| opens(text(k))) {
        // The expression's tokens at its own depth, up to where it closes.
        let (mut depth, mut minus, mut end) = (0i32, Vec::new(), toks.len());
        let mut loose = false;
        for (k, tok) in toks.iter().enumerate().skip(start + 1) {
            let s = text(k);
            match s {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth > 0 => depth -= 1,
                _ if depth == 0 && closes(s) => {
                    end = k;
                    break;
                }
                "-" if depth == 0 => minus.push(k),
                _ if depth == 0 => {
                    let binary_op = tok.kind == Kind::Op && !matches!(s, "." | "**");
                    let word = matches!(
                        s,
                        "and" | "or" | "if" | "else" | "not" | "in" | "is" | "for" | "lambda"
                    );
                    loose |= binary_op || word;
                }
                _ => {}
            }
        }
        let [m] = minus.as_slice() else { continue };
        let m = *m;
        if loose || m <= start + 1 || m + 1 >= end || text(m - 1) == "," {
            continue;
        }
        let (a0, a1) = (toks[start + 1].start, toks[m - 1].end);
        let (b0, b1) = (toks[m + 1].start, toks[end - 1].end);
        if line[a0..a1] != line[b0..b1] {
            out.push(format!(
                "{}{}{}{}{}",
                &line[..a0],
                &line[b0..b1],
                &line[a1..b0],
                &line[a0..a1],
                &line[b1..]
            ));
        }
    }
    out.truncate(2);
    out
}

/// The sums a function's `body` (0-based lines of `lines`) binds before the 0-based line `at`, each name with its
/// terms, of two or more (`food = sets_total(order) + extras_total(order)`); a line with a comment is left out.
fn sums_before(lines: &[&str], body: &[usize], at: usize) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for &b in body.iter().filter(|&&b| b < at) {
        let Some((name, value)) = lines[b].trim().split_once(" = ") else {
            continue;
        };
        if !super::is_name(name) || value.contains('#') {
            continue;
        }
        let mut terms = Vec::new();
        let (mut depth, mut from) = (0i32, 0);
        for (i, c) in value.char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                '+' if depth == 0
                    && value[..i].ends_with(' ')
                    && value[i + 1..].starts_with(' ') =>
                {
                    terms.push(value[from..i].trim().to_string());
                    from = i + 1;
                }
                _ => {}
            }
        }
        terms.push(value[from..].trim().to_string());
        if terms.len() >= 2 && depth == 0 {
            out.push((name.to_string(), terms));
        }
    }
    out
}

/// A term of a sum the function bound before ([`Names::sums`]) read again where the sum was meant: the term, a call
/// or a subscript (not a bare name), exchanged for the sum's name (`sets_total(order) * SERVICE_RATE` to `food *
/// SERVICE_RATE`).
fn partial_sums(line: &str, sums: &[(String, Vec<String>)]) -> Vec<String> {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut out = Vec::new();
    for (name, terms) in sums {
        for term in terms.iter().filter(|t| t.ends_with([')', ']'])) {
            let Some(at) = line
                .match_indices(term.as_str())
                .map(|(i, _)| i)
                .find(|&i| !line[..i].ends_with(word) && !line[i + term.len()..].starts_with(word))
            else {
                continue;
            };
            out.push(format!("{}{name}{}", &line[..at], &line[at + term.len()..]));
        }
    }
    out
}

/// The most names a loop's name read after its loop is exchanged for.
const MAX_STALE: usize = 3;

/// A loop's name read after its loop ([`Names::stale`]) exchanged for a name the loop assigns, those that add it up
/// first (`total / weight` to `total / used`), then for `None` (`return scores, None`: the loop found nothing), at
/// most [`MAX_STALE`] for each read.
fn stale_reads(line: &str, toks: &[Tok], stale: &[(String, Vec<String>)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let read = t.kind == Kind::Name
            && text(k.wrapping_sub(1)) != "."
            && !matches!(text(k + 1), "(" | "=" | "+=" | "-=");
        let Some((_, with)) = stale.iter().find(|(n, _)| read && n == text(k)) else {
            continue;
        };
        let with = with.iter().take(MAX_STALE);
        out.extend(with.map(|w| format!("{}{w}{}", &line[..t.start], &line[t.end..])));
    }
    out
}

/// The fields of each record class of a Python file ([`Names::fields`]): the annotated names a class body declares
/// at its own depth (`high: float`, a dataclass's or a `NamedTuple`'s), else the attributes its `__init__` sets
/// from the parameters of the same name ([`init_fields`]), and the names a `namedtuple` call lists
/// (`namedtuple("Reading", "day high low")`, or as a list of strings); classes with fewer than two left out.
pub(in crate::locate_rank) fn record_fields(text: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let depth = |l: &str| l.len() - l.trim_start().len();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("class ") {
            let mut fields = Vec::new();
            let body = lines[k + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || depth(l) > depth(line));
            let inner = lines.get(k + 1).map_or(0, |l| depth(l));
            for l in body.filter(|l| depth(l) == inner) {
                let Some((name, rest)) = l.trim().split_once(':') else {
                    continue;
                };
                let annotated = !rest.trim().is_empty() && !rest.starts_with(':');
                if annotated && super::is_name(name.trim()) && !name.contains(' ') {
                    fields.push(name.trim().to_string());
                }
            }
            if fields.is_empty() {
                fields = init_fields(&lines, k);
            }
            out.push(fields);
        }
        if let Some(at) = code.find("namedtuple(") {
            let args = &code[at + "namedtuple(".len()..];
            let Some((_, listed)) = args.split_once(',') else {
                continue;
            };
            let listed = listed.rsplit_once(')').map_or(listed, |(l, _)| l);
            let fields = listed
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| super::is_name(w))
                .map(str::to_string)
                .collect();
            out.push(fields);
        }
    }
    out.retain(|f: &Vec<String>| f.len() >= 2);
    out
}

/// The `if NAME == VALUE:` tests after the 0-based line `at` at its depth, up to where its block ends
/// ([`Names::later_equals`]).
fn later_equals(lines: &[&str], at: usize) -> Vec<(String, String)> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let depth = indent(lines[at]);
    let mut out = Vec::new();
    for l in lines[at + 1..].iter().filter(|l| !l.trim().is_empty()) {
        if indent(l) < depth {
            break;
        }
        let test = l
            .trim()
            .strip_prefix("if ")
            .and_then(|t| t.strip_suffix(':'));
        let Some((name, value)) = test.and_then(|t| t.split_once(" == ")) else {
            continue;
        };
        let plain = |w: &str| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        };
        if indent(l) == depth && plain(name) && plain(value) {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// The attributes the methods of a file's classes refine ([`Names::refiners`]): each public method that takes only
/// `self` and returns a value (`def spare(self): return self.capacity - self.guests`), with every attribute its body
/// reads and never sets, as (the attribute, the call: `spare()`, or a property's bare name), in order.
fn refiners(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let depth = |l: &str| l.len() - l.trim_start().len();
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let Some((name, params)) = line
            .trim_start()
            .strip_prefix("def ")
            .and_then(|r| r.split_once('('))
        else {
            continue;
        };
        if depth(line) == 0 || name.starts_with('_') || !params.starts_with("self)") {
            continue;
        }
        let property = k > 0 && lines[k - 1].trim() == "@property";
        let call = if property {
            name.to_string()
        } else {
            format!("{name}()")
        };
        let body: Vec<&str> = lines[k + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || depth(l) > depth(line))
            .copied()
            .collect();
        if !body.iter().any(|l| l.trim_start().starts_with("return ")) {
            continue;
        }
        let mut read: Vec<String> = Vec::new();
        let mut set: Vec<String> = Vec::new();
        for l in &body {
            for (at, _) in l.match_indices("self.") {
                let rest = &l[at + 5..];
                let attr: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let after = rest[attr.len()..].trim_start();
                let written = after.starts_with('=') && !after.starts_with("==")
                    || ["+=", "-=", "*=", "/="]
                        .iter()
                        .any(|o| after.starts_with(o));
                if attr.is_empty() || after.starts_with('(') || attr == name {
                    continue;
                }
                let list = if written { &mut set } else { &mut read };
                if !list.contains(&attr) {
                    list.push(attr);
                }
            }
        }
        for attr in read.into_iter().filter(|a| !set.contains(a)) {
            out.push((attr, call.clone()));
        }
    }
    out
}

/// The attributes a plain class's `__init__` (in the class that opens at the 0-based line `class`) sets from its
/// parameters (`self.face_value = face_value`), in order.
fn init_fields(lines: &[&str], class: usize) -> Vec<String> {
    let depth = |l: &str| l.len() - l.trim_start().len();
    let body = || {
        lines[class + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || depth(l) > depth(lines[class]))
    };
    let Some(init) = body().position(|l| l.trim_start().starts_with("def __init__(")) else {
        return Vec::new();
    };
    let def = lines[class + 1 + init];
    let params = def.split_once('(').map_or("", |(_, p)| p);
    let mut out: Vec<String> = Vec::new();
    for l in body()
        .skip(init + 1)
        .take_while(|l| l.trim().is_empty() || depth(l) > depth(def))
    {
        let Some((target, value)) = l.trim().split_once(" = ") else {
            continue;
        };
        let Some(name) = target.strip_prefix("self.").filter(|n| super::is_name(n)) else {
            continue;
        };
        let given = params
            .split([',', ')', '=', ':'])
            .any(|p| p.trim() == value.trim());
        if given && name == value.trim() && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The factors of a Python file ([`Names::factors`]), those in the fields of its f-strings (`fields`,
/// [`fstring_fields`]) too (`f"{total // 60:02d}"`).
fn factors(text: &str, fields: &str) -> Vec<String> {
    let pick = |line, toks: &[Tok], k: usize| {
        factor_at(line, toks, k).then(|| &line[toks[k].start..toks[k].end])
    };
    joined(picked(text, pick), picked(fields, pick))
}

/// `first`, then each of `more` it does not hold.
fn joined(mut first: Vec<String>, more: Vec<String>) -> Vec<String> {
    for m in more {
        if !first.contains(&m) {
            first.push(m);
        }
    }
    first
}

/// The expressions in the replacement fields of a Python file's f-strings, one a line, each without its format
/// spec or conversion (`f"{total // 60:02d}"`: `total // 60`; `f"{r['code']:<8}"`: `r['code']`).
fn fstring_fields(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let Some(toks) = lex(line) else {
            continue;
        };
        for t in toks.iter().filter(|t| t.kind == Kind::Str) {
            let lit = &line[t.start..t.end];
            if !lit.starts_with(['f', 'F']) {
                continue;
            }
            let mut depth = 0;
            let mut field = String::new();
            for c in lit.chars() {
                match c {
                    '{' if depth == 0 => {
                        depth = 1;
                        field.clear();
                    }
                    '}' if depth == 1 => {
                        depth = 0;
                        let expr = field.split([':', '!']).next().unwrap_or_default().trim();
                        if !expr.is_empty() && !expr.contains('\\') {
                            out.push_str(expr);
                            out.push('\n');
                        }
                    }
                    c if depth == 1 => field.push(c),
                    _ => {}
                }
            }
        }
    }
    out
}

/// The most mutants of one f-string field that are tried.
const MAX_PER_FIELD: usize = 4;

/// The code in the fields of an f-string literal `lit` (at byte `at` of `line`) mutated as a line of its own, the
/// first [`MAX_PER_FIELD`] of each field (`{digits[:4]}` to `{digits[-4:]}`): a field is code the line's tokens
/// keep inside one string.
fn field_mutants(line: &str, at: usize, lit: &str, names: &Names) -> Vec<String> {
    if !lit.starts_with(['f', 'F']) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, c) in lit.char_indices() {
        match (c, open) {
            ('{', None) => open = Some(i + 1),
            // `{{` is a brace, not a field.
            ('{', Some(o)) if o == i => open = None,
            ('}', Some(o)) => {
                open = None;
                let field = &lit[o..i];
                let expr = &field[..field_code_end(field)];
                let trimmed = expr.trim_start();
                let start = at + o + (expr.len() - trimmed.len());
                let code = trimmed.trim_end();
                if code.is_empty() || code.contains(['\\', '{', '\'', '"']) {
                    continue;
                }
                let end = start + code.len();
                out.extend(
                    of_line(code, names)
                        .into_iter()
                        .take(MAX_PER_FIELD)
                        .map(|m| format!("{}{m}{}", &line[..start], &line[end..])),
                );
            }
            _ => {}
        }
    }
    out
}

/// Where the code of an f-string field ends: at its first `:` (a format spec) or `!` (a conversion, not `!=`)
/// outside brackets (`digits[:4]` is code).
fn field_code_end(field: &str) -> usize {
    let mut depth = 0i32;
    let bytes = field.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b':' if depth == 0 => return i,
            b'!' if depth == 0 && bytes.get(i + 1) != Some(&b'=') => return i,
            _ => {}
        }
    }
    field.len()
}

/// What `pick` takes out of the tokens of a Python file's code lines (prose left out), each once, in order.
fn picked<'t>(
    text: &'t str,
    pick: impl Fn(&'t str, &[Tok], usize) -> Option<&'t str>,
) -> Vec<String> {
    let prose = super::prose_lines(text);
    let mut out: Vec<String> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(toks) = lex(line).filter(|_| prose.get(n) != Some(&true)) else {
            continue;
        };
        for k in 0..toks.len() {
            if let Some(p) = pick(line, &toks, k)
                && !out.iter().any(|o| o == p)
            {
                out.push(p.to_string());
            }
        }
    }
    out
}

/// Whether token `k` of `line` is a whole number of 2 and more that something is multiplied or divided by, or
/// that multiplies (`x * 60`, `60 * x`, `x // 1000`, `x % 24`, `divmod(x, 24)`).
fn factor_at(line: &str, toks: &[Tok], k: usize) -> bool {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let t = &toks[k];
    let whole = t.kind == Kind::Number && text(k).parse::<u64>().is_ok_and(|n| n >= 2);
    let before = k.checked_sub(1).map_or("", text);
    let divmod =
        before == "," && k >= 4 && text(k + 1) == ")" && (0..k).rev().any(|i| text(i) == "divmod");
    whole && (matches!(before, "*" | "/" | "//" | "%") || text(k + 1) == "*" || divmod)
}

/// The key a line starts with, of a dict literal the lines before opened (`"category": category,`).
fn key_first<'l>(line: &'l str, toks: &[Tok]) -> Option<&'l str> {
    let t = toks.first().filter(|t| t.kind == Kind::Str)?;
    let lit = &line[t.start..t.end];
    let inner = lit.get(1..lit.len().checked_sub(1)?)?;
    let colon = toks.get(1).is_some_and(|c| &line[c.start..c.end] == ":");
    // Not the key of a table of records (`"cumberland": {"pork": ...}`): its records' keys are the fields.
    let table = toks.get(2).is_some_and(|c| &line[c.start..c.end] == "{");
    (colon && !table && lit.starts_with(['"', '\'']) && is_word_key(inner)).then_some(inner)
}

/// The dict keys of a Python file ([`Names::keys`]): string literals of a word's characters that a subscript holds
/// alone, a `.get(` reads first, or a dict literal maps (`{"sku":`, `, "sku":`, first on a line), in its code and then in the fields
/// of its f-strings (`fields`, [`fstring_fields`]).
fn keys(text: &str, fields: &str) -> Vec<String> {
    let pick = |line, toks: &[Tok], k: usize| {
        key_at(line, toks, k, true).or_else(|| (k == 0).then(|| key_first(line, toks)).flatten())
    };
    // Those read in the fields of its f-strings too (`f"{r['code']:<8}"`).
    joined(picked(text, pick), picked(fields, pick))
}

/// The keys of each dict of a Python file ([`Names::dict_keys`]): the name subscripted (`firing["peak"]`) or read
/// with `.get(` (`row.get("kg")`), or the name a dict literal is assigned to (`TIERS = {"silver": 2000,` and the
/// lines it spans), with the key, each pair once, in order.
fn dict_keys(text: &str) -> Vec<(String, String)> {
    let prose = super::prose_lines(text);
    let mut out: Vec<(String, String)> = Vec::new();
    // The name of the dict literal the line stands in, and how deep its braces are open.
    let mut open: Option<(String, i32)> = None;
    for (n, line) in text.lines().enumerate() {
        let Some(toks) = lex(line).filter(|_| prose.get(n) != Some(&true)) else {
            continue;
        };
        let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
        if open.is_none()
            && toks.len() >= 3
            && toks[0].kind == Kind::Name
            && text(1) == "="
            && text(2) == "{"
        {
            open = Some((text(0).to_string(), 0));
        }
        for k in 0..toks.len() {
            // A literal's key first on a line of its own (`    "6": 1220,`) too.
            let first = k == 0 && open.is_some() && text(1) == ":" && toks[0].kind == Kind::Str;
            let word = |s: &str| s.len() >= 2 && is_word_key(&s[1..s.len() - 1]);
            let key = key_at(line, &toks, k, true)
                .or_else(|| (first && word(text(0))).then(|| &text(0)[1..text(0).len() - 1]));
            let Some(key) = key else {
                continue;
            };
            let subscripted = k >= 2 && text(k - 1) == "[" && toks[k - 2].kind == Kind::Name;
            let got = k >= 4 && text(k - 1) == "(" && toks[k - 4].kind == Kind::Name;
            let dict = if subscripted {
                Some(text(k - 2))
            } else if got {
                Some(text(k - 4))
            } else if first || (k > 0 && matches!(text(k - 1), "{" | ",")) {
                open.as_ref().map(|(d, _)| d.as_str())
            } else {
                None
            };
            if let Some(dict) = dict {
                let pair = (dict.to_string(), key.to_string());
                if !out.contains(&pair) {
                    out.push(pair);
                }
            }
        }
        if let Some((_, depth)) = open.as_mut() {
            for t in toks.iter().map(|t| &line[t.start..t.end]) {
                match t {
                    "{" | "[" | "(" => *depth += 1,
                    "}" | "]" | ")" => *depth -= 1,
                    _ => {}
                }
            }
            if *depth <= 0 {
                open = None;
            }
        }
    }
    out
}

/// Whether the text of a string literal, without its quotes, is a plain key: a word's characters (and `-`).
fn is_word_key(inner: &str) -> bool {
    !inner.is_empty()
        && inner.len() <= 32
        && inner
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// The key (without its quotes) that token `k` of `line` is, when it is a plain string literal of word characters
/// read out of a dict (`["sku"]`, `.get("sku"`) or, with `literal`, mapped in a dict literal (`{"sku":`).
fn key_at<'l>(line: &'l str, toks: &[Tok], k: usize, literal: bool) -> Option<&'l str> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let t = &toks[k];
    let lit = &line[t.start..t.end];
    let q = lit.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = lit.strip_prefix(q)?.strip_suffix(q)?;
    let word = is_word_key(inner);
    let (before, after) = (k.checked_sub(1).map_or("", text), text(k + 1));
    let read = (before == "[" && after == "]")
        || (before == "(" && k >= 3 && text(k - 2) == "get" && text(k - 3) == ".");
    let mapped = literal && matches!(before, "{" | ",") && after == ":";
    (t.kind == Kind::Str && word && (read || mapped)).then_some(inner)
}

/// Each code line of a Python text (0-based) with its tokens: strings blanked, comments and prose lines left out.
fn code_tokens(text: &str) -> Vec<(usize, Vec<String>)> {
    let prose = super::prose_lines(text);
    text.lines()
        .enumerate()
        .filter(|(k, _)| prose.get(*k) != Some(&true))
        .map(|(k, l)| {
            let code = super::without_strings(l);
            let code = code.split('#').next().unwrap_or_default();
            (k, super::tokens(code))
        })
        .collect()
}

/// Whether `name` is only ever assigned in the lines' tokens (`name = ...` starting a line), never read.
fn never_read<'a>(lines: impl Iterator<Item = &'a Vec<String>>, name: &str) -> bool {
    let mut assigned = false;
    for toks in lines {
        let bound = targets(toks);
        for (k, t) in toks.iter().enumerate() {
            if t != name || (k > 0 && toks[k - 1] == ".") {
                continue;
            }
            if k < bound {
                assigned = true;
            } else {
                return false;
            }
        }
    }
    assigned
}

/// How many tokens of a line are the names a plain assignment binds and their commas (`days, rest = divmod(...)`:
/// 3), or 0 for any other line.
fn targets(toks: &[String]) -> usize {
    let Some(eq) = toks.iter().position(|t| t == "=") else {
        return 0;
    };
    let plain = toks[..eq].iter().enumerate().all(|(i, t)| {
        if i % 2 == 0 {
            super::is_name(t)
        } else {
            t == ","
        }
    });
    if eq > 0 && plain && eq % 2 == 1 {
        eq
    } else {
        0
    }
}

/// Whether `name` is written as a module constant is: two or more capitals, digits and underscores, a capital
/// first.
pub(super) fn constant_name(name: &str) -> bool {
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The module constants of a Python file: names in capitals assigned at its top level, in order.
fn constants(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some((name, _)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim_end();
        if constant_name(name)
            && !line.starts_with(char::is_whitespace)
            && !out.iter().any(|o| o == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// The mutants of a line's shape rather than of one token: an `if` that must repeat as a `while`, arithmetic
/// grouped the other way, and the slips of a whole expression ([`of_line`] tries them before the tokens' mutants).
fn reshaped(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let mut out = Vec::new();
    // A step the `if` takes once that must repeat until its condition fails.
    if names.repeats
        && let Some(rest) = line.trim_start().strip_prefix("if ")
    {
        out.push(format!(
            "{}while {rest}",
            &line[..line.len() - line.trim_start().len()]
        ));
    }
    out.extend(
        regrouped(line, toks)
            .into_iter()
            .chain(ungrouped(line, toks))
            .chain(running_last(line, toks))
            .chain(units_for_factors(line, toks, names))
            .chain(unread_for_items(line, toks, &names.loop_unread))
            .chain(stepped_by_field(line, toks, names))
            .chain(misread(line, toks, names))
            .chain(keys_named_as_table(line, toks))
            .chain(directives_swapped(line, toks))
            .chain(twins_swapped(line, toks, &names.locals))
            .chain(rounded_result(line, toks, names))
            .chain(unread_passed_on(line, toks, names))
            .chain(remainder_fields(line)),
    );
    out
}

/// The mutants of one line of Python, distinct and other than the line, at most [`MAX_PER_LINE`], in the order of
/// their tokens; `names` are the file's ([`Names::of`]). None for a line that cannot be read token by token (a
/// string that goes on past the line).
pub fn of_line(line: &str, names: &Names) -> Vec<String> {
    let Some(toks) = lex(line) else {
        return Vec::new();
    };
    let text = |t: &Tok| &line[t.start..t.end];
    let mut out: Vec<String> = Vec::new();
    let mut push = |m: String| {
        if m != line && !out.contains(&m) {
            out.push(m);
        }
    };
    let replace = |t: &Tok, with: &str| format!("{}{with}{}", &line[..t.start], &line[t.end..]);
    for m in of_whole_line(line, &toks, names) {
        push(m);
    }
    // Before the tokens' mutants: a long line's last ones fall off.
    for m in reshaped(line, &toks, names) {
        push(m);
    }
    for (k, t) in toks.iter().enumerate() {
        let s = text(t);
        let binary = k
            .checked_sub(1)
            .map(|p| &toks[p])
            .is_some_and(|p| match p.kind {
                Kind::Name => !KEYWORDS.contains(&text(p)),
                Kind::Number | Kind::Str => true,
                Kind::Op => matches!(text(p), ")" | "]" | "}"),
            });
        match t.kind {
            Kind::Op => op_mutants(line, &toks, k, binary)
                .into_iter()
                .for_each(&mut push),
            Kind::Name if s == "not" => {
                let end = toks.get(k + 1).map_or(t.end, |n| n.start);
                push(format!("{}{}", &line[..t.start], &line[end..]));
            }
            Kind::Name if s == "range" => {
                if let Some(at) = range_stop_end(line, &toks, k) {
                    push(format!("{} + 1{}", &line[..at], &line[at..]));
                    push(format!("{} - 1{}", &line[..at], &line[at..]));
                    // A stop moved by the step the range takes (`range(a, target + step, step)`).
                    if let Some(step) = range_step(line, &toks, k) {
                        push(format!("{} + {step}{}", &line[..at], &line[at..]));
                    }
                }
                if let Some(counted) = range_counted_from_one(line, &toks, k) {
                    push(counted);
                }
            }
            Kind::Name => name_mutants(line, &toks, k, names)
                .into_iter()
                .for_each(&mut push),
            Kind::Number => {
                number_mutants(line, &toks, k, names)
                    .into_iter()
                    .for_each(|n| push(replace(t, &n)));
                if let Some(first) = first_for_last(line, &toks, k) {
                    push(first);
                }
            }
            Kind::Str => string_mutants(line, &toks, k, names)
                .into_iter()
                .for_each(&mut push),
        }
    }
    let grouped = absolute_difference(line, &toks)
        .into_iter()
        .chain(operands_swapped(line, &toks))
        .chain(ratio_inverted(line, &toks));
    // Two neighbouring arguments or tuple items the wrong way round (`f(b, a)`, `return b, a`).
    let swapped = swaps(line, &toks, &names.signatures)
        .into_iter()
        .chain(default_swaps(line, &toks, names));
    let removed = if names.normaliser {
        spaces_removed(line, &toks)
    } else {
        Vec::new()
    };
    for m in grouped
        .chain(swapped)
        .chain(reversed_orders(line, &toks))
        .chain(removed)
    {
        push(m);
    }
    out.truncate(MAX_PER_LINE);
    out
}

/// What the number that is token `k` of `line` may have been meant as: the last index for a `0`, one more or one
/// less, a power of ten off, a constant's whole decimal value ten times off (`MM_PER_INCH = 2.54`), another of the
/// file's factors for a factor (`divmod(minutes, 24)` for `divmod(minutes, 60)`), two digits transposed.
fn number_mutants(line: &str, toks: &[Tok], k: usize, names: &Names) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let s = text(&toks[k]);
    // The middle of a count (`len(weights) // 2`) is never another of the file's factors.
    let before = k
        .checked_sub(1)
        .map_or("", |p| line[..toks[p].start].trim_end());
    let halves_count = s == "2"
        && k >= 1
        && matches!(text(&toks[k - 1]), "//" | "/")
        && before
            .strip_suffix(')')
            .and_then(|b| b.rfind("len(").map(|p| &b[p + 4..]))
            .is_some_and(|inner| !inner.contains(['(', ')']));
    let others = names
        .factors
        .iter()
        .filter(|f| *f != s && factor_at(line, toks, k) && !halves_count);
    let whole_value = k == 2
        && toks.len() == 3
        && line.starts_with(text(&toks[0]))
        && constant_name(text(&toks[0]))
        && text(&toks[1]) == "=";
    let mut moved = if whole_value {
        point_moved(s)
    } else {
        Vec::new()
    };
    // A fraction that is the wrong one of the rates the task writes as percentages (`0.20` for `0.05`: "5% VAT").
    if let Some(v) = s
        .parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v < 1.0 && s.contains('.'))
    {
        let rates = names.percents.iter().filter_map(|p| p.parse::<f64>().ok());
        let others = rates
            .map(|p| format!("{}", p / 100.0))
            .filter(|f| f.parse() != Ok(v));
        moved.extend(others.take(MAX_SAID));
    }
    // A whole constant ten times off where the task says so (`262` for `2620`: "roughly ten times lower").
    let whole = s.len() >= 2 && s.bytes().all(|c| c.is_ascii_digit()) && !s.starts_with('0');
    if whole_value && whole && names.tenfold {
        moved.push(format!("{s}0"));
        moved.push(format!("{}.{}", &s[..s.len() - 1], &s[s.len() - 1..]));
    }
    // An hour constant's whole number exchanged for an hour the task says on the clock (`night is anything from
    // 8pm`: 20 for `NIGHT_START_HOUR = 22`).
    let hour =
        whole_value && text(&toks[0]).contains("HOUR") && s.bytes().all(|c| c.is_ascii_digit());
    if hour {
        let said = names
            .hours
            .iter()
            .filter(|n| n.as_str() != s)
            .take(MAX_SAID);
        moved.extend(said.cloned());
    }
    // A constant whose whole number the task says ("above ten") exchanged for a number only the criteria say
    // (`MAX_MARK = 10` to 20: "marks from 0 to 20 are accepted").
    if whole_value && names.said.iter().any(|n| n == s) {
        moved.extend(names.criteria_said.iter().take(MAX_SAID).cloned());
    }
    let all = last_index(line, toks, k)
        .into_iter()
        .chain(numbers_near(s))
        .chain(moved)
        .chain(others.take(MAX_CONSTANTS).cloned())
        .chain(transposed_digits(s));
    // The task's own figure, written as it stands here, becomes only another figure the task writes. Not a small
    // whole number: a task writes 1 and 2 as counts and results everywhere (`{'Bo': 1}` beside `.get(name, 1)`).
    let written = |n: &str| canonical(n).is_some_and(|c| names.written.contains(&c));
    let small = s.parse::<u64>().is_ok_and(|n| n < 10);
    if written(s) && !small {
        all.filter(|n| written(n)).collect()
    } else {
        all.collect()
    }
}

/// The percentages a task writes (`5%`, `20 %`, `12.5 percent`, `3 per cent`), each once as its [`canonical`]
/// value, in order.
pub fn percents_said(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let b = task.as_bytes();
    for (at, _) in task.match_indices(|c: char| c.is_ascii_digit()) {
        if at > 0 && (b[at - 1].is_ascii_digit() || b[at - 1] == b'.') {
            continue;
        }
        let end = task[at..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(task.len(), |e| at + e);
        let rest = task[end..].trim_start().to_lowercase();
        let percent =
            rest.starts_with('%') || rest.starts_with("percent") || rest.starts_with("per cent");
        let number = task[at..end].trim_end_matches('.');
        if let Some(c) = canonical(number).filter(|c| percent && !out.contains(c)) {
            out.push(c);
        }
    }
    out
}

/// Whether a task says a figure is ten times off: `ten times`, `10 times`, `10x`, `tenfold`, `a factor of ten`,
/// `an order of magnitude`, `the decimal point`.
pub fn tenfold_said(task: &str) -> bool {
    let t = task.to_lowercase();
    [
        "ten times",
        "10 times",
        "10x",
        "tenfold",
        "ten-fold",
        "factor of ten",
        "factor of 10",
        "order of magnitude",
        "decimal point",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// A number literal's value in one spelling (`1.10` and `1.1` alike, `36.00` as `36`, `2_000` as `2000`), or none
/// for what is no plain decimal number.
pub fn canonical(literal: &str) -> Option<String> {
    let digits: String = literal.chars().filter(|c| *c != '_').collect();
    let plain = !digits.is_empty()
        && digits.bytes().any(|c| c.is_ascii_digit())
        && digits
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b'.' || c == b'-');
    let value: f64 = digits.parse().ok().filter(|_| plain)?;
    Some(format!("{value}"))
}

/// The numbers a task writes in digits, decimals and thousands separators included (`1.10 m`, `2,000 GT`, `£36`),
/// each once as its [`canonical`] value, in order.
pub fn written_numbers(task: &str) -> Vec<String> {
    let b = task.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit()
            || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut number = String::new();
        while j < b.len() {
            let between =
                |c: u8| j + 1 < b.len() && b[j + 1].is_ascii_digit() && (c == b'.' || c == b',');
            if b[j].is_ascii_digit() {
                number.push(b[j] as char);
            } else if between(b[j]) && !(b[j] == b'.' && number.contains('.')) {
                if b[j] == b'.' {
                    number.push('.');
                }
            } else {
                break;
            }
            j += 1;
        }
        if let Some(c) = canonical(&number).filter(|c| !out.contains(c)) {
            out.push(c);
        }
        i = j.max(i + 1);
    }
    out
}

/// The mutants of a line read as a whole, tried before those of its tokens: a value exchanged for a binding never
/// read first (the unused binding is itself a sign of the slip), a loop's name read after it, the line across a
/// loop's edge, the rest divided, a condition negated, an order sorted, a sort key negated, a slice turned, an
/// infinity for a start.
fn of_whole_line(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let mut out = unread_uses(line, toks, &names.unread);
    out.extend(arguments_by_name(line, toks, &names.signatures));
    out.extend(index_difference_shifted(line, toks));
    out.extend(reported_values(line, toks, &names.reported));
    out.extend(stale_reads(line, toks, &names.stale));
    out.extend(partial_sums(line, &names.sums));
    let moved = names.indents.iter();
    out.extend(moved.map(|indent| format!("{indent}{}", line.trim_start())));
    out.extend(rest_divided(line, toks, &names.divided));
    out.extend(negated_condition(line, toks));
    out.extend(operands_negated(line, toks));
    out.extend(repeated_twins(line, toks));
    out.extend(split_point_moved(line, toks));
    out.extend(literal_everywhere(line, toks, &names.unread));
    out.extend(pop_ends(line, toks));
    out.extend(entry_values_swapped(line, toks, &names.entries_said));
    out.extend(sorted_iteration(line, toks));
    out.extend(sort_key_negated(line, toks));
    out.extend(slices_turned(line, toks));
    out.extend(cut_at_space(line, toks));
    out.extend(window_shifted(line, toks));
    out.extend(slice_end_offset(line, toks));
    out.extend(targets_swapped(line, toks));
    out.extend(assigned_for_added(line, toks));
    out.extend(none_default(line, toks));
    out.extend(converted_keys(line, toks, &names.converters));
    out.extend(infinite_starts(line, toks, &names.compared));
    if names.none_said {
        out.extend(none_for_falsy(line, toks));
    }
    out.extend(all_turned(line, toks));
    out.extend(alias_copied(line, toks));
    out.extend(elements_converted(line, toks));
    out.extend(defaults_said(line, toks, &names.said));
    out.extend(fraction_defaults(line, toks));
    if names.based {
        out.extend(shifted_by_one(line, toks));
    }
    if names.cased {
        out.extend(case_folded(line, toks));
    }
    out.extend(counts_for_unread_attributes(line, toks, &names.unset_reads));
    out
}

/// The number words a task may say for a whole number.
const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

/// The steps in minutes between the clock times a task writes one after another (`['09:00', '10:30', '12:00']`:
/// 90), in order, each once: a length or an interval the example implies and never says.
fn clock_steps(task: &str) -> Vec<String> {
    let b = task.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut times = Vec::new();
    for i in (0..b.len()).filter(|&i| b[i] == b':') {
        let hours = if i >= 2 && digit(i - 2) {
            i - 2
        } else {
            i.saturating_sub(1)
        };
        let clear = hours == 0 || !digit(hours - 1);
        if !(clear && i > 0 && digit(i - 1) && digit(i + 1) && digit(i + 2) && !digit(i + 3)) {
            continue;
        }
        let (Ok(h), Ok(m)) = (
            task[hours..i].parse::<u32>(),
            task[i + 1..i + 3].parse::<u32>(),
        ) else {
            continue;
        };
        if h < 24 && m < 60 {
            times.push(h * 60 + m);
        }
    }
    let mut out: Vec<String> = Vec::new();
    for w in times.windows(2).filter(|w| w[1] > w[0]) {
        let step = (w[1] - w[0]).to_string();
        if !out.contains(&step) {
            out.push(step);
        }
    }
    out
}

/// The hours of the day a task says on the clock, in order, each once: a word like `8pm` or `6am` on the 24-hour
/// clock (`20`, `6`; `12am` is 0, [`clock_hour`]) and a time on the hour (`20:00`: 20). A time within an hour
/// (`21:15`) is an example's, not a limit's.
pub fn hours_said(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in task.split(|c: char| !c.is_ascii_alphanumeric() && c != ':') {
        let lower = w.to_ascii_lowercase();
        let on_the_hour = lower
            .strip_suffix(":00")
            .filter(|h| (1..=2).contains(&h.len()))
            .and_then(|h| h.parse::<u32>().ok())
            .filter(|h| *h < 24)
            .map(|h| h.to_string());
        if let Some(h) = clock_hour(&lower).or(on_the_hour)
            && !out.contains(&h)
        {
            out.push(h);
        }
    }
    out
}

/// The hour of the day a word like `8pm` or `6am` says, on the 24-hour clock (`20`, `6`; `12am` is 0).
fn clock_hour(word: &str) -> Option<String> {
    let (hour, pm) = if let Some(h) = word.strip_suffix("pm") {
        (h, true)
    } else {
        (word.strip_suffix("am")?, false)
    };
    let h: u32 = hour.parse().ok().filter(|h| (1..=12).contains(h))?;
    Some((h % 12 + if pm { 12 } else { 0 }).to_string())
}

/// The whole numbers the acceptance criteria of `spec` say ([`said_numbers`]) that its task does not.
pub fn criteria_numbers(spec: &Task) -> Vec<String> {
    let task = said_numbers(&spec.task);
    said_numbers(&spec.acceptance_criteria.join("\n"))
        .into_iter()
        .filter(|n| !task.contains(n))
        .collect()
}

/// The whole numbers a task says, in digits or as a word of [`NUMBER_WORDS`] (`best of three sets`), in order,
/// each once, after the steps between the clock times it writes ([`clock_steps`]). A decimal is one number, not
/// two: `0.0` and `24.0` say 0 and 24, `2.4` says no whole number.
pub fn said_numbers(task: &str) -> Vec<String> {
    let mut out: Vec<String> = clock_steps(task);
    let digits = |w: &str| !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit());
    let words = task
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
        .flat_map(|w| {
            let w = w.trim_matches('.');
            match w.split_once('.') {
                Some((whole, fraction)) if digits(whole) && digits(fraction) => {
                    let zero = fraction.bytes().all(|c| c == b'0');
                    vec![if zero { whole } else { "" }]
                }
                _ => w.split('.').collect(),
            }
        });
    for w in words {
        let lower = w.to_ascii_lowercase();
        let n = match NUMBER_WORDS.iter().position(|n| *n == lower) {
            Some(i) => i.to_string(),
            None if !w.is_empty() && w.len() <= 6 && w.chars().all(|c| c.is_ascii_digit()) => {
                w.to_string()
            }
            None => continue,
        };
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The words a task or its criteria set against another (`the condition of its vinyl, not its sleeve`, `vinyl
/// rather than sleeve`, `X instead of Y`): the first of each pair, which a line that reads the second may have
/// meant (a key the file itself never writes).
pub fn contrasted(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for marker in [", not ", " rather than ", " instead of "] {
        for (i, _) in lower.match_indices(marker) {
            let word = word_ending(&lower[..i]).to_string();
            let plain = word.len() >= 3 && word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if plain && !out.contains(&word) {
                out.push(word);
            }
        }
    }
    out
}

/// The keys a task writes in a dict literal of its example (`annual_rent({'width': 5, 'length': 10})`), without
/// their quotes, in order, each once: the key a line should read may be one the file itself never writes.
pub fn keys_said(task: &str) -> Vec<String> {
    let b = task.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let q = b[i];
        i += 1;
        if q != b'\'' && q != b'"' {
            continue;
        }
        let before = task[..i - 1].trim_end();
        let Some(len) = task[i..].find(q as char) else {
            break;
        };
        let inner = &task[i..i + len];
        let after = task[i + len + 1..].trim_start();
        let word = !inner.is_empty()
            && inner.len() <= 32
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
        if word && before.ends_with(['{', ',']) && after.starts_with(':') {
            if !out.iter().any(|o| o == inner) {
                out.push(inner.to_string());
            }
            i += len + 1;
        }
    }
    out
}

/// Each two neighbouring words of a text, lower-cased, in order (`share of the game's resale price`: `("resale",
/// "price")` among them): what [`keys_spoken`] reads keys from.
pub fn word_pairs(text: &str) -> Vec<(String, String)> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .map(|w| (w[0].to_string(), w[1].to_string()))
        .collect()
}

/// The keys a task speaks of in words where the file writes a key of two words that shares the last of them
/// (`resale price` beside the file's `original_price`): `resale_price`, which a line reading `original_price` may
/// have meant, a key the file itself never writes. Each once, in the order of the file's keys.
pub fn keys_spoken(pairs: &[(String, String)], file_keys: &[String]) -> Vec<String> {
    const FUNCTION_WORDS: &[&str] = &[
        "their", "your", "this", "that", "with", "from", "than", "what", "when", "which", "each",
        "every", "into", "over", "only", "whose", "they",
    ];
    let mut out: Vec<String> = Vec::new();
    for key in file_keys {
        let Some((first, last)) = key.split_once('_') else {
            continue;
        };
        if last.contains('_') || first.is_empty() || last.is_empty() {
            continue;
        }
        for (x, y) in pairs {
            let word = x.len() >= 4
                && x.chars().all(|c| c.is_ascii_lowercase())
                && !FUNCTION_WORDS.contains(&x.as_str());
            let made = format!("{x}_{last}");
            if y == last && x != first && word && !file_keys.contains(&made) && !out.contains(&made)
            {
                out.push(made);
            }
        }
    }
    out
}

/// The factors that convert each unit (a word of a task or of a line's names) to the next larger or smaller one.
const UNITS: &[(&[&str], &[&str])] = &[
    (
        &["hour", "hours", "hourly", "minute", "minutes", "mins"],
        &["60"],
    ),
    (&["second", "seconds", "secs"], &["60", "3600"]),
    (&["day", "days", "daily"], &["24"]),
    (&["week", "weeks", "weekly"], &["7"]),
    (&["fortnight", "fortnights", "fortnightly"], &["14"]),
    (&["month", "months", "monthly", "dozen"], &["12"]),
    (
        &["pound", "pounds", "lb", "lbs", "ounce", "ounces", "oz"],
        &["16"],
    ),
    (&["inch", "inches", "foot", "feet"], &["12"]),
    (&["yard", "yards"], &["3", "36"]),
    (&["stone", "stones"], &["14"]),
    (&["percent", "percentage", "cents", "pence"], &["100"]),
    // The factors between units of two systems, to six figures.
    (&["psi", "bar"], &["14.5038"]),
    (&["kpa"], &["6.89476", "100"]),
    (
        &[
            "cm",
            "centimetre",
            "centimetres",
            "centimeter",
            "centimeters",
        ],
        &["2.54"],
    ),
    (&["mile", "miles", "mph"], &["1.609344"]),
    (&["gallon", "gallons"], &["4.54609", "3.78541"]),
    (&["ft", "foot", "feet"], &["0.3048"]),
    (&["oz", "ounce", "ounces"], &["28.3495"]),
    (&["knot", "knots", "nautical"], &["1.852"]),
    (
        &[
            "km",
            "kg",
            "kilo",
            "kilos",
            "kilometres",
            "kilograms",
            "litres",
            "ml",
            "grams",
            "metres",
        ],
        &["1000"],
    ),
];

/// A count stepped by one where a field the task says of an item was meant: `nights[cls] += 1` to `nights[cls] +=
/// b.nights` for each local `b` bound before the line and each field of [`Names::fields_said`], at most four.
fn stepped_by_field(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let n = toks.len();
    if n < 3 || text(n - 2) != "+=" || text(n - 1) != "1" || names.fields_said.is_empty() {
        return Vec::new();
    }
    let at = toks[n - 1].start;
    let mut out = Vec::new();
    for f in &names.fields_said {
        for l in names.locals.iter().rev() {
            out.push(format!(
                "{}{l}.{f}{}",
                &line[..at],
                &line[toks[n - 1].end..]
            ));
        }
    }
    out.truncate(4);
    out
}

/// An item read out of a collection (`updated[room]`) where the loop's own name for it, unpacked and never read,
/// was meant (`target` of `for room, target in scene.items()`): at most two.
fn unread_for_items(line: &str, toks: &[Tok], loop_unread: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    if loop_unread.is_empty() || text(0) == "for" {
        return out;
    }
    for k in 0..toks.len() {
        let assigned = (k + 4..toks.len()).any(|j| text(j) == "=") && k == 0;
        if toks[k].kind != Kind::Name
            || text(k + 1) != "["
            || (k > 0 && text(k - 1) == ".")
            || assigned
        {
            continue;
        }
        let Some(close) = closing(line, toks, k + 1) else {
            continue;
        };
        for u in loop_unread {
            out.push(format!(
                "{}{u}{}",
                &line[..toks[k].start],
                &line[toks[close].end..]
            ));
        }
    }
    out.truncate(2);
    out
}

/// A factor exchanged for the factor of a unit the task or the line speaks of ([`Names::units`], [`units_said`]):
/// `/ 60` for `/ 100` where minutes become hours, or a constant's whole value (`OUNCES_PER_POUND = 16` for `= 12`,
/// `INTERVAL_DAYS = 14` for `= 7` where the task says fortnightly). Before the tokens' mutants: a long line's last ones fall off.
fn units_for_factors(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let units = joined(names.units.clone(), units_said(line));
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let s = &line[t.start..t.end];
        // A factor, or the whole value of a constant (`OUNCES_PER_POUND = 12`, `INTERVAL_DAYS = 7` where the task
        // says fortnightly).
        let name = &line[toks[0].start..toks[0].end];
        let defined = k == 2
            && toks.len() == 3
            && toks[0].start == 0
            && toks[0].kind == Kind::Name
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && line[toks[1].start..toks[1].end] == *"=";
        if t.kind != Kind::Number || !(factor_at(line, toks, k) || defined) {
            continue;
        }
        for u in units
            .iter()
            .filter(|u| *u != s && !names.factors.contains(u))
        {
            out.push(format!("{}{u}{}", &line[..t.start], &line[t.end..]));
        }
    }
    out
}

/// The factors of the units `text` speaks of (its words, and the parts of its snake-case names), in the order
/// [`UNITS`] has them, each once.
pub fn units_said(text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (named, factors) in UNITS {
        if named.iter().any(|n| words.iter().any(|w| w == n)) {
            for f in *factors {
                if !out.iter().any(|o| o == f) {
                    out.push((*f).to_string());
                }
            }
        }
    }
    out
}

/// The most numbers the task says that one default is exchanged for.
const MAX_SAID: usize = 3;

/// On a `def` line, a parameter's whole-number default (`best_of=5`) exchanged for each number the task says
/// ([`Names::said`]), at most [`MAX_SAID`].
fn defaults_said(line: &str, toks: &[Tok], said: &[String]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    if toks
        .first()
        .is_none_or(|t| !matches!(text(t), "def" | "async"))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate().skip(1) {
        if t.kind != Kind::Number || text(&toks[k - 1]) != "=" {
            continue;
        }
        for n in said.iter().filter(|n| n.as_str() != text(t)).take(MAX_SAID) {
            out.push(format!("{}{n}{}", &line[..t.start], &line[t.end..]));
        }
    }
    out
}

/// A value a line assigns to one name, or returns, one more or one less (`col = int(label[1:])` to `col =
/// int(label[1:]) - 1`), where its function speaks of 0-based or 1-based positions ([`Names::based`]).
fn shifted_by_one(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let assigned = toks.len() > 2 && toks[0].kind == Kind::Name && text(&toks[1]) == "=";
    let returned = toks.len() > 1 && text(&toks[0]) == "return";
    let one = toks.iter().all(|t| text(t) != ",");
    if !(assigned || returned) || !one || line.trim_end().ends_with(':') {
        return Vec::new();
    }
    let end = line.trim_end().len();
    ["- 1", "+ 1"]
        .iter()
        .map(|by| format!("{} {by}{}", &line[..end], &line[end..]))
        .collect()
}

/// A difference of two names inside an index or a slice one off (`readings[max(0, i - window):i + 1]` to
/// `readings[max(0, i - window + 1):i + 1]`, then `- 1`): a window's start or an index counted from the other end
/// is a routine place for the slip. Each operand a name standing alone; at most two a line.
fn index_difference_shifted(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let name = |i: usize| atom_at(line, toks, i) && toks[i].kind == Kind::Name;
    let tighter = |s: &str| matches!(s, "*" | "/" | "//" | "%" | "**" | "." | "~");
    let mut out = Vec::new();
    let mut open: Vec<(usize, bool)> = Vec::new();
    for k in 0..toks.len() {
        match text(k) {
            "(" | "{" => open.push((k, false)),
            // A subscript's bracket follows a name or a closing bracket; a list's does not.
            "[" => {
                let after =
                    k > 0 && (toks[k - 1].kind == Kind::Name || matches!(text(k - 1), ")" | "]"));
                open.push((k, after && !KEYWORDS.contains(&text(k - 1))));
            }
            ")" | "]" | "}" => {
                open.pop();
            }
            "-" if open.iter().any(|(_, sub)| *sub) && k > 0 => {
                let before = if k >= 2 { text(k - 2) } else { "" };
                if name(k - 1) && name(k + 1) && !tighter(before) && !tighter(text(k + 2)) {
                    let end = toks[k + 1].end;
                    for by in [" + 1", " - 1"] {
                        out.push(format!("{}{by}{}", &line[..end], &line[end..]));
                    }
                }
            }
            _ => {}
        }
        if out.len() >= 2 {
            break;
        }
    }
    out
}

/// A comprehension that gives each item as it came (`tuple(part for part in parts)`, a copy at most, so likely
/// meant to convert): each item made a whole number, then a decimal one.
fn elements_converted(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let mut out = Vec::new();
    for w in toks.windows(4) {
        let opens = matches!(text(&w[0]), "(" | "[" | "{");
        let item = text(&w[1]);
        let same = w[1].kind == Kind::Name && text(&w[2]) == "for" && text(&w[3]) == item;
        if opens && same && !KEYWORDS.contains(&item) {
            for kind in ["int", "float"] {
                out.push(format!(
                    "{}{kind}({item}){}",
                    &line[..w[1].start],
                    &line[w[1].end..]
                ));
            }
        }
    }
    out
}

/// Each number of the line that a task reports as the wrong value ([`Names::reported`], equal in value) for the
/// one it expected; and each whole number of the line scaled as the task's first report is (`returns 10 instead
/// of 30`: `ML_PER_TBSP = 5` to `15`), where the one is a whole multiple of the other.
fn reported_values(line: &str, toks: &[Tok], reported: &[(String, String)]) -> Vec<String> {
    let value = |n: &str| n.parse::<f64>().ok();
    let mut out = Vec::new();
    for t in toks.iter().filter(|t| t.kind == Kind::Number) {
        let s = &line[t.start..t.end];
        for (_, right) in reported
            .iter()
            .filter(|(w, _)| value(w).is_some() && value(w) == value(s))
        {
            out.push(format!("{}{right}{}", &line[..t.start], &line[t.end..]));
        }
    }
    let Some((Some(wrong), Some(right))) = reported.first().map(|(w, r)| (value(w), value(r)))
    else {
        return out;
    };
    let whole = |x: f64| x.is_finite() && x >= 2.0 && x.fract() == 0.0 && x <= 1e6;
    let scaled = toks
        .iter()
        .filter(|t| t.kind == Kind::Number)
        .filter_map(|t| {
            let n: u64 = line[t.start..t.end].parse().ok().filter(|&n| n >= 2)?;
            let x = n as f64;
            let to = if wrong != 0.0 && whole(right / wrong) {
                x * (right / wrong)
            } else if right != 0.0 && whole(wrong / right) {
                x / (wrong / right)
            } else {
                return None;
            };
            whole(to).then(|| format!("{}{}{}", &line[..t.start], to as u64, &line[t.end..]))
        });
    out.extend(scaled.take(2));
    out
}

/// A truth test where only `None` was to be ruled out (a 0 or an empty text is a value): `if value` to
/// `if value is not None`, `if not value` to `if value is None`, for a name or an attribute tested alone, and a
/// falsy answer where `None` was promised (`return False` to `return None`); tried where `None` is spoken of
/// ([`Names::none_said`]).
fn none_for_falsy(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let answer = line.trim_start().strip_prefix("return ").map(str::trim_end);
    if matches!(answer, Some("False" | "0" | "-1" | "\"\"" | "''" | "[]")) {
        let indent = &line[..line.len() - line.trim_start().len()];
        return vec![format!("{indent}return None")];
    }
    let operand = |t: &Tok| {
        t.kind == Kind::Name
            && !KEYWORDS.contains(&text(t))
            && !matches!(text(t), "None" | "True" | "False")
    };
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        if !matches!(text(t), "if" | "elif") {
            continue;
        }
        let negated = toks.get(k + 1).is_some_and(|n| text(n) == "not");
        let first = k + 1 + usize::from(negated);
        let Some(start) = toks.get(first).filter(|t| operand(t)) else {
            continue;
        };
        // `self.total`, `row.value`: names joined by dots.
        let mut last = first;
        while toks.get(last + 1).is_some_and(|d| text(d) == ".")
            && toks.get(last + 2).is_some_and(operand)
        {
            last += 2;
        }
        let ends = toks.get(last + 1).is_none_or(|n| {
            matches!(
                text(n),
                ":" | ")" | "]" | "}" | "else" | "and" | "or" | "for"
            )
        });
        if !ends {
            continue;
        }
        let (from, to) = (toks[k + 1].start, toks[last].end);
        let tested = &line[start.start..to];
        let with = if negated { "is None" } else { "is not None" };
        out.push(format!("{}{tested} {with}{}", &line[..from], &line[to..]));
    }
    out
}

/// Every comparison of one kind on a line loosened or tightened at once, where it comes twice or more
/// (`a[0] <= b[1] and b[0] <= a[1]` to `<`): the two sides of an overlap or a range are written alike, and so
/// is their slip.
fn all_turned(line: &str, toks: &[Tok]) -> Vec<String> {
    let mut out = Vec::new();
    for (op, with) in [("<=", "<"), ("<", "<="), (">=", ">"), (">", ">=")] {
        let at: Vec<&Tok> = toks
            .iter()
            .filter(|t| t.kind == Kind::Op && &line[t.start..t.end] == op)
            .collect();
        if at.len() < 2 {
            continue;
        }
        let mut m = line.to_string();
        for t in at.iter().rev() {
            m.replace_range(t.start..t.end, with);
        }
        out.push(m);
    }
    out
}

/// A second name bound to the same object where a copy was meant (`order = tracks`, then `order` shuffled in
/// place): `order = tracks.copy()`.
fn alias_copied(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let [a, eq, b] = toks else { return None };
    let name = |t: &Tok| {
        t.kind == Kind::Name
            && !KEYWORDS.contains(&text(t))
            && !matches!(text(t), "None" | "True" | "False")
    };
    // A constant is no object shared by mistake (`cursor = DAY_START`).
    let constant = !text(b).chars().any(|c| c.is_ascii_lowercase());
    (name(a) && text(eq) == "=" && name(b) && !constant && text(a) != text(b))
        .then(|| format!("{}.copy(){}", &line[..b.end], &line[b.end..]))
}

/// A name bound to a module constant's list or dict, where a copy was meant (`groups = DEFAULT_GROUPS`, then
/// `groups.append(...)` changes the constant): `list(...)`, `dict(...)` and `.copy()` of it. A costlier mutant.
fn constant_copied(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let [a, eq, b] = toks else { return Vec::new() };
    let constant = b.kind == Kind::Name
        && text(b).chars().any(|c| c.is_ascii_uppercase())
        && !text(b).chars().any(|c| c.is_ascii_lowercase());
    if a.kind != Kind::Name || text(eq) != "=" || !constant {
        return Vec::new();
    }
    let (head, name, tail) = (&line[..b.start], text(b), &line[b.end..]);
    vec![
        format!("{head}list({name}){tail}"),
        format!("{head}{name}.copy(){tail}"),
        format!("{head}dict({name}){tail}"),
    ]
}

/// A dict entry set where it was to be added to (`totals[key] = count` for a key met again):
/// `totals[key] = totals.get(key, 0) + count`. A costlier mutant.
fn entry_accumulated(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (name, open) = (toks.first()?, toks.get(1)?);
    if name.kind != Kind::Name || text(open) != "[" {
        return None;
    }
    // The subscript's closing bracket, then `=` and the value to the end.
    let close = closing(line, toks, 1)?;
    let eq = toks.get(close + 1)?;
    let value = toks.get(close + 2)?;
    if text(eq) != "=" || close < 3 {
        return None;
    }
    let key = &line[toks[2].start..toks[close - 1].end];
    let rest = line[value.start..].trim_end();
    Some(format!(
        "{}{n}[{key}] = {n}.get({key}, 0) + {rest}",
        &line[..name.start],
        n = text(name)
    ))
}

/// The parts of a split text kept with their spaces (`parts = line.split(SEP)` for `"a, b"`): each stripped,
/// `[part.strip() for part in line.split(SEP)]`, where the split is the whole value. A costlier mutant.
fn split_parts_stripped(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let eq = toks.iter().position(|t| text(t) == "=")?;
    let value = &toks[eq + 1..];
    let (last, dot, split) = (
        value.last()?,
        value.iter().position(|t| text(t) == ".")?,
        value
            .iter()
            .position(|t| matches!(text(t), "split" | "rsplit"))?,
    );
    // `name.split(...)` alone: the name, the call, and its closing bracket last.
    let mut depth = 0;
    let closes_last = value.iter().enumerate().all(|(k, t)| {
        match text(t) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        depth > 0 || k + 1 == value.len() || k < 3
    });
    if dot != 1 || split != 2 || text(last) != ")" || value[0].kind != Kind::Name || !closes_last {
        return None;
    }
    let start = value.first()?.start;
    Some(format!(
        "{}[part.strip() for part in {}]{}",
        &line[..start],
        &line[start..last.end],
        &line[last.end..]
    ))
}

/// A number formatted to a width padded with spaces where zeros were meant: `{n:5d}` and `{n:{WIDTH}d}` to
/// `{n:05d}` and `{n:0{WIDTH}d}`, in a string of the line. A costlier mutant.
fn zero_padded(line: &str, toks: &[Tok]) -> Vec<String> {
    let mut out = Vec::new();
    for t in toks.iter().filter(|t| t.kind == Kind::Str) {
        let s = &line[t.start..t.end];
        for (i, _) in s.match_indices(':') {
            let next = s[i + 1..].chars().next();
            if next.is_some_and(|c| c == '{' || c.is_ascii_digit() && c != '0') {
                let at = t.start + i + 1;
                out.push(format!("{}0{}", &line[..at], &line[at..]));
            }
        }
    }
    out.truncate(2);
    out
}

/// The most names of one line compared in lower case.
const MAX_FOLDED: usize = 2;

/// A text compared or looked up as it came where its function says case does not matter ([`Names::cased`]):
/// `password in COMMON` to `password.lower() in COMMON`, `a == b` to `a.lower() == b.lower()`, `RATES[kind]` and
/// `RATES.get(kind, 0)` to `RATES[kind.lower()]` and `RATES.get(kind.lower(), 0)`.
fn case_folded(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let prev = k.checked_sub(1).map(|p| text(&toks[p]));
        let next = toks.get(k + 1).map(text);
        let read = t.kind == Kind::Name
            && !KEYWORDS.contains(&text(t))
            && !matches!(prev, Some("." | "for"))
            && next != Some("(")
            && next != Some(".");
        if !read {
            continue;
        }
        let lower = |t: &Tok| format!("{}.lower()", text(t));
        // A key looked up: `TABLE[key]`, `TABLE.get(key, ...)`.
        let before = |back: usize| k.checked_sub(back).map(|p| text(&toks[p]));
        let key = (prev == Some("[") && next == Some("]"))
            || (prev == Some("(") && before(2) == Some("get") && before(3) == Some("."));
        match next {
            _ if key => {
                out.push(format!(
                    "{}{}{}",
                    &line[..t.start],
                    lower(t),
                    &line[t.end..]
                ));
            }
            Some("in") | Some("not") => {
                out.push(format!(
                    "{}{}{}",
                    &line[..t.start],
                    lower(t),
                    &line[t.end..]
                ));
            }
            Some("==" | "!=") => {
                let Some(other) = toks.get(k + 2).filter(|o| o.kind == Kind::Name) else {
                    continue;
                };
                out.push(format!(
                    "{}{}{}{}{}",
                    &line[..t.start],
                    lower(t),
                    &line[t.end..other.start],
                    lower(other),
                    &line[other.end..]
                ));
            }
            _ => {}
        }
    }
    out.truncate(MAX_FOLDED);
    out
}

/// Whether the docstring of the function at the 0-based line `def` (its first body lines), or the module's
/// first line, says that letter case does not matter.
fn says_case_ignored(lines: &[&str], def: usize, body: &[usize]) -> bool {
    let said = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.contains("case")
            && [
                "ignor",
                "insensitiv",
                "regardless",
                "any case",
                "either case",
                "matter",
            ]
            .iter()
            .any(|w| l.contains(w))
    };
    let doc = body.iter().take(3).map(|&b| lines[b]);
    doc.chain(lines.first().copied())
        .chain(lines.get(def).copied())
        .any(said)
}

/// The numbers a task reports as wrong, each with the one it expected: the words just before and after each
/// `instead of` when both are numbers (`returns 16 instead of 48`, `gives 40.0 instead of 23.0,`), or the first
/// numbers of two bracketed values there (`returns (10, "ml") instead of (30, "ml")`).
pub fn reported(task: &str) -> Vec<(String, String)> {
    let number = |w: &str| {
        let w = w.trim_matches(|c: char| {
            matches!(c, ',' | '.' | ';' | ':' | ')' | '(' | '"' | '\'' | '`')
        });
        let plain = !w.is_empty()
            && w.trim_start_matches('-')
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
            && w.chars().any(|c| c.is_ascii_digit());
        (plain && w.parse::<f64>().is_ok()).then(|| w.to_string())
    };
    // A bracketed value's first number (`(10, "ml")`): its words from the one that opens it.
    let first_in = |words: &[&str]| words.first().copied().and_then(number);
    let mut out = Vec::new();
    for (i, _) in task.match_indices("instead of") {
        let words: Vec<&str> = task[..i].split_whitespace().collect();
        let opens = words
            .iter()
            .rposition(|w| w.starts_with(['(', '[']))
            .filter(|&o| words.len() - o <= 4 && words[words.len() - 1].ends_with([')', ']']));
        let before = match opens {
            Some(o) => first_in(&words[o..]),
            None => words.last().copied().and_then(number),
        };
        let after = task[i + "instead of".len()..]
            .split_whitespace()
            .next()
            .and_then(number);
        if let (Some(wrong), Some(right)) = (before, after)
            && wrong != right
            && !out.contains(&(wrong.clone(), right.clone()))
        {
            out.push((wrong, right));
        }
    }
    out
}

/// The costlier mutants of one line of Python, tried after every line's [`of_line`]: the file's own sum or
/// difference of a name read bare ([`Names::offsets`]), then another local for a local ([`Names::locals`]), those
/// [`of_line`] already gives left out, at most [`MAX_LOCAL_SWAPS`]. A line reads many locals and each has several
/// others, so these come when the cheaper mutants of every probed line have failed.
pub fn kin_of_line(line: &str, names: &Names) -> Vec<String> {
    let Some(toks) = lex(line) else {
        return Vec::new();
    };
    let cheaper = of_line(line, names);
    let mut out: Vec<String> = Vec::new();
    let kin = offset_uses(line, &toks, &names.offsets);
    for m in kin
        .into_iter()
        .chain(stripped_for_number(line, &toks))
        .chain(constant_copied(line, &toks))
        .chain(entry_accumulated(line, &toks))
        .chain(split_parts_stripped(line, &toks))
        .chain(comprehension_filters(line, &toks))
        .chain(zero_padded(line, &toks))
        .chain(local_swaps(line, &toks, &names.locals, true))
        .chain(literal_keys_for_locals(line, &toks, &names.locals))
        .chain(local_swaps(line, &toks, &names.locals, false))
        .chain(unread_scales(line, &toks, &names.unread))
        .chain(unread_scales(line, &toks, &names.loop_unread))
        .chain(counted_for_summed(line, &toks, &names.fields))
    {
        if out.len() < MAX_LOCAL_SWAPS && m != line && !cheaper.contains(&m) && !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The most fields a count is summed over instead.
const MAX_SUMMED: usize = 4;

/// A count of records where the sum of one of their fields was meant: `len(mine)` to `sum(r.frames for r in
/// mine)` for each field of the file's record classes ([`Names::fields`]), at most [`MAX_SUMMED`].
fn counted_for_summed(line: &str, toks: &[Tok], fields: &[Vec<String>]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let Some(k) = (0..toks.len()).find(|&k| {
        text(k) == "len"
            && text(k + 1) == "("
            && toks.get(k + 2).is_some_and(|t| t.kind == Kind::Name)
            && text(k + 3) == ")"
            && (k == 0 || text(k - 1) != ".")
    }) else {
        return Vec::new();
    };
    let list = text(k + 2);
    let mut out = Vec::new();
    for f in fields.iter().flatten() {
        let m = format!(
            "{}sum(r.{f} for r in {list}){}",
            &line[..toks[k].start],
            &line[toks[k + 3].end..]
        );
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out.truncate(MAX_SUMMED);
    out
}

/// The mutants of the name that is token `k` (not `not`, not `range`): its pair swapped where it is called
/// ([`NAME_SWAPS`]), text turned into numbers or stripped first, and a module constant or an attribute exchanged
/// for another of its kind.
fn name_mutants(line: &str, toks: &[Tok], k: usize, names: &Names) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (t, s) = (&toks[k], text(&toks[k]));
    let replace = |with: &str| format!("{}{with}{}", &line[..t.start], &line[t.end..]);
    let mut out = Vec::new();
    // A function's pair only where it is called: a variable named `floor` is no `math.floor`.
    let called = toks.get(k + 1).is_some_and(|o| text(o) == "(");
    let swappable = called || matches!(s, "and" | "or" | "True" | "False");
    // A builtin's pair only where it is no method (`self.sum(...)`).
    let method = k > 0 && text(&toks[k - 1]) == ".";
    let builtin = matches!(s, "len" | "sum");
    for (_, with) in NAME_SWAPS
        .iter()
        .filter(|(n, _)| *n == s && swappable && !(builtin && method))
    {
        out.extend(with.iter().map(|w| replace(w)));
    }
    // The exception an `except` catches, for another a routine call raises (`int("x")` raises ValueError, not
    // KeyError).
    let excepted = toks.first().is_some_and(|f| text(f) == "except") && k == 1;
    if excepted
        && t.kind == Kind::Name
        && toks.get(2).is_some_and(|c| matches!(text(c), ":" | "as"))
    {
        let others = EXCEPTIONS.iter().filter(|e| **e != s);
        out.extend(others.map(|e| replace(e)));
    }
    // Rounding the other way: `round(x)` up or down (`math.ceil`, `math.floor`: a file that never imports `math`
    // fails the check on its own), `int(x)`, which truncates, rounded.
    let dotted = k >= 1 && text(&toks[k - 1]) == ".";
    if called && !dotted {
        let others: &[&str] = match s {
            "round" => &["math.ceil", "math.floor"],
            "int" => &["round", "math.ceil"],
            _ => &[],
        };
        out.extend(others.iter().map(|w| replace(w)));
    }
    if called && !dotted && s == "round" {
        out.extend(rounded_to_digits(line, toks, k));
    }
    if called && !dotted && s == "enumerate" {
        out.extend(enumerate_start(line, toks, k));
    }
    let method = k >= 1 && text(&toks[k - 1]) == ".";
    if called && method && matches!(s, "split" | "rsplit") {
        out.extend(split_cut(line, toks, k));
    }
    // Only some of the characters stripped where all the white space was meant: `rstrip("\n")` to `rstrip()`.
    let literal_arg = toks.get(k + 2).is_some_and(|a| a.kind == Kind::Str)
        && toks.get(k + 3).is_some_and(|c| text(c) == ")");
    if called && method && matches!(s, "strip" | "lstrip" | "rstrip") && literal_arg {
        out.push(format!(
            "{}{}",
            &line[..toks[k + 2].start],
            &line[toks[k + 2].end..]
        ));
    }
    out.extend(numbers_for_text(line, toks, k));
    out.extend(percent_as_fraction(line, toks, k));
    // Text used as it came, spaces and all: `raw.lower()` to `raw.strip().lower()`.
    let text_method = toks.get(k + 1).is_some_and(|d| text(d) == ".")
        && toks
            .get(k + 2)
            .is_some_and(|m| STRIPPED_BEFORE.contains(&text(m)))
        && (k == 0 || text(&toks[k - 1]) != ".");
    if text_method && !KEYWORDS.contains(&s) {
        out.push(format!("{}.strip(){}", &line[..t.end], &line[t.end..]));
    }
    out.extend(case_left(line, toks, k, names));
    out.extend(part_as_number(line, toks, k, names));
    // Another field of the same record for a field read off a name (`min(r.high ...)` to `min(r.low ...)`).
    let read_off = k >= 2
        && text(&toks[k - 1]) == "."
        && toks[k - 2].kind == Kind::Name
        && text(&toks[k - 2]) != "self"
        && toks.get(k + 1).is_none_or(|n| text(n) != "(");
    if read_off && let Some(record) = names.fields.iter().find(|f| f.iter().any(|x| x == s)) {
        let others = record.iter().filter(|x| *x != s).take(MAX_CONSTANTS);
        out.extend(others.map(|x| replace(x)));
    }
    // A constant's own definition keeps its name: `RATE = 2` is not `CAP = 2`.
    let defined = k == 0 && toks.get(1).is_some_and(|e| text(e) == "=");
    let attribute = k >= 2 && text(&toks[k - 1]) == "." && text(&toks[k - 2]) == "self";
    let alike = if attribute {
        &names.attributes
    } else {
        &names.constants
    };
    if !defined && alike.iter().any(|c| c == s) {
        out.extend(
            alike
                .iter()
                .filter(|c| *c != s)
                .take(MAX_CONSTANTS)
                .map(|c| replace(c)),
        );
    }
    out
}

/// A value read from the wrong one of two alike: a key named as another value ([`key_named_as_target`]), an
/// attribute for the method refining it ([`refined_reads`]), the wrong collection's size ([`mean_of_other`]), the
/// wrong unit ([`unit_keyword_for_value`]), one key for the other ([`keys_paired`]), another place's value for
/// the place written ([`key_of_target`]), a bound that shadows a later test ([`shadowing_bound`]).
fn misread(line: &str, toks: &[Tok], names: &Names) -> Vec<String> {
    let mut out: Vec<String> = key_named_as_target(line, toks).into_iter().collect();
    out.extend(refined_reads(line, toks, &names.refiners));
    out.extend(mean_of_other(line, toks));
    out.extend(unit_keyword_for_value(line, toks));
    out.extend(keys_paired(line, toks, &names.keys));
    out.extend(key_of_target(line, toks));
    out.extend(shadowing_bound(line, toks, &names.later_equals));
    out.extend(holder_swapped(line, toks, &names.subscripts));
    out.extend(dates_from_text(line, toks, &names.date_parsers));
    out
}

/// The calls a file's imports give it to read a date out of an ISO text (`from datetime import date, timedelta`:
/// `date.fromisoformat`; `import datetime`: `datetime.date.fromisoformat`), in order ([`Names::date_parsers`]).
fn date_parsers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim) {
        let imported = |class: &str| {
            line.strip_prefix("from datetime import ")
                .is_some_and(|names| names.split(',').any(|n| n.trim() == class))
        };
        let parsers = [
            (imported("date"), "date.fromisoformat"),
            (imported("datetime"), "datetime.fromisoformat"),
            (line == "import datetime", "datetime.date.fromisoformat"),
        ];
        for (_, p) in parsers.iter().filter(|(yes, _)| *yes) {
            if !out.iter().any(|o| o == p) {
                out.push(p.to_string());
            }
        }
    }
    out
}

/// A date kept as the text it came in (`self.made_on = made_on` where `made_on` is `'2024-03-01'` and other lines
/// add a `timedelta` to it): a name a date-like name is given (`made_on`, `due_date`, `start_day`, `when`) read
/// through each of the file's `parsers` (`self.made_on = date.fromisoformat(made_on)`).
fn dates_from_text(line: &str, toks: &[Tok], parsers: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let at = match toks.len() {
        3 => 0,
        5 if text(0) == "self" && text(1) == "." => 2,
        _ => return Vec::new(),
    };
    let plain =
        toks[at].kind == Kind::Name && text(at + 1) == "=" && toks[at + 2].kind == Kind::Name;
    let dated = text(at).split('_').any(|w| {
        matches!(
            w,
            "on" | "date" | "day" | "when" | "since" | "until" | "due"
        )
    });
    if !plain || !dated {
        return Vec::new();
    }
    let value = &toks[at + 2];
    parsers
        .iter()
        .map(|p| {
            let v = &line[value.start..value.end];
            format!("{}{p}({v}){}", &line[..value.start], &line[value.end..])
        })
        .collect()
}

/// The plain names each name is subscripted by in a file's code tokens (`table [ winner ]`), as (the name, the
/// name in the brackets), each pair once, in order ([`Names::subscripts`]).
fn picked_pairs(code: &[(usize, Vec<String>)]) -> Vec<(String, String)> {
    let name = |t: &str| super::is_identifier(t);
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, toks) in code {
        for w in toks.windows(4) {
            if w[1] == "[" && w[3] == "]" && name(&w[0]) && name(&w[2]) {
                let pair = (w[0].clone(), w[2].clone());
                if !out.contains(&pair) {
                    out.push(pair);
                }
            }
        }
    }
    out
}

/// A place written for the wrong one of the names its dict is subscripted by (`table[winner]["net_hoops"] +=
/// ...` where `table[loser]` was meant): a line that starts by writing `D[v]` (an assignment or an augmented
/// one), each other name the file subscripts `D` by in place of `v`, at most [`MAX_CONSTANTS`].
fn holder_swapped(line: &str, toks: &[Tok], subscripts: &[(String, String)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let writes = toks
        .iter()
        .any(|t| matches!(&line[t.start..t.end], "=" | "+=" | "-=" | "*=" | "/="));
    if toks.len() < 5 || toks[0].kind != Kind::Name || text(1) != "[" || text(3) != "]" || !writes {
        return Vec::new();
    }
    let (d, v) = (text(0), text(2));
    if toks[2].kind != Kind::Name {
        return Vec::new();
    }
    subscripts
        .iter()
        .filter(|(x, w)| x == d && w != v)
        .take(MAX_CONSTANTS)
        .map(|(_, w)| format!("{}{w}{}", &line[..toks[2].start], &line[toks[2].end..]))
        .collect()
}

/// A bound tested first that takes in a value a later test of the same block looks for, leaving that test
/// unreachable (`if score <= 1:` before `if score == 0:`): the value left out of the bound (`if score <= 1 and
/// score != 0:`), and the bound kept to the far side of it (`if score < 0 or score == 1:`, for a bound of 1).
fn shadowing_bound(line: &str, toks: &[Tok], later: &[(String, String)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let bound = toks.len() == 5
        && text(0) == "if"
        && toks[1].kind == Kind::Name
        && matches!(text(2), "<" | "<=" | ">" | ">=")
        && toks[3].kind == Kind::Number
        && text(4) == ":";
    if !bound {
        return Vec::new();
    }
    let (name, op, limit) = (text(1), text(2), text(3));
    let Ok(b) = limit.parse::<f64>() else {
        return Vec::new();
    };
    let indent = &line[..toks[0].start];
    let mut out = Vec::new();
    for (_, value) in later.iter().filter(|(n, _)| n == name) {
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let inside = match op {
            "<" => v < b,
            "<=" => v <= b,
            ">" => v > b,
            _ => v >= b,
        };
        if !inside {
            continue;
        }
        out.push(format!(
            "{indent}if {name} {op} {limit} and {name} != {value}:"
        ));
        // The side beyond the value, and the bound's own end where it is not the value.
        let (beyond, end) = match op {
            "<" | "<=" => ("<", op == "<=" && v != b),
            _ => (">", op == ">=" && v != b),
        };
        let far = format!("{name} {beyond} {value}");
        out.push(if end {
            format!("{indent}if {far} or {name} == {limit}:")
        } else {
            format!("{indent}if {far}:")
        });
    }
    out
}

/// The most refining methods one attribute's read is tried with.
const MAX_REFINED: usize = 3;

/// An object's attribute read bare where the value a method of its class refines from it was meant
/// (`s.capacity >= party` to `s.spare() >= party`, [`Names::refiners`]): each read of such an attribute through a
/// name, not set and not called, with each method that refines it, at most [`MAX_REFINED`].
fn refined_reads(line: &str, toks: &[Tok], refiners: &[(String, String)]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 2..toks.len() {
        let read = toks[k].kind == Kind::Name
            && toks[k - 2].kind == Kind::Name
            && text(k - 1) == "."
            && !matches!(text(k + 1), "(" | "=" | "+=" | "-=" | "*=" | "/=");
        if !read {
            continue;
        }
        let calls = refiners.iter().filter(|(a, _)| a == text(k));
        for (_, call) in calls.take(MAX_REFINED) {
            out.push(format!(
                "{}{call}{}",
                &line[..toks[k].start],
                &line[toks[k].end..]
            ));
        }
    }
    out
}

/// A mean divided by the wrong collection's size: `sum(readings) / len(self.entries)` to `len(readings)`. The
/// line sums one name (or dotted name) and takes the length of another.
fn mean_of_other(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    // The dotted name a call of `func` holds as its only argument: (first token, token past its end).
    let argument = |func: &str| -> Vec<(usize, usize)> {
        (0..toks.len())
            .filter(|&k| text(k) == func && text(k + 1) == "(" && text(k.wrapping_sub(1)) != ".")
            .filter_map(|k| {
                let mut j = k + 2;
                while toks.get(j).is_some_and(|t| t.kind == Kind::Name) && text(j + 1) == "." {
                    j += 2;
                }
                (toks.get(j).is_some_and(|t| t.kind == Kind::Name) && text(j + 1) == ")")
                    .then_some((k + 2, j + 1))
            })
            .collect()
    };
    let span = |(a, b): (usize, usize)| &line[toks[a].start..toks[b - 1].end];
    let mut out = Vec::new();
    for summed in argument("sum") {
        for counted in argument("len") {
            if span(summed) != span(counted) {
                out.push(format!(
                    "{}{}{}",
                    &line[..toks[counted.0].start],
                    span(summed),
                    &line[toks[counted.1 - 1].end..]
                ));
            }
        }
    }
    out
}

/// The units `datetime.timedelta` takes as keywords.
const TIME_UNITS: &[&str] = &[
    "weeks",
    "days",
    "hours",
    "minutes",
    "seconds",
    "milliseconds",
    "microseconds",
];

/// A duration given in the wrong unit: `timedelta(days=weeks)` to `timedelta(weeks=weeks)`. A keyword that is a
/// unit, given a name whose first or last word is another unit (`DECISION_WEEKS`, `weeks_left`).
fn unit_keyword_for_value(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 1..toks.len() {
        let keyword = TIME_UNITS.contains(&text(k))
            && matches!(text(k - 1), "(" | ",")
            && text(k + 1) == "="
            && toks.get(k + 2).is_some_and(|t| t.kind == Kind::Name);
        if !keyword {
            continue;
        }
        let value = text(k + 2).to_lowercase();
        let words: Vec<&str> = value.split('_').collect();
        let ends = [words[0], words[words.len() - 1]];
        let Some(unit) = TIME_UNITS
            .iter()
            .find(|u| ends.contains(u) && **u != text(k))
        else {
            continue;
        };
        out.push(format!(
            "{}{unit}{}",
            &line[..toks[k].start],
            &line[toks[k].end..]
        ));
    }
    out
}

/// One of two keys a line names written where the other was meant (`counts.get("concession", 0) *
/// ticket_price("child")` to `ticket_price("concession")`): a line that names two different keys of the file's
/// dicts ([`Names::keys`]), each in turn in the other's place.
fn keys_paired(line: &str, toks: &[Tok], keys: &[String]) -> Vec<String> {
    let word = |t: &Tok| {
        let lit = &line[t.start..t.end];
        let q = lit.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let inner = lit.strip_prefix(q)?.strip_suffix(q)?;
        (t.kind == Kind::Str && keys.iter().any(|k| k == inner)).then_some((q, inner))
    };
    let named: Vec<(usize, char, &str)> = toks
        .iter()
        .enumerate()
        .filter_map(|(k, t)| word(t).map(|(q, w)| (k, q, w)))
        .collect();
    let [(a, _, wa), (b, _, wb)] = named[..] else {
        return Vec::new();
    };
    let put = |at: usize, with: &str| {
        let q = &line[toks[at].start..=toks[at].start];
        format!(
            "{}{q}{with}{q}{}",
            &line[..toks[at].start],
            &line[toks[at].end..]
        )
    };
    if wa != wb {
        return vec![put(b, wa), put(a, wb)];
    }
    // The same key twice: the second, then the first, meant as another key of the file.
    let others: Vec<&String> = keys.iter().filter(|k| *k != wa).take(MAX_PAIRED).collect();
    let second = others.iter().map(|k| put(b, k));
    second.chain(others.iter().map(|k| put(a, k))).collect()
}

/// The most other keys a key written twice in one line is tried as ([`keys_paired`]).
const MAX_PAIRED: usize = 3;

/// A place written from another place's value: `self.credits[giver] = self.balance(taker) + value` to
/// `self.balance(giver)`. The line writes an item under a name; each other name its value reads as a call's only
/// argument or an item's key is tried as that name.
fn key_of_target(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let name = |i: usize| {
        toks.get(i)
            .is_some_and(|t| t.kind == Kind::Name && !KEYWORDS.contains(&text(i)))
    };
    let Some(eq) = (0..toks.len()).find(|&i| text(i) == "=") else {
        return Vec::new();
    };
    let written = eq >= 4 && text(eq - 1) == "]" && name(eq - 2) && text(eq - 3) == "[";
    if !written {
        return Vec::new();
    }
    let key = text(eq - 2);
    let mut out = Vec::new();
    for k in eq + 2..toks.len() {
        let held = matches!((text(k - 1), text(k + 1)), ("(", ")") | ("[", "]"));
        if name(k) && held && text(k) != key {
            out.push(format!(
                "{}{key}{}",
                &line[..toks[k].start],
                &line[toks[k].end..]
            ));
        }
    }
    out
}

/// A key read where the key named as the value's own name was meant: `owner = horse["name"]` to
/// `owner = horse["owner"]`, `right = acuity(record["left"])` to `record["right"]`. The line assigns one name the
/// one key read off one dict, bare or as a call's only argument; the key is a word, the name another. A name
/// spelled round a keyword is read as the keyword (`cls = sale["title"]` to `sale["class"]`), and any name with a
/// trailing underscore without it (`type_` to `"type"`).
fn key_named_as_target(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let target = text(0);
    if toks.len() < 6 || toks[0].kind != Kind::Name || KEYWORDS.contains(&target) || text(1) != "="
    {
        return None;
    }
    // A call's dotted name and its opening (`acuity(`, `self.rate(`), when the read is its only argument.
    let mut at = 2;
    let called = toks.len() > 7 && text(toks.len() - 1) == ")";
    if called {
        while toks[at].kind == Kind::Name && text(at + 1) == "." {
            at += 2;
        }
        if toks[at].kind != Kind::Name || text(at + 1) != "(" {
            return None;
        }
        at += 2;
    }
    let end = toks.len() - usize::from(called);
    let one =
        end == at + 4 && toks[at].kind == Kind::Name && text(at + 1) == "[" && text(at + 3) == "]";
    let k = at + 2;
    let key = if one {
        key_at(line, toks, k, false)?
    } else {
        return None;
    };
    let q = &line[toks[k].start..=toks[k].start];
    // A name spelled round a keyword stands for the keyword's word (`cls`, `klass`, `type_` for `type`).
    let target = match target {
        "cls" | "klass" => "class",
        _ => target
            .strip_suffix('_')
            .filter(|t| !t.is_empty())
            .unwrap_or(target),
    };
    (key != target).then(|| {
        format!(
            "{}{q}{target}{q}{}",
            &line[..toks[k].start],
            &line[toks[k].end..]
        )
    })
}

/// A record's key read to look up a table where the key the table is named for was meant:
/// `SPREAD_PRICES.get(line.get("kind"))` to `line.get("spread")` (`BAGEL_PRICES[line["kind"]]` beside it). The
/// table is a constant whose name's first or last word (`spread`, `prices`) is not the key.
fn keys_named_as_table(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 0..toks.len() {
        let Some(key) = (toks[k].kind == Kind::Str)
            .then(|| key_at(line, toks, k, false))
            .flatten()
        else {
            continue;
        };
        // Back over the record's read (`line.get(`, `line[`) to the table's opening (`.get(`, `[`).
        let mut j = k;
        let mut record = 0;
        while j > 0
            && (matches!(text(j - 1), "[" | "(" | "." | "get") || toks[j - 1].kind == Kind::Name)
        {
            j -= 1;
            if toks[j].kind == Kind::Name && text(j) != "get" {
                record += 1;
            }
            if record == 2 {
                break;
            }
        }
        let table = text(j);
        if record != 2 || !constant_name(table) || !matches!(text(j + 1), "[" | ".") {
            continue;
        }
        let words: Vec<String> = table.split('_').map(str::to_lowercase).collect();
        let mut named = vec![words[0].clone()];
        if words.len() > 1 {
            named.push(words[words.len() - 1].clone());
        }
        let q = &line[toks[k].start..=toks[k].start];
        for w in named.iter().filter(|w| *w != key && w.len() >= 3) {
            out.push(format!(
                "{}{q}{w}{q}{}",
                &line[..toks[k].start],
                &line[toks[k].end..]
            ));
        }
    }
    out
}

/// Two neighbouring directives of a date or time format the other way round (`strftime("%m/%d/%Y")` for
/// `"%d/%m/%Y"`): each pair of neighbouring `%` directives of a string literal that holds two or more of them.
fn directives_swapped(line: &str, toks: &[Tok]) -> Vec<String> {
    let mut out = Vec::new();
    for t in toks.iter().filter(|t| t.kind == Kind::Str) {
        let lit = &line[t.start..t.end];
        let b = lit.as_bytes();
        let at: Vec<usize> = (0..b.len().saturating_sub(1))
            .filter(|&i| {
                b[i] == b'%' && b[i + 1].is_ascii_alphabetic() && (i == 0 || b[i - 1] != b'%')
            })
            .collect();
        for w in at.windows(2) {
            let (i, j) = (w[0], w[1]);
            if b[i + 1] == b[j + 1] {
                continue;
            }
            let mut m = b.to_vec();
            m.swap(i + 1, j + 1);
            if let Ok(m) = String::from_utf8(m) {
                out.push(format!("{}{m}{}", &line[..t.start], &line[t.end..]));
            }
        }
    }
    out
}

/// The words that come in pairs in the names of two alike values (`used_a` and `used_b`, `home_goals` and
/// `away_goals`), each with its twin.
const TWIN_WORDS: &[(&str, &str)] = &[
    ("a", "b"),
    ("x", "y"),
    ("1", "2"),
    ("home", "away"),
    ("left", "right"),
    ("start", "end"),
    ("first", "last"),
    ("old", "new"),
    ("src", "dst"),
];

/// A name read where its twin was meant (`elif used_a + secs <= limit:` for `used_b`): each read of a local whose
/// name of two or more words has one of [`TWIN_WORDS`], exchanged for the local named with the twin word.
fn twins_swapped(line: &str, toks: &[Tok], locals: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let name = &line[t.start..t.end];
        let attribute = k > 0 && &line[toks[k - 1].start..toks[k - 1].end] == ".";
        if t.kind != Kind::Name || attribute || !locals.iter().any(|l| l == name) {
            continue;
        }
        // A name of two or more words (`used_a`): a one-letter name's others are [`local_swaps`]'.
        let words: Vec<&str> = name.split('_').collect();
        if words.len() < 2 {
            continue;
        }
        for (i, w) in words.iter().enumerate() {
            let twin = TWIN_WORDS.iter().find_map(|(a, b)| match *w {
                x if x == *a => Some(*b),
                x if x == *b => Some(*a),
                _ => None,
            });
            let Some(twin) = twin else { continue };
            let mut other = words.clone();
            other[i] = twin;
            let other = other.join("_");
            if locals.contains(&other) {
                out.push(format!("{}{other}{}", &line[..t.start], &line[t.end..]));
            }
        }
    }
    out
}

/// The number a dict literal's line holds under a key the task says (`"rented": 10` where a rented flat is due
/// every 5 years) exchanged for each other number the line holds under a key (`5`, `3`, `1`), nearest first.
fn entry_values_swapped(line: &str, toks: &[Tok], said: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    if said.is_empty() || !toks.iter().any(|t| &line[t.start..t.end] == "{") {
        return Vec::new();
    }
    // (index of the value token, its key without quotes) for each `"key": number` of the line.
    let entries: Vec<(usize, &str)> = (0..toks.len().saturating_sub(2))
        .filter(|&k| {
            toks[k].kind == Kind::Str && text(k + 1) == ":" && toks[k + 2].kind == Kind::Number
        })
        .map(|k| (k + 2, text(k).trim_matches(['"', '\''])))
        .collect();
    let mut out = Vec::new();
    for &(v, _) in entries
        .iter()
        .filter(|(_, key)| said.iter().any(|s| s == key))
    {
        let mine = text(v);
        let mut others: Vec<&str> = Vec::new();
        for &(o, _) in &entries {
            if text(o) != mine && !others.contains(&text(o)) {
                others.push(text(o));
            }
        }
        let value = |x: &str| x.parse::<f64>().unwrap_or(f64::MAX);
        others.sort_by(|a, b| {
            let (da, db) = (
                (value(a) - value(mine)).abs(),
                (value(b) - value(mine)).abs(),
            );
            da.total_cmp(&db)
        });
        for o in others {
            out.push(format!(
                "{}{o}{}",
                &line[..toks[v].start],
                &line[toks[v].end..]
            ));
        }
    }
    out
}

/// A whole number written twice or more in one line's brackets, one place to split at (`compact[:-2],
/// compact[-2:]`): every one of them one more and one less at once (`[:-3], [-3:]`); a mutant of one alone splits
/// in two places.
fn split_point_moved(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let indexed: Vec<&Tok> = toks
        .iter()
        .enumerate()
        .filter(|&(i, t)| {
            t.kind == Kind::Number
                && text(t).bytes().all(|c| c.is_ascii_digit())
                && (0..i)
                    .rev()
                    .map(|j| text(&toks[j]))
                    .find(|p| !matches!(*p, "-" | ":"))
                    == Some("[")
        })
        .map(|(_, t)| t)
        .collect();
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for t in &indexed {
        let n = text(t);
        if seen.contains(&n) || indexed.iter().filter(|u| text(u) == n).count() < 2 {
            continue;
        }
        seen.push(n);
        let Ok(v) = n.parse::<u64>() else { continue };
        for m in [v + 1, v.saturating_sub(1)].into_iter().filter(|m| *m != v) {
            let mut moved = String::new();
            let mut at = 0;
            for u in indexed.iter().filter(|u| text(u) == n) {
                moved.push_str(&line[at..u.start]);
                moved.push_str(&m.to_string());
                at = u.end;
            }
            moved.push_str(&line[at..]);
            out.push(moved);
        }
    }
    out
}

/// A name or a quoted key written twice in one line where the second was meant its twin (`max(abs(rx["right_sph"]),
/// abs(rx["right_sph"]))` for `"left_sph"`: a copied part not changed): each occurrence of a repeated token of two or
/// more words with one of [`TWIN_WORDS`] (one letter or digit words left out), that word exchanged for its twin.
fn repeated_twins(line: &str, toks: &[Tok]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let tok = &line[t.start..t.end];
        let repeated = toks
            .iter()
            .enumerate()
            .any(|(j, u)| j != k && &line[u.start..u.end] == tok);
        if !repeated || !matches!(t.kind, Kind::Name | Kind::Str) {
            continue;
        }
        let words: Vec<&str> = tok.split('_').collect();
        if words.len() < 2 {
            continue;
        }
        for (i, w) in words.iter().enumerate() {
            let bare = w.trim_matches(['"', '\'']);
            let twin = TWIN_WORDS.iter().find_map(|(a, b)| match bare {
                x if x.len() < 2 => None,
                x if x == *a => Some(*b),
                x if x == *b => Some(*a),
                _ => None,
            });
            let Some(twin) = twin else { continue };
            let mut other: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            other[i] = w.replace(bare, twin);
            out.push(format!(
                "{}{}{}",
                &line[..t.start],
                other.join("_"),
                &line[t.end..]
            ));
        }
    }
    out
}

/// A strip of a text's ends where every space was meant removed (`chip.strip()` to `chip.replace(" ", "")`: a
/// number written in groups), in a function that brings a value to one form ([`Names::normaliser`]).
fn spaces_removed(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    (1..toks.len())
        .filter(|&k| {
            text(k - 1) == "." && text(k) == "strip" && text(k + 1) == "(" && text(k + 2) == ")"
        })
        .map(|k| {
            format!(
                "{}replace(\" \", \"\"){}",
                &line[..toks[k].start],
                &line[toks[k + 2].end..]
            )
        })
        .collect()
}

/// A count started at the other end: `enumerate(items)` numbered from 1 (`enumerate(items, start=1)`), or the
/// start an `enumerate` call is given dropped, where its count was meant from 0. `k` is the token `enumerate`.
fn enumerate_start(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let (close, commas) = range_commas(line, toks, k)?;
    match commas.as_slice() {
        [] if close > k + 2 => {
            let at = toks[close - 1].end;
            Some(format!("{}, start=1{}", &line[..at], &line[at..]))
        }
        [comma] => Some(format!(
            "{}{}",
            &line[..toks[*comma].start],
            &line[toks[close].start..]
        )),
        _ => None,
    }
}

/// A text stripped where its number was meant (`gravity.strip()` to `float(gravity)`, then `int`; both read past
/// the spaces a strip takes off): each plain name's `strip()`, `lstrip()` or `rstrip()` of no argument.
fn stripped_for_number(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 0..toks.len() {
        let plain = toks[k].kind == Kind::Name && (k == 0 || text(k - 1) != ".");
        let strip = matches!(text(k + 2), "strip" | "lstrip" | "rstrip");
        if plain && text(k + 1) == "." && strip && text(k + 3) == "(" && text(k + 4) == ")" {
            let (start, end) = (toks[k].start, toks[k + 4].end);
            for f in ["float", "int"] {
                out.push(format!(
                    "{}{f}({}){}",
                    &line[..start],
                    text(k),
                    &line[end..]
                ));
            }
        }
    }
    out
}

/// The words of a parameter's name that say it is a fraction of a whole (`vat_rate`, `discount`).
const FRACTION_WORDS: &[&str] = &[
    "rate",
    "vat",
    "tax",
    "discount",
    "markup",
    "commission",
    "tip",
    "share",
    "margin",
    "interest",
    "fraction",
];

/// A default written as a percent where its parameter is a fraction (`vat_rate=20` to `vat_rate=0.2`): on a `def`
/// line, each whole-number default from 1 to 99 of a parameter whose name has a word of [`FRACTION_WORDS`] and
/// does not say it is a percent.
fn fraction_defaults(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    if !matches!(text(0), "def" | "async") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate().skip(2) {
        let name = text(k - 2).to_ascii_lowercase();
        let fraction = name.split('_').any(|w| FRACTION_WORDS.contains(&w))
            && !name.contains("percent")
            && !name.contains("pct");
        let Ok(n) = text(k).parse::<u8>() else {
            continue;
        };
        if t.kind == Kind::Number && text(k - 1) == "=" && fraction && (1..100).contains(&n) {
            let f = f64::from(n) / 100.0;
            out.push(format!("{}{f}{}", &line[..t.start], &line[t.end..]));
        }
    }
    out
}

/// A percentage used as if it were a fraction: the name that is token `k`, when it says it is a percent
/// (`annual_percent`, `tip_pct`) and is read, not already divided by 100, divided by 100 (`annual_percent / 12` to
/// `(annual_percent / 100) / 12`). Not on a `def` line.
fn percent_as_fraction(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let lower = text(k).to_ascii_lowercase();
    let percent = lower.contains("percent") || lower.contains("pct");
    let divided = matches!(text(k + 1), "/" | "//" | "*") && text(k + 2) == "100";
    let read = text(k.wrapping_sub(1)) != "."
        && !matches!(text(k + 1), "(" | "=" | "." | "[")
        && !matches!(text(0), "def" | "async" | "class");
    let t = &toks[k];
    (percent && !divided && read)
        .then(|| format!("{}({} / 100){}", &line[..t.start], text(k), &line[t.end..]))
}

/// The names a function's body (`body`, 0-based lines, with the file's `code` tokens) unpacks from a split text
/// before the line `at` (`count, kind = part.split(maxsplit=1)`) that no line of it reads as text (`kind.strip()`,
/// any method) or converts (`int(count)`, `float(count)`) ([`Names::parts`]).
fn text_parts(code: &[(usize, Vec<String>)], body: &[usize], at: usize) -> Vec<String> {
    let of_body: Vec<&Vec<String>> = code
        .iter()
        .filter(|(k, _)| body.contains(k))
        .map(|(_, t)| t)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (_, t) in code.iter().filter(|(k, _)| body.contains(k) && *k < at) {
        let Some(eq) = t.iter().position(|x| x == "=") else {
            continue;
        };
        let split = t[eq..]
            .iter()
            .any(|x| matches!(x.as_str(), "split" | "rsplit" | "partition"));
        let names: Vec<&String> = t[..eq].iter().filter(|x| *x != ",").collect();
        if !split || names.len() < 2 || !names.iter().all(|n| super::is_name(n)) {
            continue;
        }
        for n in names.into_iter().filter(|n| !n.starts_with('_')) {
            let used = of_body.iter().any(|u| {
                u.windows(2).any(|w| w[0] == *n && w[1] == ".")
                    || u.windows(3).any(|w| {
                        matches!(w[0].as_str(), "int" | "float") && w[1] == "(" && w[2] == *n
                    })
            });
            if !used && !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// A part of a split text read as it came where its number was meant ([`Names::parts`]), token `k` the name, in a
/// statement that starts with a name: `items.append((count, kind))` to `items.append((int(count), kind))` and
/// `float(count)`.
fn part_as_number(line: &str, toks: &[Tok], k: usize, names: &Names) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let s = text(k);
    // Only in a statement that starts with a name (`items.append(...)`, `total = ...`): a part returned as it came
    // (`return name, tickets`, a dict literal's line) is converted where it is unpacked (an inserted line finds
    // that place).
    let read = toks[k].kind == Kind::Name
        && toks[0].kind == Kind::Name
        && !KEYWORDS.contains(&text(0))
        && names.parts.iter().any(|p| p == s)
        && (k == 0 || text(k - 1) != ".")
        && !matches!(text(k + 1), "=" | "(" | ".")
        && !(k == 0 && toks.len() > 1 && matches!(text(1), "," | "="));
    if !read {
        return Vec::new();
    }
    let t = &toks[k];
    ["int", "float"]
        .iter()
        .map(|f| format!("{}{f}({s}){}", &line[..t.start], &line[t.end..]))
        .collect()
}

/// A text a normaliser ([`Names::normaliser`]) strips and leaves in its case, or a name stripped in place
/// (`activity = activity.strip()`), token `k` the `strip`: `route.strip()` to `route.strip().lower()` and
/// `.upper()`.
fn case_left(line: &str, toks: &[Tok], k: usize, names: &Names) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let in_place = k == 4 && toks.len() == 7 && text(1) == "=" && text(0) == text(2);
    let stripped = (names.normaliser || in_place)
        && text(k) == "strip"
        && k >= 1
        && text(k - 1) == "."
        && text(k + 1) == "("
        && text(k + 2) == ")"
        && text(k + 3) != ".";
    if !stripped {
        return Vec::new();
    }
    let end = toks[k + 2].end;
    [".lower()", ".upper()"]
        .iter()
        .map(|case| format!("{}{case}{}", &line[..end], &line[end..]))
        .collect()
}

/// The mutants of the string literal that is token `k`: a regex class made to match a run, a literal near it
/// ([`literals_near`]), the wrong key read out of a dict (`item["on_hand"]` for `item["sku"]`, in every place the
/// line reads it), and a parameter's
/// default that is a key taken for another key of the same dict (`programme="eco"` for `"quick"`).
fn string_mutants(line: &str, toks: &[Tok], k: usize, names: &Names) -> Vec<String> {
    let t = &toks[k];
    let s = &line[t.start..t.end];
    let replace = |with: &str| format!("{}{with}{}", &line[..t.start], &line[t.end..]);
    let mut out = regex_runs(line, toks, k);
    out.extend(field_mutants(line, t.start, s, names));
    out.extend(literals_near(s).map(|l| replace(&l)));
    out.extend(precisions_near(s).into_iter().map(|l| replace(&l)));
    out.extend(specs_shared(s).into_iter().map(|l| replace(&l)));
    // A key read out of a dict, or a parameter's default of a key's text (`kind="season"` for `kind="day"`).
    let default = line.trim_start().starts_with("def ")
        && k >= 2
        && line[toks[k - 1].start..toks[k - 1].end] == *"="
        && toks[k - 2].kind == Kind::Name;
    // The dict whose literal maps a key (`PROGRAMMES = {` over lines, `"eco": {...},`).
    let holder = |key: &str| {
        names
            .dict_keys
            .iter()
            .find(|(_, o)| o == key)
            .map(|(d, _)| d.as_str())
    };
    let key = key_at(line, toks, k, false).or_else(|| {
        let inner = s.get(1..s.len().saturating_sub(1))?;
        let known = names.keys.iter().any(|o| o == inner) || holder(inner).is_some();
        (default && known).then_some(inner)
    });
    if let Some(key) = key {
        let q = &s[..1];
        let mut others: Vec<&String> = names
            .keys
            .iter()
            .filter(|o| *o != key)
            .take(MAX_CONSTANTS)
            .collect();
        // Then the other keys of the same dict (`firing["temp"]` to `firing["peak"]`).
        let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
        let dict = match k {
            _ if k >= 2 && text(k - 1) == "[" => text(k - 2),
            _ if k >= 4 && text(k - 1) == "(" && text(k - 2) == "get" => text(k - 4),
            _ if default => holder(key).unwrap_or(""),
            _ => "",
        };
        let own = names
            .dict_keys
            .iter()
            .filter(|(d, o)| d == dict && o != key && !others.contains(&o));
        let own: Vec<&String> = own.map(|(_, o)| o).take(MAX_CONSTANTS).collect();
        others.extend(own);
        // The key with its number turned (`"members"` for `"member"`) where the file names that form otherwise (a
        // parameter `member=False`, a local, an attribute, a field): a record written elsewhere, by a caller or a
        // test, is keyed as the code names it.
        let named = |w: &String| {
            let params = names.defaults.iter().map(|(p, _)| p);
            let signed = names.signatures.iter().flat_map(|(_, ps)| ps);
            let fields = names.fields.iter().flatten();
            (names
                .locals
                .iter()
                .chain(&names.attributes)
                .chain(&names.unread))
            .chain(params.chain(signed).chain(fields))
            .any(|n| n == w)
        };
        if let Some(turned) = number_turned(key).filter(|t| !others.contains(&t) && named(t)) {
            out.push(replace(&format!("{q}{turned}{q}")));
        }
        out.extend(others.iter().map(|o| replace(&format!("{q}{o}{q}"))));
        // A key the line reads twice, read as the other key in both places (`counts[t["item"]] =
        // counts.get(t["item"], 0) + 1`), at its last place: the tokens before it keep their own mutants first.
        if line.matches(s).count() > 1 && !line[t.end..].contains(s) {
            out.extend(
                others
                    .iter()
                    .map(|o| line.replace(s, &format!("{q}{o}{q}"))),
            );
        }
    }
    out
}

/// A lower-case word key with its grammatical number turned: `members` to `member`, `entries` to `entry`,
/// `member` to `members`. None for a key of fewer than three letters or one not all lower-case letters and
/// underscores.
fn number_turned(key: &str) -> Option<String> {
    let word = key.len() >= 3 && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if !word || key.ends_with('_') {
        return None;
    }
    let hissing = |w: &str| ["ss", "x", "ch", "sh"].iter().any(|e| w.ends_with(e));
    let vowel = |c: Option<char>| c.is_some_and(|c| "aeiou".contains(c));
    Some(if let Some(stem) = key.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = key.strip_suffix("es").filter(|s| hissing(s)) {
        stem.to_string()
    } else if hissing(key) {
        format!("{key}es")
    } else if let Some(stem) = key.strip_suffix('s') {
        stem.to_string()
    } else if let Some(stem) = key.strip_suffix('y').filter(|s| !vowel(s.chars().last())) {
        format!("{stem}ies")
    } else {
        format!("{key}s")
    })
}

/// The integers a literal may have been meant as: one more, one less, and a power of ten off by a place
/// (`percent / 10` for `/ 100`). None for a literal that is not a plain decimal integer.
fn numbers_near(literal: &str) -> Vec<String> {
    let Ok(n) = literal.parse::<u64>() else {
        return decimal_powers_near(literal);
    };
    let mut out = vec![n.saturating_add(1).to_string()];
    if n > 0 {
        out.push((n - 1).to_string());
    }
    let power =
        literal.len() >= 2 && literal.starts_with('1') && literal[1..].bytes().all(|c| c == b'0');
    if power {
        out.push(n.saturating_mul(10).to_string());
        if n >= 100 {
            out.push((n / 10).to_string());
        }
    }
    out
}

/// A decimal power of ten ten times smaller and ten times larger, a unit's factor off by one step (`0.01` to
/// `0.001` and `0.1`, `100.0` to `10.0` and `1000.0`); none for any other literal.
fn decimal_powers_near(literal: &str) -> Vec<String> {
    if let Some(zeros) = literal
        .strip_prefix("0.")
        .and_then(|f| f.strip_suffix('1'))
        .filter(|z| z.bytes().all(|c| c == b'0'))
    {
        let smaller = format!("0.{zeros}01");
        let larger = match zeros.len() {
            0 => "1.0".to_string(),
            k => format!("0.{}1", &zeros[..k - 1]),
        };
        return vec![smaller, larger];
    }
    if let Some(zeros) = literal
        .strip_suffix(".0")
        .and_then(|w| w.strip_prefix('1'))
        .filter(|z| z.bytes().all(|c| c == b'0'))
    {
        let smaller = match zeros.len() {
            0 => "0.1".to_string(),
            k => format!("1{}.0", &zeros[..k - 1]),
        };
        return vec![smaller, format!("1{zeros}0.0")];
    }
    Vec::new()
}

/// A decimal literal ten times too small or too large: its point moved one place right, then left (`2.54` to
/// `25.4` and `0.254`: millimetres for centimetres). Only for a module constant's whole value
/// (`MM_PER_INCH = 2.54`): elsewhere a decimal's powers of ten are [`decimal_powers_near`]'s.
fn point_moved(literal: &str) -> Vec<String> {
    let Some((whole, frac)) = literal.split_once('.') else {
        return Vec::new();
    };
    if !(whole.bytes().all(|c| c.is_ascii_digit()) && frac.bytes().all(|c| c.is_ascii_digit())) {
        return Vec::new();
    }
    let digits = format!("{whole}{frac}");
    if digits.is_empty() || digits.len() > 12 {
        return Vec::new();
    }
    let written = |point: usize, digits: &str| {
        let (w, f) = digits.split_at(point);
        let w = w.trim_start_matches('0');
        let w = if w.is_empty() { "0" } else { w };
        let f = if f.is_empty() { "0" } else { f };
        format!("{w}.{f}")
    };
    let padded = if frac.is_empty() {
        format!("{digits}0")
    } else {
        digits.clone()
    };
    let larger = written(whole.len() + 1, &padded);
    let smaller = written(whole.len(), &format!("0{digits}"));
    [larger, smaller]
        .into_iter()
        .filter(|m| m != literal)
        .collect()
}

/// The last item for the first or the second (`parts[1]` to `parts[-1]`): `-1` for a `0` or a `1` that a
/// subscript holds alone (token `k`).
fn last_index(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let alone = text(k.wrapping_sub(1)) == "[" && text(k + 1) == "]";
    (alone && matches!(text(k), "0" | "1")).then(|| "-1".to_string())
}

/// The first item for the last (`items[-1]` to `items[0]`): the line with a subscript's lone `-1` (its `1` the
/// token `k`) made `0`.
fn first_for_last(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let last =
        k >= 2 && text(k) == "1" && text(k - 1) == "-" && text(k - 2) == "[" && text(k + 1) == "]";
    last.then(|| format!("{}0{}", &line[..toks[k - 1].start], &line[toks[k].end..]))
}

/// The literal with two neighbouring digits the other way round (`435.592` to `453.592`, a slip of the fingers),
/// for a plain decimal literal of at least three digits: each pair of unlike digits once, left to right, not across
/// the point.
fn transposed_digits(literal: &str) -> Vec<String> {
    let b = literal.as_bytes();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    if digits < 3 || !b.iter().all(|c| c.is_ascii_digit() || *c == b'.') {
        return Vec::new();
    }
    neighbours_swapped(literal, |c| c.is_ascii_digit())
}

/// `text` with each pair of neighbouring unlike bytes that `swappable` both are swapped, one pair at a time, left
/// to right (ASCII bytes only: a pair that is not stays as it is).
fn neighbours_swapped(text: &str, swappable: impl Fn(u8) -> bool) -> Vec<String> {
    let b = text.as_bytes();
    (1..b.len())
        .filter(|&i| swappable(b[i - 1]) && swappable(b[i]) && b[i - 1] != b[i])
        .filter_map(|i| {
            let mut t = b.to_vec();
            t.swap(i - 1, i);
            String::from_utf8(t).ok()
        })
        .collect()
}

/// Separators a one-character string literal may have been meant as: a slip takes one for another.
const SEPARATORS: &[&str] = &[",", ";", "|", ":", "\\t"];

/// The forms of Unicode normalisation, each one slip from the others.
const NORMAL_FORMS: &[&str] = &["NFC", "NFD", "NFKC", "NFKD"];

/// The string literals a plain literal (quoted, no prefix) may have been meant as: another separator for a
/// separator (`";"` to `","`), another Unicode normal form for one (`"NFC"` to `"NFKD"`), and a short word of two to
/// four capitals with two neighbouring letters the other way round (`"VI"` to `"IV"`: a code or a numeral, where
/// the order of the letters is the meaning).
fn literals_near(literal: &str) -> impl Iterator<Item = String> + '_ {
    let q = literal.chars().next().filter(|c| *c == '"' || *c == '\'');
    let inner = q
        .and_then(|q| literal.strip_prefix(q)?.strip_suffix(q))
        .filter(|i| !i.starts_with(['"', '\'']))
        .unwrap_or_default();
    let quote = |s: &str| format!("{}{s}{}", q.unwrap_or('"'), q.unwrap_or('"'));
    let mut out: Vec<String> = Vec::new();
    for kin in [SEPARATORS, NORMAL_FORMS] {
        if kin.contains(&inner) {
            out.extend(kin.iter().filter(|k| **k != inner).map(|k| quote(k)));
        }
    }
    if (2..=4).contains(&inner.len()) && inner.bytes().all(|c| c.is_ascii_uppercase()) {
        out.extend(
            neighbours_swapped(inner, |c| c.is_ascii_uppercase())
                .iter()
                .map(|t| quote(t)),
        );
    }
    out.into_iter()
}

/// The line with two neighbouring items of a call, a bracket or a bare tuple (after `return` or `=`) swapped: each
/// pair once, in groups of two to four items, keyword arguments left alone. Not on a `def` or `class` line: its
/// parameters swapped would be a new interface, and would pass wherever the body swapped them back. Nor two
/// arguments of a call of one of the file's own functions that bear the names of the parameters they are passed to
/// (`can_book(bookings, slot_index, loaves)`): in the order its `signatures` ask.
fn swaps(line: &str, toks: &[Tok], signatures: &[(String, Vec<String>)]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    if toks
        .first()
        .is_some_and(|t| matches!(text(t), "def" | "async" | "class"))
    {
        return Vec::new();
    }
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        match text(t) {
            "(" | "[" | "{" => open.push(k),
            ")" | "]" | "}" => {
                if let Some(o) = open.pop() {
                    groups.push((o + 1, k));
                }
            }
            _ => {}
        }
    }
    let bare = toks.iter().position(|t| matches!(text(t), "return" | "="));
    if let Some(b) = bare {
        groups.push((
            b + 1,
            toks.len() - usize::from(toks.last().is_some_and(|t| text(t) == ":")),
        ));
    }
    let mut out = Vec::new();
    for (from, to) in groups {
        let mut items: Vec<(usize, usize)> = Vec::new();
        let (mut depth, mut start) = (0i32, from);
        for (k, t) in toks.iter().enumerate().take(to).skip(from) {
            match text(t) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => {
                    items.push((start, k));
                    start = k + 1;
                }
                _ => {}
            }
        }
        if start < to {
            items.push((start, to));
        }
        let keyword = |(a, b): (usize, usize)| (a..b).any(|k| text(&toks[k]) == "=");
        if !(2..=4).contains(&items.len()) || items.iter().any(|i| i.0 >= i.1 || keyword(*i)) {
            continue;
        }
        // The parameters of the file's own function this group calls, if it does.
        let params = (from >= 2 && text(&toks[from - 1]) == "(")
            .then(|| text(&toks[from - 2]))
            .and_then(|f| signatures.iter().find(|(n, _)| n == f))
            .map(|(_, p)| p);
        for (i, pair) in items.windows(2).enumerate() {
            let (a, b) = (pair[0], pair[1]);
            let (a0, a1) = (toks[a.0].start, toks[a.1 - 1].end);
            let (b0, b1) = (toks[b.0].start, toks[b.1 - 1].end);
            let named = params.is_some_and(|p| {
                p.get(i).is_some_and(|n| *n == line[a0..a1])
                    && p.get(i + 1).is_some_and(|n| *n == line[b0..b1])
            });
            if line[a0..a1] != line[b0..b1] && !named {
                out.push(format!(
                    "{}{}{}{}{}",
                    &line[..a0],
                    &line[b0..b1],
                    &line[a1..b0],
                    &line[a0..a1],
                    &line[b1..]
                ));
            }
        }
    }
    out
}

/// The mutants of the operator that is token `k` (`binary`: it follows an operand): swapped for its kin
/// ([`OP_SWAPS`]), a floor division rounded up, an index or a slice's end moved by one, a unary minus dropped.
fn op_mutants(line: &str, toks: &[Tok], k: usize, binary: bool) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (t, s) = (&toks[k], text(&toks[k]));
    let mut out = Vec::new();
    let unary = matches!(s, "+" | "-" | "*") && !binary;
    for (_, with) in OP_SWAPS.iter().filter(|(op, _)| *op == s && !unary) {
        out.extend(
            with.iter()
                .map(|w| format!("{}{w}{}", &line[..t.start], &line[t.end..])),
        );
    }
    if s == "//" {
        out.extend(ceiling_division(line, toks, k));
    }
    // A scaling by 100 done twice, or where none was due: `rate * 100` or `/ 100` dropped.
    let hundred = toks.get(k + 1).is_some_and(|n| text(n) == "100");
    if binary
        && matches!(s, "*" | "/")
        && hundred
        && toks.get(k + 2).is_none_or(|n| text(n) != "**")
    {
        let before = line[..t.start].trim_end();
        out.push(format!("{before}{}", &line[toks[k + 1].end..]));
    }
    // An index or a slice's end moved by one: `items[n]`, `text[:limit]`.
    let bound = k >= 2 && toks[k - 1].kind == Kind::Name;
    if s == "]" && bound && matches!(text(&toks[k - 2]), "[" | ":") {
        let at = toks[k - 1].end;
        out.push(format!("{} - 1{}", &line[..at], &line[at..]));
        out.push(format!("{} + 1{}", &line[..at], &line[at..]));
    }
    if s == "[" && !binary {
        out.extend(sorted_comprehension(line, toks, k));
    }
    // A count taken as an offset: a 1-based number multiplied as if 0-based (`page * size` to `(page - 1) * size`).
    let counted = k >= 1
        && toks[k - 1].kind == Kind::Name
        && (k < 2 || text(&toks[k - 2]) != ".")
        && ordinal(text(&toks[k - 1]));
    if s == "*" && binary && counted {
        let (a, b) = (toks[k - 1].start, toks[k - 1].end);
        out.push(format!("{}({} - 1){}", &line[..a], &line[a..b], &line[b..]));
    }
    // A unary minus dropped (`-x` to `x`).
    if s == "-" && !binary && toks.get(k + 1).is_some_and(|n| n.kind != Kind::Op) {
        let end = toks[k + 1].start;
        out.push(format!("{}{}", &line[..t.start], &line[end..]));
    }
    out
}

/// The words that name the place of a thing in a sequence, often counted from 1 (a page, a week, a row).
const ORDINALS: &[&str] = &[
    "page", "index", "idx", "number", "num", "n", "pos", "position", "row", "col", "column",
    "line", "week", "day", "month", "level", "round", "step", "chapter", "slot", "rank", "turn",
    "nth", "batch", "chunk", "frame", "block", "part", "seat", "lap", "stage", "tier",
];

/// Whether a name says it is an ordinal ([`ORDINALS`]), whole or as its last part (`page_no`, `week_number`: the
/// part before a closing `no`/`number`/`num`/`index` counts too).
fn ordinal(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('_').filter(|p| !p.is_empty()).collect();
    if parts.len() > 1
        && matches!(
            parts.last(),
            Some(&("no" | "number" | "num" | "index" | "idx"))
        )
    {
        parts.pop();
    }
    parts.last().is_some_and(|p| ORDINALS.contains(p))
}

/// Rounded to a whole number where a decimal or two were meant: the call `round(x)` at token `k` to `round(x, 1)`
/// and `round(x, 2)`.
fn rounded_to_digits(line: &str, toks: &[Tok], k: usize) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut one_arg = true;
    for (j, u) in toks.iter().enumerate().skip(k + 1) {
        match text(u) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    if one_arg && j > k + 2 {
                        for digits in [1, 2] {
                            out.push(format!(
                                "{}, {digits}{}",
                                &line[..u.start],
                                &line[u.start..]
                            ));
                        }
                    }
                    break;
                }
            }
            "," if depth == 1 => one_arg = false,
            _ => {}
        }
    }
    out
}

/// A text split at every separator where only the first few were meant: the call `line.split(":")` at token `k`
/// to `line.split(":", 1)` (a key and its value), up to [`MAX_SPLIT`] (`date time level message`); `split()` to
/// `split(maxsplit=1)` likewise.
fn split_cut(line: &str, toks: &[Tok], k: usize) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let one_arg = toks.get(k + 2).is_some_and(|a| a.kind != Kind::Op)
        && toks.get(k + 3).is_some_and(|c| text(c) == ")");
    let no_arg = toks.get(k + 2).is_some_and(|c| text(c) == ")");
    if !(one_arg || no_arg) {
        return Vec::new();
    }
    let (at, arg) = if one_arg {
        (toks[k + 2].end, ", ")
    } else {
        (toks[k + 2].start, "maxsplit=")
    };
    (1..=MAX_SPLIT)
        .map(|most| format!("{}{arg}{most}{}", &line[..at], &line[at..]))
        .collect()
}

/// The largest `maxsplit` a split at every separator is given instead.
const MAX_SPLIT: usize = 3;

/// The string methods before which a value read as it came is often meant stripped first.
const STRIPPED_BEFORE: &[&str] = &["lower", "upper", "casefold", "title", "split", "partition"];

/// The most format precisions of one string literal that are moved.
const MAX_PRECISIONS: usize = 2;

/// A format's precision or width one more or one less (`f"{x:.1f}"` to `.2f`, `"%.2f"` to `%.3f`, `{n:02d}` to
/// `03d`): the digits after a `.` or a `:0` or `%0` that a `f`, `e`, `g`, `%` or `d` ends, in a literal that holds a
/// `{` or a `%`, the first [`MAX_PRECISIONS`] of them.
fn precisions_near(literal: &str) -> Vec<String> {
    let b = literal.as_bytes();
    if !literal.contains(['{', '%']) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut moved = 0;
    let mut i = 1;
    while i < b.len() && moved < MAX_PRECISIONS {
        let lead =
            b[i - 1] == b'.' || (b[i - 1] == b'0' && i >= 2 && matches!(b[i - 2], b':' | b'%'));
        let end = (i..b.len())
            .find(|&e| !b[e].is_ascii_digit())
            .unwrap_or(b.len());
        let spec = end > i && end < b.len() && matches!(b[end], b'f' | b'e' | b'g' | b'%' | b'd');
        if !(lead && spec) {
            i += 1;
            continue;
        }
        let Ok(n) = literal[i..end].parse::<u32>() else {
            break;
        };
        let with = |m: u32| format!("{}{m}{}", &literal[..i], &literal[end..]);
        out.push(with(n + 1));
        if n > 0 {
            out.push(with(n - 1));
        }
        moved += 1;
        i = end;
    }
    out
}

/// The most format specs of one string literal that are shared with its other fields.
const MAX_SHARED_SPECS: usize = 2;

/// A replacement field without a format spec given the spec another field of the same literal has
/// (`f"{hours}:{mins:02d}"` to `f"{hours:02d}:{mins:02d}"`, `"{} to {:.2f}"` to `"{:.2f} to {:.2f}"`): a zero pad
/// or a precision written for one part of a time, a date or an amount and left off another, at most
/// [`MAX_SHARED_SPECS`] of them; with no spec anywhere, a clock's field after a colon padded to two digits
/// (`"{}:{}"` to `"{}:{:02d}"`).
fn specs_shared(literal: &str) -> Vec<String> {
    // Each field: the byte range of its inside, and its spec (after a `:` outside brackets), if any.
    let mut fields: Vec<(usize, usize, Option<&str>)> = Vec::new();
    let b = literal.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' && b.get(i + 1) == Some(&b'{') {
            i += 2;
            continue;
        }
        if b[i] != b'{' {
            i += 1;
            continue;
        }
        let mut depth = 0;
        let Some(end) = (i + 1..b.len()).find(|&e| match b[e] {
            b'{' | b'(' | b'[' => {
                depth += 1;
                false
            }
            b')' | b']' => {
                depth -= 1;
                false
            }
            b'}' if depth > 0 => {
                depth -= 1;
                false
            }
            b'}' => true,
            _ => false,
        }) else {
            break;
        };
        let inside = &literal[i + 1..end];
        let mut level = 0;
        let colon = inside.bytes().position(|c| {
            match c {
                b'(' | b'[' | b'{' => level += 1,
                b')' | b']' | b'}' => level -= 1,
                _ => {}
            }
            c == b':' && level == 0
        });
        fields.push((i + 1, end, colon.map(|c| &inside[c + 1..])));
        i = end + 1;
    }
    let mut specs: Vec<&str> = Vec::new();
    for spec in fields.iter().filter_map(|f| f.2) {
        if !spec.is_empty() && !spec.contains(['{', '}']) && !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    let mut out = Vec::new();
    for &(start, end, _) in fields.iter().filter(|f| f.2.is_none()) {
        let inside = &literal[start..end];
        if inside.contains('!') || inside.contains(['\'', '"']) {
            continue;
        }
        for spec in &specs {
            if out.len() < MAX_SHARED_SPECS {
                out.push(format!(
                    "{}{inside}:{spec}{}",
                    &literal[..start],
                    &literal[end..]
                ));
            }
        }
        // The minutes or seconds of a clock, after another field and a colon, with no spec anywhere: two digits.
        if specs.is_empty() && literal[..start - 1].ends_with("}:") {
            out.push(format!(
                "{}{inside}:02d{}",
                &literal[..start],
                &literal[end..]
            ));
        }
    }
    out
}

/// A slice whose end misses its start (`guests[start:size]` to `guests[start:start + size]`): a window of `size`
/// items from `start`, written as the absolute end it is not. Both bounds plain names.
fn slice_end_offset(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let name = |i: usize| {
        toks.get(i)
            .is_some_and(|t| t.kind == Kind::Name && !KEYWORDS.contains(&text(i)))
    };
    let mut out = Vec::new();
    for k in 1..toks.len() {
        let window = text(k) == "["
            && name(k + 1)
            && text(k + 2) == ":"
            && name(k + 3)
            && text(k + 4) == "]"
            && text(k + 1) != text(k + 3);
        if window {
            let at = toks[k + 3].start;
            out.push(format!("{}{} + {}", &line[..at], text(k + 1), &line[at..]));
        }
    }
    out
}

/// Two names unpacked the wrong way round (`seconds, minutes = divmod(total, 60)` to `minutes, seconds = ...`):
/// the targets of a two-name unpacking swapped.
fn targets_swapped(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let name = |i: usize| toks.get(i).is_some_and(|t| t.kind == Kind::Name);
    if !(name(0) && text(1) == "," && name(2) && text(3) == "=" && text(0) != text(2)) {
        return Vec::new();
    }
    let (a, b) = (text(0), text(2));
    vec![format!(
        "{}{b}, {a}{}",
        &line[..toks[0].start],
        &line[toks[2].end..]
    )]
}

/// The methods of a text that return a new text and change nothing: a call of one as a statement of its own
/// drops what it made.
pub(in crate::locate_rank) const RETURNS_NEW_TEXT: &[&str] = &[
    "strip",
    "lstrip",
    "rstrip",
    "lower",
    "upper",
    "title",
    "capitalize",
    "casefold",
    "replace",
    "removeprefix",
    "removesuffix",
];

/// A text's method called as a statement of its own, its new text dropped (`name.strip()` to `name =
/// name.strip()`): strings never change in place.
fn result_dropped(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let call = toks.len() >= 5
        && toks[0].kind == Kind::Name
        && text(1) == "."
        && RETURNS_NEW_TEXT.contains(&text(2))
        && text(3) == "("
        && text(toks.len() - 1) == ")";
    if !call {
        return Vec::new();
    }
    // The call's own bracket closes last: one call, nothing after it.
    let mut depth = 0i32;
    let whole = toks[3..].iter().enumerate().all(|(i, t)| {
        match &line[t.start..t.end] {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
        depth > 0 || i == toks.len() - 4
    });
    if !whole {
        return Vec::new();
    }
    let start = toks[0].start;
    vec![format!(
        "{}{} = {}",
        &line[..start],
        text(0),
        &line[start..]
    )]
}

/// A total set where it was meant to be added to, in a loop's body or a method (`total = fee_for(m)` to `total +=
/// fee_for(m)`, `self.booked = party_size` to `self.booked += party_size`): a plain assignment of one name or of
/// one attribute of `self`, indented at least two levels (a function's loop or block, a method's body), whose
/// value does not read the name.
fn assigned_for_added(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let deep = toks.first().is_some_and(|t| t.start >= 8);
    let eq = if text(0) == "self" && text(1) == "." {
        3
    } else {
        1
    };
    let name = eq - 1;
    let plain = toks.len() > eq + 1
        && toks[name].kind == Kind::Name
        && text(eq) == "="
        && !toks[eq + 1..]
            .iter()
            .any(|t| line[t.start..t.end] == *text(name));
    if !(deep && plain) {
        return Vec::new();
    }
    vec![format!(
        "{}+{}",
        &line[..toks[eq].start],
        &line[toks[eq].start..]
    )]
}

/// A default given with `or` where only a missing value was meant (`cart = cart or {}` to `cart = {} if cart is
/// None else cart`): an empty collection or a zero the caller passed is thrown away for a new one.
fn none_default(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let assigned = toks.len() >= 5
        && toks[0].kind == Kind::Name
        && text(1) == "="
        && toks[2].kind == Kind::Name
        && text(3) == "or"
        && !toks[4..]
            .iter()
            .any(|t| matches!(&line[t.start..t.end], "or" | "and" | "if"));
    if !assigned {
        return Vec::new();
    }
    let (x, default) = (text(2), line[toks[4].start..].trim_end());
    let indent = &line[..toks[0].start];
    vec![format!(
        "{indent}{} = {default} if {x} is None else {x}",
        text(0)
    )]
}

/// The most one-parameter functions of the file a sort key is passed through.
const MAX_CONVERTERS: usize = 2;

/// A key that orders values as they came where the file's own converter was meant (`key=lambda r: r[2]` to
/// `key=lambda r: parse_time(r[2])`, times ordered as text): the body of a `lambda` of one parameter passed
/// through each of the file's one-parameter functions ([`Names::converters`]), at most [`MAX_CONVERTERS`].
fn converted_keys(line: &str, toks: &[Tok], converters: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 0..toks.len() {
        if text(k) != "lambda"
            || toks.get(k + 1).is_none_or(|t| t.kind != Kind::Name)
            || text(k + 2) != ":"
        {
            continue;
        }
        // The body: up to the `,` or `)` that closes the call it is an argument of.
        let mut depth = 0i32;
        let mut end = k + 3;
        while end < toks.len() {
            match text(end) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => break,
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        if end == k + 3 || end - k - 3 > 8 {
            continue;
        }
        let (a, b) = (toks[k + 3].start, toks[end - 1].end);
        let body = &line[a..b];
        for f in converters
            .iter()
            .filter(|f| !body.contains(f.as_str()))
            .take(MAX_CONVERTERS)
        {
            out.push(format!("{}{f}({body}){}", &line[..a], &line[b..]));
        }
    }
    out
}

/// The most locals a string key is exchanged for.
const MAX_KEY_LOCALS: usize = 3;

/// A dict read with a fixed key where the function's own value was meant (`DAILY_CAP["car"]` to
/// `DAILY_CAP[vehicle]` beside `HOURLY_RATES[vehicle]`): each string subscript of the line exchanged for the
/// locals bound before it ([`Names::locals`], parameters first), at most [`MAX_KEY_LOCALS`]. A costlier mutant.
fn literal_keys_for_locals(line: &str, toks: &[Tok], locals: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 1..toks.len() {
        let keyed = text(k) == "["
            && toks[k - 1].kind == Kind::Name
            && toks.get(k + 1).is_some_and(|t| t.kind == Kind::Str)
            && text(k + 2) == "]";
        if !keyed {
            continue;
        }
        let t = &toks[k + 1];
        for local in locals.iter().take(MAX_KEY_LOCALS) {
            out.push(format!("{}{local}{}", &line[..t.start], &line[t.end..]));
        }
    }
    out
}

/// The regular expressions a line compiles or applies (`re.compile(r"[^a-z0-9]")`) with a character class or a
/// class escape that matches one character made to match a run (`[^a-z0-9]+`, `\s+`): at most two per literal.
fn regex_runs(line: &str, toks: &[Tok], k: usize) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let applied = k >= 4
        && text(&toks[k - 1]) == "("
        && matches!(
            text(&toks[k - 2]),
            "compile"
                | "sub"
                | "subn"
                | "split"
                | "findall"
                | "finditer"
                | "search"
                | "match"
                | "fullmatch"
        )
        && text(&toks[k - 3]) == "."
        && text(&toks[k - 4]) == "re";
    if !applied {
        return Vec::new();
    }
    let t = &toks[k];
    let lit = text(t);
    let quantified = |at: usize| lit[at..].starts_with(['+', '*', '?', '{']);
    let mut ends: Vec<usize> = Vec::new();
    let b = lit.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            if matches!(b[i + 1], b's' | b'd' | b'w' | b'S' | b'D' | b'W') && !quantified(i + 2) {
                ends.push(i + 2);
            }
            i += 2;
            continue;
        }
        if b[i] == b']' && lit[..i].contains('[') && !quantified(i + 1) {
            ends.push(i + 1);
        }
        i += 1;
    }
    ends.into_iter()
        .take(2)
        .map(|at| {
            let at = t.start + at;
            format!("{}+{}", &line[..at], &line[at..])
        })
        .collect()
}

/// Text compared or summed where numbers were meant: `tuple(parts)` to `tuple(map(int, parts))`, for the builtin
/// whose name is token `k` called on one argument (a name, or an expression such as `core.split(".")`; not a
/// generator, not a keyword argument).
fn numbers_for_text(line: &str, toks: &[Tok], k: usize) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let opened =
        toks.get(k + 1).is_some_and(|o| text(o) == "(") && (k == 0 || text(&toks[k - 1]) != ".");
    let Some(close) = opened.then(|| closing(line, toks, k + 1)).flatten() else {
        return Vec::new();
    };
    let arg = &toks[k + 2..close];
    let one = !arg.is_empty()
        && arg.iter().enumerate().all(|(i, t)| {
            !matches!(text(t), "," | "for" | "=") || depth_at(line, toks, k + 2, k + 2 + i) > 0
        });
    if !one || arg.first().is_some_and(|a| text(a) == "map") {
        return Vec::new();
    }
    let numbers: &[&str] = match text(&toks[k]) {
        "tuple" | "list" | "set" => &["int"],
        "sorted" | "sum" | "max" | "min" => &["int", "float"],
        _ => &[],
    };
    let (a, b) = (arg[0].start, arg[arg.len() - 1].end);
    numbers
        .iter()
        .map(|n| format!("{}map({n}, {}){}", &line[..a], &line[a..b], &line[b..]))
        .collect()
}

/// A list taken from the other end (`queue.pop()` to `queue.pop(0)`, and back): a queue served last first.
fn pop_ends(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let k =
        (1..toks.len()).find(|&k| text(k - 1) == "." && text(k) == "pop" && text(k + 1) == "(")?;
    match (text(k + 2), text(k + 3)) {
        (")", _) => Some(format!(
            "{}0{}",
            &line[..toks[k + 2].start],
            &line[toks[k + 2].start..]
        )),
        ("0", ")") => Some(format!(
            "{}{}",
            &line[..toks[k + 2].start],
            &line[toks[k + 2].end..]
        )),
        _ => None,
    }
}

/// A number a line writes twice or more where one name or one value was meant in every place (`ordered[1:-1]` to
/// `ordered[DROPPED_EACH_END:-DROPPED_EACH_END]` beside the unused `DROPPED_EACH_END = 2`, or to `ordered[2:-2]`):
/// each of the file's constants never read, then the number one larger, put in every place at once.
fn literal_everywhere(line: &str, toks: &[Tok], unread: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let numbers: Vec<&Tok> = toks.iter().filter(|t| t.kind == Kind::Number).collect();
    let mut seen: Vec<&str> = Vec::new();
    for t in &numbers {
        let s = &line[t.start..t.end];
        let places: Vec<&&Tok> = numbers
            .iter()
            .filter(|o| line[o.start..o.end] == *s)
            .collect();
        if places.len() < 2 || seen.contains(&s) {
            continue;
        }
        seen.push(s);
        let larger = s.parse::<u64>().ok().map(|n| (n + 1).to_string());
        let constants = unread.iter().filter(|u| constant_name(u)).cloned();
        for with in constants.chain(larger).take(MAX_UNREAD) {
            let mut m = String::new();
            let mut at = 0;
            for p in &places {
                m.push_str(&line[at..p.start]);
                m.push_str(&with);
                at = p.end;
            }
            m.push_str(&line[at..]);
            out.push(m);
        }
    }
    out
}

/// The most mutants of one line that put a binding never read in place of a value.
const MAX_UNREAD: usize = 4;

/// The line with a value read (a number, or a name that is not called, assigned or an attribute, or the whole of a
/// name's subscript: `readings[-1]`; on a `def` line only a parameter's default) exchanged for each of the bindings
/// never read, `unread`, at most [`MAX_UNREAD`].
fn unread_uses(line: &str, toks: &[Tok], unread: &[String]) -> Vec<String> {
    unread_reads(line, toks, unread, false)
}

/// A comprehension that binds a name it never reads and filters nothing (`[name for date, name, seats in shows]`):
/// the filter on that name it left out, truthy or positive (`... in shows if seats]`, `if seats > 0]`). A costlier
/// mutant ([`kin_of_line`]).
fn comprehension_filters(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let mut out = Vec::new();
    // Not a `for` statement: a comprehension's `for` follows what it makes.
    for f in (1..toks.len()).filter(|&f| text(&toks[f]) == "for") {
        let Some(i) = (f + 1..toks.len()).find(|&i| text(&toks[i]) == "in") else {
            continue;
        };
        // The bracket that closes the comprehension, with no filter of its own before it.
        let mut depth = 0i32;
        let mut close = None;
        for (j, t) in toks.iter().enumerate().skip(i + 1) {
            match text(t) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => {
                    close = Some(j);
                    break;
                }
                ")" | "]" | "}" => depth -= 1,
                "if" | "for" if depth == 0 => break,
                _ => {}
            }
        }
        let Some(close) = close else {
            continue;
        };
        let reads = |v: &str| {
            toks.iter()
                .enumerate()
                .filter(|(j, t)| {
                    text(t) == v && (*j == 0 || text(&toks[j - 1]) != ".") && !(f < *j && *j < i)
                })
                .count()
        };
        let at = toks[close].start;
        let head = line[..at].trim_end();
        for v in toks[f + 1..i]
            .iter()
            .filter(|t| t.kind == Kind::Name && !text(t).starts_with('_'))
            .map(text)
            .filter(|v| reads(v) == 0)
        {
            for filter in [format!("if {v}"), format!("if {v} > 0")] {
                out.push(format!("{head} {filter}{}", &line[at..]));
            }
        }
    }
    out
}

/// A name's value scaled by a binding never read instead (`total += price` to `total += price * quantity`), as
/// [`unread_uses`] finds its places, at most [`MAX_UNREAD`]: a costlier mutant ([`kin_of_line`]).
fn unread_scales(line: &str, toks: &[Tok], unread: &[String]) -> Vec<String> {
    unread_reads(line, toks, unread, true)
}

/// The mutants of [`unread_uses`], or (`scale`) of [`unread_scales`].
fn unread_reads(line: &str, toks: &[Tok], unread: &[String], scale: bool) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let def_line = toks
        .first()
        .is_some_and(|t| matches!(text(t), "def" | "async" | "class"));
    // The binding's own assignment is no use of it.
    let own = |u: &String| {
        toks.first().is_some_and(|t| text(t) == u) && toks.get(1).is_some_and(|e| text(e) == "=")
    };
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        let s = text(t);
        let prev = k.checked_sub(1).map(|p| text(&toks[p]));
        let next = toks.get(k + 1).map(text);
        let assigns =
            next.is_some_and(|n| n.ends_with('=') && !matches!(n, "==" | "<=" | ">=" | "!="));
        let value = match t.kind {
            Kind::Number => true,
            Kind::Name => {
                !KEYWORDS.contains(&s)
                    && !matches!(s, "None" | "True" | "False" | "self" | "def" | "class")
                    && prev != Some(".")
                    && prev != Some("for")
                    && next != Some("(")
                    && next != Some(".")
                    && !assigns
            }
            _ => false,
        };
        if !value || (def_line && prev != Some("=")) || unread.iter().any(|u| u == s) {
            continue;
        }
        // A name read by subscript (`readings[-1]`): the whole read exchanged too.
        let close = (next == Some("[") && t.kind == Kind::Name)
            .then(|| {
                let mut depth = 0;
                toks.iter().skip(k + 1).position(|c| {
                    match text(c) {
                        "[" | "(" | "{" => depth += 1,
                        "]" | ")" | "}" => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
            })
            .flatten()
            .map(|j| toks[k + 1 + j].end);
        for u in unread.iter().filter(|u| !own(u)) {
            if let Some(end) = close.filter(|_| !scale) {
                out.push(format!("{}{u}{}", &line[..t.start], &line[end..]));
            }
            if !scale {
                out.push(format!("{}{u}{}", &line[..t.start], &line[t.end..]));
            } else if t.kind == Kind::Name {
                out.push(format!("{}{s} * {u}{}", &line[..t.start], &line[t.end..]));
            }
        }
    }
    out.truncate(MAX_UNREAD);
    out
}

/// The mutants of one line that put a local of its function that is assigned and never read ([`Names::at`]), not
/// a module constant of `file_unread`, in a value's place ([`unread_uses`]).
pub fn unread_local_uses(line: &str, names: &Names, file_unread: &[String]) -> Vec<String> {
    let locals: Vec<String> = names
        .unread
        .iter()
        .filter(|u| !file_unread.contains(u))
        .cloned()
        .collect();
    match lex(line) {
        Some(toks) if !locals.is_empty() => unread_uses(line, &toks, &locals),
        _ => Vec::new(),
    }
}

/// `a // b` (two single names or numbers, standing alone in their expression) rounded up instead of down:
/// `-(-a // b)`, the ceiling division a count of pages or cases needs.
fn ceiling_division(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (a, b) = (toks.get(k.checked_sub(1)?)?, toks.get(k + 1)?);
    let single =
        |t: &Tok| matches!(t.kind, Kind::Name | Kind::Number) && !KEYWORDS.contains(&text(t));
    let opens = |t: Option<&Tok>| {
        t.is_none_or(|t| {
            matches!(text(t), "(" | "[" | "," | "=" | ":" | "return") || KEYWORDS.contains(&text(t))
        })
    };
    let closes = |t: Option<&Tok>| {
        t.is_none_or(|t| {
            matches!(text(t), ")" | "]" | "," | ":" | "}") || KEYWORDS.contains(&text(t))
        })
    };
    let before = k.checked_sub(2).map(|p| &toks[p]);
    (single(a) && single(b) && opens(before) && closes(toks.get(k + 2))).then(|| {
        format!(
            "{}-(-{} // {}){}",
            &line[..a.start],
            text(a),
            text(b),
            &line[b.end..]
        )
    })
}

/// Each operand of a condition joined by `and` / `or` at its top level (`if job.get("closed") and late > 0:`)
/// negated alone: `not` put before it, or taken away where it has one (a `not` missed or misplaced in one part).
fn operands_negated(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (Some(first), Some(last)) = (toks.first(), toks.last()) else {
        return Vec::new();
    };
    if !matches!(text(first), "if" | "elif" | "while") || text(last) != ":" || toks.len() < 5 {
        return Vec::new();
    }
    // The operands' first tokens, at depth 0 after `if` and after each `and` / `or`.
    let mut starts = vec![1];
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().take(toks.len() - 1).skip(1) {
        match text(t) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "and" | "or" if depth == 0 && t.kind == Kind::Name => starts.push(k + 1),
            _ => {}
        }
    }
    if starts.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &k in &starts {
        let Some(t) = toks.get(k) else { continue };
        let negated = if text(t) == "not" && t.kind == Kind::Name {
            let next = toks.get(k + 1).map_or(t.end, |n| n.start);
            format!("{}{}", &line[..t.start], &line[next..])
        } else {
            format!("{}not {}", &line[..t.start], &line[t.start..])
        };
        out.push(negated);
    }
    out
}

/// `if c:`, `elif c:` or `while c:` with its condition negated (`if not (c):`).
fn negated_condition(line: &str, toks: &[Tok]) -> Option<String> {
    let first = toks.first()?;
    let last = toks.last()?;
    let keyword = &line[first.start..first.end];
    if first.kind != Kind::Name
        || !matches!(keyword, "if" | "elif" | "while")
        || &line[last.start..last.end] != ":"
        || toks.len() < 3
    {
        return None;
    }
    let cond = &line[toks[1].start..toks[toks.len() - 2].end];
    Some(format!(
        "{}{keyword} not ({cond}){}",
        &line[..first.start],
        &line[toks[toks.len() - 2].end..]
    ))
}

/// The byte offset where the stop of the `range` call that is token `k` ends: its only or last argument, or the
/// second of three (`range(start, stop, step)`), when the call closes on this line.
fn range_stop_end(line: &str, toks: &[Tok], k: usize) -> Option<usize> {
    let open = toks.get(k + 1)?;
    if &line[open.start..open.end] != "(" {
        return None;
    }
    let (close, commas) = range_commas(line, toks, k)?;
    let end = match commas.as_slice() {
        [_, stop] => *stop,
        _ => close,
    };
    (end > k + 2).then(|| toks[end - 1].end)
}

/// A `range` of one argument counted from 1 to it rather than from 0 (`range(count)` to `range(1, count + 1)`):
/// the first of `count` steps taken as the zeroth.
fn range_counted_from_one(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let (close, commas) = range_commas(line, toks, k)?;
    if !commas.is_empty() || close <= k + 2 {
        return None;
    }
    let (open, end) = (toks[k + 1].end, toks[close - 1].end);
    let stop = &line[open..end];
    Some(format!("{}1, {stop} + 1{}", &line[..open], &line[end..]))
}

/// The `range` call whose name is token `k`: the token that closes its parentheses and the commas between its
/// arguments.
fn range_commas(line: &str, toks: &[Tok], k: usize) -> Option<(usize, Vec<usize>)> {
    let close = closing(line, toks, k + 1)?;
    let commas = (k + 2..close)
        .filter(|&j| {
            &line[toks[j].start..toks[j].end] == "," && depth_at(line, toks, k + 1, j) == 1
        })
        .collect();
    Some((close, commas))
}

/// The step of the `range` call whose name is token `k`, when it takes three arguments and the third is one name
/// (`range(a, b, step)`; a number's steps are the stop's moves by one).
fn range_step<'l>(line: &'l str, toks: &[Tok], k: usize) -> Option<&'l str> {
    let (close, commas) = range_commas(line, toks, k)?;
    let [_, second] = commas.as_slice() else {
        return None;
    };
    let step = toks.get(second + 1)?;
    (second + 2 == close && step.kind == Kind::Name).then(|| &line[step.start..step.end])
}

/// A best-so-far started at a number or a constant where an infinity was meant (`best_day, best_temp = None,
/// FREEZING` to `None, float("inf")`): for an assignment to a name the file compares by order ([`Names::compared`]),
/// each value that is one number or one constant as a whole item, `float("inf")` and `float("-inf")`.
fn infinite_starts(line: &str, toks: &[Tok], compared: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let Some(eq) = (0..toks.len()).find(|&i| text(i) == "=") else {
        return Vec::new();
    };
    let targets = (0..eq).all(|i| toks[i].kind == Kind::Name || text(i) == ",");
    if !targets || !(0..eq).any(|i| compared.iter().any(|c| c == text(i))) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate().skip(eq + 1) {
        let whole = matches!(text(k - 1), "=" | ",") && matches!(text(k + 1), "" | ",");
        let constant =
            t.kind == Kind::Name && text(k).bytes().all(|c| c.is_ascii_uppercase() || c == b'_');
        if whole && (t.kind == Kind::Number || constant) {
            let (a, b) = (t.start, t.end);
            for inf in ["float(\"inf\")", "float(\"-inf\")"] {
                out.push(format!("{}{inf}{}", &line[..a], &line[b..]));
            }
        }
    }
    out
}

/// A text cut at a fixed width where it ends at its first space, or starts after its last (`postcode[:3]` to
/// `postcode.split()[0]`, `name[-5:]` to `name.split()[-1]`): a code or a word of varying length read as if its
/// length were fixed. Only a cut of a name or of a call's result by a plain number.
fn cut_at_space(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let number = |i: usize| toks.get(i).is_some_and(|t| t.kind == Kind::Number);
    let mut out = Vec::new();
    for k in 1..toks.len() {
        let cut = toks[k - 1].kind == Kind::Name && !KEYWORDS.contains(&text(k - 1))
            || text(k - 1) == ")";
        if !cut || text(k) != "[" {
            continue;
        }
        let (end, word) = if text(k + 1) == ":" && number(k + 2) && text(k + 3) == "]" {
            (k + 3, "[0]")
        } else if text(k + 1) == "-" && number(k + 2) && text(k + 3) == ":" && text(k + 4) == "]" {
            (k + 4, "[-1]")
        } else {
            continue;
        };
        let (from, to) = (toks[k].start, toks[end].end);
        out.push(format!("{}.split(){word}{}", &line[..from], &line[to..]));
    }
    out
}

/// A count of a collection (`len(self.items)`) exchanged for an instance attribute the file sets and never reads
/// (`self.diners`): the stored number meant, the count of another thing taken. Only on a line that reads `self`.
fn counts_for_unread_attributes(line: &str, toks: &[Tok], unset: &[String]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    if unset.is_empty() || !toks.iter().any(|t| &line[t.start..t.end] == "self") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for k in (0..toks.len()).filter(|&k| text(k) == "len" && text(k + 1) == "(") {
        if k > 0 && text(k - 1) == "." {
            continue;
        }
        let mut depth = 0i32;
        let close = (k + 1..toks.len()).find(|&j| {
            match text(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let Some(close) = close else { continue };
        let (from, to) = (toks[k].start, toks[close].end);
        for a in unset.iter().take(MAX_UNREAD) {
            out.push(format!("{}self.{a}{}", &line[..from], &line[to..]));
        }
    }
    out
}

/// A slice taken from the wrong end: the first `n` for the last (`[:n]` and `[-n:]`), all but the first for all but
/// the last (`[1:]` and `[:-1]`), each of `[X:]`, `[-X:]`, `[:X]`, `[:-X]` (`X` one name or number) for the two of
/// the others a slip gives.
fn slices_turned(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in 1..toks.len() {
        let subscript =
            text(k) == "[" && (toks[k - 1].kind == Kind::Name || matches!(text(k - 1), ")" | "]"));
        if !subscript {
            continue;
        }
        let operand = |i: usize| {
            toks.get(i)
                .is_some_and(|t| matches!(t.kind, Kind::Name | Kind::Number))
        };
        // (from the start, negative, the operand's token, the closing token)
        let shape = if text(k + 1) == ":" && operand(k + 2) && text(k + 3) == "]" {
            Some((false, false, k + 2, k + 3))
        } else if text(k + 1) == ":" && text(k + 2) == "-" && operand(k + 3) && text(k + 4) == "]" {
            Some((false, true, k + 3, k + 4))
        } else if operand(k + 1) && text(k + 2) == ":" && text(k + 3) == "]" {
            Some((true, false, k + 1, k + 3))
        } else if text(k + 1) == "-" && operand(k + 2) && text(k + 3) == ":" && text(k + 4) == "]" {
            Some((true, true, k + 2, k + 4))
        } else {
            None
        };
        let Some((start, negative, x, close)) = shape else {
            continue;
        };
        let x = text(x);
        let (a, b) = (toks[k].start, toks[close].end);
        let with = |inner: String| format!("{}[{inner}]{}", &line[..a], &line[b..]);
        let turned = match (start, negative) {
            (true, false) => [format!(":-{x}"), format!(":{x}")],
            (true, true) => [format!(":{x}"), format!(":-{x}")],
            (false, false) => [format!("-{x}:"), format!("{x}:")],
            (false, true) => [format!("{x}:"), format!("-{x}:")],
        };
        out.extend(turned.into_iter().map(with));
        // Trimmed at one end where both were meant (`sorted(scores)[1:]` to `[1:-1]`).
        if negative != start {
            out.push(with(format!("{x}:-{x}")));
        }
    }
    out
}

/// A window of a fixed size taken one place off (`ranked(entries)[1:4]` to `[0:3]` and `[2:5]`): a slice between
/// two whole numbers moved by one either way, its size kept.
fn window_shifted(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let whole = |i: usize| {
        text(i)
            .parse::<u32>()
            .ok()
            .filter(|_| toks[i].kind == Kind::Number)
    };
    let mut out = Vec::new();
    for k in 1..toks.len() {
        if text(k) != "[" || text(k + 2) != ":" || text(k + 4) != "]" {
            continue;
        }
        let (Some(a), Some(b)) = (whole(k + 1), whole(k + 3)) else {
            continue;
        };
        let with = |a: u32, b: u32| {
            format!(
                "{}[{a}:{b}]{}",
                &line[..toks[k].start],
                &line[toks[k + 4].end..]
            )
        };
        if a >= 1 && b > a {
            out.push(with(a - 1, b - 1));
        }
        if b > a {
            out.push(with(a + 1, b + 1));
        }
    }
    out
}

/// The most items of one sort key that are negated.
const MAX_KEY_ITEMS: usize = 2;

/// A sort key's order turned round, item by item: `key=lambda kv: (kv[1], kv[0])` to `(-kv[1], kv[0])` (the most
/// common first, ties still in order), or `key=lambda p: p.score` to `-p.score`, the first [`MAX_KEY_ITEMS`] items.
fn sort_key_negated(line: &str, toks: &[Tok]) -> Vec<String> {
    let text = |i: usize| toks.get(i).map_or("", |t| &line[t.start..t.end]);
    let mut out = Vec::new();
    for k in (2..toks.len())
        .filter(|&k| text(k) == "lambda" && text(k - 1) == "=" && text(k - 2) == "key")
    {
        let Some(colon) = (k + 1..toks.len()).find(|&c| text(c) == ":") else {
            continue;
        };
        // The body ends where the call's depth falls, or at a comma of its own depth.
        let mut depth = 0i32;
        let mut end = toks.len();
        for j in colon + 1..toks.len() {
            match text(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => {
                    end = j;
                    break;
                }
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => {
                    end = j;
                    break;
                }
                _ => {}
            }
        }
        let first = colon + 1;
        if first >= end {
            continue;
        }
        let tuple = text(first) == "(" && closing(line, toks, first) == Some(end - 1);
        let starts: Vec<usize> = if tuple {
            let mut starts = vec![first + 1];
            starts.extend(
                (first + 1..end - 1)
                    .filter(|&j| text(j) == "," && depth_at(line, toks, first, j) == 1)
                    .map(|j| j + 1),
            );
            starts
        } else {
            vec![first]
        };
        for &at in starts
            .iter()
            .filter(|&&a| a < end && text(a) != "-")
            .take(MAX_KEY_ITEMS)
        {
            let b = toks[at].start;
            out.push(format!("{}-{}", &line[..b], &line[b..]));
        }
    }
    out
}

/// The index of the token that closes the bracket that is token `open`, when it closes on this line.
fn closing(line: &str, toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match &line[t.start..t.end] {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// How many brackets are open just before token `j`, counting from token `from`.
fn depth_at(line: &str, toks: &[Tok], from: usize, j: usize) -> i32 {
    toks[from..j]
        .iter()
        .map(|t| match &line[t.start..t.end] {
            "(" | "[" | "{" => 1,
            ")" | "]" | "}" => -1,
            _ => 0,
        })
        .sum()
}

/// A `for` loop over a collection whose order was meant sorted: `for name in counts:` to
/// `for name in sorted(counts):`. Not over a `range`, what is already sorted or reversed, or what a function of
/// the project returns.
fn sorted_iteration(line: &str, toks: &[Tok]) -> Option<String> {
    let text = |t: &Tok| &line[t.start..t.end];
    let (first, last) = (toks.first()?, toks.last()?);
    if text(first) != "for" || text(last) != ":" {
        return None;
    }
    let in_at =
        (1..toks.len() - 1).find(|&j| text(&toks[j]) == "in" && depth_at(line, toks, 0, j) == 0)?;
    let (from, to) = (toks.get(in_at + 1)?, &toks[toks.len() - 2]);
    if in_at + 1 >= toks.len() - 1
        || matches!(
            text(from),
            "range" | "sorted" | "reversed" | "enumerate" | "zip"
        )
    {
        return None;
    }
    // Not over what a function returns, bar the builtins that make a collection: the order a function of the
    // project gives is its own, and a slip there is mended where it is made.
    let called = from.kind == Kind::Name && toks.get(in_at + 2).is_some_and(|o| text(o) == "(");
    let collection = matches!(
        text(from),
        "set" | "list" | "tuple" | "dict" | "frozenset" | "filter" | "map"
    );
    if called && !collection {
        return None;
    }
    Some(format!(
        "{}sorted({}){}",
        &line[..from.start],
        &line[from.start..to.end],
        &line[to.end..]
    ))
}

/// A list comprehension whose result was meant in order: `[n for n in xs]` (token `k` its `[`) to
/// `sorted(n for n in xs)`. None for an index, or a bracket that is no comprehension.
fn sorted_comprehension(line: &str, toks: &[Tok], k: usize) -> Option<String> {
    let close = closing(line, toks, k)?;
    let comprehension = (k + 1..close)
        .any(|j| &line[toks[j].start..toks[j].end] == "for" && depth_at(line, toks, k, j) == 1);
    comprehension.then(|| {
        format!(
            "{}sorted({}){}",
            &line[..toks[k].start],
            &line[toks[k + 1].start..toks[close - 1].end],
            &line[toks[close].end..]
        )
    })
}

/// The tokens of a line of Python up to its comment, or None when a string goes on past the line.
fn lex(line: &str) -> Option<Vec<Tok>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        let kind = if c == b'#' {
            break;
        } else if c == b' ' || c == b'\t' {
            i += 1;
            continue;
        } else if c == b'"' || c == b'\'' {
            i = string_end(b, i)?;
            Kind::Str
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            while i < b.len() && (word(b[i]) || b[i] == b'.') {
                i += 1;
            }
            Kind::Number
        } else if word(c) {
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            let prefix = line[start..i].to_ascii_lowercase();
            let quoted = b.get(i).is_some_and(|q| *q == b'"' || *q == b'\'');
            if quoted && ["f", "r", "b", "u", "rb", "br", "fr", "rf"].contains(&prefix.as_str()) {
                i = string_end(b, i)?;
                Kind::Str
            } else {
                Kind::Name
            }
        } else {
            let rest = &line[i..];
            let len = LONG_OPS
                .iter()
                .find(|op| rest.starts_with(*op))
                .map_or(1, |op| op.len());
            i += len;
            Kind::Op
        };
        out.push(Tok {
            kind,
            start,
            end: i,
        });
    }
    Some(out)
}

/// The end of the string literal whose quote is at `i`, or None when it does not end on the line.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    let q = b[i];
    let triple = b[i..].starts_with(&[q, q, q]);
    let len = if triple { 3 } else { 1 };
    i += len;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
        } else if b[i] == q && (!triple || b[i..].starts_with(&[q, q, q])) {
            return Some(i + len);
        } else {
            i += 1;
        }
    }
    None
}

/// `text` with its 1-based line `n` replaced by `with` (its line ending kept).
pub fn with_line(text: &str, n: usize, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    for (k, line) in text.split_inclusive('\n').enumerate() {
        if k + 1 == n {
            let body = line.trim_end_matches(['\n', '\r']);
            out.push_str(with);
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The check the probe runs: a selected file's path and its whole changed text in, Some(true) when the failing
/// check passes (None to stop probing).
pub type Check<'c> = dyn FnMut(&str, &str) -> Option<bool> + 'c;

/// What one run of the check said.
enum Step {
    /// It passed: the probe is over.
    Passed,
    /// It failed: try the next.
    Failed,
    /// No run was left for it.
    Spent,
    /// The caller said stop.
    Stop,
}

/// Probe the places most likely to need the fix with `check`, at most `runs` in all, and return the first place
/// where a change passed (the probe stops there), or none:
/// - first the insertions the check's error tells ([`super::insertions`]: an import, an attribute's first value,
///   a `return` when a `None` was used);
/// - then each mutant of the lines most likely to need the fix (ranked with every signal but this one, the lines to
///   change only, at most [`MAX_LINES`] of selected Python files; none the checks never reached, nor a comment or a
///   docstring);
/// - and the other insertions: before the mutants when the task asks to add a line, else after them, with runs
///   kept for them;
/// - and last the costlier mutants of the same lines ([`kin_of_line`]), with the runs left.
///
/// Before the other mutants come those that put a local its function assigns and never reads in a value's place
/// ([`unread_local_uses`]) or keep the new text a statement drops ([`result_dropped`]), on every probed line, at
/// most [`MAX_UNREAD_FIRST`]: an unused local or a call whose result goes nowhere is itself the sign of the slip,
/// whichever line ranks first. No mutant is run twice.
pub fn probe(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    failing: &Failing,
    runs: usize,
    check: &mut Check<'_>,
) -> Vec<Fixed> {
    let signals = Signals {
        mutants: false,
        ..Signals::ALL
    };
    let (told, untold) = insertions_of(files, failing, insertions::MAX_INSERTIONS.max(runs / 4));
    let adds = super::asks_to_add(&spec.task);
    let asked = super::asked_text(spec);
    let mut probe = Probe {
        files,
        failing,
        check,
        reported: reported(&spec.task),
        said: said_numbers(&spec.task),
        criteria_said: criteria_numbers(spec),
        written: written_numbers(&spec.task),
        tenfold: tenfold_said(&spec.task),
        percents: percents_said(&spec.task),
        hours: hours_said(&spec.task),
        units: units_said(&spec.task),
        task_words: spec
            .task
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(str::to_lowercase)
            .collect(),
        keys_said: joined(keys_said(&spec.task), contrasted(&asked)),
        spoken: word_pairs(&asked),
        none_said: spec.task.contains("None"),
        rounding: speaks_of_rounding(&spec.task),
        tried: HashSet::new(),
    };
    let mut left = runs;
    let mut all = || {
        probe.insert(&told, &mut left)?;
        if adds {
            probe.insert(&untold, &mut left)?;
        }
        let spots = rank(spec, files, focus, failing, signals, 3 * MAX_LINES);
        // Runs kept for the insertions still to try.
        let kept = if adds { 0 } else { untold.len().min(left) };
        let mut for_mutants = left - kept;
        let mut first = for_mutants.min(MAX_UNREAD_FIRST);
        let share = first;
        probe.mutate_lines(&spots, Tier::Unread, &mut first)?;
        for_mutants -= share - first;
        probe.mutate_lines(&spots, Tier::Cheap, &mut for_mutants)?;
        left = for_mutants + kept;
        if !adds {
            probe.insert(&untold, &mut left)?;
        }
        // The costlier mutants last: the probe's time may run out before them.
        probe.mutate_lines(&spots, Tier::Costly, &mut left)?;
        // And the generic missing lines, where every mutant runs in one run of the check.
        probe.insert(&generic_of(files, failing, &spots, &spec.task), &mut left)?;
        ControlFlow::Continue(())
    };
    match all() {
        ControlFlow::Break(Some(found)) => vec![found],
        _ => Vec::new(),
    }
}

/// How trying a list of changes ended: `Break(Some(place))` when one passed, `Break(None)` when probing is over
/// (the caller said stop, or no run is left), `Continue` when every one failed.
type Tried = ControlFlow<Option<Fixed>>;

/// The most runs of the mutants that read a local never read ([`unread_local_uses`]), tried before the others.
pub const MAX_UNREAD_FIRST: usize = 8;

/// Which of a line's mutants a pass of the probe tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// A local never read put in a value's place ([`unread_local_uses`]), or a text's new value kept where a
    /// statement dropped it ([`result_dropped`]): each the sign of a slip.
    Unread,
    /// Every line's [`of_line`].
    Cheap,
    /// Every line's [`kin_of_line`].
    Costly,
}

/// One run of the probe: the files, what failed before, the check, the numbers the task reports as wrong
/// ([`reported`]) and the mutants already run.
struct Probe<'a, 'c> {
    files: &'a BTreeMap<String, Option<PreImage>>,
    failing: &'a Failing,
    check: &'a mut Check<'c>,
    reported: Vec<(String, String)>,
    said: Vec<String>,
    criteria_said: Vec<String>,
    written: Vec<String>,
    tenfold: bool,
    percents: Vec<String>,
    hours: Vec<String>,
    units: Vec<String>,
    task_words: HashSet<String>,
    keys_said: Vec<String>,
    /// The task's and its criteria's neighbouring words ([`keys_spoken`]).
    spoken: Vec<(String, String)>,
    none_said: bool,
    /// Whether the task speaks of pence or decimals ([`Names::rounds_to`]).
    rounding: bool,
    tried: HashSet<(String, usize, String)>,
}

impl Probe<'_, '_> {
    /// Run the check on the selected file `path` changed to `text`, when `left` has a run for it.
    fn step(&mut self, path: &str, text: &str, left: &mut usize) -> Step {
        if *left == 0 {
            return Step::Spent;
        }
        *left -= 1;
        match (self.check)(path, text) {
            None => Step::Stop,
            Some(true) => Step::Passed,
            Some(false) => Step::Failed,
        }
    }

    /// Try each insertion of `list` (every run `left` spent ends the probe).
    fn insert(&mut self, list: &[(String, Insertion)], left: &mut usize) -> Tried {
        for (path, i) in list {
            let Some(Some(pre)) = self.files.get(path) else {
                continue;
            };
            let text = insertions::with_inserted(&pre.text, i.after, &i.line);
            match self.step(path, &text, left) {
                Step::Passed => {
                    // A line that goes just before a `pass` of its own indentation takes the placeholder's place:
                    // the fix is that line changed.
                    let next = pre.text.lines().nth(i.after);
                    let placeholder = next.is_some_and(|n| {
                        n.trim() == "pass"
                            && n.len() - n.trim_start().len()
                                == i.line.len() - i.line.trim_start().len()
                    });
                    let (path, line) = (path.clone(), i.after + usize::from(placeholder));
                    return ControlFlow::Break(Some(Fixed {
                        path,
                        line,
                        insert: !placeholder,
                    }));
                }
                Step::Stop | Step::Spent => return ControlFlow::Break(None),
                Step::Failed => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// The names of a line with what the task says: the numbers it reports and says, its units, the fields it
    /// names, whether it speaks of `None`, and the keys its example writes (first: the key a line should read is
    /// often one of them).
    fn task_names(&self, mut names: Names) -> Names {
        names.reported.clone_from(&self.reported);
        names.said.clone_from(&self.said);
        names.criteria_said.clone_from(&self.criteria_said);
        names.written.clone_from(&self.written);
        names.tenfold |= self.tenfold;
        names.percents.clone_from(&self.percents);
        names.hours.clone_from(&self.hours);
        names.units.clone_from(&self.units);
        names.fields_said = names
            .fields
            .iter()
            .flatten()
            .filter(|f| self.task_words.contains(f.as_str()))
            .cloned()
            .collect();
        names.none_said |= self.none_said;
        if self.rounding && names.rounds_to.is_none() {
            names.rounds_to = Some(names.round_digits.clone());
        }
        names.entries_said = names
            .keys
            .iter()
            .filter(|k| self.task_words.contains(k.as_str()))
            .cloned()
            .collect();
        let file_keys = std::mem::take(&mut names.keys);
        let spoken = keys_spoken(&self.spoken, &file_keys);
        names.keys = joined(joined(self.keys_said.clone(), spoken), file_keys);
        names
    }

    /// Try each mutant of the ranked `spots` (lines to change of Python files) and of the definitions of the
    /// module constants they read: every line's [`of_line`], or (`costly`) every line's [`kin_of_line`]. Running
    /// out of the runs `left` ends only the mutants (the insertions after them have runs of their own).
    fn mutate_lines(&mut self, spots: &[super::Spot], tier: Tier, left: &mut usize) -> Tried {
        let places = spots
            .iter()
            .filter(|s| !s.insert && s.path.ends_with(".py"));
        let mut probed: Vec<(&str, usize)> = Vec::new();
        // What is read of a file once, whichever of its lines is probed: what ran, its prose, its names, its lines.
        let mut read = BTreeMap::new();
        // Only the spots that give a line to probe count: a file's docstrings may rank above its code.
        let mut taken = 0;
        for spot in places {
            if taken == MAX_LINES {
                break;
            }
            let Some(Some(pre)) = self.files.get(&spot.path) else {
                continue;
            };
            let (reach, prose, names, lines) =
                read.entry(spot.path.as_str()).or_insert_with(|| {
                    let lines: Vec<&str> =
                        pre.text.lines().map(|l| l.trim_end_matches('\r')).collect();
                    let reach = self.failing.ran.lines(&spot.path, &pre.text);
                    (
                        reach,
                        super::prose_lines(&pre.text),
                        Names::of(&pre.text),
                        lines,
                    )
                });
            // The ranking names a text once; each line holding it is probed (the second may be the slip), then
            // the definition of each constant it reads (`FIRST_WEEKEND_DAY = 6` for `>= FIRST_WEEKEND_DAY`).
            let same = (1..=lines.len()).filter(|&n| lines[n - 1] == spot.text);
            let defined = definitions_read(lines, &spot.text, &names.constants);
            let before = probed.len();
            for line in same.chain(defined) {
                let not_run = reach
                    .as_ref()
                    .is_some_and(|r| r.get(line - 1) == Some(&Reach::NotRun));
                // A docstring's or a comment's words are no code to mutate.
                let place = (spot.path.as_str(), line);
                if !not_run && prose.get(line - 1) != Some(&true) && !probed.contains(&place) {
                    probed.push(place);
                }
            }
            taken += usize::from(probed.len() > before);
        }
        for &(path, line) in &probed {
            let (Some(Some(pre)), Some((_, _, names, lines))) =
                (self.files.get(path), read.get(path))
            else {
                continue;
            };
            let file_unread = &names.unread;
            let names = self.task_names(names.at(&pre.text, line));
            let mutants = match tier {
                Tier::Unread => {
                    let mut first = unread_local_uses(lines[line - 1], &names, file_unread);
                    first.extend(
                        lex(lines[line - 1])
                            .map_or_else(Vec::new, |t| result_dropped(lines[line - 1], &t)),
                    );
                    first
                }
                Tier::Cheap => of_line(lines[line - 1], &names),
                Tier::Costly => kin_of_line(lines[line - 1], &names),
            };
            for mutant in mutants {
                if !self.tried.insert((path.to_string(), line, mutant.clone())) {
                    continue;
                }
                match self.step(path, &with_line(&pre.text, line, &mutant), left) {
                    Step::Stop => return ControlFlow::Break(None),
                    // The mutants' share is spent: the insertions still have theirs.
                    Step::Spent => return ControlFlow::Continue(()),
                    // The first line found is enough to pin; the pinned requests wait for the probe.
                    Step::Passed => {
                        let path = path.to_string();
                        return ControlFlow::Break(Some(Fixed {
                            path,
                            line,
                            insert: false,
                        }));
                    }
                    Step::Failed => {}
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The 1-based lines of `lines` that define, at the top level and to a literal (`RATE = 2`, `SEP = "-"`) or to
/// arithmetic of numbers and constants (`MS_PER_HOUR = 60 * MS_PER_MINUTE`), a module constant of `constants` that
/// the code `line` reads.
fn definitions_read(lines: &[&str], line: &str, constants: &[String]) -> Vec<usize> {
    let Some(toks) = lex(line) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in toks.iter().filter(|t| t.kind == Kind::Name) {
        let name = &line[t.start..t.end];
        if !constants.iter().any(|c| c == name) {
            continue;
        }
        let def = lines.iter().position(|l| {
            let Some(rest) = l.strip_prefix(name) else {
                return false;
            };
            let Some(value) = rest.trim_start().strip_prefix('=') else {
                return false;
            };
            // A literal, or arithmetic of numbers and constants (`MS_PER_HOUR = 60 * MS_PER_MINUTE`).
            let literal = lex(value).is_some_and(|v| {
                let kinds: Vec<Kind> = v.iter().map(|t| t.kind).collect();
                let arithmetic = v.iter().all(|t| match t.kind {
                    Kind::Number => true,
                    Kind::Name => constants.iter().any(|c| *c == value[t.start..t.end]),
                    Kind::Op => matches!(
                        &value[t.start..t.end],
                        "*" | "/" | "//" | "+" | "-" | "**" | "(" | ")"
                    ),
                    Kind::Str => false,
                });
                // A one-line table of literals (`MULTIPLIERS = {"S": 1, "D": 2, "T": 2}`).
                let table = matches!(&value.trim()[..1], "{" | "[" | "(")
                    && v.iter().all(|t| match t.kind {
                        Kind::Number | Kind::Str => true,
                        Kind::Name => false,
                        Kind::Op => matches!(
                            &value[t.start..t.end],
                            "{" | "}" | "[" | "]" | "(" | ")" | "," | ":" | "-"
                        ),
                    });
                arithmetic
                    || table
                    || matches!(
                        kinds.as_slice(),
                        [Kind::Number | Kind::Str] | [Kind::Op, Kind::Number]
                    )
            });
            !value.starts_with('=') && literal
        });
        if let Some(d) = def.filter(|d| !out.contains(&(d + 1))) {
            out.push(d + 1);
        }
    }
    out
}

/// Insertions, each with its selected file's path.
type Placed = Vec<(String, Insertion)>;

/// The insertions of the selected Python files ([`insertions::of_file`]), those the check's error tells and the
/// others.
fn insertions_of(
    files: &BTreeMap<String, Option<PreImage>>,
    failing: &Failing,
    most: usize,
) -> (Placed, Placed) {
    let (mut told, mut untold) = (Vec::new(), Vec::new());
    for (path, pre) in files {
        let Some(pre) = pre.as_ref().filter(|_| path.ends_with(".py")) else {
            continue;
        };
        let reach = failing.ran.lines(path, &pre.text);
        // A text used as a number: converted just before the first line of this file the error names.
        let named = failing.places.iter().find(|(p, _)| p == path);
        if let Some((_, at)) = named.filter(|_| failing.missing.contains(&Missing::Number)) {
            told.extend(
                insertions::numbers_told(&pre.text, *at)
                    .into_iter()
                    .map(|i| (path.clone(), i)),
            );
        }
        for i in insertions::of_file(&pre.text, &failing.missing, reach.as_deref(), most) {
            let list = if i.told { &mut told } else { &mut untold };
            list.push((path.clone(), i));
        }
    }
    (told, untold)
}

/// The generic insertions ([`insertions::generic`]) of the selected Python files, in the functions of the ranked
/// `spots`, best ranked first.
fn generic_of(
    files: &BTreeMap<String, Option<PreImage>>,
    failing: &Failing,
    spots: &[super::Spot],
    task: &str,
) -> Placed {
    let mut out = Vec::new();
    let mut order: Vec<&str> = Vec::new();
    for s in spots {
        if s.path.ends_with(".py") && !order.contains(&s.path.as_str()) {
            order.push(&s.path);
        }
    }
    for path in order {
        let Some(Some(pre)) = files.get(path) else {
            continue;
        };
        let near: Vec<usize> = spots
            .iter()
            .filter(|s| s.path == path && s.line > 0)
            .map(|s| s.line - 1)
            .collect();
        let reach = failing.ran.lines(path, &pre.text);
        for i in insertions::generic(&pre.text, reach.as_deref(), &near, task) {
            out.push((path.to_string(), i));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` has the mutant `want`.
    fn gives(line: &str, want: &str) {
        let m = mutants(line);
        assert!(m.iter().any(|l| l == want), "{line}: {m:?}");
    }

    /// No mutant of `line` holds `needle`.
    fn never_gives(line: &str, needle: &str) {
        let m = mutants(line);
        assert!(!m.iter().any(|l| l.contains(needle)), "{line}: {m:?}");
    }

    fn mutants(line: &str) -> Vec<String> {
        let names = Names {
            constants: vec!["RATE".into(), "CAP".into()],
            attributes: vec!["day".into(), "night".into()],
            unread: Vec::new(),
            keys: vec!["sku".into(), "on_hand".into()],
            factors: vec!["60".into(), "1000".into()],
            ..Names::default()
        };
        of_line(line, &names)
    }

    #[test]
    fn a_key_read_twice_is_exchanged_in_both_places_and_a_spread_literal_s_keys_are_keys() {
        let m = mutants("    n[t[\"sku\"]] = n.get(t[\"sku\"], 0) + 1");
        assert!(
            m.contains(&"    n[t[\"on_hand\"]] = n.get(t[\"on_hand\"], 0) + 1".to_string()),
            "{m:?}"
        );
        let text = "\"\"\"Stock.\"\"\"\n\n\ndef make(s, n):\n    return {\"sku\": s,\n            'on_hand': n}\n\n\ndef f(item):\n    return item[\"reserved\"] + item.get(\"sku\")\n";
        assert_eq!(Names::of(text).keys, ["sku", "on_hand", "reserved"]);
        // Not a table's key of a record: its records' keys are the fields.
        let table = "T = {\n    \"a\": {\"x\": 1},\n    \"b\": 2,\n}\n";
        assert_eq!(Names::of(table).keys, ["x", "b"]);
    }

    #[test]
    fn a_key_is_named_as_its_value_and_a_date_format_turns_two_directives_round() {
        gives(
            "        owner = horse[\"name\"]",
            "        owner = horse[\"owner\"]",
        );
        never_gives("        owner = horse[\"owner\"]", "\"name\"");
        never_gives("        owner = horse[\"name\"] + 1", "\"owner\"");
        gives(
            "    right = decimal_acuity(record[\"left\"])",
            "    right = decimal_acuity(record[\"right\"])",
        );
        gives(
            "    right = self.acuity(record[\"left\"])",
            "    right = self.acuity(record[\"right\"])",
        );
        never_gives("    right = acuity(record[\"left\"], 2)", "\"right\"");
        never_gives("    right = acuity(record[\"left\"]) + 1", "\"right\"");
        gives(
            "    bb = day.strftime(\"%d/%m/%Y\")",
            "    bb = day.strftime(\"%m/%d/%Y\")",
        );
        gives(
            "    bb = day.strftime(\"%d/%m/%Y\")",
            "    bb = day.strftime(\"%d/%Y/%m\")",
        );
        // A literal percent sign is no directive.
        never_gives("    s = \"%%d %H\"", "%%H");
    }

    #[test]
    fn a_decimal_point_moves_one_place_either_way() {
        assert_eq!(point_moved("2.54"), ["25.4", "0.254"]);
        assert_eq!(point_moved("0.25"), ["2.5", "0.025"]);
        assert_eq!(point_moved("30.0"), ["300.0", "3.00"]);
        assert_eq!(point_moved("12."), ["120.0", "1.2"]);
        assert!(point_moved("1e3").is_empty() && point_moved("7").is_empty());
        gives("MM_PER_INCH = 2.54", "MM_PER_INCH = 25.4");
        // Only a constant's whole value: not a local's, nor a decimal inside arithmetic.
        never_gives("    inch = 2.54", "25.4");
        never_gives("MM_PER_INCH = 2.54 * 10", "25.4");
    }

    #[test]
    fn a_name_becomes_its_twin_and_a_strip_removes_every_space() {
        let names = Names {
            locals: vec!["used_a".into(), "used_b".into(), "secs".into()],
            ..Names::default()
        };
        let m = of_line("        elif used_a + secs <= limit:", &names);
        assert!(
            m.contains(&"        elif used_b + secs <= limit:".to_string()),
            "{m:?}"
        );
        // No twin among the locals: nothing.
        assert!(
            !of_line("        elif used_a + secs <= limit:", &Names::default())
                .iter()
                .any(|l| l.contains("used_b"))
        );
        // One-letter names are no twins here.
        let ab = vec!["a".to_string(), "b".to_string()];
        let line = "    return a.room == b.room";
        assert!(twins_swapped(line, &lex(line).unwrap(), &ab).is_empty());
        // Every space removed only in a function that brings a value to one form.
        let normaliser = Names {
            normaliser: true,
            ..Names::default()
        };
        let m = of_line("    return chip.strip()", &normaliser);
        assert!(
            m.contains(&"    return chip.replace(\" \", \"\")".to_string()),
            "{m:?}"
        );
        never_gives("    return chip.strip()", "replace");
        let dashes = of_line("    return chip.strip(\"-\")", &normaliser);
        assert!(!dashes.iter().any(|l| l.contains("replace")), "{dashes:?}");
    }

    #[test]
    fn an_enumerate_count_starts_at_the_other_end() {
        gives(
            "    for n, day in enumerate(dates(first, weeks)):",
            "    for n, day in enumerate(dates(first, weeks), start=1):",
        );
        gives(
            "    for n, day in enumerate(days, start=1):",
            "    for n, day in enumerate(days):",
        );
        gives(
            "    pairs = list(enumerate(xs, 1))",
            "    pairs = list(enumerate(xs))",
        );
        // A method of that name, or a call with nothing to count, is left alone.
        never_gives("    self.enumerate(xs)", "start=1");
        never_gives("    enumerate()", "start=1");
    }

    #[test]
    fn rounding_goes_the_other_way_and_an_unread_local_scales_a_value() {
        gives("    return round(v / BOX)", "    return math.ceil(v / BOX)");
        gives(
            "    return round(v / BOX)",
            "    return math.floor(v / BOX)",
        );
        gives("    n = int(x * 1.5)", "    n = round(x * 1.5)");
        // A method of that name is no builtin.
        never_gives("    return self.round(v)", "math.");
        let names = Names {
            unread: vec!["quantity".into()],
            ..Names::default()
        };
        let got = unread_local_uses("        total += price", &names, &[]);
        assert_eq!(got, ["        total += quantity"]);
        // A subscript read: the whole read too, before its name alone.
        let got = unread_local_uses("    gap = target - levels[-1]", &names, &[]);
        assert!(
            got.contains(&"    gap = target - quantity".to_string()),
            "{got:?}"
        );
        // Scaled only among the costlier mutants, after every probed line's cheaper ones.
        let got = kin_of_line("        total += price", &names);
        assert!(
            got.contains(&"        total += price * quantity".to_string()),
            "{got:?}"
        );
        // A name a `for` loop unpacks and never reads scales a value of the loop's body.
        let text = "def items_total(order):\n    total = 0.0\n    for dish, price, quantity in order:\n        total += price\n    return total\n";
        let at = Names::of(text).at(text, 4);
        assert_eq!(at.loop_unread, ["dish", "quantity"]);
        assert!(at.unread.is_empty(), "{:?}", at.unread);
        let got = kin_of_line("        total += price", &at);
        assert!(
            got.contains(&"        total += price * quantity".to_string()),
            "{got:?}"
        );
    }

    #[test]
    fn a_constant_is_copied_an_entry_accumulated_split_parts_stripped_and_a_width_zero_padded() {
        let names = Names::default();
        let kin = |line: &str| kin_of_line(line, &names);
        assert!(
            kin("    groups = DEFAULT_GROUPS")
                .contains(&"    groups = list(DEFAULT_GROUPS)".to_string())
        );
        assert!(
            kin("        totals[species] = count")
                .contains(&"        totals[species] = totals.get(species, 0) + count".to_string())
        );
        assert!(
            kin("    parts = line.split(SEPARATOR)").contains(
                &"    parts = [part.strip() for part in line.split(SEPARATOR)]".to_string()
            )
        );
        assert!(
            kin("    return f\"{PREFIX}-{number:{ID_WIDTH}d}\"")
                .contains(&"    return f\"{PREFIX}-{number:0{ID_WIDTH}d}\"".to_string())
        );
        assert!(kin("    return f\"{n:5d}\"").contains(&"    return f\"{n:05d}\"".to_string()));
        // Not a lower-case name, not a subscript read, not a split that is part of a longer value.
        assert!(
            !kin("    groups = defaults")
                .iter()
                .any(|m| m.contains("list("))
        );
        assert!(!kin("    x = totals[k]").iter().any(|m| m.contains(".get(")));
        assert!(
            !kin("    n = len(line.split(SEP))")
                .iter()
                .any(|m| m.contains("strip"))
        );
        // A parameter the body never reads takes a value's place first.
        let text = "def scale(items, wanted, base=4):\n    return [q * wanted / SERVINGS for q in items]\n";
        let at = Names::of(text).at(text, 2);
        assert_eq!(at.unread, ["base"]);
    }

    #[test]
    fn an_except_clause_catches_another_exception() {
        gives("    except KeyError:", "    except ValueError:");
        gives("    except KeyError as e:", "    except TypeError as e:");
        never_gives("    except (KeyError, ValueError):", "Exception");
    }

    #[test]
    fn a_decimal_power_of_ten_moves_one_step_and_a_difference_turns_round() {
        gives("    \"ml\": (\"l\", 0.01),", "    \"ml\": (\"l\", 0.001),");
        gives("    \"ml\": (\"l\", 0.01),", "    \"ml\": (\"l\", 0.1),");
        gives("RATE = 0.1", "RATE = 1.0");
        gives("SCALE = 100.0", "SCALE = 10.0");
        gives("SCALE = 100.0", "SCALE = 1000.0");
        gives("SCALE = 1.0", "SCALE = 0.1");
        // Not a decimal that is no power of ten, but for a constant's whole value.
        never_gives("    rate = 0.25", "0.025");
        gives("RATE = 0.25", "RATE = 0.025");
        gives(
            "    left = to_balls(total) - to_balls(bowled)",
            "    left = to_balls(bowled) - to_balls(total)",
        );
        gives(
            "    return end.day - start[0]",
            "    return start[0] - end.day",
        );
        gives("    f(a, b - c)", "    f(a, c - b)");
        // Not a part of a longer sum, nor a negation.
        never_gives("    x = a - b * c", "b * c - a");
        never_gives("    x = a - b + c", "b + c - a");
        never_gives("    x = -a", "a -");
    }

    #[test]
    fn a_difference_of_names_in_an_index_is_one_off() {
        gives(
            "        chunk = readings[max(0, i - window):i + 1]",
            "        chunk = readings[max(0, i - window + 1):i + 1]",
        );
        gives("    return row[n - k]", "    return row[n - k - 1]");
        // Not outside a subscript, nor in a list display, nor beside a tighter operator.
        never_gives("    return n - k", "k + 1");
        never_gives("    xs = [n - k]", "k + 1");
        never_gives("    return row[n - k * 2]", "k + 1");
    }

    #[test]
    fn a_ratio_turns_upside_down() {
        gives(
            "    return distance_km / litres * 100",
            "    return litres / distance_km * 100",
        );
        gives("    share = part / whole", "    share = whole / part");
        // Not an operand bound tighter to its other side, nor a power.
        never_gives("    x = a ** b / c", "c / b");
        never_gives("    x = a.b / c", "c / a.b");
        never_gives("    x = a / b ** 2", "b / a");
    }

    #[test]
    fn a_key_the_task_writes_in_a_dict_literal_is_a_key_a_line_may_read() {
        let task =
            "annual_rent({'width': 5, 'length': 10, \"tap\": True}) can't be 33.25; {'x' is no key";
        assert_eq!(keys_said(task), ["width", "length", "tap"]);
        assert!(keys_said("plan_week('herbs', '2024-07-01') lists 'a', 'b'").is_empty());
        // A key of two words the task speaks of, beside a file's key that shares the last of them.
        let pairs =
            word_pairs("Credit is a share of the game's resale price, never its original price.");
        let file = ["original_price".to_string(), "title".to_string()];
        assert_eq!(keys_spoken(&pairs, &file), ["resale_price"]);
        // Not the file's own key again, nor a function word, nor a key of one word.
        let pairs = word_pairs("their price and the original price");
        assert!(keys_spoken(&pairs, &file).is_empty());
    }

    #[test]
    fn a_text_stripped_where_its_number_was_meant_is_converted() {
        let names = Names::default();
        let kin = |l: &str| kin_of_line(l, &names);
        let m = kin("    return int(day), gravity.strip()");
        for want in [
            "    return int(day), float(gravity)",
            "    return int(day), int(gravity)",
        ] {
            assert!(m.contains(&want.to_string()), "{m:?}");
        }
        // Not a strip of an attribute, nor one with its characters.
        assert!(
            !kin("    x = row.name.strip()")
                .iter()
                .any(|l| l.contains("float("))
        );
        assert!(
            !kin("    x = name.strip(\"-\")")
                .iter()
                .any(|l| l.contains("float(name)"))
        );
    }

    #[test]
    fn a_default_written_as_a_percent_where_a_fraction_was_meant_is_its_fraction() {
        let m = mutants("def with_vat(net, vat_rate=20, tip_rate=5, count=20, tip_percent=15):");
        for want in [
            "def with_vat(net, vat_rate=0.2, tip_rate=5, count=20, tip_percent=15):",
            "def with_vat(net, vat_rate=20, tip_rate=0.05, count=20, tip_percent=15):",
        ] {
            assert!(m.contains(&want.to_string()), "{m:?}");
        }
        assert!(
            !m.iter()
                .any(|l| l.contains("count=0.2") || l.contains("tip_percent=0.15")),
            "{m:?}"
        );
        // Never where the number is no default.
        assert!(
            !mutants("    vat_rate = 20")
                .iter()
                .any(|l| l.contains("0.2"))
        );
    }

    #[test]
    fn a_rate_is_another_percentage_the_task_writes_and_a_queue_is_served_from_its_other_end() {
        assert_eq!(
            percents_said("only 5% VAT not 20 % and 12.5 percent, 3 per cent; 7 people"),
            ["5", "20", "12.5", "3"]
        );
        let names = Names {
            percents: vec!["5".into(), "20".into()],
            ..Names::default()
        };
        let got = of_line("VAT_RATE = 0.20", &names);
        assert!(got.contains(&"VAT_RATE = 0.05".to_string()), "{got:?}");
        assert!(!got.contains(&"VAT_RATE = 0.2".to_string()), "{got:?}");
        let got = of_line("        return self.urgent.pop()", &Names::default());
        assert!(
            got.contains(&"        return self.urgent.popleft()".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"        return self.urgent.pop(0)".to_string()),
            "{got:?}"
        );
        let got = of_line(
            "    counted = ordered[1:-1]",
            &Names {
                unread: vec!["DROPPED_EACH_END".into()],
                ..Names::default()
            },
        );
        assert!(
            got.contains(&"    counted = ordered[DROPPED_EACH_END:-DROPPED_EACH_END]".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"    counted = ordered[2:-2]".to_string()),
            "{got:?}"
        );
    }

    #[test]
    fn a_whole_constant_is_ten_times_off_only_where_the_task_says_so() {
        assert!(tenfold_said(
            "figures are roughly ten times lower than the meter"
        ));
        assert!(!tenfold_said("ten minutes late, times two"));
        let names = Names {
            tenfold: true,
            ..Names::default()
        };
        let got = of_line("PPM_TO_UGM3 = 262", &names);
        assert!(got.contains(&"PPM_TO_UGM3 = 2620".to_string()), "{got:?}");
        assert!(got.contains(&"PPM_TO_UGM3 = 26.2".to_string()), "{got:?}");
        let got = of_line("PPM_TO_UGM3 = 262", &Names::default());
        assert!(!got.contains(&"PPM_TO_UGM3 = 2620".to_string()), "{got:?}");
    }

    #[test]
    fn a_figure_the_task_writes_as_it_stands_becomes_only_another_it_writes() {
        assert_eq!(
            written_numbers(
                "Lower Ford read 1.10 m; a 2,000 GT ship, £36.00 (x2, v3) at 5pm. 1.5."
            ),
            ["1.1", "2000", "36", "5", "1.5"]
        );
        assert_eq!(canonical("2_000"), Some("2000".into()));
        assert_eq!(canonical("0.50"), Some("0.5".into()));
        assert_eq!(canonical("1e3"), None);
        let names = Names {
            written: vec!["1.1".into(), "1.92".into()],
            ..Names::default()
        };
        // The user's own figure stays; its neighbours are no fix.
        let got = of_line(r#"    "Lower Ford": 1.10,"#, &names);
        assert!(
            !got.iter().any(|m| m.contains("1.01") || m.contains("11.0")),
            "{got:?}"
        );
        // Another figure the task writes is kept, and a literal the task does not write is mutated as ever.
        let names = Names {
            written: vec!["70".into(), "69".into()],
            ..Names::default()
        };
        let got = of_line("    if score > 70:", &names);
        assert!(got.contains(&"    if score > 69:".to_string()), "{got:?}");
        assert!(!got.contains(&"    if score > 71:".to_string()), "{got:?}");
        assert!(got.contains(&"    if score >= 70:".to_string()), "{got:?}");
        let got = of_line("    if score > 60:", &names);
        assert!(got.contains(&"    if score > 61:".to_string()), "{got:?}");
        // A small whole number the task writes is mutated as ever.
        let names = Names {
            written: vec!["1".into(), "2".into()],
            ..Names::default()
        };
        let got = of_line("    counts[name] = counts.get(name, 1) + 1", &names);
        assert!(
            got.contains(&"    counts[name] = counts.get(name, 0) + 1".to_string()),
            "{got:?}"
        );
    }

    #[test]
    fn a_default_takes_the_numbers_the_task_says_and_a_based_value_moves_by_one() {
        assert_eq!(
            said_numbers("best of three sets, so two should win (3 of 5)"),
            ["3", "2", "5"]
        );
        // The steps between the clock times an example lists come first; a ratio or a longer number is no time.
        let said =
            said_numbers("slots('09:00', '15:00') gave ['09:00', '10:30', '12:00'], 3:1 or 123:45");
        assert_eq!(said[..2], ["360", "90"], "{said:?}");
        assert!(!said.contains(&"0".to_string()), "{said:?}");
        // A decimal is one number: a whole one says its whole part, another no whole number at all.
        assert_eq!(
            said_numbers(
                "booking(2) gives tip 2.4 and 26.4; it should be 0.0 and 24.0. Ends at 7."
            ),
            ["2", "0", "24", "7"]
        );
        let names = Names {
            said: vec!["3".into(), "2".into()],
            ..Names::default()
        };
        let got = of_line("def winner(sets, best_of=5):", &names);
        assert!(
            got.contains(&"def winner(sets, best_of=3):".to_string()),
            "{got:?}"
        );
        // Not a number that is no default.
        let got = of_line("    limit = 10", &names);
        assert!(!got.iter().any(|m| m.contains("limit = 3")), "{got:?}");
        // An hour constant takes the hours the task says on the clock.
        assert_eq!(
            hours_said(
                "night is from 8pm until 6am, 12am or 12pm; I am sure. 21:15 and 09:00, 25:00"
            ),
            ["20", "6", "0", "12", "9"]
        );
        let hours = Names {
            hours: vec!["22".into(), "20".into()],
            said: vec!["6".into()],
            ..Names::default()
        };
        let got = of_line("NIGHT_START_HOUR = 22", &hours);
        assert!(
            got.contains(&"NIGHT_START_HOUR = 20".to_string()),
            "{got:?}"
        );
        // Not a constant of another kind, nor a number the task says of its example (`6 minutes away`).
        let got = of_line("MAX_TRAVEL_MINUTES = 10", &hours);
        assert!(
            !got.iter()
                .any(|m| m.ends_with("= 20") || m.ends_with("= 6")),
            "{got:?}"
        );
        let based = Names {
            based: true,
            ..Names::default()
        };
        let got = of_line("    col = int(label[1:])", &based);
        assert!(
            got.contains(&"    col = int(label[1:]) - 1".to_string()),
            "{got:?}"
        );
        assert!(
            !of_line("    col = int(label[1:])", &Names::default())
                .iter()
                .any(|m| m.ends_with(" - 1"))
        );
        assert!(
            !of_line("    return row, col", &based)
                .iter()
                .any(|m| m.ends_with(" + 1"))
        );
    }

    #[test]
    fn a_comprehension_that_copies_its_items_converts_them() {
        gives(
            "    return tuple(part for part in core.split(SEP))",
            "    return tuple(int(part) for part in core.split(SEP))",
        );
        gives(
            "    values = [v for v in row]",
            "    values = [float(v) for v in row]",
        );
        // A comprehension that does something with its item already is left as it is.
        never_gives("    return [len(w) for w in words]", "int(");
    }

    #[test]
    fn an_attribute_is_read_through_the_method_that_refines_it() {
        let text = "class Sitting:\n    def __init__(self, tables):\n        self.tables = tables\n        self.guests = 0\n\n    @property\n    def capacity(self):\n        return self.tables * 6\n\n    def spare(self):\n        return self.capacity - self.guests\n\n    def seat(self, party):\n        self.guests += party\n        return True\n";
        let names = Names::of(text);
        assert_eq!(
            names.refiners,
            [
                ("tables".to_string(), "capacity".to_string()),
                ("capacity".to_string(), "spare()".to_string()),
                ("guests".to_string(), "spare()".to_string()),
            ]
        );
        let line = "        if s.capacity >= party:";
        assert!(of_line(line, &names).contains(&"        if s.spare() >= party:".to_string()));
        // Neither a write nor a call is a read.
        let set = of_line("        s.guests = 0", &names);
        assert!(!set.iter().any(|m| m.contains("spare()")), "{set:?}");
        // A method that takes more than `self`, or returns nothing, refines nothing.
        let taking = text.replace("def spare(self):", "def spare(self, extra):");
        assert!(
            !Names::of(&taking)
                .refiners
                .iter()
                .any(|(_, c)| c == "spare()")
        );
        let silent = text.replace("return self.capacity - self.guests", "print(self.guests)");
        assert!(
            !Names::of(&silent)
                .refiners
                .iter()
                .any(|(_, c)| c == "spare()")
        );
    }

    #[test]
    fn a_mean_counts_what_it_sums_and_a_duration_takes_its_value_s_unit() {
        gives(
            "        return round(sum(readings) / len(self.entries), 2)",
            "        return round(sum(readings) / len(readings), 2)",
        );
        gives(
            "    return sum(self.marks) / len(marks)",
            "    return sum(self.marks) / len(self.marks)",
        );
        never_gives("    return sum(marks) / len(marks)", "len(self");
        gives(
            "    return valid_date + timedelta(days=weeks)",
            "    return valid_date + timedelta(weeks=weeks)",
        );
        gives(
            "    return start + timedelta(hours=DECISION_WEEKS)",
            "    return start + timedelta(weeks=DECISION_WEEKS)",
        );
        never_gives("    return start + timedelta(days=gap)", "weeks=");
        never_gives("    return start + timedelta(days=days)", "weeks=");
        gives(
            "    return sorted(scores)[1:]",
            "    return sorted(scores)[1:-1]",
        );
        gives("    return ranked[:-2]", "    return ranked[2:-2]");
        gives(
            "    return ranked(entries)[1:4]",
            "    return ranked(entries)[0:3]",
        );
        gives(
            "    return ranked(entries)[1:4]",
            "    return ranked(entries)[2:5]",
        );
        gives(
            "        self.credits[giver] = self.balance(taker) + value",
            "        self.credits[giver] = self.balance(giver) + value",
        );
        gives(
            "        totals[day] = totals.get(day, 0) + sizes[kind]",
            "        totals[day] = totals.get(day, 0) + sizes[day]",
        );
        never_gives(
            "        self.credits[giver] = self.balance(giver) + value",
            "taker",
        );
    }

    #[test]
    fn a_place_written_for_the_wrong_one_of_the_names_its_dict_is_subscripted_by() {
        let file = "def record(table, winner, loser, a, b):\n    table[loser][\"played\"] += 1\n    table[winner][\"net\"] += a - b\n    table[winner][\"net\"] += b - a\n";
        let names = Names::of(file);
        let pairs = |d: &str, v: &str| (d.to_string(), v.to_string());
        assert_eq!(
            names.subscripts,
            [pairs("table", "loser"), pairs("table", "winner")]
        );
        let line = "    table[winner][\"net\"] += b - a";
        let got = of_line(line, &names);
        assert!(
            got.iter()
                .any(|m| m == "    table[loser][\"net\"] += b - a"),
            "{got:?}"
        );
        // Only a place written: a read of it is left to the key mutants.
        let read = "    net = table[winner][\"net\"]";
        assert!(
            !of_line(read, &names)
                .iter()
                .any(|m| m.contains("table[loser]"))
        );
    }

    #[test]
    fn a_date_kept_as_its_iso_text_is_read_through_the_file_s_own_import() {
        let file = "from datetime import date, timedelta\n\n\nclass Wheel:\n    def __init__(self, made_on):\n        self.made_on = made_on\n";
        let names = Names::of(file);
        assert_eq!(names.date_parsers, ["date.fromisoformat"]);
        let got = of_line("        self.made_on = made_on", &names);
        let want = "        self.made_on = date.fromisoformat(made_on)";
        assert!(got.iter().any(|m| m == want), "{got:?}");
        // Not a name that is no date, nor a file that imports no date.
        assert!(
            !of_line("        self.code = code", &names)
                .iter()
                .any(|m| m.contains("fromisoformat"))
        );
        let none = Names::of("class Wheel:\n    pass\n");
        assert!(
            !of_line("        self.made_on = made_on", &none)
                .iter()
                .any(|m| m.contains("iso"))
        );
    }

    #[test]
    fn the_middle_of_a_count_is_never_another_factor() {
        never_gives("    mid = len(weights) // 2", "// 60");
        never_gives("    mid = len(weights) // 2", "// 1000");
        gives("    hours = minutes // 2", "    hours = minutes // 60");
    }

    #[test]
    fn a_bound_that_leaves_a_later_test_unreachable_lets_its_value_through() {
        let text = "def turn(remaining, darts):\n    score = remaining\n    for value in darts:\n        score -= value\n        if score <= 1:\n            return remaining\n        if score == 0:\n            return 0\n    return score\n";
        let names = Names::of(text).at(text, 5);
        assert_eq!(names.later_equals, [("score".to_string(), "0".to_string())]);
        let got = of_line("        if score <= 1:", &names);
        for want in [
            "        if score <= 1 and score != 0:",
            "        if score < 0 or score == 1:",
        ] {
            assert!(got.contains(&want.to_string()), "{got:?}");
        }
        // A later value the bound does not take in: nothing.
        let apart = text.replace("if score == 0:", "if score == 5:");
        let names = Names::of(&apart).at(&apart, 5);
        let got = of_line("        if score <= 1:", &names);
        assert!(!got.iter().any(|m| m.contains("!=")), "{got:?}");
    }

    #[test]
    fn a_result_returned_unrounded_is_rounded_where_the_docstring_speaks_of_pence() {
        let text = "def frame_price(size, flowers):\n    \"\"\"The price of one frame, to the penny.\"\"\"\n    price = BASE[size] + flowers * EACH\n    return price\n\n\ndef total(order):\n    return round(sum(order), 1)\n\n\ndef label(size):\n    return f\"{size} frame\"\n";
        let names = Names::of(text).at(text, 4);
        eprintln!(
            "{:?} {:?} {:?}",
            names.rounds_to,
            names.round_digits,
            of_line("    return price", &names)
        );
        // The file's own digits.
        assert!(
            of_line("    return price", &names).contains(&"    return round(price, 1)".to_string())
        );
        // Not a text, a truth value, nor one already rounded.
        for line in [
            "    return f\"{size} frame\"",
            "    return price > 0",
            "    return round(price, 2)",
        ] {
            assert!(
                !of_line(line, &names)
                    .iter()
                    .any(|m| m.contains("round(") && !line.contains("round(")),
                "{line}"
            );
        }
        // A docstring that says nothing of pence: no rounding.
        let plain = text.replace(", to the penny", "");
        let names = Names::of(&plain).at(&plain, 4);
        assert!(
            !of_line("    return price", &names)
                .iter()
                .any(|m| m.contains("round("))
        );
        // Nor for "per cent".
        assert!(!speaks_of_rounding("a 20 per cent discount"));
        assert!(speaks_of_rounding(
            "long tails of decimals instead of pounds and pence"
        ));
        assert_eq!(rounding_digits("x = 1\n"), "2");
    }

    #[test]
    fn one_of_two_keys_a_line_names_stands_for_the_other() {
        let names = Names {
            keys: vec!["adult".into(), "concession".into(), "child".into()],
            ..Names::default()
        };
        let line = "    total += counts.get(\"concession\", 0) * ticket_price(\"child\", member)";
        let got = of_line(line, &names);
        for want in [
            "    total += counts.get(\"concession\", 0) * ticket_price(\"concession\", member)",
            "    total += counts.get(\"child\", 0) * ticket_price(\"child\", member)",
        ] {
            assert!(got.contains(&want.to_string()), "{got:?}");
        }
        // The same key twice: the second meant as another key first.
        let same = of_line(
            "    x = price(\"adult\", adults) + price(\"adult\", kids)",
            &names,
        );
        assert!(
            same.contains(
                &"    x = price(\"adult\", adults) + price(\"concession\", kids)".to_string()
            ),
            "{same:?}"
        );
        // A word that is no key of the file: nothing.
        let other = of_line("    x = a.get(\"child\", 0) * price(\"dog\")", &names);
        assert!(
            !other.iter().any(|m| m.contains("price(\"child\")")),
            "{other:?}"
        );
    }

    #[test]
    fn a_binding_never_read_takes_a_value_s_place_first() {
        let text = "\"\"\"Cards.\"\"\"\n\nGROUP = 4\nVISIBLE = 4\n\n\ndef mask(number, visible=6):\n    \"\"\"Keep the visible digits.\"\"\"\n    return number[-visible:] * GROUP\n\n\ndef order(on_hand, reserved):\n    \"\"\"The available stock.\"\"\"\n    available = on_hand - reserved\n    return 100 - on_hand\n";
        let names = Names::of(text);
        assert_eq!(names.unread, ["VISIBLE"]);
        // On a `def` line only a default is a value; the parameter names are not.
        assert_eq!(
            of_line("def mask(number, visible=6):", &names)[0],
            "def mask(number, visible=VISIBLE):"
        );
        assert_eq!(
            of_line("def mask(number, visible=6):", &names)[1..],
            [
                "def mask(number, visible=7):",
                "def mask(number, visible=5):",
                "def mask(number, visible=GROUP):"
            ]
        );
        // A local assigned and never read is one for the lines after it in its function only (the docstring's
        // word "available" is no read of it).
        let at = names.at(text, 15);
        assert_eq!(at.unread, ["VISIBLE", "available"]);
        assert!(names.at(text, 9).unread == ["VISIBLE"]);
        let m = of_line("    return 100 - on_hand", &at);
        assert!(
            m.contains(&"    return 100 - available".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    return VISIBLE - on_hand".to_string()),
            "{m:?}"
        );
        // Its own assignment is left alone, and a name read anywhere is not unread.
        assert!(
            !of_line("VISIBLE = 4", &names)
                .iter()
                .any(|m| m.contains("VISIBLE = VISIBLE"))
        );
        assert!(
            Names::of("A = 1\n\n\ndef f():\n    return A\n")
                .unread
                .is_empty()
        );
    }

    #[test]
    fn a_floor_division_is_rounded_up_and_text_turned_into_numbers() {
        let m = mutants("    return max(1, total // per_page)");
        assert!(
            m.contains(&"    return max(1, -(-total // per_page))".to_string()),
            "{m:?}"
        );
        // Not where the operands are part of a longer expression (`a * b // c` is `(a * b) // c`).
        let m = mutants("    return a * b // c");
        assert!(!m.iter().any(|l| l.contains("-(-")), "{m:?}");
        assert_eq!(
            mutants("    return tuple(parts)"),
            ["    return tuple(map(int, parts))"]
        );
        let m = mutants("    return tuple(core.split(SEP))");
        assert!(
            m.contains(&"    return tuple(map(int, core.split(SEP)))".to_string()),
            "{m:?}"
        );
        // Two arguments, a keyword, a generator, or a map already: no text to turn into numbers.
        for line in [
            "    m = max(a, b)",
            "    s = sorted(xs, key=f)",
            "    t = sum(x for x in xs)",
            "    t = sum(map(int, xs))",
        ] {
            assert!(
                !mutants(line)
                    .iter()
                    .any(|l| l.contains("map(int, ") && !line.contains("map(")),
                "{line}"
            );
        }
        let m = mutants("    return sorted(values)");
        assert_eq!(
            m,
            [
                "    return sorted(map(int, values))",
                "    return sorted(map(float, values))",
                "    return sorted(values, reverse=True)"
            ]
        );
        // A method of that name is no builtin.
        assert!(mutants("    return self.sum(values)").is_empty());
    }

    #[test]
    fn a_power_of_ten_moves_a_place_a_regex_class_matches_a_run_and_text_is_stripped() {
        let m = mutants("    return percent / 100");
        assert!(
            m.contains(&"    return percent / 1000".to_string()),
            "{m:?}"
        );
        assert!(m.contains(&"    return percent / 10".to_string()), "{m:?}");
        assert!(
            !mutants("    return n * 11")
                .iter()
                .any(|l| l.contains("110"))
        );
        assert_eq!(
            mutants("PATTERN = re.compile(r\"[^a-z0-9]\\s\")"),
            [
                "PATTERN = re.compile(r\"[^a-z0-9]+\\s\")",
                "PATTERN = re.compile(r\"[^a-z0-9]\\s+\")"
            ]
        );
        // A class already repeated, or a string that is no pattern, is left alone.
        assert!(mutants("P = re.compile(r\"[a-z]+\")").is_empty());
        assert!(mutants("    x = f(\"[a]\")").is_empty());
        assert_eq!(
            mutants("    value = raw.lower()"),
            ["    value = raw.strip().lower()", "    value = raw.upper()"]
        );
        // A text stripped and left in its case.
        let normaliser = Names {
            normaliser: true,
            ..Names::default()
        };
        let m = of_line("    return route.strip()", &normaliser);
        assert!(
            m.contains(&"    return route.strip().lower()".to_string()),
            "{m:?}"
        );
        // Not in a function that is no normaliser of a value (`normalize_whitespace`).
        let text = "def normalize_whitespace(t):\n    return t.strip()\n\n\ndef normalise(route):\n    return route.strip()\n";
        assert!(!Names::of(text).at(text, 2).normaliser);
        assert!(Names::of(text).at(text, 6).normaliser);
        assert!(
            !mutants("    return route.strip()")
                .contains(&"    return route.strip().lower()".to_string())
        );
        assert!(
            !mutants("    return route.strip().lower()")
                .contains(&"    return route.strip().lower().lower()".to_string())
        );
        // A name stripped in place, in any function.
        let m = mutants("    activity = activity.strip()");
        assert!(
            m.contains(&"    activity = activity.strip().lower()".to_string()),
            "{m:?}"
        );
        // A part of a split text read where its number was meant.
        let text = "def parse(part):\n    count, kind = part.split(maxsplit=1)\n    return (count, kind.strip())\n";
        let names = Names::of(text).at(text, 3);
        assert_eq!(names.parts, ["count"]);
        let m = of_line("    items.append((count, kind.strip()))", &names);
        let want = "    items.append((int(count), kind.strip()))";
        assert!(m.contains(&want.to_string()), "{m:?}");
        // Returned as it came: converted where it is unpacked instead.
        let returned = of_line("    return (count, kind.strip())", &names);
        assert!(!returned.iter().any(|m| m.contains("int(")));
        let converted = text.replace("(count,", "(int(count),");
        assert!(Names::of(&converted).at(&converted, 3).parts.is_empty());
    }

    #[test]
    fn a_range_s_stop_moves_and_an_order_is_sorted() {
        let m = mutants("    for floor in range(top, bottom, -1):");
        assert!(
            m.contains(&"    for floor in range(top, bottom - 1, -1):".to_string()),
            "{m:?}"
        );
        assert!(!m.iter().any(|l| l.contains("-1 + 1")), "{m:?}");
        assert!(
            mutants("    for i in range(n):").contains(&"    for i in range(n + 1):".to_string())
        );
        // One argument counted from 1 to it; never a range that already has its start.
        let m = mutants("    return [start + step * i for i in range(count)]");
        let from_one = "    return [start + step * i for i in range(1, count + 1)]";
        assert!(m.contains(&from_one.to_string()), "{m:?}");
        assert!(
            !mutants("    for i in range(a, b):")
                .iter()
                .any(|l| l.contains("1, a"))
        );
        let m = mutants("    for name, n in counts.items():");
        assert!(
            m.contains(&"    for name, n in sorted(counts.items()):".to_string()),
            "{m:?}"
        );
        assert!(
            !mutants("    for start, end in normalize(slots):")
                .iter()
                .any(|l| l.contains("sorted"))
        );
        assert!(
            !mutants("    for i in range(n):")
                .iter()
                .any(|l| l.contains("sorted"))
        );
        assert!(
            !mutants("    for x in sorted(xs):")
                .iter()
                .any(|l| l.contains("sorted(sorted"))
        );
        let m = mutants("    times = [t for t in raw if t > 0]");
        assert!(
            m.contains(&"    times = sorted(t for t in raw if t > 0)".to_string()),
            "{m:?}"
        );
        // An index is no comprehension, and `list(...)` is not made `sorted(...)`: a sort passes any test
        // whose expected list happens to be in order, wherever the slip is.
        assert!(
            !mutants("    x = rows[i]")
                .iter()
                .any(|l| l.contains("sorted"))
        );
        assert!(
            !mutants("    return list(reversed(names))")
                .iter()
                .any(|l| l.contains("sorted"))
        );
        assert!(
            mutants("    return math.ceil(x)").contains(&"    return math.floor(x)".to_string())
        );
    }

    #[test]
    fn a_split_point_written_twice_moves_in_both_places_at_once() {
        let line = "    outward, inward = compact[:-2], compact[-2:]";
        let m = of_line(line, &Names::default());
        assert!(
            m.contains(&"    outward, inward = compact[:-3], compact[-3:]".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    outward, inward = compact[:-1], compact[-1:]".to_string()),
            "{m:?}"
        );
        // Not a number outside brackets, nor one written once.
        assert!(
            split_point_moved(
                "    return 2 * a + 2 * b",
                &lex("    return 2 * a + 2 * b").unwrap()
            )
            .is_empty()
        );
        assert!(
            split_point_moved("    return s[:3]", &lex("    return s[:3]").unwrap()).is_empty()
        );
        let pair = "    return s[:3] + s[3:]";
        assert_eq!(
            split_point_moved(pair, &lex(pair).unwrap()),
            ["    return s[:4] + s[4:]", "    return s[:2] + s[2:]"]
        );
    }

    #[test]
    fn a_local_is_swapped_for_the_other_operand_first_and_never_into_a_name_against_itself() {
        let text = "def error(nominal, masses):\n    measured = sum(masses) / len(masses)\n    return (measured - nominal) / measured * 100\n";
        let at = Names::of(text).at(text, 3);
        let line = "    return (measured - nominal) / measured * 100";
        let m = kin_of_line(line, &at);
        assert!(
            m.contains(&"    return (measured - nominal) / nominal * 100".to_string()),
            "{m:?}"
        );
        assert!(
            !m.iter()
                .any(|l| l.contains("(nominal - nominal)") || l.contains("(measured - measured)")),
            "{m:?}"
        );
        assert!(degenerate(line, &lex(line).unwrap(), 2, "nominal"));
        assert!(!degenerate(line, &lex(line).unwrap(), 7, "nominal"));
    }

    #[test]
    fn a_local_reads_another_an_index_takes_the_last_a_percent_is_divided_and_a_default_is_kin() {
        let text = "\"\"\"Grid.\"\"\"\n\nDEFAULT_TIP_PERCENT = 15\n\n\ndef transpose(m):\n    \"\"\"Flip m.\"\"\"\n    rows, cols = len(m), len(m[0])\n    return [[m[i][j] for i in range(rows)] for j in range(rows)]\n\n\ndef split(total, tip_percent=0.15):\n    return total\n\n\ndef tip(total, tip_percent=DEFAULT_TIP_PERCENT):\n    return total * tip_percent / 100\n";
        let names = Names::of(text);
        assert_eq!(
            names.defaults,
            [
                ("tip_percent".to_string(), "0.15".to_string()),
                ("tip_percent".to_string(), "DEFAULT_TIP_PERCENT".to_string())
            ]
        );
        // The locals bound before the line, the latest first; `for` names of a comprehension are none of them.
        let at = names.at(text, 9);
        assert_eq!(at.locals, ["m", "rows", "cols"]);
        let line = "    return [[m[i][j] for i in range(rows)] for j in range(rows)]";
        // Costlier, so tried after every line's cheaper mutants, and none of those again.
        let fixed = "    return [[m[i][j] for i in range(rows)] for j in range(cols)]".to_string();
        assert!(!of_line(line, &at).contains(&fixed));
        let m = kin_of_line(line, &at);
        assert!(m.contains(&fixed), "{m:?}");
        assert!(m.len() <= MAX_LOCAL_SWAPS, "{m:?}");
        assert!(!m.iter().any(|k| of_line(line, &at).contains(k)), "{m:?}");
        // Not a name assigned or called (an object's method is, on another); nothing on a `def` line; and none
        // outside a def.
        let m = kin_of_line("    rows = m.copy()", &at);
        assert!(m.contains(&"    rows = cols.copy()".to_string()), "{m:?}");
        assert!(!m.iter().any(|l| !l.starts_with("    rows = ")), "{m:?}");
        assert!(
            !kin_of_line("def transpose(m):", &at)
                .iter()
                .any(|l| l.contains("rows"))
        );
        assert!(names.at(text, 3).locals.is_empty());
        // The value an assignment writes is swapped before its target's object and key.
        let wash = Names {
            locals: vec![
                "card".into(),
                "kind".into(),
                "price".into(),
                "charged".into(),
            ],
            ..Names::default()
        };
        let m = kin_of_line("    card[\"spent\"] += price", &wash);
        assert_eq!(
            m.first().map(String::as_str),
            Some("    card[\"spent\"] += charged"),
            "{m:?}"
        );
        // A literal default as one of the file's constants.
        let other = Names {
            constants: vec!["SHOWN".into()],
            ..Names::default()
        };
        assert!(
            of_line("def top(scores, n=1):", &other)
                .contains(&"def top(scores, n=SHOWN):".to_string())
        );
        // A default as the same parameter has it elsewhere, or as the constant named after it.
        let m = of_line("def split(total, tip_percent=0.15):", &names);
        assert_eq!(
            m.iter()
                .filter(|l| l.contains("DEFAULT_TIP_PERCENT"))
                .count(),
            1,
            "{m:?}"
        );
    }

    #[test]
    fn a_record_s_key_read_to_look_up_a_table_is_tried_as_the_key_the_table_is_named_for() {
        let line = "    spread = n * SPREAD_PRICES.get(line.get(\"kind\"), 0)";
        let toks = lex(line).expect("lexes");
        assert_eq!(
            keys_named_as_table(line, &toks),
            [
                "    spread = n * SPREAD_PRICES.get(line.get(\"spread\"), 0)",
                "    spread = n * SPREAD_PRICES.get(line.get(\"prices\"), 0)",
            ]
        );
        let line = "    return RATE_BY_SIZE[job[\"kind\"]]";
        let toks = lex(line).expect("lexes");
        assert!(
            keys_named_as_table(line, &toks)
                .contains(&"    return RATE_BY_SIZE[job[\"size\"]]".to_string())
        );
        // A key read off the table itself, or a table that is no constant: nothing.
        for line in ["    p = PRICES[\"kind\"]", "    p = prices[line[\"kind\"]]"] {
            let toks = lex(line).expect("lexes");
            assert!(keys_named_as_table(line, &toks).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_term_of_a_sum_bound_before_is_read_as_the_sum() {
        let text = "def bill(order):\n    food = sets(order) + extras(order)\n    service = sets(order) * RATE\n    return food + service\n";
        let names = Names::of(text).at(text, 3);
        assert_eq!(
            names.sums,
            [(
                "food".to_string(),
                vec!["sets(order)".to_string(), "extras(order)".to_string()]
            )]
        );
        let m = of_line("    service = sets(order) * RATE", &names);
        assert!(
            m.contains(&"    service = food * RATE".to_string()),
            "{m:?}"
        );
        // A call whose name only ends like the term's is not the term.
        assert!(partial_sums("    x = presets(order)", &names.sums).is_empty());
        // A sum of one term, or of parts inside a call, is no sum.
        let one = "def f(a):\n    b = g(a, a + 1)\n    return g(a, a + 1)\n";
        assert!(Names::of(one).at(one, 3).sums.is_empty());
    }

    #[test]
    fn the_code_in_an_f_string_s_fields_is_mutated_as_code() {
        let text =
            "def code(surname, digits):\n    return f\"{surname[:3].upper()}-{digits[:4]:>4}\"\n";
        let names = Names::of(text).at(text, 2);
        let m = of_line(
            "    return f\"{surname[:3].upper()}-{digits[:4]:>4}\"",
            &names,
        );
        assert!(
            m.contains(&"    return f\"{surname[:3].upper()}-{digits[-4:]:>4}\"".to_string()),
            "{m:?}"
        );
        // A doubled brace is no field; a field's code is mutated apart from its format spec.
        let m = of_line("    return f\"{{x}} {n:02d}\"", &names);
        assert!(m.iter().all(|l| l.contains("{{x}}")), "{m:?}");
        assert!(
            m.contains(&"    return f\"{{x}} {digits:02d}\"".to_string()),
            "{m:?}"
        );
        assert_eq!(field_code_end("a != b"), 6);
        assert_eq!(field_code_end("x!r"), 1);
        assert_eq!(field_code_end("d[:4]:>4"), 5);
    }

    #[test]
    fn a_loop_s_name_read_after_it_a_grouping_and_a_strip_s_argument_are_mutated() {
        // A loop's name read after the loop is exchanged for the name that adds it up first.
        let text = "def weighted(record):\n    total = 0.0\n    used = 0.0\n    for category, weight in record:\n        total += weight * 2\n        used += weight\n    return total / weight if used else 0.0\n";
        let names = Names::of(text).at(text, 7);
        assert_eq!(
            names.stale[1],
            (
                "weight".to_string(),
                vec!["used".to_string(), "total".to_string(), "None".to_string()]
            )
        );
        // Each loop name is exchanged for `None` last.
        assert!(
            names
                .stale
                .iter()
                .all(|(_, w)| w.last().is_some_and(|n| n == "None"))
        );
        let m = of_line("    return total / weight if used else 0.0", &names);
        assert_eq!(m[0], "    return total / used if used else 0.0", "{m:?}");
        // Not inside the loop, nor once the name is bound again.
        assert!(Names::of(text).at(text, 5).stale.is_empty());
        let again =
            "def f(xs):\n    n = 0\n    for x in xs:\n        n += x\n    x = n\n    return x\n";
        assert!(Names::of(again).at(again, 6).stale.is_empty());
        // Arithmetic grouped the other way: a power over a product, a mean's sum.
        gives(
            "    return round(p * (1 + rate) ** periods * years, 2)",
            "    return round(p * (1 + rate) ** (periods * years), 2)",
        );
        gives("    mid = low + high / 2", "    mid = (low + high) / 2");
        // Parentheses round a sum that is multiplied, left out.
        gives(
            "    total = quantity * (UNIT_PRICE + setup)",
            "    total = quantity * UNIT_PRICE + setup",
        );
        gives("    return (a - b) / c", "    return a - b / c");
        never_gives("    return f(a - b) / c", "fa - b");
        never_gives("    return x + (a - b)", "x + a - b");
        // Nothing to regroup where the precedence already groups the pair, or an operand is a call.
        never_gives("    return a - b * c", "(b * c)");
        never_gives("    return a ** f(b) * c", "(f(b)");
        // A strip of some characters for a strip of all white space; a character test for its pair.
        gives(
            "    line = line.rstrip(\"\\n\")",
            "    line = line.rstrip()",
        );
        gives(
            "    if any(ch.isupper() for ch in s):",
            "    if any(ch.islower() for ch in s):",
        );
    }

    #[test]
    fn an_order_a_distance_a_unit_of_the_rest_and_a_derived_constant_are_mutated() {
        // An order reversed, a difference made a distance; not one already wrapped, nor one inside a product.
        gives(
            "    return sorted(scores, key=len)",
            "    return sorted(scores, key=len, reverse=True)",
        );
        gives("    items.sort()", "    items.sort(reverse=True)");
        // A bare generator gets brackets of its own; a comprehension in brackets needs none.
        gives(
            "    scores = sorted(score(s, l) for s, l in flights)",
            "    scores = sorted((score(s, l) for s, l in flights), reverse=True)",
        );
        gives(
            "    scores = sorted([score(s) for s in flights])",
            "    scores = sorted([score(s) for s in flights], reverse=True)",
        );
        never_gives(
            "    return sorted(xs, reverse=False)",
            "reverse=True, reverse",
        );
        gives("    if a - b > tol:", "    if abs(a - b) > tol:");
        never_gives("    if abs(a - b) > tol:", "abs(abs");
        never_gives("    return 2 * a - b", "abs(");
        // The next unit down is taken of what the larger one leaves.
        let text = "def split(seconds):\n    hours = seconds // HOUR\n    minutes = seconds // MINUTE\n    return hours, minutes\n";
        let m = of_line(
            "    minutes = seconds // MINUTE",
            &Names::of(text).at(text, 3),
        );
        assert!(
            m.contains(&"    minutes = (seconds % HOUR) // MINUTE".to_string()),
            "{m:?}"
        );
        assert!(
            !of_line("    hours = seconds // HOUR", &Names::of(text).at(text, 2))
                .iter()
                .any(|l| l.contains("(seconds %"))
        );
        // A constant defined by arithmetic of constants is probed where a line reads it.
        let lines = [
            "MS = 1000",
            "MINUTE = 60 * MS",
            "HOUR = 60 * MS",
            "",
            "def f(h):",
            "    return h * HOUR",
        ];
        assert_eq!(
            definitions_read(
                &lines,
                lines[5],
                &["MS".into(), "MINUTE".into(), "HOUR".into()]
            ),
            [3]
        );
        assert!(
            of_line(lines[2], &Names::of(&lines.join("\n")))
                .contains(&"HOUR = 60 * MINUTE".to_string())
        );
    }

    #[test]
    fn a_table_a_key_default_a_running_value_a_sum_for_a_count_and_a_long_line_s_grouping() {
        // A one-line table of literals is probed where a line reads it.
        let lines = [
            "MULTIPLIERS = {\"S\": 1, \"D\": 2, \"T\": 2}",
            "NAMES = {\"S\": single(1)}",
            "",
            "def score(code):",
            "    return MULTIPLIERS[code[0]] * NAMES[code]",
        ];
        let constants = ["MULTIPLIERS".into(), "NAMES".into()];
        assert_eq!(definitions_read(&lines, lines[4], &constants), [1]);
        assert!(
            of_line(lines[0], &Names::default())
                .contains(&"MULTIPLIERS = {\"S\": 1, \"D\": 2, \"T\": 3}".to_string())
        );
        // A parameter's default that is one of the file's keys, exchanged for another key.
        let names = Names {
            keys: vec!["day".into(), "season".into()],
            ..Names::default()
        };
        let m = of_line("def sell(name, kind=\"season\", junior=False):", &names);
        assert!(
            m.contains(&"def sell(name, kind=\"day\", junior=False):".to_string()),
            "{m:?}"
        );
        assert!(
            !of_line("def sell(name, kind=\"other\"):", &names)
                .iter()
                .any(|l| l.contains("\"day\""))
        );
        // One a multi-line dict literal maps, for another key of that dict.
        let names = Names {
            dict_keys: vec![
                ("PROGRAMMES".into(), "eco".into()),
                ("PROGRAMMES".into(), "quick".into()),
            ],
            ..Names::default()
        };
        let m = of_line("def delay(hour, programme=\"quick\"):", &names);
        assert!(
            m.contains(&"def delay(hour, programme=\"eco\"):".to_string()),
            "{m:?}"
        );
        // A list's next item made from its last one.
        let m = of_line(
            "        concs.append(start_conc / factor)",
            &Names::default(),
        );
        assert!(
            m.contains(&"        concs.append(concs[-1] / factor)".to_string()),
            "{m:?}"
        );
        assert!(
            !of_line("        xs.append(x)", &Names::default())
                .iter()
                .any(|l| l.contains("[-1]"))
        );
        // A count of records for the sum of a field.
        let names = Names {
            fields: vec![vec!["hive".into(), "frames".into()]],
            ..Names::default()
        };
        let m = kin_of_line("    frames = len(mine)", &names);
        assert!(
            m.contains(&"    frames = sum(r.frames for r in mine)".to_string()),
            "{m:?}"
        );
        // A grouping of a long line is not cut off by its tokens' mutants.
        let m = of_line("    return fahrenheit - 32 * 5 / 9", &Names::default());
        assert!(
            m.contains(&"    return (fahrenheit - 32) * 5 / 9".to_string()),
            "{m:?}"
        );
    }

    #[test]
    fn a_unit_s_factor_an_unpacked_name_for_an_item_and_a_field_for_a_step() {
        // Minutes to hours where the task speaks of hours: `/ 60` for `/ 100`, even on a long line.
        assert_eq!(units_said("two hours of work, 3 days"), ["60", "24"]);
        let names = Names {
            units: units_said("an hour of work"),
            fields: vec![vec!["pages".into(), "copies".into(), "cover".into()]],
            ..Names::default()
        };
        let line = "    hours = order.minutes_each * order.copies / 100";
        assert!(
            of_line(line, &names)
                .contains(&"    hours = order.minutes_each * order.copies / 60".to_string())
        );
        // A constant named for its units takes a unit's factor (a pound is 16 ounces, not 12).
        assert!(
            of_line("OUNCES_PER_POUND = 12", &Names::default())
                .contains(&"OUNCES_PER_POUND = 16".to_string())
        );
        // Between two systems: the factor for another pair of units (kPa per psi where bar was meant).
        let got = of_line("PSI_PER_BAR = 6.89476", &Names::default());
        assert!(
            got.contains(&"PSI_PER_BAR = 14.5038".to_string()),
            "{got:?}"
        );
        assert_eq!(units_said("CM_PER_INCH"), ["12", "2.54"]);
        let fortnightly = Names {
            units: units_said("general waste goes fortnightly"),
            ..Names::default()
        };
        assert!(
            of_line("INTERVAL_DAYS = 7", &fortnightly).contains(&"INTERVAL_DAYS = 14".to_string())
        );
        // Not a number that is no factor.
        assert!(
            !of_line("    x = 100", &names)
                .iter()
                .any(|l| l.contains("60"))
        );
        // The loop's own name for the item, never read, for the item read out of a collection.
        let names = Names {
            loop_unread: vec!["target".into()],
            ..Names::default()
        };
        let m = of_line("            updated[room] = clamp(updated[room])", &names);
        assert!(
            m.contains(&"            updated[room] = clamp(target)".to_string()),
            "{m:?}"
        );
        assert!(
            !m.iter().any(|l| l.starts_with("            target =")),
            "{m:?}"
        );
        // A count for a sum, and a sum for a count.
        gives("    return len(tries)", "    return sum(tries)");
        // A dict literal's value under a key the task says, for each other value of the line, nearest first.
        let names = Names {
            entries_said: vec!["rented".into()],
            ..Names::default()
        };
        let m = of_line(
            "YEARS = {\"home\": 10, \"rented\": 10, \"shop\": 5, \"pool\": 1}",
            &names,
        );
        let at = |want: &str| m.iter().position(|l| l == want);
        let five = at("YEARS = {\"home\": 10, \"rented\": 5, \"shop\": 5, \"pool\": 1}");
        let one = at("YEARS = {\"home\": 10, \"rented\": 1, \"shop\": 5, \"pool\": 1}");
        assert!(five.is_some() && five < one, "{m:?}");
        // A count stepped by a field the task says.
        let names = Names {
            locals: vec!["boats".into(), "b".into()],
            fields_said: vec!["nights".into()],
            ..Names::default()
        };
        let m = of_line("            nights[cls] += 1", &names);
        assert!(
            m.contains(&"            nights[cls] += b.nights".to_string()),
            "{m:?}"
        );
    }

    #[test]
    fn a_line_moves_across_a_loop_s_edge() {
        // A `return` that ends the loop at its first item goes out of the loop; the line after a loop goes in.
        let text = "def first(xs):\n    found = []\n    for x in xs:\n        if x:\n            found.append(x)\n        return found\n    total = 0\n    return total\n";
        let names = Names::of(text);
        assert!(
            of_line("        return found", &names.at(text, 6))
                .contains(&"    return found".to_string())
        );
        assert!(
            of_line("    total = 0", &names.at(text, 7)).contains(&"        total = 0".to_string())
        );
        // Not a line inside an `if`, nor one that does not end or follow a loop.
        assert!(names.at(text, 5).indents.is_empty());
        assert!(names.at(text, 8).indents.is_empty());
        assert!(names.at(text, 2).indents.is_empty());
    }

    #[test]
    fn a_percent_an_index_a_slice_and_a_format_are_mutated() {
        // A percent read as a fraction is divided by 100, once; one already divided is not, and a `/ 100` may go.
        let names = Names::default();
        let m = of_line("    return annual_percent / MONTHS", &names);
        assert!(
            m.contains(&"    return (annual_percent / 100) / MONTHS".to_string()),
            "{m:?}"
        );
        let m = of_line("    return total * tip_percent / 100", &names);
        assert!(
            !m.iter().any(|l| l.contains("(tip_percent / 100)")),
            "{m:?}"
        );
        assert!(
            m.contains(&"    return total * tip_percent".to_string()),
            "{m:?}"
        );
        // The last item for the first or second, and the first for the last; an `r` method for its kin.
        assert!(
            mutants("    return base.split(\".\")[1]")
                .contains(&"    return base.split(\".\")[-1]".to_string())
        );
        assert!(
            mutants("    return base.split(\".\")[1]")
                .contains(&"    return base.rsplit(\".\")[1]".to_string())
        );
        assert!(mutants("    return items[-1]").contains(&"    return items[0]".to_string()));
        assert!(
            !mutants("    return items[i + 1]")
                .iter()
                .any(|l| l.contains("-1]"))
        );
        // The file's own offset of a name, for the name read bare.
        let text = "BITS = 32\n\n\ndef mask(prefix):\n    return (FULL << prefix) & FULL\n\n\ndef hosts(prefix):\n    return 2 ** (BITS - prefix) - 2\n";
        let names = Names::of(text);
        assert_eq!(
            names.offsets,
            [
                ("BITS".to_string(), "BITS - prefix".to_string()),
                ("prefix".to_string(), "BITS - prefix".to_string())
            ]
        );
        let m = kin_of_line("    return (FULL << prefix) & FULL", &names.at(text, 5));
        assert!(
            m.contains(&"    return (FULL << (BITS - prefix)) & FULL".to_string()),
            "{m:?}"
        );
        assert!(
            !kin_of_line("    return 2 ** (BITS - prefix) - 2", &names.at(text, 9))
                .iter()
                .any(|l| l.contains("(BITS - (BITS"))
        );
    }

    #[test]
    fn an_object_a_sort_key_a_split_a_step_and_a_best_so_far_are_mutated() {
        // A method called on the wrong object: another local for `self`.
        let text = "class Account:\n    def transfer(self, other, amount):\n        self.withdraw(amount)\n        self.deposit(amount)\n";
        let m = kin_of_line("        self.deposit(amount)", &Names::of(text).at(text, 4));
        assert!(
            m.contains(&"        other.deposit(amount)".to_string()),
            "{m:?}"
        );
        // A sort key turned round item by item; a split at the first separator; a range's stop moved by its step.
        let m = mutants("    return sorted(c.items(), key=lambda kv: (kv[1], kv[0]))");
        assert!(
            m.contains(&"    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    return sorted(c.items(), key=lambda kv: (kv[1], -kv[0]))".to_string()),
            "{m:?}"
        );
        let m = mutants("    people.sort(key=lambda p: p.age, reverse=True)");
        assert!(
            m.contains(&"    people.sort(key=lambda p: -p.age, reverse=True)".to_string()),
            "{m:?}"
        );
        let m = mutants("    level, message = line.split(\":\")");
        assert!(
            m.contains(&"    level, message = line.split(\":\", 1)".to_string()),
            "{m:?}"
        );
        let m = mutants("    return list(range(start + step, target, step))");
        assert!(
            m.contains(&"    return list(range(start + step, target + step, step))".to_string()),
            "{m:?}"
        );
        // A best-so-far started at an infinity.
        let text = "def coldest(rs):\n    best_day, best_temp = None, FREEZING\n    for day, temp in rs:\n        if temp < best_temp:\n            best_day, best_temp = day, temp\n";
        let names = Names::of(text);
        let m = of_line("    best_day, best_temp = None, FREEZING", &names);
        assert!(
            m.contains(&"    best_day, best_temp = None, float(\"inf\")".to_string()),
            "{m:?}"
        );
        assert!(
            !of_line("    count = 0", &names)
                .iter()
                .any(|l| l.contains("inf"))
        );
        // A slice from the wrong end.
        let m = mutants("    return scores[:n]");
        assert!(m.contains(&"    return scores[-n:]".to_string()), "{m:?}");
        let m = mutants("    return parts[1:]");
        assert!(m.contains(&"    return parts[:-1]".to_string()), "{m:?}");
        // A list literal is no subscript.
        assert!(!mutants("    x = [:1]").iter().any(|l| l.contains("-1:")));
        // A format's precision or width moved by one; a plain number in text is no format.
        let m = mutants("    return f\"{share:.1f}%\"");
        assert!(
            m.contains(&"    return f\"{share:.2f}%\"".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    return f\"{share:.0f}%\"".to_string()),
            "{m:?}"
        );
        let m = mutants("    return \"%02d:%02d\" % (h, m)");
        assert!(
            m.contains(&"    return \"%03d:%02d\" % (h, m)".to_string()),
            "{m:?}"
        );
        assert!(
            !mutants("    s = \"version 1.2\"")
                .iter()
                .any(|l| l.contains("1.3"))
        );
    }

    #[test]
    fn a_comprehension_gets_its_filter_a_dropped_text_is_kept_and_a_split_is_cut_at_the_first_few()
    {
        let shows = "    return [name for date, name, seats in sorted(shows)]";
        let m = kin_of_line(shows, &Names::default());
        assert!(
            m.contains(
                &"    return [name for date, name, seats in sorted(shows) if seats > 0]"
                    .to_string()
            ),
            "{m:?}"
        );
        assert!(!m.iter().any(|l| l.contains("if name")), "{m:?}");
        let filtered = "    return [name for date, name, seats in shows if date]";
        assert!(
            !kin_of_line(filtered, &Names::default())
                .iter()
                .any(|l| l.contains("if seats"))
        );
        let m = mutants("    return round(sum(hours) / len(hours)) if hours else 0.0");
        let tenth = "    return round(sum(hours) / len(hours), 1) if hours else 0.0";
        assert!(m.contains(&tenth.to_string()), "{m:?}");
        assert!(
            !mutants("    return round(x, 2)")
                .iter()
                .any(|l| l.contains(", 2, "))
        );
        let weather = "from collections import namedtuple\n\nReading = namedtuple(\"Reading\", \"day high low\")\n\n\ndef coldest(rs):\n    return min(r.high for r in rs)\n";
        let names = Names::of(weather);
        assert_eq!(names.fields, [["day", "high", "low"]]);
        let m = of_line("    return min(r.high for r in rs)", &names);
        assert!(
            m.contains(&"    return min(r.low for r in rs)".to_string()),
            "{m:?}"
        );
        let record = "@dataclass\nclass Plan:\n    \"\"\"A plan.\"\"\"\n    start: float\n    deposit: float = 0.0\n\n    def total(self) -> float:\n        return self.start\n";
        assert_eq!(Names::of(record).fields, [["start", "deposit"]]);
        // A plain class: the attributes its `__init__` sets from the parameters of their names.
        let plain = "class Stamp:\n    def __init__(self, year, face, worth=0):\n        self.year = year\n        self.face = face\n        self.seen = False\n        self.worth = worth\n\n    def age(self):\n        return 2026 - self.year\n";
        assert_eq!(Names::of(plain).fields, [["year", "face", "worth"]]);
        let dropped = |line: &str| result_dropped(line, &lex(line).unwrap());
        assert_eq!(dropped("    name.strip()"), ["    name = name.strip()"]);
        assert!(dropped("    name.strip().lower").is_empty());
        assert!(dropped("    names.sort()").is_empty());
        assert!(dropped("    x = name.strip()").is_empty());
        let m = mutants("    parts = line.split()");
        assert!(
            m.contains(&"    parts = line.split(maxsplit=3)".to_string()),
            "{m:?}"
        );
        assert!(!m.iter().any(|l| l.contains("maxsplit=4")), "{m:?}");
    }

    #[test]
    fn each_dict_s_own_keys_are_tried_for_a_key_of_it() {
        // Each dict's own keys: a subscript's, a `.get`'s, a literal's over the lines it spans.
        let text = "CONE = {\"06\": 1000,\n        \"6\": 1220}\n\n\ndef peak(firing, row):\n    firing[\"temp\"] = row.get(\"t\")\n    return firing[\"peak\"] >= CONE[firing[\"cone\"]]\n";
        let names = Names::of(text);
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let want = [
            ("CONE", "06"),
            ("CONE", "6"),
            ("firing", "temp"),
            ("row", "t"),
        ];
        let mut want = pairs(&want);
        want.extend(pairs(&[("firing", "peak"), ("firing", "cone")]));
        assert_eq!(names.dict_keys, want);
        // A key written where the same dict's other key was meant, past the file's first few keys.
        let names = Names {
            keys: ["06", "6", "t", "a", "b", "temp", "peak"]
                .map(String::from)
                .to_vec(),
            ..names
        };
        let m = of_line("    firing[\"temp\"] = t", &names);
        assert!(m.contains(&"    firing[\"peak\"] = t".to_string()), "{m:?}");
    }

    #[test]
    fn digits_and_letters_are_transposed_separators_exchanged_and_a_count_made_an_offset() {
        let m = mutants("GRAMS_PER_POUND = 435.592");
        assert!(
            m.contains(&"GRAMS_PER_POUND = 453.592".to_string()),
            "{m:?}"
        );
        // Not across the point, but where a constant's whole value moves its point (ten times off).
        let local = mutants("    grams = 435.592");
        assert!(!local.iter().any(|l| l.contains("43.5")), "{local:?}");
        assert!(
            m.contains(&"GRAMS_PER_POUND = 43.5592".to_string()),
            "{m:?}"
        );
        // Two digits are no typo worth a run; nor is a pair of like digits.
        assert_eq!(mutants("N = 12"), ["N = 13", "N = 11"]);
        assert!(!mutants("N = 1100").iter().any(|l| l.ends_with("1100")));
        let m = mutants("    (10, \"X\"), (4, \"VI\"),");
        assert!(m.iter().any(|l| l.contains("(4, \"IV\")")), "{m:?}");
        assert_eq!(
            mutants("def read_rows(text, delimiter=\";\"):")[..4],
            [
                "def read_rows(text, delimiter=\",\"):",
                "def read_rows(text, delimiter=\"|\"):",
                "def read_rows(text, delimiter=\":\"):",
                "def read_rows(text, delimiter=\"\\t\"):"
            ]
        );
        let m = mutants("    t = unicodedata.normalize('NFC', text)");
        assert!(
            m.contains(&"    t = unicodedata.normalize('NFKD', text)".to_string()),
            "{m:?}"
        );
        // A longer word, a word in lower case, a word with a space, or a prefixed string is no slip of two letters.
        assert!(mutants("    s = \"hello\"").is_empty());
        assert!(mutants("    s = \"id\"").is_empty());
        assert!(mutants("    s = b\"ab\"").is_empty());
        assert!(mutants("    s = \"a b\"").is_empty());
        let m = mutants("    start = page * size");
        assert!(
            m.contains(&"    start = (page - 1) * size".to_string()),
            "{m:?}"
        );
        assert!(
            !mutants("    n = self.page * size")
                .iter()
                .any(|l| l.contains("- 1"))
        );
        assert!(mutants("    a = week_no * 7").contains(&"    a = (week_no - 1) * 7".to_string()));
        // A total is no ordinal.
        assert!(
            !mutants("    t = total * RATE")
                .iter()
                .any(|l| l.contains("- 1"))
        );
        let m = mutants("        orders[item['on_hand']] = QTY");
        assert!(
            m.contains(&"        orders[item['sku']] = QTY".to_string()),
            "{m:?}"
        );
        assert!(
            mutants("    n = row.get(\"sku\", 0)")
                .contains(&"    n = row.get(\"on_hand\", 0)".to_string())
        );
        // A dict literal's own keys are what it defines; they keep their names.
        assert!(mutants("    return {\"sku\": s}").is_empty());
        let text = "\"\"\"Stock [\"doc\"].\"\"\"\n\n\ndef make(s, n):\n    return {\"sku\": s, 'on_hand': n}\n\n\ndef f(item):\n    return item[\"reserved\"] + item.get(\"sku\")\n";
        assert_eq!(Names::of(text).keys, ["sku", "on_hand", "reserved"]);
        let m = mutants("    hours, minutes = divmod(minutes, 24)");
        assert!(
            m.contains(&"    hours, minutes = divmod(minutes, 60)".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    hours, minutes = divmod(minutes, 1000)".to_string()),
            "{m:?}"
        );
        // A number that is no factor keeps to its neighbours.
        assert_eq!(
            mutants("    n = x + 24"),
            [
                "    n = x - 24",
                "    n = x * 24",
                "    n = x + 25",
                "    n = x + 23"
            ]
        );
        let text = "def ts(ms):\n    s, milli = divmod(ms, 1000)\n    return s * 60 + 7 + 2 // 1\n";
        assert_eq!(Names::of(text).factors, ["1000", "60"]);
        let clock = "def to_clock(total):\n    return f\"{total // 60:02d}:{total % 24}\"\n";
        assert_eq!(Names::of(clock).factors, ["60", "24"]);
        let row = "def line(r):\n    return f\"{r['code']:<8} {r['grade']}\"\n";
        assert_eq!(Names::of(row).keys, ["code", "grade"]);
        let m = mutants("        out.append(wrap(p, width))");
        assert!(
            m.contains(&"        out.extend(wrap(p, width))".to_string()),
            "{m:?}"
        );
    }

    #[test]
    fn a_constant_s_definition_keeps_its_name() {
        let m = mutants("RATE = 6");
        assert_eq!(m, ["RATE = 7", "RATE = 5"]);
    }

    #[test]
    fn comparisons_and_arithmetic_are_swapped_and_a_unary_minus_is_left_alone() {
        assert_eq!(
            mutants("    if n < limit:"),
            [
                "    if not (n < limit):",
                "    if n <= limit:",
                "    if n > limit:"
            ]
        );
        let m = mutants("    return -x + y * 2");
        assert!(m.contains(&"    return -x - y * 2".to_string()), "{m:?}");
        assert!(m.contains(&"    return -x + y / 2".to_string()), "{m:?}");
        assert!(m.contains(&"    return -x + y * 3".to_string()), "{m:?}");
        assert!(!m.iter().any(|l| l.starts_with("    return +x")), "{m:?}");
        // `*args` unpacks; it is not a product.
        assert_eq!(mutants("    f(*args)"), Vec::<String>::new());
    }

    #[test]
    fn strings_are_mutated_only_as_literals_of_their_own_and_comments_never() {
        assert_eq!(
            mutants("    s = f\"{a:02d} < {b}\" + 'x-y'  # a < b"),
            [
                // The format's width, not the `<` in the text.
                "    s = f\"{a:03d} < {b}\" + 'x-y'  # a < b",
                "    s = f\"{a:01d} < {b}\" + 'x-y'  # a < b",
                // The width shared with the field without one.
                "    s = f\"{a:02d} < {b:02d}\" + 'x-y'  # a < b",
                "    s = f\"{a:02d} < {b}\" - 'x-y'  # a < b",
                "    s = f\"{a:02d} < {b}\" * 'x-y'  # a < b"
            ]
        );
        // A string that goes on past the line: the line is left alone.
        assert!(mutants("    \"\"\"Starts a docstring, 1 < 2").is_empty());
    }

    #[test]
    fn constants_names_indexes_ranges_and_not_are_mutated() {
        assert_eq!(
            mutants("    return total * RATE"),
            [
                "    return total / RATE",
                "    return total + RATE",
                "    return total * CAP"
            ]
        );
        let m = mutants("    for i in range(1, n):");
        assert!(
            m.contains(&"    for i in range(1, n + 1):".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"    for i in range(2, n):".to_string()),
            "{m:?}"
        );
        let m = mutants("    return DAYS[month]");
        assert!(
            m.contains(&"    return DAYS[month - 1]".to_string()),
            "{m:?}"
        );
        gives(
            "        if job.get(\"closed\") and days_late(job, today) > 0:",
            "        if not job.get(\"closed\") and days_late(job, today) > 0:",
        );
        gives("    if a or not (b and c):", "    if a or (b and c):");
        gives(
            "    return max(abs(rx[\"right_sph\"]), abs(rx[\"right_sph\"])) >= HIGH",
            "    return max(abs(rx[\"right_sph\"]), abs(rx[\"left_sph\"])) >= HIGH",
        );
        gives(
            "    gap = end_day - end_day",
            "    gap = end_day - start_day",
        );
        gives(
            "    if a or not (b and c):",
            "    if not a or not (b and c):",
        );
        assert_eq!(
            mutants("    if not ok and done:"),
            [
                "    if not (not ok and done):",
                "    if ok and done:",
                "    if not ok and not done:",
                "    if not ok or done:"
            ]
        );
        assert_eq!(
            mutants("    name = name.strip()")[0],
            "    name = name.lstrip()"
        );
    }

    #[test]
    fn neighbouring_arguments_and_tuple_items_are_swapped_and_a_unary_minus_dropped() {
        assert_eq!(
            mutants("    return count, bonus, sides"),
            [
                "    return bonus, count, sides",
                "    return count, sides, bonus"
            ]
        );
        let m = mutants("    return f(a, g(b, c), key=d)");
        assert!(
            m.contains(&"    return f(a, g(c, b), key=d)".to_string()),
            "{m:?}"
        );
        // Keyword arguments are not swapped.
        assert!(!m.iter().any(|l| l.contains("key=d, ")), "{m:?}");
        assert_eq!(
            mutants("    x = sorted(v, key=lambda kv: -kv[1])")[0],
            "    x = sorted(v, key=lambda kv: kv[1])"
        );
    }

    #[test]
    fn mutants_are_capped_per_line_and_the_module_constants_are_read() {
        let line = "    x = a < b < c < d < e < f < g < h";
        assert_eq!(mutants(line).len(), MAX_PER_LINE);
        let text = "\"\"\"Doc.\"\"\"\nRATE = 3\nCAP_2 = 4\nlower = 1\n    INNER = 2\nRATE = 5\n";
        assert_eq!(Names::of(text).constants, ["RATE", "CAP_2"]);
        let text =
            "class T:\n    def f(self):\n        return self.day + self.total() + self.night_c\n";
        assert_eq!(Names::of(text).attributes, ["day", "night_c"]);
        // An attribute is exchanged for the others, a plain name of the same spelling is not.
        assert_eq!(
            mutants("        return self.day"),
            ["        return self.night"]
        );
        assert!(mutants("        return day").is_empty());
    }

    fn file(text: &str) -> BTreeMap<String, Option<PreImage>> {
        let pre = PreImage {
            text: text.into(),
            mode: crate::patch::MODE_REGULAR,
        };
        [("m.py".to_string(), Some(pre))].into()
    }

    /// The probe with a check that passes only when the file is `fixed`: the lines found, and the mutants tried.
    fn probed(text: &str, task: &str, fixed: &str, runs: usize) -> (Vec<Fixed>, usize) {
        let spec = Task {
            task: task.into(),
            ..Task::default()
        };
        let mut tried = 0;
        let mut check = |path: &str, text: &str| {
            assert_eq!(path, "m.py");
            tried += 1;
            Some(text == fixed)
        };
        let found = probe(
            &spec,
            &file(text),
            &Focus::new(),
            &Failing::default(),
            runs,
            &mut check,
        );
        (found, tried)
    }

    #[test]
    fn a_word_set_against_another_is_a_key_to_try() {
        assert_eq!(
            contrasted(
                "Priced on the grade of its vinyl, not its sleeve; weight rather than size. Not me, not it"
            ),
            ["vinyl", "weight"]
        );
    }

    #[test]
    fn a_clock_field_shows_the_rest_the_whole_count_of_its_unit_leaves() {
        let line = "    return f\"{total // 60 % 24:02d}:{mins:02d}\"";
        assert_eq!(
            remainder_fields(line),
            ["    return f\"{total // 60 % 24:02d}:{total % 60:02d}\""]
        );
        // No f-string, or no whole count: nothing.
        assert!(remainder_fields("    return total // 60, mins").is_empty());
        assert!(remainder_fields("    return f\"{hours:02d}:{mins:02d}\"").is_empty());
    }

    #[test]
    fn a_parameter_never_read_is_passed_on_to_a_call_that_takes_it() {
        let text = "def metres(pattern, spare=True):\n    return pattern * (1.1 if spare else 1)\n\n\ndef skeins(pattern, weight, spare=True):\n    m = metres(pattern)\n    return m / weight\n";
        let names = Names::of(text).at(text, 6);
        let got = of_line("    m = metres(pattern)", &names);
        assert!(
            got.contains(&"    m = metres(pattern, spare=spare)".to_string()),
            "{got:?}"
        );
        // Given already: nothing more.
        let got = of_line("    m = metres(pattern, spare)", &names);
        assert!(!got.iter().any(|m| m.contains("spare=spare")), "{got:?}");
    }

    #[test]
    fn a_number_only_the_acceptance_criterion_says_replaces_a_constant() {
        let text = "MAX_MARK = 10\n\n\ndef valid(marks):\n    return all(0 <= m <= MAX_MARK for m in marks)\n";
        let fixed = with_line(text, 1, "MAX_MARK = 20");
        let task = "Any print a judge marks above ten gets a score of zero.";
        let run = |task: &str, criteria: Vec<String>| {
            let spec = Task {
                task: task.into(),
                acceptance_criteria: criteria,
                ..Task::default()
            };
            let mut check = |_: &str, t: &str| Some(t == fixed);
            probe(
                &spec,
                &file(text),
                &Focus::new(),
                &Failing::default(),
                PROBE_ALL,
                &mut check,
            )
        };
        let criteria = || vec!["Marks from 0 to 20 are accepted.".to_string()];
        let found = run(task, criteria());
        assert_eq!(found.first().map(|f| f.line), Some(1), "{found:?}");
        // Without the criterion's number, or where the task does not say the constant's value: not found.
        assert!(run(task, Vec::new()).is_empty());
        assert!(run("A print with a high mark gets zero.", criteria()).is_empty());
    }

    #[test]
    fn the_probe_finds_the_one_of_two_alike_lines_whose_mutant_passes_and_keeps_to_its_runs() {
        let text = "RATE = 2\nCAP = 3\n\n\ndef cost(n, kind):\n    if kind == \"a\":\n        return n * RATE\n    if kind == \"b\":\n        return n * RATE\n    return n\n";
        let fixed = with_line(text, 9, "        return n * CAP");
        let task = "cost(3, \"b\") returns 6 instead of 9: the rate is wrong.";
        let (found, tried) = probed(text, task, &fixed, PROBE_ALL);
        let nine = Fixed {
            path: "m.py".into(),
            line: 9,
            insert: false,
        };
        assert_eq!(found, [nine], "after {tried} mutants");
        // The ranking with the mutation puts line 9 first; without it, the first of the alike lines.
        let failing = Failing {
            fixed: found,
            ..Failing::default()
        };
        let spec = Task {
            task: task.into(),
            ..Task::default()
        };
        let first = |signals| rank(&spec, &file(text), &Focus::new(), &failing, signals, 3)[0].line;
        assert_eq!(first(Signals::ALL), 9);
        assert_ne!(
            first(Signals {
                mutants: false,
                ..Signals::ALL
            }),
            9
        );
        // The runs are a bound: none found within two, and no more than two tried.
        let (found, tried) = probed(text, task, &fixed, 2);
        assert!(found.is_empty());
        assert_eq!(tried, 2);
        // A check that says stop ends the probe at once.
        let spec = Task {
            task: task.into(),
            ..Task::default()
        };
        let mut asked = 0;
        let mut stop = |_: &str, _: &str| {
            asked += 1;
            None
        };
        assert!(
            probe(
                &spec,
                &file(text),
                &Focus::new(),
                &Failing::default(),
                9,
                &mut stop
            )
            .is_empty()
        );
        assert_eq!(asked, 1);
    }

    #[test]
    fn the_probe_inserts_the_line_the_error_tells_first_and_the_ranking_puts_its_place_first() {
        let text = "def digits(raw):\n    d = raw.strip()\n    d = d.replace(\"-\", \"\")\n\n\ndef valid(raw):\n    return len(digits(raw)) == 10\n";
        let fixed = insertions::with_inserted(text, 3, "    return d");
        let spec = Task {
            task: "valid('555-123-4567') crashes with a TypeError.".into(),
            ..Task::default()
        };
        let failing = Failing {
            missing: vec![super::super::Missing::Value],
            ..Failing::default()
        };
        let mut tried = Vec::new();
        let mut check = |_: &str, t: &str| {
            tried.push(t.to_string());
            Some(t == fixed)
        };
        let found = probe(&spec, &file(text), &Focus::new(), &failing, 32, &mut check);
        let place = Fixed {
            path: "m.py".into(),
            line: 3,
            insert: true,
        };
        assert_eq!(found, [place]);
        // Told by the error, it is the first run.
        assert_eq!(tried, std::slice::from_ref(&fixed));
        let failing = Failing {
            fixed: found,
            ..failing
        };
        let top =
            |signals| rank(&spec, &file(text), &Focus::new(), &failing, signals, 3)[0].clone();
        let first = top(Signals::ALL);
        assert_eq!((first.line, first.insert), (3, true));
        let without = top(Signals {
            mutants: false,
            ..Signals::ALL
        });
        assert!(!without.insert, "{without:?}");
        // Without the error's word, the same insertion is tried after the line mutants, within the runs kept for it.
        let mut runs = 0;
        let mut check = |_: &str, t: &str| {
            runs += 1;
            Some(t == fixed)
        };
        let found = probe(
            &spec,
            &file(text),
            &Focus::new(),
            &Failing::default(),
            3,
            &mut check,
        );
        assert_eq!(found.len(), 1, "a run was kept for the insertion");
        assert!(found[0].insert);
        assert!(runs <= 3);
    }

    #[test]
    fn a_passing_line_inserted_before_a_pass_is_the_pass_changed() {
        let text = "def count_vowels(text):\n    count = 0\n    for ch in text:\n        if ch in \"aeiou\":\n            pass\n    return count\n";
        let fixed = insertions::with_inserted(text, 4, "            count += 1");
        let spec = Task {
            task: "count_vowels never counts.".into(),
            ..Task::default()
        };
        let mut check = |_: &str, t: &str| Some(t == fixed);
        let found = probe_all(&spec, text, &mut check);
        let place = Fixed {
            path: "m.py".into(),
            line: 5,
            insert: false,
        };
        assert_eq!(found, [place]);
    }

    #[test]
    fn a_truth_test_rules_out_only_none() {
        let said = Names {
            none_said: true,
            ..Names::default()
        };
        let gives = |line: &str, want: &str| {
            let m = of_line(line, &said);
            assert!(m.iter().any(|l| l == want), "{line}: {m:?}");
        };
        // Only where `None` is spoken of.
        never_gives("    if not self.name:", "None");
        gives(
            "    return {key: value for key, value in params.items() if value}",
            "    return {key: value for key, value in params.items() if value is not None}",
        );
        gives("    if not self.name:", "    if self.name is None:");
        // A falsy answer where `None` was promised, only there.
        gives("    return False", "    return None");
        never_gives("    return False", "None");
        gives(
            "    elif row.value and ok:",
            "    elif row.value is not None and ok:",
        );
        let never = |line: &str| assert!(!of_line(line, &said).iter().any(|m| m.contains("None")));
        never("    if value > 3:");
        never("    if callable(value):");
    }

    #[test]
    fn every_comparison_of_a_kind_is_turned_at_once_where_it_comes_twice() {
        gives(
            "    return a[0] <= b[1] and b[0] <= a[1]",
            "    return a[0] < b[1] and b[0] < a[1]",
        );
        let line = "    return a <= b";
        assert!(all_turned(line, &lex(line).unwrap()).is_empty());
    }

    #[test]
    fn a_second_name_for_a_list_is_a_copy() {
        gives("    order = tracks", "    order = tracks.copy()");
        never_gives("    order = None", "copy");
        never_gives("    order = tracks[:]", "copy");
        never_gives("    cursor = DAY_START", "copy");
    }

    #[test]
    fn a_text_is_folded_to_lower_case_only_where_its_function_says_case_does_not_matter() {
        let text = "COMMON = {\"abc\"}\n\n\ndef is_common(password):\n    \"\"\"True if common, ignoring case.\"\"\"\n    return password in COMMON\n\n\ndef same(a, b):\n    \"\"\"Equal names.\"\"\"\n    return a == b\n";
        let names = Names::of(text);
        let line = "    return password in COMMON";
        assert!(
            of_line(line, &names.at(text, 6))
                .contains(&"    return password.lower() in COMMON".into())
        );
        assert!(
            !of_line("    return a == b", &names.at(text, 11))
                .iter()
                .any(|m| m.contains("lower"))
        );
        let cased = Names {
            cased: true,
            ..Names::default()
        };
        assert!(
            of_line("    return a == b", &cased)
                .contains(&"    return a.lower() == b.lower()".into())
        );
        // A key looked up, by a subscript or by `.get`.
        for (line, want) in [
            (
                "    return INTERVALS.get(plant, DEFAULT)",
                "    return INTERVALS.get(plant.lower(), DEFAULT)",
            ),
            ("    return RATES[kind]", "    return RATES[kind.lower()]"),
        ] {
            let got = of_line(line, &cased);
            assert!(got.contains(&want.to_string()), "{got:?}");
        }
    }

    #[test]
    fn a_number_the_task_reports_as_wrong_becomes_the_one_it_expected() {
        let task = "to_teaspoons(1, \"cup\") returns 16 instead of 48, and fee(1500) gives 40.0 instead of 23.0. It returns [] instead of [1].";
        assert_eq!(
            reported(task),
            [
                ("16".to_string(), "48".to_string()),
                ("40.0".into(), "23.0".into())
            ]
        );
        let names = Names {
            reported: reported(task),
            ..Names::default()
        };
        let line = "TSP_PER_UNIT = {\"tsp\": 1, \"cup\": 16}";
        assert_eq!(
            of_line(line, &names)[0],
            "TSP_PER_UNIT = {\"tsp\": 1, \"cup\": 48}"
        );
        // A number equal in value is the same number.
        assert_eq!(
            of_line("    return 40 * days", &names)[0],
            "    return 23.0 * days"
        );
        // A whole number scaled as the report is: 10 for 30, three times.
        let scaled = Names {
            reported: reported(
                "to_metric(2, \"tbsp\") returns (10, \"ml\") instead of (30, \"ml\").",
            ),
            ..Names::default()
        };
        assert_eq!(scaled.reported, [("10".to_string(), "30".to_string())]);
        let got = of_line("ML_PER_TBSP = 5", &scaled);
        assert!(got.contains(&"ML_PER_TBSP = 15".to_string()), "{got:?}");
        // Not a number that a whole factor does not give.
        let got = of_line(
            "RATE = 7",
            &Names {
                reported: vec![("10".into(), "25".into())],
                ..Names::default()
            },
        );
        assert!(!got.iter().any(|l| l.starts_with("RATE = 1")), "{got:?}");
    }

    #[test]
    fn a_local_bound_by_unpacking_and_never_read_is_tried_on_every_probed_line_first() {
        let text = "def fee(minutes):\n    days, rest = divmod(minutes, 1440)\n    _, spare = 1, 2\n    hours = -(-minutes // 60)\n    return days * 20 + min(20, hours * 3)\n";
        let names = Names::of(text);
        assert_eq!(names.at(text, 4).unread, ["rest", "spare"]);
        let fixed = with_line(text, 4, "    hours = -(-rest // 60)");
        let spec = Task {
            task: "fee(1500) returns 40 instead of 23.".into(),
            ..Task::default()
        };
        // A wrong mutant of the line ranked first passes too (a weak check): the unused local's comes first.
        let wrong = with_line(text, 5, "    return days * 3 + min(20, hours * 3)");
        let mut check = |_: &str, t: &str| Some(t == fixed || t == wrong);
        let found = probe_all(&spec, text, &mut check);
        assert_eq!(found.first().map(|f| f.line), Some(4), "{found:?}");
        // No mutant is run twice.
        let mut seen = Vec::new();
        let mut check = |_: &str, t: &str| {
            seen.push(t.to_string());
            Some(false)
        };
        probe_all(&spec, text, &mut check);
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len());
    }

    /// The probe of `text` as `m.py`, with no error told and 64 runs.
    fn probe_all(spec: &Task, text: &str, check: &mut Check<'_>) -> Vec<Fixed> {
        probe(
            spec,
            &file(text),
            &Focus::new(),
            &Failing::default(),
            64,
            check,
        )
    }

    /// Runs enough for every mutant of the lines probed.
    const PROBE_ALL: usize = MAX_LINES * MAX_PER_LINE;

    #[test]
    fn a_field_without_a_format_spec_gets_the_spec_of_another_field_of_its_literal() {
        assert_eq!(
            specs_shared("f\"{hours}:{mins:02d}\""),
            ["f\"{hours:02d}:{mins:02d}\""]
        );
        assert_eq!(
            specs_shared("\"{} to {:.2f} ({:>6})\""),
            [
                "\"{:.2f} to {:.2f} ({:>6})\"",
                "\"{:>6} to {:.2f} ({:>6})\""
            ]
        );
        // An escaped brace, a conversion or a quoted key is left alone; no spec anywhere, only a clock's second
        // field is padded.
        assert!(specs_shared("f\"{{x}} {a!r} {b:03d}\"").is_empty());
        assert!(specs_shared("f\"{row['a']} {b:03d}\"").is_empty());
        assert_eq!(specs_shared("f\"{a}:{b}\""), ["f\"{a}:{b:02d}\""]);
        assert_eq!(specs_shared("\"{}:{}\""), ["\"{}:{:02d}\""]);
        assert!(specs_shared("\"{} - {}\"").is_empty());
        let m = of_line("    return f\"{hours}:{mins:02d}\"", &Names::default());
        assert!(
            m.contains(&"    return f\"{hours:02d}:{mins:02d}\"".to_string()),
            "{m:?}"
        );
    }

    #[test]
    fn a_window_s_end_an_or_default_a_sort_key_and_a_fixed_key_are_each_written_the_way_meant() {
        let m = of_line(
            "        tables.append(guests[start:size])",
            &Names::default(),
        );
        assert!(
            m.contains(&"        tables.append(guests[start:start + size])".to_string()),
            "{m:?}"
        );
        assert!(slice_end_offset("x = a[i:i]", &lex("x = a[i:i]").unwrap()).is_empty());
        let m = of_line("    cart = cart or {}", &Names::default());
        assert!(
            m.contains(&"    cart = {} if cart is None else cart".to_string()),
            "{m:?}"
        );
        let line = "    x = a or b if c else d";
        assert!(none_default(line, &lex(line).unwrap()).is_empty());
        let names = Names::of(
            "def parse_time(text):\n    return 1\n\n\ndef rank(results, limit=3):\n    return sorted(results, key=lambda r: r[2])\n",
        );
        assert_eq!(names.converters, ["parse_time"]);
        let m = of_line("    return sorted(results, key=lambda r: r[2])", &names);
        assert!(
            m.contains(&"    return sorted(results, key=lambda r: parse_time(r[2]))".to_string()),
            "{m:?}"
        );
        let names = Names {
            locals: vec![
                "vehicle".into(),
                "minutes".into(),
                "cost".into(),
                "more".into(),
            ],
            ..Names::default()
        };
        let m = kin_of_line("    return min(cost, DAILY_CAP[\"car\"])", &names);
        assert!(
            m.contains(&"    return min(cost, DAILY_CAP[vehicle])".to_string()),
            "{m:?}"
        );
        assert!(!m.iter().any(|l| l.contains("DAILY_CAP[more]")), "{m:?}");
        // Two names unpacked the wrong way round; a total set where a loop meant to add to it.
        let m = of_line(
            "    seconds, minutes = divmod(total, 60)",
            &Names::default(),
        );
        assert!(
            m.contains(&"    minutes, seconds = divmod(total, 60)".to_string()),
            "{m:?}"
        );
        let m = of_line("        total = fee_for(m)", &Names::default());
        assert!(
            m.contains(&"        total += fee_for(m)".to_string()),
            "{m:?}"
        );
        // Not at a function's own depth, nor where the value reads the name.
        let line = "    total = fee_for(m)";
        assert!(assigned_for_added(line, &lex(line).unwrap()).is_empty());
        let line = "        total = total * 2";
        assert!(assigned_for_added(line, &lex(line).unwrap()).is_empty());
        // An attribute of `self` in a method, not where the value reads it.
        let line = "        self.booked = party_size";
        assert_eq!(
            assigned_for_added(line, &lex(line).unwrap()),
            ["        self.booked += party_size"]
        );
        let line = "        self.booked = self.booked + party_size";
        assert!(assigned_for_added(line, &lex(line).unwrap()).is_empty());
        let line = "        other.booked = party_size";
        assert!(assigned_for_added(line, &lex(line).unwrap()).is_empty());
    }

    #[test]
    fn a_key_s_number_a_cut_at_a_space_and_a_stored_count_are_each_tried() {
        // A key read with its number turned, either way, where the file names that form otherwise.
        let names = Names {
            defaults: vec![("member".into(), "False".into())],
            locals: vec!["entries".into()],
            ..Names::default()
        };
        let m = of_line("    return s.get(\"members\", False)", &names);
        assert!(
            m.contains(&"    return s.get(\"member\", False)".to_string()),
            "{m:?}"
        );
        let m = of_line("    n = r['entry']", &names);
        assert!(m.contains(&"    n = r['entries']".to_string()), "{m:?}");
        let m = of_line("    n = r['entry']", &Names::default());
        assert!(!m.contains(&"    n = r['entries']".to_string()), "{m:?}");
        assert_eq!(number_turned("class").as_deref(), Some("classes"));
        assert_eq!(number_turned("classes").as_deref(), Some("class"));
        assert_eq!(number_turned("boxes").as_deref(), Some("box"));
        assert_eq!(number_turned("cases").as_deref(), Some("case"));
        assert_eq!(number_turned("day").as_deref(), Some("days"));
        assert_eq!(number_turned("id"), None);
        assert_eq!(number_turned("Name"), None);
        // A text cut at a fixed width, at its first or last space instead.
        let line = "    return postcode.strip().upper()[:3]";
        let m = cut_at_space(line, &lex(line).unwrap());
        assert_eq!(m, ["    return postcode.strip().upper().split()[0]"]);
        let line = "    surname = name[-6:]";
        let m = cut_at_space(line, &lex(line).unwrap());
        assert_eq!(m, ["    surname = name.split()[-1]"]);
        let line = "    return items[i:3] + [1, 2][:1]";
        assert!(cut_at_space(line, &lex(line).unwrap()).is_empty());
        // A count of a collection for an attribute the file sets and never reads.
        let tab = "class Tab:\n    def __init__(self, diners):\n        self.diners = diners\n        self.items = []\n\n    def add(self, x):\n        self.items.append(x)\n\n    def per_head(self):\n        return round(self.total() / len(self.items), 2)\n";
        let names = Names::of(tab);
        assert_eq!(names.unset_reads, ["diners"]);
        let m = of_line(
            "        return round(self.total() / len(self.items), 2)",
            &names,
        );
        assert!(
            m.contains(&"        return round(self.total() / self.diners, 2)".to_string()),
            "{m:?}"
        );
        let read = tab.replace("self.items.append(x)", "self.items.append(x * self.diners)");
        assert!(Names::of(&read).unset_reads.is_empty());
        let elsewhere = format!("{tab}\n\ndef seats(tab):\n    return tab.diners\n");
        assert!(Names::of(&elsewhere).unset_reads.is_empty());
        let line = "    return len(items)";
        assert!(
            counts_for_unread_attributes(line, &lex(line).unwrap(), &names.unset_reads).is_empty()
        );
        // A key read into a name spelled round a keyword: the keyword's word.
        let m = of_line("        cls = sale[\"title\"]", &Names::default());
        assert!(
            m.contains(&"        cls = sale[\"class\"]".to_string()),
            "{m:?}"
        );
        // Arguments passed by the names of other parameters, moved to their own.
        let names =
            Names::of("def fits(room_length, room_width, cut_length, cut_width):\n    return 1\n");
        let line = "        if fits(length, width, room_length, room_width):";
        assert_eq!(
            arguments_by_name(line, &lex(line).unwrap(), &names.signatures),
            ["        if fits(room_length, room_width, length, width):"]
        );
        for line in [
            "def fits(length, width, room_length, room_width):",
            "    fits(room_length, room_width, a, b)",
            "    fits(a, b, c, d)",
            "    x.fits(b, a, room_length, c)",
        ] {
            assert!(
                arguments_by_name(line, &lex(line).unwrap(), &names.signatures).is_empty(),
                "{line}"
            );
        }
    }

    #[test]
    fn an_if_that_steps_what_it_tests_repeats_and_arguments_named_for_their_parameters_stay() {
        // An `if` whose block steps what it tests: a `while`; not where the block changes something else.
        let text = "def next_trim(last):\n    due = last + WEEKS\n    if due.month in WINTER:\n        due += WEEK\n    return due\n";
        let m = of_line("    if due.month in WINTER:", &Names::of(text).at(text, 3));
        assert!(
            m.contains(&"    while due.month in WINTER:".to_string()),
            "{m:?}"
        );
        let other = text.replace("        due += WEEK", "        late += WEEK");
        let m = of_line(
            "    if due.month in WINTER:",
            &Names::of(&other).at(&other, 3),
        );
        assert!(!m.iter().any(|l| l.contains("while")), "{m:?}");
        // Arguments that bear the names of the parameters they are passed to are never swapped; others are.
        let names = Names::of("def can_book(bookings, slot, loaves):\n    return 1\n");
        let line = "    if not can_book(bookings, slot, loaves):";
        assert!(swaps(line, &lex(line).unwrap(), &names.signatures).is_empty());
        let line = "    if not can_book(bookings, n, loaves):";
        assert_eq!(
            swaps(line, &lex(line).unwrap(), &names.signatures),
            [
                "    if not can_book(n, bookings, loaves):",
                "    if not can_book(bookings, loaves, n):"
            ]
        );
    }

    #[test]
    fn a_line_is_replaced_with_its_ending_kept() {
        assert_eq!(with_line("a\r\nb\nc", 1, "x"), "x\r\nb\nc");
        assert_eq!(with_line("a\nb\nc", 3, "x"), "a\nb\nx");
    }
}
