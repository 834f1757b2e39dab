//! Which lines of the selected files the project's checks ran before any edit, when they failed: written by a
//! Python tracer ([`TRACER`]) that the run of the checks before any edit gets as `sitecustomize`, and read here for
//! the ranking. A one-line fix changes a line the failing test ran (or a `def` line, a statement's later line, a
//! module-level line), and a new line goes beside one: a function body's line the test never reached is an unlikely
//! place, and the lines of the call whose result the failing assertion checked are likely ones. The trace files
//! are hostile bytes (the checks run the repository's code): only lines of the expected form are read, at most
//! [`MAX_TRACE`] bytes of at most [`MAX_TRACES`] files. Pure: the run's shell stages the tracer and reads the files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The tracer: a `sitecustomize.py` that records which lines of the selected files run and writes one file at exit.
pub const TRACER: &str = include_str!("tracer.py");

/// The folder, at the top of the sandbox copy, that holds the tracer and what it writes, for the one run before any
/// edit (removed right after it).
pub const TRACE_FOLDER: &str = ".local-llm-trace";

/// The most bytes read of one trace file.
pub const MAX_TRACE: usize = 1024 * 1024;

/// The most trace files read (one per Python process of the run).
pub const MAX_TRACES: usize = 32;

/// The lines of one selected file (1-based) the checks ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ran {
    /// Lines run in a function's or a class's frame.
    pub body: BTreeSet<usize>,
    /// Lines run in the module's own frame (at import).
    pub module: BTreeSet<usize>,
    /// Lines run in the last call into the selected files before the first failing assertion (without one, in the
    /// last call an exception came out of).
    pub failing: BTreeSet<usize>,
    /// Those of `failing` an earlier call ran too (one whose result passed, as far as the checks went).
    pub failing_before: BTreeSet<usize>,
}

/// What the tracer wrote, by selected file (its path as the workspace names it). Empty when there is no trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Executed {
    /// Each selected file the trace names, by its workspace path.
    pub files: BTreeMap<String, Ran>,
}

/// The variables that turn the tracer on for a run in the folder `root`, the tracer being in `folder` (which it
/// also writes into) and the selected files being `selected` (workspace paths, in the order the trace numbers them):
/// PYTHONPATH is `folder` before `python_path`, the variable as the check would otherwise get it.
pub fn environment(
    root: &Path,
    folder: &Path,
    selected: &[&str],
    python_path: Option<&std::ffi::OsStr>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut path = folder.as_os_str().to_os_string();
    if let Some(rest) = python_path.filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(rest);
    }
    let files: Vec<String> = selected
        .iter()
        .map(|rel| root.join(rel).to_string_lossy().into_owned())
        .collect();
    vec![
        ("PYTHONPATH".into(), path),
        ("LOCAL_LLM_TRACE_OUT".into(), folder.into()),
        ("LOCAL_LLM_TRACE_ROOT".into(), root.into()),
        ("LOCAL_LLM_TRACE_FILES".into(), files.join("\n").into()),
    ]
}

impl Executed {
    /// Read the trace files' `texts` for the `selected` files (in the order [`environment`] was given them). A
    /// process that saw no failing assertion adds its lines but no failing call.
    pub fn read(texts: &[String], selected: &[&str]) -> Executed {
        let mut files: BTreeMap<String, Ran> = BTreeMap::new();
        for text in texts.iter().take(MAX_TRACES) {
            let mut end = MAX_TRACE.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mut lines = text[..end].lines();
            if lines.next() != Some("local-llm-trace 1") {
                continue;
            }
            for line in lines {
                let f: Vec<&str> = line.split(' ').collect();
                let num = |k: usize| f.get(k).and_then(|v| v.parse::<usize>().ok());
                let (Some(file), Some(n)) = (num(1), num(2)) else {
                    continue;
                };
                let Some(path) = selected.get(file) else {
                    continue;
                };
                if n == 0 {
                    continue;
                }
                let ran = files.entry(path.to_string()).or_default();
                match (f[0], f.len()) {
                    ("hit", 5) if num(3).is_some() && f[4] == "body" => ran.body.insert(n),
                    ("hit", 5) if num(3).is_some() && f[4] == "module" => ran.module.insert(n),
                    ("failing", 4) if f[3] == "only" => ran.failing.insert(n),
                    ("failing", 4) if f[3] == "before" => {
                        ran.failing_before.insert(n) | ran.failing.insert(n)
                    }
                    _ => false,
                };
            }
        }
        files.retain(|_, r| !r.body.is_empty() || !r.module.is_empty());
        Executed { files }
    }

    /// Whether there is no trace.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// For each line of the selected file `path` whose text is `text` (0-based), what the trace says of it, or
    /// `None` when the checks ran none of the file's functions (nothing to tell the lines apart by).
    pub(super) fn lines(&self, path: &str, text: &str) -> Option<Vec<Reach>> {
        let ran = self.files.get(path).filter(|r| !r.body.is_empty())?;
        let lines: Vec<&str> = text.lines().collect();
        let mut out = vec![Reach::Neutral; lines.len()];
        let mut open = 0i32; // brackets a statement leaves open: its later lines run as its first
        let mut statement = 0usize; // the first line of the statement the line belongs to
        let mut in_body = false;
        let mut def_indent = 0usize;
        let mut string: Option<&str> = None; // the quotes of a string spanning lines
        for (k, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let indent = line.len() - t.len();
            if let Some(q) = string {
                if t.contains(q) {
                    string = None;
                }
                continue;
            }
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if open == 0 {
                statement = k;
                if in_body && indent <= def_indent {
                    in_body = false;
                }
            }
            let code = super::without_strings(line);
            let toks = super::tokens(&code);
            let starts_def = open == 0 && super::definition(&toks).is_some();
            let first = statement + 1;
            out[k] = if ran.failing_before.contains(&first) {
                Reach::FailingAndBefore
            } else if ran.failing.contains(&first) {
                Reach::Failing
            } else if ran.body.contains(&first) || ran.module.contains(&first) {
                Reach::Ran
            } else if in_body && open == 0 && k == statement && produces_a_line_event(t) {
                Reach::NotRun
            } else if k != statement
                && out[statement] == Reach::NotRun
                && !ran.body.contains(&(k + 1))
            {
                // A later line of a statement never reached did not run either.
                Reach::NotRun
            } else {
                Reach::Neutral
            };
            for q in ["\"\"\"", "'''"] {
                if t.matches(q).count() % 2 == 1 {
                    string = Some(q);
                }
            }
            open = (open
                + toks
                    .iter()
                    .map(|t| match t.as_str() {
                        "(" | "[" | "{" => 1,
                        ")" | "]" | "}" => -1,
                        _ => 0,
                    })
                    .sum::<i32>())
            .max(0);
            if starts_def && !in_body {
                in_body = true;
                def_indent = indent;
            }
        }
        Some(out)
    }
}

/// What the trace says of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// It ran in the call whose result the failing assertion checked, and in no earlier call.
    Failing,
    /// It ran in the call whose result the failing assertion checked, and in an earlier one too.
    FailingAndBefore,
    /// It ran.
    Ran,
    /// A statement in a function's body that runs as a line of its own, and the checks never ran it, or a later
    /// line of such a statement.
    NotRun,
    /// Nothing to say: a line outside any function, a later line of a statement that ran, a docstring, `else:`.
    Neutral,
}

/// Whether a statement starting with `t` is reported by the tracer when it runs: `else:`, `try:` and `finally:`
/// are not, nor is a docstring.
fn produces_a_line_event(t: &str) -> bool {
    let word = t
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("");
    !matches!(word, "else" | "try" | "finally") && !t.starts_with(['"', '\''])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\"\"\"Power.\n\nMore.\n\"\"\"\n\nWATTS = 0.3\n\n\ndef watts(n):\n    \"\"\"Watts.\"\"\"\n    return n * WATTS\n\n\ndef amps(n):\n    w = watts(\n        n)\n    if w > 100:\n        raise ValueError(w)\n    else:\n        return w * 5\n";

    fn trace() -> String {
        [
            "local-llm-trace 1",
            "entries 2",
            "failed 2",
            "hit 0 1 1 module",
            "hit 0 6 1 module",
            "hit 0 9 1 module",
            "hit 0 14 1 module",
            "hit 0 11 1 body",
            "hit 0 15 1 body",
            "hit 0 17 1 body",
            "hit 0 20 1 body",
            "failing 0 15 only",
            "failing 0 17 before",
            "failing 0 20 only",
            "failing 0 11",
            "hit 9 3 1 body",
            "hit 0 x 1 body",
            "junk",
        ]
        .join("\n")
    }

    #[test]
    fn the_lines_the_failing_call_ran_those_it_never_reached_and_those_it_cannot_tell() {
        let e = Executed::read(&[trace()], &["power.py"]);
        let ran = &e.files["power.py"];
        assert_eq!(
            ran.body.iter().copied().collect::<Vec<_>>(),
            [11, 15, 17, 20]
        );
        let lines = e.lines("power.py", SOURCE).unwrap();
        let at = |n: usize| lines[n - 1];
        assert_eq!(
            at(11),
            Reach::Ran,
            "watts ran, outside the failing call (a line of another form is no place)"
        );
        assert_eq!(at(15), Reach::Failing);
        assert_eq!(
            at(16),
            Reach::Failing,
            "a statement's later line runs with it"
        );
        assert_eq!(
            at(17),
            Reach::FailingAndBefore,
            "an earlier call ran it too"
        );
        assert_eq!(at(18), Reach::NotRun, "the raise never ran");
        assert_eq!(at(19), Reach::Neutral, "`else:` is never reported");
        assert_eq!(at(20), Reach::Failing);
        assert_eq!(at(10), Reach::Neutral, "a docstring is never reported");
        assert_eq!(at(9), Reach::Ran, "a def line runs at import");
        assert_eq!(at(6), Reach::Ran);
    }

    #[test]
    fn every_line_of_a_statement_never_reached_is_not_run() {
        let source = "def f(n):\n    if n:\n        return g(\n            n)\n    return 0\n";
        let trace = "local-llm-trace 1\nhit 0 1 1 module\nhit 0 2 1 body\nhit 0 5 1 body\n";
        let e = Executed::read(&[trace.to_string()], &["f.py"]);
        let lines = e.lines("f.py", source).unwrap();
        assert_eq!(lines[2], Reach::NotRun);
        assert_eq!(
            lines[3],
            Reach::NotRun,
            "the call's later line never ran either"
        );
        assert_eq!(lines[4], Reach::Ran);
    }

    #[test]
    fn no_trace_or_one_of_another_form_says_nothing() {
        assert!(Executed::read(&[], &["a.py"]).is_empty());
        let other = trace().replace("local-llm-trace 1", "local-llm-trace 2");
        assert!(Executed::read(&[other], &["a.py"]).is_empty());
        // Only the module ran (the test imported the file and failed before calling it): nothing to tell apart.
        let module = "local-llm-trace 1\nhit 0 1 1 module\n".to_string();
        let e = Executed::read(&[module], &["a.py"]);
        assert!(!e.is_empty());
        assert_eq!(e.lines("a.py", "x = 1\n"), None);
    }

    #[test]
    fn the_variables_put_the_tracer_first_on_the_python_path() {
        let env = environment(
            Path::new("/s/copy"),
            Path::new("/s/copy/.local-llm-trace"),
            &["pkg/a.py", "b.py"],
            Some(std::ffi::OsStr::new("/opt/lib")),
        );
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(
            get("PYTHONPATH").as_deref(),
            Some("/s/copy/.local-llm-trace:/opt/lib")
        );
        assert_eq!(
            get("LOCAL_LLM_TRACE_FILES").as_deref(),
            Some("/s/copy/pkg/a.py\n/s/copy/b.py")
        );
    }
}
