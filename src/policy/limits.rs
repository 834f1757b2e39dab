//! `[limits]`: the sizes, counts and times the worker keeps to (their ranges: `bounds`).

use serde::Deserialize;

/// `[limits]`: every value positive; what the policy does not set is [`Limits::DEFAULT`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The largest file that may be selected, in bytes.
    pub max_file_bytes: u64,
    /// The selected files together, in bytes.
    pub max_total_bytes: u64,
    /// The largest patch, in bytes.
    pub max_patch_bytes: u64,
    /// The most files one patch may change.
    pub max_files_per_patch: usize,
    /// The most hunks one patch may hold.
    pub max_hunks_per_patch: usize,
    /// The model's answer budget: an answer cut there is refused as truncated.
    pub max_output_tokens: u32,
    /// How long one request to the model server may take, in seconds.
    pub request_timeout_secs: u64,
    /// A proposal not applied within this many seconds expires.
    pub proposal_ttl_secs: u64,
}

impl Limits {
    /// The limits a policy gets for what it does not set (and what `init-project` writes).
    pub const DEFAULT: Limits = Limits {
        max_file_bytes: 1_000_000,
        max_total_bytes: 4_000_000,
        max_patch_bytes: 1_000_000,
        max_files_per_patch: 20,
        max_hunks_per_patch: 200,
        max_output_tokens: 2048,
        request_timeout_secs: 300,
        proposal_ttl_secs: 900,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
