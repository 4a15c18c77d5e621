//! Config as code: the whole configuration as one document, exported with secrets as
//! `{set: true}` and applied declaratively — the document is the desired state, so servers,
//! groups and tenants it leaves out are removed — in one transaction, or planned only (the
//! diff, nothing written).
//!
//! Tools are named by their default exposed name (`<prefix>_<tool>`), which need not exist yet:
//! a group or an override may name a tool of a server that has not been discovered, and binds
//! to it once discovery finds it. Built-in and external sources are not part of the document.

mod items;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::catalog::naming::exposed_name;
use crate::catalog::visibility::Ceiling;
use crate::exec::CallLimits;
use crate::model::{Name, SourceKind, Tag, TenantSlug, parse_tags, tag_strings};
use crate::secret::SecretBox;
use crate::sso::{self, SignInConfig};
use crate::store::item_overrides::{self, ItemRef};
use crate::store::overrides::{self, OverrideInput};
use crate::store::servers::{self, ServerConfig, StoredSecrets};
use crate::store::settings::Settings;
use crate::store::sources::SourceTool;
use crate::store::{
    self, Actor, Error, Result, SecretInput, groups, is_true, settings, sources, tenants, yes,
};

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
}

impl TenantConfig {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(self.slug.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Create,
    Update,
    Delete,
}

/// One entity a document changes, as the diff shows it (secrets never as values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub action: Action,
    /// `settings`, `server`, `group` or `tenant`.
    pub kind: &'static str,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// What a server's move to a new URL, command or working directory drops: what tenants
    /// gave it for its old target (credentials, OAuth authorizations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
}

/// (tenant slug, tool key) -> the tool's source, and secret preset name -> encrypted value.
type PresetSecrets = HashMap<(String, String), (Uuid, Map<String, Value>)>;

/// The stored configuration: the document, and the encrypted values `{set: true}` keeps.
struct Current {
    document: Document,
    server_ids: HashMap<String, Uuid>,
    server_secrets: HashMap<String, StoredSecrets>,
    tenant_ids: HashMap<String, Uuid>,
    preset_secrets: PresetSecrets,
    /// The OpenID provider's sealed client secret.
    sso_secret: Option<String>,
}

/// The whole configuration, secrets as `{set: true}`.
pub async fn export(pool: &PgPool) -> Result<Document> {
    let mut tx = pool.begin().await?;
    store::read_only(&mut tx).await?;
    Ok(current(&mut tx).await?.document)
}

async fn current(tx: &mut Transaction<'_, Postgres>) -> Result<Current> {
    let settings = settings::get(&mut **tx).await?;
    let tenant_rows = tenants::list(&mut **tx).await?;
    let slugs: HashMap<Uuid, TenantSlug> =
        tenant_rows.iter().map(|t| Ok((t.id, TenantSlug::parse(&t.slug)?))).collect::<Result<_>>()?;
    let all_sources = sources::list(&mut **tx).await?;
    let keys = |source_id: Uuid, upstream: &str| {
        let source = all_sources.iter().find(|s| s.id == source_id).expect("references are foreign keys");
        exposed_name(&source.prefix, upstream)
    };

    let mut servers = Vec::new();
    let (mut server_ids, mut server_secrets) = (HashMap::new(), HashMap::new());
    let rows = servers::rows(&mut **tx).await?;
    for source in all_sources.iter().filter(|s| s.kind == SourceKind::Mcp) {
        let Some(row) = rows.get(&source.id) else { continue };
        let tenant = source.tenant_id.and_then(|id| slugs.get(&id).cloned());
        servers.push(row.config(source, tenant)?);
        server_ids.insert(source.name.clone(), source.id);
        server_secrets.insert(source.name.clone(), row.secrets());
    }

    let members = groups::all_members(&mut **tx).await?;
    let item_members = groups::item_members(&mut **tx).await?;
    let mut groups = Vec::new();
    for group in groups::list(&mut **tx).await? {
        let tools: BTreeSet<String> = members
            .iter()
            .filter(|(group_id, ..)| *group_id == group.id)
            .map(|(_, source_id, upstream)| keys(*source_id, upstream))
            .collect();
        groups.push(GroupConfig {
            name: Name::parse(&group.name)?,
            description: group.description,
            active_by_default: group.active_by_default,
            tools: tools.into_iter().collect(),
            items: item_members
                .iter()
                .filter(|(name, _)| *name == group.name)
                .map(|(_, item)| item.clone())
                .collect(),
        });
    }

    let choices = tenants::all_group_choices(&mut **tx).await?;
    let override_rows = overrides::all(&mut **tx).await?;
    let item_rows = item_overrides::all(&mut **tx).await?;
    let server_names: HashMap<Uuid, Name> =
        all_sources.iter().filter_map(|source| Some((source.id, Name::parse(&source.name).ok()?))).collect();
    let mut tenants = Vec::new();
    let mut preset_secrets = HashMap::new();
    for tenant in &tenant_rows {
        let slug = slugs[&tenant.id].clone();
        let groups = choices
            .iter()
            .filter(|(tenant_id, ..)| *tenant_id == tenant.id)
            .map(|(_, group, active)| Ok((Name::parse(group)?, *active)))
            .collect::<Result<_>>()?;
        let mut tools = BTreeMap::new();
        for row in override_rows.iter().filter(|o| o.tenant_id == tenant.id) {
            let key = keys(row.source_id, &row.upstream_name);
            let sealed = row.secret_presets.as_object().cloned().unwrap_or_default();
            let input = OverrideInput {
                enabled: (!row.enabled).then_some(false),
                name: row.exposed_name.clone(),
                description: row.description.clone(),
                timeout_ms: row.timeout_ms,
                presets: row.presets.as_object().cloned().unwrap_or_default(),
                secret_presets: sealed.keys().map(|k| (k.clone(), SecretInput::SET)).collect(),
            };
            preset_secrets.insert((tenant.slug.clone(), key.clone()), (row.source_id, sealed));
            tools.insert(key, input);
        }
        let mut config = TenantConfig {
            slug,
            name: Some(tenant.name.clone()),
            enabled_tags: tenant.enabled_tags.as_deref().map(parse_tags).transpose()?,
            groups,
            meta_tool: tenant.meta_tool,
            tools,
            prompts: BTreeMap::new(),
            resources: BTreeMap::new(),
            resource_templates: BTreeMap::new(),
            ceiling: tenant.ceiling.clone(),
            limits: tenant.limits,
            tool_limits: tenant.tool_limits.clone(),
            user_limits: tenant.user_limits,
            api_keys: tenant.api_keys,
            oauth: tenant.oauth,
            enabled: tenant.enabled,
            portable_mcp_schemas: tenant.portable_mcp_schemas,
        };
        items::export(&mut config, tenant.id, &item_rows, &server_names);
        tenants.push(config);
    }

    let document = Document {
        tools_enabled: settings.tools_enabled,
        default_tags: parse_tags(&settings.default_tags)?,
        servers,
        groups,
        tenants,
        sign_in: Some(sso::current(tx).await?),
    };
    let tenant_ids = tenant_rows.iter().map(|t| (t.slug.clone(), t.id)).collect();
    let sso_secret = sso::stored_secret(&mut **tx).await?;
    Ok(Current { document, server_ids, server_secrets, tenant_ids, preset_secrets, sso_secret })
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

fn unique<'a>(section: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(Error::Invalid(format!("{section}: `{name}` appears more than once")));
        }
    }
    Ok(())
}

impl Document {
    /// Refuses a document with a stdio server whose program `allowed`
    /// (`TOOLGATE_STDIO_COMMANDS`) does not list: every server it declares, changed or not.
    pub fn check_stdio_commands(&self, allowed: &[String]) -> Result<()> {
        for server in &self.servers {
            server.check_stdio_command(allowed).map_err(at(format!("servers.{}", server.name)))?;
        }
        Ok(())
    }

    /// The rules that need the whole document: unique names, and references between parts.
    fn check(&self) -> Result<()> {
        unique("servers", self.servers.iter().map(|s| s.name.as_str()))?;
        unique("groups", self.groups.iter().map(|g| g.name.as_str()))?;
        unique("tenants", self.tenants.iter().map(|t| t.slug.as_str()))?;
        let slugs: BTreeSet<&TenantSlug> = self.tenants.iter().map(|t| &t.slug).collect();
        for server in &self.servers {
            server.check().map_err(at(format!("servers.{}", server.name)))?;
            if let Some(tenant) = &server.tenant
                && !slugs.contains(tenant)
            {
                return Err(Error::Invalid(format!(
                    "servers.{}: tenant `{tenant}` is not among the document's tenants",
                    server.name
                )));
            }
        }
        let group_names: BTreeSet<&Name> = self.groups.iter().map(|g| &g.name).collect();
        for tenant in &self.tenants {
            if !(1..=200).contains(&tenant.name().chars().count()) {
                return Err(Error::Invalid(format!(
                    "tenants.{}: a name is 1 to 200 characters",
                    tenant.slug
                )));
            }
            if let Some(group) = tenant.groups.keys().find(|g| !group_names.contains(g)) {
                return Err(Error::Invalid(format!(
                    "tenants.{}.groups: group `{group}` is not among the document's groups",
                    tenant.slug
                )));
            }
            let ceiling = &tenant.ceiling;
            let refusal = tenant
                .enabled_tags
                .as_ref()
                .and_then(|tags| ceiling.refuses_tags(tags.iter().map(Tag::as_str)));
            let refusal = refusal.or_else(|| {
                tenant
                    .groups
                    .iter()
                    .filter(|(_, active)| **active)
                    .find_map(|(g, _)| ceiling.refuses_group(g.as_str()))
            });
            if let Some(refusal) = refusal {
                return Err(Error::Invalid(format!("tenants.{}: {refusal}", tenant.slug)));
            }
        }
        items::check(self)
    }
}

fn settings_view(document: &Document) -> Value {
    json!({ "tools_enabled": document.tools_enabled, "default_tags": document.default_tags })
}

fn group_view(group: &GroupConfig) -> Value {
    let tools: BTreeSet<&String> = group.tools.iter().collect();
    let items: BTreeSet<&ItemRef> = group.items.iter().collect();
    json!({
        "description": group.description,
        "active_by_default": group.active_by_default,
        "tools": tools,
        "items": items,
    })
}

/// A tenant as the diff shows it: defaults filled in, secret presets redacted (kept from
/// `stored` unless their server is among the `moved` ones).
fn tenant_view(tenant: &TenantConfig, stored: &PresetSecrets, moved: &HashSet<Uuid>) -> Result<Value> {
    let mut tools = Map::new();
    for (key, input) in &tenant.tools {
        let place = format!("tenants.{}.tools.{key}", tenant.slug);
        let stored = stored.get(&(tenant.slug.to_string(), key.clone()));
        let mut presets = Map::new();
        for (name, secret) in &input.secret_presets {
            let kept = stored.and_then(|(_, s)| s.get(name)).and_then(Value::as_str);
            if kept.is_some()
                && secret.new_value().is_none()
                && stored.is_some_and(|(id, _)| moved.contains(id))
            {
                return Err(Error::Invalid(format!(
                    "{place}: secret preset `{name}` must be given again: its server's URL, command or working \
                     directory changes, and a stored secret never follows its server to a new target"
                )));
            }
            presets.insert(name.clone(), secret.redact(name, kept).map_err(at(&place))?);
        }
        let mut shown = serde_json::to_value(OverrideInput {
            enabled: input.enabled.filter(|enabled| !enabled),
            secret_presets: BTreeMap::new(),
            ..input.clone()
        })
        .expect("overrides serialise");
        if !presets.is_empty() {
            shown["secret_presets"] = Value::Object(presets);
        }
        tools.insert(key.clone(), shown);
    }
    let items = items::view(tenant);
    Ok(json!({
        "name": tenant.name(),
        "enabled_tags": tenant.enabled_tags,
        "groups": tenant.groups,
        "meta_tool": tenant.meta_tool,
        "tools": tools,
        "prompts": items["prompts"],
        "resources": items["resources"],
        "resource_templates": items["resource_templates"],
        "ceiling": tenant.ceiling,
        "limits": tenant.limits,
        "tool_limits": tenant.tool_limits,
        "user_limits": tenant.user_limits,
        "api_keys": tenant.api_keys,
        "oauth": tenant.oauth,
        "enabled": tenant.enabled,
        "portable_mcp_schemas": tenant.portable_mcp_schemas,
    }))
}

/// Compares entities by name: what to create, update and delete to go from `before` to
/// `after`, in `after`'s order (deletions last).
fn diff(kind: &'static str, before: Vec<(String, Value)>, after: Vec<(String, Value)>) -> Vec<Change> {
    let mut old: BTreeMap<String, Value> = before.into_iter().collect();
    let mut changes = Vec::new();
    for (name, new) in after {
        match old.remove(&name) {
            None => changes.push(Change {
                action: Action::Create,
                kind,
                name,
                before: None,
                after: Some(new),
                dropped: vec![],
            }),
            Some(old) if old != new => changes.push(Change {
                action: Action::Update,
                kind,
                name,
                before: Some(old),
                after: Some(new),
                dropped: vec![],
            }),
            Some(_) => {}
        }
    }
    changes.extend(old.into_iter().map(|(name, old)| Change {
        action: Action::Delete,
        kind,
        name,
        before: Some(old),
        after: None,
        dropped: vec![],
    }));
    changes
}

/// The servers `desired` moves to a new URL, command or working directory, by name.
fn moved_servers(current: &Current, desired: &Document) -> HashMap<String, Uuid> {
    desired
        .servers
        .iter()
        .filter(|s| current.server_secrets.get(s.name.as_str()).is_some_and(|stored| stored.moved(s)))
        .map(|s| (s.name.to_string(), current.server_ids[s.name.as_str()]))
        .collect()
}

fn plan(current: &Current, desired: &Document) -> Result<Vec<Change>> {
    let mut changes = diff(
        "settings",
        vec![("global".into(), settings_view(&current.document))],
        vec![("global".into(), settings_view(desired))],
    );
    let server_views = |document: &Document| -> Result<Vec<(String, Value)>> {
        document
            .servers
            .iter()
            .map(|s| {
                let stored = current.server_secrets.get(s.name.as_str());
                Ok((s.name.to_string(), s.redacted(stored).map_err(at(format!("servers.{}", s.name)))?))
            })
            .collect()
    };
    changes.extend(diff("server", server_views(&current.document)?, server_views(desired)?));
    let group_views =
        |document: &Document| document.groups.iter().map(|g| (g.name.to_string(), group_view(g))).collect();
    changes.extend(diff("group", group_views(&current.document), group_views(desired)));
    let tenant_views = |document: &Document, moved: &HashSet<Uuid>| -> Result<Vec<(String, Value)>> {
        document
            .tenants
            .iter()
            .map(|t| Ok((t.slug.to_string(), tenant_view(t, &current.preset_secrets, moved)?)))
            .collect()
    };
    let moved = moved_servers(current, desired).into_values().collect();
    changes.extend(diff(
        "tenant",
        tenant_views(&current.document, &HashSet::new())?,
        tenant_views(desired, &moved)?,
    ));
    if let (Some(now), Some(wanted)) = (&current.document.sign_in, &desired.sign_in) {
        let stored = current.sso_secret.as_deref();
        let view = |config| sso::redacted(config, stored).map_err(at("sign_in"));
        changes.extend(diff(
            "sign_in",
            vec![("global".into(), view(now)?)],
            vec![("global".into(), view(wanted)?)],
        ));
    }
    Ok(changes)
}

/// Where each tool a document may name lives: by default exposed name among existing tools,
/// and by prefix among servers for tools not discovered yet.
struct ToolIndex(Vec<SourceTool>);

impl ToolIndex {
    /// The (source, upstream name) `key` names, among the sources `tenant` sees (all of them
    /// for a group).
    fn resolve(&self, key: &str, tenant: Option<Uuid>) -> Result<(Uuid, String)> {
        let in_scope =
            self.0.iter().filter(|r| tenant.is_none() || r.tenant_id.is_none() || r.tenant_id == tenant);
        let mut found: Vec<(Uuid, String)> = in_scope
            .clone()
            .filter_map(|r| {
                let upstream = r.upstream_name.as_ref()?;
                (exposed_name(&r.prefix, upstream) == key).then(|| (r.source_id, upstream.clone()))
            })
            .collect();
        if found.is_empty() {
            // A tool not discovered yet: the server whose prefix the name starts with.
            let mut servers: Vec<(usize, Uuid, String)> = in_scope
                .filter(|r| r.kind == SourceKind::Mcp)
                .filter_map(|r| {
                    let upstream = if r.prefix.is_empty() {
                        Some(key)
                    } else {
                        key.strip_prefix(&format!("{}_", r.prefix))
                    }?;
                    (exposed_name(&r.prefix, upstream) == key)
                        .then(|| (r.prefix.len(), r.source_id, upstream.to_owned()))
                })
                .collect();
            servers.sort();
            servers.dedup();
            let longest = servers.last().map(|s| s.0);
            found = servers.into_iter().filter(|s| Some(s.0) == longest).map(|s| (s.1, s.2)).collect();
        }
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::Invalid(format!(
                "`{key}` names no tool: no source publishes it and no server's prefix matches it"
            ))),
            _ => Err(Error::Invalid(format!(
                "`{key}` names tools of more than one source; give the servers distinct prefixes"
            ))),
        }
    }
}

/// Applies `desired` as the whole configuration, in one transaction (all or nothing), or with
/// `dry_run` makes the same writes and rolls them back. Returns the changes; an empty list means the
/// stored configuration already is `desired` (and nothing is written or audited).
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), dry_run))]
pub async fn apply(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    desired: &Document,
    dry_run: bool,
) -> Result<Vec<Change>> {
    desired.check()?;
    let mut tx = pool.begin().await?;
    settings::lock(&mut *tx).await?;
    let current = current(&mut tx).await?;
    let mut changes = plan(&current, desired)?;
    for (name, id) in moved_servers(&current, desired) {
        let dropped = servers::given_for_target(&mut tx, id).await?;
        if let Some(change) = changes.iter_mut().find(|c| c.kind == "server" && c.name == name) {
            change.dropped = dropped;
        }
    }
    let slugs: Vec<&TenantSlug> = desired.tenants.iter().map(|t| &t.slug).collect();
    if let Some(sign_in) = &desired.sign_in {
        sso::write(&mut tx, secrets, sign_in, Some(&slugs), true).await.map_err(at("sign_in"))?;
    }
    if changes.is_empty() {
        return Ok(changes);
    }
    let changed = |kind: &str, action: Action, name: &str| {
        changes.iter().any(|c| c.kind == kind && c.action == action && c.name == name)
    };
    let changed_any =
        |kind: &str, name: &str| changed(kind, Action::Create, name) || changed(kind, Action::Update, name);

    if changed_any("settings", "global") {
        let settings = Settings {
            tools_enabled: desired.tools_enabled,
            default_tags: tag_strings(&desired.default_tags),
        };
        settings::write(&mut *tx, &settings).await?;
    }
    let mut tenant_ids = current.tenant_ids.clone();
    for tenant in desired.tenants.iter().filter(|t| changed_any("tenant", t.slug.as_str())) {
        let stored = tenants::Tenant {
            id: Uuid::nil(),
            slug: tenant.slug.to_string(),
            name: tenant.name().to_string(),
            enabled_tags: tenant.enabled_tags.as_deref().map(tag_strings),
            meta_tool: tenant.meta_tool,
            ceiling: tenant.ceiling.clone(),
            limits: tenant.limits,
            tool_limits: tenant.tool_limits.clone(),
            user_limits: tenant.user_limits,
            api_keys: tenant.api_keys,
            oauth: tenant.oauth,
            enabled: tenant.enabled,
            portable_mcp_schemas: tenant.portable_mcp_schemas,
        };
        let id = tenants::put(&mut *tx, &stored).await?;
        tenant_ids.insert(tenant.slug.to_string(), id);
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "server") {
        sources::remove(&mut *tx, current.server_ids[&change.name]).await?;
    }
    for server in desired.servers.iter().filter(|s| changed_any("server", s.name.as_str())) {
        let existing = current.server_ids.get(server.name.as_str()).copied();
        servers::write(&mut tx, secrets, actor, server, existing)
            .await
            .map_err(at(format!("servers.{}", server.name)))?;
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "group") {
        groups::remove(&mut *tx, &change.name).await?;
    }
    let index = ToolIndex(sources::with_tools(&mut *tx).await?);
    let server_ids = items::server_ids(&mut tx).await?;
    for group in desired.groups.iter().filter(|g| changed_any("group", g.name.as_str())) {
        let place = format!("groups.{}", group.name);
        let id = groups::upsert(&mut *tx, &group.name, &group.description, group.active_by_default, true)
            .await?
            .id;
        let members = group
            .tools
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|key| index.resolve(key, None).map_err(at(&place)))
            .collect::<Result<Vec<_>>>()?;
        groups::replace_members(&mut tx, id, &members).await?;
        items::apply_group(&mut tx, &server_ids, id, group).await.map_err(at(&place))?;
    }
    for tenant in desired.tenants.iter().filter(|t| changed_any("tenant", t.slug.as_str())) {
        let id = tenant_ids[tenant.slug.as_str()];
        tenants::replace_group_choices(&mut tx, id, &tenant.groups).await?;
        let mut kept = Vec::new();
        for (key, input) in &tenant.tools {
            let place = format!("tenants.{}.tools.{key}", tenant.slug);
            let (source_id, upstream) = index.resolve(key, Some(id)).map_err(at(&place))?;
            overrides::write(&mut tx, secrets, id, source_id, &upstream, input).await.map_err(at(&place))?;
            kept.push((source_id, upstream));
        }
        overrides::retain(&mut *tx, id, &kept).await?;
        items::apply(&mut tx, &server_ids, id, tenant).await?;
        for key in tenant.tool_limits.keys() {
            index.resolve(key, Some(id)).map_err(at(format!("tenants.{}.tool_limits.{key}", tenant.slug)))?;
        }
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "tenant") {
        tenants::remove(&mut *tx, &change.name).await?;
    }
    if let Some(sign_in) = desired.sign_in.as_ref().filter(|_| changed_any("sign_in", "global")) {
        sso::write(&mut tx, secrets, sign_in, Some(&slugs), false).await.map_err(at("sign_in"))?;
    }

    for change in &changes {
        let action = match change.action {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        };
        let mut audit = store::Change::new(action, change.kind, &change.name);
        audit.before = change.before.clone();
        audit.after = change.after.clone();
        store::record(&mut *tx, actor, &audit).await?;
    }
    if dry_run {
        // A dry run makes every write the apply would (so it fails exactly when the apply
        // would), and keeps none.
        tx.rollback().await?;
        return Ok(changes);
    }
    store::notify_and_commit(tx, "config").await?;
    Ok(changes)
}
