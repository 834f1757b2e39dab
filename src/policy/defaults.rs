//! The defaults that depend on this machine and on the server, for the keys a policy leaves unset.
//!
//! - Validation on propose and the one repair round: where bubblewrap can confine the checks here
//!   ([`crate::confine::bubblewrap`]) and the policy has validation commands, `[validation] on_propose` is true
//!   and `[repair] attempts` is 1 unless the policy sets them. A proposal the primary reviews has then already
//!   passed the project's checks, or says exactly why not. Without bubblewrap (or with `isolation = "copy"`, which
//!   must be asked for by name) they stay off, and [`OnPropose::Off`] says why (`doctor` shows it).
//! - A local server ([`Policy::local_server`]: a llama.cpp, Ollama, LM Studio or vLLM kind, or a loopback
//!   `base_url`) gets several candidates per validated proposal ([`crate::policy::LOCAL_DEFAULT_CANDIDATES`]).
//!
//! What this module decides is applied once, when a policy file is parsed ([`resolve`]); `init-project` writes
//! the same values as explicit settings ([`for_new_policy`]).
//!
//! Not here: the values every machine shares (those are the other sections').

use super::validation::Validation;
use super::{Policy, RepairAttempts};
use crate::confine::{self, Isolation};

pub use super::validation::OnPropose;

/// Whether validation on propose can run confined on this machine: `Err` says why not and what to install.
pub fn confinement_here() -> std::result::Result<(), String> {
    confine::bubblewrap().map(|_| ()).map_err(str::to_string)
}

/// Whether `table` (a parsed policy file) sets `key` in `[section]`.
fn sets(table: &toml::Table, section: &str, key: &str) -> bool {
    table
        .get(section)
        .and_then(|s| s.as_table())
        .is_some_and(|s| s.contains_key(key))
}

/// Fill in the machine's defaults for the keys the policy file `text` leaves unset (see the module's doc).
/// `policy` is `text` parsed; a text that does not parse as TOML changes nothing (the parse already refused it).
pub(crate) fn resolve(policy: &mut Policy, text: &str) {
    let Ok(table) = text.parse::<toml::Table>() else {
        return;
    };
    resolve_with(
        policy,
        sets(&table, "validation", "on_propose"),
        sets(&table, "repair", "attempts"),
        confinement_here,
    );
}

/// [`resolve`], with what the file sets and the machine's confinement given (`here` is asked only when needed).
fn resolve_with(
    policy: &mut Policy,
    on_propose_set: bool,
    attempts_set: bool,
    here: impl Fn() -> std::result::Result<(), String>,
) {
    let v = &mut policy.validation;
    if v.commands.is_empty() || (on_propose_set && !v.on_propose) {
        return;
    }
    let able = match v.isolation {
        Isolation::Confined => here(),
        Isolation::Copy => Err(
            "[validation] isolation = \"copy\" runs the model's code unconfined, so validation on propose is on \
             only when the policy says on_propose = true"
                .to_string(),
        ),
    };
    if !on_propose_set {
        match &able {
            Ok(()) => {
                v.on_propose = true;
                v.on_propose_default = Some(OnPropose::On);
            }
            Err(why) => {
                v.on_propose_default = Some(OnPropose::Off(format!(
                    "validation on propose is off (the default where checks cannot be confined): {why}; then it \
                     turns on by itself, or set [validation] on_propose = true with isolation = \"copy\" to \
                     accept an unconfined copy"
                )));
            }
        }
    }
    if !attempts_set && v.on_propose && able.is_ok() {
        policy.repair.attempts = RepairAttempts::Once;
    }
}

/// What `init-project` writes for `[validation] on_propose` and `[repair] attempts` on this machine, and the
/// comment above `on_propose` that says why.
pub fn for_new_policy() -> (Validation, RepairAttempts, String) {
    new_policy_with(confinement_here())
}

/// [`for_new_policy`] for a machine whose confinement is `here`.
pub fn new_policy_with(
    here: std::result::Result<(), String>,
) -> (Validation, RepairAttempts, String) {
    let mut v = Validation::default();
    match here {
        Ok(()) => {
            v.on_propose = true;
            let why = "# On: bubblewrap confines the checks here (the default wherever it does and commands are set)."
                .to_string();
            (v, RepairAttempts::Once, why)
        }
        Err(why) => (
            v,
            RepairAttempts::Never,
            format!(
                "# Off: the checks cannot be confined here ({}).\n# Once they can, set true.",
                why.replace('\n', " ")
            ),
        ),
    }
}

impl Policy {
    /// Whether the model server is local: a llama.cpp, Ollama, LM Studio or vLLM kind, or any kind whose
    /// `base_url` names a loopback host (`localhost`, `127.0.0.0/8`, `::1`). Its tokens cost only time.
    pub fn local_server(&self) -> bool {
        self.provider.kind.is_local() || loopback(&self.base_url())
    }
}

/// Whether `url`'s host is a loopback one.
fn loopback(url: &str) -> bool {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    let host_port = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(extra: &str) -> Policy {
        let text = format!("[provider]\nkind = \"openai\"\n{extra}");
        toml::from_str(&text).unwrap()
    }

    const CHECKS: &str = "[validation]\ncommands = [\"make test\"]\n";

    #[test]
    fn validation_and_repair_are_on_where_checks_can_be_confined() {
        let mut p = policy(CHECKS);
        resolve_with(&mut p, false, false, || Ok(()));
        assert!(p.validation.on_propose);
        assert_eq!(p.repair.attempts, RepairAttempts::Once);
        assert_eq!(p.validation.on_propose_default, Some(OnPropose::On));
    }

    #[test]
    fn without_bubblewrap_validation_stays_off_and_says_why() {
        let mut p = policy(CHECKS);
        resolve_with(&mut p, false, false, || Err("bwrap is not on PATH".into()));
        assert!(!p.validation.on_propose);
        assert_eq!(p.repair.attempts, RepairAttempts::Never);
        match p.validation.on_propose_default {
            Some(OnPropose::Off(why)) => assert!(why.contains("bwrap is not on PATH"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_the_policy_sets_wins_over_the_machine() {
        let mut p = policy("[validation]\ncommands = [\"make test\"]\non_propose = false\n");
        resolve_with(&mut p, true, false, || panic!("not asked"));
        assert!(!p.validation.on_propose);
        assert_eq!(p.repair.attempts, RepairAttempts::Never);
        let mut p = policy("[validation]\ncommands = [\"make test\"]\n[repair]\nattempts = 0\n");
        resolve_with(&mut p, false, true, || Ok(()));
        assert!(p.validation.on_propose);
        assert_eq!(p.repair.attempts, RepairAttempts::Never);
        // No commands: nothing to validate, nothing turned on.
        let mut p = policy("");
        resolve_with(&mut p, false, false, || panic!("not asked"));
        assert!(!p.validation.on_propose);
        // An unconfined copy is never chosen by default.
        let mut p = policy("[validation]\ncommands = [\"make test\"]\nisolation = \"copy\"\n");
        resolve_with(&mut p, false, false, || Ok(()));
        assert!(!p.validation.on_propose);
    }

    #[test]
    fn a_loopback_url_is_a_local_server() {
        for (url, local) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost/v1", true),
            ("http://[::1]:9000/v1", true),
            ("http://user@127.0.0.2:1/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://127.0.0.1.example.com/v1", false),
            ("http://10.0.0.5:8080/v1", false),
        ] {
            let mut p = policy("");
            p.provider.base_url = Some(url.to_string());
            assert_eq!(p.local_server(), local, "{url}");
        }
    }
}
