//! Validation commands from the policy file: run with `sh -c` as a [`Launch`] from [`crate::confine`] says (confined
//! around a sandbox copy on propose, in the workspace's own PID namespace or process group at apply time), with a
//! timeout and cancellation that kill the whole check, and their combined output captured in memory as a bounded
//! head and tail with the count of bytes left out between them. Nothing is written to disk.
//!
//! Only commands from the policy file reach this module; nothing a model wrote or a tool argument said is executed
//! as a command (the code they run on a proposal is the model's, which is why it runs confined).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::confine::{DiskBound, Launch};
use crate::error::CheckFailure;
use crate::provider::Watch;
use crate::secret::Secret;

/// The first bytes of a check's output kept in its result.
pub const OUTPUT_HEAD_BYTES: usize = 16 * 1024;
/// The last bytes of a check's output kept in its result.
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;
/// How long the output is still read after the check's own process ended (a process that left the check's group
/// may hold it open; it is not waited for longer).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often a running check looks at its timeout and at the call's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// How one validation command went.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CheckResult {
    /// The command, as the policy file gives it.
    pub command: String,
    /// Whether it exited with 0 (neither killed nor stopped).
    pub passed: bool,
    /// The exit code; `None` when it was killed (timeout, cancellation) or could not start.
    pub exit_code: Option<i32>,
    /// Whether it was killed at its timeout.
    pub timed_out: bool,
    /// How long it ran.
    pub duration_ms: u64,
    /// How it was isolated: `confined` (bubblewrap: no network, its own PID namespace, only the sandbox writable),
    /// `pid-namespace` (apply time: in the workspace, no descendant outlives it) or `process-group`.
    pub isolation: String,
    /// Its stdout and stderr together: the first and the last bytes, with a line saying how many bytes between
    /// them were left out.
    pub output: String,
    /// Bytes of output it wrote in all.
    pub output_bytes: u64,
    /// Bytes of output not kept in `output`.
    pub output_dropped: u64,
}

/// How to run the checks: the launch, the timeout per command, and the key to redact from their output.
pub struct Run<'a> {
    /// How each command is started (confined or not, with which environment).
    pub launch: &'a Launch,
    /// How long each command may run before its whole process group is killed.
    pub timeout: Duration,
    /// The provider key, redacted from the output.
    pub secret: &'a Secret,
}

/// Run `commands` in order in `dir`, stopping at the first failure. When `watch` is cancelled, the running check is
/// killed, its result fails, and no further command starts.
pub fn run_all(commands: &[String], dir: &Path, run: &Run<'_>, watch: &Watch) -> Vec<CheckResult> {
    let mut out = Vec::new();
    for c in commands {
        if watch.is_cancelled() {
            break;
        }
        let r = run_one(c, dir, run, watch);
        let failed = !r.passed;
        out.push(r);
        if failed {
            break;
        }
    }
    out
}

/// The text of a failed check for people and models: what ran, how it ended, and its output.
pub fn failure_report(r: &CheckResult) -> String {
    failure(r).to_string()
}

/// How `r` failed, as the refusal of a failed apply carries it.
pub fn failure(r: &CheckResult) -> CheckFailure {
    CheckFailure {
        command: r.command.clone(),
        exit_code: r.exit_code,
        timed_out: r.timed_out,
        duration_ms: r.duration_ms,
        output: r.output.clone(),
    }
}

/// Where the last `max` bytes of `bytes` start (0 when there are no more than `max`), moved forward past at most
/// three UTF-8 continuation bytes: a character cut in two there is left out whole rather than kept in part. The
/// output kept of a check and the output a repair round shows the model are cut with it.
pub fn tail_start(bytes: &[u8], max: usize) -> usize {
    let cut = bytes.len().saturating_sub(max);
    let mut start = cut;
    // A continuation byte is 0b10xx_xxxx; a character has at most three of them.
    while start < bytes.len() && start - cut < 3 && bytes[start] & 0xC0 == 0x80 {
        start += 1;
    }
    start
}

/// The output captured so far: the first bytes, the last bytes, and how many there were in all.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < OUTPUT_HEAD_BYTES {
            let n = bytes.len().min(OUTPUT_HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= OUTPUT_TAIL_BYTES {
            self.tail.clear();
            self.tail
                .extend_from_slice(&bytes[bytes.len() - OUTPUT_TAIL_BYTES..]);
            return;
        }
        self.tail.extend_from_slice(bytes);
        // Amortised: trim only when twice the size kept.
        if self.tail.len() > 2 * OUTPUT_TAIL_BYTES {
            let cut = self.tail.len() - OUTPUT_TAIL_BYTES;
            self.tail.drain(..cut);
        }
    }

    /// The last [`OUTPUT_TAIL_BYTES`] at most, from a char boundary.
    fn kept_tail(&self) -> &[u8] {
        &self.tail[tail_start(&self.tail, OUTPUT_TAIL_BYTES)..]
    }

    fn dropped(&self) -> u64 {
        self.total - (self.head.len() + self.kept_tail().len()) as u64
    }

    /// The kept output as text, with `secret` redacted. The head and the tail are redacted apart when bytes were
    /// left out between them, and a piece of the key cut in two there is taken off too.
    fn render(&self, secret: &Secret) -> String {
        let dropped = self.dropped();
        if dropped == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(self.kept_tail());
            return secret.redact(&String::from_utf8_lossy(&all));
        }
        let head = secret.redact(&String::from_utf8_lossy(&self.head));
        let tail = secret.redact(&String::from_utf8_lossy(self.kept_tail()));
        format!(
            "{}\n[... {dropped} bytes of output left out ({} in all) ...]\n{}",
            secret.trim_partial_end(&head),
            self.total,
            secret.trim_partial_start(&tail)
        )
    }
}

fn run_one(command: &str, dir: &Path, run: &Run<'_>, watch: &Watch) -> CheckResult {
    let start = Instant::now();
    let isolation = run.launch.isolation.to_string();
    let (child, reader) = match start_check(command, dir, run.launch) {
        Ok(started) => started,
        Err(why) => {
            return CheckResult {
                command: command.to_string(),
                passed: false,
                exit_code: None,
                timed_out: false,
                duration_ms: start.elapsed().as_millis() as u64,
                isolation,
                output: why,
                output_bytes: 0,
                output_dropped: 0,
            };
        }
    };
    let (capture, done_rx) = capture_output(reader);
    let end = await_exit(child, start, run.timeout, run.launch.disk.as_ref(), watch);
    let mut notes = drain_notes(&done_rx, &capture);
    let cap = capture.lock().unwrap_or_else(|p| p.into_inner());
    let mut output = cap.render(run.secret);
    if end.timed_out {
        notes.push(format!(
            "[killed after the {} s timeout]",
            run.timeout.as_secs()
        ));
    }
    if end.cancelled {
        notes.push("[killed: the call was cancelled]".to_string());
    }
    if let Some(d) = run.launch.disk.as_ref().filter(|_| end.over_disk) {
        notes.push(d.note());
    }
    for n in notes {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&n);
    }
    let exit_code = end.status.and_then(|s| s.code());
    CheckResult {
        command: command.to_string(),
        passed: !end.timed_out && !end.cancelled && !end.over_disk && exit_code == Some(0),
        exit_code,
        timed_out: end.timed_out,
        duration_ms: start.elapsed().as_millis() as u64,
        isolation,
        output,
        output_bytes: cap.total,
        output_dropped: cap.dropped(),
    }
}

/// Start `sh -c command` in `dir` as `launch` says, in a process group of its own, its stdout and stderr on one pipe
/// (so their lines keep their order; read in memory, never to a file). `Err` is the line that says why it did not
/// run.
fn start_check(
    command: &str,
    dir: &Path,
    launch: &Launch,
) -> Result<(Child, std::io::PipeReader), String> {
    let (reader, writer) = std::io::pipe().map_err(|e| {
        format!("[the check did not run: no pipe for its output could be made: {e}]")
    })?;
    // The seccomp filter on a descriptor of its own, inherited by bubblewrap alone (it is closed here once it started).
    let filter = match (launch.seccomp, crate::confine::seccomp::program()) {
        (true, Some(p)) => Some(crate::confine::seccomp::descriptor(&p).map_err(|e| {
            format!("[the check did not run: its seccomp filter could not be handed over: {e}]")
        })?),
        _ => None,
    };
    let writer2 = writer.try_clone().map_err(|e| {
        format!("[the check did not run: its output pipe could not be shared: {e}]")
    })?;
    // With a wrapper: `bwrap OPTIONS -- sh -c COMMAND`; without: `sh -c COMMAND`.
    let mut cmd = match launch.wrapper.split_first() {
        Some((program, options)) => {
            let mut c = Command::new(program);
            if let Some(fd) = &filter {
                c.arg("--seccomp")
                    .arg(crate::confine::raw_fd(fd).to_string());
            }
            c.args(options).arg("sh");
            c
        }
        None => Command::new("sh"),
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    let spawned = cmd.spawn();
    // Our copies of the pipe's write end must go, or the reader never sees the end of the output.
    drop(cmd);
    drop(filter);
    let child = spawned.map_err(|e| {
        format!(
            "[the check did not run: cannot start {}: {e}]",
            launch
                .wrapper
                .first()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|| "sh".into())
        )
    })?;
    Ok((child, reader))
}

/// Read the check's output into a [`Capture`] on a thread of its own; the receiver hears once the output ended (or
/// could not be read further).
fn capture_output(
    mut reader: std::io::PipeReader,
) -> (Arc<Mutex<Capture>>, mpsc::Receiver<std::io::Result<()>>) {
    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done_rx) = mpsc::channel::<std::io::Result<()>>();
    let shared = capture.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let r = loop {
            match reader.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => shared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let _ = done_tx.send(r);
    });
    (capture, done_rx)
}

/// How a started check ended.
struct End {
    /// Its exit status; `None` when it could not be awaited.
    status: Option<ExitStatus>,
    timed_out: bool,
    cancelled: bool,
    /// Whether it wrote past its [`DiskBound`] (killed then, or found so once it ended).
    over_disk: bool,
}

/// Wait for the check started at `start` to exit, killing its whole process group when `timeout` passes, `watch`
/// is cancelled or it writes past `disk`; whatever the outcome, no member of the group is left behind (in a
/// confinement, the whole PID namespace ends with its first process).
fn await_exit(
    mut child: Child,
    start: Instant,
    timeout: Duration,
    disk: Option<&DiskBound>,
    watch: &Watch,
) -> End {
    let pgid = rustix::process::Pid::from_child(&child);
    let kill_group = || {
        // ESRCH (the group is already gone) is fine.
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    };
    // The exit is awaited on its own thread, so a quick check costs no polling delay; the timeout and the
    // cancellation are looked at every CANCEL_POLL meanwhile.
    let (exit_tx, exit_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });
    let mut timed_out = false;
    let mut cancelled = false;
    let mut over_disk = false;
    let status = loop {
        let left = timeout.saturating_sub(start.elapsed());
        match exit_rx.recv_timeout(left.min(CANCEL_POLL)) {
            Ok(r) => break r.ok(),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                over_disk = disk.is_some_and(DiskBound::exceeded);
                if start.elapsed() >= timeout || watch.is_cancelled() || over_disk {
                    timed_out = !over_disk && start.elapsed() >= timeout;
                    cancelled = !over_disk && !timed_out;
                    kill_group();
                    break exit_rx.recv().ok().and_then(|r| r.ok());
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
        }
    };
    kill_group();
    // A check quicker than one look still ends up measured.
    over_disk = over_disk || disk.is_some_and(DiskBound::exceeded);
    End {
        status,
        timed_out,
        cancelled,
        over_disk,
    }
}

/// Wait a little ([`DRAIN_GRACE`]) for the rest of the output; the notes to add when it could not all be read.
fn drain_notes(
    done_rx: &mpsc::Receiver<std::io::Result<()>>,
    capture: &Mutex<Capture>,
) -> Vec<String> {
    match done_rx.recv_timeout(DRAIN_GRACE) {
        Ok(Ok(())) => Vec::new(),
        Ok(Err(e)) => vec![format!(
            "[the output could not be captured after {} bytes: {e}; this says nothing about the check itself]",
            capture.lock().unwrap_or_else(|p| p.into_inner()).total
        )],
        Err(_) => vec![
            "[a process that left the check's group still holds its output open; it was not waited for \
             (install bubblewrap so that checks run in a PID namespace of their own)]"
                .to_string(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::{self, Isolation, Private};

    /// A plain launch (process group, allowlisted environment).
    fn plain() -> Launch {
        Launch {
            wrapper: Vec::new(),
            env: confine::environment(&[], None, None),
            isolation: "process-group",
            seccomp: false,
            disk: None,
        }
    }

    fn run_with(launch: &Launch, cmds: &[&str], dir: &Path, timeout: Duration) -> Vec<CheckResult> {
        let cmds: Vec<String> = cmds.iter().map(|c| c.to_string()).collect();
        run_all(
            &cmds,
            dir,
            &Run {
                launch,
                timeout,
                secret: &Secret::none(),
            },
            &Watch::default(),
        )
    }

    /// A confinement around `sandbox`; these tests need bubblewrap (`.ci/run` installs it).
    fn confined(sandbox: &Path, workspace: &Path) -> Launch {
        confined_with(sandbox, workspace, &[])
    }

    /// A confinement around `sandbox` for checks running `commands` (their programs' folders are shown).
    fn confined_with(sandbox: &Path, workspace: &Path, commands: &[String]) -> Launch {
        confine::for_proposal(
            Isolation::Confined,
            sandbox,
            &Private {
                workspace: workspace.to_path_buf(),
                state: None,
            },
            &confine::Project {
                sandbox_read: &[],
                commands,
                tmp_bytes: 64 * 1024 * 1024,
                write_bytes: 1024 * 1024 * 1024,
                copy_bytes: 0,
            },
            &[],
        )
        .expect("these tests need bubblewrap: apt-get install bubblewrap")
    }

    #[test]
    fn passes_fails_and_stops_at_the_first_failure() {
        let dir = std::env::temp_dir();
        let r = run_with(
            &plain(),
            &["true", "echo out; echo err >&2; exit 3", "true"],
            &dir,
            Duration::from_secs(10),
        );
        assert_eq!(r.len(), 2);
        assert!(r[0].passed);
        assert!(!r[1].passed);
        assert_eq!(r[1].exit_code, Some(3));
        assert_eq!(r[1].output, "out\nerr\n");
        assert_eq!(r[1].isolation, "process-group");
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-alive");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let r = run_with(&plain(), &[&cmd], dir.path(), Duration::from_millis(300));
        assert!(r[0].timed_out && !r[0].passed);
        assert!(r[0].output.contains("timeout"), "{:?}", r[0]);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(!marker.exists(), "a background child survived the timeout");
    }

    #[test]
    fn output_is_kept_as_head_and_tail_with_the_count_left_out() {
        let r = run_with(
            &plain(),
            &["echo FIRST; yes x | head -c 100000; echo; echo LAST; exit 1"],
            &std::env::temp_dir(),
            Duration::from_secs(10),
        );
        let o = &r[0];
        assert_eq!(o.output_bytes, 6 + 100_000 + 1 + 5);
        assert_eq!(
            o.output_dropped,
            o.output_bytes - (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) as u64
        );
        assert!(o.output.starts_with("FIRST\nx\nx\n"), "{}", &o.output[..20]);
        assert!(o.output.ends_with("x\n\nLAST\n"), "the tail is kept");
        assert!(
            o.output.contains(&format!(
                "[... {} bytes of output left out",
                o.output_dropped
            )),
            "the cut is said"
        );
        assert!(o.output.len() < OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES + 200);
    }

    #[test]
    fn the_tail_starts_on_a_char_boundary() {
        let text = "aé€𝄞";
        for max in 0..=text.len() + 1 {
            let start = tail_start(text.as_bytes(), max);
            assert!(text.is_char_boundary(start), "{max}: {start}");
            assert!(text.len() - start <= max, "{max}: {start}");
            assert!(start < text.len().saturating_sub(max) + 4, "{max}: {start}");
        }
        assert_eq!(tail_start(b"abc", 3), 0);
        // Not UTF-8: at most three bytes more are left out.
        assert_eq!(tail_start(&[0x80; 10], 5), 8);
    }

    #[test]
    fn a_character_cut_at_the_start_of_the_kept_tail_is_left_out_whole() {
        // Two-byte characters and an odd total: the last OUTPUT_TAIL_BYTES start inside a character.
        let r = run_with(
            &plain(),
            &["i=0; while [ $i -lt 30000 ]; do printf 'é'; i=$((i+1)); done; echo; exit 1"],
            &std::env::temp_dir(),
            Duration::from_secs(10),
        );
        let o = &r[0];
        assert_eq!(o.output_bytes, 60_001);
        assert_eq!(
            o.output_dropped,
            o.output_bytes - (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES - 1) as u64
        );
        assert!(
            !o.output.contains('\u{FFFD}'),
            "a piece of a character is kept"
        );
        assert!(o.output.ends_with("éé\n"));
    }

    #[test]
    fn a_gigabyte_of_output_is_counted_and_uses_no_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let launch = Launch {
            env: confine::environment(&[], None, Some(tmp.path())),
            ..plain()
        };
        let r = run_with(
            &launch,
            &["head -c 1000000000 /dev/zero | tr '\\0' y; echo; echo END"],
            tmp.path(),
            Duration::from_secs(120),
        );
        let o = &r[0];
        assert!(o.passed, "{}", &o.output[o.output.len() - 200..]);
        assert_eq!(o.output_bytes, 1_000_000_000 + 1 + 4);
        assert_eq!(
            o.output_dropped,
            o.output_bytes - (OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES) as u64
        );
        assert!(o.output.ends_with("yyy\nEND\n"));
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "nothing was written to the temporary folder"
        );
    }

    #[test]
    fn only_allowlisted_variables_reach_commands() {
        // SAFETY: no other test of this module reads or writes this variable.
        unsafe { std::env::set_var("LLW_TEST_SECRET_VAR", "s3cret") };
        let r = run_with(
            &plain(),
            &["test -z \"$LLW_TEST_SECRET_VAR\" && test -n \"$PATH\""],
            &std::env::temp_dir(),
            Duration::from_secs(10),
        );
        assert!(r[0].passed, "{:?}", r[0]);
    }

    #[test]
    fn the_key_is_redacted_from_the_output() {
        let secret = Secret::new("sk-test-0123456789abcdef");
        let r = run_all(
            &["echo token sk-test-0123456789abcdef; exit 1".to_string()],
            &std::env::temp_dir(),
            &Run {
                launch: &plain(),
                timeout: Duration::from_secs(10),
                secret: &secret,
            },
            &Watch::default(),
        );
        assert_eq!(r[0].output, "token [redacted]\n");
    }

    #[test]
    fn a_key_cut_in_two_where_output_was_left_out_leaves_no_piece() {
        let key = "sk-test-0123456789abcdef";
        let secret = Secret::new(key);
        // The key starts 6 bytes before the end of the kept head, and ends 6 bytes into the kept tail.
        let cmd = format!(
            "head -c {} /dev/zero | tr '\\0' x; printf '{key}'; head -c 100000 /dev/zero | tr '\\0' y; \
             printf '{key}'; head -c {} /dev/zero | tr '\\0' z; exit 1",
            OUTPUT_HEAD_BYTES - 6,
            OUTPUT_TAIL_BYTES - 6
        );
        let r = run_all(
            &[cmd],
            &std::env::temp_dir(),
            &Run {
                launch: &plain(),
                timeout: Duration::from_secs(10),
                secret: &secret,
            },
            &Watch::default(),
        );
        let o = &r[0].output;
        assert!(o.contains("bytes of output left out"), "{}", &o[..100]);
        assert!(!o.contains(&key[..6]), "the start of the key is at the cut");
        assert!(
            !o.contains(&key[key.len() - 6..]),
            "the end of the key is at the cut"
        );
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
        let launch = plain();
        let r = run_all(
            &[cmd, format!("touch {}", after.display())],
            dir.path(),
            &Run {
                launch: &launch,
                timeout: Duration::from_secs(60),
                secret: &Secret::none(),
            },
            &watch,
        );
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(r.len(), 1);
        assert!(!r[0].passed && !r[0].timed_out, "{:?}", r[0]);
        assert!(r[0].output.contains("cancelled"), "{:?}", r[0]);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(
            !marker.exists(),
            "a background child survived the cancellation"
        );
        assert!(!after.exists(), "a command started after the cancellation");
    }

    /// Daemons that leave the check's process group: one started with `setsid`, one double-forked.
    const DAEMONS: &str = "setsid sh -c 'sleep 1; touch late-setsid' </dev/null >/dev/null 2>&1 & \
                           (sh -c 'sleep 1; touch late-fork' </dev/null >/dev/null 2>&1 &) ; ";

    fn assert_no_daemon_wrote(dir: &Path) {
        std::thread::sleep(Duration::from_millis(1800));
        for m in ["late-setsid", "late-fork"] {
            assert!(
                !dir.join(m).exists(),
                "a daemon ({m}) outlived the check and wrote to {}",
                dir.display()
            );
        }
    }

    #[test]
    fn confined_daemons_die_with_the_check_when_it_ends() {
        let ws = tempfile::tempdir().unwrap();
        let sb = tempfile::tempdir().unwrap();
        let launch = confined(sb.path(), ws.path());
        let r = run_with(
            &launch,
            &[&format!("{DAEMONS} exit 0")],
            sb.path(),
            Duration::from_secs(10),
        );
        assert!(r[0].passed, "{:?}", r[0]);
        assert_eq!(r[0].isolation, "confined");
        assert_no_daemon_wrote(sb.path());
    }

    #[test]
    fn confined_daemons_die_with_the_check_when_it_times_out() {
        let ws = tempfile::tempdir().unwrap();
        let sb = tempfile::tempdir().unwrap();
        let launch = confined(sb.path(), ws.path());
        let r = run_with(
            &launch,
            &[&format!("{DAEMONS} sleep 30")],
            sb.path(),
            Duration::from_millis(400),
        );
        assert!(r[0].timed_out, "{:?}", r[0]);
        assert_no_daemon_wrote(sb.path());
    }

    #[test]
    fn approved_checks_at_apply_time_leave_no_daemon_behind() {
        let ws = tempfile::tempdir().unwrap();
        let launch = confine::for_apply(ws.path(), &[]);
        assert_eq!(
            launch.isolation, "pid-namespace",
            "these tests need bubblewrap: apt-get install bubblewrap"
        );
        let r = run_with(
            &launch,
            &[&format!("{DAEMONS} echo ok > written")],
            ws.path(),
            Duration::from_secs(10),
        );
        assert!(r[0].passed, "{:?}", r[0]);
        assert!(
            ws.path().join("written").exists(),
            "an approved check writes in the workspace"
        );
        assert_no_daemon_wrote(ws.path());
        let r = run_with(
            &launch,
            &[&format!("{DAEMONS} sleep 30")],
            ws.path(),
            Duration::from_millis(400),
        );
        assert!(r[0].timed_out, "{:?}", r[0]);
        assert_no_daemon_wrote(ws.path());
    }

    /// A process standing in for the worker: its environment (what `/proc/PID/environ` shows) holds `value`.
    fn stand_in_worker(value: &str) -> Child {
        Command::new("sleep")
            .arg("30")
            .env("LLW_STAND_IN_KEY", value)
            .spawn()
            .unwrap()
    }

    #[test]
    fn root_checks_lose_every_capability_and_cannot_uncover_the_host_proc() {
        if !rustix::process::geteuid().is_root() {
            eprintln!(
                "skipped: this test is about a worker running as root (as in CI); run it as root"
            );
            return;
        }
        let value = "stand-in-key-6c1f0e2d";
        let mut worker = stand_in_worker(value);
        let ws = tempfile::tempdir().unwrap();
        let sb = tempfile::tempdir().unwrap();
        // The probe: uncover the host's /proc (lazy unmount, a new mount over it), then look for the key.
        let probe = format!(
            "umount -l /proc 2>&1; mount -t proc proc /proc 2>&1; \
             grep -l {value} /proc/[0-9]*/environ 2>/dev/null | grep -q . && echo UNCOVERED; \
             grep -E '^Cap(Prm|Eff)' /proc/self/status"
        );
        // The control: unconfined, the probe finds the stand-in's environment.
        let control = run_with(&plain(), &[&probe], ws.path(), Duration::from_secs(10));
        let apply = confine::for_apply(ws.path(), &[]);
        let proposal = confined(sb.path(), ws.path());
        let seen: Vec<CheckResult> = [(&apply, ws.path()), (&proposal, sb.path())]
            .into_iter()
            .map(|(l, d)| run_with(l, &[&probe], d, Duration::from_secs(10)).remove(0))
            .collect();
        let _ = (worker.kill(), worker.wait());
        assert!(
            control[0].output.contains("UNCOVERED"),
            "{}",
            control[0].output
        );
        for r in seen {
            assert!(
                !r.output.contains(value) && !r.output.contains("UNCOVERED"),
                "{}: the host's /proc was uncovered: {}",
                r.isolation,
                r.output
            );
            assert!(
                r.output.contains("CapPrm:\t0000000000000000")
                    && r.output.contains("CapEff:\t0000000000000000"),
                "{}: the check keeps capabilities: {}",
                r.isolation,
                r.output
            );
        }
    }

    #[test]
    fn dev_shm_is_private_and_writable_for_python_multiprocessing() {
        let ws = tempfile::tempdir().unwrap();
        let sb = tempfile::tempdir().unwrap();
        // A lock and a pool: POSIX semaphores in /dev/shm, as the check's user (nobody when the worker is root).
        let cmd = "python3 -c 'import multiprocessing as mp, os; l = mp.Lock(); \
                   p = mp.Pool(2); print(sum(p.map(abs, [-1, -2]))); p.close(); p.join(); \
                   open(\"/dev/shm/llw-probe\", \"w\").write(\"x\")'";
        let launch = confined_with(sb.path(), ws.path(), &[cmd.to_string()]);
        let r = run_with(&launch, &[cmd], sb.path(), Duration::from_secs(60));
        assert!(r[0].passed, "{}", r[0].output);
        assert_eq!(r[0].output.trim(), "3");
        assert!(
            !Path::new("/dev/shm/llw-probe").exists(),
            "the check wrote into the host's /dev/shm"
        );
    }

    #[test]
    fn approved_checks_cannot_read_the_workers_environment() {
        // What /proc shows of a process is the environment it started with: a stand-in started with the key (a
        // variable set in this process later would be in no /proc file at all).
        let value = "worker-secret-value-3b9a";
        let mut worker = stand_in_worker(value);
        let ws = tempfile::tempdir().unwrap();
        let probe = format!(
            "cat /proc/{}/environ 2>&1; grep -l {value} /proc/[0-9]*/environ 2>/dev/null; ls /proc | grep -c '^[0-9]'",
            worker.id()
        );
        let control = run_with(&plain(), &[&probe], ws.path(), Duration::from_secs(10));
        let launch = confine::for_apply(ws.path(), &[]);
        let r = run_with(&launch, &[&probe], ws.path(), Duration::from_secs(10));
        let _ = (worker.kill(), worker.wait());
        assert!(control[0].output.contains(value), "{}", control[0].output);
        assert!(!r[0].output.contains(value), "{}", r[0].output);
        let count: usize = r[0].output.lines().last().unwrap().trim().parse().unwrap();
        assert!(
            count <= 5,
            "the check sees {count} processes: {}",
            r[0].output
        );
    }
}
