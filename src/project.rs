//! What `init-project` learns about a project folder beyond its kind ([`ProjectKind`]): the test command the project
//! really uses (pytest, `make test`, tox, nox, `npm test`, `cargo test`, `go test`), run with the project's own
//! virtualenv when it has one, and the top-level folders to keep out of `[paths] allowed` (virtualenvs, tool-made
//! environments, folders `.gitignore` names).
//!
//! It reads marker files at the top of the project (and `tests/`), and lists the top folder once: it never walks the
//! tree. What it is not: a judge of whether the command passes (`doctor` runs the checks).

use std::path::Path;

use crate::policy::ProjectKind;

/// Folders made by test tools that hold whole environments: never the project's own code.
const TOOL_ENVS: &[&str] = &[".tox", ".nox"];

/// What `init-project` suggests for a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The kind, from the marker files.
    pub kind: ProjectKind,
    /// The suggested validation command; `None` when nothing says how the project is checked.
    pub check: Option<String>,
    /// What the command was found from, for the policy's comment (`pyproject.toml [tool.pytest.ini_options]`).
    pub found: Option<String>,
    /// Top-level folders to deny, as `[paths]` patterns (`/.venv/`), sorted.
    pub denied: Vec<String>,
}

impl Project {
    /// A project of `kind` with nothing else known: the kind's own check, nothing denied.
    pub fn of(kind: ProjectKind) -> Project {
        Project {
            kind,
            check: kind.check().map(str::to_string),
            found: None,
            denied: Vec::new(),
        }
    }

    /// What the project at `root` is, how it is tested, and which of its top folders stay out of `allowed`.
    pub fn detect(root: &Path) -> Project {
        let kind = ProjectKind::detect(root);
        let venvs = virtualenvs(root);
        let python = venvs
            .iter()
            .find(|v| root.join(v).join("bin/python").exists())
            .map_or_else(|| "python3".to_string(), |v| format!("{v}/bin/python"));
        let (check, found) = match test_command(root, &python, &venvs) {
            Some((c, why)) => (Some(c), Some(why)),
            None => (default_check(root, kind, &python, &venvs), None),
        };
        let mut denied: Vec<String> = venvs
            .iter()
            .cloned()
            .chain(
                TOOL_ENVS
                    .iter()
                    .filter(|d| root.join(d).is_dir())
                    .map(|d| d.to_string()),
            )
            .chain(gitignored_folders(root))
            .map(|d| format!("/{d}/"))
            .collect();
        denied.sort();
        denied.dedup();
        Project {
            kind,
            check,
            found,
            denied,
        }
    }
}

/// The top-level folders that are Python virtualenvs (they hold `pyvenv.cfg`), sorted.
fn virtualenvs(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = top_folders(root)
        .into_iter()
        .filter(|d| root.join(d).join("pyvenv.cfg").is_file())
        .collect();
    out.sort();
    out
}

/// The names of the folders directly in `root` (one `readdir`), `.git` left out.
fn top_folders(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n != ".git")
                .collect()
        })
        .unwrap_or_default()
}

/// The top-level folders the project's `.gitignore` ignores (build output, caches, environments).
fn gitignored_folders(root: &Path) -> Vec<String> {
    let mut b = ignore::gitignore::GitignoreBuilder::new(root);
    if b.add(root.join(".gitignore")).is_some() {
        return Vec::new();
    }
    let Ok(gi) = b.build() else {
        return Vec::new();
    };
    top_folders(root)
        .into_iter()
        .filter(|d| gi.matched(root.join(d), true).is_ignore())
        .collect()
}

/// The text of `root/rel`, or empty when it cannot be read (a marker file is small; at most 1 MiB is read). Opened
/// through the file layer: a symlink, a FIFO or a device there reads as empty, never followed or waited on.
fn text(root: &Path, rel: &str) -> String {
    use crate::workspace::fs::{self, Opened};
    use std::io::Read;
    let mut s = String::new();
    let opened = fs::open_parent(root, rel).and_then(|(dir, name)| dir.open(&name, false));
    if let Ok(Opened::File(f)) = opened {
        let _ = f.take(1 << 20).read_to_string(&mut s);
    }
    s
}

/// Whether `root/dir` holds a `test_*.py` or `*_test.py` file (one `readdir`).
fn has_python_tests(root: &Path, dir: &str) -> bool {
    std::fs::read_dir(root.join(dir)).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.ends_with(".py") && (n.starts_with("test_") || n.ends_with("_test.py"))
            })
        })
    })
}

/// Where a Python project keeps its test files: `tests/`, `test/`, and the `tests/` folder inside each package at the
/// top (toolz keeps them in `toolz/tests/`); one `readdir` of the top and one `stat` per folder there.
fn test_folders(root: &Path) -> Vec<String> {
    let mut dirs = vec!["tests".to_string(), "test".to_string()];
    let mut packages: Vec<String> = top_folders(root)
        .into_iter()
        .filter(|d| !d.starts_with('.') && root.join(d).join("__init__.py").is_file())
        .map(|d| format!("{d}/tests"))
        .collect();
    packages.sort();
    dirs.extend(packages);
    dirs
}

/// Where the project says it uses pytest, if it does.
fn pytest_marker(root: &Path, venvs: &[String]) -> Option<String> {
    let file = |f: &str| root.join(f).is_file();
    if text(root, "pyproject.toml").contains("[tool.pytest.ini_options]") {
        return Some("pyproject.toml [tool.pytest.ini_options]".into());
    }
    if file("pytest.ini") {
        return Some("pytest.ini".into());
    }
    if text(root, "setup.cfg").contains("[tool:pytest]") {
        return Some("setup.cfg [tool:pytest]".into());
    }
    if text(root, "tox.ini").contains("pytest") {
        return Some("tox.ini (runs pytest)".into());
    }
    for c in ["conftest.py", "tests/conftest.py", "test/conftest.py"] {
        if file(c) {
            return Some(c.into());
        }
    }
    let tests = test_folders(root)
        .into_iter()
        .find(|d| has_python_tests(root, d))?;
    let named = [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "requirements-dev.txt",
        "requirements_dev.txt",
    ]
    .iter()
    .any(|f| text(root, f).contains("pytest"));
    let installed = venvs.iter().any(|v| {
        std::fs::read_dir(root.join(v).join("lib")).is_ok_and(|rd| {
            rd.flatten()
                .any(|py| py.path().join("site-packages/pytest").is_dir())
        })
    });
    (named || installed).then(|| format!("{tests}/test_*.py with pytest"))
}

/// Whether a makefile at the top has a `test:` target.
fn make_test(root: &Path) -> Option<String> {
    ["GNUmakefile", "makefile", "Makefile"]
        .into_iter()
        .find(|f| {
            text(root, f).lines().any(|l| {
                l.strip_prefix("test")
                    .is_some_and(|rest| rest.trim_start().starts_with(':') && !rest.contains('='))
            })
        })
        .map(|f| format!("{f} (a `test:` target)"))
}

/// Whether package.json has a real `scripts.test` (not npm's placeholder that only fails).
fn npm_test(root: &Path) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text(root, "package.json")) else {
        return false;
    };
    v["scripts"]["test"]
        .as_str()
        .is_some_and(|t| !t.trim().is_empty() && !t.contains("no test specified"))
}

/// The project's own test command and what it was found from, in order: pytest, `make test`, tox, nox, `npm test`,
/// `cargo test`, `go test`.
fn test_command(root: &Path, python: &str, venvs: &[String]) -> Option<(String, String)> {
    if let Some(why) = pytest_marker(root, venvs) {
        return Some((format!("{python} -m pytest -q"), why));
    }
    if let Some(why) = make_test(root) {
        return Some(("make test".into(), why));
    }
    if root.join("tox.ini").is_file() || text(root, "pyproject.toml").contains("[tool.tox") {
        return Some(("tox -q".into(), "tox.ini or [tool.tox]".into()));
    }
    if root.join("noxfile.py").is_file() {
        return Some(("nox".into(), "noxfile.py".into()));
    }
    if npm_test(root) {
        return Some((
            "npm test --silent".into(),
            "package.json scripts.test".into(),
        ));
    }
    if root.join("Cargo.toml").is_file() {
        return Some(("cargo test --quiet --offline".into(), "Cargo.toml".into()));
    }
    if root.join("go.mod").is_file() {
        return Some(("go test ./...".into(), "go.mod".into()));
    }
    None
}

/// The kind's own check when no test command was found, with the virtualenv's python and its folders left out of
/// a byte-compile; a Node.js project without a test script gets none.
fn default_check(root: &Path, kind: ProjectKind, python: &str, venvs: &[String]) -> Option<String> {
    match kind {
        ProjectKind::Node if !npm_test(root) => None,
        ProjectKind::Python if !venvs.is_empty() => {
            let names: Vec<String> = venvs.iter().map(|v| v.replace('.', "\\.")).collect();
            Some(format!(
                "{python} -m compileall -q -x '/({})/' .",
                names.join("|")
            ))
        }
        ProjectKind::PythonTests => Some(format!("{python} -m unittest -q")),
        _ => kind.check().map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_file_that_is_a_fifo_or_a_symlink_reads_as_empty_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("elsewhere.ini"), "[tox]\npytest\n").unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere.ini"), root.join("tox.ini")).unwrap();
        let mode = rustix::fs::Mode::from_raw_mode(0o644);
        let fifo = root.join("setup.cfg");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let at = root.clone();
        std::thread::spawn(move || {
            let _ = tx.send((text(&at, "setup.cfg"), text(&at, "tox.ini")));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        if got.is_err() {
            // Let the thread that waits on the FIFO go.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let (fifo_text, link_text) = got.expect("reading a marker file waited on a FIFO");
        assert_eq!(fifo_text, "");
        assert_eq!(link_text, "", "the symlinked marker file was followed");
        assert_eq!(text(&root, "elsewhere.ini"), "[tox]\npytest\n");
    }

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        for (f, text) in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let p = Project::detect(dir.path());
        (dir, p)
    }

    fn check(files: &[(&str, &str)]) -> Option<String> {
        project(files).1.check
    }

    #[test]
    fn pytest_is_detected_from_each_of_its_markers() {
        for marker in [
            (
                "pyproject.toml",
                "[project]\nname = \"x\"\n[tool.pytest.ini_options]\n",
            ),
            ("pytest.ini", "[pytest]\n"),
            ("setup.cfg", "[tool:pytest]\n"),
            ("tox.ini", "[testenv]\ncommands = pytest\n"),
            ("conftest.py", ""),
            ("tests/conftest.py", ""),
        ] {
            assert_eq!(
                check(&[marker, ("setup.py", "")]).as_deref(),
                Some("python3 -m pytest -q"),
                "{marker:?}"
            );
        }
        assert_eq!(
            check(&[
                ("tests/test_a.py", ""),
                ("requirements-dev.txt", "pytest\n")
            ])
            .as_deref(),
            Some("python3 -m pytest -q")
        );
    }

    #[test]
    fn pytest_in_a_virtualenv_runs_with_its_python_and_the_virtualenv_is_denied() {
        let (_d, p) = project(&[
            ("pyproject.toml", "[tool.pytest.ini_options]\n"),
            (".venv/pyvenv.cfg", "home = /usr/bin\n"),
            (".venv/bin/python", ""),
            (".venv/lib/python3.11/site-packages/pytest/__init__.py", ""),
            ("toolz/itertoolz.py", ""),
        ]);
        assert_eq!(p.check.as_deref(), Some(".venv/bin/python -m pytest -q"));
        assert_eq!(
            p.found.as_deref(),
            Some("pyproject.toml [tool.pytest.ini_options]")
        );
        assert_eq!(p.denied, ["/.venv/"]);
        // tests/test_*.py count as pytest tests when pytest is installed in the virtualenv.
        let (_d, p) = project(&[
            ("setup.py", ""),
            ("tests/test_a.py", ""),
            ("venv/pyvenv.cfg", ""),
            ("venv/bin/python", ""),
            ("venv/lib/python3.12/site-packages/pytest/__init__.py", ""),
        ]);
        assert_eq!(p.check.as_deref(), Some("venv/bin/python -m pytest -q"));
        // A package that keeps its tests inside itself (toolz/tests/test_*.py), pytest in its .venv.
        let (_d, p) = project(&[
            ("setup.py", ""),
            ("toolz/__init__.py", ""),
            ("toolz/tests/test_itertoolz.py", ""),
            (".venv/pyvenv.cfg", ""),
            (".venv/bin/python", ""),
            (".venv/lib/python3.11/site-packages/pytest/__init__.py", ""),
        ]);
        assert_eq!(p.check.as_deref(), Some(".venv/bin/python -m pytest -q"));
        assert_eq!(
            p.found.as_deref(),
            Some("toolz/tests/test_*.py with pytest")
        );
    }

    #[test]
    fn gitignored_folders_and_tool_environments_are_denied() {
        let (_d, p) = project(&[
            ("setup.py", ""),
            (".gitignore", "build/\n*.egg-info\n# a comment\ndist\n"),
            ("build/lib/x.py", ""),
            ("dist/x.tar.gz", ""),
            ("x.egg-info/PKG-INFO", ""),
            (".tox/py311/x.py", ""),
            ("src/x.py", ""),
        ]);
        assert_eq!(p.denied, ["/.tox/", "/build/", "/dist/", "/x.egg-info/"]);
    }

    #[test]
    fn make_tox_nox_npm_cargo_and_go_test_commands_are_detected() {
        for (files, want) in [
            (
                vec![("Makefile", "all:\n\tcc x.c\n\ntest: all\n\t./run-tests\n")],
                "make test",
            ),
            (
                vec![("setup.py", ""), ("tox.ini", "[tox]\nenvlist = py3\n")],
                "tox -q",
            ),
            (vec![("setup.py", ""), ("noxfile.py", "")], "nox"),
            (
                vec![("package.json", r#"{"scripts": {"test": "jest"}}"#)],
                "npm test --silent",
            ),
            (
                vec![("Cargo.toml", "[package]\n")],
                "cargo test --quiet --offline",
            ),
            (vec![("go.mod", "module x\n")], "go test ./..."),
        ] {
            assert_eq!(check(&files).as_deref(), Some(want), "{files:?}");
        }
    }

    #[test]
    fn without_a_test_command_the_kinds_own_check_is_suggested() {
        assert_eq!(
            check(&[("setup.py", "")]).as_deref(),
            Some("python3 -m compileall -q .")
        );
        assert_eq!(
            check(&[
                ("setup.py", ""),
                (".venv/pyvenv.cfg", ""),
                (".venv/bin/python", "")
            ])
            .as_deref(),
            Some(".venv/bin/python -m compileall -q -x '/(\\.venv)/' .")
        );
        // npm's placeholder test script only fails: no command rather than that one.
        assert_eq!(
            check(&[(
                "package.json",
                r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#
            )]),
            None
        );
        // A variable named like the target is not a target.
        assert_eq!(check(&[("Makefile", "test = 1\n")]), None);
    }
}
