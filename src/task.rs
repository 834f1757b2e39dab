//! The task a primary agent scopes, defined once: what `propose_patch` and `delegate_task` take over MCP (flattened
//! into their argument types) and what `propose` and `delegate` take on the command line (flattened into their
//! flags).
//!
//! The closed sets of values (complexity, the kind of read-only work, the output format) are enums whose JSON
//! schema lists the allowed values, so an MCP client sees them in `tools/list`. A value outside the set still
//! deserializes (as `Unknown`), so the caller gets the same friendly refusal naming the allowed values from
//! [`Task::check`] as from any other bad field, instead of a bare "invalid params".

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Limits on the request itself.
pub const MAX_ACCEPTANCE_CRITERIA: usize = 20;
/// At most this many constraints.
pub const MAX_CONSTRAINTS: usize = 20;
/// At most this many plan steps.
pub const MAX_PLAN_STEPS: usize = 30;

/// A string enum with a JSON schema listing its values, a command-line parser, and an `Unknown` catch-all (never in
/// the schema) that the request checks refuse by name.
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $var:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vm])* $var,)+
            /// A value outside the set, kept for the refusal that names it.
            Unknown(String),
        }

        impl $name {
            /// Every allowed value.
            pub const VALUES: &'static [&'static str] = &[$($s),+];


            /// The value as written in requests and results.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $s,)+
                    $name::Unknown(s) => s,
                }
            }

            /// Parse a value, trimmed; anything else is `Unknown`.
            pub fn parse(s: &str) -> $name {
                match s.trim() {
                    $($s => $name::$var,)+
                    _ => $name::Unknown(s.to_string()),
                }
            }

            /// The value itself, or the refusal that names the allowed ones.
            pub fn known(&self) -> Result<&$name> {
                match self {
                    $name::Unknown(s) => Err(Error::InvalidArgument(format!(
                        "{} {s:?} is not one of {}",
                        $what,
                        $name::VALUES.join(", ")
                    ))),
                    v => Ok(v),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                String::deserialize(d).map(|s| $name::parse(&s))
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": $name::VALUES })
            }

            fn inline_schema() -> bool {
                true
            }
        }

        impl $name {
            /// The command line's parser: every value is taken, so a wrong one gets the same one-line refusal as
            /// over MCP, naming the allowed values.
            pub fn from_arg(s: &str) -> std::result::Result<$name, std::convert::Infallible> {
                Ok($name::parse(s))
            }
        }
    };
}

string_enum!(
    /// How hard the change is: low and medium work is delegated; high stays with the primary agent.
    Complexity, "complexity", {
        /// Routine and local: always sent to the flash model.
        Low => "low",
        /// Needs a plan; may use the pro model.
        Medium => "medium",
        /// Refused: keep it with the primary agent, or split it.
        High => "high",
    }
);

string_enum!(
    /// The kinds of read-only work `delegate_task` takes.
    TaskKind, "task_kind", {
        /// Summarise code or text.
        Summarize => "summarize",
        /// Pull facts out of the files.
        Extract => "extract",
        /// Sort items into given classes.
        Classify => "classify",
        /// A mechanical transformation of text shown.
        RoutineTransform => "routine_transform",
        /// A draft of documentation.
        DraftDocumentation => "draft_documentation",
        /// A draft of tests.
        DraftTests => "draft_tests",
        /// A draft of routine code (returned as text, never applied).
        RoutineCodeDraft => "routine_code_draft",
        /// A routine review.
        RoutineReview => "routine_review",
    }
);

string_enum!(
    /// How `delegate_task` wants its answer.
    OutputFormat, "output_format", {
        /// Plain text (the default).
        Text => "text",
        /// Markdown.
        Markdown => "markdown",
        /// JSON, checked to parse.
        Json => "json",
        /// A diff as text for the primary to read; never applied.
        Patch => "patch",
    }
);

#[expect(
    clippy::derivable_impls,
    reason = "the enum is made by a macro that derives no Default"
)]
impl Default for Complexity {
    fn default() -> Self {
        Complexity::Low
    }
}

#[expect(
    clippy::derivable_impls,
    reason = "the enum is made by a macro that derives no Default"
)]
impl Default for TaskKind {
    fn default() -> Self {
        TaskKind::Summarize
    }
}

/// The scoped task both tools and both CLI commands take: what to do, how to check it, and what the model sees.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, clap::Args)]
pub struct Task {
    /// What to do, self-contained: the model sees nothing but this request and the selected files.
    #[arg(long)]
    pub task: String,
    /// 1-20 checkable statements the result must satisfy.
    #[arg(long = "accept", value_name = "CRITERION")]
    pub acceptance_criteria: Vec<String>,
    /// 0-20 things the change must not do.
    #[serde(default)]
    #[arg(long = "constraint", value_name = "CONSTRAINT")]
    pub constraints: Vec<String>,
    /// 0-30 steps; required when complexity is "medium".
    #[serde(default)]
    #[arg(long = "plan", value_name = "STEP")]
    pub plan: Vec<String>,
    /// "low" or "medium". High-complexity work stays with the primary agent.
    #[arg(long, value_parser = Complexity::from_arg, value_name = "low|medium")]
    pub complexity: Complexity,
    /// Workspace-relative paths of existing files the model sees (repeat on the command line); propose_patch may
    /// edit them. A path that does not exist is refused (with a "did you mean" when a file of that name is elsewhere):
    /// name new files in `create`. `PATH:START-END` (1-based, inclusive line
    /// numbers, e.g. "src/big.py:120-180") sends only those lines, with 3 lines of context each side, and an edit must
    /// stay inside them: use it for large files. Repeat a path for several ranges (overlapping ones merge). A file
    /// whose name really is "x:1-2" is that file.
    #[serde(default)]
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// propose_patch only: workspace-relative paths of NEW files the change creates (repeat `--create PATH` on the
    /// command line). Each must not exist yet; the model sees it as an empty new file. No need to list it in
    /// `files` as well.
    #[serde(default)]
    #[arg(long = "create", value_name = "PATH")]
    pub create: Vec<String>,
    /// Optional extra context for the model (conventions, related signatures...).
    #[serde(default)]
    #[arg(long)]
    pub context: Option<String>,
    /// Optional model: the alias "flash" or "pro", or a full model id (checked against [models] active). Low
    /// complexity always uses flash.
    #[serde(default)]
    #[arg(long)]
    pub model: Option<String>,
}

/// Fields a request carried that no tool takes: collected by `#[serde(flatten)]` (which cannot deny them) and
/// refused by name in the checks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct UnknownFields(pub BTreeMap<String, serde_json::Value>);

impl JsonSchema for UnknownFields {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UnknownFields".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

impl UnknownFields {
    /// Refuse any field the tool does not take, naming it.
    pub fn refuse(&self, tool: &str) -> Result<()> {
        match self.0.keys().next() {
            None => Ok(()),
            Some(k) => Err(invalid(format!(
                "{tool} takes no field {k:?}; see the tool's input schema for the fields it takes"
            ))),
        }
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidArgument(msg.into())
}

/// Check a list field, whose command-line flag is `flag` (the refusal names both: the same check serves MCP and
/// the CLI).
fn check_list(name: &str, flag: &str, items: &[String], min: usize, max: usize) -> Result<()> {
    let name = format!("{name} (on the command line: {flag})");
    if items.len() < min {
        return Err(invalid(format!(
            "{name} needs at least {min} item(s): say how the result will be checked"
        )));
    }
    if items.len() > max {
        return Err(invalid(format!(
            "{name} has {} items; at most {max}",
            items.len()
        )));
    }
    if let Some(i) = items.iter().position(|s| s.trim().is_empty()) {
        return Err(invalid(format!("{name} item {} is empty", i + 1)));
    }
    Ok(())
}

impl Task {
    /// Check the task's own fields (files aside: each tool has its rule); returns whether it is medium complexity.
    pub fn check(&self) -> Result<bool> {
        if self.task.trim().is_empty() {
            return Err(invalid(
                "task is empty; describe the change in a self-contained way",
            ));
        }
        check_list(
            "acceptance_criteria",
            "--accept",
            &self.acceptance_criteria,
            1,
            MAX_ACCEPTANCE_CRITERIA,
        )?;
        check_list(
            "constraints",
            "--constraint",
            &self.constraints,
            0,
            MAX_CONSTRAINTS,
        )?;
        check_list("plan", "--plan", &self.plan, 0, MAX_PLAN_STEPS)?;
        let medium = match self.complexity {
            Complexity::Low => false,
            Complexity::Medium => true,
            Complexity::High => {
                return Err(invalid(
                    "complexity \"high\" cannot be delegated: keep high-complexity work with the primary agent, \
                     or split it into low/medium steps",
                ));
            }
            Complexity::Unknown(ref other) => {
                return Err(invalid(format!(
                    "complexity {other:?} is not one of \"low\", \"medium\""
                )));
            }
        };
        if medium && self.plan.is_empty() {
            return Err(invalid(
                "complexity \"medium\" needs a plan: give the steps the model should follow",
            ));
        }
        Ok(medium)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_outside_the_set_are_kept_for_a_refusal_that_names_them() {
        let t: Task = serde_json::from_value(serde_json::json!({
            "task": "t", "acceptance_criteria": ["a"], "complexity": "hard"
        }))
        .unwrap();
        let e = t.check().unwrap_err().to_string();
        assert!(
            e.contains("complexity \"hard\" is not one of \"low\", \"medium\""),
            "{e}"
        );
        let k = TaskKind::parse("summarise");
        let e = k.known().unwrap_err().to_string();
        assert!(
            e.contains("task_kind \"summarise\" is not one of summarize, extract"),
            "{e}"
        );
        assert_eq!(OutputFormat::parse(" json "), OutputFormat::Json);
    }

    #[test]
    fn the_schema_lists_the_allowed_values() {
        let s = serde_json::to_value(schemars::schema_for!(Task)).unwrap();
        assert_eq!(
            s["properties"]["complexity"]["enum"],
            serde_json::json!(["low", "medium", "high"])
        );
    }
}
