//! The end-to-end tests, as one test binary (the crate is linked once, not once per area): each area is a module of
//! `suite` (`tests/suite/<area>.rs`), and `common` holds what they share (the scripted endpoint, sample
//! workspaces, the worker's command line with the tests' ledger and state folder). One area runs with
//! `cargo test --locked --test all -- <area>::`, e.g. `real_model::` for the tests against the real local model.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed unwrap is a failed test, with its message"
)]

mod common;
mod suite;
