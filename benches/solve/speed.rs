//! The solve bench's time measure (`SOLVE_SPEED=N`): how long one proposal takes at the defaults against one
//! unvalidated answer, with a real model server.
//!
//! The file is ~20 lines of Python with one wrong operator and a test that fails until it is fixed (the policy's
//! check). Each proposal writes the file with its own first line (`# run N, plain`), so no proposal's file comes
//! from the server's prompt cache of a previous one (the instructions before it may, as they do for any two
//! proposals). The two
//! set-ups alternate, each run in a fresh workspace:
//! - `plain`: `on_propose = false`, `[repair] attempts = 0`, `[sampling] candidates = 1`: one unvalidated answer;
//! - `defaults`: the policy sets its check and nothing else.
//!
//! Prints one line per run (wall time, model time, candidates asked, validated and passed, repaired) and the
//! medians of both and their ratio.

use std::time::Instant;

use local_llm_delegator::service::{Call, ProposeRequest, Service};
use serde_json::json;

const SOURCE: &str = r#""""Prices and stock of a small shop."""

PRICES = {"apple": 3, "pear": 4, "plum": 2}


def total(items):
    """The price of a basket: item name -> count."""
    cost = 0
    for name, count in items.items():
        cost += PRICES[name] + count
    return cost


def cheapest():
    return min(PRICES, key=PRICES.get)


def in_stock(stock, name):
    return stock.get(name, 0) > 0
"#;

// The basket tells the operators apart (3 * 3 + 4 * 1 = 13, where 3 + 3 + 4 + 1 = 11); the one it had before (2
// apples and a pear: 10 both ways) passed on the file as it is, so a candidate "passed" by breaking nothing.
const TEST: &str = "from shop import total, cheapest, in_stock\nassert total({\"apple\": 3, \"pear\": 1}) == 13\n\
                    assert cheapest() == \"plum\"\nassert in_stock({\"pear\": 1}, \"pear\")\n";

const TASK: &str =
    "In shop.py, total adds each price to its count; it must multiply them (PRICES[name] * count).";

/// One proposal: (wall ms, model ms, the line for the table).
fn once(url: &str, run: usize, plain: bool) -> Result<(u64, u64, String), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let setup = if plain {
        "on_propose = false\n\n[repair]\nattempts = 0\n\n[sampling]\ncandidates = 1\n"
    } else {
        ""
    };
    let policy = format!(
        "[provider]\nkind = \"llamacpp\"\nbase_url = \"{url}\"\n\n[validation]\ncommands = [\"python3 test_shop.py\"]\n\
         timeout_secs = 20\n{setup}"
    );
    let policy_path = root.join("local-llm-worker.toml");
    std::fs::write(&policy_path, &policy).map_err(|e| e.to_string())?;
    local_llm_delegator::trust::allow_in_process(
        &policy_path,
        &local_llm_delegator::digest::sha256_hex(policy.as_bytes()),
    );
    let source = format!(
        "# run {run}, {}\n{SOURCE}",
        if plain { "plain" } else { "defaults" }
    );
    std::fs::write(root.join("shop.py"), source).map_err(|e| e.to_string())?;
    std::fs::write(root.join("test_shop.py"), TEST).map_err(|e| e.to_string())?;
    let req: ProposeRequest = serde_json::from_value(json!({
        "workspace_root": root.to_string_lossy(),
        "task": TASK,
        "acceptance_criteria": ["total({\"apple\": 2, \"pear\": 1}) returns 10"],
        "complexity": "low",
        "files": ["shop.py"],
    }))
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let r = Service::new().propose(&req, &Call::default());
    let wall = started.elapsed().as_millis() as u64;
    Ok(match r {
        Ok(r) => {
            let v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
            let c = &v["candidates"];
            let line = format!(
                "validation {:<5} repaired {:<5} asked {} validated {} passed {} checks {} ms",
                v["validation_passed"],
                r.repaired,
                c["asked"],
                c["validated"],
                c["passed"],
                c["checks_ms"]
            );
            (wall, r.model_ms, line)
        }
        Err(e) => (
            wall,
            0,
            format!("refused ({}): {}", e.kind(), first(&e.to_string())),
        ),
    })
}

fn first(s: &str) -> String {
    s.chars().take(100).collect()
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2] as f64,
        n => (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0,
    }
}

/// `runs` runs of each set-up, alternating, then the medians.
pub fn run(url: &str, runs: usize) -> Result<(), String> {
    crate::common::print_machine(
        "solve speed: a proposal at the defaults against one unvalidated answer",
    );
    println!("  server   {url}");
    let (mut plain, mut defaults) = (Vec::new(), Vec::new());
    for run in 0..runs {
        for is_plain in [true, false] {
            let (wall, model, line) = once(url, run, is_plain)?;
            let name = if is_plain { "plain" } else { "defaults" };
            println!(
                "  {:>2} {name:<8} {:>6.1} s wall {:>6.1} s model  {line}",
                run + 1,
                wall as f64 / 1000.0,
                model as f64 / 1000.0
            );
            if is_plain {
                plain.push(wall);
            } else {
                defaults.push(wall);
            }
        }
    }
    let (p, d) = (median(&mut plain), median(&mut defaults));
    println!(
        "  median   plain {:.1} s | defaults {:.1} s | ratio {:.2}x ({runs} runs each)",
        p / 1000.0,
        d / 1000.0,
        if p > 0.0 { d / p } else { 0.0 }
    );
    Ok(())
}
