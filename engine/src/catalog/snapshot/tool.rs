//! A tool as one tenant's LLM sees it, and how it is rendered for a provider.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::catalog::search::Searchable;
use crate::model::SourceKind;
use crate::schema::validate::ArgumentValidator;
use crate::schema::{self, JsonText};

/// The timeout of a tool that sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A tool as one tenant's LLM sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogTool {
    pub tool_id: Uuid,
    pub source_id: Uuid,
    pub source_kind: SourceKind,
    pub source_name: String,
    pub upstream_name: String,
    pub exposed_name: String,
    pub description: String,
    /// The schema the LLM sees: presets removed, no-parameter tools normalised.
    pub input_schema: JsonText,
    /// The tool's own schema, as its source declared it.
    pub raw_input_schema: JsonText,
    pub output_schema: Option<JsonText>,
    pub annotations: JsonText,
    /// What hosts read to show the tool's app, its `ui://` URIs under the server's prefix.
    pub meta: Option<Arc<Value>>,
    /// The source's tags and the tool's own.
    pub tags: Vec<String>,
    pub strict: bool,
    pub timeout: Duration,
    /// Fixed arguments injected at execution.
    pub presets: Arc<Map<String, Value>>,
    /// Fixed secret arguments, still encrypted (see `secret::SecretBox`); never serialised.
    #[serde(skip)]
    pub secret_presets: Arc<Map<String, Value>>,
    pub groups: Vec<Uuid>,
    /// `input_schema` compiled, on the first call; shared by the tenants that share the tool.
    #[serde(skip)]
    pub(super) validator: OnceLock<Arc<ArgumentValidator>>,
    /// `output_schema` compiled, on the first structured result.
    #[serde(skip)]
    pub(super) output_validator: OnceLock<Option<Arc<ArgumentValidator>>>,
}

impl CatalogTool {
    pub fn validator(&self) -> &ArgumentValidator {
        self.validator.get_or_init(|| Arc::new(ArgumentValidator::new(&self.input_schema.value())))
    }

    /// What judges the tool's structured results, if it declares an output schema.
    pub fn output_validator(&self) -> Option<&ArgumentValidator> {
        let compile =
            || self.output_schema.as_ref().map(|schema| Arc::new(ArgumentValidator::new(&schema.value())));
        self.output_validator.get_or_init(compile).as_deref()
    }
}

impl CatalogTool {
    /// Whether a client listing this tool and `other` sees the same: name, description,
    /// schemas, annotations, app.
    pub fn listed_alike(&self, other: &CatalogTool) -> bool {
        self.exposed_name == other.exposed_name
            && self.description == other.description
            && self.input_schema == other.input_schema
            && self.output_schema == other.output_schema
            && self.annotations == other.annotations
            && self.meta == other.meta
    }

    /// Whether the tool itself takes a `reason` argument; else a `reason` is the no-parameter
    /// schema's, for the LLM only.
    pub fn takes_reason(&self) -> bool {
        // The text tells most tools apart without parsing it on every call.
        self.raw_input_schema.as_str().contains("\"reason\"")
            && self.raw_input_schema.value().pointer("/properties/reason").is_some()
    }

    /// `render` of the tool, its schemas and annotations parsed for it.
    fn with_view<T>(&self, render: impl FnOnce(&schema::render::ToolView<'_>) -> T) -> T {
        let input_schema = self.input_schema.value();
        let output_schema = self.output_schema.as_ref().map(JsonText::value);
        let annotations = self.annotations.value();
        render(&schema::render::ToolView {
            name: &self.exposed_name,
            description: &self.description,
            input_schema: &input_schema,
            output_schema: output_schema.as_ref(),
            annotations: &annotations,
            meta: self.meta.as_deref(),
            strict: self.strict,
        })
    }

    /// The tool as `provider` receives it: always the normalised, lint-clean rendering.
    pub fn render(&self, provider: schema::Provider) -> Result<Value, schema::normalize::NormalizeError> {
        self.with_view(|view| schema::render::render(view, provider))
    }

    /// The tool as MCP clients list it unless their tenant chose portable schemas (then they
    /// get [`Self::render`] for MCP): its schemas as its server published them, presets removed.
    pub fn published_mcp(&self) -> Value {
        self.with_view(schema::render::published_mcp)
    }

    /// The tool as MCP clients list it, with `portable` schemas or as published.
    pub fn mcp_definition(&self, portable: bool) -> Result<Value, schema::normalize::NormalizeError> {
        self.with_view(|view| schema::render::mcp(view, portable))
    }

    /// What a search reads of the tool.
    pub fn searchable(&self) -> Searchable<'_> {
        Searchable {
            name: &self.exposed_name,
            server: &self.source_name,
            description: &self.description,
            tags: &self.tags,
            input_schema: self.input_schema.value(),
        }
    }

    /// Roughly how many tokens the tool's definition costs an LLM request (its OpenAI
    /// rendering at about four characters a token).
    pub fn approx_tokens(&self) -> usize {
        self.render(schema::Provider::OpenAi).map(|r| r.to_string().len().div_ceil(4)).unwrap_or(0)
    }
}
