//! The rule presets keep: an override's fixed arguments must be parameters of the tool, and
//! plain ones must fit its schema (checked when a tenant's override is set or a configuration
//! document applied).

use serde_json::Value;

use crate::Error;
use crate::schema::validate::ArgumentValidator;
use crate::store::overrides::OverrideInput;

/// Presets must be parameters of the tool, and plain ones must fit the parameter's schema.
pub fn check_presets(schema: &Value, input: &OverrideInput) -> crate::Result<()> {
    let parameters = schema.get("properties").and_then(Value::as_object);
    let names = input.presets.keys().chain(input.secret_presets.keys());
    if let Some(unknown) = names.clone().find(|n| !parameters.is_some_and(|p| p.contains_key(*n))) {
        let known: Vec<&str> = parameters.into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        return Err(Error::Invalid(format!(
            "preset `{unknown}`: the tool has no parameter of that name (its parameters: {known})"
        )));
    }
    ArgumentValidator::new(schema)
        .check_some(&Value::Object(input.presets.clone()))
        .map_err(|problems| Error::Invalid(format!("presets do not fit the tool's schema: {problems}")))
}
