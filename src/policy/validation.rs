//! `[validation]`: the commands that check an edit, where and how long they run, what of the environment and the
//! host they get, and what the sandbox copy holds; their checks.

use serde::Deserialize;

use crate::error::Error;
use crate::policy::{PLUGIN_KEY_ENV, Policy};

/// `[validation]`: the commands that check an edit, and how they run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Validation {
    /// Commands run with `sh -c` in the workspace after an apply; any non-zero exit restores the previous bytes.
    pub commands: Vec<String>,
    /// Per command.
    pub timeout_secs: u64,
    /// Also run the commands on every proposal before returning it, in a sandbox copy of the workspace. Unset:
    /// on where bubblewrap confines the checks ([`crate::policy::defaults`]).
    pub on_propose: bool,
    /// How `on_propose` was decided when the policy leaves it unset; `None` when it sets it or has no commands.
    #[serde(skip)]
    pub on_propose_default: Option<OnPropose>,
    /// Left out of the sandbox copy: a name matches a file or folder of that name at any depth, a name with `/` that
    /// workspace-relative path.
    pub sandbox_skip: Vec<String>,
    /// How validation on propose runs the model's code: `confined` (bubblewrap; refused when unavailable) or
    /// `copy` (an unconfined temporary copy: the model's code runs with the worker's rights).
    pub isolation: crate::confine::Isolation,
    /// Names of environment variables passed to the commands, besides PATH, LANG, LANGUAGE, LC_*, TZ, USER,
    /// LOGNAME, HOME and TMPDIR. Nothing else of the worker's environment reaches them.
    pub env: Vec<String>,
    /// Folders outside the workspace that a confined check may read (read-only; `~/` is the home folder):
    /// toolchains installed in the home folder, which is otherwise hidden. Missing ones are skipped.
    pub sandbox_read: Vec<String>,
    /// Files the sandbox copy keeps although it leaves them out by default (`[paths] denied`, policy files, secret
    /// names): patterns read as `[paths]` reads them. What a check reads there can reach the model in the repair
    /// round.
    pub sandbox_include: Vec<String>,
    /// The size of each fresh folder a confined check may write besides the copy (`/tmp`, HOME, `/dev/shm`), in MiB.
    pub sandbox_tmp_mib: u64,
    /// What the checks of one proposal may add to the filesystem holding the sandbox copy, in MiB (and never more
    /// than half of its free space).
    pub sandbox_write_mib: u64,
}

/// The variables passed to validation commands by default: where toolchains live, never credentials.
pub const DEFAULT_CHECK_ENV: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
];

/// The toolchain folders a confined check may read by default (those that exist).
pub const DEFAULT_SANDBOX_READ: &[&str] = &[
    "~/.cargo",
    "~/.rustup",
    "~/.pyenv",
    "~/.local/bin",
    "~/.local/lib",
    "~/.nvm",
    "~/.volta",
    "~/.asdf",
    "~/.sdkman",
    "~/.deno",
    "~/.bun",
    "~/go",
];

/// `[validation] sandbox_tmp_mib` by default: 512 MiB for each of `/tmp`, HOME and `/dev/shm` (memory-backed).
pub const DEFAULT_SANDBOX_TMP_MIB: u64 = 512;

/// `[validation] sandbox_write_mib` by default: 4 GiB (a build from scratch in the copy), and never more than half
/// of the free space of the filesystem holding it.
pub const DEFAULT_SANDBOX_WRITE_MIB: u64 = 4096;

/// `[validation] timeout_secs` when the policy does not set it: seconds per command.
pub const DEFAULT_CHECK_TIMEOUT_SECS: u64 = 300;

/// The folders a sandbox copy leaves out by default.
pub const DEFAULT_SANDBOX_SKIP: &[&str] = &["target", "node_modules", ".git"];

/// How `[validation] on_propose` was decided for a policy that does not set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnPropose {
    /// On: bubblewrap confines the checks here and the policy has validation commands.
    On,
    /// Off, and why (with what to install or set).
    Off(String),
}

impl Default for Validation {
    fn default() -> Self {
        Validation {
            commands: Vec::new(),
            timeout_secs: DEFAULT_CHECK_TIMEOUT_SECS,
            on_propose: false,
            on_propose_default: None,
            sandbox_skip: DEFAULT_SANDBOX_SKIP.iter().map(|s| s.to_string()).collect(),
            isolation: crate::confine::Isolation::Confined,
            env: DEFAULT_CHECK_ENV.iter().map(|s| s.to_string()).collect(),
            sandbox_read: DEFAULT_SANDBOX_READ.iter().map(|s| s.to_string()).collect(),
            sandbox_include: Vec::new(),
            sandbox_tmp_mib: DEFAULT_SANDBOX_TMP_MIB,
            sandbox_write_mib: DEFAULT_SANDBOX_WRITE_MIB,
        }
    }
}

impl Policy {
    /// The variables `[validation] env` passes to validation commands; never a key's variable.
    pub fn check_env(&self) -> Vec<String> {
        let key = self.api_key_env();
        self.validation
            .env
            .iter()
            .filter(|n| key.as_deref() != Some(n.as_str()) && n.as_str() != PLUGIN_KEY_ENV)
            .cloned()
            .collect()
    }

    /// `[validation]`: no empty command, sandbox skips that stay in the workspace (the timeout:
    /// [`BOUNDS`](crate::policy::bounds::BOUNDS)).
    pub(super) fn check_validation(&self) -> std::result::Result<(), String> {
        for c in &self.validation.commands {
            if c.trim().is_empty() {
                return Err("[validation] commands holds an empty command; remove it".into());
            }
        }
        crate::workspace::glob::sandbox_include(&self.validation.sandbox_include).map_err(|e| {
            match e {
                Error::Policy(m) => m,
                other => other.to_string(),
            }
        })?;
        for s in &self.validation.sandbox_skip {
            let t = s.trim().trim_end_matches('/');
            if t.is_empty() || t.starts_with('/') || t.split('/').any(|c| c == ".." || c == ".") {
                return Err(format!(
                    "[validation] sandbox_skip entry {s:?} is not a name or a workspace-relative path; write a \
                     folder name such as \"target\" or a path such as \"web/dist\""
                ));
            }
        }
        Ok(())
    }

    /// What validation commands get: `[validation] env` names variables (never the key's), `sandbox_read` absolute
    /// folders or folders under `~/`.
    pub(super) fn check_command_environment(&self) -> std::result::Result<(), String> {
        for name in &self.validation.env {
            if name.is_empty()
                || name.as_bytes()[0].is_ascii_digit()
                || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "[validation] env entry {name:?} is not the name of an environment variable (letters, digits, _)"
                ));
            }
            if self.api_key_env().as_deref() == Some(name.as_str()) || name == PLUGIN_KEY_ENV {
                return Err(format!(
                    "[validation] env names {name}, the provider key's variable: the key never reaches validation \
                     commands; remove it"
                ));
            }
        }
        for entry in &self.validation.sandbox_read {
            let rest = entry.strip_prefix("~/").unwrap_or(entry);
            if !(entry.starts_with('/') || entry.starts_with("~/"))
                || rest.split('/').any(|c| c == ".." || c == ".")
                || entry == "/"
            {
                return Err(format!(
                    "[validation] sandbox_read entry {entry:?} is not an absolute folder or one under ~/ (such as \
                     \"~/.cargo\" or \"/opt/sdk\"); write it that way"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };
    use std::path::Path;

    use crate::policy::parse;

    #[test]
    fn isolation_env_and_sandbox_read_are_checked() {
        let p = parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.validation.isolation, crate::confine::Isolation::Confined);
        assert_eq!(p.validation.env.len(), DEFAULT_CHECK_ENV.len());
        let p = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\nisolation = \"copy\"\nenv = [\"MY_VAR\"]\nsandbox_read = [\"~/.cache/x\", \"/opt/sdk\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.validation.isolation, crate::confine::Isolation::Copy);
        assert_eq!(p.check_env(), vec!["MY_VAR".to_string()]);
        for (bad, needle) in [
            ("isolation = \"none\"", "unknown variant"),
            (
                "env = [\"OPENROUTER_API_KEY\"]",
                "the provider key's variable",
            ),
            ("env = [\"A B\"]", "not the name of an environment variable"),
            (
                "sandbox_read = [\"relative/dir\"]",
                "not an absolute folder",
            ),
            ("sandbox_read = [\"~/../etc\"]", "not an absolute folder"),
            ("sandbox_read = [\"/\"]", "not an absolute folder"),
        ] {
            let err = parse(
                &format!("[provider]\nkind = \"openrouter\"\n[validation]\n{bad}\n"),
                Path::new("p.toml"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn a_full_validation_table_is_read() {
        let p = with_section(
            "validation",
            "commands = [\"make test\"]\ntimeout_secs = 60\non_propose = true\nsandbox_skip = [\"build\"]\n\
             isolation = \"copy\"\nenv = [\"MY_VAR\"]\nsandbox_read = [\"/opt/sdk\"]\n\
             sandbox_include = [\"tests/fixtures/*.pem\"]\nsandbox_tmp_mib = 64\nsandbox_write_mib = 128",
        )
        .unwrap();
        let expected = Validation {
            commands: vec!["make test".into()],
            timeout_secs: 60,
            on_propose: true,
            on_propose_default: None,
            sandbox_skip: vec!["build".into()],
            isolation: crate::confine::Isolation::Copy,
            env: vec!["MY_VAR".into()],
            sandbox_read: vec!["/opt/sdk".into()],
            sandbox_include: vec!["tests/fixtures/*.pem".into()],
            sandbox_tmp_mib: 64,
            sandbox_write_mib: 128,
        };
        assert_eq!(p.validation, expected);
    }

    #[test]
    fn an_unknown_validation_key_is_refused_by_name() {
        assert_unknown_key_refused("validation");
    }

    #[test]
    fn a_validation_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("validation", "on_propose = \"yes\"", "boolean");
        assert_wrong_type_refused("validation", "commands = \"make test\"", "sequence");
        assert_wrong_type_refused("validation", "timeout_secs = \"5m\"", "u64");
    }

    #[test]
    fn validation_left_out_runs_nothing_and_confines_what_it_would_run() {
        let v = with_section("validation", "").unwrap().validation;
        assert_eq!(v, Validation::default());
        assert!(v.commands.is_empty() && !v.on_propose);
        assert_eq!(v.timeout_secs, DEFAULT_CHECK_TIMEOUT_SECS);
        assert_eq!(v.isolation, crate::confine::Isolation::Confined);
        assert_eq!(v.sandbox_skip, DEFAULT_SANDBOX_SKIP);
        assert_eq!(v.env, DEFAULT_CHECK_ENV);
        assert_eq!(v.sandbox_read, DEFAULT_SANDBOX_READ);
        assert!(v.sandbox_include.is_empty());
        assert_eq!(
            (v.sandbox_tmp_mib, v.sandbox_write_mib),
            (DEFAULT_SANDBOX_TMP_MIB, DEFAULT_SANDBOX_WRITE_MIB)
        );
    }
}
