//! What validating K candidates costs against validating one: the sandbox copy is made once per proposal and reset
//! between candidates (only the selected files put back), so K = 4 should cost far less than 4 copies.
//!
//! Each run is one `local-llm-worker propose --json` through the release binary against the scripted endpoint (a
//! scripted fake that answers at once: model time is about zero and is subtracted anyway), in a workspace of
//! `CANDIDATES_FILES` files (default 3,000 of 1 KiB, so the copy dominates), with one validation command that fails
//! at once (`grep -q NEVER v.py`: every candidate is validated, none passes; the command's own run is a few ms).
//! K = 1 gets one answer; K = 4 gets four distinct ones (VALUE = 2..5), parallel = 1.
//!
//! `cargo bench --locked --bench candidates` after `cargo build --release --locked`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::scripted::{Reply, scripted};

fn main() -> std::process::ExitCode {
    common::main_with(|bin| {
        common::print_machine("candidates: validating K answers in one sandbox copy");
        run(bin)
    })
}

fn edit(n: u32) -> String {
    format!(r#"{{"edits":[{{"path":"v.py","old":"VALUE = 1","new":"VALUE = {n}"}}]}}"#)
}

/// One propose with `k` candidates: (wall ms - model ms, candidates validated).
fn once(bin: &Path, root: &Path, k: u32) -> Result<(f64, u64), String> {
    let s = scripted((2..2 + k).map(|n| Reply::chat(&edit(n))).collect());
    std::fs::write(
        root.join("local-llm-worker.toml"),
        format!(
            "[provider]\nkind = \"llamacpp\"\nbase_url = \"{}\"\n\n[validation]\ncommands = [\"grep -q NEVER v.py\"]\n\
             on_propose = true\n\n[sampling]\ncandidates = {k}\nparallel = 1\n",
            s.base_url
        ),
    )
    .map_err(|e| e.to_string())?;
    let state = root.join("../state");
    common::trust(bin, root, &state)?;
    let started = Instant::now();
    let out = Command::new(bin)
        .args(["propose", "--workspace-root"])
        .arg(root)
        .args([
            "--task",
            "Set VALUE",
            "--accept",
            "it is set",
            "--complexity",
            "low",
            "--file",
            "v.py",
            "--json",
        ])
        .env("LOCAL_LLM_LEDGER", root.join("../ledger.jsonl"))
        .env("LOCAL_LLM_STATE_DIR", &state)
        .output()
        .map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    if v["validation_passed"] != false {
        return Err(format!("unexpected result: {v}"));
    }
    let checks: f64 = v["validation"].as_array().map_or(0, |a| {
        a.iter()
            .filter_map(|r| r["duration_ms"].as_u64())
            .sum::<u64>()
    }) as f64;
    let (validated, checks_ms) = if k == 1 {
        (1, checks)
    } else {
        (
            v["candidates"]["validated"].as_u64().unwrap_or(0),
            v["candidates"]["checks_ms"].as_f64().unwrap_or(0.0),
        )
    };
    Ok((
        wall - v["model_ms"].as_f64().unwrap_or(0.0) - checks_ms,
        validated,
    ))
}

fn run(bin: &Path) -> Result<(), String> {
    let files: usize = std::env::var("CANDIDATES_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path().join("ws");
    for i in 0..files {
        let d = root.join(format!("pkg{:02}", i % 50));
        std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        std::fs::write(d.join(format!("m{i:05}.py")), "x = 1\n".repeat(170))
            .map_err(|e| e.to_string())?;
    }
    std::fs::write(root.join("v.py"), "VALUE = 1\n").map_err(|e| e.to_string())?;
    let root = root.canonicalize().map_err(|e| e.to_string())?;
    println!("  workspace {files} files of 1 KiB, validation `grep -q NEVER v.py` (fails at once)");
    let rounds = 7;
    let mut per_k = Vec::new();
    for k in [1u32, 4] {
        let mut samples = Vec::new();
        let mut validated = 0;
        // One warm-up, then the rounds.
        once(bin, &root, k)?;
        for _ in 0..rounds {
            let (ms, n) = once(bin, &root, k)?;
            samples.push(ms);
            validated = n;
        }
        let st = common::Stats::of(&samples);
        println!(
            "  K = {k}: {validated} validated, propose minus model and check time: median {:.1} ms (min {:.1}, p90 {:.1}, n {})",
            st.median, st.min, st.p90, st.n
        );
        per_k.push(st.median);
    }
    println!(
        "  K = 4 / K = 1: x{:.2} (the target: at most x1.30)",
        per_k[1] / per_k[0]
    );
    println!("  load     {} at end", common::loadavg());
    Ok(())
}
