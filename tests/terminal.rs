//! What `propose` and `apply` print for a person: coloured on a terminal (a real pseudo-terminal, through util-linux
//! `script`) or with `--color always`, plain when piped, with `NO_COLOR` or `--color never`, and `--json` never
//! coloured; the progress line while waiting for the model only on a terminal; the ledger's path printed. The model
//! is a scripted endpoint (a deterministic answer, so the snapshot holds); the real server is in `real_model.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, with its message"
)]

mod common;

use common::*;

const EDIT_JSON: &str =
    r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;

fn sample(base_url: &str) -> Ws {
    let ws = Ws::new(base_url, "[edit]\nformat = \"json\"\n");
    ws.write("src/value.py", "VALUE = 1\n");
    ws
}

/// The printed text with what changes from run to run (ids, timings, paths) replaced by placeholders.
fn stable(text: &str, ws: &Ws, url: &str) -> String {
    text.lines()
        .map(|l| {
            let plain = strip(l);
            let label = plain.split_whitespace().next().unwrap_or_default();
            match label {
                "proposal" | "time" | "ledger" | "window" => {
                    // Keep the label and its padding (and the colour reset after it); replace the value.
                    let mut cut = l.find(label).unwrap_or(0) + label.len();
                    while let Some(rest) = l.get(cut..) {
                        if rest.starts_with(' ') {
                            cut += 1;
                        } else if rest.starts_with("\u{1b}[0m") {
                            cut += 4;
                        } else {
                            break;
                        }
                    }
                    format!("{}<{label}>", &l[..cut])
                }
                _ => l.replace(&ws.root_str(), "<WS>").replace(url, "<URL>"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without its ANSI escape sequences.
fn strip(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn propose_args(ws: &Ws) -> Vec<String> {
    [
        "propose",
        "--workspace-root",
        &ws.root_str(),
        "--task",
        "Set VALUE to 2",
        "--accept",
        "VALUE is 2",
        "--complexity",
        "low",
        "--file",
        "src/value.py",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run(args: &[String], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(BIN);
    c.args(args)
        .env_remove("LOCAL_LLM_CONFIG")
        .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn propose_piped_is_plain_and_forced_colour_is_coloured() {
    let s = scripted(vec![Reply::chat(EDIT_JSON), Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url);
    let piped = run(&propose_args(&ws), &[]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    let plain = stdout(&piped);
    assert!(
        !plain.contains('\u{1b}'),
        "piped output has escapes: {plain:?}"
    );
    assert!(
        !stderr(&piped).contains("waiting for the model"),
        "no progress when stderr is not a terminal"
    );
    assert!(
        plain.contains(&format!("ledger    {} (one line", test_ledger().display())),
        "{plain}"
    );
    insta::assert_snapshot!("propose_piped", stable(&plain, &ws, &s.base_url));

    let mut args = propose_args(&ws);
    args.push("--color=always".into());
    let forced = run(&args, &[]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    let coloured = stdout(&forced);
    assert!(
        coloured.contains("\u{1b}[32m+VALUE = 2\u{1b}[0m"),
        "{coloured:?}"
    );
    assert!(
        coloured.contains("\u{1b}[31m-VALUE = 1\u{1b}[0m"),
        "{coloured:?}"
    );
    insta::assert_snapshot!("propose_colour_forced", stable(&coloured, &ws, &s.base_url));
    // Stripped of its colour, it is the piped text.
    assert_eq!(
        stable(&strip(&coloured), &ws, &s.base_url),
        stable(&plain, &ws, &s.base_url)
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
}

#[test]
fn no_color_and_never_win_and_json_is_never_coloured() {
    let s = scripted(vec![
        Reply::chat(EDIT_JSON),
        Reply::chat(EDIT_JSON),
        Reply::chat(EDIT_JSON),
    ]);
    let ws = sample(&s.base_url);
    let out = run(
        &propose_args(&ws),
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert!(
        !stdout(&out).contains('\u{1b}'),
        "NO_COLOR: {:?}",
        stdout(&out)
    );
    let mut args = propose_args(&ws);
    args.push("--color=never".into());
    let out = run(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(
        !stdout(&out).contains('\u{1b}'),
        "--color never: {:?}",
        stdout(&out)
    );
    let mut args = propose_args(&ws);
    args.extend(["--json".to_string(), "--color=always".to_string()]);
    let out = run(&args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--json prints plain JSON");
    assert!(v["patch"].as_str().unwrap().contains("+VALUE = 2"));
}

#[test]
fn on_a_real_terminal_the_patch_is_coloured_and_the_wait_is_shown() {
    // A slow answer, streamed, so the progress line has time to draw.
    let s = scripted(vec![Reply::streamed(
        &[
            r#"{"edits":[{"path":"src/value.py","#,
            r#""old":"VALUE = 1","new":"VALUE = 2"}]}"#,
        ],
        700,
    )]);
    let ws = sample(&s.base_url);
    let command = std::iter::once(BIN.to_string())
        .chain(propose_args(&ws))
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("LOCAL_LLM_LEDGER", test_ledger())
        .env("LOCAL_LLM_STATE_DIR", test_state())
        .env_remove("LOCAL_LLM_CONFIG")
        .env_remove("LOCAL_LLM_ALLOWED_ROOTS")
        .output()
        .expect("util-linux `script` runs the CLI on a pseudo-terminal");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\u{1b}[32m+VALUE = 2\u{1b}[0m"), "{text:?}");
    assert!(
        text.contains("waiting for the model"),
        "no progress line: {text:?}"
    );
}

#[test]
fn apply_prints_the_files_the_checks_and_the_ledger() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = sample(&s.base_url);
    let patch = ws.root().join("../change.patch");
    let mut args = propose_args(&ws);
    args.extend([
        "--out".to_string(),
        patch.display().to_string(),
        "--json".to_string(),
    ]);
    let out = run(&args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let digest = v["digest"].as_str().unwrap();
    let args: Vec<String> = [
        "apply",
        "--workspace-root",
        &ws.root_str(),
        "--patch",
        &patch.display().to_string(),
        "--digest",
        digest,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run(&args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("wrote     src/value.py"), "{text}");
    assert!(
        text.contains(&format!("ledger    {}", test_ledger().display())),
        "{text}"
    );
    let _ = std::fs::remove_file(patch);
}
