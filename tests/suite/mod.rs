//! One module per area of the end-to-end tests (each file's own doc comment says what it covers); their snapshots
//! are in `snapshots/`, named `all__suite__<area>__<name>.snap`.

mod calibrate;
mod candidates;
mod cli;
mod confinement;
mod mcp;
mod names;
mod plugin;
mod progress;
mod providers;
mod ranges;
mod real_model;
mod recovery;
mod scenarios;
mod security;
mod snapshots;
mod stats;
mod terminal;
mod trust;
mod validation;
