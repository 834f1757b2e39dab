//! `local-llm-worker doctor`: checks a workspace's setup one line at a time, each failure with its fix.
//!
//! Checks: the policy file is found and valid (and whose it is); whether it is trusted as it is now (an untrusted
//! policy that needs trust gets no request and runs nothing); which key variable goes to which URL and whether it
//! is set (its value is never printed); the endpoint answers `GET {base_url}/models`; which confinement validation commands will run in; routing of low and
//! medium complexity, and the `[models] active` allowlist for those routes; the context window of the
//! low-complexity model and where it comes from (the policy, the server, or the default); whether the answer is
//! constrained by a JSON schema and through which field; the candidates, how many are asked at once and the
//! server's slots; whether the edit format and candidates were chosen by `calibrate` (`[sampling] calibrated`),
//! else the command that measures them.

use crate::config::{self, Policy};
use crate::confine::{self, Isolation};
use crate::provider::http::Endpoint;
use crate::scope;

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

fn check(ok: bool, name: &'static str, detail: String) -> Check {
    Check { ok, name, detail }
}

/// Run every check for the workspace at `root_arg` (optionally as another provider).
pub fn run(root_arg: &str, provider: Option<config::ProviderKind>) -> Vec<Check> {
    let mut out = Vec::new();
    let root = match scope::root_from_arg(root_arg) {
        Ok(r) => r,
        Err(e) => return vec![check(false, "workspace", e.to_string())],
    };
    let loaded = match config::load_untrusted(&root) {
        Ok(l) => l,
        Err(e) => return vec![check(false, "policy", e.to_string())],
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
    out
}

/// Whether the policy may be used as it is: trusted, or naming neither commands nor a key variable.
fn trusted_check(loaded: &config::LoadedPolicy, root: &std::path::Path) -> Check {
    match crate::trust::require(loaded, root) {
        Ok(()) if loaded.path.is_some() && crate::trust::needs_trust(&loaded.policy) => {
            check(true, "trust", "trusted as it is now".into())
        }
        Ok(()) => check(
            true,
            "trust",
            "no trust needed: the policy names no commands and no key variable".into(),
        ),
        Err(e) => check(false, "trust", e.to_string()),
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
            Err(e) => check(false, "endpoint", e.to_string()),
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
                 writable); checks after an apply run in their own PID namespace",
                b.version,
                b.path.display()
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
            format!(
                "no confinement: {why}. Not needed while on_propose is off; checks after an apply run in a process \
                 group only (a daemon they start may outlive them)"
            ),
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
        (AnswerFormat::Json, None, config::ProviderKind::Deepseek) => {
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
             slot(s) ({}); start it with more slots (scripts/local-model.sh: LOCAL_MODEL_PARALLEL; llama-server \
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
