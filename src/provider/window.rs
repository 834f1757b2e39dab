//! The context window a request is checked against, the slots a server answers at once, and the check that the
//! server read the whole prompt.
//!
//! When the policy sets `[models] context_window`, that figure is used. Otherwise the server is asked, once per
//! process, base URL and model (answers are cached; a server that cannot be reached is asked again after
//! [`RETRY_AFTER`]):
//! - llama.cpp (and the generic `openai` kind, often a llama.cpp server): `GET {root}/props`
//!   (`default_generation_settings.n_ctx`, the window of one slot, and `total_slots`), then for what it did not say
//!   `GET {root}/slots` (`n_ctx` of the first slot, how many slots), where `{root}` is the base URL without its
//!   `/v1`; the generic kind then asks a LiteLLM proxy's `GET {root}/model/info` (`model_info.max_input_tokens`);
//!   then the model list below;
//! - Ollama: `POST {root}/api/show` (`model_info["<arch>.context_length"]`, the trained window; `num_ctx` in its
//!   `parameters`) and `GET {root}/api/ps` (`context_length` of the loaded model): the smaller of the trained and
//!   the loaded window (a model not loaded and without `num_ctx` is taken at [`OLLAMA_DEFAULT_CONTEXT`]);
//! - LM Studio: `GET {root}/api/v0/models`: the smaller of `max_context_length` and `loaded_context_length` (a
//!   model not loaded is taken at [`LMSTUDIO_DEFAULT_CONTEXT`]);
//! - vLLM, OpenRouter, Hugging Face and other OpenAI-compatible servers: `GET {base_url}/models`, the entry whose
//!   `id` is the model: `context_length`, else `top_provider.context_length` (OpenRouter), else the smallest
//!   `providers[].context_length` (Hugging Face router), else `meta.n_ctx` (llama.cpp), else `max_model_len` (vLLM);
//! - DeepSeek's API reports no window: never asked.
//!
//! Failing all that, the provider kind's default applies. Every result says which figure was used and where it
//! came from. Only llama.cpp reports its slots ([`slots`]). Not here: the estimate of a prompt's size
//! (`service::estimate_tokens`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::policy::{Policy, ProviderKind};

/// How long a failed discovery (server unreachable) is remembered before the server is asked again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// The longest a discovery request may take.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery answer read.
const MAX_DISCOVERY_BYTES: u64 = 4 * 1024 * 1024;

/// The context window a request was checked against, and where the figure came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ContextWindow {
    /// The window in tokens (prompt and answer together).
    pub tokens: u64,
    /// "policy" ([models] context_window), "server" (reported by the model server) or "default" (the provider
    /// kind's assumption: the server was not asked or did not say).
    pub source: String,
    /// Where exactly, e.g. "GET http://127.0.0.1:8080/props (default_generation_settings.n_ctx)".
    pub detail: String,
}

impl std::fmt::Display for ContextWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens ({}: {})",
            self.tokens, self.source, self.detail
        )
    }
}

/// How many requests a server answers at once (llama.cpp's slots), and where that figure came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SlotCount {
    /// The slots: requests answered at once; more wait in the server's queue.
    pub slots: u64,
    /// Where exactly, e.g. "GET http://127.0.0.1:8080/props (total_slots)".
    pub detail: String,
}

/// What a server said about a model.
#[derive(Debug, Clone)]
struct Facts {
    window: ContextWindow,
    slots: Option<SlotCount>,
}

/// The window for `model` under `policy`: the policy's figure, the server's (asked once per process), or the
/// default.
pub fn for_model(policy: &Policy, model: &str) -> ContextWindow {
    if let Some(tokens) = policy.models.context_window {
        return ContextWindow {
            tokens,
            source: "policy".into(),
            detail: "[models] context_window".into(),
        };
    }
    facts(policy, model).window
}

/// The slots the server reports for `model` (asked once per process, with the window); `None` when it does not
/// say (only llama.cpp does: `/props` `total_slots`, else the length of `/slots`).
pub fn slots(policy: &Policy, model: &str) -> Option<SlotCount> {
    facts(policy, model).slots
}

/// The server's facts for `model`, from the cache or asked now.
fn facts(policy: &Policy, model: &str) -> Facts {
    let key = (
        policy.provider.kind.name().to_string(),
        policy.base_url(),
        model.to_string(),
    );
    static CACHE: OnceLock<Mutex<HashMap<CacheKey, Cached>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(c) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
        && c.until.is_none_or(|u| Instant::now() < u)
    {
        return c.facts.clone();
    }
    let (facts, lasting) = discover(policy, model);
    let until = (!lasting).then(|| Instant::now() + RETRY_AFTER);
    cache.lock().unwrap_or_else(|p| p.into_inner()).insert(
        key,
        Cached {
            facts: facts.clone(),
            until,
        },
    );
    facts
}

/// Provider kind, base URL, model.
type CacheKey = (String, String, String);

struct Cached {
    facts: Facts,
    /// `None`: for the life of the process.
    until: Option<Instant>,
}

/// The discovery requests of one server: where they go, with which key, and what became of them.
struct Probe {
    agent: ureq::Agent,
    key: Option<String>,
    /// The base URL without its trailing `/`.
    base: String,
    /// The base URL without its `/v1`: where llama.cpp, Ollama, LM Studio and LiteLLM serve their own APIs.
    root: String,
    /// Every URL asked, in order.
    asked: Vec<String>,
    /// Whether any answered (even without a window).
    reached: bool,
}

impl Probe {
    fn new(policy: &Policy) -> Probe {
        let base = policy.base_url().trim_end_matches('/').to_string();
        let root = base.strip_suffix("/v1").unwrap_or(&base).to_string();
        Probe {
            agent: ureq::Agent::config_builder()
                .timeout_global(Some(DISCOVERY_TIMEOUT))
                .http_status_as_error(false)
                .build()
                .into(),
            key: policy.api_key().map(|(_, k)| k),
            base,
            root,
            asked: Vec::new(),
            reached: false,
        }
    }

    /// `GET url`: the JSON answer, `None` when there is none.
    fn get(&mut self, url: &str) -> Option<Value> {
        let mut call = self.agent.get(url);
        if let Some(k) = &self.key {
            call = call.header("Authorization", format!("Bearer {k}"));
        }
        let answer = call.call();
        self.read(url, answer)
    }

    /// `POST url` with the JSON `body`: the JSON answer, `None` when there is none.
    fn post(&mut self, url: &str, body: &Value) -> Option<Value> {
        let mut call = self.agent.post(url);
        if let Some(k) = &self.key {
            call = call.header("Authorization", format!("Bearer {k}"));
        }
        let answer = call.send_json(body);
        self.read(url, answer)
    }

    fn read(
        &mut self,
        url: &str,
        answer: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Option<Value> {
        self.asked.push(url.to_string());
        let mut resp = answer.ok()?;
        let status = resp.status().as_u16();
        // A server still loading its model (503), failing (5xx), refusing for want of a key (401, 403) or rate
        // limiting (429) said nothing lasting about its window: asked again after RETRY_AFTER.
        if status >= 500 || matches!(status, 401 | 403 | 429) {
            return None;
        }
        self.reached = true;
        if !resp.status().is_success() {
            return None;
        }
        // An answer that cannot be read or parsed reports nothing (but the server was reached).
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_DISCOVERY_BYTES)
            .read_to_string()
            .unwrap_or_default();
        serde_json::from_str(&text).ok()
    }
}

fn server(tokens: u64, detail: String) -> ContextWindow {
    ContextWindow {
        tokens,
        source: "server".into(),
        detail,
    }
}

/// Ask the server; returns what it said and whether that lasts (false when the server could not be reached).
fn discover(policy: &Policy, model: &str) -> (Facts, bool) {
    let kind = policy.provider.kind;
    let fallback = |why: String| ContextWindow {
        tokens: kind.default_context_window(),
        source: "default".into(),
        detail: format!(
            "the {} default; {why}; set [models] context_window to the model's real window",
            kind.name()
        ),
    };
    if kind == ProviderKind::Deepseek {
        let window = fallback("DeepSeek's API does not report it".into());
        return (
            Facts {
                window,
                slots: None,
            },
            true,
        );
    }
    let mut p = Probe::new(policy);
    let mut slots = None;
    let mut window = match kind {
        ProviderKind::Llamacpp | ProviderKind::Openai => {
            let (w, s) = llamacpp(&mut p);
            slots = s;
            match (w, kind) {
                (None, ProviderKind::Openai) => litellm(&mut p, model),
                (w, _) => w,
            }
        }
        ProviderKind::Ollama => ollama(&mut p, model),
        ProviderKind::Lmstudio => lmstudio(&mut p, model),
        _ => None,
    };
    if window.is_none() && kind != ProviderKind::Ollama && kind != ProviderKind::Lmstudio {
        let url = format!("{}/models", p.base);
        window = p
            .get(&url)
            .as_ref()
            .and_then(|v| models_context(v, model))
            .map(|(n, field)| server(n, format!("GET {url} ({field} of {model})")));
    }
    let lasting = p.reached;
    let window = window.unwrap_or_else(|| {
        let asked = p.asked.join(", ");
        fallback(if p.reached {
            format!("the server did not report a window at {asked}")
        } else {
            format!("the server could not be reached, or was not ready, at {asked}")
        })
    });
    (Facts { window, slots }, lasting)
}

/// llama.cpp: `GET {root}/props` (`default_generation_settings.n_ctx`, `total_slots`), then, for what it did not
/// say, `GET {root}/slots` (`n_ctx` of the first slot, how many slots).
fn llamacpp(p: &mut Probe) -> (Option<ContextWindow>, Option<SlotCount>) {
    let url = format!("{}/props", p.root);
    let props = p.get(&url);
    let mut window = props
        .as_ref()
        .and_then(props_n_ctx)
        .map(|n| server(n, format!("GET {url} (default_generation_settings.n_ctx)")));
    let mut slots = props
        .as_ref()
        .and_then(props_total_slots)
        .map(|n| SlotCount {
            slots: n,
            detail: format!("GET {url} (total_slots)"),
        });
    if window.is_none() || slots.is_none() {
        let url = format!("{}/slots", p.root);
        if let Some(v) = p.get(&url) {
            window = window.or_else(|| {
                slots_n_ctx(&v).map(|n| server(n, format!("GET {url} (n_ctx of slot 0)")))
            });
            slots = slots.or_else(|| {
                slots_count(&v).map(|n| SlotCount {
                    slots: n,
                    detail: format!("GET {url} (the slots listed)"),
                })
            });
        }
    }
    (window, slots)
}

/// The window Ollama loads a model with when neither the model's `num_ctx` nor a loaded copy says otherwise: its
/// smallest default (less than 24 GiB of VRAM; `OLLAMA_CONTEXT_LENGTH` may set more).
pub const OLLAMA_DEFAULT_CONTEXT: u64 = 4096;
/// The window LM Studio loads a model with by default when it loads it on demand.
pub const LMSTUDIO_DEFAULT_CONTEXT: u64 = 4096;

/// The smaller of the model's trained window and the one it is (or will be) loaded with, both named.
fn smaller(trained: Option<(u64, String)>, loaded: (u64, String)) -> ContextWindow {
    match trained {
        Some((t, why)) if t < loaded.0 => server(
            t,
            format!(
                "{why}, the trained window, below the loaded one: {}",
                loaded.1
            ),
        ),
        Some((_, why)) => server(
            loaded.0,
            format!("{}; the trained window is not smaller: {why}", loaded.1),
        ),
        None => server(loaded.0, loaded.1),
    }
}

/// Ollama: `POST {root}/api/show` (`model_info["<arch>.context_length"]`, the trained window, and `num_ctx` in
/// `parameters`), and `GET {root}/api/ps` (`context_length` of the model when it is loaded): the smaller of the
/// trained window and the loaded one (`/api/ps`, else `num_ctx`, else [`OLLAMA_DEFAULT_CONTEXT`]). Ollama cuts a
/// longer prompt silently, so the smaller figure is the one to check against.
fn ollama(p: &mut Probe, model: &str) -> Option<ContextWindow> {
    let show_url = format!("{}/api/show", p.root);
    let show = p.post(&show_url, &serde_json::json!({ "model": model }))?;
    let trained = ollama_trained(&show).map(|(n, key)| (n, format!("POST {show_url} ({key} {n})")));
    let ps_url = format!("{}/api/ps", p.root);
    let loaded = p
        .get(&ps_url)
        .as_ref()
        .and_then(|v| ollama_loaded(v, model));
    let loaded = match (loaded, ollama_num_ctx(&show)) {
        (Some(n), _) => (
            n,
            format!("GET {ps_url} (context_length {n} of {model}, as loaded)"),
        ),
        (None, Some(n)) => (
            n,
            format!("POST {show_url} (num_ctx {n} in the model's parameters)"),
        ),
        (None, None) => (
            OLLAMA_DEFAULT_CONTEXT,
            format!(
                "{model} is not loaded and sets no num_ctx: Ollama's smallest default context length, \
                 {OLLAMA_DEFAULT_CONTEXT} (its OLLAMA_CONTEXT_LENGTH may give more)"
            ),
        ),
    };
    Some(smaller(trained, loaded))
}

/// Ollama `/api/show`: the trained window, `model_info["<general.architecture>.context_length"]` (else the one
/// `*.context_length` key), and that key.
fn ollama_trained(v: &Value) -> Option<(u64, String)> {
    let info = v["model_info"].as_object()?;
    if let Some(arch) = info.get("general.architecture").and_then(Value::as_str) {
        let key = format!("{arch}.context_length");
        if let Some(n) = info.get(&key).and_then(positive) {
            return Some((n, key));
        }
    }
    let mut found = info
        .iter()
        .filter(|(k, _)| k.ends_with(".context_length"))
        .filter_map(|(k, v)| positive(v).map(|n| (n, k.clone())));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// Ollama `/api/show`: `num_ctx` in `parameters` (lines of `name value`).
fn ollama_num_ctx(v: &Value) -> Option<u64> {
    v["parameters"].as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse::<u64>().ok())
            .flatten()
            .filter(|&n| n > 0 && n <= MAX_REPORTED_WINDOW)
    })
}

/// Ollama `/api/ps`: `context_length` of `model` (by `name` or `model`; a name without a tag is `:latest`).
fn ollama_loaded(v: &Value, model: &str) -> Option<u64> {
    let tagged = if model.contains(':') {
        model.to_string()
    } else {
        format!("{model}:latest")
    };
    let entry = v["models"].as_array()?.iter().find(|m| {
        [&m["name"], &m["model"]]
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n == model || n == tagged))
    })?;
    positive(&entry["context_length"])
}

/// LM Studio: `GET {root}/api/v0/models`, the entry of `model` (else the only loaded language model): the smaller
/// of `max_context_length` (trained) and `loaded_context_length` (else [`LMSTUDIO_DEFAULT_CONTEXT`] for a model not
/// loaded yet).
fn lmstudio(p: &mut Probe, model: &str) -> Option<ContextWindow> {
    let url = format!("{}/api/v0/models", p.root);
    let v = p.get(&url)?;
    let (id, trained, loaded) = lmstudio_entry(&v, model)?;
    let trained = trained.map(|n| (n, format!("GET {url} (max_context_length {n} of {id})")));
    let loaded = match loaded {
        Some(n) => (n, format!("GET {url} (loaded_context_length {n} of {id})")),
        None => (
            LMSTUDIO_DEFAULT_CONTEXT,
            format!(
                "{id} is not loaded: LM Studio loads it with its default context length, {LMSTUDIO_DEFAULT_CONTEXT} \
                 unless you load it with more"
            ),
        ),
    };
    Some(smaller(trained, loaded))
}

/// LM Studio `/api/v0/models`: the id of `model`'s entry (else the only loaded language model's), its
/// `max_context_length` and, when loaded, its `loaded_context_length`.
fn lmstudio_entry(v: &Value, model: &str) -> Option<(String, Option<u64>, Option<u64>)> {
    let data = v["data"].as_array()?;
    let entry = data
        .iter()
        .find(|m| m["id"].as_str() == Some(model))
        .or_else(|| {
            let mut loaded = data
                .iter()
                .filter(|m| m["state"] == "loaded" && m["type"] != "embeddings");
            match (loaded.next(), loaded.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        })?;
    let id = entry["id"].as_str().unwrap_or(model);
    let id = super::openai::reported_model(Some(id.to_string()), model);
    let loaded = (entry["state"] == "loaded")
        .then(|| positive(&entry["loaded_context_length"]))
        .flatten();
    Some((id, positive(&entry["max_context_length"]), loaded))
}

/// A LiteLLM proxy: `GET {root}/model/info`, `model_info.max_input_tokens` of the entry whose `model_name` is the
/// model.
fn litellm(p: &mut Probe, model: &str) -> Option<ContextWindow> {
    let url = format!("{}/model/info", p.root);
    let v = p.get(&url)?;
    litellm_max_input(&v, model).map(|n| {
        server(
            n,
            format!("GET {url} (model_info.max_input_tokens of {model})"),
        )
    })
}

/// LiteLLM `/model/info`: `model_info.max_input_tokens` of `model`; the smallest when several deployments share
/// the name.
fn litellm_max_input(v: &Value, model: &str) -> Option<u64> {
    v["data"]
        .as_array()?
        .iter()
        .filter(|m| m["model_name"].as_str() == Some(model))
        .filter_map(|m| positive(&m["model_info"]["max_input_tokens"]))
        .min()
}

/// The largest window taken from a server (10 million tokens); a larger figure is ignored rather than let it turn
/// the context-window check off.
const MAX_REPORTED_WINDOW: u64 = 10_000_000;

fn positive(v: &Value) -> Option<u64> {
    v.as_u64().filter(|&n| n > 0 && n <= MAX_REPORTED_WINDOW)
}

/// llama.cpp `/props`: `default_generation_settings.n_ctx`.
fn props_n_ctx(v: &Value) -> Option<u64> {
    positive(&v["default_generation_settings"]["n_ctx"])
}

/// llama.cpp `/props`: `total_slots`.
fn props_total_slots(v: &Value) -> Option<u64> {
    v["total_slots"]
        .as_u64()
        .filter(|&n| (1..=MAX_REPORTED_SLOTS).contains(&n))
}

/// llama.cpp `/slots`: `n_ctx` of the first slot.
fn slots_n_ctx(v: &Value) -> Option<u64> {
    positive(&v.as_array()?.first()?["n_ctx"])
}

/// llama.cpp `/slots`: how many slots it lists.
fn slots_count(v: &Value) -> Option<u64> {
    let n = v.as_array()?.len() as u64;
    (1..=MAX_REPORTED_SLOTS).contains(&n).then_some(n)
}

/// The most slots taken from a server; a larger figure is ignored.
const MAX_REPORTED_SLOTS: u64 = 1024;

/// An OpenAI-style model list: the entry of `model` (or the only entry, for a local server that serves one model
/// under any name) and the field that gave its window.
fn models_context(v: &Value, model: &str) -> Option<(u64, &'static str)> {
    let data = v["data"].as_array()?;
    let entry =
        data.iter()
            .find(|m| m["id"].as_str() == Some(model))
            .or(match data.as_slice() {
                [only] if only["owned_by"] == "llamacpp" => Some(only),
                _ => None,
            })?;
    if let Some(n) = positive(&entry["context_length"]) {
        return Some((n, "context_length"));
    }
    if let Some(n) = positive(&entry["top_provider"]["context_length"]) {
        return Some((n, "top_provider.context_length"));
    }
    if let Some(n) = entry["providers"].as_array().and_then(|ps| {
        ps.iter()
            .filter_map(|p| positive(&p["context_length"]))
            .min()
    }) {
        return Some((n, "the smallest providers[].context_length"));
    }
    if let Some(n) = positive(&entry["meta"]["n_ctx"]) {
        return Some((n, "meta.n_ctx"));
    }
    positive(&entry["max_model_len"]).map(|n| (n, "max_model_len"))
}

/// Below this share of the estimated prompt tokens, a server's reported prompt tokens mean it dropped part of the
/// prompt. The estimate is bytes / 3 (`service::estimate_tokens`), on the high side for code, so whole prompts
/// read back lower. Measured on the real llama.cpp server with SmolLM2-135M (49k-token vocabulary), 55 real files
/// sent as a chat prompt (25 Rust files from cargo's registry, 20 Python standard-library modules, 10 READMEs, each
/// cut to 15,000 bytes): reported / estimated was 0.673 at the lowest (a prose-heavy Python module), 0.904 median,
/// 1.663 at the highest. With Gemma 3 270M (262k-token vocabulary) on every second of those files, cut to 6,000
/// bytes: 0.735 lowest, 0.894 median (28 files). A larger vocabulary did not read these files in fewer tokens; the
/// limit sits well below the lowest figure measured, leaving room for tokenizers denser on code than both and for
/// prompts of mostly prose. A server that cut the prompt to its window reads at most the window, so this catches
/// a prompt more than about twice the window. (That llama.cpp build does not truncate: a
/// prompt over its window is refused with HTTP 400 `exceed_context_size_error`. Its `prompt_tokens` counts the
/// whole prompt also when most of it came from its prompt cache.)
pub const MIN_READ_SHARE: f64 = 0.45;
/// Prompts estimated below this many tokens are not checked: they fit any window a server is run with (2,048 and
/// up), and in a small prompt the chat template's own tokens weigh too much for the ratio to mean anything.
pub const MIN_CHECKED_PROMPT: u64 = 1000;

/// The refusal for a server that read far fewer prompt tokens (`read`, as it reported them) than were sent
/// (`sent`, estimated); `None` when the figures agree, or when the server reported none.
pub fn dropped_prompt(sent: u64, read: u64) -> Option<Error> {
    if read == 0 || sent < MIN_CHECKED_PROMPT || read as f64 >= sent as f64 * MIN_READ_SHARE {
        return None;
    }
    Some(Error::Provider(format!(
        "the server dropped part of the prompt (sent about {sent} tokens, it read {read}), so its answer was made \
         without the whole task or files and is refused; the server's context window is smaller than the prompt: \
         set [models] context_window to its real window (or start the server with a larger one), or select less \
         (a line range: PATH:START-END)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A server on loopback that answers every request with `status` and `body` (scripted: a real llama.cpp
    /// answers 503 only while it loads its model).
    fn answering(status: u16, body: &'static str) -> String {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", l.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf);
                let _ = write!(
                    c,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        url
    }

    fn policy_at(url: &str) -> Policy {
        let mut p = Policy::default_for_allowed_root();
        p.provider.base_url = Some(url.to_string());
        p
    }

    #[test]
    fn a_server_still_loading_is_asked_again_and_a_reported_window_is_kept() {
        let (Facts { window: w, .. }, lasting) = discover(
            &policy_at(&answering(503, "{\"error\":\"Loading model\"}")),
            "m",
        );
        assert_eq!((w.source.as_str(), lasting), ("default", false), "{w}");
        assert!(w.detail.contains("not ready"), "{w}");
        let (Facts { window: w, .. }, lasting) = discover(&policy_at(&answering(401, "{}")), "m");
        assert!(!lasting, "{w}");
        let (Facts { window: w, .. }, lasting) = discover(
            &policy_at(&answering(
                200,
                "{\"default_generation_settings\":{\"n_ctx\":2048}}",
            )),
            "m",
        );
        assert_eq!(
            (w.tokens, w.source.as_str(), lasting),
            (2048, "server", true),
            "{w}"
        );
        let (Facts { window: w, .. }, _) = discover(
            &policy_at(&answering(
                200,
                "{\"default_generation_settings\":{\"n_ctx\":1000000000000}}",
            )),
            "m",
        );
        assert_eq!(w.source, "default", "an absurd figure is not taken: {w}");
    }

    #[test]
    fn reads_each_servers_window_field() {
        assert_eq!(
            props_n_ctx(&json!({"default_generation_settings": {"n_ctx": 2048}})),
            Some(2048)
        );
        assert_eq!(props_n_ctx(&json!({"data": []})), None);
        assert_eq!(slots_n_ctx(&json!([{"id": 0, "n_ctx": 4096}])), Some(4096));
        assert_eq!(slots_n_ctx(&json!({"data": []})), None);
        let list = json!({"data": [
            {"id": "z-ai/glm-5.3-flash", "context_length": 131072},
            {"id": "other", "top_provider": {"context_length": 65536}},
            {"id": "openai/gpt-oss-20b", "providers": [{"context_length": 131072}, {"context_length": 32768}]},
        ]});
        assert_eq!(
            models_context(&list, "z-ai/glm-5.3-flash"),
            Some((131072, "context_length"))
        );
        assert_eq!(
            models_context(&list, "other"),
            Some((65536, "top_provider.context_length"))
        );
        assert_eq!(
            models_context(&list, "openai/gpt-oss-20b").unwrap().0,
            32768
        );
        assert_eq!(models_context(&list, "missing"), None);
        let llama = json!({"data": [{"id": "-", "owned_by": "llamacpp", "meta": {"n_ctx": 8192}}]});
        assert_eq!(models_context(&llama, "local"), Some((8192, "meta.n_ctx")));
    }

    #[test]
    fn reads_the_local_servers_own_fields() {
        let show = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192",
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768, "qwen2.block_count": 28}
        });
        assert_eq!(
            ollama_trained(&show),
            Some((32768, "qwen2.context_length".into()))
        );
        assert_eq!(ollama_num_ctx(&show), Some(8192));
        // No architecture named: the one *.context_length key; two are ambiguous.
        let bare = json!({"model_info": {"llama.context_length": 4096}});
        assert_eq!(ollama_trained(&bare).map(|t| t.0), Some(4096));
        let two = json!({"model_info": {"a.context_length": 1, "b.context_length": 2}});
        assert_eq!(ollama_trained(&two), None);
        assert_eq!(ollama_num_ctx(&json!({"parameters": "num_ctx lots"})), None);
        let ps = json!({"models": [{"name": "llama3:latest", "model": "llama3:latest", "context_length": 2048}]});
        assert_eq!(
            ollama_loaded(&ps, "llama3"),
            Some(2048),
            "a name without a tag is :latest"
        );
        assert_eq!(ollama_loaded(&ps, "llama3:8b"), None);

        let lm = json!({"data": [
            {"id": "a", "type": "llm", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 4096},
            {"id": "e", "type": "embeddings", "state": "loaded", "max_context_length": 2048,
             "loaded_context_length": 2048},
            {"id": "b", "type": "llm", "state": "not-loaded", "max_context_length": 131072}
        ]});
        assert_eq!(
            lmstudio_entry(&lm, "a"),
            Some(("a".into(), Some(32768), Some(4096)))
        );
        assert_eq!(
            lmstudio_entry(&lm, "b"),
            Some(("b".into(), Some(131072), None))
        );
        assert_eq!(
            lmstudio_entry(&lm, "local").map(|e| e.0),
            Some("a".into()),
            "the only loaded language model stands for any name"
        );

        let info = json!({"data": [
            {"model_name": "m", "model_info": {"max_input_tokens": 8000}},
            {"model_name": "m", "model_info": {"max_input_tokens": 6000}},
            {"model_name": "n", "model_info": {"max_input_tokens": 1}}
        ]});
        assert_eq!(
            litellm_max_input(&info, "m"),
            Some(6000),
            "the smallest deployment"
        );
        assert_eq!(litellm_max_input(&info, "x"), None);

        assert_eq!(props_total_slots(&json!({"total_slots": 4})), Some(4));
        assert_eq!(props_total_slots(&json!({"total_slots": 0})), None);
        assert_eq!(slots_count(&json!([{"id": 0}, {"id": 1}])), Some(2));
        assert_eq!(slots_count(&json!([])), None);
    }

    #[test]
    fn the_smaller_of_trained_and_loaded_wins_and_both_are_named() {
        let w = smaller(Some((4096, "trained".into())), (8192, "loaded".into()));
        assert_eq!(w.tokens, 4096);
        assert!(
            w.detail.contains("trained") && w.detail.contains("loaded"),
            "{w}"
        );
        let w = smaller(Some((32768, "trained".into())), (2048, "loaded".into()));
        assert_eq!(w.tokens, 2048);
        assert_eq!(smaller(None, (2048, "loaded".into())).tokens, 2048);
    }

    #[test]
    fn a_far_smaller_prompt_count_is_a_dropped_prompt() {
        assert!(dropped_prompt(10_000, 2_000).is_some());
        let e = dropped_prompt(10_000, 2_000).unwrap().to_string();
        assert!(
            e.contains(
                "the server dropped part of the prompt (sent about 10000 tokens, it read 2000)"
            ),
            "{e}"
        );
        assert!(
            dropped_prompt(10_000, 7_000).is_none(),
            "a tokenizer denser than the estimate"
        );
        assert!(dropped_prompt(10_000, 0).is_none(), "no usage reported");
        assert!(dropped_prompt(900, 10).is_none(), "too small to judge");
    }
}
