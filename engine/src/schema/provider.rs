//! The LLM providers Toolgate renders tools for, and what each accepts in a schema.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// MCP `tools/list` (served to MCP clients, which hand it to some LLM: kept portable).
    Mcp,
    /// OpenAI function calling (strict mode when the tool is strict).
    OpenAi,
    /// Anthropic tool use (`input_schema`).
    Anthropic,
    /// Gemini function declarations (OpenAPI subset).
    Gemini,
}

impl Provider {
    pub const ALL: [Provider; 4] = [Provider::Mcp, Provider::OpenAi, Provider::Anthropic, Provider::Gemini];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Mcp => "mcp",
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Keywords this provider accepts in a schema node, beyond which the normaliser moves
    /// into the description. The portable subset (string, integer, number, boolean, array,
    /// object, anyOf, enum) plus what each provider documents.
    pub fn accepts(self, keyword: &str) -> bool {
        const PORTABLE: &[&str] =
            &["type", "description", "properties", "required", "items", "enum", "anyOf"];
        PORTABLE.contains(&keyword)
            || match self {
                Provider::Mcp | Provider::Anthropic | Provider::OpenAi => keyword == "additionalProperties",
                Provider::Gemini => keyword == "nullable",
            }
    }

    /// The deepest nesting of schemas a provider takes.
    pub const MAX_DEPTH: usize = 10;
    /// The most enum values a provider takes.
    pub const MAX_ENUM_VALUES: usize = 1000;
}

/// The keywords of Gemini's `Schema` (an OpenAPI 3.0 subset), which function declarations'
/// `parameters` are written in; Gemini refuses any other.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The `format`s Gemini takes, by type.
pub fn gemini_formats(kind: &str) -> &'static [&'static str] {
    match kind {
        "string" => &["enum", "date-time"],
        "number" => &["float", "double"],
        "integer" => &["int32", "int64"],
        _ => &[],
    }
}

/// What OpenAI's strict mode (structured outputs) documents as not supported.
pub const OPENAI_STRICT_UNSUPPORTED: &[&str] = &[
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
];
