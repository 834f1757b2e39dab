//! How the CLI shows a result to a person: pure functions from a result to text with ANSI styles in it.
//!
//! The styles are always written; the CLI prints through `anstream`, which strips them when stdout is not a terminal,
//! when `NO_COLOR` is set or with `--color never`, and keeps them with `--color always`. `--json` output never comes
//! here. Nothing is read or written: the ledger's path is passed in.
//!
//! Every text that came from outside (the model's lines, file names, check commands and output, refusals, the
//! server's model name) goes through [`crate::screen::text`] before a style is added around it: what the terminal
//! acts on is only the styles added here.

use std::fmt::Write;
use std::path::Path;

use anstyle::{AnsiColor, Style};

use crate::checks::CheckResult;
use crate::screen;
use crate::service::{ApplyResult, ProposeResult};

const ADDED: Style = AnsiColor::Green.on_default();
const REMOVED: Style = AnsiColor::Red.on_default();
const HUNK: Style = AnsiColor::Cyan.on_default();
const HEADER: Style = Style::new().bold();
const FAILED: Style = AnsiColor::Red.on_default().bold();
const PASSED: Style = AnsiColor::Green.on_default();
const LABEL: Style = Style::new().dimmed();

/// `text` in `style`.
fn styled(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// One `label    value` line; the value is screened ([`screen::text`]), so it must hold no style.
fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    styled_line(out, label, &screen::text(&value));
}

/// One `label    value` line whose value is made of screened pieces and styles added here.
fn styled_line(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "{} {value}", styled(LABEL, &format!("{label:<9}")));
}

/// A unified diff, screened ([`screen::text`]: the model's control characters shown by code point), with its
/// added, removed, hunk and header lines coloured.
pub fn diff(patch: &str) -> String {
    let patch = screen::text(patch);
    let mut out = String::with_capacity(patch.len() + patch.len() / 4);
    for l in patch.split_inclusive('\n') {
        let (body, nl) = match l.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (l, ""),
        };
        let style = if body.starts_with("diff --git ")
            || body.starts_with("index ")
            || body.starts_with("--- ")
            || body.starts_with("+++ ")
            || body.starts_with("new file mode ")
            || body.starts_with("deleted file mode ")
        {
            Some(HEADER)
        } else if body.starts_with("@@") {
            Some(HUNK)
        } else if body.starts_with('+') {
            Some(ADDED)
        } else if body.starts_with('-') {
            Some(REMOVED)
        } else {
            None
        };
        match style {
            Some(s) => out.push_str(&styled(s, body)),
            None => out.push_str(body),
        }
        out.push_str(nl);
    }
    out
}

fn checks(out: &mut String, checks: &[CheckResult], place: &str) {
    for c in checks {
        let verdict = if c.passed {
            styled(PASSED, "passed")
        } else {
            styled(FAILED, "FAILED")
        };
        styled_line(
            out,
            "check",
            &format!(
                "`{}` {verdict}{place} ({} ms, {})",
                screen::text(&c.command),
                c.duration_ms,
                c.isolation
            ),
        );
    }
}

fn ledger_line(out: &mut String, ledger: Option<&Path>) {
    match ledger {
        Some(p) => line(
            out,
            "ledger",
            format_args!("{} (one line: tokens, time, outcome)", p.display()),
        ),
        None => line(
            out,
            "ledger",
            "not kept (set LOCAL_LLM_LEDGER or HOME to keep one)",
        ),
    }
}

/// A proposal as `propose` prints it: what was asked and spent, where each hunk landed, the checks, the digest and
/// the patch.
pub fn proposal(r: &ProposeResult, ledger: Option<&Path>) -> String {
    let mut out = String::new();
    banner(&mut out, r);
    line(&mut out, "proposal", &r.proposal_id);
    line(
        &mut out,
        "provider",
        format_args!("{} / {}", r.provider, r.model),
    );
    line(
        &mut out,
        "usage",
        format_args!(
            "{} input + {} output = {} tokens",
            r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens
        ),
    );
    line(
        &mut out,
        "time",
        format_args!(
            "{} ms ({} ms waiting for the model)",
            r.elapsed_ms, r.model_ms
        ),
    );
    line(&mut out, "window", &r.context_window);
    for f in &r.files {
        let tiers: Vec<String> = f
            .hunks
            .iter()
            .map(|h| format!("line {} ({:?})", h.old_start, h.tier).to_lowercase())
            .collect();
        styled_line(
            &mut out,
            "file",
            &format!(
                "{} {} {} {}: {}",
                screen::text(&f.path),
                f.status,
                styled(ADDED, &format!("+{}", f.added_lines)),
                styled(REMOVED, &format!("-{}", f.removed_lines)),
                tiers.join(", ")
            ),
        );
    }
    line(
        &mut out,
        "dry run",
        if r.dry_run_ok { "ok" } else { "failed" },
    );
    if let Some(c) = &r.candidates {
        line(
            &mut out,
            "answers",
            format_args!(
                "{} of {} asked, {} read as patches, {} distinct, {} validated, {} passed",
                c.asked, c.wanted, c.parsed, c.distinct, c.validated, c.passed
            ),
        );
        line(
            &mut out,
            "chosen",
            format_args!("answer {} ({} vote(s)): {}", c.chosen, c.votes, c.why),
        );
        if let Some(why) = &c.stopped {
            line(&mut out, "stopped", format_args!("asking stopped: {why}"));
        }
    }
    checks(&mut out, &r.validation, " in a sandbox copy");
    repair_lines(&mut out, r);
    for w in &r.warnings {
        line(&mut out, "warning", w);
    }
    ledger_line(&mut out, ledger);
    line(&mut out, "digest", &r.digest);
    out.push_str("--- patch ---\n");
    out.push_str(&diff(&r.patch));
    out.push_str("--- end of patch ---\n");
    banner(&mut out, r);
    out
}

/// The banner a proposal that fails the project's checks is framed by (before and after the patch, which may be
/// long), so it cannot be taken for a passing one.
fn banner(out: &mut String, r: &ProposeResult) {
    if let Some(notice) = &r.checks_failed {
        let _ = writeln!(out, "{}", styled(FAILED, &format!("!!! {notice}")));
    }
}

fn repair_lines(out: &mut String, r: &ProposeResult) {
    if let Some(why) = &r.repair_reason {
        line(
            out,
            "first",
            "the first answer failed validation; the last lines of what the repair round was shown:",
        );
        let why = screen::text(why);
        let lines: Vec<&str> = why.lines().collect();
        for l in &lines[lines.len().saturating_sub(8)..] {
            let _ = writeln!(out, "          | {l}");
        }
    }
    if r.repaired {
        line(
            out,
            "repaired",
            "the first answer failed validation; this is the answer of the one repair round",
        );
    }
    if let Some(e) = &r.repair_error {
        line(out, "repair", format_args!("tried, no usable edit: {e}"));
    }
}

/// An apply as `apply` prints it: the digest written, the files, the checks and the ledger.
pub fn applied(r: &ApplyResult, ledger: Option<&Path>) -> String {
    let mut out = String::new();
    line(&mut out, "applied", &r.digest);
    for f in &r.files_written {
        line(&mut out, "wrote", f);
    }
    checks(&mut out, &r.validation, "");
    ledger_line(&mut out, ledger);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_coloured_line_by_line_and_keeps_its_bytes_once_stripped() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c\n";
        let coloured = diff(patch);
        assert!(coloured.contains(&format!("{ADDED}+b{ADDED:#}\n")));
        assert!(coloured.contains(&format!("{REMOVED}-a{REMOVED:#}\n")));
        let mut stripped = Vec::new();
        let mut s = anstream::StripStream::new(&mut stripped);
        std::io::Write::write_all(&mut s, coloured.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(stripped).unwrap(), patch);
    }

    #[test]
    fn the_screen_a_diff_is_screened_before_it_is_coloured() {
        let patch = "--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\r\n+b\x1b[1A\x1b[2K\rc\n";
        let coloured = diff(patch);
        // The only escapes left are the colours added here; the CRLF line end stays.
        assert!(coloured.contains(&format!(
            "{ADDED}+b<U+001B>[1A<U+001B>[2K<U+000D>c{ADDED:#}\n"
        )));
        assert!(coloured.contains(" a\r\n"));
        let mut stripped = Vec::new();
        let mut s = anstream::StripStream::new(&mut stripped);
        std::io::Write::write_all(&mut s, coloured.as_bytes()).unwrap();
        assert!(!String::from_utf8(stripped).unwrap().contains('\x1b'));
    }
}
