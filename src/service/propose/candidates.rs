//! Candidates: up to `[sampling] candidates` answers for one proposal, and the choice among them.
//!
//! The answers are asked `[sampling] parallel` at a time (never more than the server's slots: [`at_once`]), each
//! with its own temperature and seed ([`Prepared::chat_for`]). Each goes through the same reader, locator and dry run as a single answer; answers that
//! give byte-identical patches are merged, their count a vote. With validation on propose the distinct patches are
//! validated as they arrive, in ONE sandbox copy ([`Validator`]) reset between them, and the first that passes ends
//! the run: the requests still in flight are cancelled. The choice: a patch that passed, else the most voted, then
//! the smallest, then the first asked. The token budget (`[sampling] max_total_tokens`) is never passed by honest
//! usage: a request starts only if the tokens spent, plus those reserved by the requests in flight, plus its own
//! most (its prompt's estimate and `[limits] max_output_tokens`) stay within it ([`Budget`]); it waits while only
//! the reservations stand in its way, and asking stops once what was spent leaves no room. Asking also stops once
//! the request timeout has passed since the first request. A cancellation of the call stops every request and
//! every check.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

use super::alternatives;
use super::prepare::Prepared;
use super::read::Candidate;
use super::validate::Validator;
use crate::checks::CheckResult;
use crate::error::{Error, Result};
use crate::ledger;
use crate::locate_rank::executed::Executed;
use crate::locate_rank::{self, Failing};
use crate::provider::window::{self, SlotCount};
use crate::provider::{Message, Provider, Usage, Watch};
use crate::service::{Answer, Call, add_usage, ask, prompt_estimate};

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
    /// Whether the validation commands passed on the files before any edit: with JSON edits they run once, beside
    /// the first request, so that the pinned candidates go to the lines their failure names (absent otherwise, and in
    /// the apply-time repair round). A pass there means a candidate's pass shows little: the checks do not exercise
    /// the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_before: Option<bool>,
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

/// The token budget of one proposal's candidates: what was spent and what the requests in flight may still spend.
struct Budget {
    /// `[sampling] max_total_tokens`; `None`: no budget.
    limit: Option<u64>,
    /// (spent, reserved by the requests in flight).
    tokens: std::sync::Mutex<(u64, u64)>,
    settled: std::sync::Condvar,
}

impl Budget {
    fn new(limit: Option<u64>) -> Budget {
        Budget {
            limit,
            tokens: std::sync::Mutex::new((0, 0)),
            settled: std::sync::Condvar::new(),
        }
    }

    /// Reserve `most` tokens for a request: at once when spent + reserved + `most` stay within the limit; waiting
    /// while only the reservations of requests in flight stand in the way. `Err` with why not, once what was spent
    /// leaves no room for it; `Ok(false)` once `stop` is set.
    fn reserve(&self, most: u64, stop: &AtomicBool) -> std::result::Result<bool, String> {
        let Some(limit) = self.limit else {
            return Ok(true);
        };
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let (spent, reserved) = *t;
            if spent.saturating_add(most) > limit {
                return Err(format!(
                    "the token budget: [sampling] max_total_tokens = {limit}, {spent} spent, and the next request \
                     may take {most} (its prompt's estimate and [limits] max_output_tokens)"
                ));
            }
            if spent.saturating_add(reserved).saturating_add(most) <= limit {
                t.1 = reserved + most;
                return Ok(true);
            }
            t = self
                .settled
                .wait_timeout(t, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A request that reserved `most` ended having spent `used`.
    fn settle(&self, most: u64, used: u64) {
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        t.0 = t.0.saturating_add(used);
        t.1 = t.1.saturating_sub(most);
        self.settled.notify_all();
    }
}

/// The most tokens the request `chat` may spend: its prompt's estimate and its answer budget.
fn most_tokens(chat: &crate::provider::ChatRequest) -> u64 {
    prompt_estimate(chat) + u64::from(chat.max_tokens)
}

/// How many refusals the report lists.
const MAX_REFUSALS_SHOWN: usize = 8;

/// Ask for `wanted` candidates with the chat `messages`, read each, validate the distinct ones when `validates`,
/// and choose. With `check_first` (and `validates`), the checks run on the files before any edit while the first
/// request is out, and the pinned candidates wait for what they say. `entry` gets the first answer's provider and
/// model and every candidate's tokens.
pub(super) fn gather(
    p: &Prepared,
    provider: &dyn Provider,
    messages: &[Message],
    call: &Call,
    entry: &mut ledger::Entry,
    validates: bool,
    check_first: bool,
) -> Result<Gathered> {
    let wanted = p.policy.candidates() as usize;
    let (parallel, server_slots) = at_once(&p.policy, &p.model);
    let budget = Budget::new(p.policy.sampling.max_total_tokens);
    room_for_one(p, messages, &budget)?;
    let deadline = Duration::from_secs(p.policy.limits.request_timeout_secs);
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
    let asking = Asking {
        p,
        provider,
        messages,
        child: &child,
        wanted,
        next: AtomicUsize::new(0),
        sent: AtomicUsize::new(0),
        slots: Slots::new(parallel),
        budget,
        stopped_by: std::sync::Mutex::new(None),
        started: Instant::now(),
        deadline,
    };
    let (tx, rx) = mpsc::channel::<Sent>();
    let mut state = State {
        validates,
        check_first: validates && check_first && p.schema.is_some(),
        ..State::default()
    };
    let received_all = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            let tx = tx.clone();
            let asking = &asking;
            scope.spawn(move || asking.ask_in_turn(&tx));
        }
        drop(tx);
        let (parent, stop, received_all) = (&parent, &stop, &received_all);
        scope.spawn(move || relay_cancellation(parent, stop, received_all));
        // Whatever happens on this thread (a panic too), the relay ends and no worker waits for pins.
        let _done = Finally(|| {
            received_all.store(true, Ordering::Relaxed);
            if p.pinned.get().is_none() {
                stop.store(true, Ordering::Relaxed);
                p.pin(&Failing::default());
            }
        });
        state.receive(p, &rx, parent, &watch, &asking.slots, &received);
    });
    state.asked = asking.sent.load(Ordering::SeqCst);
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
    let stopped = asking
        .stopped_by
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let mut gathered = state.choose(wanted, stopped)?;
    gathered.report.at_once = parallel;
    gathered.report.slots = server_slots;
    Ok(gathered)
}

/// Refused before asking: a token budget too small for the first request alone.
fn room_for_one(p: &Prepared, messages: &[Message], budget: &Budget) -> Result<()> {
    let Some(limit) = budget.limit else {
        return Ok(());
    };
    let first = most_tokens(&p.chat_for(messages.to_vec(), 0));
    if first > limit {
        return Err(Error::Policy(format!(
            "[sampling] max_total_tokens = {limit} leaves no room for one request, which may take {first} \
             tokens (its prompt's estimate and [limits] max_output_tokens = {}); raise max_total_tokens, \
             lower max_output_tokens or select less",
            p.policy.limits.max_output_tokens
        )));
    }
    Ok(())
}

/// Carry the caller's cancellation (`parent`) to the candidates' own `stop` every 10 ms until `done`: while the
/// main thread makes the copy and runs the checks before any edit, it reads no answers and sees no cancellation.
fn relay_cancellation(parent: &Watch, stop: &AtomicBool, done: &AtomicBool) {
    while !done.load(Ordering::Relaxed) {
        if parent.is_cancelled() {
            stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs its closure when dropped, unwinding included.
struct Finally<F: FnMut()>(F);

impl<F: FnMut()> Drop for Finally<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// How many candidates for `model` are asked at once: `[sampling] parallel` (at most the candidates), never more
/// than the slots the server reports, so that a one-slot server is not sent requests that wait in its queue until
/// they time out; and those slots, when the server reports them (asked only when more than one would be sent).
pub fn at_once(policy: &crate::policy::Policy, model: &str) -> (usize, Option<SlotCount>) {
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

/// What the worker threads of [`gather`] share: each asks for the next candidate while there is a slot, time and
/// room in the budget.
struct Asking<'a> {
    p: &'a Prepared,
    provider: &'a dyn Provider,
    messages: &'a [Message],
    /// The call the requests are made with (the candidates' own watch).
    child: &'a Call,
    wanted: usize,
    /// The index of the next candidate to ask.
    next: AtomicUsize,
    /// Requests sent.
    sent: AtomicUsize,
    slots: Slots,
    budget: Budget,
    /// Why asking stopped before `wanted` requests, the first reason.
    stopped_by: std::sync::Mutex<Option<String>>,
    started: Instant,
    deadline: Duration,
}

impl Asking<'_> {
    /// One worker: ask candidates in turn and send each answer to `tx`, until none is left, asking stopped, or the
    /// receiver is gone.
    fn ask_in_turn(&self, tx: &mpsc::Sender<Sent>) {
        let stop = &*self.child.watch.cancelled;
        loop {
            // A slot is free again once the main thread has read (and validated) an answer.
            if !self.slots.take(stop) {
                return;
            }
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            if n >= self.wanted {
                self.slots.give_back();
                return;
            }
            if n > 0 {
                // Pinned: the places are ranked once the checks before any edit have spoken.
                while self.p.pinned.get().is_none() {
                    if stop.load(Ordering::Relaxed) {
                        self.slots.give_back();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if self.started.elapsed() >= self.deadline {
                    return self.stop_asking(format!(
                        "the time: [limits] request_timeout_secs = {} had passed",
                        self.deadline.as_secs()
                    ));
                }
            }
            let chat = self.p.chat_for(self.messages.to_vec(), n);
            let most = most_tokens(&chat);
            match self.budget.reserve(most, stop) {
                Ok(true) => {}
                Ok(false) => {
                    self.slots.give_back();
                    return;
                }
                Err(why) => return self.stop_asking(why),
            }
            self.sent.fetch_add(1, Ordering::SeqCst);
            let mut scratch = ledger::Entry::new("propose", "", Instant::now());
            let answer = ask(
                &self.p.policy,
                self.provider,
                &chat,
                self.child,
                &mut scratch,
            );
            self.budget.settle(most, scratch.usage.total_tokens);
            let usage = scratch.usage;
            if tx.send((n, answer, usage, scratch)).is_err() {
                return;
            }
        }
    }

    /// Stop asking for `why`: nothing later starts either; the slot taken is given back.
    fn stop_asking(&self, why: String) {
        let mut s = self.stopped_by.lock().unwrap_or_else(|e| e.into_inner());
        s.get_or_insert(why);
        self.next.store(self.wanted, Ordering::SeqCst);
        self.slots.give_back();
    }
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
    /// Whether the checks run on the files before any edit, to pin the candidates after the first.
    check_first: bool,
    /// Whether the checks passed before any edit, when they ran then.
    passed_before: Option<bool>,
}

impl State {
    /// First, the pins (with `check_first`: once the checks before any edit have run). Then take the answers as
    /// they come, until every worker is done: read each, merge identical patches, validate the
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
        let mut validator = if self.check_first {
            self.run_checks_first(p, watch)
        } else {
            p.pin(&Failing::default());
            None
        };
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

    /// Make the sandbox copy and run the checks there on the files before any edit, then pin the candidates after
    /// the first to the places ranked with what a failure says. The pins are set on every return (a failure of the
    /// copy ends the proposal as fatal; a cancellation stops it), and [`gather`] sets them on a panic too, so no
    /// request waits for them forever.
    fn run_checks_first<'p>(&mut self, p: &'p Prepared, watch: &Watch) -> Option<Validator<'p>> {
        let checked = Validator::new(p, watch).and_then(|v| v.check_before(watch).map(|r| (v, r)));
        match checked {
            Ok((v, before)) => {
                let failed = before.results.iter().find(|r| !r.passed);
                self.passed_before = Some(failed.is_none() && !before.results.is_empty());
                let selected = v.selected();
                let roots = v.roots();
                let failing = failed.map_or_else(Failing::default, |r| {
                    let failing = Failing {
                        ran: Executed::read(&before.traces, &selected),
                        ..Failing::read(&r.output, &selected, &roots)
                    };
                    // With no place found after the probe ran any mutant, the fix may be a line the code lacks.
                    // A slip of the probe's heuristics must not cost the proposal: a panic there finds nothing.
                    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        probe(p, &v, &failing, r, watch)
                    }))
                    .unwrap_or_default();
                    Failing {
                        fixed: found.fixed,
                        further: found.further,
                        probed: found.any,
                        ..failing
                    }
                });
                p.pin(&failing);
                Some(v)
            }
            Err(e) => {
                watch.cancelled.store(true, Ordering::Relaxed);
                p.pin(&Failing::default());
                if !matches!(e, Error::Cancelled) {
                    self.fatal.get_or_insert(e);
                }
                None
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
        // An answer offering conflicting edits of one region gives one candidate per alternative.
        let cands = match alternatives::read_all(p, &answer.completion.content, watch) {
            Ok(c) => c,
            Err(Error::Cancelled) => return false,
            Err(e) => {
                self.errors.push((n, e));
                return false;
            }
        };
        self.parsed += 1;
        cands
            .into_iter()
            .any(|cand| self.keep(p, n, cand, answer.clone(), watch, validator))
    }

    /// Keep `cand`, read from answer `n`: merge it with an identical patch, or validate it. True when asking should
    /// stop (it passed, or the copy failed, or a check was cancelled).
    fn keep<'p>(
        &mut self,
        p: &'p Prepared,
        n: usize,
        cand: Candidate,
        answer: Answer,
        watch: &Watch,
        validator: &mut Option<Validator<'p>>,
    ) -> bool {
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
            passed_before: self.passed_before,
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

/// The most mutants the mutation probe runs the failing check on ([`locate_rank::mutants::probe`]).
pub const PROBE_RUNS: usize = 64;
/// How long the mutation probe may take in all, at least: the pinned candidates wait for it.
const PROBE_BUDGET: Duration = Duration::from_secs(3);
/// How long it may take at most, however slow the check: [`PROBE_BUDGET`] or twelve times the check's time before
/// any edit, whichever is longer, up to this (a loaded machine slows every run of the check alike).
const PROBE_BUDGET_MOST: Duration = Duration::from_secs(6);
/// The least time one child of the check may take on one mutant when the probe runs them all in one run.
const PROBE_EACH_LEAST: Duration = Duration::from_millis(250);
/// A failing check that took longer than this before any edit is not probed: too few mutants would fit.
const PROBE_SLOWEST_MS: u64 = 1_500;

/// Whether the probe runs on the check that `failed` before any edit: not when it timed out or was too slow for
/// enough mutants to fit.
fn probes(failed: &CheckResult) -> bool {
    !failed.timed_out && failed.duration_ms <= PROBE_SLOWEST_MS
}

/// Run the mutation probe ([`locate_rank::mutants`]) with the check that `failed` before any edit, in the copy of
/// `v`: the lines where a mutant made it pass. Every mutant goes to one run of the check when it is Python and
/// imports a selected file ([`locate_rank::batch`]); otherwise one run a mutant. Each mutant's check may take four times as long as the check took
/// before any edit (at least a second, at most the policy's timeout, since a mutant may loop), and the probe stops
/// at [`PROBE_RUNS`] mutants, when its time is up (twelve times the check's, within [`PROBE_BUDGET`] and
/// [`PROBE_BUDGET_MOST`]), or at a cancellation.
fn probe(
    p: &Prepared,
    v: &Validator<'_>,
    failing: &Failing,
    failed: &CheckResult,
    watch: &Watch,
) -> locate_rank::batch::Probed {
    if !probes(failed) {
        return Default::default();
    }
    let most = p.policy.validation.timeout_secs.saturating_mul(1000);
    let timeout = Duration::from_millis((4 * failed.duration_ms).clamp(1000, most.max(1)));
    let budget =
        Duration::from_millis(12 * failed.duration_ms).clamp(PROBE_BUDGET, PROBE_BUDGET_MOST);
    let started = Instant::now();
    // Every mutant in one run of the check: each child of it within four times the check's own time before any
    // edit (which counted the interpreter's start too), at least PROBE_EACH_LEAST, at most a mutant's timeout.
    let each = Duration::from_millis(failed.duration_ms.saturating_mul(4))
        .clamp(PROBE_EACH_LEAST, timeout);
    let mut many = |mutants: &[(String, String)], every: bool| {
        if watch.is_cancelled() {
            return None;
        }
        v.try_many(mutants, every, &failed.command, each, budget, watch)
            .ok()
            .flatten()
    };
    let mut check = |path: &str, text: &str| {
        if started.elapsed() >= budget || watch.is_cancelled() {
            return None;
        }
        v.try_text(path, text, &failed.command, timeout, watch).ok()
    };
    let s = &p.selection;
    locate_rank::batch::probe_many(
        &p.task, &s.files, &s.focus, failing, PROBE_RUNS, &mut many, &mut check,
    )
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
