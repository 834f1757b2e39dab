//! Validation commands from the policy file: run with `sh -c` in the workspace, each in its own process group, with a
//! timeout that kills the whole group, and their combined output captured to a bounded tail. Cancelling the call
//! (the [`Watch`]) kills the running command's group too.
//!
//! Only commands from the policy file reach this module; nothing a model wrote or a tool argument said is executed.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::provider::Watch;

/// The last bytes of a command's output kept in a result.
pub const OUTPUT_TAIL_BYTES: u64 = 4000;

/// How one validation command went.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CheckResult {
    pub command: String,
    pub passed: bool,
    /// The exit code; `None` when it was killed (timeout) or could not start.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last bytes of stdout and stderr together.
    pub output_tail: String,
}

/// Run `commands` in order in `dir`, stopping at the first failure. `hidden_env` names variables (provider keys)
/// removed from the commands' environment. When `watch` is cancelled, the running command's whole group is killed,
/// its result fails, and no further command starts.
pub fn run_all(
    commands: &[String],
    dir: &Path,
    timeout: Duration,
    hidden_env: &[String],
    watch: &Watch,
) -> Vec<CheckResult> {
    let mut out = Vec::new();
    for c in commands {
        if watch.is_cancelled() {
            break;
        }
        let r = run_one(c, dir, timeout, hidden_env, watch);
        let failed = !r.passed;
        out.push(r);
        if failed {
            break;
        }
    }
    out
}

/// The text of a failed check for people and models: what ran, how it ended, and the output tail.
pub fn failure_report(r: &CheckResult) -> String {
    format!(
        "`{}` {} after {} ms. Output tail:\n{}",
        r.command,
        if r.timed_out {
            "timed out".to_string()
        } else {
            match r.exit_code {
                Some(c) => format!("exited with {c}"),
                None => "was stopped before it exited".to_string(),
            }
        },
        r.duration_ms,
        r.output_tail
    )
}

fn run_one(
    command: &str,
    dir: &Path,
    timeout: Duration,
    hidden_env: &[String],
    watch: &Watch,
) -> CheckResult {
    let start = Instant::now();
    let fail = |why: String| CheckResult {
        command: command.to_string(),
        passed: false,
        exit_code: None,
        timed_out: false,
        duration_ms: start.elapsed().as_millis() as u64,
        output_tail: why,
    };
    let mut log = match tempfile::tempfile() {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot create an output file: {e}")),
    };
    let (out, err) = match (log.try_clone(), log.try_clone()) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return fail("cannot share the output file".into()),
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    for v in hidden_env {
        cmd.env_remove(v);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start `sh -c`: {e}")),
    };
    let pgid = child.id() as i32;
    let mut timed_out = false;
    let mut cancelled = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout || watch.is_cancelled() => {
                timed_out = start.elapsed() >= timeout;
                cancelled = !timed_out;
                // SAFETY: kill(2) with a negative pid signals the process group the child leads; no memory involved.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    // Whatever the outcome, leave no member of the group behind.
    // SAFETY: as above; ESRCH (group already gone) is fine.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let exit_code = status.and_then(|s| s.code());
    let mut tail = tail_of(&mut log);
    if timed_out {
        tail.push_str(&format!(
            "\n[killed after the {} s timeout]",
            timeout.as_secs()
        ));
    }
    if cancelled {
        tail.push_str("\n[killed: the call was cancelled]");
    }
    CheckResult {
        command: command.to_string(),
        passed: !timed_out && !cancelled && exit_code == Some(0),
        exit_code,
        timed_out,
        duration_ms: start.elapsed().as_millis() as u64,
        output_tail: tail,
    }
}

fn tail_of(f: &mut std::fs::File) -> String {
    let len = f.seek(SeekFrom::End(0)).unwrap_or(0);
    let from = len.saturating_sub(OUTPUT_TAIL_BYTES);
    let _ = f.seek(SeekFrom::Start(from));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    if from > 0 {
        format!("[{from} earlier bytes cut]\n{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_fails_and_stops_at_the_first_failure() {
        let dir = std::env::temp_dir();
        let r = run_all(
            &[
                "true".into(),
                "echo out; echo err >&2; exit 3".into(),
                "true".into(),
            ],
            &dir,
            Duration::from_secs(10),
            &[],
            &Watch::default(),
        );
        assert_eq!(r.len(), 2);
        assert!(r[0].passed);
        assert!(!r[1].passed);
        assert_eq!(r[1].exit_code, Some(3));
        assert!(r[1].output_tail.contains("out") && r[1].output_tail.contains("err"));
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-alive");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let r = run_all(
            &[cmd],
            dir.path(),
            Duration::from_millis(300),
            &[],
            &Watch::default(),
        );
        assert!(r[0].timed_out && !r[0].passed);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "a background child survived the timeout");
    }

    #[test]
    fn output_is_capped_to_its_tail() {
        let r = run_all(
            &["yes x | head -c 100000; exit 1".into()],
            &std::env::temp_dir(),
            Duration::from_secs(10),
            &[],
            &Watch::default(),
        );
        assert!(r[0].output_tail.len() < OUTPUT_TAIL_BYTES as usize + 100);
        assert!(r[0].output_tail.starts_with("[96000 earlier bytes cut]"));
    }

    #[test]
    fn hidden_variables_do_not_reach_commands() {
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("LLW_TEST_SECRET_VAR", "s3cret") };
        let r = run_all(
            &["test -z \"$LLW_TEST_SECRET_VAR\"".into()],
            &std::env::temp_dir(),
            Duration::from_secs(10),
            &["LLW_TEST_SECRET_VAR".into()],
            &Watch::default(),
        );
        assert!(r[0].passed, "{:?}", r[0]);
    }

    #[test]
    fn cancelling_kills_the_whole_group_and_starts_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-alive");
        let after = dir.path().join("next-ran");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let watch = Watch::default();
        let flag = watch.cancelled.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let start = Instant::now();
        let r = run_all(
            &[cmd, format!("touch {}", after.display())],
            dir.path(),
            Duration::from_secs(60),
            &[],
            &watch,
        );
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(r.len(), 1);
        assert!(!r[0].passed && !r[0].timed_out, "{:?}", r[0]);
        assert!(r[0].output_tail.contains("cancelled"), "{:?}", r[0]);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(
            !marker.exists(),
            "a background child survived the cancellation"
        );
        assert!(!after.exists(), "a command started after the cancellation");
    }
}
