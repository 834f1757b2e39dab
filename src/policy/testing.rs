//! What the sections' TOML tests share: a policy file of a local llama.cpp server with one section written out,
//! and the refusals every section must give (an unknown key by its name, a value of the wrong type).

use std::path::Path;

use crate::policy::{Policy, parse};

/// The policy whose `[section]` holds `body` (for `provider`, `body` is added to `[provider] kind = "llamacpp"`).
pub(super) fn with_section(section: &str, body: &str) -> crate::Result<Policy> {
    let text = match section {
        "provider" => format!("[provider]\nkind = \"llamacpp\"\n{body}\n"),
        _ => format!("[provider]\nkind = \"llamacpp\"\n[{section}]\n{body}\n"),
    };
    parse(&text, Path::new("p.toml"))
}

/// The refusal of [`with_section`], as shown; panics when the policy is accepted.
pub(super) fn refusal(section: &str, body: &str) -> String {
    match with_section(section, body) {
        Ok(_) => panic!("[{section}] {body:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// A key `[section]` does not have is refused, by its name.
pub(super) fn assert_unknown_key_refused(section: &str) {
    let err = refusal(section, "no_such_key = 1");
    assert!(
        err.contains("p.toml is not a valid policy") && err.contains("unknown field `no_such_key`"),
        "[{section}]: {err}"
    );
}

/// `[section] key = value`, a value of the wrong type, is refused, the message showing the line and the type
/// expected (`expected`).
pub(super) fn assert_wrong_type_refused(section: &str, line: &str, expected: &str) {
    let err = refusal(section, line);
    assert!(
        err.contains("invalid type") && err.contains(line) && err.contains(expected),
        "[{section}] {line}: {err}"
    );
}
