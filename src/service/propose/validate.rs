//! Stage 4 of a proposal, validation on propose: the checks run on a candidate in a confined sandbox copy of the
//! workspace. Imports only [`prepare`](super::prepare) and [`read`](super::read) of the other stages.

use std::time::Duration;

use super::prepare::Prepared;
use super::read::Candidate;
use crate::checks::{self, CheckResult};
use crate::confine;
use crate::error::{Error, Result, ValidationFailure};
use crate::ledger;
use crate::locate_rank;
use crate::policy;
use crate::provider::Watch;
use crate::sandbox;
use crate::service::patch_limits;
use crate::txn;
use crate::workspace::Workspace;

/// Stage 4, validation on propose: copy the workspace into a [`sandbox`], put the selected files there exactly as the
/// patch was made against them, apply the patch there through the same transaction as a real apply, and run the
/// validation commands there, confined around the copy ([`confine::for_proposal`]: no network, no view of the
/// workspace, the worker or the home folder; an allowlisted environment). The workspace is only read; the copy is
/// removed when this returns, whatever happened.
#[cfg(test)]
pub(super) fn validate(p: &Prepared, cand: &Candidate, watch: &Watch) -> Result<Vec<CheckResult>> {
    if let Some(known) = p.verdicts.failed(&cand.patch_bytes) {
        return Ok(known);
    }
    Validator::new(p, watch)?.check(cand, watch)
}

/// What the checks said before any edit: their results, and what the tracer wrote (nothing when no selected file is
/// Python or the copy has its own entry of the tracer's name).
pub(super) struct Before {
    pub results: Vec<CheckResult>,
    pub traces: Vec<String>,
}

/// One sandbox copy for every candidate of a proposal: made once, and between two candidates reset by putting
/// back only the selected files (what a patch can touch) as the model saw them. Removed when dropped.
pub(super) struct Validator<'p> {
    p: &'p Prepared,
    /// Held for its `Drop`, which removes the copy.
    _copy: sandbox::Sandbox,
    sws: Workspace,
    launch: confine::Launch,
    owner: Option<u32>,
}

impl<'p> Validator<'p> {
    /// Copy the workspace (the only cost that grows with it) and prepare the confinement around the copy.
    pub(super) fn new(p: &'p Prepared, watch: &Watch) -> Result<Validator<'p>> {
        let c = check_copy(&p.ws, &p.policy, watch)?;
        let sws = Workspace::new(c.copy.root().to_path_buf(), &p.policy.paths, None)?;
        Ok(Validator {
            p,
            _copy: c.copy,
            sws,
            launch: c.launch,
            owner: c.owner,
        })
    }

    /// The names of the copy's folder, as the checks may print it in paths: as made and as resolved.
    pub(super) fn roots(&self) -> Vec<String> {
        let root = self.sws.root();
        let mut out = vec![root.to_string_lossy().into_owned()];
        if let Ok(real) = root.canonicalize() {
            let real = real.to_string_lossy().into_owned();
            if !out.contains(&real) {
                out.push(real);
            }
        }
        out
    }

    /// Run the validation commands on the selected files as the model is shown them, before any edit: what they
    /// say points the ranking at the lines a failing test exercises ([`crate::locate_rank::Failing`]). When a
    /// selected file is Python, the run gets the tracer ([`crate::locate_rank::executed`]) and what it wrote comes
    /// back as `traces`, for the selected files in the order of [`Validator::selected`]. The tracer is gone from
    /// the copy when this returns.
    pub(super) fn check_before(&self, watch: &Watch) -> Result<Before> {
        let policy = &self.p.policy;
        sandbox::stage_pre_images(&self.sws, &self.p.selection.files)?;
        if let Some(uid) = self.owner {
            let touched: Vec<&str> = self.p.selection.files.keys().map(String::as_str).collect();
            sandbox::hand_over(self.sws.root(), &touched, uid);
        }
        let selected = self.selected();
        let tracer = if selected.iter().any(|f| f.ends_with(".py")) {
            sandbox::Tracer::stage(self.sws.root(), self.owner)?
        } else {
            None
        };
        let launch = match &tracer {
            Some(t) => with_python_vars(&self.launch, |python_path| {
                locate_rank::executed::environment(
                    self.sws.root(),
                    t.folder(),
                    &selected,
                    python_path,
                )
            }),
            None => self.launch.clone(),
        };
        let secret = policy.secret();
        let run = checks::Run {
            launch: &launch,
            timeout: Duration::from_secs(policy.validation.timeout_secs),
            secret: &secret,
        };
        let results = checks::run_all(&policy.validation.commands, self.sws.root(), &run, watch);
        let traces = tracer.map(sandbox::Tracer::take).unwrap_or_default();
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(Before { results, traces })
    }

    /// The selected files that exist, as the workspace names them, in order.
    pub(super) fn selected(&self) -> Vec<&'p str> {
        self.p
            .selection
            .files
            .iter()
            .filter(|(_, f)| f.is_some())
            .map(|(path, _)| path.as_str())
            .collect()
    }

    /// Run the one validation command `command` in the copy with the selected file `path` holding `text` (a mutant
    /// of the mutation probe, [`crate::locate_rank::mutants`]), the other selected files as the model saw them, and
    /// at most `timeout`: whether it passed. The edit goes through the same throwaway transaction as a candidate's.
    pub(super) fn try_text(
        &self,
        path: &str,
        text: &str,
        command: &str,
        timeout: Duration,
        watch: &Watch,
    ) -> Result<bool> {
        let Some(Some(pre)) = self.p.selection.files.get(path) else {
            return Ok(false);
        };
        let patch = crate::patch::canonical::render(&[crate::patch::FileChange {
            path: path.to_string(),
            pre: Some(pre.text.as_bytes().to_vec()),
            post: text.as_bytes().to_vec(),
            mode: pre.mode,
            hunks: Vec::new(),
            op: crate::patch::ChangeOp::Edit,
        }]);
        let results = self.run_patched(&patch, &[command.to_string()], timeout, watch)?;
        Ok(!results.is_empty() && results.iter().all(|r| r.passed))
    }

    /// Run the one validation command `command` ONCE in the copy with the prober
    /// ([`crate::locate_rank::batch`]) and every mutant of `mutants` (a selected Python file's path and its whole
    /// text): each one's verdict (`None` for one not reached within `budget`), each child of the check killed after
    /// `each`. `None` when the run could not say (no mutant of a Python file, the copy has its own entry of the
    /// prober's name, or the check never imported a selected file): the caller then runs one check a mutant. The
    /// selected files are put back as the model saw them first; the prober is gone from the copy when this returns.
    pub(super) fn try_many(
        &self,
        mutants: &[(String, String)],
        every: bool,
        command: &str,
        each: Duration,
        budget: Duration,
        watch: &Watch,
    ) -> Result<Option<locate_rank::batch::Outcomes>> {
        use locate_rank::batch;
        if mutants.is_empty() || !mutants.iter().all(|(p, _)| p.ends_with(".py")) {
            return Ok(None);
        }
        sandbox::stage_pre_images(&self.sws, &self.p.selection.files)?;
        if let Some(uid) = self.owner {
            let touched: Vec<&str> = self.p.selection.files.keys().map(String::as_str).collect();
            sandbox::hand_over(self.sws.root(), &touched, uid);
        }
        let root = self.sws.root();
        let texts: Vec<(std::path::PathBuf, &str)> = mutants
            .iter()
            .map(|(p, t)| (root.join(p), t.as_str()))
            .collect();
        let Some(prober) = sandbox::Prober::stage(root, self.owner, &batch::encode(&texts, every))?
        else {
            return Ok(None);
        };
        let launch = with_python_vars(&self.launch, |python_path| {
            batch::environment(
                prober.folder(),
                python_path,
                u64::try_from(each.as_millis()).unwrap_or(u64::MAX),
                u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
                PROBE_JOBS,
            )
        });
        let secret = self.p.policy.secret();
        // Forking stops at `budget`; the children still running then may take `each` more.
        let most = Duration::from_secs(self.p.policy.validation.timeout_secs);
        let run = checks::Run {
            launch: &launch,
            timeout: (budget + each + Duration::from_secs(1)).min(most.max(each)),
            secret: &secret,
        };
        let _ = checks::run_all(&[command.to_string()], root, &run, watch);
        let wrote = prober.take();
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(batch::read(&wrote, mutants.len()))
    }

    /// Run the validation commands on `cand` in the copy: the selected files are first put back as the model saw
    /// them (the copy may lack one or hold newer bytes, and a previous candidate may have changed them).
    pub(super) fn check(&self, cand: &Candidate, watch: &Watch) -> Result<Vec<CheckResult>> {
        if let Some(known) = self.p.verdicts.failed(&cand.patch_bytes) {
            return Ok(known);
        }
        let policy = &self.p.policy;
        let timeout = Duration::from_secs(policy.validation.timeout_secs);
        let results = self.run_patched(
            &cand.patch_bytes,
            &policy.validation.commands,
            timeout,
            watch,
        )?;
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        self.p.verdicts.record(&cand.patch_bytes, &results);
        Ok(results)
    }

    /// Put the selected files back as the model saw them, apply `patch` there through the throwaway transaction and
    /// run `commands` (each within `timeout`) in the copy: their results.
    fn run_patched(
        &self,
        patch: &[u8],
        commands: &[String],
        timeout: Duration,
        watch: &Watch,
    ) -> Result<Vec<CheckResult>> {
        let policy = &self.p.policy;
        sandbox::stage_pre_images(&self.sws, &self.p.selection.files)?;
        let secret = policy.secret();
        let run = checks::Run {
            launch: &self.launch,
            timeout,
            secret: &secret,
        };
        let touched: Vec<&str> = self.p.selection.files.keys().map(String::as_str).collect();
        let owner = self.owner;
        let applied = txn::apply_throwaway(
            &self.sws,
            patch,
            patch_limits(policy),
            |root: &std::path::Path| {
                if let Some(uid) = owner {
                    sandbox::hand_over(root, &touched, uid);
                }
                Ok::<_, Box<ValidationFailure>>(checks::run_all(commands, root, &run, watch))
            },
        )?;
        Ok(applied.validation)
    }
}

/// `launch` with the variables `vars` makes from its PYTHONPATH (none when it has none) in place of those of the
/// same names: how the tracer and the prober are put first on a check's PYTHONPATH.
fn with_python_vars(
    launch: &confine::Launch,
    vars: impl FnOnce(Option<&std::ffi::OsStr>) -> Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> confine::Launch {
    let mut launch = launch.clone();
    let python_path = launch
        .env
        .iter()
        .find(|(k, _)| k == "PYTHONPATH")
        .map(|(_, v)| v.clone());
    let vars = vars(python_path.as_deref());
    launch
        .env
        .retain(|(k, _)| !vars.iter().any(|(n, _)| n == k));
    launch.env.extend(vars);
    launch
}

/// How many children of the check the prober runs at once: one per core of a small machine, so that a mutant that
/// loops does not hold up the others.
const PROBE_JOBS: usize = 2;

/// A sandbox copy of a workspace and how checks run in it, as validation on propose runs them.
pub(crate) struct CheckCopy {
    /// The copy, removed when dropped.
    pub(crate) copy: sandbox::Sandbox,
    /// The confinement around it (or, with `isolation = "copy"`, none).
    pub(crate) launch: confine::Launch,
    /// The user the copy was handed to (a worker running as root drops confined checks to an unprivileged user).
    pub(crate) owner: Option<u32>,
}

/// Copy the workspace `ws` as validation on propose does (what the model may not see left out: denied and policy
/// files, secrets, unless `[validation] sandbox_include` names them) and prepare the launch of its checks there:
/// confined around the copy ([`confine::for_proposal`]) with the project's own environment and the policy's bounds.
pub(crate) fn check_copy(
    ws: &Workspace,
    policy: &policy::Policy,
    watch: &Watch,
) -> Result<CheckCopy> {
    const MIB: u64 = 1024 * 1024;
    let v = &policy.validation;
    // As root, a confined check runs as an unprivileged user, who must own the copy.
    let owner = match v.isolation {
        confine::Isolation::Confined => confine::sandbox_owner(),
        confine::Isolation::Copy => None,
    };
    let include = crate::workspace::sandbox_include(&v.sandbox_include)?;
    let copy = sandbox::create(
        ws.root(),
        &v.sandbox_skip,
        &|rel| ws.kept_from_sandbox(rel, &include),
        owner,
        watch,
    )?;
    let launch = confine::for_proposal(
        v.isolation,
        copy.root(),
        &confine::Private {
            workspace: ws.root().to_path_buf(),
            state: ledger::state_dir(),
        },
        &confine::Project {
            sandbox_read: &v.sandbox_read,
            commands: &v.commands,
            tmp_bytes: v.sandbox_tmp_mib * MIB,
            write_bytes: v.sandbox_write_mib * MIB,
            copy_bytes: copy.report().bytes,
        },
        &policy.check_env(),
    )?;
    Ok(CheckCopy {
        copy,
        launch: without_bytecode(launch),
        owner,
    })
}

/// `launch` with Python told not to write bytecode (`PYTHONDONTWRITEBYTECODE=1`). Python trusts a cached module when
/// its source has the recorded mtime (whole seconds) and size: a candidate or a mutant that keeps a file's size
/// (`+` for `*`), written in the same second as the run before it, would otherwise be run as the stale bytecode of
/// that run, and pass or fail for what it is not.
fn without_bytecode(mut launch: confine::Launch) -> confine::Launch {
    const VAR: &str = "PYTHONDONTWRITEBYTECODE";
    launch.env.retain(|(k, _)| k != VAR);
    launch.env.push((VAR.into(), "1".into()));
    launch
}
