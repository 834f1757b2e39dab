//! `[ledger]`: the primary model's price, for `stats`.

use serde::Deserialize;

/// `[ledger]`: the primary model's price, so `stats` can value the tokens it did not have to read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerSettings {
    /// What a million prompt tokens of the PRIMARY model cost (same currency as `[provider]`'s prices).
    pub primary_price_input_per_mtok: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };

    #[test]
    fn a_ledger_table_is_read() {
        let p = with_section("ledger", "primary_price_input_per_mtok = 3.0").unwrap();
        assert_eq!(p.ledger.primary_price_input_per_mtok, Some(3.0));
    }

    #[test]
    fn an_unknown_ledger_key_is_refused_by_name() {
        assert_unknown_key_refused("ledger");
    }

    #[test]
    fn a_ledger_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("ledger", "primary_price_input_per_mtok = \"3\"", "f64");
    }

    #[test]
    fn ledger_left_out_has_no_price() {
        assert_eq!(
            with_section("ledger", "").unwrap().ledger,
            LedgerSettings::default()
        );
        assert_eq!(LedgerSettings::default().primary_price_input_per_mtok, None);
    }
}
