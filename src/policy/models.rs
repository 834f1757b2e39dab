//! `[models]`: the flash and pro models, the routing of a request to one of them, the context window and the pairs
//! that may be called.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::policy::{Policy, ProviderKind};

/// One `{provider, model}` pair of `[models] active`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivePair {
    /// The provider kind of the pair.
    pub provider: ProviderKind,
    /// The model id, as that provider spells it.
    pub model: String,
}

/// `[models]`: the models called and their context window.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Models {
    /// Used for `complexity = "low"`.
    pub flash: Option<String>,
    /// Used for `complexity = "medium"`.
    pub pro: Option<String>,
    /// The model's context window in tokens; a request whose estimated prompt plus output budget exceeds it is
    /// refused before sending. `None`: asked from the server (`provider::window`), else the provider's default.
    pub context_window: Option<u64>,
    /// When set, only these {provider, model} pairs may be called; anything else is refused before any request.
    pub active: Option<Vec<ActivePair>>,
}

impl Policy {
    /// The model for a complexity: `low` always uses flash, `medium` uses pro.
    pub fn model_for(&self, medium: bool) -> String {
        let d = self.provider.kind.defaults();
        if medium {
            self.models.pro.clone().unwrap_or_else(|| d.pro.to_string())
        } else {
            self.models
                .flash
                .clone()
                .unwrap_or_else(|| d.flash.to_string())
        }
    }

    /// Route a request to a model: complexity `low` always uses flash, whatever was asked; `medium` uses pro, or
    /// the alias (`flash`, `pro`) or full model id asked for. The pair must be in `[models] active` when that is set.
    pub fn route(&self, medium: bool, requested: Option<&str>) -> Result<String> {
        let model = match (medium, requested.map(str::trim).filter(|m| !m.is_empty())) {
            (false, _) | (true, Some("flash")) => self.model_for(false),
            (true, None | Some("pro")) => self.model_for(true),
            (true, Some(id)) => id.to_string(),
        };
        if let Some(active) = &self.models.active
            && !active
                .iter()
                .any(|p| p.provider == self.provider.kind && p.model == model)
        {
            return Err(Error::Policy(format!(
                "model {model:?} of provider {} is not in [models] active; add {{ provider = \"{}\", model = \"{model}\" }} \
                 there, or ask for a listed model",
                self.provider.kind.name(),
                self.provider.kind.name()
            )));
        }
        Ok(model)
    }

    /// `[models] context_window`, or the provider kind's default when it is not set. Requests are checked against
    /// `provider::window::for_model`, which asks the server before falling back to that default.
    pub fn context_window(&self) -> u64 {
        self.models
            .context_window
            .unwrap_or_else(|| self.provider.kind.default_context_window())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::policy::parse;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, refusal, with_section,
    };

    #[test]
    fn routing_uses_flash_for_low_and_pro_for_medium() {
        let p = parse("[provider]\nkind = \"openrouter\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.model_for(false), "z-ai/glm-5.3-flash");
        assert_eq!(p.model_for(true), "z-ai/glm-5.3");
    }

    #[test]
    fn a_full_models_table_is_read() {
        let p = with_section(
            "models",
            "flash = \"small\"\npro = \"big\"\ncontext_window = 32768\n\
             active = [{ provider = \"llamacpp\", model = \"small\" }]",
        )
        .unwrap();
        assert_eq!(p.model_for(false), "small");
        assert_eq!(p.model_for(true), "big");
        assert_eq!(p.context_window(), 32768);
        let pair = ActivePair {
            provider: ProviderKind::Llamacpp,
            model: "small".into(),
        };
        assert_eq!(p.models.active, Some(vec![pair]));
        assert_eq!(p.route(false, None).unwrap(), "small");
        let err = p.route(true, None).unwrap_err().to_string();
        assert!(
            err.contains("model \"big\" of provider llamacpp is not in [models] active"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_models_key_or_pair_key_is_refused_by_name() {
        assert_unknown_key_refused("models");
        let err = refusal(
            "models",
            "active = [{ provider = \"llamacpp\", model = \"m\", weight = 2 }]",
        );
        assert!(err.contains("unknown field `weight`"), "{err}");
    }

    #[test]
    fn a_models_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("models", "context_window = \"big\"", "u64");
        assert_wrong_type_refused("models", "flash = 7", "string");
        assert_wrong_type_refused("models", "active = \"all\"", "sequence");
    }

    #[test]
    fn models_left_out_are_the_providers_defaults() {
        let p = with_section("models", "").unwrap();
        assert_eq!((p.models.flash, p.models.pro), (None, None));
        assert_eq!((p.models.context_window, p.models.active), (None, None));
        let p = with_section("models", "").unwrap();
        assert_eq!(p.model_for(false), ProviderKind::Llamacpp.defaults().flash);
        assert_eq!(p.model_for(true), ProviderKind::Llamacpp.defaults().pro);
        assert_eq!(p.context_window(), 8192);
    }
}
