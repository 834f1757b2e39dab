//! Unit tests of the path checks and the glob grammar.

use super::glob::check_paths;
use super::*;
use crate::names::{ALWAYS_DENIED, POLICY_FILE, escaped};
use crate::policy::Paths;

fn ws(allowed: &[&str], denied: &[&str]) -> Workspace {
    let paths = Paths {
        allowed: allowed.iter().map(|s| s.to_string()).collect(),
        denied: denied.iter().map(|s| s.to_string()).collect(),
        unlock_secrets: vec![],
        ..Paths::default()
    };
    Workspace::new(std::env::temp_dir(), &paths, None).unwrap()
}

#[test]
fn accepts_plain_allowed_paths() {
    let w = ws(&["src/**", "*.md"], &[]);
    assert!(w.check_path("src/a/b.rs").is_ok());
    assert!(w.check_path("README.md").is_ok());
}

#[test]
fn refuses_escapes_odd_syntax_and_unlisted_paths() {
    let w = ws(&["**"], &[]);
    for (p, why) in [
        ("../x", "`..`"),
        ("a/../../x", "`..`"),
        ("/etc/passwd", "absolute"),
        ("", "empty"),
        ("a//b", "empty component"),
        ("a b", "whitespace"),
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains(why), "{p}: {err}");
    }
    let err = ws(&["src/**"], &[])
        .check_path("docs/x.md")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not matched by [paths] allowed"), "{err}");
    let err = ws(&["src/*"], &[])
        .check_path("src/a/b.rs")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not matched"),
        "`*` must not cross folders: {err}"
    );
}

#[test]
fn paths_over_path_max_or_names_over_name_max_are_refused() {
    let w = ws(&["**"], &[]);
    let deep = "a/".repeat(2048) + "f.txt";
    let err = w.check_path(&deep).unwrap_err().to_string();
    assert!(
        err.contains("PATH_MAX") && err.contains("4101 bytes"),
        "{err}"
    );
    let err = w
        .check_path(&format!("src/{}.rs", "n".repeat(256)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NAME_MAX") && err.contains("259 bytes"),
        "{err}"
    );
    // Right at the limits: accepted.
    assert!(w.check_path(&("a/".repeat(2045) + "f.txt")).is_ok());
    assert!(w.check_path(&"n".repeat(255)).is_ok());
}

#[test]
fn a_policy_file_inside_the_workspace_under_another_name_is_always_denied() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("conf")).unwrap();
    std::fs::write(root.path().join("conf/policy.toml"), "").unwrap();
    let root = root.path().canonicalize().unwrap();
    let paths = Paths {
        allowed: vec!["**".into()],
        ..Paths::default()
    };
    let w = Workspace::new(root.clone(), &paths, Some(&root.join("conf/policy.toml"))).unwrap();
    let err = w.check_path("conf/policy.toml").unwrap_err().to_string();
    assert!(err.contains("always denied"), "{err}");
    assert!(w.check_path("conf/policy.toml.bak").is_ok());
    assert!(w.check_path("conf/other.toml").is_ok());
}

#[test]
fn built_in_and_policy_denials_win_over_allowed() {
    let w = ws(&["**"], &["secret/**"]);
    for p in [
        ".git/config",
        ".git/hooks/pre-commit",
        "sub/.git/x",
        "local-llm-worker.toml",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains("always denied"), "{p}: {err}");
    }
    let err = w.check_path("secret/a.txt").unwrap_err().to_string();
    assert!(err.contains("denied by [paths] denied"), "{err}");
    for p in [
        ".env",
        "a/.env.local",
        "k.pem",
        "deploy/id_rsa",
        ".aws/config",
        "my-credentials.json",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(
            err.contains("looks like a secret") && err.contains("unlock_secrets"),
            "{p}: {err}"
        );
    }
}

#[test]
fn case_insensitive_filesystems_denials_match_in_any_case() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("policy.toml"), "").unwrap();
    let root = root.path().canonicalize().unwrap();
    let paths = Paths {
        allowed: vec!["**".into()],
        denied: vec!["private/**".into()],
        unlock_secrets: vec!["**/.env.example".into()],
        ..Paths::default()
    };
    let w = Workspace::new(root.clone(), &paths, Some(&root.join("policy.toml"))).unwrap();
    for p in [
        ".GIT/config",
        ".Git/hooks/pre-commit",
        "sub/.gIT/HEAD",
        "LOCAL-LLM-WORKER.TOML",
        "Local-Llm-Worker.toml",
        "POLICY.TOML",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains("always denied"), "{p}: {err}");
    }
    for p in [
        ".ENV",
        "app/.Env.Local",
        "server.PEM",
        "deploy/ID_RSA",
        ".AWS/config",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains("looks like a secret"), "{p}: {err}");
    }
    let err = w.check_path("Private/notes.txt").unwrap_err().to_string();
    assert!(err.contains("denied by [paths] denied"), "{err}");
    // What lets a path through matches exactly: another case unlocks nothing.
    assert!(w.check_path("app/.env.example").is_ok());
    assert!(w.check_path("app/.ENV.EXAMPLE").is_err());
    assert!(
        ws(&["src/**"], &[]).check_path("SRC/a.rs").is_err(),
        "allowed must not widen by case"
    );
}

#[test]
fn policy_files_of_nested_projects_are_denied_at_any_depth_in_any_case() {
    assert_eq!(
        ALWAYS_DENIED.last(),
        Some(&format!("**/{POLICY_FILE}").as_str())
    );
    let w = ws(&["**"], &[]);
    for p in [
        "local-llm-worker.toml",
        "svc/local-llm-worker.toml",
        "a/b/c/LOCAL-LLM-WORKER.TOML",
        "svc/Local-Llm-Worker.Toml",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(
            err.contains("always denied: it is a policy file"),
            "{p}: {err}"
        );
    }
    assert!(w.check_path("svc/local-llm-worker.toml.example").is_ok());
    assert!(w.check_path("svc/local-llm-worker.toml.d/x").is_ok());
}

#[test]
fn secrets_by_other_spellings_are_secrets_and_ordinary_sources_are_not() {
    let w = ws(&["**"], &[]);
    for p in [
        ".env-prod",
        ".env_prod",
        ".envrc",
        ".ENV",
        "docker/prod.env",
        "server.PEM",
        "tls.Key",
        "deploy/ID_RSA",
        "Credentials.json",
        ".AWS/config",
        "id_ecdsa",
        "id_dsa.pub",
        ".npmrc",
        ".netrc",
        ".pypirc",
        "a.p12",
        "a.pfx",
        "release.keystore",
        "app.jks",
        ".git-credentials",
        ".docker/config.json",
        "db.kdbx",
        ".htpasswd",
        "config/secrets.yml",
        ".streamlit/secrets.toml",
        ".pgpass",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".kube/config",
        ".gnupg/pubring.kbx",
        ".bash_history",
        ".config/gcloud/credentials.db",
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains("looks like a secret ("), "{p}: {err}");
        assert!(w.is_secret(p), "{p} is copied into a sandbox");
    }
    let err = w.check_path("deploy/tls.Key").unwrap_err().to_string();
    assert!(err.contains("(*.key, matched in any case)"), "{err}");
    for p in [
        "src/secrets.py",
        "src/secret.rs",
        "src/key.rs",
        "src/keys/mod.rs",
        "src/env.rs",
        "src/environment.py",
        "src/pem.rs",
        "src/keystore.rs",
        "src/history.rs",
        "docs/secrets.md",
        "config/settings.yml",
        ".github/workflows/ci.yml",
        ".gitignore",
        "src/npmrc_parser.js",
        "kube/config.yaml",
    ] {
        assert!(w.check_path(p).is_ok(), "{p} is an ordinary file");
        assert!(!w.is_secret(p), "{p}");
    }
}

#[test]
fn invisible_and_confusable_characters_in_paths_are_refused_by_code_point() {
    let w = ws(&["**"], &[]);
    for (p, needle) in [
        (
            "src/\u{202E}yp.txt",
            "holds U+202E, a bidirectional control",
        ),
        ("a\u{200B}.py", "holds U+200B, an invisible character"),
        ("a\u{FEFF}.py", "U+FEFF"),
        ("a\u{034F}.py", "U+034F"),
        ("a\u{E0041}.py", "U+E0041"),
        ("a\tb", "holds U+0009, a control character"),
        ("a\u{00A0}b", "holds U+00A0, a space"),
        (".g\u{0456}t/config", "reads as \".git\": U+0456"),
        ("x/.\u{0261}it/HEAD", "U+0261"),
        (".g\u{0131}t/config", "U+0131"),
        (".gi\u{0307}t/config", "U+0307"),
        ("\u{FF0E}\u{FF47}\u{FF49}\u{FF54}/config", "U+FF0E"),
        ("\u{FF0E}git/config", "U+FF0E"),
        (
            "local-llm-w\u{043E}rker.toml",
            "reads as \"local-llm-worker.toml\": U+043E",
        ),
        ("svc/local-llm-wor\u{212A}er.toml", "U+212A"),
        (".git./config", "trailing dots"),
        ("svc/LOCAL-LLM-WORKER.TOML..", "trailing dots"),
        ("GIT~1/config", "short (8.3) name of .git"),
    ] {
        let err = w.check_path(p).unwrap_err().to_string();
        assert!(err.contains(needle), "{}: {err}", escaped(p));
        assert!(err.is_ascii(), "a refusal printed a character raw: {err}");
    }
    for p in [
        "src/café.py",
        "docs/日本語.md",
        "src/naïve.rs",
        ".github/x.yml",
        ".gitignore",
        "src/.gitkeep",
        "a.b./c",
        "git~2/x",
        "src/gité.rs",
    ] {
        assert!(w.check_path(p).is_ok(), "{p}");
    }
}

#[test]
fn secrets_need_an_explicit_unlock_and_git_never_unlocks() {
    let paths = Paths {
        allowed: vec!["**".into()],
        denied: vec![],
        unlock_secrets: vec!["**/.env.example".into(), ".git/**".into()],
        ..Paths::default()
    };
    let w = Workspace::new(std::env::temp_dir(), &paths, None).unwrap();
    assert!(w.check_path("app/.env.example").is_ok());
    assert!(
        w.check_path("app/.env").is_err(),
        "only the named file is unlocked"
    );
    assert!(
        w.check_path(".git/config")
            .unwrap_err()
            .to_string()
            .contains("always denied")
    );
}

#[test]
fn globs_that_silently_do_less_read_as_in_gitignore_or_are_refused() {
    let w = ws(
        &["src/**", "*.md", "/Makefile", "tools/", "scripts/*"],
        &[
            "src/secret",
            "vault/",
            "*.secret",
            "/config/**",
            "Private",
            "src/gen/*",
        ],
    );
    for (p, ok) in [
        ("src/a.rs", true),
        ("src/secret", false),
        ("src/secret/a.rs", false),
        ("src/x/vault/b.rs", false),
        ("src/deep/c.secret", false),
        ("src/private/d.rs", false),
        ("src/gen/e.rs", false),
        ("src/gen/sub/f.rs", false),
        ("src/secretary.rs", true),
        ("docs/deep/g.md", true),
        ("Makefile", true),
        ("sub/Makefile", false),
        ("tools/a/b.sh", true),
        ("scripts/run.sh", true),
        ("scripts/sub/run.sh", false),
    ] {
        assert_eq!(w.check_path(p).is_ok(), ok, "{p}: {:?}", w.check_path(p));
    }
    let w = ws(&["**"], &["/config/**"]);
    assert!(w.check_path("config/a.py").is_err());
    assert!(
        w.check_path("sub/config/a.py").is_ok(),
        "a leading / anchors"
    );
    for (pattern, needle) in [
        ("!src/secret/**", "starts with `!`"),
        ("", "is empty"),
        (" src/**", "has spaces at its ends"),
        ("src//a", "has an empty component"),
        ("/", "has an empty component"),
        ("./src/**", "uses `.` or `..`"),
    ] {
        let paths = Paths {
            allowed: vec![pattern.into()],
            ..Paths::default()
        };
        let err = check_paths(&paths.allowed, &paths.denied, &paths.unlock_secrets).unwrap_err();
        assert!(
            err.contains(&format!("[paths] allowed pattern {pattern:?} {needle}")),
            "{err}"
        );
        assert!(Workspace::new(std::env::temp_dir(), &paths, None).is_err());
    }
    let err = pattern_globs("!src/keep.py", PathList::Denied).unwrap_err();
    assert!(
        err.contains("list \"src/keep.py\" in [paths] denied"),
        "{err}"
    );
}

#[test]
fn a_bad_glob_is_a_policy_error() {
    let paths = Paths {
        allowed: vec!["src/[".into()],
        denied: vec![],
        unlock_secrets: vec![],
        ..Paths::default()
    };
    let err = Workspace::new(std::env::temp_dir(), &paths, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("[paths] allowed glob \"src/[\" is invalid"),
        "{err}"
    );
}
