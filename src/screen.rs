//! The screen: text that came from outside (a model, a check, a file, a file name) as a terminal or a plain-text
//! output may show it. Pure; imports only the character tables of [`crate::names`].
//!
//! A terminal acts on control characters instead of showing them: `ESC [1A ESC [2K` moves the cursor up and erases
//! the line above (an added line of a patch vanishes), `ESC [8m` conceals what follows, OSC 52 writes the clipboard,
//! OSC 0 sets the window title, and a bare carriage return sends the cursor back to overwrite the line. Bidirectional
//! controls (U+202E) reorder what follows and zero-width characters hide in between. [`text`] shows every such
//! character by its code point, `<U+001B>`, as paths in refusals are shown (`names::shown`): C0 controls other than
//! newline and tab, DEL, C1 controls (U+0080 to U+009F), a carriage return not followed by a line feed, bidi
//! controls, and format and other default-ignorable code points. Newlines, tabs, CRLF line ends and every other
//! character (`café`, `日本語`, emoji) stay as they are.
//!
//! What it is not: the CLI's own colours are added after the screen (`render`, `anstream`), and JSON output never
//! comes here (serde escapes control characters, and the bytes stay exact for a program).

use std::borrow::Cow;

pub use crate::names::code_point;
use crate::names::{is_bidi, is_invisible};

/// Whether text shows `c` by its code point (a carriage return aside, which depends on what follows it).
fn hidden(c: char) -> bool {
    match c {
        '\n' | '\t' | '\r' => false,
        c => c.is_control() || is_bidi(c) || is_invisible(c),
    }
}

/// `text` as a terminal or a plain-text output may show it: every control character but newline and tab, a carriage
/// return not followed by a line feed, bidi controls and invisible characters as `<U+XXXX>`; the rest unchanged
/// (borrowed when nothing needed showing).
pub fn text(text: &str) -> Cow<'_, str> {
    if hidden_chars(text).is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let bare_cr = c == '\r' && chars.peek() != Some(&'\n');
        if bare_cr || hidden(c) {
            out.push('<');
            out.push_str(&code_point(c));
            out.push('>');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The distinct characters of `text` that [`text`] shows by code point, in the order they first appear.
pub fn hidden_chars(text: &str) -> Vec<char> {
    let mut found: Vec<char> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let bare_cr = c == '\r' && chars.peek() != Some(&'\n');
        if (bare_cr || hidden(c)) && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_screen_shows_escapes_bare_cr_c1_del_and_invisible_characters_by_code_point() {
        let hostile = "ok\x1b[1A\x1b[2K\x1b[8mhidden\x1b]52;c;ZWNobw==\x07\x1b]0;title\x07\rover\u{7f}\u{9b}2J\u{202e}x\u{200b}y";
        assert_eq!(
            text(hostile),
            "ok<U+001B>[1A<U+001B>[2K<U+001B>[8mhidden<U+001B>]52;c;ZWNobw==<U+0007><U+001B>]0;title<U+0007>\
             <U+000D>over<U+007F><U+009B>2J<U+202E>x<U+200B>y"
        );
        let shown = text(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        assert_eq!(
            hidden_chars(hostile),
            vec![
                '\x1b', '\x07', '\r', '\u{7f}', '\u{9b}', '\u{202e}', '\u{200b}'
            ]
        );
    }

    #[test]
    fn the_screen_keeps_newlines_tabs_crlf_and_ordinary_unicode() {
        let plain = "a\tb\r\nc\ncafé 日本語 \u{00a0}nbsp 🙂\n";
        assert!(matches!(text(plain), Cow::Borrowed(_)));
        assert_eq!(text(plain), plain);
        assert!(hidden_chars(plain).is_empty());
        // A CR at the very end is bare.
        assert_eq!(text("x\r"), "x<U+000D>");
    }
}
