//! Proposals held in process memory between `propose_patch` and `apply_patch`.
//!
//! An id is 128 random bits, so it cannot be guessed; a proposal expires after its TTL, can be applied at most once,
//! and is looked up together with its digest. One entry holds everything about a proposal: its patch and digest,
//! what it was made from (the origin, opaque here) and whether its task's one repair round is left, so all of it
//! expires and is evicted together. Nothing here is written to disk: a restarted server knows no proposal.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::digest::digests_equal;
use crate::error::{Error, Result};

/// At most this many proposals are held; the oldest is dropped beyond it.
pub const MAX_HELD: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Pending,
    Applying,
    Used(&'static str),
}

#[derive(Debug)]
struct Entry<O> {
    root: PathBuf,
    patch: Vec<u8>,
    digest: String,
    origin: O,
    /// Whether the task's one repair round is left: cleared when a repair call is made for it.
    repair_left: bool,
    created: Instant,
    expires: Instant,
    state: State,
}

/// A proposal to hold.
#[derive(Debug)]
pub struct NewProposal<O> {
    /// The workspace it is for.
    pub root: PathBuf,
    /// The exact canonical patch bytes.
    pub patch: Vec<u8>,
    /// Their SHA-256 digest.
    pub digest: String,
    /// How long it can be applied.
    pub ttl: Duration,
    /// What it was made from (for the repair round).
    pub origin: O,
    /// Whether its task's one repair round is still left.
    pub repair_left: bool,
}

/// What an apply takes out of the store.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The workspace the proposal is for.
    pub root: PathBuf,
    /// The exact patch bytes approved.
    pub patch: Vec<u8>,
}

/// The held proposals, each with its origin `O`.
#[derive(Debug)]
pub struct ProposalStore<O> {
    entries: Mutex<HashMap<String, Entry<O>>>,
}

impl<O> Default for ProposalStore<O> {
    fn default() -> Self {
        ProposalStore {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

/// A fresh unguessable proposal id.
#[expect(
    clippy::expect_used,
    reason = "without the system's random source no id could be unguessable: stopping is the only safe answer"
)]
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    let mut s = String::from("p_");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

impl<O: Clone> ProposalStore<O> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry<O>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hold a new proposal; returns its id.
    pub fn insert(&self, new: NewProposal<O>) -> String {
        let id = new_id();
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, e| e.expires > now || e.state == State::Applying);
        while map.len() >= MAX_HELD {
            let oldest = map
                .iter()
                .min_by_key(|(_, e)| e.created)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => map.remove(&k),
                None => break,
            };
        }
        map.insert(
            id.clone(),
            Entry {
                root: new.root,
                patch: new.patch,
                digest: new.digest,
                origin: new.origin,
                repair_left: new.repair_left,
                created: now,
                expires: now + new.ttl,
                state: State::Pending,
            },
        );
        id
    }

    /// Claim a pending proposal for applying; refuses unknown, expired, used or in-flight ones and wrong digests.
    pub fn claim(&self, id: &str, digest: &str) -> Result<Claimed> {
        let mut map = self.lock();
        let Some(e) = map.get_mut(id) else {
            return Err(Error::Proposal(format!(
                "no proposal {id:?} is held by this server (unknown, expired and dropped, or made before a restart); \
                 call propose_patch again"
            )));
        };
        if Instant::now() >= e.expires && e.state == State::Pending {
            map.remove(id);
            return Err(Error::Proposal(format!(
                "proposal {id} has expired; call propose_patch again"
            )));
        }
        match e.state {
            State::Applying => {
                return Err(Error::Proposal(format!(
                    "proposal {id} is being applied by another call right now"
                )));
            }
            State::Used(how) => {
                return Err(Error::Proposal(format!(
                    "proposal {id} was already used ({how})"
                )));
            }
            State::Pending => {}
        }
        if !digests_equal(&e.digest, digest.trim()) {
            return Err(Error::Digest(format!(
                "the digest does not match proposal {id}; pass the exact `digest` that propose_patch returned with it"
            )));
        }
        e.state = State::Applying;
        Ok(Claimed {
            root: e.root.clone(),
            patch: e.patch.clone(),
        })
    }

    /// Take the origin of a proposal whose task still has its repair round, spending the round.
    pub fn take_repair(&self, id: &str) -> Option<O> {
        let mut map = self.lock();
        let e = map.get_mut(id)?;
        if !e.repair_left {
            return None;
        }
        e.repair_left = false;
        Some(e.origin.clone())
    }

    /// End an apply: `Some(how)` marks the proposal used; `None` puts it back (nothing was written).
    pub fn finish(&self, id: &str, used: Option<&'static str>) {
        if let Some(e) = self.lock().get_mut(id) {
            e.state = match used {
                Some(how) => State::Used(how),
                None => State::Pending,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(s: &ProposalStore<u8>, digest: &str, ttl: Duration) -> String {
        s.insert(NewProposal {
            root: "/w".into(),
            patch: b"p".to_vec(),
            digest: digest.into(),
            ttl,
            origin: 7,
            repair_left: true,
        })
    }

    #[test]
    fn the_repair_round_is_taken_once() {
        let s = ProposalStore::default();
        let id = held(&s, "d", Duration::from_secs(60));
        assert_eq!(s.take_repair(&id), Some(7));
        assert_eq!(s.take_repair(&id), None);
        assert_eq!(s.take_repair("p_nope"), None);
    }

    #[test]
    fn ids_are_unique_and_long() {
        let a = new_id();
        assert_eq!(a.len(), 34);
        assert_ne!(a, new_id());
    }

    #[test]
    fn claim_checks_digest_once_and_expiry() {
        let s = ProposalStore::default();
        let id = held(&s, "d1", Duration::from_secs(60));
        assert!(
            s.claim(&id, "d2")
                .unwrap_err()
                .to_string()
                .contains("digest does not match")
        );
        assert!(s.claim(&id, "d1").is_ok());
        assert!(
            s.claim(&id, "d1")
                .unwrap_err()
                .to_string()
                .contains("being applied")
        );
        s.finish(&id, Some("applied"));
        assert!(
            s.claim(&id, "d1")
                .unwrap_err()
                .to_string()
                .contains("already used (applied)")
        );
        let id = held(&s, "d", Duration::ZERO);
        assert!(
            s.claim(&id, "d")
                .unwrap_err()
                .to_string()
                .contains("expired")
        );
        assert!(
            s.claim("p_nope", "d")
                .unwrap_err()
                .to_string()
                .contains("no proposal")
        );
    }

    #[test]
    fn a_refused_apply_puts_the_proposal_back() {
        let s = ProposalStore::default();
        let id = held(&s, "d", Duration::from_secs(60));
        s.claim(&id, "d").unwrap();
        s.finish(&id, None);
        assert!(s.claim(&id, "d").is_ok());
    }
}
