//! Sandbox setup benchmark (a benchmark, not a test: it asserts nothing about timings).
//!
//! It generates a workspace of 10,000 files in 100 folders, about 200 MB (sizes cycling 2, 8, 20 and 50 KiB, of
//! pseudo-random bytes), then times, in the same run and alternating, `sandbox::create_in` (what `propose` does before
//! validating) and `cp -a` of the same tree into the same folder: one warmup and 5 runs each, median reported with
//! the ratio (dirty pages are flushed with `sync`, untimed, before each). Nothing in the tree is ignored or skipped,
//! so both copy the same bytes. It also says whether FICLONE (copy-on-write clones) was used: on a filesystem without
//! clones (ext4, tmpfs) both fall back to plain copies.
//!
//! Run it with:
//!
//! ```text
//! cargo bench --locked --bench sandbox
//! ```
//!
//! The tree and the copies go under `$LLW_BENCH_DIR` if set (pick a btrfs or XFS folder to see clones), else the
//! system's temporary folder.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap stops the run with its message"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use local_llm_delegator::provider::Watch;
use local_llm_delegator::sandbox;

const FILES: usize = 10_000;
const FOLDERS: usize = 100;
const SIZES: [usize; 4] = [2 << 10, 8 << 10, 20 << 10, 50 << 10];
const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Fill the tree; returns its bytes.
fn generate(root: &Path) -> std::io::Result<u64> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut total = 0u64;
    for d in 0..FOLDERS {
        let dir = root.join(format!("pkg{d:03}/src"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES / FOLDERS {
            let size = SIZES[(d * 7 + f) % SIZES.len()];
            let mut buf = Vec::with_capacity(size);
            while buf.len() < size {
                // xorshift64*
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                buf.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
            }
            buf.truncate(size);
            std::fs::write(dir.join(format!("m{f:03}.rs")), &buf)?;
            total += size as u64;
        }
    }
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"bench\"\n")?;
    Ok(total)
}

fn fs_type(dir: &Path) -> String {
    Command::new("df")
        .arg("--output=fstype")
        .arg(dir)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)
                .map(|l| l.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn run() -> Result<(), String> {
    let base = std::env::var_os("LLW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("llw-bench-sandbox-")
        .tempdir_in(&base)
        .map_err(|e| format!("cannot make a folder in {}: {e}", base.display()))?;
    let root = work.path().join("ws");
    let out = work.path().join("copies");
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let bytes = generate(&root).map_err(|e| format!("cannot generate the workspace: {e}"))?;
    let root = root.canonicalize().map_err(|e| e.to_string())?;
    println!(
        "workspace: {} files, {:.1} MB in {} (filesystem {}), generated in {:.1} s",
        FILES + 1,
        bytes as f64 / 1e6,
        work.path().display(),
        fs_type(work.path()),
        started.elapsed().as_secs_f64()
    );
    let skip: Vec<String> = ["target", "node_modules", ".git"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let watch = Watch::default();
    let mut sandbox_times = Vec::new();
    let mut sandbox_removal = Vec::new();
    let mut cp_times = Vec::new();
    let mut cp_removal = Vec::new();
    let mut walks = Vec::new();
    let mut cloned = 0;
    let mut copied_files = 0;
    // Dirty pages are flushed (untimed) before each timed copy, so neither pays for the other's writeback.
    let sync = || {
        let _ = Command::new("sync").status();
    };
    for i in 0..=RUNS {
        sync();
        let t = Instant::now();
        let sb = sandbox::create_in(&out, &root, &skip, &|_| false, &watch)
            .map_err(|e| e.to_string())?;
        let setup = t.elapsed();
        cloned = sb.report().cloned;
        copied_files = sb.report().files;
        let walk = Duration::from_millis(sb.report().walk_ms);
        let t = Instant::now();
        drop(sb);
        let removal = t.elapsed();

        let dst = out.join(format!("cp-{i}"));
        sync();
        let t = Instant::now();
        let st = Command::new("cp")
            .arg("-a")
            .arg(&root)
            .arg(&dst)
            .status()
            .map_err(|e| format!("cannot run cp: {e}"))?;
        let cp = t.elapsed();
        if !st.success() {
            return Err(format!("cp -a failed: {st}"));
        }
        let t = Instant::now();
        std::fs::remove_dir_all(&dst).map_err(|e| e.to_string())?;
        let cp_rm = t.elapsed();
        if i == 0 {
            println!(
                "warmup: sandbox {:.0} ms, cp -a {:.0} ms",
                ms(setup),
                ms(cp)
            );
            continue;
        }
        println!(
            "run {i}: sandbox {:.0} ms (walk {:.0} ms, removal {:.0} ms), cp -a {:.0} ms (rm {:.0} ms)",
            ms(setup),
            ms(walk),
            ms(removal),
            ms(cp),
            ms(cp_rm)
        );
        sandbox_times.push(setup);
        walks.push(walk);
        sandbox_removal.push(removal);
        cp_times.push(cp);
        cp_removal.push(cp_rm);
    }
    let (s, c) = (median(sandbox_times), median(cp_times));
    println!(
        "median of {RUNS}: sandbox setup {:.0} ms (of which the walk {:.0} ms), cp -a {:.0} ms, ratio sandbox/cp = \
         {:.2} (removal: sandbox {:.0} ms, rm of the cp copy {:.0} ms)",
        ms(s),
        ms(median(walks)),
        ms(c),
        s.as_secs_f64() / c.as_secs_f64(),
        ms(median(sandbox_removal)),
        ms(median(cp_removal)),
    );
    if cloned > 0 {
        println!("FICLONE: used for {cloned} of {copied_files} files (copy-on-write clones)");
    } else {
        println!(
            "FICLONE: not used: this filesystem ({}) has no copy-on-write clones, so the sandbox made plain copies \
             (copy_file_range); set LLW_BENCH_DIR to a btrfs or XFS folder to measure clones",
            fs_type(work.path())
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sandbox benchmark: {e}");
            ExitCode::FAILURE
        }
    }
}
