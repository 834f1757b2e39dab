//! Confinement: how a validation command is started, so that code nobody approved yet cannot reach what it must not.
//!
//! A validation command is trusted (it comes from the policy file), but what it runs on a proposal is the model's
//! code, and the model is hostile (SECURITY.md). On propose (and for every candidate and the repair round) the
//! checks therefore run inside a bubblewrap (`bwrap`) confinement around the sandbox copy ([`for_proposal`]):
//!
//! - no network (a network namespace of its own: even the host's loopback is out of reach);
//! - its own PID namespace with a fresh `/proc` (no `/proc` of the worker or of any other process; every descendant,
//!   daemons included, dies when the check ends or is killed, and when the worker dies);
//! - the filesystem read-only, with the sandbox copy the only writable folder besides a fresh, empty HOME (at the
//!   same path, so toolchains found through it still are), a fresh `/tmp` and a private `/dev/shm`, all discarded
//!   afterwards and each bounded in size (`[validation] sandbox_tmp_mib`); what the checks add to the copy's
//!   filesystem is measured and bounded too (`sandbox_write_mib`, [`DiskBound`]);
//! - hidden behind empty read-only folders: the real workspace, the worker's state folder, the sandbox's parent
//!   folder (other proposals' copies), `/home`, `/root`, `/run`, `/var/tmp`, `/mnt`, `/media` and `/srv`; what comes
//!   back, read-only at its real path with credential files at its top masked, is the toolchain folders
//!   `[validation] sandbox_read` names and the project's own environment ([`project`]): its virtualenvs (also at
//!   the same place in the copy), the toolchain folders `CARGO_HOME`, `RUSTUP_HOME`, `PYENV_ROOT`, `GOPATH`,
//!   `JAVA_HOME`, `NVM_DIR` name, and the folders holding the programs its checks start;
//! - no Unix socket can be made ([`seccomp`]), so none on a visible filesystem can be reached;
//! - no capabilities, a new session (no terminal to inject keystrokes into), and an environment built from an
//!   allowlist ([`environment`]), never the worker's own.
//!
//! Approved checks at apply time run in the workspace with the allowlisted environment and, when bubblewrap works
//! here, in a PID namespace of their own ([`for_apply`]), so no descendant outlives them, and as root with no
//! capability at all (no `umount` to uncover the host's `/proc`); otherwise in a process group, as before.
//!
//! Why bubblewrap: it is what Flatpak and Claude Code's Linux sandbox use, it is one small Debian package, it needs
//! no daemon, it builds every namespace above from one command line, and it fails closed (a check it cannot confine
//! does not run). Landlock + seccomp (Codex's choice) would confine the filesystem without a mount namespace but
//! give no PID namespace, which the "no `/proc` of the worker, no surviving daemon" promise needs.
//!
//! This module only builds command lines; [`crate::checks`] runs them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub mod project;
pub mod seccomp;

/// The environment variable that names the bubblewrap binary (default: `bwrap` on PATH).
pub const BWRAP_ENV: &str = "LOCAL_LLM_BWRAP";

/// How validation on propose runs the model's code (`[validation] isolation`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// In a bubblewrap confinement; refused when none is available.
    #[default]
    Confined,
    /// In a plain temporary copy, unconfined: the model's code runs with the worker's rights (read your files, reach
    /// the network). Only when the policy says so explicitly.
    Copy,
}

impl Isolation {
    /// Its name in the policy file (`[validation] isolation`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Confined => "confined",
            Isolation::Copy => "copy",
        }
    }
}

/// Folders hidden from a confined check (when they exist), on top of the workspace, the state folder and the
/// sandbox's parent.
const HIDDEN: &[&str] = &[
    "/home", "/root", "/run", "/var/tmp", "/mnt", "/media", "/srv",
];

/// Files masked (shown empty) at the top of every folder a confined check may read: credentials toolchains keep.
const MASKED: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.toml",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
];

/// The variables every check gets from the worker's environment (when set), besides those the policy names.
const BASE_ENV: &[&str] = &["PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME"];

/// A PATH for a worker started without one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The user a confined check runs as when the worker runs as root (`nobody`): root's own files (`/etc/shadow`,
/// keys under `/root` or `/etc/ssl/private`) must not be readable to the model's code either.
pub const CHECK_UID: u32 = 65534;

/// A bubblewrap that was found and shown to work here.
#[derive(Debug, Clone)]
pub struct Bwrap {
    /// The `bwrap` binary.
    pub path: PathBuf,
    /// `bubblewrap 0.8.0`, as it says.
    pub version: String,
    /// When the worker runs as root: `setpriv` (util-linux), which drops the check to [`CHECK_UID`] with no
    /// capabilities and no way back (`no_new_privs`).
    pub setpriv: Option<PathBuf>,
}

/// The owner a confined check's sandbox copy must have: [`CHECK_UID`] when the worker runs as root (the check runs
/// as that user), else none (the check runs as the worker's own user).
pub fn sandbox_owner() -> Option<u32> {
    rustix::process::geteuid().is_root().then_some(CHECK_UID)
}

/// Bubblewrap, found and probed once per process: `Err` says why there is none and what to do.
pub fn bubblewrap() -> std::result::Result<&'static Bwrap, &'static str> {
    static PROBE: OnceLock<std::result::Result<Bwrap, String>> = OnceLock::new();
    PROBE.get_or_init(probe).as_ref().map_err(String::as_str)
}

fn probe() -> std::result::Result<Bwrap, String> {
    let install = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)";
    let path = match std::env::var_os(BWRAP_ENV).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => find_on_path("bwrap")
            .ok_or_else(|| format!("bubblewrap (`bwrap`) is not on PATH; {install}"))?,
    };
    let version = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}; {install}", path.display()))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let setpriv = match sandbox_owner() {
        None => None,
        Some(_) => Some(find_on_path("setpriv").ok_or_else(|| {
            "the worker runs as root, and a confined check is dropped to an unprivileged user with `setpriv`, which \
             is not on PATH; install util-linux (it provides setpriv)"
                .to_string()
        })?),
    };
    // The same namespaces, mounts and user switch a confined check uses.
    let mut args: Vec<OsString> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        "--size",
        "1048576",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    // The seccomp filter too: a kernel or a bubblewrap that cannot load it makes no confinement.
    let filter = seccomp::program()
        .map(|p| seccomp::descriptor(&p))
        .transpose()
        .map_err(|e| format!("cannot hand bubblewrap its seccomp filter: {e}"))?;
    let mut cmd = Command::new(&path);
    if let Some(fd) = &filter {
        cmd.arg("--seccomp").arg(raw_fd(fd).to_string());
    }
    args.extend(isolation_flags(setpriv.as_deref()));
    args.push("true".into());
    let out = cmd
        .args(&args)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}; {install}", path.display()))?;
    drop(filter);
    if !out.status.success() {
        return Err(format!(
            "{} is installed but cannot make a confinement here ({}); allow unprivileged user namespaces \
             (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu), or run the \
             worker where they are allowed",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Bwrap {
        path,
        version,
        setpriv,
    })
}

/// The namespace, capability and user options of a confined check, ending with `--` and, as root, the user switch:
/// what follows is the command. As root no user namespace is made (it would map only root), so that `setpriv` can
/// drop to [`CHECK_UID`] with the capabilities it is given for that, and then none.
fn isolation_flags(setpriv: Option<&Path>) -> Vec<OsString> {
    let mut f: Vec<&str> = Vec::new();
    match setpriv {
        None => f.push("--unshare-all"),
        Some(_) => f.extend([
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]),
    }
    f.extend(["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    if setpriv.is_some() {
        f.extend([
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_SETPCAP",
        ]);
    }
    let mut out: Vec<OsString> = f.into_iter().map(OsString::from).collect();
    out.push("--".into());
    if let Some(sp) = setpriv {
        let uid = format!("--reuid={CHECK_UID}");
        let gid = format!("--regid={CHECK_UID}");
        out.push(sp.as_os_str().to_owned());
        for a in [
            uid.as_str(),
            gid.as_str(),
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        ] {
            out.push(a.into());
        }
    }
    out
}

/// The number of a descriptor, to name it on bubblewrap's command line.
pub fn raw_fd(fd: &std::os::fd::OwnedFd) -> i32 {
    std::os::fd::AsRawFd::as_raw_fd(fd)
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// How to start a check: the argv that comes before `sh -c COMMAND`, the whole environment, and a word for how it is
/// isolated.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Empty: `sh` is started directly (in its own process group).
    pub wrapper: Vec<OsString>,
    /// The check's whole environment (see [`environment`]).
    pub env: Vec<(OsString, OsString)>,
    /// `confined`, `pid-namespace` or `process-group`; reported with every check.
    pub isolation: &'static str,
    /// Whether bubblewrap is handed the [`seccomp`] filter (`--seccomp FD`, a descriptor made for each start).
    pub seccomp: bool,
    /// What the checks may add to the filesystem holding the sandbox copy.
    pub disk: Option<DiskBound>,
}

/// A measured bound on what confined checks write into the sandbox copy, which lies on a real filesystem (the
/// system's temporary folder by default) that others use too: fixed when the confinement is prepared (once per
/// proposal, for every check and candidate), looked at every few milliseconds while a check runs and once after it
/// ends. The free space of that filesystem is the cheap signal; when it falls below the floor, the copy itself is
/// measured (the bytes of its files against those it was made with): a check that grew it past
/// [`DiskBound::allowed`] is killed and fails, and a drop someone else caused only moves the floor.
#[derive(Debug, Clone)]
pub struct DiskBound {
    /// The sandbox copy, on the watched filesystem.
    pub path: PathBuf,
    /// What the checks may add: the policy's `sandbox_write_mib`, or half of the free space when that is less.
    pub allowed: u64,
    /// The floor of free bytes, and the copy's bytes when it was made.
    floor: std::sync::Arc<std::sync::Mutex<Floor>>,
}

#[derive(Debug)]
struct Floor {
    min_free: u64,
    copy_bytes: u64,
}

impl DiskBound {
    /// The bound for checks adding at most `limit` bytes to the copy at `path` (made with `copy_bytes` bytes of
    /// files), never more than half of its filesystem's free space now; `None` when that cannot be read.
    pub fn new(path: &Path, limit: u64, copy_bytes: u64) -> Option<DiskBound> {
        let free = free_bytes(path)?;
        let allowed = limit.min(free / 2);
        Some(DiskBound {
            path: path.to_path_buf(),
            allowed,
            floor: std::sync::Arc::new(std::sync::Mutex::new(Floor {
                min_free: free - allowed,
                copy_bytes,
            })),
        })
    }

    /// Whether the checks grew the copy past [`DiskBound::allowed`]. One `statvfs`; the copy is measured only when
    /// the filesystem's free space is below the floor.
    pub fn exceeded(&self) -> bool {
        let Some(free) = free_bytes(&self.path) else {
            return false;
        };
        let mut f = self.floor.lock().unwrap_or_else(|p| p.into_inner());
        if free >= f.min_free {
            return false;
        }
        let grown = tree_bytes(&self.path).saturating_sub(f.copy_bytes);
        if grown > self.allowed {
            return true;
        }
        // Someone else wrote there: what is left to the checks stays what it was.
        f.min_free = free.saturating_sub(self.allowed - grown);
        false
    }

    /// The note a check stopped by this bound gets.
    pub fn note(&self) -> String {
        format!(
            "[killed: the checks wrote more than {} MiB into the sandbox copy ({}); [validation] sandbox_write_mib \
             bounds it (and never more than half of that filesystem's free space): raise it, or point \
             LOCAL_LLM_SANDBOX_DIR at a roomier filesystem]",
            self.allowed / (1024 * 1024),
            self.path.parent().unwrap_or(&self.path).display()
        )
    }
}

/// The bytes of the regular files under `dir` (their lengths), symlinks not followed.
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) if m.is_file() => total = total.saturating_add(m.len()),
                _ => {}
            }
        }
    }
    total
}

/// The bytes an unprivileged user may still write on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// What a confined check may use besides the sandbox copy: the project's own environment, and its bounds.
#[derive(Debug, Clone, Copy)]
pub struct Project<'a> {
    /// `[validation] sandbox_read`: folders shown read-only (`~/` is the home folder).
    pub sandbox_read: &'a [String],
    /// The validation commands: the folders holding the programs they start are shown ([`project::programs`]).
    pub commands: &'a [String],
    /// The size of each fresh, writable folder (`/tmp`, HOME, `/dev/shm`), in bytes.
    pub tmp_bytes: u64,
    /// What the checks may add to the copy, in bytes ([`DiskBound`]).
    pub write_bytes: u64,
    /// The bytes of the copy's files when it was made (`sandbox::Report::bytes`).
    pub copy_bytes: u64,
}

/// What a confined check must not see, besides the fixed [`HIDDEN`] folders.
#[derive(Debug, Clone, Default)]
pub struct Private {
    /// The real workspace.
    pub workspace: PathBuf,
    /// The worker's state folder (journals, locks, ledger), when there is one.
    pub state: Option<PathBuf>,
}

/// The launch for validation on propose: a confinement around `sandbox` (the copy's root) when the policy asks for
/// one, else (`isolation = "copy"`) the copy alone. `Err` when a confinement is asked for and none is available.
pub fn for_proposal(
    isolation: Isolation,
    sandbox: &Path,
    private: &Private,
    project: &Project<'_>,
    pass_env: &[String],
) -> Result<Launch> {
    match isolation {
        Isolation::Copy => Ok(Launch {
            wrapper: Vec::new(),
            env: environment(pass_env, home().as_deref(), None),
            isolation: "process-group",
            seccomp: false,
            disk: None,
        }),
        Isolation::Confined => {
            let bwrap = bubblewrap().map_err(unavailable)?;
            Ok(confined(bwrap, sandbox, private, project, pass_env))
        }
    }
}

/// The refusal when validation on propose needs a confinement and there is none.
pub fn unavailable(why: &str) -> Error {
    Error::Policy(format!(
        "[validation] on_propose = true runs the model's unapproved code in the validation commands, and it can \
         only run confined: {why}. Or set [validation] isolation = \"copy\" to accept an unconfined copy (the \
         model's code then runs with your rights and network), or set on_propose = false"
    ))
}

/// Check, before any model call, that validation on propose can run as the policy asks.
pub fn check_available(isolation: Isolation) -> Result<()> {
    match isolation {
        Isolation::Copy => Ok(()),
        Isolation::Confined => bubblewrap().map(|_| ()).map_err(unavailable),
    }
}

/// The launch for approved checks at apply time, in the workspace `dir`: a PID namespace of their own when
/// bubblewrap works here (no descendant outlives the check, no `/proc` of the worker), else a process group.
pub fn for_apply(dir: &Path, pass_env: &[String]) -> Launch {
    let env = environment(pass_env, home().as_deref(), None);
    let Ok(bwrap) = bubblewrap() else {
        return Launch {
            wrapper: Vec::new(),
            env,
            isolation: "process-group",
            seccomp: false,
            disk: None,
        };
    };
    let mut a = Args::new(&bwrap.path);
    a.flag("--dev-bind")
        .path(Path::new("/"))
        .path(Path::new("/"));
    a.flag("--proc").path(Path::new("/proc"));
    a.flag("--unshare-pid");
    a.flag("--die-with-parent");
    a.flag("--new-session");
    // As root no user namespace is made, and bubblewrap would keep the capabilities it is told to: none. With one,
    // `umount -l /proc` would uncover the host's `/proc` (the worker's environment, its key). `no_new_privs` (which
    // bubblewrap sets) keeps root from getting them back through `exec`, setuid `mount` included.
    a.flag("--cap-drop").flag("ALL");
    a.flag("--chdir").path(dir);
    a.flag("--");
    Launch {
        wrapper: a.0,
        env,
        isolation: "pid-namespace",
        seccomp: false,
        disk: None,
    }
}

/// The worker's HOME, when it is a usable absolute folder.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h != Path::new("/"))
}

/// The environment of a check: the [`BASE_ENV`] variables and `LC_*` from the worker's environment, then the ones
/// the policy names, then HOME and TMPDIR (`home`/`tmp` when given, else the worker's own). Nothing else: no key
/// variable, no variable of the host or the worker.
pub fn environment(
    pass_env: &[String],
    home: Option<&Path>,
    tmp: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: OsString, v: OsString| {
        if let Some(slot) = env.iter_mut().find(|(n, _)| *n == k) {
            slot.1 = v;
        } else {
            env.push((k, v));
        }
    };
    for (k, v) in std::env::vars_os() {
        let name = k.to_string_lossy();
        if BASE_ENV.contains(&name.as_ref()) || name.starts_with("LC_") {
            set(k.clone(), v);
        }
    }
    for name in pass_env {
        if let Some(v) = std::env::var_os(name) {
            set(name.into(), v);
        }
    }
    if std::env::var_os("PATH").is_none() {
        set("PATH".into(), DEFAULT_PATH.into());
    }
    match home {
        Some(h) => set("HOME".into(), h.into()),
        None => {
            if let Some(h) = std::env::var_os("HOME") {
                set("HOME".into(), h);
            }
        }
    }
    match tmp {
        Some(t) => set("TMPDIR".into(), t.into()),
        None => {
            if let Some(t) = std::env::var_os("TMPDIR") {
                set("TMPDIR".into(), t);
            }
        }
    }
    env
}

/// The folder a confined check does not see that holds `p`, the innermost when several do: the workspace, the state
/// folder, the home folder, `/tmp` or one of the fixed hidden folders (`/home`, `/root`, `/run`...). `None` when
/// the check sees `p` (read-only). What `[validation] sandbox_read` and the project's environment bring back is not
/// counted: this says where a program that could not be found lies.
pub fn hidden_by(p: &Path, private: &Private) -> Option<PathBuf> {
    let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    HIDDEN
        .iter()
        .map(PathBuf::from)
        .chain([PathBuf::from("/tmp")])
        .chain(home())
        .chain([private.workspace.clone()])
        .chain(private.state.clone())
        .filter_map(|d| canonical_dir(&d))
        .filter(|d| within(&p, d))
        .max_by_key(|d| depth(d))
}

/// Expand `~/` in a `[validation] sandbox_read` entry; `None` when it needs a HOME there is none of.
pub fn expand(entry: &str, home: Option<&Path>) -> Option<PathBuf> {
    match entry.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None if entry == "~" => None,
        None => Some(PathBuf::from(entry)),
    }
}

/// An argv under construction.
struct Args(Vec<OsString>);

impl Args {
    fn new(bwrap: &Path) -> Args {
        Args(vec![bwrap.as_os_str().to_owned()])
    }

    fn flag(&mut self, f: &str) -> &mut Args {
        self.0.push(f.into());
        self
    }

    fn path(&mut self, p: &Path) -> &mut Args {
        self.0.push(p.as_os_str().to_owned());
        self
    }
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// Whether `p` is `base` or lies below it.
fn within(p: &Path, base: &Path) -> bool {
    p.starts_with(base)
}

/// The bubblewrap command line around the sandbox copy (see the module's doc for what it hides and allows).
fn confined(
    bwrap: &Bwrap,
    sandbox: &Path,
    private: &Private,
    project: &Project<'_>,
    pass_env: &[String],
) -> Launch {
    let layout = Layout::new(sandbox, private, project);
    let mut a = Args::new(&bwrap.path);
    layout.mount(&mut a);
    a.flag("--chdir").path(&layout.sandbox);
    a.0.extend(isolation_flags(bwrap.setpriv.as_deref()));
    Launch {
        wrapper: a.0,
        env: environment(pass_env, Some(&layout.inside_home), Some(&layout.tmp)),
        isolation: "confined",
        seccomp: seccomp::program().is_some(),
        disk: DiskBound::new(&layout.sandbox, project.write_bytes, project.copy_bytes),
    }
}

/// `p` made canonical, when it is a folder.
fn canonical_dir(p: &Path) -> Option<PathBuf> {
    p.canonicalize().ok().filter(|c| c.is_dir())
}

/// The folders of a confined check: what stays out of sight, what is fresh, what may be read, and the sandbox.
struct Layout {
    /// The sandbox copy (canonical): the only writable folder besides the fresh HOME and `/tmp`.
    sandbox: PathBuf,
    /// `/tmp`, fresh.
    tmp: PathBuf,
    /// Folders that must stay out of sight (the workspace, the state folder, the sandbox's parent), outermost first.
    private_dirs: Vec<PathBuf>,
    /// The worker's HOME (canonical), made fresh and empty at the same path; `None` when it cannot be.
    home_path: Option<PathBuf>,
    /// The HOME the check gets: `home_path`, else a folder in the fresh `/tmp`.
    inside_home: PathBuf,
    /// Fixed folders hidden behind empty ones (and `/tmp` and the HOME, fresh), outermost first.
    empty: Vec<PathBuf>,
    /// The folders `[validation] sandbox_read` names and those of the project's environment: (where it really is,
    /// where the check looks for it).
    read_dirs: Vec<(PathBuf, PathBuf)>,
    /// The workspace's own virtualenvs, at the workspace's path and in the copy: (where it really is, where the check
    /// looks for it). Bound after the private folders and the sandbox, which hold where they are shown.
    venvs: Vec<(PathBuf, PathBuf)>,
    /// The size of each fresh folder (`/tmp`, HOME, `/dev/shm`), in bytes.
    tmp_bytes: u64,
}

impl Layout {
    fn new(sandbox: &Path, private: &Private, project: &Project<'_>) -> Layout {
        let sandbox = canonical_dir(sandbox).unwrap_or_else(|| sandbox.to_path_buf());
        let tmp = PathBuf::from("/tmp");
        let private_dirs = private_folders(private, &sandbox, &tmp);
        // A fresh HOME at the worker's HOME path (the sandbox, when it lies there, is bound over it afterwards),
        // unless that path is private itself.
        let home_path = home().and_then(|h| canonical_dir(&h)).filter(|h| {
            !private_dirs.iter().any(|p| within(h, p)) && *h != tmp && h.parent().is_some()
        });
        let inside_home = home_path.clone().unwrap_or_else(|| tmp.join("home"));
        let empty = hidden_folders(&tmp, home_path.as_ref());
        let workspace =
            canonical_dir(&private.workspace).unwrap_or_else(|| private.workspace.clone());
        let found = project::discover(&workspace, &sandbox, project.commands, home().as_deref());
        let read_dirs = readable_folders(
            project.sandbox_read,
            &found.folders,
            &sandbox,
            &empty,
            &private_dirs,
        );
        let venvs = workspace_venvs(found.venvs, &workspace, &sandbox, &private_dirs);
        Layout {
            sandbox,
            tmp,
            private_dirs,
            home_path,
            inside_home,
            empty,
            read_dirs,
            venvs,
            tmp_bytes: project.tmp_bytes,
        }
    }

    /// Whether `d` is one of the fresh, writable folders (`/tmp` and the fresh HOME).
    fn is_fresh(&self, d: &PathBuf) -> bool {
        *d == self.tmp || Some(d) == self.home_path.as_ref()
    }

    /// The mounts: the filesystem read-only, the hidden and fresh folders (the fresh ones bounded in size), the
    /// readable ones with their credential files masked, the private ones, the sandbox writable, and the
    /// workspace's virtualenvs.
    fn mount(&self, a: &mut Args) {
        let size = self.tmp_bytes.to_string();
        a.flag("--ro-bind")
            .path(Path::new("/"))
            .path(Path::new("/"));
        a.flag("--dev").path(Path::new("/dev"));
        // A private /dev/shm, writable for the check's user (POSIX semaphores: Python's multiprocessing).
        a.flag("--perms").flag("1777").flag("--size").flag(&size);
        a.flag("--tmpfs").path(Path::new("/dev/shm"));
        a.flag("--proc").path(Path::new("/proc"));
        for d in &self.empty {
            // Writable for the check's user (as root that is CHECK_UID); the mount is the namespace's own.
            if self.is_fresh(d) {
                a.flag("--perms").flag("1777").flag("--size").flag(&size);
            }
            a.flag("--tmpfs").path(d);
        }
        if self.home_path.is_none() {
            a.flag("--perms")
                .flag("1777")
                .flag("--dir")
                .path(&self.inside_home);
        }
        for (real, at) in &self.read_dirs {
            self.folders_to(a, at);
            read_only(a, real, at);
        }
        for d in &self.private_dirs {
            a.flag("--tmpfs").path(d);
        }
        a.flag("--bind").path(&self.sandbox).path(&self.sandbox);
        for (real, at) in &self.venvs {
            self.folders_to(a, at);
            read_only(a, real, at);
        }
        for d in self.empty.iter().chain(&self.private_dirs) {
            if !self.is_fresh(d) {
                a.flag("--remount-ro").path(d);
            }
        }
    }
}

impl Layout {
    /// Make the folders leading to `at` inside an empty or fresh folder, open to every user (0755): bubblewrap would
    /// give them the modes of the real ones, and a folder of root's 0700 would keep a check running as
    /// [`CHECK_UID`] from what is shown below it.
    fn folders_to(&self, a: &mut Args, at: &Path) {
        let roots: Vec<&PathBuf> = self.empty.iter().chain(&self.private_dirs).collect();
        let mut on_the_way: Vec<&Path> = at
            .ancestors()
            .skip(1)
            .filter(|p| roots.iter().any(|r| within(p, r) && p != r) && !within(p, &self.sandbox))
            .collect();
        on_the_way.reverse();
        for p in on_the_way {
            a.flag("--perms").flag("0755").flag("--dir").path(p);
        }
    }
}

/// Show `real` read-only at `at`, with the credential files at its top masked.
fn read_only(a: &mut Args, real: &Path, at: &Path) {
    a.flag("--ro-bind").path(real).path(at);
    if real.is_dir() {
        for m in MASKED {
            if real.join(m).symlink_metadata().is_ok() {
                a.flag("--ro-bind")
                    .path(Path::new("/dev/null"))
                    .path(&at.join(m));
            }
        }
    }
}

/// The workspace's virtualenvs that may be shown (at the workspace's path, hidden otherwise, and in the copy): never
/// one that lies in, or holds, the state folder, the sandbox's parent or the sandbox.
fn workspace_venvs(
    venvs: Vec<(PathBuf, PathBuf)>,
    workspace: &Path,
    sandbox: &Path,
    private_dirs: &[PathBuf],
) -> Vec<(PathBuf, PathBuf)> {
    venvs
        .into_iter()
        .filter(|(real, at)| {
            within(real, workspace)
                && !within(real, sandbox)
                && !within(sandbox, real)
                && (within(at, workspace) || within(at, sandbox))
                && private_dirs
                    .iter()
                    .filter(|d| d.as_path() != workspace)
                    .all(|d| !within(real, d) && !within(d, real))
        })
        .collect()
}

/// Folders that must stay out of sight: empty and read-only. One that holds the sandbox (its parent, or a workspace
/// holding LOCAL_LLM_SANDBOX_DIR) is hidden too: the sandbox is bound over it afterwards.
fn private_folders(private: &Private, sandbox: &Path, tmp: &Path) -> Vec<PathBuf> {
    let sandbox_parent = sandbox.parent().map(Path::to_path_buf);
    let mut private_dirs: Vec<PathBuf> = [
        Some(private.workspace.clone()),
        private.state.clone(),
        sandbox_parent.filter(|p| *p != tmp),
    ]
    .into_iter()
    .flatten()
    .filter_map(|p| canonical_dir(&p))
    .filter(|p| !within(p, sandbox))
    .collect();
    private_dirs.sort_by_key(|p| depth(p));
    private_dirs.dedup();
    private_dirs
}

/// Fixed folders to hide (where one is a symlink, the folder it leads to): empty; read-only except `tmp` (the fresh
/// TMPDIR) and the fresh HOME `home_path`.
fn hidden_folders(tmp: &Path, home_path: Option<&PathBuf>) -> Vec<PathBuf> {
    let mut empty: Vec<PathBuf> = HIDDEN
        .iter()
        .map(PathBuf::from)
        .chain([tmp.to_path_buf()])
        .filter_map(|p| canonical_dir(&p))
        .filter(|c| c.parent().is_some())
        .collect();
    if let Some(h) = home_path {
        empty.push(h.clone());
    }
    empty.sort_by_key(|p| depth(p));
    empty.dedup();
    empty
}

/// The `[validation] sandbox_read` folders, and those of the project's environment (`found`) that would be hidden,
/// that may come back, read-only: (where it really is, where the check looks for it). Never a way back into a
/// private folder or the sandbox, and never a folder that holds what is hidden (it would bring the hidden folder
/// back).
fn readable_folders(
    read: &[String],
    found: &[PathBuf],
    sandbox: &Path,
    empty: &[PathBuf],
    private_dirs: &[PathBuf],
) -> Vec<(PathBuf, PathBuf)> {
    let named = read.iter().filter_map(|e| expand(e, home().as_deref()));
    // The project's environment elsewhere is visible already.
    let hidden = |p: &Path| empty.iter().any(|h| within(p, h));
    let needed = found
        .iter()
        .filter(|p| hidden(p) || p.canonicalize().is_ok_and(|c| hidden(&c)));
    let mut read_dirs: Vec<(PathBuf, PathBuf)> = named
        .chain(needed.cloned())
        .filter_map(|p| Some((p.canonicalize().ok()?, p)))
        .filter(|(real, at)| {
            let hidden_or_private = || empty.iter().chain(private_dirs);
            [real, at].iter().all(|p| {
                !private_dirs.iter().any(|d| within(p, d))
                    && !within(p, sandbox)
                    && !within(sandbox, p)
                    && !hidden_or_private().any(|h| within(h, p))
            })
        })
        .collect();
    read_dirs.sort_by(|(ra, a), (rb, b)| depth(a).cmp(&depth(b)).then(a.cmp(b)).then(ra.cmp(rb)));
    read_dirs.dedup();
    read_dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_an_allowlist() {
        let env = environment(
            &["LLW_CONFINE_TEST_PASSED".into()],
            Some(Path::new("/h")),
            Some(Path::new("/t")),
        );
        let names: Vec<String> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"PATH".to_string()), "{names:?}");
        assert!(
            env.contains(&("HOME".into(), "/h".into()))
                && env.contains(&("TMPDIR".into(), "/t".into()))
        );
        for n in &names {
            assert!(
                BASE_ENV.contains(&n.as_str())
                    || n.starts_with("LC_")
                    || ["HOME", "TMPDIR", "LLW_CONFINE_TEST_PASSED"].contains(&n.as_str()),
                "{n} is not on the allowlist"
            );
        }
    }

    #[test]
    fn tilde_entries_expand_against_home() {
        let h = Path::new("/home/u");
        assert_eq!(expand("~/.cargo", Some(h)), Some(h.join(".cargo")));
        assert_eq!(expand("/opt/sdk", Some(h)), Some(PathBuf::from("/opt/sdk")));
        assert_eq!(expand("~/.cargo", None), None);
        assert_eq!(expand("~", Some(h)), None);
    }
}
