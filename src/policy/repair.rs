//! `[repair]`: the one bounded repair round (`attempts` is 0 or 1; any other number is refused by name).

use serde::Deserialize;

use crate::policy::Policy;

/// The one bounded repair round.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Repair {
    /// 0: never; 1: when validation fails, the model sees its edit and the failing output once and may fix it.
    pub attempts: RepairAttempts,
}

/// `[repair] attempts`: 0 or 1. Any other number is kept, to be refused by name when the policy is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RepairAttempts {
    /// `0`: no repair round.
    #[default]
    Never,
    /// `1`: one bounded repair round per task.
    Once,
    /// Any other number: refused.
    Unsupported(i64),
}

impl RepairAttempts {
    /// The number as the policy writes it.
    pub fn count(self) -> i64 {
        match self {
            RepairAttempts::Never => 0,
            RepairAttempts::Once => 1,
            RepairAttempts::Unsupported(n) => n,
        }
    }
}

impl<'de> Deserialize<'de> for RepairAttempts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match i64::deserialize(d)? {
            0 => RepairAttempts::Never,
            1 => RepairAttempts::Once,
            n => RepairAttempts::Unsupported(n),
        })
    }
}

impl Policy {
    /// `[repair] attempts` is 0 or 1.
    pub(super) fn check_repair(&self) -> std::result::Result<(), String> {
        if let RepairAttempts::Unsupported(n) = self.repair.attempts {
            return Err(format!(
                "[repair] attempts = {n} is not supported: use 0 (no repair) or 1 (one bounded repair round); more \
                 rounds are never made"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };
    use std::path::Path;

    use crate::policy::parse;

    #[test]
    fn repair_attempts_are_zero_or_one_and_sandbox_skips_are_checked() {
        let p = parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
        assert_eq!(p.repair.attempts, RepairAttempts::Never);
        assert!(!p.validation.on_propose);
        assert_eq!(
            p.validation.sandbox_skip,
            ["target", "node_modules", ".git"]
        );
        let p = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\non_propose = true\n[repair]\nattempts = 1\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert!(p.validation.on_propose && p.repair.attempts == RepairAttempts::Once);
        for n in ["2", "-1", "10"] {
            let err = parse(
                &format!("[provider]\nkind = \"llamacpp\"\n[repair]\nattempts = {n}\n"),
                Path::new("p.toml"),
            )
            .unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("[repair] attempts = {n} is not supported: use 0")),
                "{err}"
            );
        }
        let err = parse(
            "[provider]\nkind = \"llamacpp\"\n[validation]\nsandbox_skip = [\"../x\"]\n",
            Path::new("p.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("sandbox_skip entry"), "{err}");
    }

    #[test]
    fn a_repair_table_is_read() {
        for (n, attempts) in [(0, RepairAttempts::Never), (1, RepairAttempts::Once)] {
            let p = with_section("repair", &format!("attempts = {n}")).unwrap();
            assert_eq!(p.repair.attempts, attempts);
            assert_eq!(attempts.count(), n);
        }
    }

    #[test]
    fn an_unknown_repair_key_is_refused_by_name() {
        assert_unknown_key_refused("repair");
    }

    #[test]
    fn a_repair_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("repair", "attempts = \"once\"", "i64");
    }

    #[test]
    fn repair_left_out_never_repairs() {
        assert_eq!(
            with_section("repair", "").unwrap().repair.attempts,
            RepairAttempts::Never
        );
        assert_eq!(Repair::default().attempts, RepairAttempts::Never);
    }
}
