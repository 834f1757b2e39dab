//! Whether delegation pays: each proposal's fate, read from the ledger, and what an accepted patch cost and saved,
//! per provider, model and edit format. Pure: ledger entries in, a summary out (`local-llm-worker stats` prints it).
//!
//! A proposal's fate is known from the lines written after it: an `apply` line with the same digest says it was
//! applied (after a repair, when the proposal came from the repair round), refused (and why) or rolled back by a
//! failing check; an apply-time repair proposal naming its digest supersedes it; its expiry time says whether it can
//! still be applied. The estimate of what the primary model saved: the bytes of the files the worker read for an
//! accepted patch, divided by 4 (about one token per 4 bytes of code), which the primary did not have to read; the
//! patch the primary still reads to review it is not counted as saved. With prices in the policy (`[provider]
//! price_input_per_mtok`, `price_output_per_mtok`, `[ledger] primary_price_input_per_mtok`, recorded with each
//! call), the model's cost per accepted patch = (input tokens x input price + output tokens x output price) / 10^6
//! over every propose call, / accepted; the value saved = saved tokens x the primary's input price / 10^6.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ledger::Entry;

/// What became of one proposal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Applied, its checks passed.
    Applied,
    /// Applied, and it came from the one repair round.
    AppliedAfterRepair,
    /// Applied, a check failed, the previous bytes were restored.
    ValidationFailed,
    /// The apply was refused (the kind of refusal: `stale`, `digest`, ...).
    RefusedAtApply(String),
    /// A repair proposal made from its failure replaced it.
    Superseded,
    /// Never applied, and its time ran out.
    Expired,
    /// Not applied yet, and it can still be.
    Pending,
}

/// The figures of one provider, model and edit format.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Group {
    /// The provider kind.
    pub provider: String,
    /// The configured model.
    pub model: String,
    /// The edit format asked for.
    pub format: String,
    /// Propose calls, refused ones included.
    pub asked: u64,
    /// Proposals made (a patch was returned).
    pub proposals: u64,
    /// Proposals applied (with or without a repair).
    pub accepted: u64,
    /// How many proposals met each fate.
    pub fates: BTreeMap<String, u64>,
    /// accepted / asked.
    pub acceptance_rate: f64,
    /// Model tokens (input + output) of every propose call, per accepted patch.
    pub model_tokens_per_accepted: Option<f64>,
    /// Seconds of every propose call, per accepted patch.
    pub seconds_per_accepted: Option<f64>,
    /// Estimated primary-model tokens saved per accepted patch (bytes read for it / 4).
    pub primary_tokens_saved_per_accepted: Option<f64>,
    /// What the model tokens of every propose call cost, per accepted patch: only when every call was priced
    /// (`[provider] price_input_per_mtok` and `price_output_per_mtok`).
    pub model_cost_per_accepted: Option<f64>,
    /// What the primary-model tokens saved per accepted patch are worth: only when every accepted proposal was priced
    /// (`[ledger] primary_price_input_per_mtok`).
    pub primary_value_saved_per_accepted: Option<f64>,
}

/// The entries `stats` looks at.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this workspace root.
    pub workspace: Option<String>,
    /// Only entries at or after this Unix time.
    pub since: Option<u64>,
}

impl Filter {
    fn keeps(&self, e: &Entry) -> bool {
        self.workspace.as_ref().is_none_or(|w| &e.workspace == w)
            && self.since.is_none_or(|t| e.time >= t)
    }
}

/// The fate of the proposal `p` (an `ok` propose entry with a digest), from the entries after it.
pub fn fate(p: &Entry, entries: &[Entry], now: u64) -> Fate {
    let Some(digest) = p.digest.as_deref() else {
        return Fate::Pending;
    };
    let later = entries
        .iter()
        .filter(|e| e.time >= p.time && e.workspace == p.workspace);
    let applies: Vec<&Entry> = later
        .clone()
        .filter(|e| e.kind == "apply" && e.digest.as_deref() == Some(digest))
        .collect();
    if applies.iter().any(|a| a.outcome == "ok") {
        return if p.repaired || p.repair_of.is_some() {
            Fate::AppliedAfterRepair
        } else {
            Fate::Applied
        };
    }
    if later
        .clone()
        .any(|e| e.kind == "propose" && e.repair_of.as_deref() == Some(digest))
    {
        return Fate::Superseded;
    }
    if let Some(last) = applies.last() {
        return match last.outcome.strip_prefix("refused:") {
            Some("validation_failed") => Fate::ValidationFailed,
            Some(kind) => Fate::RefusedAtApply(kind.to_string()),
            None => Fate::Pending,
        };
    }
    if p.validation_passed == Some(false) && p.expires.is_some_and(|t| t <= now) {
        return Fate::ValidationFailed;
    }
    match p.expires {
        Some(t) if t <= now => Fate::Expired,
        _ => Fate::Pending,
    }
}

/// The name a fate is counted under.
pub fn fate_name(f: &Fate) -> String {
    match f {
        Fate::Applied => "applied".into(),
        Fate::AppliedAfterRepair => "applied_after_repair".into(),
        Fate::ValidationFailed => "validation_failed".into(),
        Fate::RefusedAtApply(k) => format!("refused_at_apply:{k}"),
        Fate::Superseded => "superseded".into(),
        Fate::Expired => "expired".into(),
        Fate::Pending => "pending".into(),
    }
}

/// The figures per provider, model and edit format, for the entries `filter` keeps, as of Unix time `now`.
pub fn summarise(entries: &[Entry], filter: &Filter, now: u64) -> Vec<Group> {
    let kept: Vec<Entry> = entries
        .iter()
        .filter(|e| filter.keeps(e))
        .cloned()
        .collect();
    // Per group: its figures, and the sums of tokens, milliseconds and saved tokens behind the per-patch ones.
    type Sums = (Group, u64, u64, u64, Money);
    let mut groups: BTreeMap<(String, String, String), Sums> = BTreeMap::new();
    for p in kept.iter().filter(|e| e.kind == "propose") {
        let key = (
            p.provider.clone(),
            p.model.clone(),
            p.format.clone().unwrap_or_else(|| "unknown".into()),
        );
        let (g, tokens, ms, saved, money) = groups.entry(key.clone()).or_insert_with(|| {
            (
                Group {
                    provider: key.0.clone(),
                    model: key.1.clone(),
                    format: key.2.clone(),
                    ..Group::default()
                },
                0,
                0,
                0,
                Money::default(),
            )
        });
        g.asked += 1;
        *tokens += p.input_tokens + p.output_tokens;
        money.spent = match (money.spent, p.cost()) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        *ms += p.duration_ms;
        if p.outcome != "ok" {
            *g.fates.entry("refused_at_propose".into()).or_default() += 1;
            continue;
        }
        g.proposals += 1;
        let f = fate(p, entries, now);
        if matches!(f, Fate::Applied | Fate::AppliedAfterRepair) {
            g.accepted += 1;
            *saved += p.bytes_read / 4;
            money.saved = match (money.saved, p.primary_price_input_per_mtok) {
                (Some(a), Some(price)) => Some(a + (p.bytes_read / 4) as f64 * price / 1e6),
                _ => None,
            };
        }
        *g.fates.entry(fate_name(&f)).or_default() += 1;
    }
    groups
        .into_values()
        .map(|(mut g, tokens, ms, saved, money)| {
            g.acceptance_rate = if g.asked == 0 {
                0.0
            } else {
                g.accepted as f64 / g.asked as f64
            };
            let per = |x: f64| (g.accepted > 0).then(|| x / g.accepted as f64);
            g.model_tokens_per_accepted = per(tokens as f64);
            g.seconds_per_accepted = per(ms as f64 / 1000.0);
            g.primary_tokens_saved_per_accepted = per(saved as f64);
            g.model_cost_per_accepted = money.spent.and_then(per);
            g.primary_value_saved_per_accepted = money.saved.and_then(per);
            g
        })
        .collect()
}

/// The money sums of a group; `None` once one entry lacks its price.
struct Money {
    spent: Option<f64>,
    saved: Option<f64>,
}

impl Default for Money {
    fn default() -> Money {
        Money {
            spent: Some(0.0),
            saved: Some(0.0),
        }
    }
}

/// A group's heading: `provider / model (format F)`, or what its proposals were when they never reached a model
/// (refused before one was chosen: a bad request, a missing file) or named no format.
fn label(g: &Group) -> String {
    if g.provider.is_empty() && g.model.is_empty() {
        return "no model asked (refused before a model was chosen)".into();
    }
    let format = match g.format.as_str() {
        "unknown" => "no edit format recorded".to_string(),
        f => format!("format {f}"),
    };
    format!("{} / {} ({format})", g.provider, g.model)
}

/// The groups as `stats` prints them: one block per provider, model and format.
pub fn render(groups: &[Group]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if groups.is_empty() {
        out.push_str("no proposals in the ledger (for this workspace and period)\n");
    }
    let opt = |x: Option<f64>, unit: &str| match x {
        Some(v) => format!("{v:.1}{unit}"),
        None => "- (none accepted)".into(),
    };
    for g in groups {
        let _ = writeln!(out, "{}", label(g));
        let _ = writeln!(
            out,
            "  proposals        {} asked, {} made, {} accepted: acceptance {:.0}%",
            g.asked,
            g.proposals,
            g.accepted,
            g.acceptance_rate * 100.0
        );
        let fates: Vec<String> = g.fates.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(out, "  fates            {}", fates.join(", "));
        let _ = writeln!(
            out,
            "  per accepted     {} model tokens, {}, about {} primary-model tokens saved",
            opt(g.model_tokens_per_accepted, ""),
            opt(g.seconds_per_accepted, " s of model time"),
            opt(g.primary_tokens_saved_per_accepted, "")
        );
        if g.accepted > 0
            && (g.model_cost_per_accepted.is_some() || g.primary_value_saved_per_accepted.is_some())
        {
            let money = |x: Option<f64>| match x {
                Some(v) => format!("{v:.4}"),
                None => "- (not priced)".into(),
            };
            let _ = writeln!(
                out,
                "  money            {} spent on the model, about {} of primary-model tokens saved",
                money(g.model_cost_per_accepted),
                money(g.primary_value_saved_per_accepted)
            );
        }
    }
    out
}

/// `YYYY-MM-DD` as the Unix time of its midnight (UTC).
pub fn parse_date(s: &str) -> Option<u64> {
    let mut it = s.trim().splitn(3, '-');
    let (y, m, d): (i64, i64, i64) = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_midnights_utc() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2026-12-01"), Some(1_796_083_200));
        assert_eq!(parse_date("2026-13-01"), None);
        assert_eq!(parse_date("yesterday"), None);
    }
}
