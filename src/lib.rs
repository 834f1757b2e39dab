//! local-llm-delegator: hand small, well-specified code changes to a cheap model and apply only the exact bytes the
//! primary agent approved.
//!
//! The crate is split into a pure core and an imperative shell:
//! - pure: [`patch`] (model output -> located edits -> canonical diff, and canonical diff -> post-images),
//!   [`locate_rank`] (the places a task is about, ranked),
//!   [`digest`], [`prompt`], [`secret`] (the key's spellings, found and redacted), [`screen`] (outside text as a
//!   terminal may show it: control characters by code point), [`names`] (the rules about file names);
//! - shell: [`workspace`] (its paths, its reads and the one file layer, `workspace::fs`), [`provider`] (talks to the model), [`txn`] (the ONLY code that writes to a
//!   workspace), [`checks`] (runs the policy's validation commands), [`confine`] (how they are started: confined around a
//!   sandbox copy on propose), [`sandbox`] (temporary copies to validate
//!   proposals in), [`service`] (orchestration, over the one [`task::Task`]), and the two thin transports [`mcp`] and
//!   the CLI in `main.rs` (which shows results through the pure [`render`]).

pub mod calibrate;
pub mod checks;
pub mod confine;
pub mod digest;
pub mod doctor;
pub mod error;
pub mod ledger;
pub mod locate_rank;
pub mod mcp;
pub mod names;
pub mod patch;
pub mod payoff;
pub mod policy;
pub mod project;
pub mod prompt;
pub mod proposal;
pub mod provider;
pub mod render;
pub mod sandbox;
pub mod screen;
pub mod secret;
pub mod service;
pub mod spill;
pub mod task;
pub mod trust;
pub mod txn;
pub mod workspace;

pub use error::{Error, Result};
