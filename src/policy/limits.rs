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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };

    #[test]
    fn a_full_limits_table_is_read() {
        let p = with_section(
            "limits",
            "max_file_bytes = 1\nmax_total_bytes = 2\nmax_patch_bytes = 3\nmax_files_per_patch = 4\n\
             max_hunks_per_patch = 5\nmax_output_tokens = 6\nrequest_timeout_secs = 7\nproposal_ttl_secs = 8",
        )
        .unwrap();
        let expected = Limits {
            max_file_bytes: 1,
            max_total_bytes: 2,
            max_patch_bytes: 3,
            max_files_per_patch: 4,
            max_hunks_per_patch: 5,
            max_output_tokens: 6,
            request_timeout_secs: 7,
            proposal_ttl_secs: 8,
        };
        assert_eq!(p.limits, expected);
    }

    #[test]
    fn an_unknown_limits_key_is_refused_by_name() {
        assert_unknown_key_refused("limits");
    }

    #[test]
    fn a_limits_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("limits", "max_file_bytes = \"1MB\"", "u64");
        assert_wrong_type_refused("limits", "max_output_tokens = 1.5", "u32");
    }

    #[test]
    fn limits_left_out_are_the_defaults() {
        assert_eq!(with_section("limits", "").unwrap().limits, Limits::DEFAULT);
        let one = with_section("limits", "max_patch_bytes = 5")
            .unwrap()
            .limits;
        assert_eq!(
            one,
            Limits {
                max_patch_bytes: 5,
                ..Limits::DEFAULT
            }
        );
        assert_eq!(Limits::default(), Limits::DEFAULT);
        assert_eq!(
            (
                Limits::DEFAULT.max_file_bytes,
                Limits::DEFAULT.proposal_ttl_secs
            ),
            (1_000_000, 900)
        );
    }
}
