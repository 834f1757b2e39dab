//! `[edit]`: the format the model is asked to write its edit in, and what `auto` asks for on each provider.

use serde::Deserialize;

use crate::policy::Policy;

/// How the model is asked to write its edit (see `patch::reader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// `json` where the server constrains its output by a JSON schema
    /// ([`ProviderKind::schema_field`](crate::policy::ProviderKind::schema_field)), `udiff` elsewhere.
    #[default]
    Auto,
    /// A unified diff.
    Udiff,
    /// SEARCH/REPLACE blocks.
    SearchReplace,
    /// The whole new content of each file it changes (small files only).
    WholeFile,
    /// JSON edits of whole lines (constrained by a schema where the server supports one).
    Json,
    /// OpenAI's V4A patch (`*** Begin Patch`), the format of Codex's and GPT-OSS's `apply_patch`.
    ApplyPatch,
}

impl EditFormat {
    /// Its name in the policy file (`[edit] format`).
    pub fn name(self) -> &'static str {
        match self {
            EditFormat::Auto => "auto",
            EditFormat::Udiff => "udiff",
            EditFormat::SearchReplace => "search_replace",
            EditFormat::WholeFile => "whole_file",
            EditFormat::Json => "json",
            EditFormat::ApplyPatch => "apply_patch",
        }
    }
}

/// `[edit]`: how the model writes its edit.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The format asked for.
    #[serde(default)]
    pub format: EditFormat,
}

impl Policy {
    /// The answer format to ask for.
    pub fn answer_format(&self) -> crate::patch::reader::AnswerFormat {
        use crate::patch::reader::AnswerFormat;
        match (self.edit.format, self.provider.kind) {
            (EditFormat::Udiff, _) => AnswerFormat::Udiff,
            (EditFormat::SearchReplace, _) => AnswerFormat::SearchReplace,
            (EditFormat::WholeFile, _) => AnswerFormat::WholeFile,
            (EditFormat::Json, _) => AnswerFormat::Json,
            (EditFormat::ApplyPatch, _) => AnswerFormat::ApplyPatch,
            (EditFormat::Auto, k) if k.schema_field().is_some() => AnswerFormat::Json,
            (EditFormat::Auto, _) => AnswerFormat::Udiff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ProviderKind;
    use crate::policy::catalogue::ALL_PROVIDERS;
    use crate::policy::testing::{assert_unknown_key_refused, refusal, with_section};

    #[test]
    fn auto_asks_for_json_edits_where_the_server_constrains_them() {
        use crate::patch::reader::AnswerFormat;
        for kind in ALL_PROVIDERS {
            let mut p = Policy::default_for_allowed_root().with_provider(kind);
            let expected = if kind.schema_field().is_some() {
                AnswerFormat::Json
            } else {
                AnswerFormat::Udiff
            };
            assert_eq!(p.answer_format(), expected, "{}", kind.name());
            p.edit.format = EditFormat::Udiff;
            assert_eq!(p.answer_format(), AnswerFormat::Udiff);
        }
        for kind in [
            ProviderKind::Llamacpp,
            ProviderKind::Ollama,
            ProviderKind::Lmstudio,
            ProviderKind::Vllm,
        ] {
            assert!(
                kind.is_local() && kind.schema_field().is_some(),
                "{}",
                kind.name()
            );
            assert_eq!(kind.defaults().api_key_env, None);
        }
    }

    #[test]
    fn every_edit_format_is_read_by_its_name() {
        for format in [
            EditFormat::Auto,
            EditFormat::Udiff,
            EditFormat::SearchReplace,
            EditFormat::WholeFile,
            EditFormat::Json,
            EditFormat::ApplyPatch,
        ] {
            let p = with_section("edit", &format!("format = \"{}\"", format.name())).unwrap();
            assert_eq!(p.edit.format, format);
        }
    }

    #[test]
    fn an_unknown_edit_key_or_format_is_refused_by_name() {
        assert_unknown_key_refused("edit");
        let err = refusal("edit", "format = \"diff\"");
        assert!(
            err.contains("unknown variant `diff`") && err.contains("`udiff`"),
            "{err}"
        );
    }

    #[test]
    fn an_edit_value_of_the_wrong_type_is_refused() {
        let err = refusal("edit", "format = 1");
        assert!(
            err.contains("format = 1") && err.contains("wanted string or table"),
            "{err}"
        );
    }

    #[test]
    fn edit_left_out_is_auto() {
        assert_eq!(
            with_section("edit", "").unwrap().edit.format,
            EditFormat::Auto
        );
        assert_eq!(Edit::default().format, EditFormat::Auto);
    }
}
