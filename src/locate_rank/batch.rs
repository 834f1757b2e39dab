//! The mutation probe's many mutants in one run of the failing check ([`PROBER`]): the run gets a `sitecustomize`
//! that, the first time the program imports a selected file, forks one child per mutant, each importing its
//! mutant's text in place of the file, and writes which passed. About 2 ms a mutant where a run of the check costs
//! 30 to 60 ms, so [`probe_many`] can try every mutant the probe has, not only the first 64.
//!
//! Pure: [`encode`] writes the mutants for the run, [`environment`] the variables that turn the prober on, and
//! [`read`] what it wrote (hostile bytes: the check ran the repository's code; only lines of the expected form
//! count). The shell stages the prober, runs the check and reads the file. A check that never imports a selected
//! file (it runs it as a script) writes nothing: [`probe_many`] then runs the probe one check a mutant.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::Failing;
use super::failing::Fixed;
use super::mutants::{Check, probe};
use crate::patch::PreImage;
use crate::patch::focus::Focus;
use crate::task::Task;

/// The prober: a `sitecustomize.py` that runs every mutant in a forked child of the check and writes the verdicts.
pub const PROBER: &str = include_str!("prober.py");

/// The folder, at the top of the sandbox copy, that holds the prober, its mutants and what it writes, for the one
/// run of the probe (removed right after it).
pub const PROBE_FOLDER: &str = ".local-llm-probe";

/// The file in [`PROBE_FOLDER`] the mutants are written to.
pub const MUTANTS_FILE: &str = "mutants.bin";

/// The most bytes read of what the prober wrote (a line of a few bytes a mutant).
pub const MAX_VERDICTS: usize = 256 * 1024;

/// The most mutants [`probe_many`] hands one run.
pub const MAX_MUTANTS: usize = 4096;

/// The mutants, each a selected file's absolute path in the copy and its whole text, as the prober reads them.
pub fn encode(mutants: &[(std::path::PathBuf, &str)]) -> Vec<u8> {
    let mut out = b"local-llm-probe 1\n".to_vec();
    for (path, text) in mutants {
        let path = path.as_os_str().as_encoded_bytes();
        out.extend_from_slice(format!("{} {}\n", path.len(), text.len()).as_bytes());
        out.extend_from_slice(path);
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// The variables that turn the prober in `folder` on: PYTHONPATH is `folder` before `python_path` (the variable as
/// the check would otherwise get it); each child may run `timeout_ms`, forking stops after `budget_ms`, and `jobs`
/// children run at once.
pub fn environment(
    folder: &Path,
    python_path: Option<&std::ffi::OsStr>,
    timeout_ms: u64,
    budget_ms: u64,
    jobs: usize,
) -> Vec<(OsString, OsString)> {
    let mut path = folder.as_os_str().to_os_string();
    if let Some(rest) = python_path.filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(rest);
    }
    vec![
        ("PYTHONPATH".into(), path),
        (
            "LOCAL_LLM_PROBE_IN".into(),
            folder.join(MUTANTS_FILE).into_os_string(),
        ),
        ("LOCAL_LLM_PROBE_OUT".into(), folder.into()),
        (
            "LOCAL_LLM_PROBE_TIMEOUT_MS".into(),
            timeout_ms.to_string().into(),
        ),
        (
            "LOCAL_LLM_PROBE_BUDGET_MS".into(),
            budget_ms.to_string().into(),
        ),
        ("LOCAL_LLM_PROBE_JOBS".into(), jobs.to_string().into()),
    ]
}

/// What the prober wrote for `n` mutants: each one's verdict (`Some(true)` passed), `None` for one it did not run.
/// `None` in all when nothing it wrote is of the expected form (the check never imported a selected file).
pub fn read(texts: &[String], n: usize) -> Option<Vec<Option<bool>>> {
    let mut out = vec![None; n];
    let mut any = false;
    for text in texts {
        let mut lines = text.lines();
        if lines.next() != Some("local-llm-probe 1") {
            continue;
        }
        any = true;
        for line in lines {
            let Some((index, verdict)) = line.split_once(' ') else {
                continue;
            };
            let Some(slot) = index.parse::<usize>().ok().and_then(|i| out.get_mut(i)) else {
                continue;
            };
            match verdict {
                "pass" => *slot = Some(true),
                "fail" | "time" => *slot = Some(false),
                _ => {}
            }
        }
    }
    any.then_some(out)
}

/// Runs the failing check once on many mutants (each a selected file's path and its whole text): each one's
/// verdict (`None` for one not run), or `None` when the run could not say (the caller then runs one check a
/// mutant).
pub type Many<'c> = dyn FnMut(&[(String, String)]) -> Option<Vec<Option<bool>>> + 'c;

/// The probe ([`probe`]) over every mutant it has, at most [`MAX_MUTANTS`], tried in ONE run of the check through
/// `many`, in the same order and with the same answer: the first of them that passed (one `many` did not reach in
/// its time counts as failed). Where `many` cannot say, the probe runs with `check`, one run a mutant, at most
/// `runs` of them.
pub fn probe_many(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    failing: &Failing,
    runs: usize,
    many: &mut Many<'_>,
    check: &mut Check<'_>,
) -> Probed {
    // Every mutant, in the order the probe tries them: none passes, so it goes through them all.
    let mut all: Vec<(String, String)> = Vec::new();
    probe(
        spec,
        files,
        focus,
        failing,
        MAX_MUTANTS,
        &mut |path, text| {
            all.push((path.to_string(), text.to_string()));
            Some(false)
        },
    );
    let fixed = if all.is_empty() {
        Vec::new()
    } else if let Some(verdicts) = many(&all) {
        // The first that passed, in the order the probe wrote them; its place read off the change it made.
        let passed = all.iter().zip(verdicts).find(|(_, v)| *v == Some(true));
        passed
            .and_then(|((path, text), _)| {
                let Some(Some(pre)) = files.get(path) else {
                    return None;
                };
                let (line, insert) = place_of(&pre.text, text)?;
                Some(Fixed {
                    path: path.clone(),
                    line,
                    insert,
                })
            })
            .into_iter()
            .collect()
    } else {
        probe(spec, files, focus, failing, runs, check)
    };
    Probed {
        fixed,
        any: !all.is_empty(),
    }
}

/// What [`probe_many`] found: the place where a mutant passed, and whether it had any mutant to run (with no
/// place, none of them passed: [`Failing::probed`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probed {
    /// The place where the first mutant that passed changed a file (none when none passed).
    pub fixed: Vec<Fixed>,
    /// The probe had at least one mutant to run.
    pub any: bool,
}

/// Where the mutant `text` of `before` changed it, as the probe reports it: the 1-based line it changed
/// (`false`), or the line after which it inserted one (`true`); a line inserted just before a lone `pass` of its
/// own indentation reports the `pass` changed. None when it is neither.
fn place_of(before: &str, text: &str) -> Option<(usize, bool)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mutants_are_written_length_first_and_the_verdicts_read_only_in_their_form() {
        let bytes = encode(&[("/c/a.py".into(), "x = 1\n"), ("/c/b é.py".into(), "")]);
        assert_eq!(
            bytes,
            "local-llm-probe 1\n7 6\n/c/a.pyx = 1\n10 0\n/c/b é.py".as_bytes()
        );
        let wrote =
            ["local-llm-probe 1\n0 fail\n2 pass\n1 time\n9 pass\nx y\n3 maybe\n".to_string()];
        assert_eq!(
            read(&wrote, 4),
            Some(vec![Some(false), Some(false), Some(true), None])
        );
        // Nothing of its form: the run could not say.
        assert_eq!(read(&["ok\n0 pass\n".to_string()], 1), None);
        assert_eq!(read(&[], 1), None);
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
}
