//! Portability lint: every construct a provider rejects, with a JSON pointer and a one-line
//! reason. One bad schema breaks a whole LLM request, so these are errors, not style.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Provider;
use crate::catalog::naming;

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

/// Lints an input schema for `provider` (OpenAI strict mode when `strict`).
pub fn lint(schema: &Value, provider: Provider, strict: bool) -> Vec<Finding> {
    let mut linter =
        Linter { provider, strict: strict && provider == Provider::OpenAi, findings: Vec::new() };
    match schema {
        Value::Object(root) => {
            let composite = ["anyOf", "oneOf", "allOf"].iter().any(|k| root.contains_key(*k));
            if root.get("type") != Some(&Value::from("object")) || composite {
                linter.push(
                    "",
                    "type",
                    "the top level must be a plain object schema (no top-level anyOf/oneOf/allOf)",
                );
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

    fn node(&mut self, node: &Map<String, Value>, pointer: &str, depth: usize) {
        let provider = self.provider.as_str();
        if depth > Provider::MAX_DEPTH {
            self.push(pointer, "", format!("nested deeper than {} levels", Provider::MAX_DEPTH));
            return;
        }
        for (keyword, value) in node {
            let at = format!("{pointer}/{}", escape(keyword));
            match keyword.as_str() {
                "$ref" => self.push(&at, keyword, "`$ref` is not supported: the definition must be inlined"),
                "$defs" | "definitions" => {
                    self.push(&at, keyword, "definitions are not supported: inline them")
                }
                "oneOf" | "allOf" => {
                    self.push(&at, keyword, format!("`{keyword}` is outside the portable subset: use anyOf"))
                }
                "enum" if value.as_array().is_some_and(|v| v.len() > Provider::MAX_ENUM_VALUES) => {
                    self.push(&at, keyword, format!("more than {} enum values", Provider::MAX_ENUM_VALUES))
                }
                k if !self.provider.accepts(k) => {
                    self.push(&at, keyword, format!("`{keyword}` is rejected by {provider}"))
                }
                _ => {}
            }
        }
        if self.provider == Provider::Gemini && node.contains_key("type") && node.contains_key("anyOf") {
            self.push(pointer, "type", "gemini rejects `type` next to `anyOf`");
        }
        let is_object = node
            .get("type")
            .is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.contains(&"object".into())))
            || node.contains_key("properties");
        if self.strict && is_object {
            self.strict_object(node, pointer);
        }
        self.children(node, pointer, depth);
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
            _ => self.push(pointer, "", "a boolean schema is outside the portable subset"),
        }
    }
}
