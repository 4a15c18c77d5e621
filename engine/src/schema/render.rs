//! A tool in each provider's format, always from the normalised, lint-clean schema.

use serde_json::{Value, json};

use super::Provider;
use super::normalize::{NormalizeError, normalize};

/// What rendering needs to know of a tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolView<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The schema the LLM sees (presets already removed).
    pub input_schema: &'a Value,
    pub output_schema: Option<&'a Value>,
    pub annotations: &'a Value,
    pub strict: bool,
}

pub fn render(tool: &ToolView<'_>, provider: Provider) -> Result<Value, NormalizeError> {
    let parameters = normalize(tool.input_schema, provider, tool.strict)?;
    Ok(match provider {
        Provider::Mcp => {
            let mut rendered = json!({
                "name": tool.name,
                "description": tool.description,
                "inputSchema": parameters,
            });
            if let Some(output) = tool.output_schema {
                rendered["outputSchema"] = output.clone();
            }
            if tool.annotations.as_object().is_some_and(|a| !a.is_empty()) {
                rendered["annotations"] = tool.annotations.clone();
            }
            rendered
        }
        Provider::OpenAi => json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters,
                "strict": tool.strict,
            }
        }),
        Provider::Anthropic => json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": parameters,
        }),
        Provider::Gemini => json!({
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
        }),
    })
}
