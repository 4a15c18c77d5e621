//! An immutable, per-tenant view of the catalog: which tools each tenant's LLM sees, under
//! which names, with which schema — built from one consistent read of the configuration.
//!
//! Tools a tenant has no override for are shared between tenants (`Arc`), so a snapshot of
//! many tenants over the same tools costs little more than one.

mod bases;
mod inspect;
mod tenant;
mod tool;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use serde_json::{Map, Value};
use uuid::Uuid;

use super::items::TenantItems;
use super::visibility::{self, Facts};
use crate::model::limits::Limits;
use crate::schema::{self, JsonText};
use crate::store::catalog::Loaded;
use crate::store::item_overrides::StoredItemOverride;
use crate::store::items::ItemKind;
use crate::store::overrides::StoredOverride;
pub(super) use bases::Bases;
use bases::timeout;
use tenant::{Access, tenant_tools};
pub use tenant::{
    Conflict, FOUND_BY_DEFAULT, GroupInfo, MAX_FOUND, META_TOOL, SEARCH_TOOL, TenantTools, search_tool,
};
pub use tool::{CatalogTool, DEFAULT_TIMEOUT};

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

fn with_override(base: &CatalogTool, ov: &StoredOverride) -> CatalogTool {
    let presets = object_or_empty(&ov.presets);
    let secret_presets = object_or_empty(&ov.secret_presets);
    // Without presets the LLM sees the base's schema: its text is shared, not made again.
    let input_schema = if presets.is_empty() && secret_presets.is_empty() {
        base.input_schema.clone()
    } else {
        let fixed = presets.keys().chain(secret_presets.keys()).map(String::as_str);
        JsonText::new(&schema::llm_input_schema(&base.raw_input_schema.value(), fixed))
    };
    CatalogTool {
        exposed_name: ov.exposed_name.clone().unwrap_or_else(|| base.exposed_name.clone()),
        description: ov.description.clone().unwrap_or_else(|| base.description.clone()),
        input_schema,
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
        let pin_names: HashSet<&str> = tenant.pinned_tools.iter().map(String::as_str).collect();
        let mut pinned = HashSet::new();
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
            if pin_names.contains(base.tool.exposed_name.as_str()) {
                pinned.insert(base.tool.tool_id);
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
        view.tool_discovery = tenant.tool_discovery;
        view.pinned = Arc::new(pinned);
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
