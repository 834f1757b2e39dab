//! What confinement costs a check (a benchmark, not a test: it asserts nothing about timings).
//!
//! The same command runs, alternating, through the three launches `checks::run_all` uses: `process-group` (a plain
//! `sh -c` in its own process group, what `isolation = "copy"` does), `confined` (bubblewrap around a sandbox folder:
//! what validation on propose does) and `pid-namespace` (bubblewrap with only a PID namespace, in the workspace: what
//! an apply's checks do), and a fourth, `confined-nofilter`: the confinement without its seccomp filter (the filter's
//! own cost is the difference). Two commands: `true` (the launch's own cost) and `python3 -c pass` (a small real
//! check).
//! One warmup and 40 runs of each; wall time per check in ms (spawn to output drained), median reported with the ratio
//! to `process-group`.
//!
//! ```text
//! cargo bench --locked --bench confine
//! ```
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

mod common;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use local_llm_delegator::checks::{self, Run};
use local_llm_delegator::confine::{self, Isolation, Launch, Private};
use local_llm_delegator::provider::Watch;
use local_llm_delegator::secret::Secret;

const RUNS: usize = 40;

fn time_one(launch: &Launch, command: &str, dir: &Path) -> Result<f64, String> {
    let start = Instant::now();
    let r = checks::run_all(
        &[command.to_string()],
        dir,
        &Run {
            launch,
            timeout: Duration::from_secs(60),
            secret: &Secret::none(),
        },
        &Watch::default(),
    );
    let ms = common::ms_since(start);
    match r.first() {
        Some(c) if c.passed => Ok(ms),
        Some(c) => Err(format!(
            "`{command}` failed ({}): {}",
            c.isolation, c.output
        )),
        None => Err("no result".into()),
    }
}

fn run() -> Result<(), String> {
    common::print_machine("confinement cost of one check");
    let b = confine::bubblewrap().map_err(|e| e.to_string())?;
    println!("bubblewrap: {} ({})", b.version, b.path.display());
    let ws = tempfile::tempdir().map_err(|e| e.to_string())?;
    let sb = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plain = Launch {
        wrapper: Vec::new(),
        env: confine::environment(&[], None, None),
        isolation: "process-group",
        seccomp: false,
        disk: None,
    };
    let read: Vec<String> = local_llm_delegator::policy::DEFAULT_SANDBOX_READ
        .iter()
        .map(|s| s.to_string())
        .collect();
    let commands = ["true".to_string(), "python3 -c pass".to_string()];
    let confined = confine::for_proposal(
        Isolation::Confined,
        sb.path(),
        &Private {
            workspace: ws.path().to_path_buf(),
            state: None,
        },
        &confine::Project {
            sandbox_read: &read,
            commands: &commands,
            tmp_bytes: local_llm_delegator::policy::DEFAULT_SANDBOX_TMP_MIB * 1024 * 1024,
            write_bytes: local_llm_delegator::policy::DEFAULT_SANDBOX_WRITE_MIB * 1024 * 1024,
            copy_bytes: 0,
        },
        &[],
    )
    .map_err(|e| e.to_string())?;
    let apply = confine::for_apply(ws.path(), &[]);
    let unfiltered = Launch {
        seccomp: false,
        ..confined.clone()
    };
    let launches: [(&str, &Launch, &Path); 4] = [
        ("process-group", &plain, ws.path()),
        ("confined", &confined, sb.path()),
        ("pid-namespace", &apply, ws.path()),
        ("confined-nofilter", &unfiltered, sb.path()),
    ];
    for command in ["true", "python3 -c pass"] {
        println!("\n`{command}`, wall ms per check:");
        let mut samples = vec![Vec::new(); launches.len()];
        for (_, l, d) in &launches {
            time_one(l, command, d)?;
        }
        for _ in 0..RUNS {
            for (i, (_, l, d)) in launches.iter().enumerate() {
                samples[i].push(time_one(l, command, d)?);
            }
        }
        common::stats_header("launch", 18);
        let base = common::Stats::of(&samples[0]).median;
        for (i, (name, _, _)) in launches.iter().enumerate() {
            let s = common::Stats::of(&samples[i]);
            common::stats_row(name, 18, &s);
            if i > 0 {
                println!(
                    "   {:<18}ratio {:.2}, +{} ms",
                    "",
                    s.median / base,
                    common::fmt(s.median - base)
                );
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("confine benchmark: {e}");
            ExitCode::FAILURE
        }
    }
}
