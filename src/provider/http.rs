//! What the adapters share: the key from the environment variable the policy names, POST with bounded retries
//! (429 honouring `Retry-After`, 5xx with backoff), and errors that name the URL and the fix but never the key.
//!
//! Cancellation takes effect at once, whatever the request is doing (sending, waiting for the first byte,
//! streaming): each request runs on an agent of its own, and a [`Watchdog`] thread shuts that agent down (ureq's
//! `Agent::shutdown`: the socket is shut down, the blocked read or write returns) as soon as the call's
//! [`Watch`] is cancelled; the request then ends as [`Error::Cancelled`]. A TCP connect in progress, which a
//! shutdown does not interrupt, is made by [`super::connect`]: it looks at the same flag and gives up at once.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::{Completion, Watch};
use crate::error::{Error, Result, excerpt};
use crate::policy::Policy;
use crate::secret::Secret;

/// The largest answer body read from a server.
pub const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;
/// Attempts for one request when the server answers 429 or 5xx.
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest wait honoured from a `Retry-After` header.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(20);

/// A configured endpoint: base URL, key, timeout.
pub struct Endpoint {
    /// The provider kind's name, for messages.
    pub provider: &'static str,
    /// The base URL, without a trailing `/`.
    pub base_url: String,
    key: Option<String>,
    key_env: Option<String>,
    /// The key's spellings, looked for in everything the server sends.
    pub secret: Secret,
    timeout: Duration,
    /// The agent configuration; each request gets an agent of its own, so cancelling one closes only its socket.
    config: ureq::config::Config,
}

/// A successful answer: its body as a reader, and whether it is a server-sent event stream.
pub struct Answer {
    /// The URL that answered.
    pub url: String,
    /// The answer's body, at most [`MAX_RESPONSE_BYTES`]; its connection is closed as soon as the call is cancelled
    /// (a read then fails, or ends early: check [`Answer::cancelled`]).
    pub body: Box<dyn Read + Send>,
    /// Whether it is a server-sent event stream (`text/event-stream`).
    pub is_event_stream: bool,
    /// The call's cancellation flag: a read that failed or ended while it is set was cut off by the cancel.
    cancelled: Arc<AtomicBool>,
}

impl Answer {
    /// Whether the call was cancelled (so a broken or short read is [`Error::Cancelled`], not a server fault).
    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// How often a [`Watchdog`] looks at its call's cancellation flag.
const WATCH_INTERVAL: Duration = Duration::from_millis(10);

/// A thread that shuts down one request's agent when the call is cancelled, closing its connection whatever the
/// request is blocked on. It stops (and is joined) when dropped: when the answer has been read, or refused.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Watch `cancelled` for the life of the returned value; on cancel, shut `agent` down.
    fn start(agent: &ureq::Agent, cancelled: Arc<AtomicBool>) -> Watchdog {
        let (stop, stopped) = mpsc::channel::<()>();
        let agent = agent.clone();
        let thread = std::thread::Builder::new()
            .name("llw-cancel".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(WATCH_INTERVAL)
                {
                    if cancelled.load(Ordering::Relaxed) {
                        agent.shutdown();
                        return;
                    }
                }
            })
            .ok();
        Watchdog {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An answer body that keeps its [`Watchdog`] alive while it is read.
struct Watched<R> {
    body: R,
    _watchdog: Watchdog,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.body.read(buf)
    }
}

impl Endpoint {
    /// The endpoint `policy` names, with its key read from the variable the policy names; `Err` when that variable
    /// is not set.
    pub fn from_policy(policy: &Policy) -> Result<Endpoint> {
        // The variable the key was read from names it in a refusal (the policy's, or the plugin's).
        let (key_env, key) = match (policy.api_key_env(), policy.api_key()) {
            (None, _) => (None, None),
            (Some(_), Some((from, key))) => (Some(from), Some(key)),
            (Some(var), None) if policy.plugin_key_allowed() => {
                return Err(Error::Provider(format!(
                    "the environment variable {var} (named by [provider] api_key_env) is not set; export it in the \
                     environment that starts the worker (in Claude Code, or set the plugin's provider_api_key: \
                     claude plugin configure local-llm-delegator@local-llm-delegator)",
                )));
            }
            (Some(var), None) => {
                return Err(Error::Provider(format!(
                    "the environment variable {var} (named by [provider] api_key_env) is not set; export it in the \
                     environment that starts the worker. The plugin's provider_api_key ({}) is not used for {}: it \
                     goes only to a hosted provider at its official endpoint, unless the policy names {} as its \
                     api_key_env",
                    crate::policy::PLUGIN_KEY_ENV,
                    policy.base_url(),
                    crate::policy::PLUGIN_KEY_ENV
                )));
            }
        };
        let timeout = Duration::from_secs(policy.limits.request_timeout_secs);
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        Ok(Endpoint {
            provider: policy.provider.kind.name(),
            base_url: policy.base_url(),
            secret: key.as_deref().map(Secret::new).unwrap_or_default(),
            key,
            key_env,
            timeout,
            config,
        })
    }

    /// GET `{base_url}/{path}` (for `doctor`): the HTTP status, or a transport error.
    pub fn get_status(&self, path: &str) -> Result<u16> {
        let url = format!("{}/{path}", self.base_url);
        let agent = ureq::Agent::new_with_config(self.config.clone());
        let mut call = agent.get(&url);
        if let Some(key) = &self.key {
            call = call.header("Authorization", format!("Bearer {key}"));
        }
        call.call()
            .map(|r| r.status().as_u16())
            .map_err(|e| self.transport_error(&url, e))
    }

    /// POST `body` to `{base_url}/{path}`, retrying 429 and 5xx a bounded number of times.
    pub fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        model: &str,
        watch: &Watch,
    ) -> Result<Answer> {
        self.send(path, body, model, watch, None)?
            .ok_or_else(|| Error::Provider(format!("{}/{path} gave no answer", self.base_url)))
    }

    /// As [`Endpoint::post`], but `None` when the server answers HTTP `status` (a request it refuses as it is,
    /// which the caller can send in another form).
    pub fn post_unless(
        &self,
        path: &str,
        body: &serde_json::Value,
        model: &str,
        watch: &Watch,
        status: u16,
    ) -> Result<Option<Answer>> {
        self.send(path, body, model, watch, Some(status))
    }

    fn send(
        &self,
        path: &str,
        body: &serde_json::Value,
        model: &str,
        watch: &Watch,
        give_back: Option<u16>,
    ) -> Result<Option<Answer>> {
        let url = format!("{}/{path}", self.base_url);
        let mut attempt = 0;
        loop {
            attempt += 1;
            if watch.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let agent = super::connect::agent(self.config.clone(), watch.cancelled.clone());
            let watchdog = Watchdog::start(&agent, watch.cancelled.clone());
            let mut call = agent.post(&url).header("Content-Type", "application/json");
            if let Some(key) = &self.key {
                call = call.header("Authorization", format!("Bearer {key}"));
            }
            let resp = call.send_json(body).map_err(|e| {
                if watch.is_cancelled() {
                    Error::Cancelled
                } else {
                    self.transport_error(&url, e)
                }
            })?;
            let status = resp.status().as_u16();
            if (200..300).contains(&status) {
                let is_event_stream = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.starts_with("text/event-stream"));
                let body = resp
                    .into_body()
                    .into_with_config()
                    .limit(MAX_RESPONSE_BYTES)
                    .reader();
                return Ok(Some(Answer {
                    url,
                    body: Box::new(Watched {
                        body,
                        _watchdog: watchdog,
                    }),
                    is_event_stream,
                    cancelled: watch.cancelled.clone(),
                }));
            }
            if give_back == Some(status) {
                return Ok(None);
            }
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let mut resp = resp;
            let text = resp
                .body_mut()
                .with_config()
                .limit(64 * 1024)
                .read_to_string()
                .unwrap_or_default();
            if watch.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let wait = match status {
                429 => Some(
                    retry_after
                        .unwrap_or(Duration::from_secs(2))
                        .min(MAX_RETRY_AFTER),
                ),
                500..=599 => Some(Duration::from_millis(500 << (attempt - 1))),
                _ => None,
            };
            match wait {
                Some(w) if attempt < MAX_ATTEMPTS => sleep_unless_cancelled(w, watch)?,
                _ => return Err(self.status_error(&url, status, model, &text, attempt)),
            }
        }
    }

    /// A transport failure, worded for the person who will fix it.
    pub fn transport_error(&self, url: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => Error::Provider(format!(
                "{url} did not answer within [limits] request_timeout_secs = {}; the model may be overloaded, or \
                 raise the limit",
                self.timeout.as_secs()
            )),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound | ureq::Error::Io(_) => {
                Error::Provider(format!(
                    "cannot reach the model server at {url} ({e}); start it, or fix [provider] base_url in the policy"
                ))
            }
            ureq::Error::BodyExceedsLimit(n) => Error::Provider(format!(
                "{url} sent an answer larger than {n} bytes; refused"
            )),
            other => Error::Provider(format!(
                "request to {url} failed: {}",
                self.redact(&other.to_string())
            )),
        }
    }

    fn status_error(
        &self,
        url: &str,
        status: u16,
        model: &str,
        body: &str,
        attempts: u32,
    ) -> Error {
        let hint = match status {
            401 | 403 => match &self.key_env {
                Some(var) => format!("the key in {var} was rejected; check that variable"),
                None => "the server wants a key; name its variable in [provider] api_key_env"
                    .to_string(),
            },
            404 => format!(
                "model {model:?} or the endpoint was not found; check [models] and [provider] base_url"
            ),
            429 => format!("rate limited ({attempts} attempts); wait and retry"),
            500..=599 => format!("the server failed ({attempts} attempts); retry later"),
            _ => "unexpected status".to_string(),
        };
        let body = self.redact(body);
        Error::Provider(format!(
            "{url} answered HTTP {status}: {hint}. Body: {:?}",
            excerpt(body.trim(), 300)
        ))
    }

    /// A server that echoes the request must not make us print the key, in any of its spellings.
    pub fn redact(&self, text: &str) -> String {
        self.secret.redact(text)
    }

    /// Screen an answer before anything reads it: when the key appears in the raw text the server sent (`raw`), in
    /// the answer's content or in the model name it reported, the content and the model name are dropped and
    /// `key_echoed` says where it was found. [`crate::service`] refuses such an answer after recording its tokens.
    pub fn screen(&self, completion: &mut Completion, raw_echo: bool, requested_model: &str) {
        let place = if self.secret.found_in(&completion.content) {
            Some("the answer text")
        } else if self.secret.found_in(&completion.model) {
            Some("the model name")
        } else if raw_echo {
            Some("the raw answer")
        } else {
            None
        };
        if let Some(p) = place {
            completion.content.clear();
            completion.model = requested_model.to_string();
            completion.key_echoed = Some(p);
        }
    }

    /// Read a whole (non-streamed) answer body as text.
    pub fn read_all(&self, answer: &mut Answer) -> Result<String> {
        let mut text = String::new();
        let read = answer.body.read_to_string(&mut text);
        if answer.cancelled() {
            return Err(Error::Cancelled);
        }
        read.map_err(|e| {
            Error::Provider(format!("reading the answer of {} failed: {e}", answer.url))
        })?;
        Ok(text)
    }
}

fn sleep_unless_cancelled(total: Duration, watch: &Watch) -> Result<()> {
    let step = Duration::from_millis(50);
    let mut waited = Duration::ZERO;
    while waited < total {
        if watch.is_cancelled() {
            return Err(Error::Cancelled);
        }
        std::thread::sleep(step.min(total - waited));
        waited += step;
    }
    Ok(())
}
