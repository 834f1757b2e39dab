//! Corpus benchmark of the patch engine's fidelity (issue "Patch fidelity", must show 2).
//!
//! Real code nobody on this team wrote: the Rust sources (`src/**/*.rs`, at most 3,000 lines each) of a fixed set of
//! crates vendored in cargo's registry (`$CARGO_HOME/registry/src/*/NAME-VERSION/`), at the versions `Cargo.lock`
//! pins. Small real edits are made to them with a seeded PRNG (rename an identifier on a line, change a literal,
//! append a comment, insert 1-3 lines, delete 1-2 lines, two separate edits in one file); the intended post-image
//! and the TRUE unified diff (diffy, 3 lines of context, `--- a/PATH` `+++ b/PATH`, git's blank context lines) are
//! computed; the diff is then corrupted the ways weak models corrupt it, one corruption at a time, and fed to
//! [`patch::changes_from_answer`] with the file as the only selected pre-image. Each case is classified:
//!
//! - exact: the engine applied it and the post-image equals the intended file byte for byte;
//! - wrong: the engine applied it and the result differs (the outcome that must never happen);
//! - refused: the engine returned an error (ambiguous places among repeated lines are right to refuse).
//!
//! Corruptions that keep the intent recoverable are measured against the issue's target (0 wrong, at least 95%
//! exact); corruptions that destroy the intent (a context line that is not in the file, an answer cut off inside a
//! hunk, an elision comment standing for lines the diff deletes) must all be refused.
//!
//! Run it with:
//!
//! ```text
//! cargo bench --locked --bench corpus
//! ```
//!
//! Ranged mode, in the same run: each answer is also fed as if the file had been selected as line ranges
//! (`PATH:START-END`), one per hunk of the true edit widened by `CORPUS_RANGE_MARGIN` lines (default 10) each side,
//! through [`patch::changes_from_answer_within`]. Before that, the proposal prompt the worker would send (the real
//! `prompt::messages`, the JSON-less udiff format) is checked against the default llama.cpp window (8,192 tokens
//! with the default 2,048-token answer budget), as the worker checks it before sending: the table reports, for the
//! whole file and for the ranges, how many edits that check refuses, and exact / wrong / refused for the ranged
//! engine runs (an edit whose ranged prompt does not fit counts as refused).
//!
//! Environment: `CORPUS_EDITS` (number of base edits, default 2400), `CORPUS_SEED` (default below), and
//! `CORPUS_DUMP=DIR` to write every wrong application, every application of an intent-destroying answer and every
//! refusal that is not an ambiguity into `DIR`, one file per case, for investigation.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use local_llm_delegator::patch::focus::{self, Focus, LineRange};
use local_llm_delegator::patch::reader::AnswerFormat;
use local_llm_delegator::patch::{self, FileChange, MODE_REGULAR, MatchTier, PreImage};

/// The PRNG seed (fixed, so every run makes the same edits and corruptions).
const SEED: u64 = 0x00C0_FFEE_D1FF_2025;
/// Base edits; every applicable corruption is applied to each of them.
const EDITS: usize = 2_400;
/// Files longer than this are skipped.
const MAX_FILE_LINES: usize = 3_000;
/// Files shorter than this are skipped (too small for two separate hunks).
const MIN_FILE_LINES: usize = 30;
/// The crates the corpus is taken from, by exact crate name; versions come from `Cargo.lock`.
const CRATES: &[&str] = &[
    "anyhow",
    "bytes",
    "clap_builder",
    "diffy",
    "globset",
    "hashbrown",
    "indexmap",
    "memchr",
    "regex-automata",
    "rmcp",
    "rustls",
    "serde",
    "serde_json",
    "tempfile",
    "tokio",
    "toml_parser",
    "ureq",
];

// ---------------------------------------------------------------------------------------------------------------
// Deterministic PRNG (splitmix64).

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut r = Rng(seed);
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The corpus.

struct Source {
    krate: usize,
    /// Workspace-relative path given to the engine: `NAME-VERSION/src/...`.
    path: String,
    text: String,
    lines: Vec<String>,
}

struct Crate {
    name: String,
    version: String,
    dir: PathBuf,
    files: Vec<usize>,
    lines: usize,
}

fn cargo_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").expect("neither CARGO_HOME nor HOME is set");
    Path::new(&home).join(".cargo")
}

/// (name, version) of every registry package in `Cargo.lock`.
fn locked_registry_packages(lock: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(key)
                    .and_then(|r| r.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_string())
            })
        };
        let (Some(name), Some(version), Some(source)) =
            (field("name "), field("version "), field("source "))
        else {
            continue;
        };
        if source.starts_with("registry+") {
            out.push((name, version));
        }
    }
    out.sort();
    out
}

fn rust_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn load_corpus() -> (Vec<Crate>, Vec<Source>, usize) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(manifest.join("Cargo.lock")).expect("read Cargo.lock");
    let packages = locked_registry_packages(&lock);
    let registry = cargo_home().join("registry").join("src");
    let mut indexes: Vec<PathBuf> = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("read {}: {e} (build the project first)", registry.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    indexes.sort();

    let mut crates = Vec::new();
    let mut sources = Vec::new();
    let mut skipped = 0;
    for &name in CRATES {
        for (n, version) in packages.iter().filter(|(n, _)| n == name) {
            let Some(dir) = indexes
                .iter()
                .map(|i| i.join(format!("{n}-{version}")))
                .find(|d| d.is_dir())
            else {
                println!(
                    "warning: {n} {version} is locked but not in {}",
                    registry.display()
                );
                continue;
            };
            let mut files = Vec::new();
            rust_files_under(&dir.join("src"), &mut files);
            let mut krate = Crate {
                name: n.clone(),
                version: version.clone(),
                dir: dir.clone(),
                files: Vec::new(),
                lines: 0,
            };
            for f in files {
                let Ok(text) = std::fs::read_to_string(&f) else {
                    skipped += 1;
                    continue;
                };
                let lines: Vec<String> = text.lines().map(str::to_string).collect();
                // Files the generator cannot reason about simply (the engine keeps CRLF, BOM and a missing final
                // newline, but the intended post-image here is built for LF files that end with a newline).
                if lines.len() > MAX_FILE_LINES
                    || lines.len() < MIN_FILE_LINES
                    || text.contains('\r')
                    || text.starts_with('\u{feff}')
                    || !text.ends_with('\n')
                {
                    skipped += 1;
                    continue;
                }
                let rel = f
                    .strip_prefix(&dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                krate.lines += lines.len();
                krate.files.push(sources.len());
                sources.push(Source {
                    krate: crates.len(),
                    path: format!("{n}-{version}/{rel}"),
                    text,
                    lines,
                });
            }
            if !krate.files.is_empty() {
                crates.push(krate);
            }
        }
    }
    (crates, sources, skipped)
}

// ---------------------------------------------------------------------------------------------------------------
// Edits and the true diff.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum EditKind {
    Rename,
    Literal,
    Comment,
    Insert,
    Delete,
    TwoHunks,
}

const EDIT_KINDS: [EditKind; 6] = [
    EditKind::Rename,
    EditKind::Literal,
    EditKind::Comment,
    EditKind::Insert,
    EditKind::Delete,
    EditKind::TwoHunks,
];

impl EditKind {
    fn name(self) -> &'static str {
        match self {
            EditKind::Rename => "rename identifier",
            EditKind::Literal => "change literal",
            EditKind::Comment => "append comment",
            EditKind::Insert => "insert 1-3 lines",
            EditKind::Delete => "delete 1-2 lines",
            EditKind::TwoHunks => "two places (2 hunks)",
        }
    }
}

/// Replace `remove` lines at `at` by `insert`.
#[derive(Clone, Debug)]
struct Splice {
    at: usize,
    remove: usize,
    insert: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ctx,
    Del,
    Add,
}

#[derive(Clone, Debug)]
struct DLine {
    kind: Kind,
    text: String,
}

#[derive(Clone, Debug)]
struct DHunk {
    old_start: usize,
    old_len: usize,
    new_start: usize,
    new_len: usize,
    lines: Vec<DLine>,
}

impl DHunk {
    fn recount(&mut self) {
        self.old_len = self.lines.iter().filter(|l| l.kind != Kind::Add).count();
        self.new_len = self.lines.iter().filter(|l| l.kind != Kind::Del).count();
    }
    fn leading_ctx(&self) -> usize {
        self.lines
            .iter()
            .take_while(|l| l.kind == Kind::Ctx)
            .count()
    }
    fn trailing_ctx(&self) -> usize {
        self.lines
            .iter()
            .rev()
            .take_while(|l| l.kind == Kind::Ctx)
            .count()
    }
}

struct Case {
    id: usize,
    src: usize,
    kind: EditKind,
    post: String,
    hunks: Vec<DHunk>,
    splices: Vec<Splice>,
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];

/// Byte ranges of identifiers (not keywords, at least 2 characters) on a line.
fn identifiers(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &line[s..i];
            let prev_digit = s > 0 && b[s - 1].is_ascii_digit();
            if word.len() >= 2 && !KEYWORDS.contains(&word) && !prev_digit {
                out.push((s, i));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of decimal integer literals and of simple string literal contents on a line.
fn literals(line: &str) -> Vec<(usize, usize, bool)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let prev_ok = s == 0
                || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b'.');
            let next_ok = i == b.len()
                || !(b[i].is_ascii_alphanumeric() || b[i] == b'.')
                || b[i] == b'u'
                || b[i] == b'i';
            if prev_ok && next_ok {
                out.push((s, i, false));
            }
        } else if b[i] == b'"' {
            let s = i + 1;
            let mut j = s;
            while j < b.len() && b[j] != b'"' && b[j] != b'\\' {
                j += 1;
            }
            if j < b.len() && b[j] == b'"' && j > s {
                out.push((s, j, true));
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// One single-place edit of `kind` starting in `lo..hi`, or `None` if none was found.
fn make_splice(
    rng: &mut Rng,
    lines: &[String],
    kind: EditKind,
    lo: usize,
    hi: usize,
) -> Option<Splice> {
    if lo >= hi {
        return None;
    }
    for _ in 0..60 {
        let i = rng.range(lo, hi - 1);
        let line = &lines[i];
        match kind {
            EditKind::Rename => {
                let ids = identifiers(line);
                if ids.is_empty() {
                    continue;
                }
                let (s, e) = *rng.pick(&ids);
                let suffix = *rng.pick(&["_new", "2", "_v2", "_renamed", "_inner", "Ext"]);
                let new = format!("{}{}{suffix}{}", &line[..s], &line[s..e], &line[e..]);
                return Some(Splice {
                    at: i,
                    remove: 1,
                    insert: vec![new],
                });
            }
            EditKind::Literal => {
                let lits = literals(line);
                if lits.is_empty() {
                    continue;
                }
                let (s, e, string) = *rng.pick(&lits);
                let value = if string {
                    let old = &line[s..e];
                    match rng.below(3) {
                        0 => format!("{old} (edited)"),
                        1 => old.to_uppercase(),
                        _ => format!("new {old}"),
                    }
                } else {
                    let n: u64 = line[s..e].parse().unwrap_or(0);
                    n.saturating_add(1 + rng.below(99) as u64).to_string()
                };
                let new = format!("{}{value}{}", &line[..s], &line[e..]);
                if new == *line {
                    continue;
                }
                return Some(Splice {
                    at: i,
                    remove: 1,
                    insert: vec![new],
                });
            }
            EditKind::Comment => {
                if line.trim().is_empty() {
                    continue;
                }
                let n = rng.below(1000);
                let comment = match rng.below(4) {
                    0 => "// checked".to_string(),
                    1 => format!("// see issue #{n}"),
                    2 => "// keep in sync with the caller".to_string(),
                    _ => format!("// note {n}: reviewed"),
                };
                return Some(Splice {
                    at: i,
                    remove: 1,
                    insert: vec![format!("{} {comment}", line.trim_end())],
                });
            }
            EditKind::Insert => {
                // Indent like the next non-blank line (the level the new lines live at).
                let ind = lines[i + 1..]
                    .iter()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| indentation(l))
                    .unwrap_or_else(|| indentation(line))
                    .to_string();
                let k = rng.range(1, 3);
                let mut insert = Vec::new();
                for _ in 0..k {
                    let n = rng.below(10_000);
                    insert.push(match rng.below(6) {
                        0 => format!("{ind}// bench: inserted note {n}"),
                        1 => format!("{ind}let _probe_{n} = {n};"),
                        2 => format!("{ind}debug_assert!({n} > 0, \"probe {n}\");"),
                        3 => format!("{ind}// TODO(bench-{n}): revisit"),
                        4 => String::new(),
                        _ => format!("{ind}let _ = core::hint::black_box({n});"),
                    });
                }
                return Some(Splice {
                    at: i + 1,
                    remove: 0,
                    insert,
                });
            }
            EditKind::Delete => {
                if line.trim().is_empty() {
                    continue;
                }
                let k = rng.range(1, 2).min(lines.len() - i);
                return Some(Splice {
                    at: i,
                    remove: k,
                    insert: Vec::new(),
                });
            }
            EditKind::TwoHunks => unreachable!("two hunks are two single edits"),
        }
    }
    None
}

/// The end (exclusive) of the lines a splice touches, for spacing two edits apart.
fn splice_end(s: &Splice) -> usize {
    s.at + s.remove.max(1)
}

fn to_hunks(patch: &diffy::Patch<'_, str>) -> Vec<DHunk> {
    patch
        .hunks()
        .iter()
        .map(|h| DHunk {
            old_start: h.old_range().start(),
            old_len: h.old_range().len(),
            new_start: h.new_range().start(),
            new_len: h.new_range().len(),
            lines: h
                .lines()
                .iter()
                .map(|l| {
                    let (kind, s) = match l {
                        diffy::Line::Context(s) => (Kind::Ctx, s),
                        diffy::Line::Delete(s) => (Kind::Del, s),
                        diffy::Line::Insert(s) => (Kind::Add, s),
                    };
                    DLine {
                        kind,
                        text: s.strip_suffix('\n').unwrap_or(s).to_string(),
                    }
                })
                .collect(),
        })
        .collect()
}

fn make_case(
    rng: &mut Rng,
    id: usize,
    src_idx: usize,
    src: &Source,
    kind: EditKind,
) -> Option<Case> {
    let lines = &src.lines;
    let n = lines.len();
    let splices = if kind == EditKind::TwoHunks {
        let singles = [
            EditKind::Rename,
            EditKind::Literal,
            EditKind::Comment,
            EditKind::Insert,
            EditKind::Delete,
        ];
        let k1 = *rng.pick(&singles);
        let k2 = *rng.pick(&singles);
        let first = make_splice(rng, lines, k1, 0, n.saturating_sub(14))?;
        let second = make_splice(rng, lines, k2, splice_end(&first) + 10, n - 1)?;
        vec![second, first]
    } else {
        vec![make_splice(rng, lines, kind, 0, n - 1)?]
    };
    build_case(id, src_idx, src, kind, splices)
}

/// The intended post-image and the true diff of `splices` applied to `src`; `None` unless the diff has the number
/// of hunks the edit kind promises.
fn build_case(
    id: usize,
    src_idx: usize,
    src: &Source,
    kind: EditKind,
    splices: Vec<Splice>,
) -> Option<Case> {
    let mut post_lines = src.lines.clone();
    for s in &splices {
        post_lines.splice(s.at..s.at + s.remove, s.insert.iter().cloned());
    }
    let mut post = String::with_capacity(src.text.len() + 128);
    for l in &post_lines {
        post.push_str(l);
        post.push('\n');
    }
    if post == src.text {
        return None;
    }
    let mut opts = diffy::DiffOptions::new();
    opts.set_original_filename(format!("a/{}", src.path));
    opts.set_modified_filename(format!("b/{}", src.path));
    let patch = opts.create_patch(&src.text, &post);
    let hunks = to_hunks(&patch);
    let want = if kind == EditKind::TwoHunks { 2 } else { 1 };
    if hunks.len() != want {
        return None;
    }
    // Self-check: our renderer writes the true diff exactly as diffy (git style) does.
    let diffy_text = diffy::PatchFormatter::new()
        .suppress_blank_empty(false)
        .fmt_patch(&patch)
        .to_string();
    let ours = render(
        &format!("a/{}", src.path),
        &format!("b/{}", src.path),
        &hunks,
        true,
        " ",
    );
    assert_eq!(
        ours, diffy_text,
        "renderer disagrees with diffy on {}",
        src.path
    );
    Some(Case {
        id,
        src: src_idx,
        kind,
        post,
        hunks,
        splices,
    })
}

/// Real Rust sources have no trailing whitespace (rustfmt), so a model cannot strip any. For that one corruption
/// the file gets trailing whitespace on every third non-blank line first (a copy: the corpus is not changed), and
/// the same edit is redone on it.
fn with_trailing_whitespace(case: &Case, src: &Source, rng: &mut Rng) -> Option<(Source, Case)> {
    let phase = case.id % 3;
    let lines: Vec<String> = src
        .lines
        .iter()
        .enumerate()
        .map(|(j, l)| {
            if j % 3 == phase && !l.trim().is_empty() {
                format!("{l}{}", rng.pick(&[" ", "  ", "\t", "    "]))
            } else {
                l.clone()
            }
        })
        .collect();
    let mut text = String::with_capacity(src.text.len() + lines.len());
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    let ws = Source {
        krate: src.krate,
        path: src.path.clone(),
        text,
        lines,
    };
    let c = build_case(case.id, case.src, &ws, case.kind, case.splices.clone())?;
    Some((ws, c))
}

fn range_text(start: usize, len: usize) -> String {
    if len == 1 {
        start.to_string()
    } else {
        format!("{start},{len}")
    }
}

/// A unified diff of one file. `numbers: false` writes `@@ @@`; `ctx_prefix` is what precedes a context line.
fn render(
    old_name: &str,
    new_name: &str,
    hunks: &[DHunk],
    numbers: bool,
    ctx_prefix: &str,
) -> String {
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for h in hunks {
        if numbers {
            let _ = writeln!(
                out,
                "@@ -{} +{} @@",
                range_text(h.old_start, h.old_len),
                range_text(h.new_start, h.new_len)
            );
        } else {
            out.push_str("@@ @@\n");
        }
        for l in &h.lines {
            match l.kind {
                Kind::Ctx => out.push_str(ctx_prefix),
                Kind::Del => out.push('-'),
                Kind::Add => out.push('+'),
            }
            out.push_str(&l.text);
            out.push('\n');
        }
    }
    out
}

fn old_side(h: &DHunk) -> Vec<&str> {
    h.lines
        .iter()
        .filter(|l| l.kind != Kind::Add)
        .map(|l| l.text.as_str())
        .collect()
}

fn new_side(h: &DHunk) -> Vec<&str> {
    h.lines
        .iter()
        .filter(|l| l.kind != Kind::Del)
        .map(|l| l.text.as_str())
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Corruptions.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Corruption {
    None,
    WrongLineNumbers,
    NoLineNumbers,
    WrongCounts,
    NoPrefixes,
    ProseAndFence,
    Think,
    Crlf,
    TrailingWsStripped,
    TrailingWsAdded,
    Indent4To2,
    IndentSpacesToTab,
    UnicodePunct,
    LostLeadingSpace,
    EdgeContextDropped,
    OneLineContext,
    SearchReplace,
    JsonEdits,
    V4a,
    V4aScope,
    V4aLostSpace,
    V4aFenceNoEnd,
    ContextAltered,
    Truncated,
    TruncatedInFence,
    Elision,
    V4aCutOff,
}

const CORRUPTIONS: [Corruption; 27] = [
    Corruption::None,
    Corruption::WrongLineNumbers,
    Corruption::NoLineNumbers,
    Corruption::WrongCounts,
    Corruption::NoPrefixes,
    Corruption::ProseAndFence,
    Corruption::Think,
    Corruption::Crlf,
    Corruption::TrailingWsStripped,
    Corruption::TrailingWsAdded,
    Corruption::Indent4To2,
    Corruption::IndentSpacesToTab,
    Corruption::UnicodePunct,
    Corruption::LostLeadingSpace,
    Corruption::EdgeContextDropped,
    Corruption::OneLineContext,
    Corruption::SearchReplace,
    Corruption::JsonEdits,
    Corruption::V4a,
    Corruption::V4aScope,
    Corruption::V4aLostSpace,
    Corruption::V4aFenceNoEnd,
    Corruption::ContextAltered,
    Corruption::Truncated,
    Corruption::TruncatedInFence,
    Corruption::Elision,
    Corruption::V4aCutOff,
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    Baseline,
    KeepsIntent,
    DestroysIntent,
}

impl Corruption {
    fn name(self) -> &'static str {
        match self {
            Corruption::None => "none (true diff)",
            Corruption::WrongLineNumbers => "wrong line numbers",
            Corruption::NoLineNumbers => "no line numbers (@@ @@)",
            Corruption::WrongCounts => "wrong hunk counts",
            Corruption::NoPrefixes => "no a/ b/ prefixes",
            Corruption::ProseAndFence => "prose + code fence",
            Corruption::Think => "<think> block first",
            Corruption::Crlf => "CRLF answer",
            Corruption::TrailingWsStripped => "ctx trailing ws stripped *",
            Corruption::TrailingWsAdded => "ctx trailing ws added",
            Corruption::Indent4To2 => "indent 4 -> 2",
            Corruption::IndentSpacesToTab => "indent spaces -> tab",
            Corruption::UnicodePunct => "unicode quotes/dashes",
            Corruption::LostLeadingSpace => "ctx lost leading space",
            Corruption::EdgeContextDropped => "edge ctx line dropped",
            Corruption::OneLineContext => "1 line of context",
            Corruption::SearchReplace => "SEARCH/REPLACE blocks",
            Corruption::JsonEdits => "JSON edit list",
            Corruption::V4a => "V4A patch (bare @@)",
            Corruption::V4aScope => "V4A, @@ scope line",
            Corruption::V4aLostSpace => "V4A, ctx lost space",
            Corruption::V4aFenceNoEnd => "V4A, fence, no End",
            Corruption::V4aCutOff => "V4A cut off, no End",
            Corruption::ContextAltered => "ctx line not in file",
            Corruption::Truncated => "cut off in removed lines",
            Corruption::TruncatedInFence => "cut off, unclosed fence",
            Corruption::Elision => "elision replaces code",
        }
    }

    fn group(self) -> Group {
        match self {
            Corruption::None => Group::Baseline,
            Corruption::ContextAltered
            | Corruption::Truncated
            | Corruption::TruncatedInFence
            | Corruption::Elision
            | Corruption::V4aCutOff => Group::DestroysIntent,
            _ => Group::KeepsIntent,
        }
    }

    fn slug(self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

/// Map the text of the context lines (or of context and added lines) of every hunk; `None` if nothing changed in a
/// context line.
fn map_lines(
    hunks: &[DHunk],
    kinds: &[Kind],
    mut f: impl FnMut(&str) -> String,
) -> Option<Vec<DHunk>> {
    let mut hs = hunks.to_vec();
    let mut ctx_changed = false;
    for h in &mut hs {
        for l in &mut h.lines {
            if kinds.contains(&l.kind) {
                let new = f(&l.text);
                if new != l.text && l.kind == Kind::Ctx {
                    ctx_changed = true;
                }
                l.text = new;
            }
        }
    }
    ctx_changed.then_some(hs)
}

/// Rewrite leading spaces by groups of four.
fn regroup_indent(s: &str, group: &str) -> String {
    let spaces = s.len() - s.trim_start_matches(' ').len();
    format!(
        "{}{}{}",
        group.repeat(spaces / 4),
        " ".repeat(spaces % 4),
        &s[spaces..]
    )
}

fn unicode_punct(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut open = true;
    for c in s.chars() {
        match c {
            '"' => {
                out.push(if open { '\u{201c}' } else { '\u{201d}' });
                open = !open;
            }
            '\'' => out.push('\u{2019}'),
            '-' => out.push('\u{2013}'),
            _ => out.push(c),
        }
    }
    out
}

fn search_replace(path: &str, hunks: &[DHunk]) -> String {
    let mut out = String::from("Here are the edits:\n\n");
    for h in hunks {
        let _ = write!(
            out,
            "{path}\n```rust\n<<<<<<< SEARCH\n{}\n=======\n{}\n>>>>>>> REPLACE\n```\n\n",
            old_side(h).join("\n"),
            new_side(h).join("\n")
        );
    }
    out
}

fn json_edits(path: &str, hunks: &[DHunk]) -> String {
    let edits: Vec<serde_json::Value> = hunks
        .iter()
        .map(|h| {
            serde_json::json!({
                "path": path,
                "old": old_side(h).join("\n"),
                "new": new_side(h).join("\n"),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({ "edits": edits })).unwrap()
}

/// The V4A patch (`*** Begin Patch`) of `hunks` for `path`: each hunk under `@@` and its scope line when `scope`
/// gives one, context lines prefixed with `ctx`, closed with `*** End Patch` when `end`.
fn v4a(
    path: &str,
    hunks: &[DHunk],
    scope: impl Fn(&DHunk) -> Option<String>,
    ctx: &str,
    end: bool,
) -> String {
    let mut out = format!("*** Begin Patch\n*** Update File: {path}\n");
    for h in hunks {
        match scope(h) {
            Some(s) => {
                let _ = writeln!(out, "@@ {s}");
            }
            None => out.push_str("@@\n"),
        }
        for l in &h.lines {
            let prefix = match l.kind {
                Kind::Ctx => ctx,
                Kind::Del => "-",
                Kind::Add => "+",
            };
            let _ = writeln!(out, "{prefix}{}", l.text);
        }
    }
    if end {
        out.push_str("*** End Patch\n");
    }
    out
}

/// The line a model would name as a hunk's scope: the nearest non-blank line above the hunk indented less than its
/// first line (the item it is in), if any.
fn scope_of(src: &Source, h: &DHunk) -> Option<String> {
    let first = h.old_start.saturating_sub(1);
    let indent = |l: &str| l.len() - l.trim_start().len();
    let at = src.lines.get(first).map_or(0, |l| indent(l));
    src.lines[..first.min(src.lines.len())]
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty() && indent(l) < at)
        .map(|l| l.trim().to_string())
}

/// The answer a model would give for `case` with corruption `c`, and the format it was asked for; `None` when the
/// corruption does not apply to this edit (it would leave the answer unchanged).
fn corrupt(
    c: Corruption,
    case: &Case,
    src: &Source,
    rng: &mut Rng,
) -> Option<(String, AnswerFormat)> {
    let p = src.path.as_str();
    let a = format!("a/{p}");
    let b = format!("b/{p}");
    let plain = |hs: &[DHunk]| render(&a, &b, hs, true, " ");
    let n = src.lines.len();
    let udiff = |s: String| Some((s, AnswerFormat::Udiff));
    match c {
        Corruption::None => udiff(plain(&case.hunks)),
        Corruption::WrongLineNumbers => {
            let mut hs = case.hunks.clone();
            for h in &mut hs {
                let old = h.old_start;
                while h.old_start == old {
                    h.old_start = rng.range(1, n + 20);
                }
                h.new_start = rng.range(1, n + 20);
            }
            udiff(plain(&hs))
        }
        Corruption::NoLineNumbers => udiff(render(&a, &b, &case.hunks, false, " ")),
        Corruption::WrongCounts => {
            let mut hs = case.hunks.clone();
            for h in &mut hs {
                let (ol, nl) = (h.old_len, h.new_len);
                while h.old_len == ol {
                    h.old_len = rng.range(ol.saturating_sub(3), ol + 5);
                }
                while h.new_len == nl {
                    h.new_len = rng.range(nl.saturating_sub(3), nl + 5);
                }
            }
            udiff(plain(&hs))
        }
        Corruption::NoPrefixes => udiff(render(p, p, &case.hunks, true, " ")),
        Corruption::ProseAndFence => udiff(format!(
            "Sure! Here is the change to `{p}` ({}):\n\n```diff\n{}```\n\nThis keeps the rest of the file as it is. \
             Let me know if you need anything else.\n",
            case.kind.name(),
            plain(&case.hunks)
        )),
        Corruption::Think => {
            let first = old_side(&case.hunks[0]).first().copied().unwrap_or("");
            udiff(format!(
                "<think>\nThe user wants a small change in {p}. The code there starts with:\n\n{first}\n\nSo I need \
                 a unified diff:\n- headers --- a/{p} and +++ b/{p}\n- one @@ hunk per place\n- keep 3 lines of \
                 context\n</think>\n\n{}",
                plain(&case.hunks)
            ))
        }
        Corruption::Crlf => udiff(plain(&case.hunks).replace('\n', "\r\n")),
        Corruption::TrailingWsStripped => {
            map_lines(&case.hunks, &[Kind::Ctx], |s| s.trim_end().to_string())
                .and_then(|hs| udiff(plain(&hs)))
        }
        Corruption::TrailingWsAdded => {
            let hs = map_lines(&case.hunks, &[Kind::Ctx], |s| {
                format!("{s}{}", rng.pick(&[" ", "  ", "\t", "    "]))
            })?;
            udiff(plain(&hs))
        }
        Corruption::Indent4To2 => {
            let hs = map_lines(&case.hunks, &[Kind::Ctx, Kind::Del, Kind::Add], |s| {
                regroup_indent(s, "  ")
            })?;
            udiff(plain(&hs))
        }
        Corruption::IndentSpacesToTab => {
            let hs = map_lines(&case.hunks, &[Kind::Ctx, Kind::Del, Kind::Add], |s| {
                regroup_indent(s, "\t")
            })?;
            udiff(plain(&hs))
        }
        Corruption::UnicodePunct => {
            let hs = map_lines(&case.hunks, &[Kind::Ctx], unicode_punct)?;
            udiff(plain(&hs))
        }
        Corruption::LostLeadingSpace => udiff(render(&a, &b, &case.hunks, true, "")),
        Corruption::EdgeContextDropped => {
            let mut hs = case.hunks.clone();
            let mut changed = false;
            for h in &mut hs {
                let (lead, trail) = (h.leading_ctx(), h.trailing_ctx());
                let front = match (lead > 0, trail > 0) {
                    (true, true) => rng.chance(50),
                    (true, false) => true,
                    (false, true) => false,
                    (false, false) => continue,
                };
                if front {
                    h.lines.remove(0);
                    h.old_start += 1;
                    h.new_start += 1;
                } else {
                    h.lines.pop();
                }
                h.recount();
                changed = true;
            }
            if !changed {
                return None;
            }
            udiff(plain(&hs))
        }
        Corruption::OneLineContext => {
            let mut hs = case.hunks.clone();
            let mut changed = false;
            for h in &mut hs {
                let lead = h.leading_ctx();
                if lead > 1 {
                    h.lines.drain(..lead - 1);
                    h.old_start += lead - 1;
                    h.new_start += lead - 1;
                    changed = true;
                }
                let trail = h.trailing_ctx();
                if trail > 1 {
                    let keep = h.lines.len() - (trail - 1);
                    h.lines.truncate(keep);
                    changed = true;
                }
                h.recount();
            }
            if !changed {
                return None;
            }
            udiff(plain(&hs))
        }
        Corruption::SearchReplace => {
            Some((search_replace(p, &case.hunks), AnswerFormat::SearchReplace))
        }
        Corruption::JsonEdits => Some((json_edits(p, &case.hunks), AnswerFormat::Json)),
        Corruption::V4a => Some((
            v4a(p, &case.hunks, |_| None, " ", true),
            AnswerFormat::ApplyPatch,
        )),
        Corruption::V4aScope => {
            if case.hunks.iter().all(|h| scope_of(src, h).is_none()) {
                return None;
            }
            Some((
                v4a(p, &case.hunks, |h| scope_of(src, h), " ", true),
                AnswerFormat::ApplyPatch,
            ))
        }
        Corruption::V4aLostSpace => Some((
            v4a(p, &case.hunks, |_| None, "", true),
            AnswerFormat::ApplyPatch,
        )),
        Corruption::V4aFenceNoEnd => Some((
            format!(
                "Here is the patch for `{p}`:\n\n```\n{}```\n\nThat is the whole change.\n",
                v4a(p, &case.hunks, |_| None, " ", false)
            ),
            AnswerFormat::ApplyPatch,
        )),
        Corruption::V4aCutOff => {
            // Cut after the first removed line of the last hunk that removes two or more: the rest is lost.
            let full = v4a(p, &case.hunks, |_| None, " ", false);
            let last = case.hunks.last()?;
            if last.lines.iter().filter(|l| l.kind == Kind::Del).count() < 2 {
                return None;
            }
            let lines: Vec<&str> = full.lines().collect();
            let at = lines.iter().rposition(|l| l.starts_with('-'))?;
            let first_del = (0..at)
                .rev()
                .take_while(|&k| lines[k].starts_with('-'))
                .last()?;
            Some((
                lines[..=first_del].join("\n") + "\n",
                AnswerFormat::ApplyPatch,
            ))
        }
        Corruption::ContextAltered => {
            // One non-blank context line becomes a line that exists nowhere in the file.
            let mut hs = case.hunks.clone();
            let mut spots = Vec::new();
            for (hi, h) in hs.iter().enumerate() {
                for (li, l) in h.lines.iter().enumerate() {
                    if l.kind == Kind::Ctx && !l.text.trim().is_empty() {
                        spots.push((hi, li));
                    }
                }
            }
            if spots.is_empty() {
                return None;
            }
            let (hi, li) = *rng.pick(&spots);
            let old = hs[hi].lines[li].text.clone();
            let ids = identifiers(&old);
            let mut new = if ids.is_empty() {
                format!("{} // changed", old.trim_end())
            } else {
                let (s, e) = *rng.pick(&ids);
                format!("{}{}_alt{}", &old[..s], &old[s..e], &old[e..])
            };
            let exists = |t: &str| src.lines.iter().any(|l| l.trim() == t.trim());
            if exists(&new) {
                new = format!("{} /* altered */", old.trim_end());
            }
            if exists(&new) {
                return None;
            }
            hs[hi].lines[li].text = new;
            udiff(plain(&hs))
        }
        Corruption::Truncated | Corruption::TruncatedInFence => {
            // The answer stops inside the removed lines of the last hunk that removes any.
            let hi = case
                .hunks
                .iter()
                .rposition(|h| h.lines.iter().any(|l| l.kind == Kind::Del))?;
            let mut hs = case.hunks[..=hi].to_vec();
            let h = &mut hs[hi];
            let first_del = h.lines.iter().position(|l| l.kind == Kind::Del)?;
            let dels = h.lines.iter().filter(|l| l.kind == Kind::Del).count();
            h.lines
                .truncate(if dels >= 2 { first_del + 1 } else { first_del });
            let mut text = plain(&hs);
            text.pop(); // cut right after the last line written
            if c == Corruption::TruncatedInFence {
                text = format!("Here is the diff for `{p}`:\n\n```diff\n{text}");
            }
            udiff(text)
        }
        Corruption::Elision => {
            // The model puts a placeholder where lines were and the diff deletes those lines: code would be lost.
            let mut hs = case.hunks.clone();
            let h = &mut hs[0];
            let lead = h.leading_ctx();
            let trail = h.trailing_ctx();
            let (range, at_front) = if lead > 0 {
                (0..lead, true)
            } else if trail > 0 {
                (h.lines.len() - trail..h.lines.len(), false)
            } else {
                return None;
            };
            let elided: Vec<String> = h.lines[range.clone()]
                .iter()
                .map(|l| l.text.clone())
                .collect();
            let ind = elided
                .iter()
                .find(|t| !t.trim().is_empty())
                .map(|t| indentation(t).to_string())
                .unwrap_or_default();
            let placeholder = DLine {
                kind: Kind::Add,
                text: format!("{ind}// ... existing code ..."),
            };
            let body: Vec<DLine> = h.lines.drain(range).collect();
            let mut dels: Vec<DLine> = body
                .into_iter()
                .map(|l| DLine {
                    kind: Kind::Del,
                    text: l.text,
                })
                .collect();
            let old_dels: Vec<DLine> = h
                .lines
                .iter()
                .filter(|l| l.kind == Kind::Del)
                .cloned()
                .collect();
            let adds: Vec<DLine> = h
                .lines
                .iter()
                .filter(|l| l.kind == Kind::Add)
                .cloned()
                .collect();
            let ctx: Vec<DLine> = h
                .lines
                .iter()
                .filter(|l| l.kind == Kind::Ctx)
                .cloned()
                .collect();
            let mut lines = Vec::new();
            if at_front {
                lines.append(&mut dels);
                lines.extend(old_dels);
                lines.push(placeholder);
                lines.extend(adds);
                lines.extend(ctx);
            } else {
                lines.extend(ctx);
                lines.extend(old_dels);
                lines.append(&mut dels);
                lines.extend(adds);
                lines.push(placeholder);
            }
            h.lines = lines;
            h.recount();
            udiff(plain(&hs))
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Running and reporting.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Exact,
    Wrong,
    Refused,
}

#[derive(Default)]
struct Stats {
    cases: usize,
    exact: usize,
    wrong: usize,
    refused: usize,
    refused_ambiguous: usize,
    refused_no_match: usize,
    refused_other: usize,
    tie_breaks: usize,
    /// Applied cases by loosest tier used: exact, trailing ws, indentation, unicode, whole file.
    tiers: [usize; 5],
    time: Duration,
    wrong_example: Option<Example>,
    refusal_example: Option<(String, String)>,
    /// Refusal messages, normalised (path and numbers removed), with their counts.
    reasons: BTreeMap<String, usize>,
}

struct Example {
    path: String,
    kind: EditKind,
    answer: String,
    intended: String,
    produced: String,
    id: usize,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.cases += o.cases;
        self.exact += o.exact;
        self.wrong += o.wrong;
        self.refused += o.refused;
        self.refused_ambiguous += o.refused_ambiguous;
        self.refused_no_match += o.refused_no_match;
        self.refused_other += o.refused_other;
        self.tie_breaks += o.tie_breaks;
        for k in 0..5 {
            self.tiers[k] += o.tiers[k];
        }
        self.time += o.time;
    }
}

fn tier_index(t: MatchTier) -> usize {
    match t {
        MatchTier::Exact => 0,
        MatchTier::TrailingWhitespace => 1,
        MatchTier::Indentation => 2,
        MatchTier::UnicodeFolded => 3,
        MatchTier::WholeFile => 4,
    }
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}", 100.0 * n as f64 / d as f64)
    }
}

fn first_lines(s: &str, n: usize) -> String {
    let mut out: Vec<&str> = s.lines().take(n).collect();
    if s.lines().count() > n {
        out.push("[...]");
    }
    out.iter().map(|l| format!("    | {l}\n")).collect()
}

fn short_diff(intended: &str, produced: &str) -> String {
    let mut opts = diffy::DiffOptions::new();
    opts.set_context_len(1);
    opts.set_original_filename("intended");
    opts.set_modified_filename("produced");
    let p = opts.create_patch(intended, produced);
    first_lines(&p.to_string(), 30)
}

fn row(name: &str, s: &Stats) -> String {
    format!(
        "{name:<28} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>6} {:>6} {:>8.1}",
        s.cases,
        pct(s.exact, s.cases),
        s.wrong,
        pct(s.refused, s.cases),
        s.refused_ambiguous,
        s.refused_no_match,
        s.refused_other,
        s.tie_breaks,
        if s.cases == 0 {
            0.0
        } else {
            s.time.as_secs_f64() * 1e6 / s.cases as f64
        }
    )
}

/// A refusal message without its file path, numbers and quoted excerpts, cut to its first clause.
fn reason(msg: &str, path: &str) -> String {
    let m = msg.replace(path, "P");
    let m = m
        .split(['(', ';', ':', '"'])
        .take(2)
        .collect::<Vec<_>>()
        .join(":");
    let mut out: String = m
        .chars()
        .map(|c| if c.is_ascii_digit() { 'N' } else { c })
        .collect();
    if out.len() > 90 {
        let mut cut = 90;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out.trim().to_string()
}

fn classify(
    changes: &local_llm_delegator::Result<Vec<FileChange>>,
    src: &Source,
    case: &Case,
    stats: &mut Stats,
) -> Outcome {
    match changes {
        Ok(ch) => {
            if ch
                .iter()
                .any(|c| c.hunks.iter().any(|h| h.line_number_tie_break))
            {
                stats.tie_breaks += 1;
            }
            let loosest = ch
                .iter()
                .flat_map(|c| c.hunks.iter().map(|h| tier_index(h.tier)))
                .max()
                .unwrap_or(0);
            stats.tiers[loosest] += 1;
            if ch.len() == 1 && ch[0].path == src.path && ch[0].post == case.post.as_bytes() {
                stats.exact += 1;
                Outcome::Exact
            } else {
                stats.wrong += 1;
                Outcome::Wrong
            }
        }
        Err(e) => {
            stats.refused += 1;
            let msg = e.to_string();
            *stats.reasons.entry(reason(&msg, &src.path)).or_default() += 1;
            if msg.contains("ambiguous") {
                stats.refused_ambiguous += 1;
            } else if msg.contains("does not match the file") {
                stats.refused_no_match += 1;
            } else {
                stats.refused_other += 1;
            }
            Outcome::Refused
        }
    }
}

/// Lines added on each side of every hunk's old side to make the ranged mode's ranges.
const RANGE_MARGIN: usize = 10;
/// The default llama.cpp window and answer budget the ranged mode's prompts are checked against.
const DEFAULT_WINDOW: u64 = 8192;
const DEFAULT_ANSWER_BUDGET: u64 = 2048;

/// The ranges a primary would give for `case`: each hunk's old side widened by `margin` lines, merged.
fn ranges_for(case: &Case, lines: usize, margin: usize) -> Vec<LineRange> {
    let ranges = case
        .hunks
        .iter()
        .map(|h| {
            let first = h.old_start.max(1);
            let last = (h.old_start + h.old_len.max(1) - 1).max(first);
            LineRange {
                start: first.saturating_sub(margin).max(1),
                end: (last + margin).min(lines),
            }
        })
        .collect();
    focus::merge(ranges)
}

/// The estimated tokens of the proposal prompt for `pre` (narrowed by `focus`), as the worker counts them.
fn prompt_tokens(pre: &BTreeMap<String, Option<PreImage>>, focus: &Focus) -> u64 {
    let spec = local_llm_delegator::task::Task {
        task: "Make the described change.".into(),
        acceptance_criteria: vec!["the change is made".to_string()],
        ..Default::default()
    };
    local_llm_delegator::prompt::messages(&spec, pre, focus, AnswerFormat::Udiff)
        .iter()
        .map(|m| local_llm_delegator::service::estimate_tokens(&m.content))
        .sum()
}

/// The ranged mode's outcome for one corruption.
#[derive(Default)]
struct RangedStats {
    stats: Stats,
    /// Refused by the context-window check before sending.
    window: usize,
}

fn main() {
    let wall = Instant::now();
    let margin = std::env::var("CORPUS_RANGE_MARGIN")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(RANGE_MARGIN);
    let seed = std::env::var("CORPUS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let edits = std::env::var("CORPUS_EDITS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(EDITS);
    let dump = std::env::var_os("CORPUS_DUMP").map(PathBuf::from);
    if let Some(d) = &dump {
        std::fs::create_dir_all(d).expect("create CORPUS_DUMP");
    }

    let (crates, sources, skipped) = load_corpus();
    assert!(!sources.is_empty(), "no corpus files found");
    println!(
        "corpus: cargo registry sources at the versions Cargo.lock pins (src/**/*.rs, {MIN_FILE_LINES}..={MAX_FILE_LINES} lines, LF, final newline)"
    );
    for c in &crates {
        println!(
            "  {:<16} {:<10} {:>4} files {:>7} lines  {}",
            c.name,
            c.version,
            c.files.len(),
            c.lines,
            c.dir.display()
        );
    }
    let total_lines: usize = crates.iter().map(|c| c.lines).sum();
    println!(
        "  {} crates, {} files, {} lines ({} files skipped: too long, too short, CRLF, BOM or no final newline)",
        crates.len(),
        sources.len(),
        total_lines,
        skipped
    );
    println!(
        "seed {seed:#x}, {edits} edits; each applicable corruption is applied to every edit\n"
    );

    // The edits: a crate uniformly, then one of its files uniformly, then the edit kind by weight.
    let mut rng = Rng::new(seed);
    let weights: [(EditKind, u64); 6] = [
        (EditKind::Rename, 20),
        (EditKind::Literal, 15),
        (EditKind::Comment, 15),
        (EditKind::Insert, 20),
        (EditKind::Delete, 15),
        (EditKind::TwoHunks, 15),
    ];
    let mut cases = Vec::with_capacity(edits);
    let mut attempts = 0;
    while cases.len() < edits {
        attempts += 1;
        assert!(attempts < edits * 50, "cannot generate edits");
        let krate = &crates[rng.below(crates.len())];
        let src_idx = krate.files[rng.below(krate.files.len())];
        let mut roll = rng.next() % 100;
        let mut kind = EditKind::Rename;
        for (k, w) in weights {
            if roll < w {
                kind = k;
                break;
            }
            roll -= w;
        }
        if let Some(c) = make_case(&mut rng, cases.len(), src_idx, &sources[src_idx], kind) {
            cases.push(c);
        }
    }
    let mix: Vec<String> = EDIT_KINDS
        .iter()
        .map(|k| {
            format!(
                "{} {}",
                k.name(),
                cases.iter().filter(|c| c.kind == *k).count()
            )
        })
        .collect();
    println!("edit mix: {}", mix.join(", "));
    let files_used: std::collections::BTreeSet<usize> = cases.iter().map(|c| c.src).collect();
    let crates_used: std::collections::BTreeSet<usize> =
        files_used.iter().map(|&s| sources[s].krate).collect();
    println!(
        "edits touch {} distinct files in {} crates",
        files_used.len(),
        crates_used.len()
    );
    // Every base edit through the canonical patch the primary approves: rendered, parsed and applied back to the
    // pre-image by the transaction's applier, it must give the intended post-image byte for byte.
    let t0 = Instant::now();
    let round_trip_failures = cases
        .iter()
        .filter(|case| {
            let src = &sources[case.src];
            let change = FileChange {
                path: src.path.clone(),
                pre: Some(src.text.as_bytes().to_vec()),
                post: case.post.as_bytes().to_vec(),
                mode: MODE_REGULAR,
                hunks: Vec::new(),
                op: Default::default(),
            };
            let bytes = patch::canonical::render(std::slice::from_ref(&change));
            let back = patch::canonical::parse(&bytes).and_then(|files| {
                patch::canonical::apply_file(&files[0], Some(src.text.as_bytes()))
            });
            back.ok().as_deref() != Some(case.post.as_bytes())
        })
        .count();
    println!(
        "canonical round trip (render, parse, apply back): {} base edits, {} failed (must be 0), {:.0} ms\n",
        cases.len(),
        round_trip_failures,
        t0.elapsed().as_secs_f64() * 1000.0
    );

    let mut stats: Vec<Stats> = CORRUPTIONS.iter().map(|_| Stats::default()).collect();
    let mut ranged: Vec<RangedStats> = CORRUPTIONS.iter().map(|_| RangedStats::default()).collect();
    let (mut whole_over, mut ranged_over) = (0usize, 0usize);
    let mut ranged_wrong_example: Option<(String, String)> = None;
    let mut times: Vec<Duration> = Vec::with_capacity(edits * CORRUPTIONS.len());
    for case in &cases {
        let src = &sources[case.src];
        let mut pre = BTreeMap::new();
        pre.insert(
            src.path.clone(),
            Some(PreImage {
                text: src.text.clone(),
                mode: MODE_REGULAR,
            }),
        );
        let mut case_focus = Focus::new();
        case_focus.insert(src.path.clone(), ranges_for(case, src.lines.len(), margin));
        let fits = |f: &Focus| prompt_tokens(&pre, f) + DEFAULT_ANSWER_BUDGET <= DEFAULT_WINDOW;
        whole_over += usize::from(!fits(&Focus::new()));
        let ranged_fits = fits(&case_focus);
        ranged_over += usize::from(!ranged_fits);
        for (ci, &c) in CORRUPTIONS.iter().enumerate() {
            let mut crng = Rng::new(
                seed ^ (case.id as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) ^ ((ci as u64) << 56),
            );
            let ws_variant = if c == Corruption::TrailingWsStripped {
                let Some((s2, c2)) = with_trailing_whitespace(case, src, &mut crng) else {
                    continue;
                };
                let mut m = BTreeMap::new();
                m.insert(
                    s2.path.clone(),
                    Some(PreImage {
                        text: s2.text.clone(),
                        mode: MODE_REGULAR,
                    }),
                );
                Some((s2, c2, m))
            } else {
                None
            };
            let (src, case, pre) = match &ws_variant {
                Some((s2, c2, m)) => (s2, c2, m),
                None => (src, case, &pre),
            };
            let Some((answer, format)) = corrupt(c, case, src, &mut crng) else {
                continue;
            };
            let st = &mut stats[ci];
            st.cases += 1;
            let t0 = Instant::now();
            let result = patch::changes_from_answer(&answer, format, pre);
            let dt = t0.elapsed();
            st.time += dt;
            times.push(dt);
            let outcome = classify(&result, src, case, st);
            // The same answer for the file selected as ranges around the edit.
            let rs = &mut ranged[ci];
            if ranged_fits {
                let mut f = Focus::new();
                f.insert(src.path.clone(), ranges_for(case, src.lines.len(), margin));
                rs.stats.cases += 1;
                let r = patch::changes_from_answer_within(&answer, format, pre, &f);
                let o = classify(&r, src, case, &mut rs.stats);
                let bad = o == Outcome::Wrong
                    || (c.group() == Group::DestroysIntent && o == Outcome::Exact);
                if bad && ranged_wrong_example.is_none() {
                    ranged_wrong_example = Some((
                        format!(
                            "[{}] edit #{} on {} ranges {}",
                            c.name(),
                            case.id,
                            src.path,
                            focus::describe(&f[&src.path])
                        ),
                        answer.clone(),
                    ));
                }
            } else {
                rs.stats.cases += 1;
                rs.stats.refused += 1;
                rs.window += 1;
            }
            let applied_bad = outcome == Outcome::Wrong
                || (c.group() == Group::DestroysIntent && outcome == Outcome::Exact);
            if applied_bad && st.wrong_example.is_none() {
                let produced = match &result {
                    Ok(ch) => ch
                        .iter()
                        .find(|x| x.path == src.path)
                        .map(|x| String::from_utf8_lossy(&x.post).into_owned())
                        .unwrap_or_default(),
                    Err(_) => String::new(),
                };
                st.wrong_example = Some(Example {
                    path: src.path.clone(),
                    kind: case.kind,
                    answer: answer.clone(),
                    intended: case.post.clone(),
                    produced,
                    id: case.id,
                });
            }
            if let Err(e) = &result {
                let msg = e.to_string();
                if st.refusal_example.is_none()
                    && !msg.contains("ambiguous")
                    && c.group() != Group::DestroysIntent
                {
                    st.refusal_example = Some((src.path.clone(), msg.clone()));
                }
                if let Some(d) = &dump
                    && !msg.contains("ambiguous")
                    && c.group() != Group::DestroysIntent
                {
                    let f = d.join(format!("refused-{}-{:04}.txt", c.slug(), case.id));
                    let body = format!(
                        "path: {}\nedit: {}\nerror: {msg}\n\n=== answer\n{answer}\n=== true diff\n{}",
                        src.path,
                        case.kind.name(),
                        render(
                            &format!("a/{}", src.path),
                            &format!("b/{}", src.path),
                            &case.hunks,
                            true,
                            " "
                        )
                    );
                    std::fs::write(f, body).expect("write dump");
                }
            }
            if applied_bad && let Some(d) = &dump {
                let produced = match &result {
                    Ok(ch) => ch
                        .iter()
                        .find(|x| x.path == src.path)
                        .map(|x| String::from_utf8_lossy(&x.post).into_owned())
                        .unwrap_or_default(),
                    Err(_) => String::new(),
                };
                let f = d.join(format!("applied-{}-{:04}.txt", c.slug(), case.id));
                let body = format!(
                    "path: {}\nedit: {}\n\n=== answer\n{answer}\n=== intended -> produced\n{}",
                    src.path,
                    case.kind.name(),
                    short_diff(&case.post, &produced)
                );
                std::fs::write(f, body).expect("write dump");
            }
        }
    }

    // The table.
    let header = format!(
        "{:<28} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>6} {:>6} {:>8}",
        "corruption",
        "cases",
        "exact%",
        "wrong",
        "refused%",
        "ambig",
        "nomatch",
        "other",
        "tiebrk",
        "us/case"
    );
    let rule = "-".repeat(header.len());
    println!("{header}");
    println!("{rule}");
    let mut keep = Stats::default();
    let mut destroy = Stats::default();
    let mut last_group = Group::Baseline;
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        if c.group() != last_group {
            println!("{rule}");
            last_group = c.group();
        }
        println!("{}", row(c.name(), &stats[ci]));
        match c.group() {
            Group::KeepsIntent => keep.add(&stats[ci]),
            Group::DestroysIntent => destroy.add(&stats[ci]),
            Group::Baseline => {}
        }
    }
    println!("{rule}");
    println!("{}", row("TOTAL intent-keeping", &keep));
    println!("{}", row("TOTAL intent-destroying", &destroy));
    println!("{rule}");
    println!(
        "columns: exact% and refused% of cases; wrong = applied but not the intended file; ambig/nomatch/other = \
         refusals that said the place is ambiguous / the hunk is not in the file / anything else; tiebrk = applied \
         cases where a line number broke a tie; us/case = mean engine time"
    );
    println!(
        "* real Rust sources have no trailing whitespace (rustfmt): for this row only, trailing whitespace is first \
         added to every third non-blank line of a copy of the file, and the same edit is redone on that copy"
    );
    let repeated = cases
        .iter()
        .filter(|case| {
            let lines = &sources[case.src].lines;
            case.hunks.iter().any(|h| {
                let old = old_side(h);
                !old.is_empty()
                    && lines
                        .windows(old.len())
                        .filter(|w| w.iter().zip(&old).all(|(a, b)| a == b))
                        .count()
                        > 1
            })
        })
        .count();
    println!(
        "{repeated} of {} edits have a hunk whose true old side (3 lines of context) occurs more than once in its \
         file: only a line number can place them, so without one the right answer is a refusal",
        cases.len()
    );

    // Loosest tier that located the applied cases.
    println!(
        "\nloosest match tier of applied cases (exact / trailing-ws / indentation / unicode-folded):"
    );
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        let t = &stats[ci].tiers;
        if t.iter().sum::<usize>() > 0 {
            println!(
                "  {:<28} {:>5} / {:>5} / {:>5} / {:>5}",
                c.name(),
                t[0],
                t[1],
                t[2],
                t[3]
            );
        }
    }

    // The verdicts.
    let unambiguous = keep.cases - keep.refused_ambiguous;
    println!(
        "\nintent-keeping: {} cases, {} exact ({}%), {} wrong, {} refused ({} ambiguous); exact among cases not \
         refused as ambiguous: {}%",
        keep.cases,
        keep.exact,
        pct(keep.exact, keep.cases),
        keep.wrong,
        keep.refused,
        keep.refused_ambiguous,
        pct(keep.exact, unambiguous)
    );
    let target = keep.wrong == 0
        && keep.exact as f64 >= 0.95 * keep.cases as f64
        && round_trip_failures == 0;
    println!(
        "target (0 wrong, >= 95% exact on intent-keeping corruptions, every canonical round trip exact): {}",
        if target { "MET" } else { "NOT MET" }
    );
    println!(
        "intent-destroying: {} cases, {} refused ({}%), {} applied (must be 0)",
        destroy.cases,
        destroy.refused,
        pct(destroy.refused, destroy.cases),
        destroy.exact + destroy.wrong
    );

    // The ranged mode.
    println!(
        "\nranged mode: each edit's file selected as PATH:START-END ranges (every hunk's old side +-{margin} lines), \
         prompts checked against the default llama.cpp window ({DEFAULT_WINDOW} tokens, {DEFAULT_ANSWER_BUDGET} \
         of them for the answer)"
    );
    println!(
        "  context-window check before sending: whole file over the window for {whole_over} of {} edits ({}%); \
         ranges over it for {ranged_over} ({}%)",
        cases.len(),
        pct(whole_over, cases.len()),
        pct(ranged_over, cases.len())
    );
    let header = format!(
        "{:<28} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>6}",
        "corruption", "cases", "exact%", "wrong", "refused%", "window", "ambig", "nomatch"
    );
    println!("{header}");
    let rule = "-".repeat(header.len());
    println!("{rule}");
    let mut rkeep = RangedStats::default();
    let mut rdestroy = RangedStats::default();
    let rrow = |name: &str, r: &RangedStats| {
        format!(
            "{:<28} {:>6} {:>7} {:>6} {:>8} {:>6} {:>6} {:>6}",
            name,
            r.stats.cases,
            pct(r.stats.exact, r.stats.cases),
            r.stats.wrong,
            pct(r.stats.refused, r.stats.cases),
            r.window,
            r.stats.refused_ambiguous,
            r.stats.refused_no_match
        )
    };
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        println!("{}", rrow(c.name(), &ranged[ci]));
        let into = match c.group() {
            Group::KeepsIntent => &mut rkeep,
            Group::DestroysIntent => &mut rdestroy,
            Group::Baseline => continue,
        };
        into.stats.add(&ranged[ci].stats);
        into.window += ranged[ci].window;
    }
    println!("{rule}");
    println!("{}", rrow("TOTAL intent-keeping", &rkeep));
    println!("{}", rrow("TOTAL intent-destroying", &rdestroy));
    println!(
        "ranged intent-keeping: {} cases, {} exact ({}%), {} wrong (must be 0), {} refused ({} by the window check, \
         {} ambiguous); intent-destroying: {} applied (must be 0)",
        rkeep.stats.cases,
        rkeep.stats.exact,
        pct(rkeep.stats.exact, rkeep.stats.cases),
        rkeep.stats.wrong,
        rkeep.stats.refused,
        rkeep.window,
        rkeep.stats.refused_ambiguous,
        rdestroy.stats.exact + rdestroy.stats.wrong
    );
    if let Some((what, answer)) = &ranged_wrong_example {
        println!(
            "  first ranged application that must not happen: {what}\n{}",
            first_lines(answer, 40)
        );
    }

    // Timing.
    times.sort();
    let total: Duration = times.iter().sum();
    let q = |f: f64| times[((times.len() - 1) as f64 * f) as usize];
    println!(
        "\ntiming: {} engine calls, {:.3} s in the engine, mean {:.1} us, median {:.1} us, p99 {:.1} us, max {:.1} \
         us; whole run {:.2} s",
        times.len(),
        total.as_secs_f64(),
        total.as_secs_f64() * 1e6 / times.len() as f64,
        q(0.5).as_secs_f64() * 1e6,
        q(0.99).as_secs_f64() * 1e6,
        times.last().unwrap().as_secs_f64() * 1e6,
        wall.elapsed().as_secs_f64()
    );

    // One example per corruption type of an application that must not happen.
    println!(
        "\nexamples of wrong applications (and of applied intent-destroying answers), one per type:"
    );
    let mut any = false;
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        let Some(ex) = &stats[ci].wrong_example else {
            continue;
        };
        any = true;
        println!(
            "\n[{}] edit #{} ({}) on {}\n  answer:\n{}  intended -> produced:\n{}",
            c.name(),
            ex.id,
            ex.kind.name(),
            ex.path,
            first_lines(&ex.answer, 40),
            short_diff(&ex.intended, &ex.produced)
        );
    }
    if !any {
        println!("  none");
    }

    println!("\nfirst refusal (other than an ambiguity) per intent-keeping type:");
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        if let Some((path, msg)) = &stats[ci].refusal_example {
            let mut m = msg.replace('\n', "\\n");
            if m.len() > 300 {
                let mut cut = 300;
                while !m.is_char_boundary(cut) {
                    cut -= 1;
                }
                m.truncate(cut);
                m.push_str("...");
            }
            println!("  [{}] {}: {}", c.name(), path, m);
        }
    }

    println!("\nrefusal reasons per type (message without path and numbers: count):");
    for (ci, &c) in CORRUPTIONS.iter().enumerate() {
        let mut r: Vec<(&String, &usize)> = stats[ci].reasons.iter().collect();
        if r.is_empty() {
            continue;
        }
        r.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        println!("  [{}]", c.name());
        for (m, n) in r.iter().take(4) {
            println!("    {n:>5}  {m}");
        }
    }
}
