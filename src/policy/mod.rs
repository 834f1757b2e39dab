//! The policy: the per-project file `local-llm-worker.toml` in which the user says which model server the worker
//! asks, which files the model may see and edit, the limits the worker keeps to, the commands that check an edit and
//! how the model is asked to write it.
//!
//! One file a section of the policy file, each with its type, its checks and its TOML tests: `provider`, `models`,
//! `paths`, `limits`, `validation`, `repair`, `edit`, `sampling`, `ledger`; `bounds` holds the range of every
//! number, `schema` the file as a whole and the order its checks run in, `catalogue` the provider kinds and their
//! defaults. `load` finds and reads the file and hands it to the trust step; `template` is what `init-project`
//! writes.
//!
//! The policy file is trusted (the user wrote it); everything else the worker reads is not. Unknown keys are refused
//! so that a typo never silently weakens a limit.

mod bounds;
mod catalogue;
pub mod defaults;
mod edit;
mod ledger;
mod limits;
mod load;
mod models;
mod paths;
mod provider;
mod repair;
mod sampling;
mod schema;
mod template;
#[cfg(test)]
mod testing;
mod validation;

pub use catalogue::ProviderKind;
pub use edit::EditFormat;
pub use limits::Limits;
pub use load::{LoadedPolicy, POLICY_FILE, load, load_untrusted, parse, read_policy_file};
pub use paths::Paths;
pub use provider::{Effort, PLUGIN_KEY_ENV};
pub use repair::RepairAttempts;
pub use sampling::LOCAL_DEFAULT_CANDIDATES;
pub use schema::Policy;
pub use template::{ProjectKind, init_project, template, template_for, template_with};
pub use validation::{
    DEFAULT_CHECK_ENV, DEFAULT_SANDBOX_READ, DEFAULT_SANDBOX_TMP_MIB, DEFAULT_SANDBOX_WRITE_MIB,
};
