//! Snapshots of what people read: the policy file `init-project` writes for every provider and project kind, and
//! `doctor`'s report (paths, ports and bubblewrap's version replaced by placeholders). The templates are drawn for
//! a machine where bubblewrap confines the checks, whatever this one can do.

use crate::common::*;
use local_llm_delegator::policy::{ProjectKind, ProviderKind, template_with};
use local_llm_delegator::project::Project;

#[test]
fn init_project_templates() {
    for kind in [
        ProviderKind::Llamacpp,
        ProviderKind::Huggingface,
        ProviderKind::Openrouter,
        ProviderKind::Deepseek,
        ProviderKind::Openai,
        ProviderKind::Ollama,
        ProviderKind::Lmstudio,
        ProviderKind::Vllm,
    ] {
        for (name, project) in [
            ("rust", ProjectKind::Rust),
            ("node", ProjectKind::Node),
            ("python", ProjectKind::Python),
            ("python_tests", ProjectKind::PythonTests),
            ("go", ProjectKind::Go),
            ("other", ProjectKind::Other),
        ] {
            insta::assert_snapshot!(
                format!("init_{}_{name}", kind.name()),
                template_with(kind, &Project::of(project), Ok(()))
            );
        }
    }
}

/// A Python project as pip and pytest leave it: a package, pytest tests configured in pyproject.toml, a `.venv`
/// with pytest in it, and a build folder that .gitignore names.
fn python_pytest_project() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (f, text) in [
        (
            "pyproject.toml",
            "[project]\nname = \"toolz\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"toolz/tests\"]\n",
        ),
        ("toolz/__init__.py", ""),
        (
            "toolz/itertoolz.py",
            "def first(seq):\n    return next(iter(seq))\n",
        ),
        (
            "toolz/tests/test_itertoolz.py",
            "from toolz.itertoolz import first\n",
        ),
        (".gitignore", ".venv/\nbuild/\n__pycache__/\n"),
        (".venv/pyvenv.cfg", "home = /usr/bin\n"),
        (".venv/bin/python", ""),
        (".venv/lib/python3.11/site-packages/pytest/__init__.py", ""),
        ("build/lib/toolz/itertoolz.py", ""),
    ] {
        let p = d.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

#[test]
fn init_project_templates_for_a_python_project_with_pytest_and_a_venv() {
    let d = python_pytest_project();
    let project = Project::detect(d.path());
    for kind in [
        ProviderKind::Llamacpp,
        ProviderKind::Huggingface,
        ProviderKind::Openrouter,
        ProviderKind::Deepseek,
        ProviderKind::Openai,
    ] {
        insta::assert_snapshot!(
            format!("init_{}_python_pytest_venv", kind.name()),
            template_with(kind, &project, Ok(()))
        );
    }
}

/// Where bubblewrap cannot confine the checks, the template says so above `on_propose` and leaves validation on
/// propose and the repair round off (the snapshots above are of a machine where it can).
#[test]
fn init_project_template_without_bubblewrap_leaves_validation_on_propose_off_and_says_why() {
    let project = Project::of(ProjectKind::Python);
    let text = template_with(
        ProviderKind::Llamacpp,
        &project,
        Err("bwrap is not on PATH".into()),
    );
    assert!(
        text.contains("# Off: the checks cannot be confined here (bwrap is not on PATH)."),
        "{text}"
    );
    assert!(text.contains("on_propose = false"), "{text}");
    assert!(text.contains("attempts = 0"), "{text}");
}

#[test]
fn init_project_suggests_the_projects_pytest_in_its_venv_and_leaves_the_venv_out() {
    let d = python_pytest_project();
    let root = d.path().to_str().unwrap();
    let out = cli(&[
        "init-project",
        "--workspace-root",
        root,
        "--provider",
        "llamacpp",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(d.path().join("local-llm-worker.toml")).unwrap();
    assert!(
        text.contains("commands = [\".venv/bin/python -m pytest -q\"]"),
        "{text}"
    );
    assert!(!text.contains("compileall"), "{text}");
    assert!(
        text.contains("denied = [\"/.venv/\", \"/build/\"]"),
        "{text}"
    );
}

fn placeholders(text: &str, ws: &Ws, url: &str) -> String {
    let b = local_llm_delegator::confine::bubblewrap()
        .expect("these tests need bubblewrap: apt-get install bubblewrap");
    let root = url.strip_suffix("/v1").unwrap_or(url);
    text.replace(&ws.root_str(), "<WS>")
        .replace(url, "<URL>")
        .replace(root, "<ROOT>")
        .replace(&b.version, "<BWRAP VERSION>")
        .replace(&b.path.display().to_string(), "<BWRAP>")
}

#[test]
fn doctor_reports_each_check_with_its_fix() {
    let s = scripted(vec![Reply::chat("{}")]);
    let ws = Ws::new(&s.base_url, "");
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!("doctor_ok", placeholders(&stdout(&out), &ws, &s.base_url));
    assert_eq!(s.seen.lock().unwrap()[0].path, "/v1/models");

    let dead = unreachable_base_url();
    let ws = Ws {
        dir: tempfile::tempdir().unwrap(),
    };
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"openrouter\"\nbase_url = \"{dead}\"\napi_key_env = \"LLW_DOCTOR_UNSET_KEY\"\n\n[models]\nactive = [{{ provider = \"openrouter\", model = \"z-ai/glm-5.3-flash\" }}]\n"
        ),
    );
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert!(!out.status.success());
    insta::assert_snapshot!("doctor_failures", placeholders(&stdout(&out), &ws, &dead));
    assert!(stderr(&out).contains("check(s) failed"), "{}", stderr(&out));
}

/// `doctor` in a workspace whose checks are `commands`, with HOME at `home` and `path_first` put first on PATH.
fn doctor_with(
    ws: &Ws,
    home: &std::path::Path,
    path_first: &std::path::Path,
) -> std::process::Output {
    let path = std::env::join_paths(
        [path_first.to_path_buf()]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    Cli::new(["doctor", "--workspace-root", &ws.root_str()])
        .env("HOME", home)
        .env("PATH", path)
        .run()
}

/// Only the pre-flight lines (`checks`), with the paths, the home folder and the milliseconds replaced.
fn preflight_lines(text: &str, ws: &Ws, home: &std::path::Path) -> String {
    let home = home.canonicalize().unwrap();
    text.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("checks"))
        .map(|l| {
            let l = l
                .replace(&ws.root_str(), "<WS>")
                .replace(&home.display().to_string(), "<HOME>");
            match (l.rfind(", "), l.rfind(" ms)")) {
                (Some(a), Some(b)) if a < b => format!("{}, <MS> ms){}", &l[..a], &l[b + 4..]),
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn doctor_preflight_says_which_check_cannot_start_and_the_sandbox_read_line_that_fixes_it() {
    use std::os::unix::fs::PermissionsExt;
    let s = scripted(vec![Reply::chat("{}"), Reply::chat("{}")]);
    // A tool in the home folder, started by a script of the project: the confinement shows checks a fresh HOME.
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("tools/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("llw-tool"), "#!/bin/sh\necho tool ran\n").unwrap();
    std::fs::set_permissions(bin.join("llw-tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let policy = |read: &str| {
        format!(
            "[validation]\ncommands = [\"sh run-tests.sh\", \"exit 3\"]\non_propose = true\n{read}\n\n\
             [sampling]\ncandidates = 1\n"
        )
    };
    let ws = Ws::new(&s.base_url, &policy(""));
    ws.write("run-tests.sh", "llw-tool\n");
    let before = ws.snapshot();
    let out = doctor_with(&ws, home.path(), &bin);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert_eq!(
        ws.snapshot(),
        before,
        "the pre-flight changed the workspace"
    );
    insta::assert_snapshot!(
        "doctor_preflight_cannot_start",
        preflight_lines(&stdout(&out), &ws, home.path())
    );
    // The line doctor names, as it says.
    let text = stdout(&out);
    let fix = text
        .lines()
        .find_map(|l| l.split_once("sandbox_read: ").map(|(_, f)| f.to_string()))
        .unwrap_or_else(|| panic!("no sandbox_read line in {text}"));
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n\n{}",
            s.base_url,
            policy(&fix).replace(", \"exit 3\"", "")
        ),
    );
    let out = doctor_with(&ws, home.path(), &bin);
    assert!(out.status.success(), "{}", stdout(&out));
    insta::assert_snapshot!(
        "doctor_preflight_fixed",
        preflight_lines(&stdout(&out), &ws, home.path())
    );
}
