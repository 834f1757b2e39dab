//! `[ledger]`: the primary model's price, for `stats`.

use serde::Deserialize;

/// `[ledger]`: the primary model's price, so `stats` can value the tokens it did not have to read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerSettings {
    /// What a million prompt tokens of the PRIMARY model cost (same currency as `[provider]`'s prices).
    pub primary_price_input_per_mtok: Option<f64>,
}
