//! The provider key and every spelling of it a server could echo back: found in any text that came from a server,
//! and redacted from any text we show.
//!
//! A model server is not trusted (SECURITY.md): it may echo the `Authorization` header in its answer, in the model
//! name, in an error body, encoded or not. [`Secret`] knows the key's forms: the key itself, as it appears inside a
//! JSON string (`/` escaped as `\/`), percent-encoded (upper- and lower-case hex), and base64 (standard and URL-safe
//! alphabets, at each of the three byte alignments it can have inside a longer encoded text, so that
//! `base64("Bearer " + key)` is found too). Other transformations (hex, reversed, split across two fields) are not
//! recognised; the answer text and the model name are checked as whole strings after a stream is assembled, so a
//! key split across stream chunks is found.
//!
//! This module is pure: the caller reads the key from the environment and hands it in.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// The text that stands in for a redacted key.
pub const REDACTED: &str = "[redacted]";

/// Keys shorter than this are not searched for in encoded forms (a short string matches ordinary text too often);
/// their plain form is still redacted.
const MIN_ENCODED_LEN: usize = 8;

/// What RFC 3986 encoders leave as it is: letters, digits and `-`, `_`, `.`, `~`.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A credential and the spellings of it to look for.
#[derive(Clone, Default)]
pub struct Secret {
    /// Every form, longest first (so redaction replaces the longest match).
    forms: Vec<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} forms)", self.forms.len())
    }
}

impl Secret {
    /// No secret: finds nothing, redacts nothing.
    pub fn none() -> Secret {
        Secret::default()
    }

    /// The forms of `key`; a key shorter than 4 bytes is treated as none (it would match everywhere).
    pub fn new(key: &str) -> Secret {
        let key = key.trim();
        if key.len() < 4 {
            return Secret::none();
        }
        let mut forms = vec![key.to_string()];
        let json = key.replace('\\', "\\\\").replace('"', "\\\"");
        forms.push(json.replace('/', "\\/"));
        forms.push(json);
        if key.len() >= MIN_ENCODED_LEN {
            let upper: String =
                percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC)
                    .to_string();
            // RFC 3986 encoders (encodeURIComponent...) keep the unreserved `-`, `_`, `.` and `~`.
            let rfc: String = percent_encoding::utf8_percent_encode(key, UNRESERVED).to_string();
            forms.push(lower_hex_escapes(&rfc));
            forms.push(rfc);
            forms.push(lower_hex_escapes(&upper));
            forms.push(upper);
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                for shift in 0..3 {
                    forms.push(base64_core(engine, key.as_bytes(), shift));
                }
            }
        }
        forms.retain(|f| f.len() >= 4);
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        Secret { forms }
    }

    /// Whether any form of the key occurs in `text`.
    pub fn found_in(&self, text: &str) -> bool {
        self.forms.iter().any(|f| text.contains(f.as_str()))
    }

    /// `text` with every form of the key replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for f in &self.forms {
            if out.contains(f.as_str()) {
                out = out.replace(f.as_str(), REDACTED);
            }
        }
        out
    }

    /// `text` without a start (4 bytes or more) of one of the key's forms at its very end (a key cut in two where
    /// text was left out).
    pub fn trim_partial_end<'t>(&self, text: &'t str) -> &'t str {
        let mut cut = text.len();
        for f in &self.forms {
            for k in (4..f.len()).rev() {
                if f.is_char_boundary(k) && text.ends_with(&f[..k]) {
                    cut = cut.min(text.len() - k);
                    break;
                }
            }
        }
        &text[..cut]
    }

    /// `text` without an end (4 bytes or more) of one of the key's forms at its very start.
    pub fn trim_partial_start<'t>(&self, text: &'t str) -> &'t str {
        let mut from = 0;
        for f in &self.forms {
            for k in (4..f.len()).rev() {
                if f.is_char_boundary(f.len() - k) && text.starts_with(&f[f.len() - k..]) {
                    from = from.max(k);
                    break;
                }
            }
        }
        &text[from..]
    }

    /// Whether there is a key to look for.
    pub fn is_some(&self) -> bool {
        !self.forms.is_empty()
    }
}

/// `%2F` -> `%2f`: some encoders write lower-case hex.
fn lower_hex_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut after_percent = 0;
    for c in s.chars() {
        if c == '%' {
            after_percent = 2;
            out.push(c);
        } else if after_percent > 0 {
            after_percent -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The characters of base64 that stand for `key` alone when it starts `shift` bytes after a 3-byte boundary of a
/// longer encoded text: the characters touched by the bytes before or after it are dropped.
fn base64_core(engine: &impl Engine, key: &[u8], shift: usize) -> String {
    let mut buf = vec![0u8; shift];
    buf.extend_from_slice(key);
    let encoded = engine.encode(&buf);
    // Characters whose 6 bits include a padding byte before the key.
    let skip = (shift * 8).div_ceil(6);
    // Characters after the key's last whole 6-bit group may mix with what follows it.
    let keep = ((shift + key.len()) * 8) / 6;
    encoded.get(skip..keep).unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-or-v1/abc+DEF=123456789";

    #[test]
    fn finds_the_key_plain_json_escaped_percent_encoded_and_in_base64_at_any_alignment() {
        let s = Secret::new(KEY);
        assert!(s.found_in(&format!("Authorization: Bearer {KEY}")));
        assert!(s.found_in(&serde_json::to_string(&format!("x{KEY}")).unwrap()));
        assert!(s.found_in(&KEY.replace('/', "\\/")));
        let pct = percent_encoding::utf8_percent_encode(KEY, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        assert!(s.found_in(&pct));
        assert!(s.found_in(&lower_hex_escapes(&pct)));
        assert!(
            s.found_in("sk-or-v1%2Fabc%2BDEF%3D123456789"),
            "RFC 3986 keeps `-`"
        );
        for prefix in ["", "B", "Be", "Bearer ", "Authorization: Bearer "] {
            let text = format!("{prefix}{KEY} and more");
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let enc = engine.encode(text.as_bytes());
                assert!(s.found_in(&enc), "{prefix:?}: {enc}");
            }
        }
        assert!(!s.found_in("sk-or-v1/abc+DEF=12345678"));
        assert!(!s.found_in("an ordinary answer"));
    }

    #[test]
    fn redaction_leaves_no_form_behind() {
        let s = Secret::new(KEY);
        let text = format!(
            "{KEY} {} {}",
            base64::engine::general_purpose::STANDARD.encode(format!("Bearer {KEY}")),
            percent_encoding::utf8_percent_encode(KEY, percent_encoding::NON_ALPHANUMERIC)
        );
        let r = s.redact(&text);
        assert!(!s.found_in(&r), "{r}");
        assert!(r.starts_with(REDACTED), "{r}");
    }

    #[test]
    fn a_key_cut_in_two_leaves_neither_half_at_the_cut() {
        let s = Secret::new(KEY);
        let (a, b) = KEY.split_at(9);
        assert_eq!(s.trim_partial_end(&format!("output {a}")), "output ");
        assert_eq!(s.trim_partial_start(&format!("{b} more")), " more");
        assert_eq!(s.trim_partial_end("no key here"), "no key here");
        assert_eq!(Secret::none().trim_partial_end("abc"), "abc");
    }

    #[test]
    fn short_or_missing_keys_find_nothing_in_ordinary_text() {
        assert!(!Secret::none().found_in("anything"));
        assert!(!Secret::new("abc").found_in("abc"));
        let s = Secret::new("abcd");
        assert!(s.found_in("xxabcdxx"));
        assert!(
            !s.found_in("YWJjZA"),
            "short keys are not searched for encoded"
        );
    }
}
