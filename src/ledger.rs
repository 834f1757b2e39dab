//! The ledger: one JSON line per proposal, apply and delegation, and the summary `local-llm-worker stats` prints.
//!
//! A line holds the time, the kind, the workspace path, provider, model, token usage, duration, outcome, digest and
//! the bytes of files the worker read; never file contents, prompts or keys. It lives at `LOCAL_LLM_LEDGER` (a file
//! path), else `ledger.jsonl` in the worker's state folder ([`state_dir`]: `LOCAL_LLM_STATE_DIR`, the host plugin's
//! data folder, `$XDG_STATE_HOME/local-llm-delegator`, or `~/.local/state/local-llm-delegator`).
//! Writing it is best effort: a ledger that cannot be written never fails a tool call (a note goes to stderr).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::provider::Usage;

/// One ledger line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Unix time in seconds.
    pub time: u64,
    /// `propose`, `apply` or `delegate`.
    pub kind: String,
    /// The workspace root.
    pub workspace: String,
    /// The provider kind called; empty when no model was called.
    pub provider: String,
    /// The model called; empty when none was.
    pub model: String,
    /// Prompt tokens, as the server counted them.
    pub input_tokens: u64,
    /// Answer tokens, as the server counted them.
    pub output_tokens: u64,
    /// Both together, as the server counted them.
    pub total_tokens: u64,
    /// How long the call took.
    pub duration_ms: u64,
    /// `ok` or `refused:<error kind>`.
    pub outcome: String,
    /// The digest of the patch proposed or applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Bytes of the selected files the worker read for the model.
    #[serde(default)]
    pub bytes_read: u64,
    /// For a proposal: the edit format the model was asked for (`json`, `udiff`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// For a proposal: the Unix time after which it can no longer be applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    /// For a proposal: whether it came from the one repair round.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repaired: bool,
    /// For an apply-time repair proposal: the digest of the proposal whose failure it repairs (that one is then
    /// superseded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_of: Option<String>,
    /// For a proposal validated on propose: whether its checks passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_passed: Option<bool>,
    /// The policy's prices when the call was made: `[provider] price_input_per_mtok`, `price_output_per_mtok` and
    /// `[ledger] primary_price_input_per_mtok` (per million tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_input_per_mtok: Option<f64>,
    /// See `price_input_per_mtok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_output_per_mtok: Option<f64>,
    /// See `price_input_per_mtok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_price_input_per_mtok: Option<f64>,
    /// The usage to record: [`record`] copies it into the token fields.
    #[serde(skip)]
    pub usage: Usage,
}

impl Entry {
    /// Note the policy's prices in this entry.
    pub fn priced(&mut self, policy: &crate::policy::Policy) {
        self.price_input_per_mtok = policy.provider.price_input_per_mtok;
        self.price_output_per_mtok = policy.provider.price_output_per_mtok;
        self.primary_price_input_per_mtok = policy.ledger.primary_price_input_per_mtok;
    }

    /// What this call's model tokens cost, when the policy gave both prices.
    pub fn cost(&self) -> Option<f64> {
        Some(
            (self.input_tokens as f64 * self.price_input_per_mtok?
                + self.output_tokens as f64 * self.price_output_per_mtok?)
                / 1e6,
        )
    }

    /// An entry of `kind` for `workspace`, so far `ok`, its duration counted from `started`.
    pub fn new(kind: &str, workspace: &str, started: Instant) -> Entry {
        Entry {
            time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            kind: kind.into(),
            workspace: workspace.into(),
            provider: String::new(),
            model: String::new(),
            input_tokens: 0,
            output_tokens: 0,
            total_tokens: 0,
            duration_ms: started.elapsed().as_millis() as u64,
            outcome: "ok".into(),
            digest: None,
            bytes_read: 0,
            format: None,
            expires: None,
            repaired: false,
            repair_of: None,
            validation_passed: None,
            price_input_per_mtok: None,
            price_output_per_mtok: None,
            primary_price_input_per_mtok: None,
            usage: Usage::default(),
        }
    }
}

pub use crate::workspace::state::state_dir;

/// Where the ledger is kept: `LOCAL_LLM_LEDGER`, else `ledger.jsonl` in [`state_dir`].
pub fn path() -> Option<PathBuf> {
    // (In the crate's unit tests, [`state_dir`] is only a folder they name: they never write the user's ledger.)
    std::env::var_os("LOCAL_LLM_LEDGER")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| state_dir().map(|d| d.join("ledger.jsonl")))
}

/// Append one entry (best effort).
pub fn record(entry: &Entry) {
    let Some(path) = path() else { return };
    let mut e = entry.clone();
    e.input_tokens = e.usage.input_tokens;
    e.output_tokens = e.usage.output_tokens;
    e.total_tokens = e.usage.total_tokens;
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_vec(&e).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // One write of one line in append mode: concurrent servers do not interleave lines. Never through a
        // symlink (it would append to whatever file it leads to), never blocking on a FIFO planted there.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => std::io::Error::other(
                    "it is a symlink, and the worker never writes through one; nothing was written: remove it",
                ),
                _ => e,
            })?;
        if !f.metadata()?.is_file() {
            return Err(std::io::Error::other(
                "it is not a regular file; nothing was written: remove it",
            ));
        }
        f.write_all(&line)
    };
    if let Err(err) = write() {
        eprintln!(
            "local-llm-worker: could not write the ledger {}: {err}",
            path.display()
        );
    }
}

/// What `stats` prints.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct Stats {
    /// Proposals made.
    pub proposals: u64,
    /// Proposals refused.
    pub proposals_refused: u64,
    /// Patches applied.
    pub applied: u64,
    /// Applies refused.
    pub applies_refused: u64,
    /// Delegated tasks answered.
    pub delegations: u64,
    /// Delegated tasks refused.
    pub delegations_refused: u64,
    /// Prompt tokens in all.
    pub input_tokens: u64,
    /// Answer tokens in all.
    pub output_tokens: u64,
    /// Bytes of selected files read for the model in all.
    pub bytes_read: u64,
    /// Primary-model tokens not spent reading the files the worker read (bytes / 4).
    pub primary_tokens_saved: u64,
    /// Lines of the ledger that are not an entry this version reads.
    pub unreadable_lines: u64,
}

/// The ledger's entries, and the count of lines this version cannot read.
pub fn entries(text: &str) -> (Vec<Entry>, u64) {
    let mut out = Vec::new();
    let mut unreadable = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Entry>(line) {
            Ok(e) => out.push(e),
            Err(_) => unreadable += 1,
        }
    }
    (out, unreadable)
}

/// Summarise the ledger's text.
pub fn summarise(text: &str) -> Stats {
    let (entries, unreadable) = entries(text);
    let mut s = summarise_entries(&entries);
    s.unreadable_lines += unreadable;
    s
}

/// Summarise entries.
pub fn summarise_entries(entries: &[Entry]) -> Stats {
    let mut s = Stats::default();
    for e in entries {
        let ok = e.outcome == "ok";
        match (e.kind.as_str(), ok) {
            ("propose", true) => s.proposals += 1,
            ("propose", false) => s.proposals_refused += 1,
            ("apply", true) => s.applied += 1,
            ("apply", false) => s.applies_refused += 1,
            ("delegate", true) => s.delegations += 1,
            ("delegate", false) => s.delegations_refused += 1,
            _ => s.unreadable_lines += 1,
        }
        s.input_tokens += e.input_tokens;
        s.output_tokens += e.output_tokens;
        s.bytes_read += e.bytes_read;
    }
    s.primary_tokens_saved = s.bytes_read / 4;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_outcomes_tokens_and_bytes() {
        let text = r#"{"time":1,"kind":"propose","workspace":"/w","provider":"p","model":"m","input_tokens":100,"output_tokens":10,"total_tokens":110,"duration_ms":5,"outcome":"ok","bytes_read":400}
{"time":2,"kind":"propose","workspace":"/w","provider":"p","model":"m","input_tokens":0,"output_tokens":0,"total_tokens":0,"duration_ms":5,"outcome":"refused:model_answer"}
{"time":3,"kind":"apply","workspace":"/w","provider":"","model":"","input_tokens":0,"output_tokens":0,"total_tokens":0,"duration_ms":5,"outcome":"ok"}
not json
"#;
        let s = summarise(text);
        assert_eq!((s.proposals, s.proposals_refused, s.applied), (1, 1, 1));
        assert_eq!(
            (
                s.input_tokens,
                s.output_tokens,
                s.bytes_read,
                s.primary_tokens_saved
            ),
            (100, 10, 400, 100)
        );
        assert_eq!(s.unreadable_lines, 1);
    }
}
