//! Config as code: the whole configuration as one document, exported with secrets as
//! `{set: true}` and applied declaratively — the document is the desired state, so servers,
//! groups and tenants it leaves out are removed — in one transaction, or planned only (the
//! diff, nothing written).
//!
//! Tools are named by their default exposed name (`<prefix>_<tool>`), which need not exist yet:
//! a group or an override may name a tool of a server that has not been discovered, and binds
//! to it once discovery finds it. Built-in and external sources are not part of the document.

mod apply;
mod check;
mod export;
mod items;
mod plan;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use apply::apply;
pub use export::export;
pub use plan::{Action, Change};

use crate::model::CallLimits;
use crate::model::Ceiling;
use crate::model::{Name, Tag, TenantSlug};
use crate::model::{is_true, yes};
use crate::sso::SignInConfig;
use crate::store::Error;
use crate::store::item_overrides::ItemRef;
use crate::store::overrides::OverrideInput;
use crate::store::servers::ServerConfig;
use crate::store::tenants::ToolDiscovery;

/// The configuration document. Keys left out take their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    #[serde(default = "yes")]
    pub tools_enabled: bool,
    /// Enabled tags of a tenant that sets none.
    #[serde(default)]
    pub default_tags: Vec<Tag>,
    #[serde(default)]
    pub servers: Vec<ServerConfig>,
    #[serde(default)]
    pub groups: Vec<GroupConfig>,
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// How people sign in. Left out of a document, the stored settings stay as they are (a
    /// document written before sign-in existed changes nothing of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_in: Option<SignInConfig>,
}

/// The two spellings of the configuration document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// The document in `text`, or what is wrong with it (where, and why).
    pub fn parse(self, text: &[u8]) -> std::result::Result<Document, String> {
        match self {
            Format::Json => serde_json::from_slice(text).map_err(|err| err.to_string()),
            Format::Yaml => {
                let text = std::str::from_utf8(text).map_err(|_| "the document is not UTF-8".to_string())?;
                serde_saphyr::from_str(text).map_err(|err| err.to_string())
            }
        }
    }

    pub fn write(self, document: &Document) -> std::result::Result<String, String> {
        match self {
            Format::Json => serde_json::to_string_pretty(document).map_err(|err| err.to_string()),
            Format::Yaml => serde_saphyr::to_string(document).map_err(|err| err.to_string()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    pub name: Name,
    #[serde(default)]
    pub description: String,
    #[serde(default = "yes")]
    pub active_by_default: bool,
    /// Member tools by default exposed name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Member prompts, resources and templates, by server, kind and the server's own key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<ItemRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    pub slug: TenantSlug,
    /// Left out = the slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Left out = the document's `default_tags`; `[]` = every tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tags: Option<Vec<Tag>>,
    /// Overrides of the groups' `active_by_default`.
    #[serde(default)]
    pub groups: BTreeMap<Name, bool>,
    /// Expose the meta tool `reset_equipped_tools`.
    #[serde(default)]
    pub meta_tool: bool,
    /// Per-tool overrides, by default exposed name.
    #[serde(default)]
    pub tools: BTreeMap<String, OverrideInput>,
    /// Choices for single prompts, by server and the server's own prompt name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompts: items::ByServer,
    /// Choices for single resources, by server and URI.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: items::ByServer,
    /// Choices for single resource templates, by server and URI template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_templates: items::ByServer,
    /// The owner's limit on the tags, sources and groups the tenant may use; left out = none.
    #[serde(default, skip_serializing_if = "Ceiling::is_open")]
    pub ceiling: Ceiling,
    /// The limits on all of the tenant's calls; left out = none.
    #[serde(default, skip_serializing_if = "CallLimits::is_none")]
    pub limits: CallLimits,
    /// The limits on the calls of single tools, by default exposed name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_limits: BTreeMap<String, CallLimits>,
    /// The limits on each signed-in person's calls (OAuth); left out = none.
    #[serde(default, skip_serializing_if = "CallLimits::is_none")]
    pub user_limits: CallLimits,
    /// Whether the gateway accepts the tenant's API keys; left out = yes.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub api_keys: bool,
    /// Whether the gateway accepts access tokens people authorized (OAuth); left out = yes.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub oauth: bool,
    /// Whether the tenant is served at all; left out = yes.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// Serve MCP clients portable (normalised) schemas instead of the schemas as published;
    /// left out = as published.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub portable_mcp_schemas: bool,
    /// How the tools reach the LLM: `list` (all listed) or `search` (found with the search
    /// tool); left out = `list`.
    #[serde(default, skip_serializing_if = "ToolDiscovery::is_list")]
    pub tool_discovery: ToolDiscovery,
    /// With `search`: the tools listed all the same, by default exposed name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_tools: Vec<String>,
}

impl TenantConfig {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(self.slug.as_str())
    }
}

/// Prefixes the message of a rule broken at `place` in the document.
fn at(place: impl std::fmt::Display) -> impl FnOnce(Error) -> Error {
    move |err| match err {
        Error::Invalid(msg) => Error::Invalid(format!("{place}: {msg}")),
        Error::NotFound(what) => Error::Invalid(format!("{place}: {what}")),
        Error::Conflict(msg) => Error::Conflict(format!("{place}: {msg}")),
        other => other,
    }
}
