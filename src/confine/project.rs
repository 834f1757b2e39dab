//! The project's own environment, found on the host for a confined check: its virtualenvs (even when gitignored, so
//! not in the sandbox copy), the toolchain folders the worker's environment names, and the folders holding the
//! programs its validation commands start. The confinement shows them read-only ([`super::Layout`] decides which of
//! them may come back: never a private folder, never one that holds a hidden one).
//!
//! Only reads: a few `stat`s, each `pyvenv.cfg`, and the first line of each program found on PATH.

use std::path::{Path, PathBuf};

/// The variables naming toolchain folders, shown read-only at their real paths when they are hidden (under a home
/// folder, `/tmp`, `/srv`...). `GOPATH` may list several.
pub const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "PYENV_ROOT",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
];

/// Where a workspace keeps its virtualenv, relative to its root (uv and most tools: `.venv`).
const WORKSPACE_VENVS: &[&str] = &[".venv", "venv"];

/// Words before the program of a simple command that are not the program.
const NOT_PROGRAMS: &[&str] = &[
    "env", "exec", "time", "nice", "nohup", "command", "builtin", "if", "then", "else", "elif",
    "fi", "do", "done", "while", "until", "for", "!",
];

/// At most this many programs are looked up per command.
const MAX_PROGRAMS: usize = 32;

/// What a confined check needs of the project's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The workspace's own virtualenvs: (where it really is, where the check finds it). Each is shown at the
    /// workspace's path (its scripts name their interpreter there) and at the same place in the copy (so that
    /// `.venv/bin/python -m pytest` works from the copy's root).
    pub venvs: Vec<(PathBuf, PathBuf)>,
    /// Folders shown read-only at their real path, when the confinement would hide them: virtualenvs elsewhere,
    /// their base interpreters, toolchain folders, the folders of the checks' programs.
    pub folders: Vec<PathBuf>,
}

/// Find what the checks `commands` need, for a workspace at `workspace` copied to `sandbox`; `home` is the
/// worker's home folder.
pub fn discover(
    workspace: &Path,
    sandbox: &Path,
    commands: &[String],
    home: Option<&Path>,
) -> Found {
    let mut found = Found::default();
    let mut venvs: Vec<PathBuf> = Vec::new();
    let mut rels: Vec<String> = WORKSPACE_VENVS.iter().map(|s| s.to_string()).collect();
    if let Some(uv) = var_path("UV_PROJECT_ENVIRONMENT") {
        match uv.strip_prefix(workspace) {
            Ok(rel) => rels.extend(rel.to_str().map(str::to_string)),
            Err(_) if uv.is_relative() => rels.extend(uv.to_str().map(str::to_string)),
            Err(_) => venvs.push(uv),
        }
    }
    for rel in rels.iter().filter(|r| plain_relative(r)) {
        let at = workspace.join(rel);
        let Some(real) = venv_dir(&at) else { continue };
        found.venvs.push((real.clone(), at));
        found.venvs.push((real.clone(), sandbox.join(rel)));
        venvs.push(real);
    }
    venvs.extend(var_path("VIRTUAL_ENV"));
    for container in venv_containers(home) {
        if let Ok(rd) = std::fs::read_dir(&container) {
            venvs.extend(rd.flatten().map(|e| e.path()).take(256));
            found.folders.push(container);
        }
    }
    for v in &venvs {
        if let Some(real) = venv_dir(v) {
            found.folders.extend(base_interpreter(&real, home));
            if !real.starts_with(workspace) {
                found.folders.push(real);
            }
        }
    }
    for var in TOOLCHAIN_VARS {
        if let Some(v) = std::env::var_os(var) {
            found
                .folders
                .extend(std::env::split_paths(&v).filter(|p| p.is_absolute()));
        }
    }
    for c in commands {
        for program in programs(c) {
            found.folders.extend(program_folders(&program, home));
        }
    }
    found.venvs.dedup();
    found.folders.sort();
    found.folders.dedup();
    found
}

/// `name`'s value as a path, when it is set and not empty.
fn var_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether `rel` is a plain relative path (no `..`, not absolute, not empty).
fn plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// `dir`, canonical, when it is a virtualenv (it holds `pyvenv.cfg`).
fn venv_dir(dir: &Path) -> Option<PathBuf> {
    let real = dir.canonicalize().ok()?;
    real.join("pyvenv.cfg").is_file().then_some(real)
}

/// The folders holding the virtualenvs of poetry and pipenv.
fn venv_containers(home: Option<&Path>) -> Vec<PathBuf> {
    let cache = var_path("XDG_CACHE_HOME").or_else(|| home.map(|h| h.join(".cache")));
    let poetry = var_path("POETRY_VIRTUALENVS_PATH")
        .or_else(|| cache.map(|c| c.join("pypoetry/virtualenvs")));
    let pipenv =
        var_path("WORKON_HOME").or_else(|| home.map(|h| h.join(".local/share/virtualenvs")));
    [poetry, pipenv]
        .into_iter()
        .flatten()
        .filter(|p| p.is_absolute() && p.is_dir())
        .collect()
}

/// The installation a virtualenv's interpreter comes from: `pyvenv.cfg`'s `home` (the folder of the base
/// interpreter) and its parent when that is a `bin` folder, and the folder its `bin/python` leads to.
fn base_interpreter(venv: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(cfg) = std::fs::read_to_string(venv.join("pyvenv.cfg")) {
        for line in cfg.lines() {
            if let Some(("home", v)) = line.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                out.extend(with_prefix(Path::new(v), home));
            }
        }
    }
    if let Ok(p) = venv.join("bin/python").canonicalize()
        && let Some(d) = p.parent()
    {
        out.extend(with_prefix(d, home));
    }
    out
}

/// `dir`, and when it is a `bin` folder also its parent (the installation: `lib/` beside `bin/`), unless that is a
/// home folder.
fn with_prefix(dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if dir.file_name().is_some_and(|n| n == "bin")
        && let Some(prefix) = dir.parent()
        && !is_home_folder(prefix, home)
    {
        out.push(prefix.to_path_buf());
    }
    out
}

/// Whether `p` is someone's home folder (`/root`, a folder directly under `/home`, or `home`): never shown whole.
fn is_home_folder(p: &Path, home: Option<&Path>) -> bool {
    p == Path::new("/root")
        || p == Path::new("/")
        || p.parent() == Some(Path::new("/home"))
        || Some(p) == home
}

/// The folders a program named in a check needs: where it is found (a name on PATH, or an absolute path), where it
/// leads when it is a symlink (with its installation when that is a `bin` folder), and the same for the interpreter
/// its `#!` line names. A relative path lies in the copy and needs nothing.
pub fn program_folders(program: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(path) = locate(program) else {
        return out;
    };
    out.extend(path.parent().map(Path::to_path_buf));
    if let Ok(real) = path.canonicalize()
        && real != path
        && let Some(d) = real.parent()
    {
        out.extend(with_prefix(d, home));
    }
    if let Some(interpreter) = shebang(&path) {
        if let Some(d) = Path::new(&interpreter).parent() {
            out.extend(with_prefix(d, home));
        }
        if let Ok(real) = Path::new(&interpreter).canonicalize()
            && let Some(d) = real.parent()
        {
            out.extend(with_prefix(d, home));
        }
    }
    out
}

/// Where `program` is: an absolute path as it is, a bare name on the worker's PATH; `None` for a relative path (it
/// lies in the copy) or a name found nowhere.
pub fn locate(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return (p.is_absolute() && p.exists()).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| super::DEFAULT_PATH.into());
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The interpreter a script's `#!` line names (for `#!/usr/bin/env NAME`, NAME found on PATH).
fn shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if interpreter.ends_with("/env") {
        let name = words.find(|w| !w.starts_with('-'))?;
        return locate(name).map(|p| p.to_string_lossy().into_owned());
    }
    Some(interpreter.to_string())
}

/// The programs a shell command starts by name: the first word of each simple command, after `VAR=value` words,
/// keywords and wrappers such as `env`, `exec` or `time`, quotes taken off. A heuristic: a program it misses (one a
/// script starts) stays hidden when it lies in a hidden folder, and `doctor` says which folder to name in
/// `[validation] sandbox_read`.
pub fn programs(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let separators = |c: char| matches!(c, ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}');
    for segment in command.split(separators) {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''));
        let program = words.find(|w| {
            !w.is_empty()
                && !NOT_PROGRAMS.contains(w)
                && !w.starts_with('-')
                && !w.starts_with('$')
                && !is_assignment(w)
        });
        if let Some(p) = program
            && !out.iter().any(|o| o == p)
        {
            out.push(p.to_string());
        }
        if out.len() >= MAX_PROGRAMS {
            break;
        }
    }
    out
}

/// `NAME=value`, a variable set for one command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.as_bytes()[0].is_ascii_digit()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_environment_programs_are_the_first_words_of_each_command() {
        assert_eq!(programs("cargo test --quiet"), ["cargo"]);
        assert_eq!(
            programs("RUST_LOG=1 env -i FOO=2 cargo check && npm test | tee x; (cd a && make)"),
            ["cargo", "npm", "tee", "cd", "make"]
        );
        assert_eq!(
            programs(".venv/bin/python -m pytest -q"),
            [".venv/bin/python"]
        );
        assert_eq!(programs("'poetry' run pytest"), ["poetry"]);
        assert_eq!(programs("if true; then exit 0; fi"), ["true", "exit"]);
        assert!(programs("").is_empty());
    }

    #[test]
    fn the_project_environment_finds_a_workspace_venv_and_its_base_interpreter() {
        let ws = tempfile::tempdir().unwrap();
        let ws_root = ws.path().canonicalize().unwrap();
        let base = tempfile::tempdir().unwrap();
        let base_bin = base.path().canonicalize().unwrap().join("bin");
        std::fs::create_dir_all(&base_bin).unwrap();
        std::fs::create_dir_all(ws_root.join(".venv/bin")).unwrap();
        std::fs::write(
            ws_root.join(".venv/pyvenv.cfg"),
            format!("home = {}\nversion = 3.11\n", base_bin.display()),
        )
        .unwrap();
        // Not a virtualenv: no pyvenv.cfg.
        std::fs::create_dir_all(ws_root.join("venv")).unwrap();
        let sandbox = Path::new("/sandbox/copy");
        let f = discover(&ws_root, sandbox, &[], None);
        let real = ws_root.join(".venv");
        assert_eq!(
            f.venvs,
            vec![
                (real.clone(), ws_root.join(".venv")),
                (real, sandbox.join(".venv"))
            ]
        );
        assert!(f.folders.contains(&base_bin), "{:?}", f.folders);
        assert!(
            f.folders
                .contains(&base_bin.parent().unwrap().to_path_buf()),
            "{:?}",
            f.folders
        );
    }

    #[test]
    fn the_project_environment_never_shows_a_home_folder_whole() {
        let home = Path::new("/home/u");
        assert_eq!(
            with_prefix(Path::new("/home/u/bin"), Some(home)),
            [PathBuf::from("/home/u/bin")]
        );
        assert_eq!(
            with_prefix(Path::new("/root/bin"), None),
            [PathBuf::from("/root/bin")]
        );
        assert_eq!(
            with_prefix(Path::new("/home/u/.local/share/x/bin"), Some(home)),
            [
                PathBuf::from("/home/u/.local/share/x/bin"),
                PathBuf::from("/home/u/.local/share/x")
            ]
        );
    }
}
