//! Arguments are checked against the schema the LLM was given, before anything runs; a
//! violation is a tool error the LLM can act on ("/limit: expected integer, got string").

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// A compiled schema: a tool's input schema, or its output schema for its structured results.
/// Compiled once per tool per snapshot, on first use.
pub struct ArgumentValidator(Result<Validator, String>);

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_ok() { "ArgumentValidator" } else { "ArgumentValidator(invalid schema)" })
    }
}

impl ArgumentValidator {
    pub fn new(schema: &Value) -> Self {
        ArgumentValidator(jsonschema::validator_for(schema).map_err(|err| err.to_string()))
    }

    /// `Ok` when `arguments` fit; else every violation, one per line.
    pub fn check(&self, arguments: &Value) -> Result<(), String> {
        self.violations(arguments, |_| true).map_err(|problems| format!("invalid arguments: {problems}"))
    }

    /// Like [`check`](Self::check) for some of the arguments (fixed in advance, the rest
    /// come with each call): a missing required argument is not a violation.
    pub fn check_some(&self, arguments: &Value) -> Result<(), String> {
        self.violations(arguments, |e| {
            !matches!(e.kind(), ValidationErrorKind::Required { .. })
                || !e.instance_path().to_string().is_empty()
        })
    }

    /// `Ok` when a tool's structured result fits this (its output) schema; else every
    /// violation. A schema that does not compile judges nothing.
    pub fn check_output(&self, structured: &Value) -> Result<(), String> {
        if self.0.is_err() {
            return Ok(());
        }
        self.violations(structured, |_| true)
    }

    fn violations(
        &self,
        arguments: &Value,
        counts: impl Fn(&ValidationError<'_>) -> bool,
    ) -> Result<(), String> {
        let validator = self
            .0
            .as_ref()
            .map_err(|err| format!("the tool's input schema is invalid, so it cannot be called: {err}"))?;
        let problems: Vec<String> =
            validator.iter_errors(arguments).filter(|e| counts(e)).take(10).map(|e| describe(&e)).collect();
        if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn describe(err: &ValidationError<'_>) -> String {
    let path = err.instance_path().to_string();
    let path = if path.is_empty() { "/".to_string() } else { path };
    match err.kind() {
        ValidationErrorKind::Type { kind: TypeKind::Single(expected) } => {
            format!("{path}: expected {expected}, got {}", json_type(err.instance()))
        }
        _ => format!("{path}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ArgumentValidator {
        ArgumentValidator::new(&json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"]
        }))
    }

    #[test]
    fn wrong_type_names_the_field_and_both_types() {
        let err = validator().check(&json!({"query": "x", "limit": "ten"})).unwrap_err();
        assert_eq!(err, "invalid arguments: /limit: expected integer, got string");
    }

    #[test]
    fn missing_required_field_is_named() {
        let err = validator().check(&json!({"limit": 3})).unwrap_err();
        assert!(err.contains("/: \"query\" is a required property"), "{err}");
    }

    #[test]
    fn some_arguments_need_not_include_the_required_ones() {
        assert!(validator().check_some(&json!({"limit": 3})).is_ok());
        assert_eq!(
            validator().check_some(&json!({"limit": "ten"})).unwrap_err(),
            "/limit: expected integer, got string"
        );
    }

    #[test]
    fn valid_arguments_pass() {
        assert!(validator().check(&json!({"query": "x", "limit": 3})).is_ok());
    }

    /// A schema may point anywhere; Toolgate reads nothing a tool's server names. The tool is
    /// refused with the reason instead.
    #[test]
    fn a_remote_reference_is_never_fetched() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let remote = format!("http://{}/schema.json", listener.local_addr().unwrap());
        let schema = json!({"type": "object", "properties": {"q": {"$ref": remote}}});
        let err = ArgumentValidator::new(&schema).check(&json!({"q": "x"})).unwrap_err();
        assert!(err.contains("the tool's input schema is invalid, so it cannot be called"), "{err}");
        let asked = listener.accept();
        assert!(asked.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), "{asked:?}");
    }
}
