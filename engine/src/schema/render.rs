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
    /// The tool's `_meta` for MCP clients (its app).
    pub meta: Option<&'a Value>,
    pub strict: bool,
}

/// The tool in `provider`'s format. Gemini gets `parameters` (its OpenAPI schema subset)
/// whenever the schema can be said in it, else `parametersJsonSchema` (full JSON Schema, which
/// Gemini documents for exactly this) with the portable schema.
pub fn render(tool: &ToolView<'_>, provider: Provider) -> Result<Value, NormalizeError> {
    let (name, description) = (tool.name, tool.description);
    let parameters = || normalize(tool.input_schema, provider, tool.strict);
    Ok(match provider {
        Provider::Mcp => mcp_tool(tool, parameters()?, tool.output_schema.map(without_metadata)),
        Provider::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters()?, "strict": tool.strict}
        }),
        Provider::Anthropic => {
            json!({"name": name, "description": description, "input_schema": parameters()?})
        }
        Provider::Gemini => match parameters() {
            Ok(parameters) => json!({"name": name, "description": description, "parameters": parameters}),
            Err(NormalizeError::Inexpressible(_)) => {
                let schema = normalize(tool.input_schema, Provider::Mcp, false)?;
                json!({"name": name, "description": description, "parametersJsonSchema": schema})
            }
            Err(err) => return Err(err),
        },
    })
}

/// The tool as MCP clients list it: normalised when they get `portable` schemas
/// ([`render`] for MCP), else its schemas as published ([`published_mcp`]).
pub fn mcp(tool: &ToolView<'_>, portable: bool) -> Result<Value, NormalizeError> {
    if portable { render(tool, Provider::Mcp) } else { Ok(published_mcp(tool)) }
}

/// The tool as MCP lists it with its schemas as published (the input schema without presets):
/// full JSON Schema 2020-12, which MCP clients are owed (SEP-2106) where they do not ask for
/// the portable rendering of [`Provider::Mcp`]. Only `x-mcp-header` annotations go: they are
/// between Toolgate and the tool's server, whose headers Toolgate's own client sends.
pub fn published_mcp(tool: &ToolView<'_>) -> Value {
    let mut input = tool.input_schema.clone();
    without_header_annotations(&mut input);
    mcp_tool(tool, input, tool.output_schema.cloned())
}

fn without_header_annotations(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("x-mcp-header");
            map.values_mut().for_each(without_header_annotations);
        }
        Value::Array(items) => items.iter_mut().for_each(without_header_annotations),
        _ => {}
    }
}

fn mcp_tool(tool: &ToolView<'_>, input_schema: Value, output_schema: Option<Value>) -> Value {
    let mut rendered =
        json!({"name": tool.name, "description": tool.description, "inputSchema": input_schema});
    if let Some(output) = output_schema {
        rendered["outputSchema"] = output;
    }
    if tool.annotations.as_object().is_some_and(|a| !a.is_empty()) {
        rendered["annotations"] = tool.annotations.clone();
    }
    if let Some(meta) = tool.meta {
        rendered["_meta"] = meta.clone();
    }
    rendered
}

/// The input schema inside a rendering of `provider`.
pub fn input_schema(rendering: &Value, provider: Provider) -> &Value {
    match provider {
        Provider::Mcp => &rendering["inputSchema"],
        Provider::OpenAi => &rendering["function"]["parameters"],
        Provider::Anthropic => &rendering["input_schema"],
        Provider::Gemini => rendering.get("parameters").unwrap_or(&rendering["parametersJsonSchema"]),
    }
}

/// An output schema as served: like input schemas, without the schema's own metadata
/// (`$schema`, `$id`, `$comment`), which says nothing to a client.
fn without_metadata(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        for key in ["$schema", "$id", "$comment"] {
            map.remove(key);
        }
    }
    schema
}
