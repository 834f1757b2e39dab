//! `stats` over a ledger that holds every fate a proposal can meet: the text (an insta snapshot), `--json`, and the
//! `--workspace` and `--since` filters. The ledger is written by hand here, line for line as the worker writes it.

use crate::common::*;

/// One ledger line.
fn line(time: u64, kind: &str, ws: &str, outcome: &str, digest: &str, extra: &str) -> String {
    // An apply calls no model and reads nothing for one.
    let (i, o, t, ms, b) = if kind == "apply" {
        (0, 0, 0, 30, 0)
    } else {
        (900, 100, 1000, 2000, 4000)
    };
    format!(
        r#"{{"time":{time},"kind":"{kind}","workspace":"{ws}","provider":"llamacpp","model":"smollm2-135m","input_tokens":{i},"output_tokens":{o},"total_tokens":{t},"duration_ms":{ms},"outcome":"{outcome}","digest":"{digest}","bytes_read":{b}{extra}}}"#
    )
}

/// A ledger with every fate: applied, applied after repair, validation failed, refused at apply (stale), superseded
/// by an apply-time repair, expired, pending, refused at propose; one proposal of another format and workspace.
fn ledger() -> String {
    let j = r#","format":"json","expires":4000000000"#;
    let past = r#","format":"json","expires":1000"#;
    [
        line(100, "propose", "/w", "ok", "d1", j),
        line(110, "apply", "/w", "ok", "d1", ""),
        line(
            200,
            "propose",
            "/w",
            "ok",
            "d2",
            r#","format":"json","expires":4000000000,"repaired":true,"validation_passed":true"#,
        ),
        line(210, "apply", "/w", "ok", "d2", ""),
        line(300, "propose", "/w", "ok", "d3", j),
        line(310, "apply", "/w", "refused:validation_failed", "d3", ""),
        line(400, "propose", "/w", "ok", "d4", j),
        line(410, "apply", "/w", "refused:stale", "d4", ""),
        line(500, "propose", "/w", "ok", "d5", j),
        line(510, "apply", "/w", "refused:validation_failed", "d5", ""),
        line(
            511,
            "propose",
            "/w",
            "ok",
            "d6",
            r#","format":"json","expires":4000000000,"repaired":true,"repair_of":"d5""#,
        ),
        line(600, "propose", "/w", "ok", "d7", past),
        line(
            700,
            "propose",
            "/w",
            "refused:model_answer",
            "",
            r#","format":"json""#,
        ),
        line(
            1_796_083_300,
            "propose",
            "/other",
            "ok",
            "d8",
            r#","format":"udiff","expires":4000000000,"price_input_per_mtok":1.0,"price_output_per_mtok":2.0,"primary_price_input_per_mtok":3.0"#,
        ),
        line(1_796_083_310, "apply", "/other", "ok", "d8", ""),
    ]
    .join("\n")
        + "\n"
}

fn stats(args: &[&str], ledger: &std::path::Path) -> std::process::Output {
    Cli::new(["stats"]).args(args).ledger(ledger).run()
}

#[test]
fn stats_shows_every_fate_and_the_payoff_per_model_and_format() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ledger.jsonl");
    std::fs::write(&path, ledger()).unwrap();
    let out = stats(&[], &path);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out).replace(&path.display().to_string(), "<LEDGER>");
    insta::assert_snapshot!("stats_every_fate", text);

    let out = stats(&["--json"], &path);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let json = v["payoff"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["format"] == "json")
        .unwrap();
    assert_eq!(json["asked"], 8);
    assert_eq!(json["accepted"], 2);
    assert_eq!(
        json["fates"],
        serde_json::json!({"applied": 1, "applied_after_repair": 1, "validation_failed": 1,
            "refused_at_apply:stale": 1, "superseded": 1, "expired": 1, "pending": 1, "refused_at_propose": 1})
    );
    assert_eq!(
        json["model_tokens_per_accepted"], 4000.0,
        "8 calls of 1,000 tokens for 2 accepted"
    );
    assert_eq!(
        json["primary_tokens_saved_per_accepted"], 1000.0,
        "4,000 bytes read / 4"
    );
    assert_eq!(v["proposals"], 8, "the totals stay at the top level");
    // Unpriced calls have no money figures; the priced group has both.
    assert!(json["model_cost_per_accepted"].is_null());
    let udiff = v["payoff"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["format"] == "udiff")
        .unwrap();
    let close = |x: &serde_json::Value, want: f64| (x.as_f64().unwrap() - want).abs() < 1e-12;
    assert!(
        close(&udiff["model_cost_per_accepted"], 0.0011),
        "(900 x 1 + 100 x 2) / 10^6: {udiff}"
    );
    assert!(
        close(&udiff["primary_value_saved_per_accepted"], 0.003),
        "1,000 tokens saved x 3 / 10^6: {udiff}"
    );
}

#[test]
fn stats_filters_by_workspace_and_day_and_refuses_a_bad_day() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ledger.jsonl");
    std::fs::write(&path, ledger()).unwrap();
    let groups = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = stats(args, &path);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["payoff"].as_array().unwrap().clone()
    };
    let since = groups(&["--json", "--since", "2026-12-01"]);
    assert_eq!(since.len(), 1);
    assert_eq!(
        (since[0]["format"].as_str(), since[0]["accepted"].as_u64()),
        (Some("udiff"), Some(1))
    );
    let other = groups(&["--json", "--workspace", "/other"]);
    assert_eq!(other.len(), 1);
    let out = stats(&["--since", "last week"], &path);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--since \"last week\" is not a date: write YYYY-MM-DD"),
        "{}",
        stderr(&out)
    );
}

/// Through the binary (the scripted endpoint of `tests/common` as the model): a proposal the CLI made and applied is
/// counted as accepted, with its format.
#[test]
fn a_real_propose_and_apply_show_up_as_accepted() {
    let edit = r#"{"edits":[{"path":"src/value.py","old":"VALUE = 1","new":"VALUE = 2"}]}"#;
    let s = scripted(vec![Reply::chat(edit)]);
    let ws = Ws::new(&s.base_url, "[edit]\nformat = \"json\"\n");
    ws.write("src/value.py", "VALUE = 1\n");
    let d = tempfile::tempdir().unwrap();
    let ledger = d.path().join("ledger.jsonl");
    let patch = d.path().join("p.patch");
    let run = |c: Cli| c.ledger(&ledger).state(d.path().join("state")).run();
    let root = ws.root_str();
    let out = run(Cli::propose(&root).file("src/value.py").args([
        "--out".as_ref(),
        patch.as_os_str(),
        "--json".as_ref(),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = run(Cli::apply(&root, &patch, v["digest"].as_str().unwrap()));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(Cli::new(["stats", "--json", "--workspace", &root]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &v["payoff"][0];
    assert_eq!(
        (g["format"].as_str(), g["accepted"].as_u64()),
        (Some("json"), Some(1)),
        "{v}"
    );
    assert_eq!(g["fates"], serde_json::json!({"applied": 1}));
}

#[test]
fn stats_labels_proposals_refused_before_any_model_was_asked() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ledger.jsonl");
    let refused = r#"{"time":100,"kind":"propose","workspace":"/w","provider":"","model":"","input_tokens":0,"output_tokens":0,"total_tokens":0,"duration_ms":3,"outcome":"refused:scope","bytes_read":0}"#;
    std::fs::write(&path, format!("{refused}\n")).unwrap();
    let out = stats(&[], &path);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("no model asked (refused before a model was chosen)"),
        "{text}"
    );
    assert!(!text.contains(" /  ("), "{text}");
}
