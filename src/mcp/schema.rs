//! The tool schemas as every client reads them: rewrites applied to what schemars derives, once, when the server
//! starts.
//!
//! - [`single_types`]: no `type` arrays. schemars writes `Option<T>` as `"type": ["string", "null"]`, which is
//!   legal JSON Schema but rejected by clients that map schemas onto a one-`type` dialect (the OpenAPI subset of
//!   Gemini function declarations; MCP Inspector `--strict` warns about it): it becomes
//!   `"anyOf": [{"type": "string", ...}, {"type": "null"}]`, the constraints inside the typed branch.
//! - [`closed`]: `additionalProperties: false` on an input schema, since every tool refuses unknown fields.
//! - [`admit_refusal`]: an output schema that admits a refusal `{kind, message, path?}` beside the result, since
//!   a refusal is an `isError` result whose structured content is that object, and the TypeScript SDK checks
//!   structured content against the output schema even on errors.
//!
//! What it is not: the non-standard `format` values are removed by the server itself (`strip_formats`).

use serde_json::{Map, Value};

/// Keywords that describe a schema rather than constrain a value: they stay beside an `anyOf`.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// Replace every `"type": [..]` array, at any depth, by an `anyOf` of one-type branches.
pub fn single_types(schema: &mut Map<String, Value>) {
    for v in schema.values_mut() {
        each_object(v, single_types);
    }
    let Some(Value::Array(types)) = schema.get("type").cloned() else {
        return;
    };
    if let [only] = types.as_slice() {
        schema.insert("type".into(), only.clone());
        return;
    }
    schema.remove("type");
    // The constraints go into each typed branch; what describes the whole stays outside.
    let constraints: Map<String, Value> = schema
        .iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    schema.retain(|k, _| ANNOTATIONS.contains(&k.as_str()));
    let branches: Vec<Value> = types
        .iter()
        .map(|t| {
            let mut b = Map::new();
            b.insert("type".into(), t.clone());
            if t != "null" {
                b.extend(constraints.clone());
                // A typed branch lists no null among its values: the null branch holds it.
                if let Some(Value::Array(values)) = b.get_mut("enum") {
                    values.retain(|v| !v.is_null());
                }
            }
            Value::Object(b)
        })
        .collect();
    schema.insert("anyOf".into(), Value::Array(branches));
}

fn each_object(v: &mut Value, f: fn(&mut Map<String, Value>)) {
    match v {
        Value::Object(m) => f(m),
        Value::Array(a) => a.iter_mut().for_each(|v| each_object(v, f)),
        _ => {}
    }
}

/// Say in an input schema that no other field is taken (the tools refuse unknown fields by name).
pub fn closed(schema: &mut Map<String, Value>) {
    schema.insert("additionalProperties".into(), Value::Bool(false));
}

/// An output schema that admits either the tool's result or a refusal: `{"type": "object", "anyOf": [RESULT,
/// {"$ref": "#/$defs/Refusal"}]}`, the definitions of both kept at the top.
pub fn admit_refusal(schema: &mut Map<String, Value>) {
    let refusal = serde_json::to_value(schemars::schema_for!(crate::error::Refusal));
    let Ok(Value::Object(mut refusal)) = refusal else {
        return;
    };
    let mut defs = match schema.remove("$defs") {
        Some(Value::Object(d)) => d,
        _ => Map::new(),
    };
    if let Some(Value::Object(more)) = refusal.remove("$defs") {
        defs.extend(more);
    }
    refusal.remove("$schema");
    defs.insert("Refusal".into(), Value::Object(refusal));
    let dialect = schema.remove("$schema");
    let result = std::mem::take(schema);
    if let Some(d) = dialect {
        schema.insert("$schema".into(), d);
    }
    schema.insert("type".into(), "object".into());
    schema.insert(
        "anyOf".into(),
        serde_json::json!([result, {"$ref": "#/$defs/Refusal"}]),
    );
    schema.insert("$defs".into(), Value::Object(defs));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn portable_schemas_a_type_array_becomes_any_of_with_its_constraints_inside() {
        let mut s = obj(serde_json::json!({
            "properties": {"n": {"description": "d", "type": ["integer", "null"], "minimum": 0},
                           "s": {"type": ["string"]},
                           "e": {"type": ["string", "null"], "enum": ["a", null]}}
        }));
        single_types(&mut s);
        assert_eq!(
            Value::Object(s),
            serde_json::json!({"properties": {
                "n": {"description": "d", "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
                "s": {"type": "string"},
                "e": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}
            }})
        );
    }

    #[test]
    fn refusals_every_client_shows_the_output_schema_admits_result_or_refusal() {
        let mut s = obj(serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "required": ["applied"], "properties": {"applied": {"type": "boolean"}},
            "$defs": {"X": {"type": "string"}}
        }));
        admit_refusal(&mut s);
        assert_eq!(s["type"], "object");
        assert_eq!(s["anyOf"][0]["required"][0], "applied");
        assert_eq!(s["anyOf"][1]["$ref"], "#/$defs/Refusal");
        assert!(s["$defs"]["X"].is_object() && s["$defs"]["Refusal"].is_object());
        let kinds = serde_json::to_string(&s["$defs"]).unwrap_or_default();
        assert!(
            kinds.contains("invalid_argument") && kinds.contains("cancelled"),
            "{kinds}"
        );
    }
}
