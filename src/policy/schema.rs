//! The policy file as a whole: its sections, the default policy of an allowed root, `--provider`, and the checks
//! run on every policy read, in order.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::policy::ProviderKind;
use crate::policy::edit::Edit;
use crate::policy::ledger::LedgerSettings;
use crate::policy::limits::Limits;
use crate::policy::models::Models;
use crate::policy::paths::Paths;
use crate::policy::provider::{Effort, ProviderSection, default_temperature};
use crate::policy::repair::Repair;
use crate::policy::sampling::Sampling;
use crate::policy::validation::Validation;

/// The policy file of a workspace, as read (see the `policy` module's doc); [`load`](crate::policy::load()) finds
/// and checks it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// `[provider]`: which model server, how to reach it, how to sample.
    pub provider: ProviderSection,
    /// `[models]`: which models, their context window, the pairs that may be called.
    #[serde(default)]
    pub models: Models,
    /// `[paths]`: which files the model may see and edit.
    #[serde(default)]
    pub paths: Paths,
    /// `[limits]`: the sizes, counts and times the worker keeps to.
    #[serde(default)]
    pub limits: Limits,
    /// `[validation]`: the commands that check an edit, and how they run.
    #[serde(default)]
    pub validation: Validation,
    /// `[edit]`: how the model is asked to write its edit.
    #[serde(default)]
    pub edit: Edit,
    /// `[repair]`: the one bounded repair round.
    #[serde(default)]
    pub repair: Repair,
    /// `[sampling]`: how many answers one proposal asks for, and how.
    #[serde(default)]
    pub sampling: Sampling,
    /// `[ledger]`: what `stats` needs to put a price on what delegation saved.
    #[serde(default)]
    pub ledger: LedgerSettings,
}

impl Policy {
    /// The policy used for a workspace under `LOCAL_LLM_ALLOWED_ROOTS` that has no policy file: a local llama.cpp
    /// server, every non-secret path allowed, no validation commands.
    pub fn default_for_allowed_root() -> Policy {
        Policy {
            provider: ProviderSection {
                kind: ProviderKind::Llamacpp,
                base_url: None,
                api_key_env: None,
                temperature: default_temperature(),
                reasoning_effort: Effort::default(),
                price_input_per_mtok: None,
                price_output_per_mtok: None,
            },
            models: Models::default(),
            paths: Paths::default(),
            limits: Limits::default(),
            validation: Validation::default(),
            edit: Edit::default(),
            repair: Repair::default(),
            sampling: Sampling::default(),
            ledger: LedgerSettings::default(),
        }
    }

    /// The same policy talking to another provider with that provider's defaults (the CLI's `--provider`).
    pub fn with_provider(mut self, kind: ProviderKind) -> Policy {
        if kind != self.provider.kind {
            self.provider.kind = kind;
            self.provider.base_url = None;
            self.provider.api_key_env = None;
            self.models.flash = None;
            self.models.pro = None;
            self.models.context_window = None;
        }
        self
    }

    /// Refuse what the policy file at `source` says that cannot work or would weaken a limit, with the fix.
    pub(super) fn check(&self, source: &str) -> Result<()> {
        self.check_required()
            .and_then(|()| {
                crate::workspace::glob::check_paths(
                    &self.paths.allowed,
                    &self.paths.denied,
                    &self.paths.unlock_secrets,
                )
            })
            .and_then(|()| self.check_limits())
            .and_then(|()| self.check_provider())
            .and_then(|()| self.check_validation())
            .and_then(|()| self.check_command_environment())
            .and_then(|()| self.check_repair())
            .map_err(|what| Error::Policy(format!("{source}: {what}")))
    }

    /// What must be given: a base URL for a generic server, a path to read.
    pub(super) fn check_required(&self) -> std::result::Result<(), String> {
        if self.provider.kind == ProviderKind::Openai && self.provider.base_url.is_none() {
            return Err("[provider] kind = \"openai\" needs base_url (for example \"http://127.0.0.1:8000/v1\")".into());
        }
        if self.paths.allowed.is_empty() {
            return Err(
                "[paths] allowed is empty, so no file could be read; list globs such as \"src/**\""
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::policy::parse;

    #[test]
    fn unknown_keys_and_keys_in_the_file_are_refused() {
        let err = parse(
            "[provider]\nkind = \"llamacpp\"\n[limits]\nmax_fle_bytes = 3\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("max_fle_bytes"), "{err}");
        let err = parse(
            "[provider]\nkind = \"openrouter\"\napi_key_env = \"sk-or-v1-abcdef\"\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("NAME of an environment variable"),
            "{err}"
        );
        assert!(!err.to_string().contains("abcdef"), "the key leaked: {err}");
    }
}
