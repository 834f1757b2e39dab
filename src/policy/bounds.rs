//! The range of every duration and size of the policy (`[limits]`, `[validation]`, `[sampling]`, `[models]`), and
//! its check: above 0, and small enough that no deadline or buffer computed from it overflows.

use crate::policy::Policy;
use crate::policy::sampling::MAX_CANDIDATES;

/// The range of a number in the policy: 1 to `max`.
pub struct Bound {
    /// Its section, without brackets.
    pub section: &'static str,
    /// Its key.
    pub key: &'static str,
    /// The largest value accepted.
    pub max: u64,
    /// What it counts, for the refusal.
    pub unit: &'static str,
    /// Its value in a policy (`None`: not set, nothing to check).
    pub get: fn(&Policy) -> Option<u64>,
}

/// Every duration and size of the policy, with its range (from 1). Durations stay within a day (a proposal's life
/// within a week), sizes far above any real use and far below what overflows a deadline or a buffer.
pub const BOUNDS: &[Bound] = &[
    Bound {
        section: "limits",
        key: "max_file_bytes",
        max: 100_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_file_bytes),
    },
    Bound {
        section: "limits",
        key: "max_total_bytes",
        max: 1_000_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_total_bytes),
    },
    Bound {
        section: "limits",
        key: "max_patch_bytes",
        max: 100_000_000,
        unit: "bytes",
        get: |p| Some(p.limits.max_patch_bytes),
    },
    Bound {
        section: "limits",
        key: "max_files_per_patch",
        max: 10_000,
        unit: "files",
        get: |p| Some(p.limits.max_files_per_patch as u64),
    },
    Bound {
        section: "limits",
        key: "max_hunks_per_patch",
        max: 1_000_000,
        unit: "hunks",
        get: |p| Some(p.limits.max_hunks_per_patch as u64),
    },
    Bound {
        section: "limits",
        key: "max_output_tokens",
        max: 1_000_000,
        unit: "tokens",
        get: |p| Some(u64::from(p.limits.max_output_tokens)),
    },
    Bound {
        section: "limits",
        key: "request_timeout_secs",
        max: 86_400,
        unit: "seconds (a day)",
        get: |p| Some(p.limits.request_timeout_secs),
    },
    Bound {
        section: "limits",
        key: "proposal_ttl_secs",
        max: 604_800,
        unit: "seconds (7 days)",
        get: |p| Some(p.limits.proposal_ttl_secs),
    },
    Bound {
        section: "validation",
        key: "timeout_secs",
        max: 86_400,
        unit: "seconds (a day)",
        get: |p| Some(p.validation.timeout_secs),
    },
    Bound {
        section: "validation",
        key: "sandbox_tmp_mib",
        max: 1_048_576,
        unit: "MiB (1 TiB)",
        get: |p| Some(p.validation.sandbox_tmp_mib),
    },
    Bound {
        section: "validation",
        key: "sandbox_write_mib",
        max: 1_048_576,
        unit: "MiB (1 TiB)",
        get: |p| Some(p.validation.sandbox_write_mib),
    },
    Bound {
        section: "sampling",
        key: "candidates",
        max: MAX_CANDIDATES,
        unit: "answers",
        get: |p| p.sampling.candidates,
    },
    Bound {
        section: "sampling",
        key: "parallel",
        max: MAX_CANDIDATES,
        unit: "requests at once",
        get: |p| p.sampling.parallel,
    },
    Bound {
        section: "sampling",
        key: "max_total_tokens",
        max: 100_000_000,
        unit: "tokens",
        get: |p| p.sampling.max_total_tokens,
    },
    Bound {
        section: "models",
        key: "context_window",
        max: 1_000_000_000,
        unit: "tokens",
        get: |p| p.models.context_window,
    },
];

impl Policy {
    /// Every duration and size of the policy lies in its range ([`BOUNDS`]): above 0, and small enough that no
    /// deadline or buffer computed from it overflows.
    pub(super) fn check_limits(&self) -> std::result::Result<(), String> {
        for b in BOUNDS {
            if let Some(v) = (b.get)(self)
                && !(1..=b.max).contains(&v)
            {
                return Err(format!(
                    "[{}] {} = {v} is out of range: give 1 to {} {}, or remove the line for the default",
                    b.section, b.key, b.max, b.unit
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use crate::policy::parse;

    #[test]
    fn policy_values_that_panic_are_refused_at_load_with_their_range() {
        for b in BOUNDS {
            let line = |v: u64| {
                format!(
                    "[provider]\nkind = \"llamacpp\"\n[{}]\n{} = {v}\n",
                    b.section, b.key
                )
            };
            parse(&line(b.max), Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}"));
            parse(&line(1), Path::new("p.toml")).unwrap_or_else(|e| panic!("{e}"));
            for bad in [0, b.max + 1, i64::MAX as u64] {
                if b.key == "max_output_tokens" && bad > u64::from(u32::MAX) {
                    continue;
                }
                let err = parse(&line(bad), Path::new("p.toml"))
                    .unwrap_err()
                    .to_string();
                assert!(
                    err.contains(&format!(
                        "[{}] {} = {bad} is out of range: give 1 to {}",
                        b.section, b.key, b.max
                    )),
                    "{err}"
                );
            }
        }
        // The defaults and every template lie inside.
        assert!(parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).is_ok());
    }
}
