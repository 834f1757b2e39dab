//! The screen: text that came from outside (a model, a check, a file, a file name) as a terminal or a plain-text
//! output may show it. Pure; imports nothing of ours.
//!
//! A terminal acts on control characters instead of showing them: `ESC [1A ESC [2K` moves the cursor up and erases
//! the line above (an added line of a patch vanishes), `ESC [8m` conceals what follows, OSC 52 writes the clipboard,
//! OSC 0 sets the window title, and a bare carriage return sends the cursor back to overwrite the line. Bidirectional
//! controls (U+202E) reorder what follows and zero-width characters hide in between. [`text`] shows every such
//! character by its code point, `<U+001B>`, as paths in refusals are shown (`scope::shown`): C0 controls other than
//! newline and tab, DEL, C1 controls (U+0080 to U+009F), a carriage return not followed by a line feed, bidi
//! controls, and format and other default-ignorable code points. Newlines, tabs, CRLF line ends and every other
//! character (`café`, `日本語`, emoji) stay as they are.
//!
//! What it is not: the CLI's own colours are added after the screen (`render`, `anstream`), and JSON output never
//! comes here (serde escapes control characters, and the bytes stay exact for a program).

use std::borrow::Cow;

/// Code points a path may never hold (besides control characters and spaces), and that text shows by code point:
/// every format character (Unicode general category Cf; a unit test of `scope` checks the list against the Unicode
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

fn is_bidi(c: char) -> bool {
    matches!(c as u32, 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069)
}

fn is_invisible(c: char) -> bool {
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
