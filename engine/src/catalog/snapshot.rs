//! An immutable, per-tenant view of the catalog: which tools each tenant's LLM sees, under
//! which names, with which schema — built from one consistent read of the configuration.
//!
//! Tools a tenant has no override for are shared between tenants (`Arc`), so a snapshot of
//! many tenants over the same tools costs little more than one.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::items::{CatalogItem, TenantItems};
use super::naming;
use super::visibility::{self, Facts};
use crate::exec::limits::Limits;
use crate::exec::validate::ArgumentValidator;
use crate::model::SourceKind;
use crate::schema;
use crate::store::catalog::{ItemRow, Loaded, ToolRow};
use crate::store::item_overrides::StoredItemOverride;
use crate::store::items::ItemKind;
use crate::store::overrides::StoredOverride;

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
    pub input_schema: Arc<Value>,
    /// The tool's own schema, as its source declared it.
    pub raw_input_schema: Arc<Value>,
    pub output_schema: Option<Arc<Value>>,
    pub annotations: Arc<Value>,
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
    validator: OnceLock<Arc<ArgumentValidator>>,
    /// `output_schema` compiled, on the first structured result.
    #[serde(skip)]
    output_validator: OnceLock<Option<Arc<ArgumentValidator>>>,
}

impl CatalogTool {
    pub fn validator(&self) -> &ArgumentValidator {
        self.validator.get_or_init(|| Arc::new(ArgumentValidator::new(&self.input_schema)))
    }

    /// What judges the tool's structured results, if it declares an output schema.
    pub fn output_validator(&self) -> Option<&ArgumentValidator> {
        let compile = || self.output_schema.as_deref().map(|schema| Arc::new(ArgumentValidator::new(schema)));
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

    fn view(&self) -> schema::render::ToolView<'_> {
        schema::render::ToolView {
            name: &self.exposed_name,
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_deref(),
            annotations: &self.annotations,
            meta: self.meta.as_deref(),
            strict: self.strict,
        }
    }

    /// The tool as `provider` receives it: always the normalised, lint-clean rendering.
    pub fn render(&self, provider: schema::Provider) -> Result<Value, schema::normalize::NormalizeError> {
        schema::render::render(&self.view(), provider)
    }

    /// The tool as MCP clients list it unless their tenant chose portable schemas (then they
    /// get [`Self::render`] for MCP): its schemas as its server published them, presets removed.
    pub fn published_mcp(&self) -> Value {
        schema::render::published_mcp(&self.view())
    }

    /// Roughly how many tokens the tool's definition costs an LLM request (its OpenAI
    /// rendering at about four characters a token).
    pub fn approx_tokens(&self) -> usize {
        self.render(schema::Provider::OpenAi).map(|r| r.to_string().len().div_ceil(4)).unwrap_or(0)
    }

    /// Everything the schema inspector shows for `provider`: the raw schema, the one the
    /// tenant's LLM sees (presets removed), the normalised one, the rendering the tenant's
    /// clients get (on MCP the published schemas unless `portable_mcp`), and what the provider
    /// would reject in the unnormalised schema.
    pub fn inspect(
        &self,
        provider: schema::Provider,
        portable_mcp: bool,
    ) -> Result<Inspection, schema::normalize::NormalizeError> {
        let portable = provider != schema::Provider::Mcp || portable_mcp;
        // Served as published, a schema the normaliser refuses is still inspected.
        let (rendering, normalised) = match self.render(provider) {
            Ok(normalised) if portable => {
                let schema = schema::render::input_schema(&normalised, provider).clone();
                (normalised, schema)
            }
            Ok(normalised) => {
                (self.published_mcp(), schema::render::input_schema(&normalised, provider).clone())
            }
            Err(_) if !portable => (self.published_mcp(), Value::Null),
            Err(err) => return Err(err),
        };
        let findings = schema::lint::lint_tool(&self.exposed_name, &self.input_schema, provider, self.strict);
        Ok(Inspection {
            tool: self.exposed_name.clone(),
            provider: provider.as_str(),
            raw: (*self.raw_input_schema).clone(),
            changes: match normalised {
                Value::Null => Vec::new(),
                _ => render_changes(&self.input_schema, &normalised, &findings),
            },
            llm_schema: (*self.input_schema).clone(),
            normalised,
            rendering,
            portable,
            findings,
        })
    }
}

/// What the renderer changed in the schema the LLM sees to make it one the provider accepts:
/// each field that differs, with the provider's rules broken at that place of the schema (the
/// lint's findings there: why a keyword moved into the description, say). A change with no
/// rule broken there (strict mode closing an object, an inlined `$ref`) has none.
fn render_changes(declared: &Value, sent: &Value, findings: &[schema::lint::Finding]) -> Vec<RenderChange> {
    crate::diff::field_changes(Some(declared), Some(sent))
        .into_iter()
        .map(|change| {
            let (place, key) = change.path.rsplit_once('.').unwrap_or(("", change.path.as_str()));
            // A finding's pointer may end at the keyword it is about; its place is the node.
            let place_of = |f: &schema::lint::Finding| {
                let mut segments: Vec<String> = f
                    .pointer
                    .split('/')
                    .skip(1)
                    .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
                    .collect();
                if segments.last() == Some(&f.keyword) {
                    segments.pop();
                }
                segments.join(".")
            };
            let here: Vec<_> = findings.iter().filter(|f| place_of(f) == place).collect();
            // A keyword's own rule; for anything else there (its description), all of them.
            let own: Vec<_> = here.iter().filter(|f| f.keyword == key).collect();
            let mut why: Vec<String> = if own.is_empty() {
                here.iter().map(|f| f.message.clone()).collect()
            } else {
                own.iter().map(|f| f.message.clone()).collect()
            };
            if why.is_empty() {
                // The outermost keyword that explains it: `$defs.a.type` went with the `$defs`.
                why.extend(change.path.split('.').find_map(usual_reason).map(str::to_string));
            }
            if why.is_empty() && change.after.is_none() {
                why.push("moved into the description, in words the LLM reads".into());
            }
            RenderChange { path: change.path, declared: change.before, sent: change.after, why }
        })
        .collect()
}

/// Why the renderer changes a keyword when no rule of the provider is broken right there.
fn usual_reason(key: &str) -> Option<&'static str> {
    Some(match key {
        "$defs" | "definitions" | "$ref" => "references are inlined: a provider reads the schema whole",
        "$schema" | "$id" | "$comment" => "the schema's own metadata says nothing to an LLM",
        "description" => "what the provider takes no keyword for is kept here, in words the LLM reads",
        "required" | "additionalProperties" => {
            "strict mode: every property required (optional ones nullable), every object closed"
        }
        "type" | "nullable" => "written as the provider reads types: one type, optional values nullable",
        "anyOf" | "oneOf" | "allOf" => "compositions are merged, or written as `anyOf`",
        _ => return None,
    })
}

/// One field of the schema the renderer changed for a provider, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderChange {
    pub path: String,
    /// As declared (presets removed); `None`: not there.
    pub declared: Option<Value>,
    /// As sent; `None`: removed.
    pub sent: Option<Value>,
    /// The provider's rules the declared schema broke at that place.
    pub why: Vec<String>,
}

/// A tool's schema for one provider, as the inspector shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub tool: String,
    pub provider: &'static str,
    pub raw: Value,
    pub llm_schema: Value,
    /// `null` where the normaliser refuses a schema MCP clients get as published.
    pub normalised: Value,
    pub rendering: Value,
    /// Whether `rendering` carries the normalised schema: always but on MCP, where the tenant
    /// chooses portable schemas or gets them as published.
    pub portable: bool,
    pub findings: Vec<schema::lint::Finding>,
    /// What the renderer changed for the provider (or would, with portable schemas on MCP),
    /// and why.
    pub changes: Vec<RenderChange>,
}

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
    equippable: Vec<Arc<CatalogTool>>,
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
        Ok(equipped)
    }
}

/// The whole catalog at one moment.
#[derive(Debug)]
pub struct Snapshot {
    /// Increases with every rebuild in this process.
    pub version: u64,
    /// `catalog_epoch.config` as read with the rest: every configuration write committed
    /// before it moved there is in this snapshot.
    pub config_epoch: i64,
    pub built_at: SystemTime,
    pub tools_enabled: bool,
    tenants: HashMap<String, Arc<TenantTools>>,
    /// Active API keys by SHA-256 of the key.
    keys: HashMap<Vec<u8>, KeyIdentity>,
    /// Every tool before any tenant's choices (shared with the rebuilds that reuse them).
    bases: Arc<Bases>,
}

/// Whom an API key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyIdentity {
    pub key_id: Uuid,
    pub tenant: String,
    pub expires_at: Option<time::OffsetDateTime>,
}

impl KeyIdentity {
    /// When the key expired, if it has.
    pub fn expired(&self) -> Option<time::OffsetDateTime> {
        self.expires_at.filter(|at| *at <= time::OffsetDateTime::now_utc())
    }
}

impl Snapshot {
    pub fn empty() -> Self {
        Snapshot {
            version: 0,
            config_epoch: -1,
            built_at: SystemTime::now(),
            tools_enabled: false,
            tenants: HashMap::new(),
            keys: HashMap::new(),
            bases: Arc::default(),
        }
    }

    /// The tool `id` before any tenant's choices (no override, no presets), as its source
    /// declares it under its server's prefix: what the inspector shows of a tool no tenant sees.
    pub fn untenanted(&self, id: Uuid) -> Option<&Arc<CatalogTool>> {
        self.bases.list.iter().map(|base| &base.tool).find(|tool| tool.tool_id == id)
    }

    /// The tenant a presented API key belongs to, if the key is known and not revoked (it may
    /// have expired: see [`KeyIdentity::expired`]).
    pub fn authenticate(&self, key: &str) -> Option<&KeyIdentity> {
        self.keys.get(&crate::store::keys::hash(key))
    }

    pub fn tenant(&self, slug: &str) -> Option<&Arc<TenantTools>> {
        self.tenants.get(slug)
    }

    pub fn tenants(&self) -> impl Iterator<Item = &Arc<TenantTools>> {
        self.tenants.values()
    }
}

fn object_or_empty(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn timeout(ms: Option<i32>) -> Option<Duration> {
    ms.and_then(|ms| u64::try_from(ms).ok()).map(Duration::from_millis)
}

/// A tool with its source, before any tenant's choices.
#[derive(Debug)]
pub(super) struct Base {
    tool: Arc<CatalogTool>,
    owner: Option<Uuid>,
    source_enabled: bool,
    held: bool,
}

/// Every tool before any tenant's choices, and what they were built from: a rebuild whose
/// tools, sources and group members are unchanged reuses them instead of reading and building
/// every tool again.
#[derive(Debug, Default)]
pub(super) struct Bases {
    epoch: i64,
    sources: Vec<crate::store::sources::Source>,
    members: Vec<(Uuid, Uuid)>,
    list: Vec<Base>,
    items: Vec<ItemBase>,
}

/// A prompt, resource or template with its server, before any tenant's choices.
#[derive(Debug)]
struct ItemBase {
    item: Arc<CatalogItem>,
    owner: Option<Uuid>,
    source_enabled: bool,
    /// The server's.
    tags: Vec<String>,
}

impl Bases {
    /// Builds every tool of `tools` and item of `items`, read along with the rest of `loaded`.
    pub(super) fn build(loaded: &Loaded, tools: &[ToolRow], items: &[ItemRow]) -> Self {
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
    pub(super) fn unchanged(
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
    let raw = Arc::new(tool.input_schema.clone());
    // Most schemas are what the LLM sees already: one copy serves as both.
    let seen = schema::llm_input_schema(&raw, []);
    let input_schema = if seen == *raw { raw.clone() } else { Arc::new(seen) };
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
        output_schema: tool.output_schema.clone().map(Arc::new),
        annotations: Arc::new(tool.annotations.clone()),
        meta: tool.meta.as_ref().map(|meta| Arc::new(super::apps::exposed_meta(&source.prefix, meta))),
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

fn with_override(base: &CatalogTool, ov: &StoredOverride) -> CatalogTool {
    let presets = object_or_empty(&ov.presets);
    let secret_presets = object_or_empty(&ov.secret_presets);
    let fixed = presets.keys().chain(secret_presets.keys()).map(String::as_str);
    CatalogTool {
        exposed_name: ov.exposed_name.clone().unwrap_or_else(|| base.exposed_name.clone()),
        description: ov.description.clone().unwrap_or_else(|| base.description.clone()),
        input_schema: Arc::new(schema::llm_input_schema(&base.raw_input_schema, fixed)),
        timeout: timeout(ov.timeout_ms).unwrap_or(base.timeout),
        presets: Arc::new(presets),
        secret_presets: Arc::new(secret_presets),
        validator: OnceLock::new(),
        ..base.clone()
    }
}

/// Builds the snapshot from `loaded` and its tools, `bases`. `force_tools_off` is the
/// process's `TOOLGATE_TOOLS_ENABLED=false`.
pub(super) fn build(loaded: &Loaded, bases: &Arc<Bases>, version: u64, force_tools_off: bool) -> Snapshot {
    let tools_enabled = loaded.settings.tools_enabled && !force_tools_off;
    let group_default: HashMap<Uuid, bool> =
        loaded.groups.iter().map(|g| (g.id, g.active_by_default)).collect();
    let group_name: HashMap<Uuid, &str> = loaded.groups.iter().map(|g| (g.id, g.name.as_str())).collect();
    let tenant_group: HashMap<(Uuid, Uuid), bool> =
        loaded.tenant_groups.iter().map(|&(t, g, active)| ((t, g), active)).collect();
    let item_choices: HashMap<(Uuid, Uuid, ItemKind, &str), &StoredItemOverride> = loaded
        .item_overrides
        .iter()
        .map(|ov| ((ov.tenant_id, ov.source_id, ov.kind, ov.key.as_str()), ov))
        .collect();
    let mut item_groups: HashMap<(Uuid, ItemKind, &str), Vec<Uuid>> = HashMap::new();
    for member in &loaded.item_members {
        item_groups
            .entry((member.source_id, member.kind, member.key.as_str()))
            .or_default()
            .push(member.group_id);
    }
    let mut overrides: HashMap<(Uuid, Uuid), &StoredOverride> = HashMap::new();
    for ov in &loaded.overrides {
        // An override of a tool not discovered yet waits for it.
        let Some(tool_id) = ov.tool_id else { continue };
        overrides.insert((ov.tenant_id, tool_id), ov);
    }
    let groups = Arc::new(
        loaded
            .groups
            .iter()
            .map(|g| GroupInfo { id: g.id, name: g.name.clone(), description: g.description.clone() })
            .collect::<Vec<_>>(),
    );
    let mut key_limits: HashMap<Uuid, HashMap<Uuid, _>> = HashMap::new();
    for key in loaded.keys.iter().filter(|k| !k.limits.is_none()) {
        key_limits.entry(key.tenant_id).or_default().insert(key.id, *key.limits);
    }
    let mut tenants = HashMap::with_capacity(loaded.tenants.len());
    let mut groups_active = Vec::new();
    for tenant in &loaded.tenants {
        let mut limits = Limits {
            tenant: tenant.limits,
            tools: HashMap::new(),
            keys: key_limits.remove(&tenant.id).unwrap_or_default(),
            user: tenant.user_limits,
        };
        let whitelist = tenant.enabled_tags.as_ref().unwrap_or(&loaded.settings.default_tags);
        let mut visible = Vec::new();
        let mut equippable = Vec::new();
        let ceiling = &tenant.ceiling;
        let allowed_group = |group: &Uuid| ceiling.admits_group(group_name[group]);
        let active = |group: &Uuid| {
            allowed_group(group)
                && tenant_group.get(&(tenant.id, *group)).copied().unwrap_or(group_default[group])
        };
        for base in bases
            .list
            .iter()
            .filter(|b| tools_enabled && tenant.may_use(b.owner, &b.tool.source_name, &b.tool.tags))
        {
            if let Some(tool_limits) = tenant.tool_limits.get(&base.tool.exposed_name) {
                // Named by the default exposed name: the base's, before any override.
                limits.tools.insert(base.tool.tool_id, (base.tool.exposed_name.clone(), *tool_limits));
            }
            let ov = overrides.get(&(tenant.id, base.tool.tool_id)).copied();
            groups_active.clear();
            groups_active.extend(base.tool.groups.iter().map(active));
            let facts = Facts {
                tools_enabled,
                source_enabled: base.source_enabled,
                whitelist,
                tags: &base.tool.tags,
                groups_active: &groups_active,
                override_enabled: ov.map(|ov| ov.enabled),
                held: base.held,
            };
            let in_active_group = visibility::admitted_by_groups(facts.groups_active);
            // The meta tool lets a session choose its own groups: keep what passes every
            // other rule.
            let facts = Facts { groups_active: &[], ..facts };
            let equippable_groups = base.tool.groups.is_empty() || base.tool.groups.iter().any(allowed_group);
            if visibility::is_visible(&facts) && (in_active_group || (tenant.meta_tool && equippable_groups))
            {
                let tool = match ov {
                    Some(ov) => Arc::new(with_override(&base.tool, ov)),
                    None => base.tool.clone(),
                };
                if tenant.meta_tool && equippable_groups {
                    equippable.push(tool.clone());
                }
                if in_active_group {
                    visible.push(tool);
                }
            }
        }
        let mut view = tenant_tools(tenant.id, &tenant.slug, tenant.meta_tool, visible);
        let items = bases.items.iter().filter(|b| {
            let groups = item_groups.get(&(b.item.source_id, b.item.kind, b.item.key.as_str()));
            tools_enabled
                && b.source_enabled
                && tenant.may_use(b.owner, &b.item.source_name, &b.tags)
                && visibility::admitted_by_tags(whitelist, &b.tags)
                && groups.is_none_or(|groups| groups.iter().any(active))
        });
        let items = items.filter_map(|b| {
            let item = &b.item;
            match item_choices.get(&(tenant.id, item.source_id, item.kind, item.key.as_str())) {
                None => Some(item.clone()),
                Some(ov) if !ov.enabled => None,
                Some(ov) => {
                    Some(Arc::new(item.chosen(ov.exposed_name.as_deref(), ov.description.as_deref())))
                }
            }
        });
        view.items = Arc::new(TenantItems::new(items.collect()));
        view.limits = Arc::new(limits);
        view.access = Access { api_keys: tenant.api_keys, oauth: tenant.oauth, enabled: tenant.enabled };
        view.portable_mcp_schemas = tenant.portable_mcp_schemas;
        if tenant.meta_tool {
            view.equippable = equippable;
            view.groups = if ceiling.groups.is_none() {
                groups.clone()
            } else {
                Arc::new(groups.iter().filter(|g| ceiling.admits_group(&g.name)).cloned().collect())
            };
        }
        tenants.insert(tenant.slug.clone(), Arc::new(view));
    }
    let slugs: HashMap<Uuid, &str> = loaded.tenants.iter().map(|t| (t.id, t.slug.as_str())).collect();
    let keys = loaded
        .keys
        .iter()
        .filter_map(|key| {
            let tenant = slugs.get(&key.tenant_id)?.to_string();
            Some((key.key_hash.clone(), KeyIdentity { key_id: key.id, tenant, expires_at: key.expires_at }))
        })
        .collect();
    Snapshot {
        version,
        config_epoch: loaded.config_epoch,
        built_at: SystemTime::now(),
        tools_enabled,
        tenants,
        keys,
        bases: bases.clone(),
    }
}

/// Sorts by exposed name and withholds every tool whose name another tool also has.
fn tenant_tools(
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
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render_changes;
    use crate::schema::{Provider, lint::lint, normalize::normalize};

    /// Each change says why: the provider's rule broken at that place, or the renderer's usual
    /// reason for the keyword.
    #[test]
    fn what_the_renderer_changed_says_why() {
        let declared = json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time", "pattern": "^2"},
                "count": {"type": "integer", "multipleOf": 5}
            },
            "$defs": {"unused": {"type": "string"}}
        });
        let sent = normalize(&declared, Provider::Gemini, false).unwrap();
        let changes = render_changes(&declared, &sent, &lint(&declared, Provider::Gemini, false));
        let why = |path: &str| {
            changes.iter().find(|c| c.path == path).map(|c| c.why.join("; ")).unwrap_or_default()
        };
        assert!(why("properties.count.multipleOf").contains("multipleOf"), "{changes:#?}");
        assert_eq!(why("properties.when.pattern"), "moved into the description, in words the LLM reads");
        assert_eq!(
            why("properties.count.description"),
            why("properties.count.multipleOf"),
            "moved there for it"
        );
        assert!(why("$defs.unused.type").starts_with("references are inlined"), "{changes:#?}");
        assert!(changes.iter().all(|c| !c.why.is_empty()), "{changes:#?}");
    }
}
