//! `[paths]`: the globs of the files the model may see and edit, the denials and unlocks, and whether a patch may
//! read hard-linked files, delete or move. Its patterns are checked by `workspace::glob::check_paths`.

use serde::Deserialize;

/// `[paths]`: what the model may see and edit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    /// Patterns of files the model may see and edit: workspace-relative globs read as in `.gitignore` (a leading
    /// `/` anchors, no other `/` matches at any depth, a trailing `/` or a plain name covers a folder; `*` stays within
    /// a folder, `**` crosses folders; a leading `!` is refused). See [`crate::workspace::glob::pattern_globs`].
    #[serde(default = "default_allowed")]
    pub allowed: Vec<String>,
    /// Patterns that are never read or written, on top of the built-in ones (`.git/`, the policy file, secrets); read
    /// like `allowed`, but matched in any case and also covering everything under a folder any of them matches.
    #[serde(default)]
    pub denied: Vec<String>,
    /// The explicit override of the built-in secret denials: globs of secret-looking files that may be read and
    /// written anyway (for example `"**/.env.example"`). `.git/` and the policy file can never be unlocked.
    #[serde(default)]
    pub unlock_secrets: Vec<String>,
    /// Read (and send) files that have more than one hard link. Off by default: such a file's bytes are also another
    /// file's, which may lie outside the workspace or under a denied name. They are never written either way.
    #[serde(default)]
    pub allow_hard_links: bool,
    /// Let a patch delete a file (a diff to `/dev/null`, V4A's `*** Delete File`). Off by default: a deletion is
    /// journaled and undone like any write, but it is destructive work the primary should choose to allow.
    #[serde(default)]
    pub allow_delete: bool,
    /// Let a patch move a file (git's `rename from`/`rename to`, V4A's `*** Move to`); both paths must be allowed
    /// and selected, the destination new. Off by default.
    #[serde(default)]
    pub allow_move: bool,
}

fn default_allowed() -> Vec<String> {
    vec!["**".into()]
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            allowed: default_allowed(),
            denied: Vec::new(),
            unlock_secrets: Vec::new(),
            allow_hard_links: false,
            allow_delete: false,
            allow_move: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{
        assert_unknown_key_refused, assert_wrong_type_refused, with_section,
    };

    #[test]
    fn a_full_paths_table_is_read() {
        let p = with_section(
            "paths",
            "allowed = [\"src/**\"]\ndenied = [\"src/gen\"]\nunlock_secrets = [\"**/.env.example\"]\n\
             allow_hard_links = true\nallow_delete = true\nallow_move = true",
        )
        .unwrap()
        .paths;
        assert_eq!(p.allowed, ["src/**"]);
        assert_eq!(p.denied, ["src/gen"]);
        assert_eq!(p.unlock_secrets, ["**/.env.example"]);
        assert!(p.allow_hard_links && p.allow_delete && p.allow_move);
    }

    #[test]
    fn an_unknown_paths_key_is_refused_by_name() {
        assert_unknown_key_refused("paths");
    }

    #[test]
    fn a_paths_value_of_the_wrong_type_is_refused() {
        assert_wrong_type_refused("paths", "allowed = \"src/**\"", "sequence");
        assert_wrong_type_refused("paths", "allow_delete = \"yes\"", "boolean");
    }

    #[test]
    fn paths_left_out_allow_everything_not_denied_and_nothing_destructive() {
        let p = with_section("paths", "").unwrap().paths;
        assert_eq!(p.allowed, ["**"]);
        assert!(p.denied.is_empty() && p.unlock_secrets.is_empty());
        assert!(!p.allow_hard_links && !p.allow_delete && !p.allow_move);
        let d = Paths::default();
        assert_eq!((d.allowed, d.denied), (p.allowed, p.denied));
    }
}
