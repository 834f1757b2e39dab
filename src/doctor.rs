//! `local-llm-worker doctor`: checks a workspace's setup one line at a time, each failure with its fix.
//!
//! Checks: the policy file is found and valid (and whose it is); whether it is trusted as it is now (an untrusted
//! policy that needs trust gets no request and runs nothing); which key variable goes to which URL and whether it
//! is set (its value is never printed); the endpoint answers `GET {base_url}/models`; which confinement validation commands will run in; routing of low and
//! medium complexity, and the `[models] active` allowlist for those routes; the context window of the
//! low-complexity model and where it comes from (the policy, the server, or the default); whether the answer is
//! constrained by a JSON schema and through which field; the candidates, how many are asked at once and the
//! server's slots; whether the edit format and candidates were chosen by `calibrate` (`[sampling] calibrated`),
//! else the command that measures them; and the pre-flight: every validation command run once, as validation on
//! propose runs it (confined around a sandbox copy), on the unchanged tree, each reported as passing, already
//! failing, or unable to start (with the folder the confinement hides and the `sandbox_read` line that brings it
//! back).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::checks::{self, CheckResult};
use crate::confine::{self, Isolation};
use crate::policy::{self, Policy};
use crate::provider::Watch;
use crate::provider::http::Endpoint;
use crate::workspace;

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Whether it passed.
    pub ok: bool,
    /// What was checked: `workspace`, `policy`, `key`, `endpoint`...
    pub name: &'static str,
    /// What was found, and for a failure what to do about it.
    pub detail: String,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<5} {:<9} {}",
            if self.ok { "ok" } else { "FAIL" },
            self.name,
            self.detail
        )
    }
}

/// A refusal's message without its kind's label: the check's own name stands before it.
fn said(e: &crate::Error) -> String {
    let text = e.render();
    let label = format!("{}: ", e.kind());
    match text.strip_prefix(&label) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

fn check(ok: bool, name: &'static str, detail: String) -> Check {
    Check { ok, name, detail }
}

/// Run every check for the workspace at `root_arg` (optionally as another provider).
pub fn run(root_arg: &str, provider: Option<policy::ProviderKind>) -> Vec<Check> {
    let mut out = Vec::new();
    let root = match workspace::root_from_arg(root_arg) {
        Ok(r) => r,
        Err(e) => return vec![check(false, "workspace", said(&e))],
    };
    let loaded = match policy::load_untrusted(&root) {
        Ok(l) => l,
        Err(e) => return vec![check(false, "policy", said(&e))],
    };
    out.push(check(
        true,
        "policy",
        match &loaded.path {
            Some(p) => format!("{} is valid", p.display()),
            None => "no policy file; the default policy of LOCAL_LLM_ALLOWED_ROOTS applies".into(),
        },
    ));
    let trusted = trusted_check(&loaded, &root);
    let usable = trusted.ok;
    out.push(trusted);
    let policy: Policy = match provider {
        Some(k) => loaded.policy.clone().with_provider(k),
        None => loaded.policy.clone(),
    };
    out.push(key(&policy));
    out.push(match usable {
        true => endpoint(&policy),
        false => check(
            false,
            "endpoint",
            format!(
                "{} not checked: the policy is not trusted, so no request is sent",
                policy.base_url()
            ),
        ),
    });
    out.push(confinement(&policy));
    for (label, medium) in [("low", false), ("medium", true)] {
        match policy.route(medium, None) {
            Ok(m) => out.push(check(
                true,
                "routing",
                format!(
                    "complexity {label} -> {} / {m}",
                    policy.provider.kind.name()
                ),
            )),
            Err(e) => out.push(check(false, "routing", format!("complexity {label}: {e}"))),
        }
    }
    if let Ok(model) = policy.route(false, None)
        && usable
    {
        let w = crate::provider::window::for_model(&policy, &model);
        out.push(check(true, "window", format!("{model}: {w}")));
        out.push(check(true, "output", output(&policy)));
        out.push(check(true, "sampling", sampling(&policy, &model)));
    }
    out.push(check(
        true,
        "calibrate",
        match &policy.sampling.calibrated {
            Some(c) => format!("[sampling] calibrated = {c:?}"),
            None => format!(
                "not calibrated: run `local-llm-worker calibrate --workspace-root {} --write` to choose the edit \
                 format and candidates by measurement",
                root.display()
            ),
        },
    ));
    let pre = preflight(&out, &root, loaded.path.as_deref(), &policy);
    out.extend(pre);
    out
}

/// The pre-flight: each validation command once, in one sandbox copy of the unchanged workspace, as validation on
/// propose runs it; one line per command. Nothing when there is no command, or when an `earlier` check refused the
/// policy (or found it untrusted): its commands do not run.
fn preflight(
    earlier: &[Check],
    root: &Path,
    policy_file: Option<&Path>,
    policy: &Policy,
) -> Vec<Check> {
    let v = &policy.validation;
    let refused = earlier
        .iter()
        .any(|c| !c.ok && matches!(c.name, "policy" | "trust"));
    if v.commands.is_empty() || refused {
        return Vec::new();
    }
    if v.isolation == Isolation::Confined
        && let Err(why) = confine::bubblewrap()
    {
        return vec![check(
            !v.on_propose,
            "checks",
            format!("not run before any change: there is no confinement here ({why})"),
        )];
    }
    let watch = Watch::default();
    let prepared = workspace::Workspace::new(root.to_path_buf(), &policy.paths, policy_file)
        .and_then(|ws| crate::service::check_copy(&ws, policy, &watch));
    let copy = match prepared {
        Ok(c) => c,
        Err(e) => {
            return vec![check(
                false,
                "checks",
                format!("not run: the sandbox copy could not be made: {e}"),
            )];
        }
    };
    let secret = policy.secret();
    let run = checks::Run {
        launch: &copy.launch,
        timeout: Duration::from_secs(v.timeout_secs),
        secret: &secret,
    };
    let private = confine::Private {
        workspace: root.to_path_buf(),
        state: crate::ledger::state_dir(),
    };
    v.commands
        .iter()
        .map(|c| {
            let r = checks::run_all(std::slice::from_ref(c), copy.copy.root(), &run, &watch);
            match r.into_iter().next() {
                Some(r) => preflight_line(&r, root, &private, policy),
                None => check(false, "checks", format!("`{c}` did not run")),
            }
        })
        .collect()
}

/// What one command's pre-flight run says.
fn preflight_line(
    r: &CheckResult,
    root: &Path,
    private: &confine::Private,
    policy: &Policy,
) -> Check {
    let cmd = visible(&r.command);
    if r.passed {
        return check(
            true,
            "checks",
            format!(
                "`{cmd}` passes on the unchanged tree ({}, {} ms)",
                r.isolation, r.duration_ms
            ),
        );
    }
    if r.timed_out {
        return check(
            false,
            "checks",
            format!(
                "`{cmd}` timed out after {} s on the unchanged tree; raise [validation] timeout_secs, or make the \
                 check quicker",
                policy.validation.timeout_secs
            ),
        );
    }
    let missing = missing_program(&r.output);
    let cannot_start = matches!(r.exit_code, Some(126 | 127))
        || r.output.starts_with("[the check did not run")
        || missing.as_ref().is_some_and(|(_, shell)| *shell);
    if cannot_start {
        let why = match &missing {
            Some((name, _)) => cannot_start_why(name, root, private, policy),
            None => last_lines(&r.output, 2),
        };
        return check(
            false,
            "checks",
            format!("`{cmd}` cannot start in the confinement: {why}"),
        );
    }
    check(
        false,
        "checks",
        format!(
            "`{cmd}` fails on the unchanged tree (exit {}): the tests already fail without any change, so every \
             proposal would fail validation; fix them (or the command) first. Its last lines: {}",
            r.exit_code.map_or("none".to_string(), |c| c.to_string()),
            last_lines(&r.output, 3)
        ),
    )
}

/// Why the program `name` could not start in the confinement, and the fix.
fn cannot_start_why(
    name: &str,
    root: &Path,
    private: &confine::Private,
    policy: &Policy,
) -> String {
    let shown = visible(name);
    if name.contains('/') && !name.starts_with('/') {
        return if root.join(name).exists() {
            format!(
                "{shown} is not in the sandbox copy: the copy leaves out gitignored files, [validation] \
                 sandbox_skip, and what the model may not see ([paths] denied, policy and secret files; [validation] \
                 sandbox_include brings those back)"
            )
        } else {
            format!("{shown} does not exist in the workspace either; fix the command")
        };
    }
    let Some(found) = confine::project::locate(name) else {
        return format!(
            "{shown} is not found here either (not on the PATH the worker has); install it or fix the command"
        );
    };
    let folder = found.parent().unwrap_or(&found).to_path_buf();
    match confine::hidden_by(&folder, private) {
        Some(hider) => {
            let entry = sandbox_read_entry(&folder);
            let mut list = policy.validation.sandbox_read.clone();
            list.push(entry.clone());
            let quoted: Vec<String> = list.iter().map(|e| format!("{:?}", visible(e))).collect();
            format!(
                "{shown} is {}, and the confinement shows checks {} empty; add {entry:?} to [validation] \
                 sandbox_read: sandbox_read = [{}]",
                visible(&found.to_string_lossy()),
                visible(&hider.to_string_lossy()),
                quoted.join(", ")
            )
        }
        None => format!(
            "{shown} is {}, which the confinement shows; what it needs in turn (its interpreter, libraries) may lie in \
             a hidden folder: name that folder in [validation] sandbox_read",
            visible(&found.to_string_lossy())
        ),
    }
}

/// `folder` as a `sandbox_read` entry: `~/...` under the home folder, else absolute.
fn sandbox_read_entry(folder: &Path) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if let Some(h) = home.filter(|h| h.is_absolute() && h != Path::new("/"))
        && let Ok(rel) = canon(folder).strip_prefix(canon(&h))
    {
        return format!("~/{}", rel.display());
    }
    folder.display().to_string()
}

/// The program a check's output says could not be found, and whether a shell said so (`sh: 1: NAME: not found`,
/// `bash: NAME: command not found`, `make: NAME: Command not found`) rather than some other program (`env: 'NAME':
/// No such file or directory`).
fn missing_program(output: &str) -> Option<(String, bool)> {
    const MARKERS: &[(&str, bool)] = &[
        (": not found", true),
        (": command not found", true),
        (": Command not found", true),
        (": No such file or directory", false),
    ];
    for line in output.lines() {
        for &(marker, shell) in MARKERS {
            let Some(at) = line.find(marker) else {
                continue;
            };
            let name = line[..at]
                .rsplit(": ")
                .next()
                .unwrap_or_default()
                .trim()
                .trim_matches(|c| matches!(c, '\'' | '"' | '`'));
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                return Some((name.to_string(), shell));
            }
        }
    }
    None
}

/// The last `n` lines of a check's output on one line, control characters shown as `<U+XXXX>`.
fn last_lines(output: &str, n: usize) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        return "(no output)".into();
    }
    visible(&tail.join(" | "))
}

/// `text` with every control character shown as `<U+XXXX>`: a check's output never reaches the terminal raw.
fn visible(text: &str) -> String {
    crate::screen::text(text).replace(['\n', '\t'], " ")
}

/// Whether the policy may be used as it is: trusted, or naming neither commands nor a key variable.
fn trusted_check(loaded: &policy::LoadedPolicy, root: &std::path::Path) -> Check {
    match crate::trust::require(loaded, root) {
        Ok(()) if loaded.path.is_some() && crate::trust::needs_trust(&loaded.policy) => {
            check(true, "trust", "trusted as it is now".into())
        }
        Ok(()) => check(
            true,
            "trust",
            "no trust needed: the policy names no commands and no key variable".into(),
        ),
        Err(e) => check(false, "trust", said(&e)),
    }
}

/// Which variable's value goes to which URL (never the value), and whether it is set.
fn key(policy: &Policy) -> Check {
    let dest = policy.key_destination();
    let Some(var) = policy.api_key_env() else {
        return check(true, "key", dest);
    };
    match policy.api_key() {
        Some((from, _)) if from == var => check(true, "key", format!("{var} is set; {dest}")),
        Some((from, _)) => check(
            true,
            "key",
            format!(
                "{var} is not set; {from} (the plugin's provider_api_key) is sent to {}",
                policy.base_url()
            ),
        ),
        None => check(
            false,
            "key",
            format!(
                "{var} is not set; export it in the environment that starts the worker{}; {dest}",
                match policy.plugin_key_allowed() {
                    true => " (or set the Claude Code plugin's provider_api_key)",
                    false => "",
                }
            ),
        ),
    }
}

/// `GET {base_url}/models`, with the key when there is one.
fn endpoint(policy: &Policy) -> Check {
    match Endpoint::from_policy(policy) {
        Err(_) => check(
            false,
            "endpoint",
            format!("{} not checked: no key", policy.base_url()),
        ),
        Ok(ep) => match ep.get_status("models") {
            Ok(s) if (200..300).contains(&s) => check(
                true,
                "endpoint",
                format!("{}/models answered HTTP {s}", ep.base_url),
            ),
            Ok(s @ (401 | 403)) => check(
                false,
                "endpoint",
                format!(
                    "{}/models answered HTTP {s}: the key was rejected; check it",
                    ep.base_url
                ),
            ),
            Ok(s) => check(
                false,
                "endpoint",
                format!(
                    "{}/models answered HTTP {s}; check [provider] base_url",
                    ep.base_url
                ),
            ),
            Err(e) => check(false, "endpoint", said(&e)),
        },
    }
}

/// Which confinement validation commands will run in, and whether validation on propose can run at all.
fn confinement(policy: &Policy) -> Check {
    let v = &policy.validation;
    let on_propose = v.on_propose && !v.commands.is_empty();
    match (confine::bubblewrap(), v.isolation) {
        (Ok(b), Isolation::Confined) => check(
            true,
            "confine",
            format!(
                "{} at {}: checks on proposals run confined (no network, own PID namespace, only the sandbox copy \
                 writable){}; checks after an apply run in their own PID namespace",
                b.version,
                b.path.display(),
                match v.on_propose_default {
                    Some(crate::policy::defaults::OnPropose::On) => {
                        ", and validation on propose and the one repair round are on by default here"
                    }
                    _ => "",
                }
            ),
        ),
        (found, Isolation::Copy) => check(
            true,
            "confine",
            format!(
                "[validation] isolation = \"copy\": checks on proposals run UNCONFINED in a temporary copy, with \
                 your rights and network{}",
                match found {
                    Ok(_) => "; checks after an apply run in their own PID namespace".to_string(),
                    Err(why) => format!("; no bubblewrap: {why}"),
                }
            ),
        ),
        (Err(why), Isolation::Confined) if on_propose => {
            check(false, "confine", confine::unavailable(why).to_string())
        }
        (Err(why), Isolation::Confined) => check(
            true,
            "confine",
            match &v.on_propose_default {
                Some(crate::policy::defaults::OnPropose::Off(off)) => format!(
                    "{off}. Checks after an apply run in a process group only (a daemon they start may outlive \
                     them)"
                ),
                _ => format!(
                    "no confinement: {why}. Not needed while on_propose is off; checks after an apply run in a \
                     process group only (a daemon they start may outlive them)"
                ),
            },
        ),
    }
}

/// Whether the answer is constrained by a JSON schema, and through which field.
fn output(policy: &Policy) -> String {
    use crate::patch::reader::AnswerFormat;
    let format = policy.answer_format();
    let kind = policy.provider.kind;
    match (format, kind.schema_field(), kind) {
        (AnswerFormat::Json, Some(field), _) => format!(
            "JSON edits, constrained by a JSON schema sent in {field}: the server decodes only answers that fit it"
        ),
        (AnswerFormat::Json, None, policy::ProviderKind::Deepseek) => {
            "JSON edits, with the schema sent in text.format; whether it is enforced is up to the provider".into()
        }
        (AnswerFormat::Json, None, _) => {
            "JSON edits, with the schema sent in response_format; whether it is enforced is up to the provider's \
             model"
                .into()
        }
        (f, Some(_), _) => format!(
            "{} edits, not constrained ([edit] format = \"{}\"); \"auto\" or \"json\" would constrain them by a \
             schema on this server",
            f.name(),
            policy.edit.format.name()
        ),
        (f, None, _) => format!(
            "{} edits, not constrained by a schema ([edit] format = \"{}\"; with \"json\" the schema is sent, \
             and whether it is enforced is up to the provider)",
            f.name(),
            policy.edit.format.name()
        ),
    }
}

/// How many candidates are asked, how many at once, and the server's slots when it reports them.
fn sampling(policy: &Policy, model: &str) -> String {
    let candidates = policy.candidates();
    if candidates <= 1 {
        return "1 answer per proposal ([sampling] candidates)".into();
    }
    let (at_once, slots) = crate::service::at_once(policy, model);
    let parallel = policy.parallel();
    match slots {
        Some(s) if (s.slots as usize) < parallel as usize => format!(
            "{candidates} candidates, {at_once} at once: [sampling] parallel is {parallel} but the server has {} \
             slot(s) ({}); start it with more slots (scripts/local-model.sh: LOCAL_MODEL_SLOTS; llama-server \
             --parallel) to ask more at once",
            s.slots, s.detail
        ),
        Some(s) => format!(
            "{candidates} candidates, {at_once} at once ([sampling] parallel; the server has {} slot(s): {})",
            s.slots, s.detail
        ),
        None if parallel <= 1 => {
            format!("{candidates} candidates, one at a time ([sampling] parallel = 1)")
        }
        None => format!(
            "{candidates} candidates, {at_once} at once ([sampling] parallel; the server does not report its slots: \
             keep parallel at most what it answers at once)"
        ),
    }
}
