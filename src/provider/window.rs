//! The context window a request is checked against, and the check that the server read the whole prompt.
//!
//! When the policy sets `[models] context_window`, that figure is used. Otherwise the server is asked, once per
//! process, base URL and model (answers are cached; a server that cannot be reached is asked again after
//! [`RETRY_AFTER`]):
//! - llama.cpp (and the generic `openai` kind, often a llama.cpp server): `GET {root}/props`
//!   (`default_generation_settings.n_ctx`, the window of one slot), then `GET {root}/slots` (`n_ctx` of the first
//!   slot), where `{root}` is the base URL without its `/v1`; then the model list below;
//! - OpenRouter, Hugging Face and other OpenAI-compatible servers: `GET {base_url}/models`, the entry whose `id` is
//!   the model: `context_length`, else `top_provider.context_length` (OpenRouter), else the smallest
//!   `providers[].context_length` (Hugging Face router), else `meta.n_ctx` (llama.cpp), else `max_model_len` (vLLM);
//! - DeepSeek's API reports no window: never asked.
//!
//! Failing all that, the provider kind's default applies. Every result says which figure was used and where it
//! came from. Not here: the estimate of a prompt's size (`service::estimate_tokens`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::config::{Policy, ProviderKind};
use crate::error::Error;

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
        return c.window.clone();
    }
    let (window, lasting) = discover(policy, model);
    let until = (!lasting).then(|| Instant::now() + RETRY_AFTER);
    cache.lock().unwrap_or_else(|p| p.into_inner()).insert(
        key,
        Cached {
            window: window.clone(),
            until,
        },
    );
    window
}

/// Provider kind, base URL, model.
type CacheKey = (String, String, String);

struct Cached {
    window: ContextWindow,
    /// `None`: for the life of the process.
    until: Option<Instant>,
}

/// Ask the server; returns the window and whether the answer lasts (false when the server could not be reached).
fn discover(policy: &Policy, model: &str) -> (ContextWindow, bool) {
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
        return (fallback("DeepSeek's API does not report it".into()), true);
    }
    let key = policy.api_key().map(|(_, k)| k);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(DISCOVERY_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let get = |url: &str| -> std::result::Result<Option<Value>, ()> {
        let mut call = agent.get(url);
        if let Some(k) = &key {
            call = call.header("Authorization", format!("Bearer {k}"));
        }
        let mut resp = call.call().map_err(|_| ())?;
        let status = resp.status().as_u16();
        // A server still loading its model (503), failing (5xx), refusing for want of a key (401, 403) or rate
        // limiting (429) said nothing lasting about its window: asked again after RETRY_AFTER.
        if status >= 500 || matches!(status, 401 | 403 | 429) {
            return Err(());
        }
        if !resp.status().is_success() {
            return Ok(None);
        }
        // An answer that cannot be read or parsed reports nothing (but the server was reached).
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_DISCOVERY_BYTES)
            .read_to_string()
            .unwrap_or_default();
        Ok(serde_json::from_str(&text).ok())
    };
    let base = policy.base_url();
    let base = base.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let mut reached = false;
    let mut asked = Vec::new();
    let server = |tokens: u64, detail: String| ContextWindow {
        tokens,
        source: "server".into(),
        detail,
    };
    if matches!(kind, ProviderKind::Llamacpp | ProviderKind::Openai) {
        let url = format!("{root}/props");
        if let Ok(v) = get(&url) {
            reached = true;
            if let Some(n) = v.as_ref().and_then(props_n_ctx) {
                return (
                    server(n, format!("GET {url} (default_generation_settings.n_ctx)")),
                    true,
                );
            }
        }
        asked.push(url);
        let url = format!("{root}/slots");
        if let Ok(v) = get(&url) {
            reached = true;
            if let Some(n) = v.as_ref().and_then(slots_n_ctx) {
                return (server(n, format!("GET {url} (n_ctx of slot 0)")), true);
            }
        }
        asked.push(url);
    }
    let url = format!("{base}/models");
    if let Ok(v) = get(&url) {
        reached = true;
        if let Some((n, field)) = v.as_ref().and_then(|v| models_context(v, model)) {
            return (server(n, format!("GET {url} ({field} of {model})")), true);
        }
    }
    asked.push(url);
    let why = if reached {
        format!("the server did not report a window at {}", asked.join(", "))
    } else {
        format!(
            "the server could not be reached, or was not ready, at {}",
            asked.join(", ")
        )
    };
    (fallback(why), reached)
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

/// llama.cpp `/slots`: `n_ctx` of the first slot.
fn slots_n_ctx(v: &Value) -> Option<u64> {
    positive(&v.as_array()?.first()?["n_ctx"])
}

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
        let (w, lasting) = discover(
            &policy_at(&answering(503, "{\"error\":\"Loading model\"}")),
            "m",
        );
        assert_eq!((w.source.as_str(), lasting), ("default", false), "{w}");
        assert!(w.detail.contains("not ready"), "{w}");
        let (w, lasting) = discover(&policy_at(&answering(401, "{}")), "m");
        assert!(!lasting, "{w}");
        let (w, lasting) = discover(
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
        let (w, _) = discover(
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
