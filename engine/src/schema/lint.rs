//! Portability lint: every construct a provider rejects, with a JSON pointer and a one-line
//! reason. One bad schema breaks a whole LLM request, so these are errors, not style.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{GEMINI_KEYWORDS, OPENAI_STRICT_UNSUPPORTED, Provider, gemini_formats, is_object_schema};
use crate::model::naming;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// JSON pointer into the schema ("" = the root; for the tool's name, "" with keyword
    /// `name`).
    pub pointer: String,
    pub keyword: String,
    pub message: String,
}

/// Lints a tool (its exposed name and input schema) for `provider`.
pub fn lint_tool(name: &str, schema: &Value, provider: Provider, strict: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    if !naming::is_valid(name) {
        findings.push(Finding {
            pointer: String::new(),
            keyword: "name".into(),
            message: format!(
                "tool names must match ^[a-zA-Z0-9_-]{{1,64}}$ ({} characters given)",
                name.len()
            ),
        });
    }
    findings.extend(lint(schema, provider, strict));
    findings
}

/// Lints an input schema for `provider` (OpenAI strict mode when `strict`): what that
/// provider's API refuses, and nothing else (`docs/schemas.md` gives each rule's source).
pub fn lint(schema: &Value, provider: Provider, strict: bool) -> Vec<Finding> {
    let mut linter =
        Linter { provider, strict: strict && provider == Provider::OpenAi, findings: Vec::new() };
    match schema {
        Value::Object(root) => {
            if root.get("type") != Some(&Value::from("object")) {
                linter.push("", "type", "the top level must be an object schema (\"type\": \"object\")");
            }
            let composite = ["anyOf", "oneOf", "allOf"].into_iter().find(|k| root.contains_key(*k));
            if let Some(keyword) = composite.filter(|_| provider != Provider::Mcp) {
                let message =
                    format!("{} refuses `{keyword}` at the top level of a tool's schema", provider.as_str());
                linter.push("", keyword, message);
            }
            linter.node(root, "", 1);
        }
        _ => linter.push("", "type", "the schema must be a JSON object with \"type\": \"object\""),
    }
    linter.findings
}

struct Linter {
    provider: Provider,
    strict: bool,
    findings: Vec<Finding>,
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl Linter {
    fn push(&mut self, pointer: &str, keyword: &str, message: impl Into<String>) {
        self.findings.push(Finding {
            pointer: pointer.into(),
            keyword: keyword.into(),
            message: message.into(),
        });
    }

    /// Whether the provider documents limits on depth, enum size and boolean schemas.
    fn limited(&self) -> bool {
        self.strict || self.provider == Provider::Gemini
    }

    /// Why the provider refuses `keyword` in a schema node, if it does.
    fn refusal(&self, keyword: &str, value: &Value) -> Option<String> {
        let refused = match self.provider {
            Provider::Gemini if !GEMINI_KEYWORDS.contains(&keyword) => Some(match keyword {
                "$ref" => "`$ref` is not supported: the definition must be inlined".to_string(),
                "$defs" | "definitions" => "definitions are not supported: inline them".to_string(),
                "oneOf" | "allOf" => format!("`{keyword}` is not supported by gemini: use anyOf"),
                _ => format!("`{keyword}` is not part of gemini's schema subset"),
            }),
            Provider::OpenAi if self.strict && OPENAI_STRICT_UNSUPPORTED.contains(&keyword) => {
                Some(format!("`{keyword}` is not supported in OpenAI strict mode"))
            }
            _ => None,
        };
        let too_many = keyword == "enum"
            && self.limited()
            && value.as_array().is_some_and(|v| v.len() > Provider::MAX_ENUM_VALUES);
        refused.or_else(|| too_many.then(|| format!("more than {} enum values", Provider::MAX_ENUM_VALUES)))
    }

    fn node(&mut self, node: &Map<String, Value>, pointer: &str, depth: usize) {
        if self.limited() && depth > Provider::MAX_DEPTH {
            self.push(pointer, "", format!("nested deeper than {} levels", Provider::MAX_DEPTH));
            return;
        }
        for (keyword, value) in node {
            if let Some(message) = self.refusal(keyword, value) {
                self.push(&format!("{pointer}/{}", escape(keyword)), keyword, message);
            }
        }
        if self.provider == Provider::Gemini {
            self.gemini_node(node, pointer);
        }
        if self.strict && is_object_schema(node) {
            self.strict_object(node, pointer);
        }
        self.children(node, pointer, depth);
    }

    /// Gemini's rules beyond its keyword list: one type per schema, nothing beside `anyOf`,
    /// objects with properties, string enums, and its own `format`s.
    fn gemini_node(&mut self, node: &Map<String, Value>, pointer: &str) {
        match node.get("type") {
            Some(Value::Array(_)) => self.push(
                pointer,
                "type",
                "gemini takes one type per schema: write optional values as `nullable: true`",
            ),
            Some(Value::String(kind)) => {
                let empty = node.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty());
                if kind == "object" && empty {
                    self.push(pointer, "properties", "gemini refuses an object schema without properties");
                }
                if let Some(format) = node.get("format").and_then(Value::as_str)
                    && !gemini_formats(kind).contains(&format)
                {
                    let allowed = gemini_formats(kind).join(", ");
                    let message = format!("gemini takes only these formats for {kind}: [{allowed}]");
                    self.push(&format!("{pointer}/format"), "format", message);
                }
            }
            _ => {}
        }
        if node.contains_key("anyOf") && node.len() > 1 {
            self.push(pointer, "anyOf", "gemini refuses keywords next to `anyOf`");
        }
        if node
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.iter().any(|v| !v.is_string()))
        {
            self.push(&format!("{pointer}/enum"), "enum", "gemini takes string enum values only");
        }
    }

    fn strict_object(&mut self, node: &Map<String, Value>, pointer: &str) {
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            self.push(
                pointer,
                "additionalProperties",
                "strict mode needs \"additionalProperties\": false on every object",
            );
        }
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in node.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
            if !required.contains(&name.as_str()) {
                let at = format!("{pointer}/properties/{}", escape(name));
                self.push(
                    &at,
                    "required",
                    format!("optional property `{name}` under strict mode: make it required and nullable"),
                );
            }
        }
    }

    fn children(&mut self, node: &Map<String, Value>, pointer: &str, depth: usize) {
        if let Some(Value::Object(properties)) = node.get("properties") {
            for (name, child) in properties {
                self.child(child, &format!("{pointer}/properties/{}", escape(name)), depth);
            }
        }
        for keyword in ["items", "additionalProperties"] {
            if let Some(child @ Value::Object(_)) = node.get(keyword) {
                self.child(child, &format!("{pointer}/{keyword}"), depth);
            }
        }
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(variants)) = node.get(keyword) {
                for (i, child) in variants.iter().enumerate() {
                    self.child(child, &format!("{pointer}/{keyword}/{i}"), depth);
                }
            }
        }
    }

    fn child(&mut self, child: &Value, pointer: &str, depth: usize) {
        match child {
            Value::Object(node) => self.node(node, pointer, depth + 1),
            _ if self.limited() => self.push(pointer, "", "boolean schemas are not supported"),
            _ => {}
        }
    }
}
