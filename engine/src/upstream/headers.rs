//! The headers a request to a server on revision 2026-07-28 carries for intermediaries to route
//! on without reading its body (SEP-2243): `Mcp-Name`, and an `Mcp-Param-{Header}` for each
//! argument the tool's input schema annotates with `x-mcp-header: "{Header}"`. A value that
//! cannot travel as a bare header value goes as `=?base64?{its UTF-8 in Base64}?=`.
//!
//! A client excludes a tool whose annotations break the rules (on a property reached from the
//! root through `properties` alone, a non-empty token, unique whatever its case, on a string,
//! integer or boolean): its server would refuse every call of it.

use std::borrow::Cow;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::schema::JsonText;

const ANNOTATION: &str = "x-mcp-header";
const BASE64_START: &str = "=?base64?";
const BASE64_END: &str = "?=";

/// An argument mirrored in a header: where it is in the arguments, and the header's suffix.
#[derive(Debug, PartialEq)]
pub(super) struct Mirrored<'a> {
    path: Vec<&'a str>,
    header: &'a str,
}

/// The arguments `schema` mirrors in headers, or what is wrong with its annotations.
pub(super) fn mirrored(schema: &Map<String, Value>) -> Result<Vec<Mirrored<'_>>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), true, &mut found)?;
    for (at, one) in found.iter().enumerate() {
        if found[..at].iter().any(|earlier| earlier.header.eq_ignore_ascii_case(one.header)) {
            return Err(format!("`{}`: header `{}` is annotated twice", one.path.join("."), one.header));
        }
    }
    Ok(found)
}

/// Walks `schema`, reached through `properties` alone from the root along `path` when
/// `on_path` (else from anywhere else: an annotation there is misplaced).
fn collect<'a>(
    schema: &'a Map<String, Value>,
    path: &mut Vec<&'a str>,
    on_path: bool,
    found: &mut Vec<Mirrored<'a>>,
) -> Result<(), String> {
    for (keyword, value) in schema {
        match keyword.as_str() {
            ANNOTATION if !on_path || path.is_empty() => {
                return Err(format!(
                    "{ANNOTATION} is allowed only on a property reached from the root through `properties`"
                ));
            }
            ANNOTATION => found.push(annotation(schema, value, path)?),
            "properties" => {
                for (name, property) in value.as_object().into_iter().flatten() {
                    if let Value::Object(property) = property {
                        path.push(name);
                        collect(property, path, on_path, found)?;
                        path.pop();
                    }
                }
            }
            // Instances and property names, not schemas.
            "default" | "const" | "enum" | "examples" | "dependentRequired" => {}
            _ => subschemas(value, found)?,
        }
    }
    Ok(())
}

/// Every schema within `value` (a schema, a map of them, a list of them), where no annotation
/// belongs.
fn subschemas<'a>(value: &'a Value, found: &mut Vec<Mirrored<'a>>) -> Result<(), String> {
    match value {
        Value::Object(map) => collect(map, &mut Vec::new(), false, found),
        Value::Array(items) => items.iter().try_for_each(|item| subschemas(item, found)),
        _ => Ok(()),
    }
}

/// The annotation `header` of the property `schema` at `path`, checked.
fn annotation<'a>(
    schema: &'a Map<String, Value>,
    header: &'a Value,
    path: &[&'a str],
) -> Result<Mirrored<'a>, String> {
    let at = path.join(".");
    let Value::String(header) = header else {
        return Err(format!("`{at}`: {ANNOTATION} must be a string"));
    };
    // A header name is an RFC 9110 token, and `http` checks it as one (empty ones too).
    if HeaderName::from_bytes(header.as_bytes()).is_err() {
        return Err(format!("`{at}`: {ANNOTATION} `{header}` is not an HTTP token"));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(Mirrored { path: path.to_vec(), header }),
        other => Err(format!(
            "`{at}`: {ANNOTATION} needs a string, integer or boolean property, not {}",
            other.unwrap_or("an untyped one")
        )),
    }
}

/// The `Mcp-Param-*` headers of a call of a tool whose input schema is `schema` with
/// `arguments`: one per annotated argument present with a string, number or boolean.
pub(super) fn param_headers(
    schema: &JsonText,
    arguments: Option<&Map<String, Value>>,
) -> Vec<(HeaderName, HeaderValue)> {
    // Most schemas annotate nothing: their text tells without parsing them on every call.
    if !schema.as_str().contains(ANNOTATION) {
        return Vec::new();
    }
    let schema = schema.value();
    let (Some(schema), Some(arguments)) = (schema.as_object(), arguments) else { return Vec::new() };
    let Ok(mirrored) = mirrored(schema) else { return Vec::new() };
    let mut headers = Vec::with_capacity(mirrored.len());
    for Mirrored { path, header } in mirrored {
        let Some((first, rest)) = path.split_first() else { continue };
        let mut value = arguments.get(*first);
        for key in rest {
            value = value.and_then(|value| value.get(*key));
        }
        let text = match value {
            Some(Value::String(text)) => Cow::Borrowed(text.as_str()),
            Some(Value::Number(number)) => Cow::Owned(number.to_string()),
            Some(Value::Bool(flag)) => Cow::Borrowed(if *flag { "true" } else { "false" }),
            _ => continue,
        };
        let name = HeaderName::try_from(format!("mcp-param-{header}"));
        if let (Ok(name), Some(value)) = (name, value_of(&text)) {
            headers.push((name, value));
        }
    }
    headers
}

/// `text` as a header value: as it is where it can be, else wrapped in Base64.
pub(super) fn value_of(text: &str) -> Option<HeaderValue> {
    let looks_encoded = text.starts_with(BASE64_START) && text.ends_with(BASE64_END);
    let bare = text.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !text.starts_with([' ', '\t'])
        && !text.ends_with([' ', '\t'])
        && !looks_encoded;
    if bare {
        return HeaderValue::from_str(text).ok();
    }
    HeaderValue::try_from(format!("{BASE64_START}{}{BASE64_END}", BASE64_STANDARD.encode(text))).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn annotated_properties_are_found_nested_ones_too() {
        let region = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "x-mcp-header": {"type": "string"},
                "options": {
                    "type": "object",
                    "properties": {"limit": {"type": "integer", "x-mcp-header": "Limit"}}
                },
                "tags": {"type": "array", "enum": [{"x-mcp-header": "Instance"}]}
            }
        });
        let region = schema(region);
        let found = mirrored(&region).unwrap();
        assert_eq!(
            found,
            [
                Mirrored { path: vec!["options", "limit"], header: "Limit" },
                Mirrored { path: vec!["region"], header: "Region" },
            ]
        );
    }

    #[test]
    fn misplaced_malformed_repeated_or_untyped_annotations_are_refused() {
        for wrong in [
            json!({"type": "object", "x-mcp-header": "Root"}),
            json!({"properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            json!({"$defs": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
            json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Two words"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"x-mcp-header": "A"}}}),
            json!({"properties": {
                "a": {"type": "string", "x-mcp-header": "Same"},
                "b": {"type": "string", "x-mcp-header": "same"}
            }}),
        ] {
            assert!(mirrored(&schema(wrong.clone())).is_err(), "{wrong}");
        }
    }

    #[test]
    fn arguments_are_mirrored_as_header_values_base64_where_they_must() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "absent": {"type": "string", "x-mcp-header": "Absent"},
            "options": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
        }});
        let arguments = json!({
            "region": "eu-west1", "count": 42, "dry": false, "note": " Zürich",
            "options": {"zone": "=?base64?x?="}
        });
        let headers = param_headers(&JsonText::new(&schema), arguments.as_object());
        let headers: Vec<(&str, &str)> =
            headers.iter().map(|(name, value)| (name.as_str(), value.to_str().unwrap())).collect();
        assert_eq!(
            headers,
            [
                ("mcp-param-count", "42"),
                ("mcp-param-dry", "false"),
                ("mcp-param-note", "=?base64?IFrDvHJpY2g=?="),
                ("mcp-param-zone", "=?base64?PT9iYXNlNjQ/eD89?="),
                ("mcp-param-region", "eu-west1"),
            ]
        );
    }
}
