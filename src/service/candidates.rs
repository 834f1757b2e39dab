//! Candidates: up to `[sampling] candidates` answers for one proposal, and the choice among them.
//!
//! The answers are asked `[sampling] parallel` at a time (never more than the server's slots: [`at_once`]), each
//! with its own temperature and seed ([`Prepared::chat_for`]). Each goes through the same reader, locator and dry run as a single answer; answers that
//! give byte-identical patches are merged, their count a vote. With validation on propose the distinct patches are
//! validated as they arrive, in ONE sandbox copy ([`Validator`]) reset between them, and the first that passes ends
//! the run: the requests still in flight are cancelled. The choice: a patch that passed, else the most voted, then
//! the smallest, then the first asked. Asking stops early at the token budget (`[sampling] max_total_tokens`: no
//! request starts once what was spent and the prompt would pass it) and once the request timeout has passed since
//! the first request. A cancellation of the call stops every request and every check.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

use super::propose::{Candidate, Prepared, Validator};
use super::{Answer, Call, add_usage, ask, estimate_tokens};
use crate::checks::CheckResult;
use crate::error::{Error, Result};
use crate::ledger;
use crate::provider::window::{self, SlotCount};
use crate::provider::{Message, Provider, Usage, Watch};

/// What became of a proposal's candidates (in `propose_patch`'s result when more than one was asked for).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct CandidatesReport {
    /// Answers the policy asks for (`[sampling] candidates`).
    pub wanted: usize,
    /// Requests sent to the model.
    pub asked: usize,
    /// Answers that read as a patch which dry-runs.
    pub parsed: usize,
    /// Distinct patches among them.
    pub distinct: usize,
    /// Distinct patches whose validation commands ran.
    pub validated: usize,
    /// Of those, how many passed.
    pub passed: usize,
    /// Which answer the returned patch came from (1: the first asked).
    pub chosen: usize,
    /// Answers that gave exactly the returned patch.
    pub votes: usize,
    /// Why that one was chosen.
    pub why: String,
    /// Milliseconds the validation commands ran, over every candidate validated.
    pub checks_ms: u64,
    /// How many were asked at once: `[sampling] parallel`, never more than the server's slots.
    pub at_once: usize,
    /// The server's slots and where that figure came from, when it reports them (llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotCount>,
    /// Why fewer than `wanted` were asked, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Why answers were refused, one line each (at most 8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// One distinct patch and what is known of it.
pub(super) struct Distinct {
    pub(super) cand: Candidate,
    /// The answer it first came from (0: the first asked), and that answer's provider and model.
    pub(super) first: usize,
    pub(super) answer: Answer,
    pub(super) votes: usize,
    /// Its validation results, once run.
    pub(super) validation: Option<Vec<CheckResult>>,
}

impl Distinct {
    fn passed(&self) -> bool {
        self.validation
            .as_ref()
            .is_some_and(|v| v.iter().all(|r| r.passed))
    }
}

/// The outcome of asking for candidates: the chosen patch, every candidate's tokens and model time, the report.
pub(super) struct Gathered {
    pub(super) chosen: Distinct,
    pub(super) usage: Usage,
    pub(super) model_ms: u64,
    pub(super) report: CandidatesReport,
}

/// What a worker thread sends back: the answer's index, what `ask` made of it, and the tokens it spent.
type Sent = (usize, Result<Answer>, Usage, ledger::Entry);

/// The requests that may be open or waiting to be read at once: `[sampling] parallel`.
struct Slots {
    busy: std::sync::Mutex<usize>,
    freed: std::sync::Condvar,
    max: usize,
}

impl Slots {
    fn new(max: usize) -> Slots {
        Slots {
            busy: std::sync::Mutex::new(0),
            freed: std::sync::Condvar::new(),
            max,
        }
    }

    /// Wait for a free slot and take it; false once `stop` is set.
    fn take(&self, stop: &AtomicBool) -> bool {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            if *busy < self.max {
                *busy += 1;
                return true;
            }
            busy = self
                .freed
                .wait_timeout(busy, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn give_back(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        *busy = busy.saturating_sub(1);
        self.freed.notify_one();
    }
}

/// How many refusals the report lists.
const MAX_REFUSALS_SHOWN: usize = 8;

/// Ask for `wanted` candidates with the chat `messages`, read each, validate the distinct ones when `validates`,
/// and choose. `entry` gets the first answer's provider and model and every candidate's tokens.
pub(super) fn gather(
    p: &Prepared,
    provider: &dyn Provider,
    messages: &[Message],
    call: &Call,
    entry: &mut ledger::Entry,
    validates: bool,
) -> Result<Gathered> {
    let wanted = p.policy.candidates() as usize;
    let (parallel, server_slots) = at_once(&p.policy, &p.model);
    let budget = p.policy.sampling.max_total_tokens;
    let deadline = Duration::from_secs(p.policy.limits.request_timeout_secs);
    let prompt_tokens: u64 = messages.iter().map(|m| estimate_tokens(&m.content)).sum();
    // The candidates' own watch: cancelled by the caller, or once a candidate passes.
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let parent = call.watch.clone();
    let progress = {
        let received = received.clone();
        let parent = parent.on_progress.clone();
        Arc::new(move |n: u64| parent(received.load(Ordering::Relaxed) + n))
    };
    let watch = Watch {
        on_progress: progress,
        cancelled: stop.clone(),
    };
    let child = Call {
        provider: call.provider,
        watch: watch.clone(),
        unrecorded: call.unrecorded,
    };
    let next = AtomicUsize::new(0);
    let sent = AtomicUsize::new(0);
    let slots = Slots::new(parallel);
    let spent = AtomicU64::new(0);
    let stopped_by: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<Sent>();
    let mut state = State {
        validates,
        ..State::default()
    };
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            let tx = tx.clone();
            let (next, sent, slots, spent, stopped_by, child, stop) =
                (&next, &sent, &slots, &spent, &stopped_by, &child, &stop);
            scope.spawn(move || {
                loop {
                    // A slot is free again once the main thread has read (and validated) an answer.
                    if !slots.take(stop) {
                        return;
                    }
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= wanted {
                        slots.give_back();
                        return;
                    }
                    let why_not = if n > 0
                        && let Some(b) = budget
                        && spent.load(Ordering::SeqCst) + prompt_tokens > b
                    {
                        Some(format!(
                            "the token budget: [sampling] max_total_tokens = {b}, {} spent",
                            spent.load(Ordering::SeqCst)
                        ))
                    } else if n > 0 && started.elapsed() >= deadline {
                        Some(format!(
                            "the time: [limits] request_timeout_secs = {} had passed",
                            deadline.as_secs()
                        ))
                    } else {
                        None
                    };
                    if let Some(why) = why_not {
                        let mut s = stopped_by.lock().unwrap_or_else(|e| e.into_inner());
                        s.get_or_insert(why);
                        // Nothing later starts either.
                        next.store(wanted, Ordering::SeqCst);
                        slots.give_back();
                        return;
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                    let mut scratch = ledger::Entry::new("propose", "", Instant::now());
                    let chat = p.chat_for(messages.to_vec(), n);
                    let answer = ask(&p.policy, provider, &chat, child, &mut scratch);
                    spent.fetch_add(scratch.usage.total_tokens, Ordering::SeqCst);
                    let usage = scratch.usage;
                    if tx.send((n, answer, usage, scratch)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        state.receive(p, &rx, &parent, &watch, &slots, &received);
    });
    state.asked = sent.load(Ordering::SeqCst);
    if let Some(first) = state.first_entry.take() {
        entry.provider = first.provider;
        entry.model = first.model;
    }
    entry.priced(&p.policy);
    entry.usage = state.usage;
    if parent.is_cancelled() {
        return Err(Error::Cancelled);
    }
    if let Some(e) = state.fatal.take() {
        return Err(e);
    }
    let stopped = stopped_by.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut gathered = state.choose(wanted, stopped)?;
    gathered.report.at_once = parallel;
    gathered.report.slots = server_slots;
    Ok(gathered)
}

/// How many candidates for `model` are asked at once: `[sampling] parallel` (at most the candidates), never more
/// than the slots the server reports, so that a one-slot server is not sent requests that wait in its queue until
/// they time out; and those slots, when the server reports them (asked only when more than one would be sent).
pub fn at_once(policy: &crate::config::Policy, model: &str) -> (usize, Option<SlotCount>) {
    let wanted = policy.candidates() as usize;
    let parallel = (policy.parallel() as usize).clamp(1, wanted.max(1));
    if parallel == 1 {
        return (1, None);
    }
    let slots = window::slots(policy, model);
    let at_once = slots
        .as_ref()
        .map_or(parallel, |s| parallel.min(s.slots as usize).max(1));
    (at_once, slots)
}

/// What the receiving side has learnt so far.
#[derive(Default)]
struct State {
    distinct: Vec<Distinct>,
    parsed: usize,
    asked: usize,
    usage: Usage,
    model_ms: u64,
    /// Every refusal, with the index of its answer, in the order they came.
    errors: Vec<(usize, Error)>,
    /// An error that ends the whole proposal (a failure of the sandbox itself).
    fatal: Option<Error>,
    first_entry: Option<ledger::Entry>,
    /// Whether distinct patches are validated.
    validates: bool,
}

impl State {
    /// Take the answers as they come, until every worker is done: read each, merge identical patches, validate the
    /// new ones (one copy for all), and stop everything once one passes or the caller cancels. A worker's slot is
    /// given back once its answer is dealt with.
    fn receive(
        &mut self,
        p: &Prepared,
        rx: &mpsc::Receiver<Sent>,
        parent: &Watch,
        watch: &Watch,
        slots: &Slots,
        received: &AtomicU64,
    ) {
        let stop = &*watch.cancelled;
        let mut validator: Option<Validator<'_>> = None;
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok((n, answer, usage, scratch)) => {
                    if parent.is_cancelled() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    self.usage = add_usage(self.usage, usage);
                    received.fetch_add(usage.output_tokens, Ordering::Relaxed);
                    if self.first_entry.is_none() && !scratch.provider.is_empty() {
                        self.first_entry = Some(scratch);
                    }
                    if self.take(p, n, answer, watch, &mut validator) {
                        stop.store(true, Ordering::Relaxed);
                    }
                    slots.give_back();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if parent.is_cancelled() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Deal with answer `n`: read it, merge it or validate it. True when asking should stop (it passed, or the
    /// copy failed, or a check was cancelled).
    fn take<'p>(
        &mut self,
        p: &'p Prepared,
        n: usize,
        answer: Result<Answer>,
        watch: &Watch,
        validator: &mut Option<Validator<'p>>,
    ) -> bool {
        let answer = match answer {
            Ok(a) => a,
            // Stopped because another passed, or by the caller (then the whole call is cancelled).
            Err(Error::Cancelled) => return false,
            Err(e) => {
                self.errors.push((n, e));
                return false;
            }
        };
        self.model_ms += answer.ms;
        if watch.is_cancelled() {
            return false;
        }
        let cand = match super::propose::read(p, &answer.completion.content, watch) {
            Ok(c) => c,
            Err(Error::Cancelled) => return false,
            Err(e) => {
                self.errors.push((n, e));
                return false;
            }
        };
        self.parsed += 1;
        if let Some(d) = self
            .distinct
            .iter_mut()
            .find(|d| d.cand.patch_bytes == cand.patch_bytes)
        {
            d.votes += 1;
            return false;
        }
        let mut d = Distinct {
            cand,
            first: n,
            answer,
            votes: 1,
            validation: None,
        };
        if self.validates {
            let checked = match validator {
                Some(v) => v.check(&d.cand, watch),
                None => Validator::new(p, watch)
                    .and_then(|v| v.check(&d.cand, watch).map(|r| (v, r)))
                    .map(|(v, r)| {
                        *validator = Some(v);
                        r
                    }),
            };
            match checked {
                Ok(v) => d.validation = Some(v),
                Err(Error::Cancelled) => return true,
                Err(e) => {
                    // The copy itself failed: no candidate can be validated.
                    self.fatal.get_or_insert(e);
                    return true;
                }
            }
        }
        let passed = d.passed();
        self.distinct.push(d);
        passed
    }

    /// The choice: a patch that passed, else the most voted, then the smallest, then the first asked.
    fn choose(mut self, wanted: usize, stopped: Option<String>) -> Result<Gathered> {
        self.errors.sort_by_key(|(n, _)| *n);
        let refused: Vec<String> = self
            .errors
            .iter()
            .take(MAX_REFUSALS_SHOWN)
            .map(|(n, e)| format!("answer {}: {}", n + 1, first_line(&e.to_string())))
            .collect();
        if self.distinct.is_empty() {
            return Err(none_usable(self.errors, self.asked));
        }
        let validated = self
            .distinct
            .iter()
            .filter(|d| d.validation.is_some())
            .count();
        let passed = self.distinct.iter().filter(|d| d.passed()).count();
        let checks_ms = self
            .distinct
            .iter()
            .flat_map(|d| d.validation.iter().flatten())
            .map(|r| r.duration_ms)
            .sum();
        let best = (0..self.distinct.len())
            .min_by_key(|&i| {
                let d = &self.distinct[i];
                (
                    !d.passed(),
                    std::cmp::Reverse(d.votes),
                    d.cand.patch_bytes.len(),
                    d.first,
                )
            })
            .unwrap_or(0);
        let chosen = self.distinct.swap_remove(best);
        let why = if chosen.passed() {
            "its validation passed".to_string()
        } else if validated > 0 {
            format!(
                "no candidate passed validation; the most voted ({} of {} answers), then the smallest",
                chosen.votes, self.parsed
            )
        } else {
            format!(
                "the most voted ({} of {} answers), then the smallest",
                chosen.votes, self.parsed
            )
        };
        let report = CandidatesReport {
            wanted,
            asked: self.asked,
            parsed: self.parsed,
            distinct: self.distinct.len() + 1,
            validated,
            passed,
            checks_ms,
            at_once: 0,
            slots: None,
            chosen: chosen.first + 1,
            votes: chosen.votes,
            why,
            stopped: stopped.or_else(|| {
                (self.asked < wanted && passed > 0)
                    .then(|| "a candidate passed validation".to_string())
            }),
            refused,
        };
        Ok(Gathered {
            chosen,
            usage: self.usage,
            model_ms: self.model_ms,
            report,
        })
    }
}

/// The first line of a refusal, without the "model answer: " every answer's refusal starts with, at most 200
/// characters.
fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let line = line.strip_prefix("model answer: ").unwrap_or(line);
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}

/// The refusal when no answer gave a usable patch: the only error when every answer failed the same way (a server
/// that is down, a prompt over the window), else every answer's reason.
fn none_usable(errors: Vec<(usize, Error)>, asked: usize) -> Error {
    let mut errors = errors;
    if errors.is_empty() {
        return Error::ModelAnswer(format!("none of the {asked} answers gave a usable patch"));
    }
    let all_alike = errors
        .iter()
        .all(|(_, e)| e.to_string() == errors[0].1.to_string());
    if all_alike || errors.len() == 1 {
        return errors.swap_remove(0).1;
    }
    let kind_of_first = errors[0].1.kind();
    let lines: Vec<String> = errors
        .iter()
        .map(|(n, e)| format!("answer {}: {}", n + 1, first_line(&e.to_string())))
        .collect();
    let text = format!(
        "none of the {asked} answers gave a usable patch; {}",
        lines.join("; ")
    );
    match kind_of_first {
        crate::error::ErrorKind::Provider => Error::Provider(text),
        _ => Error::ModelAnswer(text),
    }
}
