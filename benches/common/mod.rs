//! Helpers shared by the bench binaries (`overhead`, `apply`, `reader`): the machine header, the load average,
//! summary statistics, the worker binary's path and the instant scripted endpoint. Each bench includes it with `mod common;`; not every bench
//! uses every helper.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]
#![allow(dead_code)]

pub mod mcp;
/// The scripted OpenAI-compatible endpoint the tests use too (a scripted fake, not the real server).
#[path = "../../tests/common/scripted.rs"]
pub mod scripted;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Start the instant scripted endpoint (a scripted fake, not a model), which answers every chat request at once
/// with `content`.
pub fn start_endpoint(content: &str) -> Result<scripted::Scripted, String> {
    scripted::instant(content)
        .map_err(|e| format!("cannot start the scripted endpoint on 127.0.0.1: {e}"))
}

/// The body of a bench's `main`: find the release binary, run the bench with it, report an error and fail.
pub fn main_with(run: impl FnOnce(&Path) -> Result<(), String>) -> std::process::ExitCode {
    match worker_bin().and_then(|bin| run(&bin)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The release binary: `$LLW_BIN` if set, else `<CARGO_MANIFEST_DIR>/target/release/local-llm-worker`.
/// Trust the policy of the workspace at `root`, as it is now, with `local-llm-worker trust` (in the state folder
/// `state`): a policy that names commands is used only once trusted.
pub fn trust(bin: &Path, root: &Path, state: &Path) -> Result<(), String> {
    let out = std::process::Command::new(bin)
        .args(["trust", "--workspace-root"])
        .arg(root)
        .env("LOCAL_LLM_STATE_DIR", state)
        .env_remove("LOCAL_LLM_CONFIG")
        .output()
        .map_err(|e| e.to_string())?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "local-llm-worker trust: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

pub fn worker_bin() -> Result<PathBuf, String> {
    let bin = match std::env::var_os("LLW_BIN") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/local-llm-worker"),
    };
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "the worker binary {} does not exist; build it first: cargo build --release --locked",
            bin.display()
        ))
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Print what the figures were measured on: CPU, cores, kernel, rustc, and the load average now.
pub fn print_machine(title: &str) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!("{title}");
    println!("  cpu      {cpu}, {cores} cores (available parallelism)");
    println!("  kernel   {}", command_line("uname", &["-sr"]));
    println!("  rustc    {}", command_line("rustc", &["--version"]));
    println!("  load     {} (1, 5, 15 min) at start", loadavg());
}

/// Summary of a series of samples.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub p10: f64,
    pub p90: f64,
}

impl Stats {
    /// Median (mean of the two middle values for an even count), min, max, nearest-rank p10 and p90.
    pub fn of(samples: &[f64]) -> Stats {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        assert!(n > 0, "no samples");
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let rank = |p: usize| v[(n * p).div_ceil(100).clamp(1, n) - 1];
        Stats {
            n,
            median,
            min: v[0],
            max: v[n - 1],
            p10: rank(10),
            p90: rank(90),
        }
    }
}

/// CPU time (user + system) of the reaped children of this process so far, in ms: the difference around a child's
/// whole life (spawn to reaping) is that child's CPU time, which the load of other processes barely changes.
pub fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass; RUSAGE_CHILDREN is a valid `who`.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// Milliseconds since `start`.
pub fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// The header of a [`stats_row`] table, with `unit` in the first column's title.
pub fn stats_header(first: &str, width: usize) {
    println!(
        "   {:<width$}{:>10}{:>10}{:>10}{:>10}{:>10}{:>5}",
        first, "median", "min", "p10", "p90", "max", "n"
    );
}

/// One row: name, median, min, p10, p90, max, n.
pub fn stats_row(name: &str, width: usize, s: &Stats) {
    println!(
        "   {:<width$}{:>10}{:>10}{:>10}{:>10}{:>10}{:>5}",
        name,
        fmt(s.median),
        fmt(s.min),
        fmt(s.p10),
        fmt(s.p90),
        fmt(s.max),
        s.n
    );
}

/// A number with 3 significant decimals below 10, 2 below 1000, none above.
pub fn fmt(x: f64) -> String {
    if x.abs() < 10.0 {
        format!("{x:.3}")
    } else if x.abs() < 1000.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.0}")
    }
}
