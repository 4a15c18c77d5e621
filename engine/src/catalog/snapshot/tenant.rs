//! One tenant's visible tools: looked up by exposed name, with the conflicts that withhold
//! tools, and the meta tool `reset_equipped_tools` by which a session equips its own groups.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::CatalogTool;
use crate::catalog::items::TenantItems;
use crate::catalog::search::ToolIndex;
use crate::model::limits::Limits;
use crate::schema::render::ToolView;
use crate::store::tenants::ToolDiscovery;

/// Two or more visible tools that would share an exposed name for a tenant. None of them is
/// served until an override renames one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub exposed_name: String,
    pub tool_ids: Vec<Uuid>,
}

/// A group, as the meta tool `reset_equipped_tools` offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupInfo {
    pub id: Uuid,
    pub name: String,
    pub description: String,
}

/// The meta tool letting an MCP session choose its active groups.
pub const META_TOOL: &str = "reset_equipped_tools";

/// The tool by which the LLM of a tenant in `search` mode finds its tools.
pub const SEARCH_TOOL: &str = "search_tools";

/// The most tools one search answers.
pub const MAX_FOUND: usize = 50;

/// The longest query a search takes, in bytes: its cost grows with its words.
pub const MAX_QUERY: usize = 512;

/// How many tools a search answers when the caller does not say.
pub const FOUND_BY_DEFAULT: usize = 5;

static SEARCH_SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    serde_json::json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What you want to do, in a few words (e.g. \"create an issue in a repository\")"
            },
            "count": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_FOUND,
                "description": format!("How many tools to find, best first ({FOUND_BY_DEFAULT} if left out)")
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
});

static NO_ANNOTATIONS: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| serde_json::json!({"readOnlyHint": true, "openWorldHint": false}));

/// The search tool as every surface renders it.
pub fn search_tool() -> ToolView<'static> {
    ToolView {
        name: SEARCH_TOOL,
        description: "Find the tools for a task among all the tools available (only a few are listed). \
                      Answers the best matches with their input schemas; the tools found can be called \
                      at once, and are listed from now on.",
        input_schema: &SEARCH_SCHEMA,
        output_schema: None,
        annotations: &NO_ANNOTATIONS,
        meta: None,
        strict: false,
    }
}

/// One tenant's visible tools, sorted by exposed name.
#[derive(Debug, Clone, Serialize)]
pub struct TenantTools {
    pub tenant_id: Uuid,
    pub slug: String,
    pub meta_tool: bool,
    tools: Vec<Arc<CatalogTool>>,
    #[serde(skip)]
    by_name: HashMap<String, usize>,
    pub conflicts: Vec<Conflict>,
    /// With the meta tool on: the tools visible under some choice of groups, from which a
    /// session's own choice ([`TenantTools::equip`]) picks.
    #[serde(skip)]
    pub(super) equippable: Vec<Arc<CatalogTool>>,
    /// With the meta tool on: every group a session may equip.
    #[serde(skip)]
    pub groups: Arc<Vec<GroupInfo>>,
    /// The limits on the tenant's calls.
    #[serde(skip)]
    pub limits: Arc<Limits>,
    /// Which credentials the gateway accepts for the tenant.
    #[serde(skip)]
    pub access: Access,
    /// The prompts, resources and resource templates of its servers.
    pub items: Arc<TenantItems>,
    /// Its MCP clients get portable schemas ([`CatalogTool::mcp_definition`]).
    pub portable_mcp_schemas: bool,
    /// How its tools reach the LLM ([`TenantTools::searching`]).
    pub tool_discovery: ToolDiscovery,
    /// With `search`: the tools listed all the same (pinned by default exposed name).
    #[serde(skip)]
    pub pinned: Arc<HashSet<Uuid>>,
    /// The search index of `tools`, built by the first search.
    #[serde(skip)]
    index: OnceLock<Arc<ToolIndex>>,
}

/// The ways into a tenant's endpoints it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub api_keys: bool,
    pub oauth: bool,
    /// A disabled tenant accepts neither.
    pub enabled: bool,
}

impl Default for Access {
    fn default() -> Self {
        Access { api_keys: true, oauth: true, enabled: true }
    }
}

impl TenantTools {
    pub fn tools(&self) -> &[Arc<CatalogTool>] {
        &self.tools
    }

    /// The tool a call to `exposed_name` runs: the inverse of naming.
    pub fn resolve(&self, exposed_name: &str) -> Option<&Arc<CatalogTool>> {
        self.by_name.get(exposed_name).map(|&i| &self.tools[i])
    }

    /// The `count` tools that match `query` best, best first, with their scores.
    fn search(&self, query: &str, count: usize) -> Vec<(&Arc<CatalogTool>, f32)> {
        let index = self
            .index
            .get_or_init(|| Arc::new(ToolIndex::new(self.tools.iter().map(|tool| tool.searchable()))));
        index.search(query, count).into_iter().map(|hit| (&self.tools[hit.index], hit.score)).collect()
    }

    /// The `count` (at most [`MAX_FOUND`]) tools that match `query` best, best first; a query
    /// longer than [`MAX_QUERY`] is refused with the reason. The first search after each
    /// catalog rebuild builds the index (0.4 s for 5,000 tools): off the async workers.
    pub async fn find(
        self: Arc<Self>,
        query: String,
        count: usize,
    ) -> crate::Result<Vec<(Arc<CatalogTool>, f32)>> {
        if query.len() > MAX_QUERY {
            let refusal = format!("a search query is at most {MAX_QUERY} bytes; this one is {}", query.len());
            return Err(crate::Error::Invalid(refusal));
        }
        let found = tokio::task::spawn_blocking(move || {
            let found = self.search(&query, count.min(MAX_FOUND));
            found.into_iter().map(|(tool, score)| (tool.clone(), score)).collect()
        });
        found.await.map_err(|err| crate::Error::Internal(Box::new(err)))
    }

    /// Whether the tenant's tools are found with the search tool rather than all listed: it
    /// chose `search`, and none of its tools has the search tool's name.
    pub fn searching(&self) -> bool {
        self.tool_discovery == ToolDiscovery::Search && self.resolve(SEARCH_TOOL).is_none()
    }

    /// Whether a tool is listed whether found or not.
    pub fn is_pinned(&self, tool: &CatalogTool) -> bool {
        self.pinned.contains(&tool.tool_id)
    }

    /// The tools a caller that found `found` (by exposed name) gets listed when the tenant is
    /// [searching](Self::searching): the pinned ones and those found.
    pub fn listed_when_searching(&self, found: &HashSet<String>) -> Vec<Arc<CatalogTool>> {
        let listed = |tool: &&Arc<CatalogTool>| self.is_pinned(tool) || found.contains(&tool.exposed_name);
        self.tools.iter().filter(listed).cloned().collect()
    }

    /// Whether MCP sessions of the tenant are offered the meta tool: it is on, and no tool of
    /// the tenant has its name.
    pub fn offers_meta_tool(&self) -> bool {
        self.meta_tool && self.resolve(META_TOOL).is_none()
    }

    /// The meta tool's MCP definition, offering the tenant's groups, when sessions are offered it.
    pub fn meta_tool_definition(&self) -> Option<Value> {
        if !self.offers_meta_tool() {
            return None;
        }
        let listing: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                if g.description.is_empty() {
                    g.name.clone()
                } else {
                    format!("{} ({})", g.name, g.description)
                }
            })
            .collect();
        let names: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        Some(serde_json::json!({
            "name": META_TOOL,
            "description": format!(
                "Choose which tool groups are active in this session; the tool list changes to match. Groups: {}.",
                listing.join("; ")
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "groups": {
                        "type": "array",
                        "items": {"type": "string", "enum": names},
                        "description": "The groups to activate; every other group is deactivated"
                    }
                },
                "required": ["groups"]
            }
        }))
    }

    /// The tenant's tools as one MCP session sees them after choosing its active groups
    /// (`reset_equipped_tools`): `groups` replaces the tenant's group activation, every other
    /// rule stays. Unknown group names are returned as the error.
    pub fn equip(&self, groups: &[String]) -> Result<TenantTools, Vec<String>> {
        let unknown: Vec<String> =
            groups.iter().filter(|name| !self.groups.iter().any(|g| &g.name == *name)).cloned().collect();
        if !unknown.is_empty() {
            return Err(unknown);
        }
        let active: Vec<Uuid> =
            self.groups.iter().filter(|g| groups.contains(&g.name)).map(|g| g.id).collect();
        let visible = self
            .equippable
            .iter()
            .filter(|tool| tool.groups.is_empty() || tool.groups.iter().any(|g| active.contains(g)))
            .cloned()
            .collect();
        let mut equipped = tenant_tools(self.tenant_id, &self.slug, self.meta_tool, visible);
        equipped.groups = self.groups.clone();
        equipped.limits = self.limits.clone();
        equipped.access = self.access;
        equipped.items = self.items.clone();
        equipped.portable_mcp_schemas = self.portable_mcp_schemas;
        equipped.tool_discovery = self.tool_discovery;
        equipped.pinned = self.pinned.clone();
        Ok(equipped)
    }
}

/// Sorts by exposed name and withholds every tool whose name another tool also has.
pub(super) fn tenant_tools(
    tenant_id: Uuid,
    slug: &str,
    meta_tool: bool,
    mut visible: Vec<Arc<CatalogTool>>,
) -> TenantTools {
    visible.sort_by(|a, b| a.exposed_name.cmp(&b.exposed_name).then(a.tool_id.cmp(&b.tool_id)));
    let mut tools = Vec::with_capacity(visible.len());
    let mut conflicts = Vec::new();
    for same_name in visible.chunk_by(|a, b| a.exposed_name == b.exposed_name) {
        match same_name {
            [one] => tools.push(one.clone()),
            many => conflicts.push(Conflict {
                exposed_name: many[0].exposed_name.clone(),
                tool_ids: many.iter().map(|t| t.tool_id).collect(),
            }),
        }
    }
    let by_name = tools.iter().enumerate().map(|(i, t)| (t.exposed_name.clone(), i)).collect();
    TenantTools {
        tenant_id,
        slug: slug.to_string(),
        meta_tool,
        tools,
        by_name,
        conflicts,
        equippable: Vec::new(),
        groups: Arc::default(),
        limits: Arc::default(),
        access: Access::default(),
        items: Arc::default(),
        portable_mcp_schemas: false,
        tool_discovery: ToolDiscovery::List,
        pinned: Arc::default(),
        index: OnceLock::new(),
    }
}
