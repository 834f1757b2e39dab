//! Unit tests of the propose stages, each on its own. The model is an in-process scripted provider (a test double of
//! the [`Provider`] trait, not a server): the stages are tested for what they do with an answer, and the real
//! servers are exercised end to end in `tests/`.

use std::path::Path;
use std::sync::Mutex;

use super::*;
use crate::provider::{ChatRequest, Completion, Provider, Watch};
use crate::service::estimate_tokens;
use crate::task::{Complexity, Task};

/// Answers with the scripted texts in order, and counts the calls.
struct Scripted {
    answers: Mutex<Vec<String>>,
    calls: Mutex<usize>,
}

impl Scripted {
    fn new(answers: &[&str]) -> Scripted {
        Scripted {
            answers: Mutex::new(answers.iter().rev().map(|s| s.to_string()).collect()),
            calls: Mutex::new(0),
        }
    }

    fn calls(&self) -> usize {
        *self.calls.lock().unwrap()
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete(&self, req: &ChatRequest, _: &Watch) -> Result<Completion> {
        *self.calls.lock().unwrap() += 1;
        let content = self.answers.lock().unwrap().pop().unwrap_or_default();
        let sent: u64 = req
            .messages
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum();
        Ok(Completion {
            content,
            finish_reason: Some("stop".into()),
            usage: Usage {
                input_tokens: sent,
                output_tokens: 10,
                total_tokens: sent + 10,
            },
            model: req.model.clone(),
            cached_input_tokens: 0,
            key_echoed: None,
        })
    }
}

fn workspace(policy_extra: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let text = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\n{policy_extra}"
    );
    let path = d.path().join("local-llm-worker.toml");
    std::fs::write(&path, &text).unwrap();
    // The test's own policy, trusted for this process (nothing recorded in a state folder).
    crate::trust::allow_in_process(&path, &crate::digest::sha256_hex(text.as_bytes()));
    std::fs::write(d.path().join("a.py"), "x = 1\ny = 2\n").unwrap();
    d
}

fn request(root: &Path, files: &[&str]) -> ProposeRequest {
    ProposeRequest {
        workspace_root: root.to_string_lossy().into_owned(),
        task: Task {
            task: "set y to 3".into(),
            acceptance_criteria: vec!["y is 3".into()],
            complexity: Complexity::Low,
            files: files.iter().map(|s| s.to_string()).collect(),
            ..Task::default()
        },
        ..ProposeRequest::default()
    }
}

/// The first answer of `model`, read, with validation run when the policy has it.
fn validated_draft(p: &Prepared, model: &Scripted) -> Draft {
    let mut entry = ledger::Entry::new("propose", "/w", Instant::now());
    let answer = ask(
        &p.policy,
        model,
        &p.chat(p.messages.clone()),
        &Call::default(),
        &mut entry,
    )
    .unwrap();
    let cand = read(p, &answer.completion.content, &Watch::default()).unwrap();
    let mut d = Draft::new(cand, answer);
    if p.validates() {
        d.validation = validate(p, &d.cand, &Watch::default()).unwrap();
    }
    d
}

const FIX: &str = "--- a/a.py\n+++ b/a.py\n@@ @@\n x = 1\n-y = 2\n+y = 3\n";
const WRONG: &str = "--- a/a.py\n+++ b/a.py\n@@ @@\n x = 1\n-y = 2\n+y = 4\n";
const CHECK: &str = "[edit]\nformat = \"udiff\"\n\n[validation]\ncommands = [\"grep -q 'y = 3' a.py\"]\non_propose = true\nisolation = \"copy\"\n\n[repair]\nattempts = 1\n";

#[test]
fn prepare_refuses_before_any_model_call() {
    let d = workspace("");
    let mut req = request(d.path(), &[]);
    let e = prepare(&req, &Call::default()).err().unwrap();
    assert!(e.to_string().contains("files is empty"), "{e}");
    req.task.files = vec!["../x.py".into()];
    assert_eq!(
        prepare(&req, &Call::default()).err().unwrap().kind(),
        crate::error::ErrorKind::Scope
    );
    let unknown: ProposeRequest = serde_json::from_value(serde_json::json!({
        "workspace_root": d.path(), "task": "t", "acceptance_criteria": ["a"], "complexity": "low",
        "files": ["a.py"], "fils": ["b.py"]
    }))
    .unwrap();
    let e = prepare(&unknown, &Call::default()).err().unwrap();
    assert!(e.to_string().contains("takes no field \"fils\""), "{e}");
}

#[test]
fn ask_refuses_a_prompt_over_the_window_without_calling() {
    let d = workspace("[models]\ncontext_window = 2200\n");
    let p = prepare(&request(d.path(), &["a.py"]), &Call::default()).unwrap();
    let model = Scripted::new(&[FIX]);
    let mut entry = ledger::Entry::new("propose", "/w", Instant::now());
    let e = ask(
        &p.policy,
        &model,
        &p.chat(p.messages.clone()),
        &Call::default(),
        &mut entry,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("over the context window"), "{e}");
    assert_eq!(model.calls(), 0);
}

#[test]
fn read_turns_an_answer_into_a_dry_run_patch_or_refuses_it() {
    let d = workspace("[edit]\nformat = \"udiff\"\n");
    let p = prepare(&request(d.path(), &["a.py"]), &Call::default()).unwrap();
    let c = read(&p, FIX, &Watch::default()).unwrap();
    assert!(
        c.patch_text.starts_with("diff --git a/a.py b/a.py\nindex "),
        "{}",
        c.patch_text
    );
    assert!(
        c.patch_text
            .ends_with("@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"),
        "{}",
        c.patch_text
    );
    let e = read(&p, "I cannot do that.", &Watch::default())
        .err()
        .unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::ModelAnswer);
}

#[test]
fn a_quadratic_answer_read_after_a_cancellation_stops_with_cancelled() {
    let d = workspace("[edit]\nformat = \"udiff\"\n");
    let p = prepare(&request(d.path(), &["a.py"]), &Call::default()).unwrap();
    let watch = Watch::default();
    watch
        .cancelled
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let e = read(&p, &FIX.repeat(1000), &watch).err().unwrap();
    assert_eq!(e.kind(), crate::error::ErrorKind::Cancelled, "{e}");
}

#[test]
fn validate_runs_the_checks_on_a_copy_and_leaves_the_workspace_alone() {
    let d = workspace(CHECK);
    let p = prepare(&request(d.path(), &["a.py"]), &Call::default()).unwrap();
    let good = validate(
        &p,
        &read(&p, FIX, &Watch::default()).unwrap(),
        &Watch::default(),
    )
    .unwrap();
    assert!(good.iter().all(|r| r.passed), "{good:?}");
    let bad = validate(
        &p,
        &read(&p, WRONG, &Watch::default()).unwrap(),
        &Watch::default(),
    )
    .unwrap();
    assert!(!bad[0].passed);
    assert_eq!(
        std::fs::read_to_string(d.path().join("a.py")).unwrap(),
        "x = 1\ny = 2\n"
    );
}

#[test]
fn repair_makes_one_call_and_spends_the_round_whatever_it_answers() {
    let d = workspace(CHECK);
    let p = prepare(&request(d.path(), &["a.py"]), &Call::default()).unwrap();
    // A repair answer that reads: it replaces the candidate and passes.
    let model = Scripted::new(&[WRONG, FIX]);
    let mut d1 = validated_draft(&p, &model);
    assert!(!d1.passed());
    repair(&p, &model, &mut d1, &Call::default(), "/w").unwrap();
    assert_eq!(model.calls(), 2);
    assert!(d1.passed() && d1.repaired && d1.repair_spent);
    assert_eq!(d1.usage.output_tokens, 20, "both calls' tokens count");
    // A repair answer that does not read: the candidate stays, the round is spent, the reason is kept.
    let model = Scripted::new(&[WRONG, "no idea"]);
    let mut d2 = validated_draft(&p, &model);
    repair(&p, &model, &mut d2, &Call::default(), "/w").unwrap();
    assert_eq!(model.calls(), 2);
    assert!(!d2.passed() && !d2.repaired && d2.repair_spent);
    assert!(d2.repair_error.is_some() && d2.repair_reason.is_some());
}

#[test]
fn record_holds_one_entry_with_the_repair_budget() {
    let d = workspace("[edit]\nformat = \"udiff\"\n");
    let req = request(d.path(), &["a.py"]);
    let p = prepare(&req, &Call::default()).unwrap();
    let service = Service::new();
    let r = service.record(
        &p,
        &req,
        &Call::default(),
        validated_draft(&p, &Scripted::new(&[FIX])),
        Instant::now(),
    );
    assert_eq!(r.digest, crate::digest::sha256_hex(r.patch.as_bytes()));
    assert!(service.store.take_repair(&r.proposal_id).is_some());
    assert!(service.store.take_repair(&r.proposal_id).is_none());
    let mut d = validated_draft(&p, &Scripted::new(&[FIX]));
    d.repair_spent = true;
    let spent = service.record(&p, &req, &Call::default(), d, Instant::now());
    assert!(service.store.take_repair(&spent.proposal_id).is_none());
    assert!(
        service
            .store
            .claim(&spent.proposal_id, &spent.digest)
            .is_ok()
    );
}

#[test]
fn the_pins_go_to_the_first_place_but_one_in_four_to_the_next_places_once_each() {
    let spot = |line: usize| crate::locate_rank::Spot {
        path: "m.py".into(),
        line,
        text: format!("line {line}"),
        insert: false,
    };
    let lines = |n: usize, ranked: &[usize]| -> Vec<usize> {
        let spots: Vec<_> = ranked.iter().map(|&l| spot(l)).collect();
        super::prepare::spread(&spots, n)
            .iter()
            .map(|s| s.line)
            .collect()
    };
    assert_eq!(
        lines(3, &[7, 2, 9]),
        vec![7, 7, 7],
        "the default 4 candidates"
    );
    assert_eq!(lines(1, &[7, 2, 9]), vec![7]);
    assert_eq!(lines(4, &[7, 2, 9, 4]), vec![7, 7, 7, 2]);
    assert_eq!(lines(7, &[7, 2, 9, 4, 5, 6, 8]), vec![7, 7, 7, 7, 7, 7, 2]);
    assert_eq!(lines(3, &[7]), vec![7, 7, 7], "one place takes every pin");
    assert!(lines(3, &[]).is_empty());
}
