//! `[provider]`: which model server, how to reach it (its URL, the NAME of the key's variable, the plugin's key and
//! where it may go), how to sample, the reasoning effort and the prices.

use serde::Deserialize;

use crate::policy::{Policy, ProviderKind};

/// The variable the Claude Code plugin sets from its user configuration (the provider key the user entered, kept in
/// the host's keychain or credentials file): read when the policy's own key variable is unset or empty.
pub const PLUGIN_KEY_ENV: &str = "LOCAL_LLM_API_KEY";

/// How hard a reasoning model should think; mapped per provider (`provider::reasoning_field`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// No reasoning asked for.
    None,
    /// A little reasoning.
    Low,
    /// Some reasoning.
    Medium,
    /// Much reasoning (the default).
    #[default]
    High,
    /// The most the model offers; sent as `high` to providers that have no more.
    Max,
}

impl Effort {
    /// Its name in the policy file (`[provider] reasoning_effort`).
    pub fn name(self) -> &'static str {
        match self {
            Effort::None => "none",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

/// `[provider]`: the model server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// Which kind of server; it decides the API spoken and the defaults.
    pub kind: ProviderKind,
    /// The server's base URL; `None`: the kind's default (see [`Policy::base_url`]).
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key; never the key itself.
    pub api_key_env: Option<String>,
    /// Sampling temperature sent with every request.
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    /// Reasoning effort for models that reason: none | low | medium | high | max.
    #[serde(default)]
    pub reasoning_effort: Effort,
    /// What a million prompt tokens cost at this provider (any currency; `stats` turns tokens into money with it).
    pub price_input_per_mtok: Option<f64>,
    /// What a million answer tokens cost.
    pub price_output_per_mtok: Option<f64>,
}

/// `[provider] temperature` when the policy does not set it.
pub const DEFAULT_TEMPERATURE: f32 = 0.2;

pub(super) fn default_temperature() -> f32 {
    DEFAULT_TEMPERATURE
}

impl Policy {
    /// The server's base URL without a trailing `/`: `[provider] base_url`, else the kind's default.
    pub fn base_url(&self) -> String {
        let url = self
            .provider
            .base_url
            .clone()
            .unwrap_or_else(|| self.provider.kind.defaults().base_url.to_string());
        url.trim_end_matches('/').to_string()
    }

    /// The name of the variable that holds the key: `[provider] api_key_env`, else the kind's default; `None`
    /// when there is no key.
    pub fn api_key_env(&self) -> Option<String> {
        self.provider.api_key_env.clone().or_else(|| {
            self.provider
                .kind
                .defaults()
                .api_key_env
                .map(str::to_string)
        })
    }

    /// The provider key and the variable it was read from: the variable [`Policy::api_key_env`] names, else (when
    /// that one is unset or empty, and only when [`Policy::plugin_key_allowed`]) [`PLUGIN_KEY_ENV`], which the Claude
    /// Code plugin fills from its user configuration. `None` when the provider takes no key or no variable that may
    /// be used holds one.
    pub fn api_key(&self) -> Option<(String, String)> {
        self.api_key_from(|name| std::env::var(name).ok())
    }

    /// [`Policy::api_key`] with the variables read by `env` (pure, for the tests).
    fn api_key_from(&self, env: impl Fn(&str) -> Option<String>) -> Option<(String, String)> {
        let var = self.api_key_env()?;
        let read = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        read(&var).map(|k| (var.clone(), k)).or_else(|| {
            self.plugin_key_allowed()
                .then(|| read(PLUGIN_KEY_ENV).map(|k| (PLUGIN_KEY_ENV.to_string(), k)))
                .flatten()
        })
    }

    /// Whether the plugin's key ([`PLUGIN_KEY_ENV`], stored for a hosted provider) may stand in for the policy's
    /// unset variable: only for a hosted kind (Hugging Face, OpenRouter, DeepSeek) at its official endpoint, never
    /// for `llamacpp`, the generic `openai` kind or a changed `base_url`. A policy that names `LOCAL_LLM_API_KEY` as
    /// its `api_key_env` reads it as its own variable, wherever its URL.
    pub fn plugin_key_allowed(&self) -> bool {
        let kind = self.provider.kind;
        matches!(
            kind,
            ProviderKind::Huggingface | ProviderKind::Openrouter | ProviderKind::Deepseek
        ) && self.base_url() == kind.defaults().base_url.trim_end_matches('/')
    }

    /// Which variable's value goes to which URL, in words (the variable's NAME only, never its value): for `doctor`
    /// and the trust summary.
    pub fn key_destination(&self) -> String {
        let url = self.base_url();
        let Some(var) = self.api_key_env() else {
            return format!("sends no key to {url} (no [provider] api_key_env)");
        };
        let plugin = match (var == PLUGIN_KEY_ENV, self.plugin_key_allowed()) {
            (true, _) => String::new(),
            (false, true) => format!(" (when {var} is unset: {PLUGIN_KEY_ENV}, the plugin's key)"),
            (false, false) => format!(
                " ({PLUGIN_KEY_ENV}, the plugin's key, is never sent here: it goes only to a hosted provider at its \
                 official endpoint)"
            ),
        };
        format!("sends the value of {var} to {url}{plugin}")
    }

    /// The provider key ([`Policy::api_key`]) as a [`Secret`](crate::secret::Secret) to look for in what servers
    /// send and to redact from what is shown; none when there is no key.
    pub fn secret(&self) -> crate::secret::Secret {
        self.api_key()
            .map(|(_, k)| crate::secret::Secret::new(&k))
            .unwrap_or_default()
    }

    /// `[provider] api_key_env` is a variable's name (never a key), `base_url` an http(s) URL.
    pub(super) fn check_provider(&self) -> std::result::Result<(), String> {
        for (key, v) in [
            (
                "[provider] price_input_per_mtok",
                self.provider.price_input_per_mtok,
            ),
            (
                "[provider] price_output_per_mtok",
                self.provider.price_output_per_mtok,
            ),
            (
                "[ledger] primary_price_input_per_mtok",
                self.ledger.primary_price_input_per_mtok,
            ),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && (0.0..=1_000_000.0).contains(&v))
            {
                return Err(format!(
                    "{key} = {v} is not a price: give what a million tokens cost, 0 to 1000000, or remove the line"
                ));
            }
        }
        if let Some(env) = &self.provider.api_key_env
            && (env.is_empty() || !env.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        {
            return Err(
                "[provider] api_key_env must be the NAME of an environment variable (letters, digits, _); \
                 never put a key in this file"
                    .to_string(),
            );
        }
        if let Some(url) = &self.provider.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "[provider] base_url {url:?} must start with http:// or https://"
            ));
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
    fn prices_are_refused_unless_they_are_prices() {
        let with = |extra: &str| {
            parse(
                &format!("[provider]\nkind = \"deepseek\"\n{extra}\n"),
                Path::new("p.toml"),
            )
        };
        let p = with("price_input_per_mtok = 0.28\nprice_output_per_mtok = 0.42\n[ledger]\nprimary_price_input_per_mtok = 3")
            .unwrap();
        assert_eq!(p.provider.price_output_per_mtok, Some(0.42));
        assert_eq!(p.ledger.primary_price_input_per_mtok, Some(3.0));
        for (bad, key) in [
            (
                "price_input_per_mtok = -1.0",
                "[provider] price_input_per_mtok = -1",
            ),
            (
                "price_output_per_mtok = nan",
                "[provider] price_output_per_mtok = NaN",
            ),
            (
                "[ledger]\nprimary_price_input_per_mtok = inf",
                "[ledger] primary_price_input_per_mtok = inf",
            ),
        ] {
            let err = with(bad).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains("is not a price"), "{err}");
        }
    }

    #[test]
    fn the_plugin_key_goes_only_to_a_hosted_provider_at_its_official_endpoint() {
        let env = |name: &str| (name == PLUGIN_KEY_ENV).then(|| "sk-plugin".to_string());
        let policy = |text: &str| parse(text, Path::new("p.toml")).unwrap();
        for kind in ["huggingface", "openrouter", "deepseek"] {
            let official = policy(&format!("[provider]\nkind = \"{kind}\"\n"));
            assert!(official.plugin_key_allowed(), "{kind}");
            assert_eq!(
                official.api_key_from(env).map(|(v, _)| v).as_deref(),
                Some(PLUGIN_KEY_ENV),
                "{kind}"
            );
            let slash = format!(
                "[provider]\nkind = \"{kind}\"\nbase_url = \"{}/\"\n",
                ProviderKind::Huggingface.defaults().base_url
            );
            // Another kind's official URL, or any other URL, is not this kind's endpoint.
            let moved = policy(&format!(
                "[provider]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
            ));
            assert!(moved.api_key_from(env).is_none(), "{kind}");
            assert_eq!(policy(&slash).plugin_key_allowed(), kind == "huggingface");
        }
        for text in [
            "[provider]\nkind = \"llamacpp\"\napi_key_env = \"LLAMA_API_KEY\"\n",
            "[provider]\nkind = \"openai\"\nbase_url = \"http://10.0.0.1/v1\"\napi_key_env = \"K\"\n",
        ] {
            assert!(policy(text).api_key_from(env).is_none(), "{text}");
        }
        // Named explicitly by the policy, it is the policy's own variable, wherever the URL.
        let named =
            policy("[provider]\nkind = \"llamacpp\"\napi_key_env = \"LOCAL_LLM_API_KEY\"\n");
        assert_eq!(
            named.api_key_from(env).map(|(v, _)| v).as_deref(),
            Some(PLUGIN_KEY_ENV)
        );
    }

    #[test]
    fn a_full_provider_table_is_read() {
        let p = with_section(
            "provider",
            "base_url = \"http://10.0.0.2:8080/v1\"\napi_key_env = \"MY_KEY\"\ntemperature = 0.5\n\
             reasoning_effort = \"low\"\nprice_input_per_mtok = 0.5\nprice_output_per_mtok = 1.5",
        )
        .unwrap();
        assert_eq!(p.provider.kind, ProviderKind::Llamacpp);
        assert_eq!(p.base_url(), "http://10.0.0.2:8080/v1");
        assert_eq!(p.api_key_env().as_deref(), Some("MY_KEY"));
        assert_eq!(p.provider.temperature, 0.5);
        assert_eq!(p.provider.reasoning_effort, Effort::Low);
        assert_eq!(p.provider.price_input_per_mtok, Some(0.5));
        assert_eq!(p.provider.price_output_per_mtok, Some(1.5));
    }

    #[test]
    fn an_unknown_provider_key_or_kind_is_refused_by_name() {
        assert_unknown_key_refused("provider");
        let err = parse("[provider]\nkind = \"gpt\"\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown variant `gpt`") && err.contains("`llamacpp`"),
            "{err}"
        );
        let err = parse("[models]\nflash = \"m\"\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `provider`"), "{err}");
    }

    #[test]
    fn a_provider_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("provider", "temperature = \"hot\"", "f32");
        assert_wrong_type_refused("provider", "base_url = 8080", "string");
        assert_wrong_type_refused("provider", "price_input_per_mtok = \"free\"", "f64");
    }

    #[test]
    fn a_provider_table_with_only_its_kind_takes_the_kinds_defaults() {
        let p = with_section("provider", "").unwrap();
        assert_eq!(p.provider.base_url, None);
        assert_eq!(p.base_url(), "http://127.0.0.1:8080/v1");
        assert_eq!(p.api_key_env(), None);
        assert_eq!(p.provider.temperature, DEFAULT_TEMPERATURE);
        assert_eq!(p.provider.reasoning_effort, Effort::High);
        assert_eq!(p.provider.price_input_per_mtok, None);
        assert_eq!(p.provider.price_output_per_mtok, None);
        for e in [
            Effort::None,
            Effort::Low,
            Effort::Medium,
            Effort::High,
            Effort::Max,
        ] {
            let line = format!("reasoning_effort = \"{}\"", e.name());
            assert_eq!(
                with_section("provider", &line)
                    .unwrap()
                    .provider
                    .reasoning_effort,
                e
            );
        }
    }
}
