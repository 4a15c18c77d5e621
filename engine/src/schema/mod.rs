//! What the LLM receives as a tool's schema.
//!
//! First the schema the LLM sees: the tool's own with the tenant's preset parameters removed
//! (they are injected at execution), and, for a tool left without parameters, the no-parameter
//! schema: one optional `reason` string, never `null` and never an empty `properties` object —
//! some models send an empty string for such tools and some APIs reject replaying that call.
//! Then, per provider ([`Provider`]): the [`lint`] of what it rejects, the [`normalize`]r that
//! makes any schema acceptable, and the [`render`]ing in the provider's tool format.

pub mod lint;
pub mod normalize;
mod provider;
pub mod render;
mod text;
pub mod validate;

pub use provider::{GEMINI_KEYWORDS, OPENAI_STRICT_UNSUPPORTED, Provider, gemini_formats};
pub use text::JsonText;

use serde_json::{Map, Value, json};

/// The schema of a tool that takes no parameters.
pub fn no_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {
                "type": "string",
                "description": "Why the tool is being called (optional; the tool ignores it)."
            }
        }
    })
}

/// Whether a schema node describes an object: its type is (or includes) `object`, or it has
/// properties.
pub(crate) fn is_object_schema(node: &Map<String, Value>) -> bool {
    node.get("type")
        .is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.iter().any(|k| k == "object")))
        || node.contains_key("properties")
}

/// Turns whatever a tool declared into a JSON object schema: a non-object (or missing) schema
/// gets `"type": "object"` and properties.
pub fn as_object_schema(raw: &Value) -> Map<String, Value> {
    let mut schema = raw.as_object().cloned().unwrap_or_default();
    schema.entry("type").or_insert_with(|| json!("object"));
    schema
}

/// The input schema an LLM sees: `raw` without the preset parameters `presets`, or the
/// no-parameter schema when nothing is left to fill in.
pub fn llm_input_schema<'a>(raw: &Value, presets: impl IntoIterator<Item = &'a str>) -> Value {
    let mut schema = as_object_schema(raw);
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        let mut removed = Vec::new();
        for preset in presets {
            if properties.remove(preset).is_some() {
                removed.push(preset);
            }
        }
        if !removed.is_empty()
            && let Some(Value::Array(required)) = schema.get_mut("required")
        {
            required.retain(|name| !removed.iter().any(|preset| name == *preset));
        }
    }
    let has_properties = matches!(schema.get("properties"), Some(Value::Object(p)) if !p.is_empty());
    let is_composite = ["anyOf", "oneOf", "allOf"].iter().any(|k| schema.contains_key(*k));
    if has_properties || is_composite {
        if matches!(schema.get("required"), Some(Value::Array(r)) if r.is_empty()) {
            schema.remove("required");
        }
        Value::Object(schema)
    } else {
        no_parameters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_removed_from_properties_and_required() {
        let raw = json!({
            "type": "object",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "apiKey": {"type": "string"}},
            "required": ["to", "apiKey"]
        });
        let seen = llm_input_schema(&raw, ["apiKey"]);
        assert_eq!(
            seen,
            json!({
                "type": "object",
                "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
                "required": ["to"]
            })
        );
    }

    #[test]
    fn no_parameter_tools_get_the_reason_schema() {
        for raw in [json!(null), json!({}), json!({"type": "object", "properties": {}})] {
            assert_eq!(llm_input_schema(&raw, []), no_parameters(), "{raw}");
        }
    }

    #[test]
    fn a_tool_whose_every_parameter_is_preset_gets_the_reason_schema() {
        let raw = json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]});
        assert_eq!(llm_input_schema(&raw, ["id"]), no_parameters());
    }

    #[test]
    fn untouched_schema_passes_through() {
        let raw = json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(llm_input_schema(&raw, ["other"]), raw);
    }
}
