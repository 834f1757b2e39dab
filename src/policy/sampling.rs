//! `[sampling]`: how many answers one proposal asks for, how many at once, what they may spend together, and what
//! `calibrate --write` recorded.

use serde::Deserialize;

use crate::policy::Policy;

/// `[sampling]`: candidates. Each key unset takes the default [`Policy::candidates`] and its neighbours describe.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sampling {
    /// How many answers (1 to 8) one proposal asks for; identical patches are merged, and with validation on
    /// propose the first that passes is chosen.
    pub candidates: Option<u64>,
    /// How many of them are asked at once (1 to 8).
    pub parallel: Option<u64>,
    /// The model tokens all candidates of one proposal may spend together: no new answer is asked once reached.
    pub max_total_tokens: Option<u64>,
    /// What `calibrate --write` measured, with its date (kept as a record; `doctor` reads it).
    pub calibrated: Option<String>,
}

/// Candidates per proposal for a local llama.cpp server with validation on propose, when the policy does not say:
/// chosen by the solve bench (BENCHMARKS.md section 12): tokens cost only time there, and validation picks the
/// answer that passes.
pub const LOCAL_DEFAULT_CANDIDATES: u64 = 4;

/// Answers asked at once for a local server when the policy does not say (its slots answer them side by side).
pub const LOCAL_DEFAULT_PARALLEL: u64 = 4;

/// The largest `[sampling] candidates` and `parallel`.
pub const MAX_CANDIDATES: u64 = 8;

impl Policy {
    /// How many answers one proposal asks for: `[sampling] candidates`, else [`LOCAL_DEFAULT_CANDIDATES`] for a
    /// local llama.cpp server whose proposals are validated (nothing else could choose among them), else 1.
    pub fn candidates(&self) -> u64 {
        self.sampling.candidates.unwrap_or(
            if self.provider.kind.is_local()
                && self.validation.on_propose
                && !self.validation.commands.is_empty()
            {
                LOCAL_DEFAULT_CANDIDATES
            } else {
                1
            },
        )
    }

    /// How many answers are asked at once: `[sampling] parallel`, else all of them for a hosted provider (it takes
    /// concurrent requests) and up to [`LOCAL_DEFAULT_PARALLEL`] for a local one; never more than the candidates.
    pub fn parallel(&self) -> u64 {
        let default = if self.provider.kind.is_local() {
            LOCAL_DEFAULT_PARALLEL
        } else {
            MAX_CANDIDATES
        };
        self.sampling
            .parallel
            .unwrap_or(default)
            .min(self.candidates())
            .max(1)
    }
}
