//! How tightly a pinned candidate's answer is bounded: a pinned answer edits one known line, so its `new` text may
//! be at most a little longer than twice that line, and its answer budget (`max_tokens`) is what such an answer
//! can take, not `[limits] max_output_tokens`. A model that rambles inside the string is stopped by the schema's
//! grammar after a few dozen characters instead of a thousand.
//!
//! A pinned answer is also written as a prefill ([`crate::prompt::pinned_prefill`]): its frame, path and line are given, so a server that
//! continues an assistant message (llama.cpp) generates only `new` and the closing brackets, not the forty to a
//! hundred tokens of the frame, the path and the line again (BENCHMARKS.md section 15).
//!
//! Not here: which lines are pinned (`locate_rank::rank`) or the schema's shape (`prompt::pinned_schema`); a
//! schema of another shape is left as it is, with the policy's answer budget and no prefill.

use serde_json::Value;

use crate::provider::Prefill;

/// What a pinned candidate's request carries: its schema bounded, its answer budget, its prefill, and the prompt
/// it is shown (none: the proposal's own).
#[derive(Debug, Clone)]
pub(super) struct Pin {
    pub(super) schema: Value,
    pub(super) max_tokens: u32,
    pub(super) prefill: Option<Prefill>,
    pub(super) messages: Option<Vec<crate::provider::Message>>,
}

/// The request parts of an answer pinned by `schema` (see [`bound`] and [`crate::prompt::pinned_prefill`]).
pub(super) fn pin(schema: Value, max_output_tokens: u32) -> Pin {
    let (schema, max_tokens) = bound(schema, max_output_tokens);
    let prefill = crate::prompt::pinned_prefill(&schema);
    Pin {
        schema,
        max_tokens,
        prefill,
        messages: None,
    }
}

/// The longest `new` of a pinned edit of a line of `old_chars` characters: twice the line and room for one more
/// short line, never under [`MIN_NEW_CHARS`].
fn new_chars(old_chars: usize) -> usize {
    (2 * old_chars + 40).max(MIN_NEW_CHARS)
}

/// The least room a pinned `new` gets.
const MIN_NEW_CHARS: usize = 80;

/// Slack for the whitespace a JSON grammar lets the model put between the tokens of its answer.
const JSON_SLACK_TOKENS: u32 = 64;

/// `schema` with its `new` bounded (see [`new_chars`]), and the answer budget of such an answer: the frame, the
/// path and the line once each, and twice the characters of `new` (a token holds at least one character; escapes
/// take two), at most `max_output_tokens`.
pub(super) fn bound(mut schema: Value, max_output_tokens: u32) -> (Value, u32) {
    let Some(edit) = schema.pointer_mut("/properties/edits/items/properties") else {
        return (schema, max_output_tokens);
    };
    let (Some(path), Some(old), Some(limit)) = (
        edit["path"]["enum"][0].as_str().map(str::len),
        // The line replaced (`old`), or the line a new one goes after (`after`).
        edit["old"]["enum"][0]
            .as_str()
            .or_else(|| edit["after"]["enum"][0].as_str())
            .map(|s| s.chars().count()),
        edit["new"]["maxLength"].as_u64(),
    ) else {
        return (schema, max_output_tokens);
    };
    let new = (new_chars(old) as u64).min(limit);
    edit["new"]["maxLength"] = new.into();
    let frame = r#"{"edits":[{"path":"","old":"","new":""}]}"#.len() as u64;
    let tokens = frame + path as u64 + 2 * old as u64 + 2 * new + u64::from(JSON_SLACK_TOKENS);
    let tokens = u32::try_from(tokens)
        .unwrap_or(u32::MAX)
        .min(max_output_tokens);
    (schema, tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{SchemaBounds, pinned_schema};

    #[test]
    fn a_pinned_one_line_answer_is_bounded_tightly() {
        let line = "    return width * width";
        let (schema, tokens) = bound(
            pinned_schema("geometry.py", line, false, SchemaBounds::LOW),
            4096,
        );
        let new = &schema["properties"]["edits"]["items"]["properties"]["new"];
        assert_eq!(new["maxLength"], 2 * 24 + 40);
        assert!(tokens < 400, "{tokens}");
        // The answer the schema allows at its longest fits the budget: a token holds at least one character.
        let longest = serde_json::json!({"edits": [{"path": "geometry.py", "old": line, "new": "x".repeat(88)}]});
        assert!(longest.to_string().len() as u32 <= tokens);
        // Never above the policy's budget.
        assert_eq!(
            bound(pinned_schema("a.py", line, false, SchemaBounds::LOW), 100).1,
            100
        );
    }

    #[test]
    fn an_insertion_pin_is_bounded_by_the_line_it_goes_after() {
        let line = "    total = 0";
        let (schema, tokens) = bound(
            pinned_schema("shop.py", line, true, SchemaBounds::LOW),
            4096,
        );
        let new = &schema["properties"]["edits"]["items"]["properties"]["new"];
        assert_eq!(new["maxLength"], 80);
        assert!(tokens < 4096, "{tokens}");
    }

    #[test]
    fn a_schema_of_another_shape_keeps_the_policys_budget() {
        let other = serde_json::json!({"type": "object"});
        assert_eq!(bound(other.clone(), 4096), (other.clone(), 4096));
        assert_eq!(pin(other, 4096).prefill, None);
    }

    #[test]
    fn a_pinned_answer_is_prefilled_up_to_its_new_text_and_the_rest_is_held_to_the_bound() {
        let line = "    label = \"a\\b\"";
        for (insert, key) in [(false, "old"), (true, "after")] {
            let p = pin(
                pinned_schema("src/q.py", line, insert, SchemaBounds::LOW),
                4096,
            );
            let prefill = p.prefill.expect("a prefill");
            // The prefill and a rest the grammar allows make the answer the schema allows.
            let answer = format!("{}{}", prefill.text, r#" "    label = \"c\""}]}"#);
            let v: serde_json::Value = serde_json::from_str(&answer).expect(&answer);
            assert_eq!(v["edits"][0]["path"], "src/q.py");
            assert_eq!(v["edits"][0][key], line, "{answer}");
            assert_eq!(v["edits"][0]["new"], "    label = \"c\"");
            // The rest: `new` in full, its opening quote too (the model writes its own first token, so the
            // prefill does not end inside one), at most the bound (80 characters here), then the closing brackets.
            assert!(
                prefill
                    .grammar
                    .starts_with("root ::= \" \"? \"\\\"\" char{0,80} \"\\\"}]}\"\n"),
                "{}",
                prefill.grammar
            );
            assert!(prefill.grammar.contains("char ::= "), "{}", prefill.grammar);
        }
    }
}
