//! The prompt sent to the model for a proposal, and the JSON schema that constrains its answer. Pure.
//!
//! Small models follow a worked example far better than a description, so each answer format comes with one. For the
//! `json` format the schema pins `path` to the selected files and `old` to lines that really exist in that file: the
//! model chooses which line to replace and writes only the replacement.
//!
//! A file narrowed to line ranges ([`Focus`]) is shown as its ranges only, each introduced with the file's path and
//! line numbers, with a few lines of context each side in their own blocks marked as not to be changed; its
//! schema lists only the lines inside its ranges.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use crate::checks;
use crate::patch::PreImage;
use crate::patch::focus::{self, Focus, LineRange};
use crate::patch::reader::AnswerFormat;
use crate::provider::{Message, Prefill};
use crate::task::Task;

/// Above this many distinct candidate lines, `old` is left a free string (the schema would be too large).
const MAX_ENUM_LINES: usize = 2000;

const SYSTEM: &str = "You are a careful code editor. You make exactly the change the task asks for and nothing else. \
You never add explanations, never elide code, and never touch files you were not given.";

const UDIFF_RULES: &str = "Answer with a unified diff only. For each file: a line `--- a/PATH`, a line `+++ b/PATH`, \
then hunks that start with `@@ @@`. In a hunk, copy unchanged lines exactly with a leading space, removed lines with a \
leading `-`, added lines with a leading `+`. Include at least one unchanged line around each change so it can be \
located. To create a file use `--- /dev/null`.

Example.
File greet.py:
```
def greet(name):
    return \"Hello, \" + name
```
Task: Say Hi instead of Hello.
Answer:
--- a/greet.py
+++ b/greet.py
@@ @@
 def greet(name):
-    return \"Hello, \" + name
+    return \"Hi, \" + name
";

const JSON_RULES: &str = "Answer with JSON only: {\"edits\": [{\"path\": FILE, \"old\": LINE, \"new\": TEXT}]}. \
`old` is the line of the file that the task is about, copied exactly; `new` is the text that replaces it (several \
lines separated by \\n; empty to delete the line). Make one edit per line you change.

Example (a different file: only its shape matters).
File shapes.py:
```
SIDES_TRIANGLE = 3
SIDES_SQUARE = 5
SIDES_PENTAGON = 5
```
Task: A square has 4 sides.
Answer: {\"edits\": [{\"path\": \"shapes.py\", \"old\": \"SIDES_SQUARE = 5\", \"new\": \"SIDES_SQUARE = 4\"}]}
";

/// The line each format's worked example adds: an answer that adds it to a file that never had it, for a task that
/// never mentions it, copied the example instead of doing the task.
fn example_line(format: AnswerFormat) -> &'static str {
    match format {
        AnswerFormat::Json => "SIDES_SQUARE = 4",
        _ => "return \"Hi, \" + name",
    }
}

/// When an answer copied the prompt's worked example: the line it copied (added to a file that did not hold it,
/// though neither the task nor its context mentions it).
pub fn copied_example(
    format: AnswerFormat,
    changes: &[crate::patch::FileChange],
    spec: &Task,
) -> Option<&'static str> {
    let line = example_line(format);
    let asked = |t: &str| t.contains(line);
    if asked(&spec.task)
        || spec.context.as_deref().is_some_and(asked)
        || spec.acceptance_criteria.iter().any(|c| asked(c))
        || spec.plan.iter().any(|c| asked(c))
    {
        return None;
    }
    let holds = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .any(|l| l.trim() == line)
    };
    changes
        .iter()
        .any(|c| holds(&c.post) && !c.pre.as_deref().is_some_and(holds))
        .then_some(line)
}

const SEARCH_REPLACE_RULES: &str = "Answer with SEARCH/REPLACE blocks only. For each change: a line with the file \
path, then `<<<<<<< SEARCH`, the exact lines to find (copied from the file, enough to be unique), `=======`, the \
lines that replace them, and `>>>>>>> REPLACE`.

Example.
File greet.py:
```
def greet(name):
    return \"Hello, \" + name
```
Task: Say Hi instead of Hello.
Answer:
greet.py
<<<<<<< SEARCH
    return \"Hello, \" + name
=======
    return \"Hi, \" + name
>>>>>>> REPLACE
";

const WHOLE_FILE_RULES: &str = "Answer with the complete new content of each file you change: a line with the file \
path, then the whole file in a ``` code block. Write every line, also the unchanged ones; never write `...` for \
code you keep.

Example.
File greet.py:
```
def greet(name):
    return \"Hello, \" + name
```
Task: Say Hi instead of Hello.
Answer:
greet.py
```
def greet(name):
    return \"Hi, \" + name
```
";

const APPLY_PATCH_RULES: &str = "Answer with one patch in the apply_patch format only: `*** Begin Patch`, then for \
each file you change `*** Update File: PATH` and its hunks, then `*** End Patch`. A hunk starts with `@@` \
(optionally followed by the line of the function or class it is in, like `@@ def greet(name):`), then its lines: \
a space and a line kept as it is (copied from the file, enough to be unique), `-` and a line removed, `+` and a \
line added. A new file is `*** Add File: PATH` with every line starting with `+`.

Example.
File greet.py:
```
def greet(name):
    return \"Hello, \" + name
```
Task: Say Hi instead of Hello.
Answer:
*** Begin Patch
*** Update File: greet.py
@@ def greet(name):
-    return \"Hello, \" + name
+    return \"Hi, \" + name
*** End Patch
";

/// Build the chat messages for a proposal; the files in `focus` are shown only in their line ranges.
pub fn messages(
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    format: AnswerFormat,
) -> Vec<Message> {
    let mut u = String::new();
    u.push_str(match format {
        AnswerFormat::Udiff => UDIFF_RULES,
        AnswerFormat::Json => JSON_RULES,
        AnswerFormat::SearchReplace => SEARCH_REPLACE_RULES,
        AnswerFormat::WholeFile => WHOLE_FILE_RULES,
        AnswerFormat::ApplyPatch => APPLY_PATCH_RULES,
    });
    u.push_str("\nNow the real task.\n\n");
    push_files(&mut u, files, focus, true);
    push_spec(&mut u, spec);
    u.push_str("Answer:");
    vec![
        Message {
            role: "system",
            content: SYSTEM.to_string(),
        },
        Message {
            role: "user",
            content: u,
        },
    ]
}

/// The most bytes of failing validation output shown to the model in a repair round (its last bytes).
pub const REPAIR_OUTPUT_BYTES: usize = 4000;

/// The last `max` bytes of `text` (cut on a char boundary, see [`checks::tail_start`]), marked when cut.
pub fn tail(text: &str, max: usize) -> String {
    let start = checks::tail_start(text.as_bytes(), max);
    if start == 0 {
        return text.to_string();
    }
    format!("[{start} earlier bytes cut]\n{}", &text[start..])
}

/// The messages of the one repair round: the original request (same files, same answer format), then the previous
/// edit as a unified diff and the failing validation output (its last [`REPAIR_OUTPUT_BYTES`]), asking for one new
/// edit of the same original files.
pub fn repair_messages(original: &[Message], previous_patch: &str, failure: &str) -> Vec<Message> {
    let mut out = original.to_vec();
    let failure = tail(failure, REPAIR_OUTPUT_BYTES);
    let section = format!(
        "A previous edit for this task, shown here as a unified diff of the files above, was applied to a copy of \
         the project and the project's validation then failed.\nPrevious edit:\n{pf}\n{previous_patch}{nl}{pf}\n\
         Validation output (last bytes):\n{ff}\n{failure}{nl2}{ff}\n\
         Write a new edit of the files above (they are shown as they are, without the previous edit) that does the \
         task and makes the validation pass. Use the same answer format as asked above.\nAnswer:",
        pf = fence_for(previous_patch),
        nl = if previous_patch.ends_with('\n') {
            ""
        } else {
            "\n"
        },
        ff = fence_for(&failure),
        nl2 = if failure.ends_with('\n') { "" } else { "\n" },
    );
    if let Some(last) = out.iter_mut().rev().find(|m| m.role == "user") {
        let body = last
            .content
            .strip_suffix("Answer:")
            .unwrap_or(&last.content)
            .to_string();
        last.content = format!("{body}\n{section}");
    }
    out
}

/// The selected files, each in a fence longer than any backtick run it holds (narrowed files: their ranges and
/// context, see [`push_ranges`]). Files that do not exist yet are announced when `announce_new` (a proposal may
/// create them).
fn push_files(
    u: &mut String,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    announce_new: bool,
) {
    for (path, pre) in files {
        match pre {
            Some(p) if focus.contains_key(path) => push_ranges(u, path, &p.text, &focus[path]),
            Some(p) => {
                let fence = fence_for(&p.text);
                u.push_str(&format!("File {path}:\n{fence}\n{}", p.text));
                if !p.text.ends_with('\n') {
                    u.push('\n');
                }
                u.push_str(&format!("{fence}\n\n"));
            }
            None if announce_new => u.push_str(&format!(
                "File {path}: does not exist yet; create it if the task needs it.\n\n"
            )),
            None => {}
        }
    }
}

/// A narrowed file: a heading with its path, ranges and length, then each shown block as fenced pieces, the
/// ranges' lines and the context lines around them apart, each piece headed by its line numbers.
fn push_ranges(u: &mut String, path: &str, text: &str, ranges: &[LineRange]) {
    let lines = focus::lines_of(text);
    u.push_str(&format!(
        "File {path}, lines {} only (of {} lines; the rest of the file is not shown and must not be edited):\n",
        focus::describe(ranges),
        lines.len()
    ));
    let piece = |u: &mut String, from: usize, to: usize, context: bool| {
        if from >= to {
            return;
        }
        let body: String = lines[from..to].concat();
        let fence = fence_for(&body);
        if context {
            u.push_str(&format!(
                "Context, lines {}-{} of {path} (do not change these lines):\n",
                from + 1,
                to
            ));
        } else {
            u.push_str(&format!("Lines {}-{} of {path}:\n", from + 1, to));
        }
        u.push_str(&format!("{fence}\n{body}"));
        if !body.ends_with('\n') {
            u.push('\n');
        }
        u.push_str(&format!("{fence}\n"));
    };
    for block in focus::shown_blocks(ranges, lines.len()) {
        let mut at = block.from;
        for r in &block.ranges {
            piece(u, at, r.start - 1, true);
            piece(u, r.start - 1, r.end, false);
            at = r.end;
        }
        piece(u, at, block.to, true);
    }
    u.push('\n');
}

/// The task, its acceptance criteria, constraints, plan and context.
fn push_spec(u: &mut String, spec: &Task) {
    u.push_str(&format!("Task: {}\n", spec.task.trim()));
    for (title, items, numbered) in [
        ("Acceptance criteria", &spec.acceptance_criteria, false),
        ("Constraints", &spec.constraints, false),
        ("Plan", &spec.plan, true),
    ] {
        if items.is_empty() {
            continue;
        }
        u.push_str(&format!("{title}:\n"));
        for (i, it) in items.iter().enumerate() {
            if numbered {
                u.push_str(&format!("{}. {}\n", i + 1, it.trim()));
            } else {
                u.push_str(&format!("- {}\n", it.trim()));
            }
        }
    }
    if let Some(ctx) = spec.context.as_deref().filter(|c| !c.trim().is_empty()) {
        u.push_str(&format!("Context:\n{}\n", ctx.trim()));
    }
}

/// A code fence longer than any backtick run in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The JSON schema of an answer pinned to one edit of `line` in `path` (a candidate's; see
/// [`crate::locate_rank::rank`]): replacing it, or with `insert` adding `new` after it (`{"path", "after", "new"}`, which
/// the reader turns into the same canonical diff as a replacement that keeps the line).
pub fn pinned_schema(path: &str, line: &str, insert: bool, bounds: SchemaBounds) -> Value {
    let at = if insert { "after" } else { "old" };
    json!({
        "type": "object",
        "properties": {"edits": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "enum": [path]},
                at: {"type": "string", "enum": [line]},
                "new": {"type": "string", "maxLength": bounds.max_text_chars},
            },
            "required": ["path", at, "new"],
            "additionalProperties": false,
        }}},
        "required": ["edits"],
        "additionalProperties": false,
    })
}

/// The answer a pinned `schema` allows, spaced like the prompt's example, up to `"new":` (the model writes the
/// string's opening quote itself, so that the prefill does not end inside a token it would have written), and the
/// grammar of the rest: an optional space, the quote, a JSON string's characters (an escape counts as one, as in
/// the schema's `maxLength`), then the closing `"}]}`. `None` for a schema of another shape.
pub fn pinned_prefill(schema: &Value) -> Option<Prefill> {
    let edit = schema.pointer("/properties/edits/items/properties")?;
    let path = edit["path"]["enum"][0].as_str()?;
    let (at, line) = match edit["old"]["enum"][0].as_str() {
        Some(l) => ("old", l),
        None => ("after", edit["after"]["enum"][0].as_str()?),
    };
    let max = edit["new"]["maxLength"].as_u64()?;
    let text = format!(
        r#"{{"edits": [{{"path": {}, "{at}": {}, "new":"#,
        Value::from(path),
        Value::from(line)
    );
    let grammar = format!(
        r#"root ::= " "? "\"" char{{0,{max}}} "\"}}]}}"
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{{4}})
"#
    );
    Some(Prefill { text, grammar })
}

/// The distinct non-blank lines of each file, sorted, when there are at most [`MAX_ENUM_LINES`] of them in all
/// (counting each file's lines apart); `None` as soon as there are more, without sorting anything.
fn distinct_lines<'a>(
    files: &[(&String, &'a PreImage)],
    focus: &Focus,
) -> Option<Vec<Vec<&'a str>>> {
    let mut total = 0;
    let mut per_file = Vec::with_capacity(files.len());
    for (path, f) in files {
        let mut seen = HashSet::new();
        let ranges = focus.get(*path);
        let lines = f
            .text
            .strip_prefix('\u{feff}')
            .unwrap_or(&f.text)
            .lines()
            .enumerate()
            .filter(|(i, _)| ranges.is_none_or(|r| focus::contains(r, *i)))
            .map(|(_, l)| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.trim().is_empty());
        for line in lines {
            if seen.insert(line) {
                total += 1;
                if total > MAX_ENUM_LINES {
                    return None;
                }
            }
        }
        let mut lines: Vec<&str> = seen.into_iter().collect();
        lines.sort_unstable();
        per_file.push(lines);
    }
    Some(per_file)
}

/// How far the JSON schema lets an answer run: a small model that rambles is stopped by the grammar (the answer's
/// JSON must close) long before the token cap, instead of repeating edits until it is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaBounds {
    /// The most edits in one answer.
    pub max_edits: usize,
    /// The longest `new` (and free-text `old`), in characters.
    pub max_text_chars: usize,
}

impl SchemaBounds {
    /// A low-complexity task is a routine, local change: a few edits of a few lines each.
    pub const LOW: SchemaBounds = SchemaBounds {
        max_edits: 4,
        max_text_chars: 1_000,
    };
    /// A medium task may touch more places, with larger replacements.
    pub const MEDIUM: SchemaBounds = SchemaBounds {
        max_edits: 12,
        max_text_chars: 4_000,
    };
    /// No complexity known: the widest.
    pub const LOOSE: SchemaBounds = SchemaBounds {
        max_edits: 20,
        max_text_chars: 20_000,
    };

    /// The bounds for a task of complexity `c`.
    pub fn for_complexity(c: &crate::task::Complexity) -> SchemaBounds {
        match c {
            crate::task::Complexity::Low => SchemaBounds::LOW,
            crate::task::Complexity::Medium => SchemaBounds::MEDIUM,
            _ => SchemaBounds::LOOSE,
        }
    }
}

/// The JSON schema for the `json` answer format; `None` when no selected file exists (nothing to replace).
pub fn edit_schema(files: &BTreeMap<String, Option<PreImage>>) -> Option<Value> {
    edit_schema_within(files, &Focus::new(), SchemaBounds::LOOSE)
}

/// [`edit_schema`] where `old` of a file in `focus` is pinned to the lines inside its ranges, and the answer is held
/// within `bounds`.
pub fn edit_schema_within(
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
    bounds: SchemaBounds,
) -> Option<Value> {
    let existing: Vec<(&String, &PreImage)> = files
        .iter()
        .filter_map(|(p, f)| f.as_ref().map(|f| (p, f)))
        .collect();
    if existing.is_empty() {
        return None;
    }
    // The enum of existing lines is used only for a few lines in all: count them before sorting any.
    let enum_lines = distinct_lines(&existing, focus);
    let variants: Vec<Value> = existing
        .iter()
        .enumerate()
        .map(|(i, (path, _))| {
            let old = match enum_lines.as_ref().map(|e| &e[i]) {
                Some(lines) if !lines.is_empty() => json!({"type": "string", "enum": lines}),
                _ => json!({"type": "string", "minLength": 1, "maxLength": bounds.max_text_chars}),
            };
            let new = json!({"type": "string", "maxLength": bounds.max_text_chars});
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "enum": [path]}, "old": old, "new": new},
                "required": ["path", "old", "new"],
                "additionalProperties": false,
            })
        })
        .collect();
    // Each line can be replaced once, so a schema with fewer lines than the bound also allows fewer edits.
    let max_items = match &enum_lines {
        Some(e) => e
            .iter()
            .map(Vec::len)
            .sum::<usize>()
            .clamp(1, bounds.max_edits),
        None => bounds.max_edits,
    };
    let item = if variants.len() == 1 {
        variants.into_iter().next().unwrap_or_default()
    } else {
        json!({"anyOf": variants})
    };
    Some(json!({
        "type": "object",
        "properties": {"edits": {"type": "array", "minItems": 1, "maxItems": max_items, "items": item}},
        "required": ["edits"],
        "additionalProperties": false,
    }))
}

/// The schema a delegation with `output_format: "json"` is held to on llama.cpp (whose grammar enforces it): a JSON
/// object of at most 10 keys whose values are strings of at most 200 characters, numbers, booleans, null, or arrays of
/// at most 20 such strings or numbers. Without it a small model wrote prose after its JSON; with deeper nesting and
/// 2,000-character strings it still repeated one sentence until the token cap. With it the answer ends when its
/// object closes, and parses (a repetition can still fill the bounds: 10 keys of 20 items).
pub fn bounded_json_schema() -> Value {
    let text = json!({"type": "string", "maxLength": 200});
    let value = json!({"anyOf": [
        text,
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "maxItems": 20, "items": {"anyOf": [text, {"type": "number"}]}},
    ]});
    json!({"type": "object", "additionalProperties": value, "maxProperties": 10})
}

/// Build the chat messages for a read-only delegation; the files in `focus` are shown only in their line ranges.
pub fn delegate_messages(
    task_kind: &str,
    output_format: &str,
    spec: &Task,
    files: &BTreeMap<String, Option<PreImage>>,
    focus: &Focus,
) -> Vec<Message> {
    let shape = match output_format {
        "markdown" => "Answer in Markdown.",
        "json" => "Answer with JSON only: no prose, no code fence.",
        "patch" => "Answer with a unified diff only (--- a/PATH, +++ b/PATH, @@ hunks).",
        _ => "Answer in plain text.",
    };
    let system = format!(
        "You are a careful assistant doing one bounded task ({}) for an engineer who will verify your work. \
         Do exactly what is asked, follow the acceptance criteria, and say so plainly when something cannot be \
         done from what you were given. {shape}",
        task_kind.replace('_', " ")
    );
    let mut u = String::new();
    push_files(&mut u, files, focus, false);
    push_spec(&mut u, spec);
    vec![
        Message {
            role: "system",
            content: system,
        },
        Message {
            role: "user",
            content: u,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::MODE_REGULAR;

    fn files() -> BTreeMap<String, Option<PreImage>> {
        let mut m = BTreeMap::new();
        m.insert(
            "a.py".to_string(),
            Some(PreImage {
                text: "x = 1\n\ny = ```2```\n".into(),
                mode: MODE_REGULAR,
            }),
        );
        m.insert("new.py".to_string(), None);
        m
    }

    #[test]
    fn prompt_holds_task_criteria_plan_and_files() {
        let crit = vec!["y is 3".to_string()];
        let plan = vec!["edit y".to_string()];
        let spec = Task {
            task: "Set y to 3".into(),
            acceptance_criteria: crit.clone(),
            plan: plan.clone(),
            context: Some("ctx".into()),
            ..Task::default()
        };
        let m = messages(&spec, &files(), &Focus::new(), AnswerFormat::Udiff);
        insta::assert_snapshot!(m[1].content);
    }

    #[test]
    fn the_repair_prompt_shows_the_previous_edit_and_the_bounded_failure() {
        let crit = vec!["y is 3".to_string()];
        let spec = Task {
            task: "Set y to 3".into(),
            acceptance_criteria: crit.clone(),
            ..Task::default()
        };
        let original = messages(&spec, &files(), &Focus::new(), AnswerFormat::Json);
        let failure = format!("{}\nSyntaxError: invalid syntax\n", "x".repeat(10_000));
        let m = repair_messages(
            &original,
            "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = (\n",
            &failure,
        );
        assert_eq!(m.len(), 2);
        let u = &m[1].content;
        assert!(u.starts_with(original[1].content.strip_suffix("Answer:").unwrap()));
        assert!(u.contains("Previous edit:\n```\n--- a/a.py\n"), "{u}");
        assert!(u.contains("SyntaxError: invalid syntax"));
        assert!(u.contains("earlier bytes cut]"));
        assert!(u.len() < original[1].content.len() + REPAIR_OUTPUT_BYTES + 1000);
        assert!(u.ends_with("Answer:"));
        assert_eq!(
            u.matches("Answer:").count(),
            2,
            "the worked example's and the final one"
        );
    }

    fn ranged() -> (BTreeMap<String, Option<PreImage>>, Focus) {
        let text: String = (1..=30).map(|i| format!("v{i} = {i}\n")).collect();
        let mut files = BTreeMap::new();
        files.insert(
            "big.py".to_string(),
            Some(PreImage {
                text,
                mode: MODE_REGULAR,
            }),
        );
        let mut focus = Focus::new();
        focus.insert(
            "big.py".to_string(),
            vec![
                LineRange { start: 2, end: 3 },
                LineRange { start: 6, end: 6 },
                LineRange { start: 20, end: 21 },
            ],
        );
        (files, focus)
    }

    #[test]
    fn a_narrowed_file_shows_its_ranges_and_marked_context_only() {
        let (files, focus) = ranged();
        let crit = vec!["v20 is 0".to_string()];
        let spec = Task {
            task: "Set v20 to 0".into(),
            acceptance_criteria: crit.clone(),
            ..Task::default()
        };
        let m = messages(&spec, &files, &focus, AnswerFormat::Json);
        let u = &m[1].content;
        let shown = u.split("Now the real task.").nth(1).unwrap();
        insta::assert_snapshot!(shown);
        for hidden in ["v10 = 10", "v16 = 16", "v25 = 25", "v30 = 30"] {
            assert!(!shown.contains(hidden), "{hidden} must not be shown");
        }
    }

    #[test]
    fn the_schema_of_a_narrowed_file_lists_only_lines_inside_its_ranges() {
        let (files, focus) = ranged();
        let s = edit_schema_within(&files, &focus, SchemaBounds::LOOSE).unwrap();
        assert_eq!(
            s["properties"]["edits"]["items"]["properties"]["old"]["enum"],
            json!(["v2 = 2", "v20 = 20", "v21 = 21", "v3 = 3", "v6 = 6"])
        );
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(5));
    }

    #[test]
    fn schema_pins_paths_and_existing_lines() {
        let s = edit_schema(&files()).unwrap();
        let item = &s["properties"]["edits"]["items"];
        assert_eq!(item["properties"]["path"]["enum"], json!(["a.py"]));
        assert_eq!(
            item["properties"]["old"]["enum"],
            json!(["x = 1", "y = ```2```"])
        );
    }

    #[test]
    fn schema_lists_lines_only_when_few_distinct_lines_exist_in_all() {
        let schema = |texts: &[String]| {
            let files: BTreeMap<String, Option<PreImage>> = texts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let f = PreImage {
                        text: t.clone(),
                        mode: MODE_REGULAR,
                    };
                    (format!("f{i}.py"), Some(f))
                })
                .collect();
            edit_schema(&files).unwrap()
        };
        let lines = |from: usize, to: usize| {
            (from..to)
                .map(|i| format!("v{i} = {i}\n"))
                .collect::<String>()
        };
        // 5,000 lines but 3 distinct ones (repeats count once, blank lines not at all): listed, sorted.
        let s = schema(&[format!("b\r\n\n{}", "a\nc\n".repeat(2_500))]);
        assert_eq!(
            s["properties"]["edits"]["items"]["properties"]["old"]["enum"],
            json!(["a", "b", "c"])
        );
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(3));
        // Exactly the limit in all over two files (a line in both counts for each): listed.
        let s = schema(&[lines(0, 1_000), lines(999, 1_999)]);
        let items = &s["properties"]["edits"]["items"]["anyOf"];
        assert_eq!(
            items[0]["properties"]["old"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            1_000
        );
        assert_eq!(
            items[1]["properties"]["old"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            1_000
        );
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(20));
        // One more: no file lists its lines.
        let s = schema(&[lines(0, 1_000), lines(999, 2_000)]);
        let items = &s["properties"]["edits"]["items"]["anyOf"];
        for item in items.as_array().unwrap() {
            assert_eq!(
                item["properties"]["old"],
                json!({"type": "string", "minLength": 1, "maxLength": 20_000})
            );
        }
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(20));
        // A file of blank lines only.
        let s = schema(&["\n  \n".to_string()]);
        assert_eq!(
            s["properties"]["edits"]["items"]["properties"]["old"],
            json!({"type": "string", "minLength": 1, "maxLength": 20_000})
        );
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(1));
    }

    #[test]
    fn an_answer_that_copies_the_worked_example_is_caught_unless_the_task_asks_for_it() {
        let change = |pre: &str, post: &str| crate::patch::FileChange {
            path: "a.py".into(),
            pre: Some(pre.as_bytes().to_vec()),
            post: post.as_bytes().to_vec(),
            mode: MODE_REGULAR,
            hunks: vec![],
            op: Default::default(),
        };
        let task = Task {
            task: "Fix the port".into(),
            ..Task::default()
        };
        let leaked = [change("PORT = 1\n", "SIDES_SQUARE = 4\n")];
        assert_eq!(
            copied_example(AnswerFormat::Json, &leaked, &task),
            Some("SIDES_SQUARE = 4")
        );
        // Already in the file, or asked for: no leak.
        let kept = [change(
            "SIDES_SQUARE = 4\nX = 1\n",
            "SIDES_SQUARE = 4\nX = 2\n",
        )];
        assert_eq!(copied_example(AnswerFormat::Json, &kept, &task), None);
        let asked = Task {
            task: "Add the line SIDES_SQUARE = 4".into(),
            ..Task::default()
        };
        assert_eq!(copied_example(AnswerFormat::Json, &leaked, &asked), None);
        let udiff = [change("x\n", "    return \"Hi, \" + name\n")];
        assert!(copied_example(AnswerFormat::Udiff, &udiff, &task).is_some());
        assert_eq!(copied_example(AnswerFormat::Udiff, &leaked, &task), None);
    }

    #[test]
    fn a_pinned_schema_holds_the_answer_to_one_line_replaced_or_one_place_after_it() {
        let s = pinned_schema(
            "geo.py",
            "    return width * width",
            false,
            SchemaBounds::LOW,
        );
        let item = &s["properties"]["edits"]["items"];
        assert_eq!(
            item["properties"]["old"]["enum"],
            json!(["    return width * width"])
        );
        assert_eq!(item["required"], json!(["path", "old", "new"]));
        let s = pinned_schema("geo.py", "    x = 1", true, SchemaBounds::LOW);
        let item = &s["properties"]["edits"]["items"];
        assert_eq!(item["properties"]["after"]["enum"], json!(["    x = 1"]));
        assert!(item["properties"].get("old").is_none());
        assert_eq!(item["required"], json!(["path", "after", "new"]));
        assert_eq!(s["properties"]["edits"]["maxItems"], json!(1));
    }

    #[test]
    fn a_rambling_answer_is_bounded_by_the_schema_by_complexity() {
        let text: String = (0..50).map(|i| format!("v{i} = {i}\n")).collect();
        let files: BTreeMap<String, Option<PreImage>> = [(
            "a.py".to_string(),
            Some(PreImage {
                text,
                mode: MODE_REGULAR,
            }),
        )]
        .into();
        for (c, edits, chars) in [
            (crate::task::Complexity::Low, 4, 1_000),
            (crate::task::Complexity::Medium, 12, 4_000),
        ] {
            let s = edit_schema_within(&files, &Focus::new(), SchemaBounds::for_complexity(&c))
                .unwrap();
            assert_eq!(s["properties"]["edits"]["maxItems"], json!(edits));
            assert_eq!(
                s["properties"]["edits"]["items"]["properties"]["new"]["maxLength"],
                json!(chars)
            );
        }
    }
}
