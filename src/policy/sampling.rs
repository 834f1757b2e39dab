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
            if self.local_server()
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
        let default = if self.local_server() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };

    #[test]
    fn a_full_sampling_table_is_read() {
        let p = with_section(
            "sampling",
            "candidates = 3\nparallel = 2\nmax_total_tokens = 9000\ncalibrated = \"2026-01-02: local\"",
        )
        .unwrap();
        let expected = Sampling {
            candidates: Some(3),
            parallel: Some(2),
            max_total_tokens: Some(9000),
            calibrated: Some("2026-01-02: local".into()),
        };
        assert_eq!(p.sampling, expected);
        assert_eq!((p.candidates(), p.parallel()), (3, 2));
    }

    #[test]
    fn an_unknown_sampling_key_is_refused_by_name() {
        assert_unknown_key_refused("sampling");
    }

    #[test]
    fn a_sampling_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("sampling", "candidates = \"4\"", "u64");
        assert_wrong_type_refused("sampling", "calibrated = 3", "string");
    }

    #[test]
    fn sampling_left_out_asks_one_answer_without_validation_on_propose() {
        let p = with_section("sampling", "").unwrap();
        assert_eq!(p.sampling, Sampling::default());
        assert_eq!((p.candidates(), p.parallel()), (1, 1));
        let validated = with_section(
            "validation",
            "commands = [\"make test\"]\non_propose = true",
        )
        .unwrap();
        assert_eq!(validated.candidates(), LOCAL_DEFAULT_CANDIDATES);
        assert_eq!(validated.parallel(), LOCAL_DEFAULT_PARALLEL);
    }
}
