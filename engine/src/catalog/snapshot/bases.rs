//! Every tool, prompt, resource and template before any tenant's choices, built once from
//! their rows and shared by every tenant and by the rebuilds that find them unchanged.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use uuid::Uuid;

use super::{CatalogTool, DEFAULT_TIMEOUT};
use crate::catalog::items::CatalogItem;
use crate::model::naming;
use crate::schema::{self, JsonText};
use crate::store::catalog::{ItemRow, Loaded, ToolRow};

pub(super) fn timeout(ms: Option<i32>) -> Option<Duration> {
    ms.and_then(|ms| u64::try_from(ms).ok()).map(Duration::from_millis)
}

/// A tool with its source, before any tenant's choices.
#[derive(Debug)]
pub(super) struct Base {
    pub(super) tool: Arc<CatalogTool>,
    pub(super) owner: Option<Uuid>,
    pub(super) source_enabled: bool,
    pub(super) held: bool,
}

/// Every tool before any tenant's choices, and what they were built from: a rebuild whose
/// tools, sources and group members are unchanged reuses them instead of reading and building
/// every tool again.
#[derive(Debug, Default)]
pub(in crate::catalog) struct Bases {
    epoch: i64,
    sources: Vec<crate::store::sources::Source>,
    members: Vec<(Uuid, Uuid)>,
    pub(super) list: Vec<Base>,
    pub(super) items: Vec<ItemBase>,
}

/// A prompt, resource or template with its server, before any tenant's choices.
#[derive(Debug)]
pub(super) struct ItemBase {
    pub(super) item: Arc<CatalogItem>,
    pub(super) owner: Option<Uuid>,
    pub(super) source_enabled: bool,
    /// The server's.
    pub(super) tags: Vec<String>,
}

impl Bases {
    /// Builds every tool of `tools` and item of `items`, read along with the rest of `loaded`.
    pub(in crate::catalog) fn build(loaded: &Loaded, tools: &[ToolRow], items: &[ItemRow]) -> Self {
        let sources: HashMap<Uuid, _> = loaded.sources.iter().map(|s| (s.id, s)).collect();
        let mut groups_of: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for &(group, tool) in &loaded.members {
            groups_of.entry(tool).or_default().push(group);
        }
        let list = tools
            .iter()
            .filter_map(|tool| {
                let source = sources.get(&tool.source_id)?;
                Some(base(tool, source, groups_of.remove(&tool.id).unwrap_or_default()))
            })
            .collect();
        let items = items
            .iter()
            .filter_map(|row| {
                let source = sources.get(&row.source_id)?;
                let item = CatalogItem::new(
                    source.id,
                    &source.name,
                    &source.prefix,
                    row.kind,
                    &row.key,
                    row.definition.clone(),
                );
                Some(ItemBase {
                    item: Arc::new(item),
                    owner: source.tenant_id,
                    source_enabled: source.enabled,
                    tags: source.tags.clone(),
                })
            })
            .collect();
        Bases {
            epoch: loaded.tool_epoch,
            sources: loaded.sources.clone(),
            members: loaded.members.clone(),
            list,
            items,
        }
    }

    /// Whether these were built from exactly this state.
    pub(in crate::catalog) fn unchanged(
        &self,
        epoch: i64,
        sources: &[crate::store::sources::Source],
        members: &[(Uuid, Uuid)],
    ) -> bool {
        self.epoch == epoch && self.sources == sources && self.members == members
    }
}

fn base(tool: &ToolRow, source: &crate::store::sources::Source, groups: Vec<Uuid>) -> Base {
    let mut tags: Vec<&str> = source.tags.iter().chain(&tool.tags).map(String::as_str).collect();
    tags.sort_unstable();
    tags.dedup();
    let raw = JsonText::new(&tool.input_schema);
    // Most schemas are what the LLM sees already: one text serves as both.
    let seen = schema::llm_input_schema(&tool.input_schema, []);
    let input_schema = if seen == tool.input_schema { raw.clone() } else { JsonText::new(&seen) };
    let catalog_tool = CatalogTool {
        tool_id: tool.id,
        source_id: source.id,
        source_kind: source.kind,
        source_name: source.name.clone(),
        upstream_name: tool.upstream_name.clone(),
        exposed_name: naming::exposed_name(&source.prefix, &tool.upstream_name),
        description: tool.description.clone(),
        input_schema,
        raw_input_schema: raw,
        output_schema: tool.output_schema.as_ref().map(JsonText::new),
        annotations: JsonText::new(&tool.annotations),
        meta: tool
            .meta
            .as_ref()
            .map(|meta| Arc::new(crate::catalog::apps::exposed_meta(&source.prefix, meta))),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        strict: tool.strict,
        timeout: timeout(tool.timeout_ms).unwrap_or(DEFAULT_TIMEOUT),
        presets: Arc::default(),
        secret_presets: Arc::default(),
        groups,
        validator: OnceLock::new(),
        output_validator: OnceLock::new(),
    };
    Base {
        tool: Arc::new(catalog_tool),
        owner: source.tenant_id,
        source_enabled: source.enabled,
        held: tool.held,
    }
}
