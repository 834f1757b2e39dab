//! Names: the pure rules about workspace-relative file names, at the ground floor (imports nothing of the crate).
//!
//! - which names are always denied ([`ALWAYS_DENIED`]: `.git`, the policy file) and which look like secrets
//!   ([`SECRET_DENIED`], [`secret_names`]), as globs and as people read them ([`shown_glob`]);
//! - which characters a name may not hold ([`unseen`]: control characters, bidi controls, invisible and
//!   default-ignorable code points, odd spaces) and how a name from outside is shown in a message ([`shown`],
//!   [`escaped`]: such characters by code point, `<U+202E>`);
//! - which components read as `.git` or the policy file without being it ([`lookalike`]: look-alike letters,
//!   trailing dots, `git~1`).
//!
//! The screen ([`crate::screen`]) shows outside text with the same character tables; the workspace
//! ([`crate::workspace`]) compiles the globs and refuses the names.

/// The policy file's name, looked for at the workspace root and always denied at any depth.
pub const POLICY_FILE: &str = "local-llm-worker.toml";

/// Globs that are never read or written, whatever the policy says (matched in any case): `.git` at any depth, and
/// every file named like the policy file at any depth (a nested project's policy decides what the next apply there
/// runs). The last entry is the policy file's name ([`POLICY_FILE`], checked in a unit test).
pub const ALWAYS_DENIED: &[&str] = &["**/.git", "**/.git/**", "**/local-llm-worker.toml"];

/// Secret-looking files: denied unless `[paths] unlock_secrets` names them explicitly (matched in any case). The
/// names secret scanners treat as secrets (gitleaks', trufflehog's and detect-secrets' file rules, GitHub's and
/// gitrob's sensitive-file lists), kept to names that ordinary source files do not have: `secrets.py` and
/// `key.rs` are not here, `secrets.yml` and `tls.key` are. README's "Always denied" paragraph lists them as
/// [`secret_names`] writes them (a test compares the two).
pub const SECRET_DENIED: &[&str] = &[
    // Environment files: .env, .env.local, .env-prod, .env_prod, .envrc; prod.env.
    "**/.env*",
    "**/*.env",
    // Private keys, keystores and certificates bundled with their key.
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.pkcs12",
    "**/*.keystore",
    "**/*.jks",
    "**/*.ppk",
    "**/*.ovpn",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    // Password databases.
    "**/*.kdbx",
    "**/*.kdb",
    "**/*.psafe3",
    // Tools' credential files (`.git-credentials` is `*credentials*`).
    "**/*credentials*",
    "**/.netrc",
    "**/_netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.pgpass",
    "**/.htpasswd",
    "**/.s3cfg",
    "**/.dockercfg",
    "**/.docker/config.json",
    "**/.kube/config",
    "**/*.tfstate",
    "**/*.tfstate.*",
    "**/secrets.{yml,yaml,json,toml,ini,env,txt}",
    "**/.*_history",
    // Folders of credentials.
    "**/.aws/**",
    "**/.ssh/**",
    "**/.gnupg/**",
    "**/.azure/**",
    "**/.config/gcloud/**",
];

/// A built-in glob as people read it: `**/` left off (every built-in name matches at any depth), a folder's `/**`
/// written `/`.
pub fn shown_glob(glob: &str) -> String {
    let g = glob.strip_prefix("**/").unwrap_or(glob);
    match g.strip_suffix("/**") {
        Some(folder) => format!("{folder}/"),
        None => g.to_string(),
    }
}

/// The secret-looking names ([`SECRET_DENIED`]) as README and the `init-project` template list them.
pub fn secret_names() -> Vec<String> {
    SECRET_DENIED.iter().map(|g| shown_glob(g)).collect()
}

/// A path as a refusal about its characters shows it: every non-ASCII or control character as `<U+XXXX>`.
pub fn escaped(rel: &str) -> String {
    rel.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_control() {
                c.to_string()
            } else {
                format!("<{}>", code_point(c))
            }
        })
        .collect()
}

/// A path that came from outside (a model's answer) as a message may show it: every character a path may not hold
/// (controls, bidi controls, invisible characters, odd spaces) as `<U+XXXX>`, the rest as it is (`café.py` stays).
pub fn shown(path: &str) -> String {
    path.chars()
        .map(|c| match unseen(c) {
            Some(_) => format!("<{}>", code_point(c)),
            None => c.to_string(),
        })
        .collect()
}

/// The names a component must not merely look like: `.git` and the policy file's.
const LOOKALIKE_GUARDED: &[&str] = &[".git", POLICY_FILE];

/// Whether `comp` spells `name` when each of its non-ASCII characters stands for one character of `name` or for
/// none (a look-alike letter, a fullwidth form, a letter some filesystem folds to ASCII, an added combining mark),
/// and each ASCII character is the one at its place in any case.
fn reads_as(comp: &str, name: &str) -> bool {
    let name = name.as_bytes();
    // at[j]: whether the characters of `comp` read so far can spell the first j bytes of `name`.
    let mut at = vec![false; name.len() + 1];
    at[0] = true;
    for c in comp.chars() {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            if !at[j] {
                continue;
            }
            if c.is_ascii() {
                if j < name.len() && name[j].eq_ignore_ascii_case(&(c as u8)) {
                    next[j + 1] = true;
                }
            } else {
                next[j] = true;
                if j < name.len() {
                    next[j + 1] = true;
                }
            }
        }
        at = next;
    }
    at[name.len()]
}

/// Why a component would be read as `.git` or the policy file without being it: the refusal's words, or `None`.
pub fn lookalike(comp: &str) -> Option<String> {
    let trimmed = comp.trim_end_matches('.');
    for name in LOOKALIKE_GUARDED {
        if let Some(c) = comp.chars().find(|c| !c.is_ascii())
            && reads_as(trimmed, name)
        {
            return Some(format!(
                "has a component {:?} that reads as {name:?}: {} stands where a letter of it is (some filesystems \
                 even fold it to that letter), so it is refused like {name} itself; rename it with ASCII letters",
                escaped(comp),
                code_point(c)
            ));
        }
        if trimmed.len() < comp.len() && trimmed.eq_ignore_ascii_case(name) {
            return Some(format!(
                "has a component {comp:?} that is {name:?} with trailing dots, which Windows and vfat drop (it is \
                 {name} there), so it is refused like {name} itself"
            ));
        }
    }
    if comp.eq_ignore_ascii_case("git~1") {
        return Some(
            "has a component \"git~1\", the short (8.3) name of .git on Windows and vfat, so it is refused like \
             .git itself"
                .into(),
        );
    }
    None
}

/// Code points a path may never hold (besides control characters and spaces), and that text shows by code point:
/// every format character (Unicode general category Cf; a unit test of `names` checks the list against the Unicode
/// tables) and every other default-ignorable code point, which renders as nothing; and U+2800, which renders as a
/// blank.
const UNSEEN: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether `c` is a bidirectional control, which reorders how the characters after it are shown.
pub fn is_bidi(c: char) -> bool {
    matches!(c as u32, 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069)
}

/// Whether `c` renders as nothing or as a blank (a format or other default-ignorable code point, U+2800).
pub fn is_invisible(c: char) -> bool {
    let cp = c as u32;
    UNSEEN.iter().any(|&(lo, hi)| (lo..=hi).contains(&cp))
}

/// What an unseen character is, for a refusal about a name; `None` for a character a path may hold. Besides what
/// [`text`] shows by code point, a name may not hold a newline, a tab or a space other than the ASCII one.
pub fn unseen(c: char) -> Option<&'static str> {
    if c.is_control() {
        Some("a control character")
    } else if is_bidi(c) {
        Some("a bidirectional control, which reorders how the characters after it are shown")
    } else if is_invisible(c) {
        Some("an invisible character (zero-width, format or default-ignorable)")
    } else if !c.is_ascii() && c.is_whitespace() {
        Some("a space other than the ASCII one")
    } else {
        None
    }
}

/// `c` as a code point: `U+202E`.
pub fn code_point(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_character_is_unseen() {
        use unicode_general_category::{GeneralCategory, get_general_category};
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            if get_general_category(c) == GeneralCategory::Format {
                assert!(
                    unseen(c).is_some(),
                    "{} is a format character",
                    code_point(c)
                );
            }
        }
    }
}
