//! Tenants: their tag whitelist, meta tool switch, group activations, the owner's ceiling
//! over them (no tag or group beyond it can be chosen) and the owner's limits on their calls.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::types::Json;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::{Actor, Change, Error, Result, commit};
use crate::model::CallLimits;
use crate::model::Ceiling;
use crate::model::{Name, Tag, TenantSlug, tag_strings};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenant {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    /// `None` = the configured default tags; `Some([])` = every tag.
    pub enabled_tags: Option<Vec<String>>,
    pub meta_tool: bool,
    pub ceiling: Ceiling,
    /// The limits on all of the tenant's calls.
    pub limits: CallLimits,
    /// The limits on the calls of single tools, by default exposed name.
    pub tool_limits: BTreeMap<String, CallLimits>,
    /// The limits on each signed-in person's calls (OAuth), like a key's.
    pub user_limits: CallLimits,
    /// Whether the gateway accepts the tenant's API keys.
    pub api_keys: bool,
    /// Whether the gateway accepts access tokens people authorized (OAuth) for the tenant.
    pub oauth: bool,
    /// A disabled tenant is served nothing (an owner's switch; everything else is kept).
    pub enabled: bool,
    /// MCP clients get the portable, normalised schemas (as REST does) instead of the
    /// schemas as their servers published them.
    pub portable_mcp_schemas: bool,
    /// How its tools reach the LLM: all listed, or found by searching.
    pub tool_discovery: ToolDiscovery,
    /// With `search`: the tools listed all the same, by default exposed name.
    pub pinned_tools: Vec<String>,
}

/// How a tenant's tools reach the LLM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolDiscovery {
    /// Every tool is listed.
    #[default]
    List,
    /// The search tool, the pinned tools and those the caller found are listed; the rest are
    /// found with the search tool.
    Search,
}

impl ToolDiscovery {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolDiscovery::List => "list",
            ToolDiscovery::Search => "search",
        }
    }

    pub fn is_list(&self) -> bool {
        *self == ToolDiscovery::List
    }

    fn from_column(value: &str) -> Self {
        if value == "search" { ToolDiscovery::Search } else { ToolDiscovery::List }
    }
}

/// The most tools a tenant may pin: OpenAI takes at most 128 tools in a request.
pub const MAX_PINNED: usize = 128;

/// Why `pinned` cannot be a tenant's pinned tools, if it cannot.
pub fn check_pinned(pinned: &[String]) -> Result<()> {
    if pinned.len() > MAX_PINNED {
        return Err(Error::Invalid(format!(
            "a tenant pins at most {MAX_PINNED} tools; this list has {}",
            pinned.len()
        )));
    }
    match pinned.iter().find(|name| !crate::model::naming::is_valid(name)) {
        Some(name) => Err(Error::Invalid(format!("`{name}` is not a tool name"))),
        None => Ok(()),
    }
}

impl Tenant {
    /// Whether the tenant may use a tool of `source` with `tags`, `owner` being the tenant
    /// that owns the source if one does: its own sources always, another tenant's never, a
    /// shared one when its ceiling admits it.
    pub fn may_use(&self, owner: Option<Uuid>, source: &str, tags: &[String]) -> bool {
        match owner {
            Some(owner) => owner == self.id,
            None => self.ceiling.admits_tool(source, tags),
        }
    }
}

/// A `tenant` row as selected by [`COLUMNS`].
struct Row {
    id: Uuid,
    slug: String,
    name: String,
    enabled_tags: Option<Vec<String>>,
    meta_tool: bool,
    ceiling_tags: Option<Vec<String>>,
    ceiling_sources: Option<Vec<String>>,
    ceiling_groups: Option<Vec<String>>,
    ceiling_shell: bool,
    limits: Json<CallLimits>,
    tool_limits: Json<BTreeMap<String, CallLimits>>,
    user_limits: Json<CallLimits>,
    api_keys_enabled: bool,
    oauth_enabled: bool,
    enabled: bool,
    portable_mcp_schemas: bool,
    tool_discovery: String,
    pinned_tools: Vec<String>,
}

impl From<Row> for Tenant {
    fn from(row: Row) -> Self {
        let ceiling = Ceiling {
            tags: row.ceiling_tags,
            sources: row.ceiling_sources,
            groups: row.ceiling_groups,
            shell: row.ceiling_shell,
        };
        Tenant {
            id: row.id,
            slug: row.slug,
            name: row.name,
            enabled_tags: row.enabled_tags,
            meta_tool: row.meta_tool,
            ceiling,
            limits: row.limits.0,
            tool_limits: row.tool_limits.0,
            user_limits: row.user_limits.0,
            api_keys: row.api_keys_enabled,
            oauth: row.oauth_enabled,
            enabled: row.enabled,
            portable_mcp_schemas: row.portable_mcp_schemas,
            tool_discovery: ToolDiscovery::from_column(&row.tool_discovery),
            pinned_tools: row.pinned_tools,
        }
    }
}

/// What an edit sets; `None` fields stay as they are. Only owners may set `ceiling` and the
/// limits.
#[derive(Debug, Clone, Default)]
pub struct TenantUpdate {
    pub name: Option<String>,
    pub enabled_tags: Option<Option<Vec<Tag>>>,
    pub meta_tool: Option<bool>,
    pub ceiling: Option<Ceiling>,
    pub limits: Option<CallLimits>,
    pub tool_limits: Option<BTreeMap<String, CallLimits>>,
    pub user_limits: Option<CallLimits>,
    pub api_keys: Option<bool>,
    pub oauth: Option<bool>,
    pub enabled: Option<bool>,
    pub portable_mcp_schemas: Option<bool>,
    pub tool_discovery: Option<ToolDiscovery>,
    pub pinned_tools: Option<Vec<String>>,
}

impl TenantUpdate {
    /// Whether it sets anything only an owner may.
    pub fn owners_only(&self) -> bool {
        self.enabled.is_some()
            || self.ceiling.is_some()
            || self.limits.is_some()
            || self.tool_limits.is_some()
            || self.user_limits.is_some()
    }
}

fn check_name(name: &str) -> Result<()> {
    if (1..=200).contains(&name.chars().count()) {
        Ok(())
    } else {
        Err(Error::Invalid("a tenant name is 1 to 200 characters".into()))
    }
}

pub async fn get(db: impl PgExecutor<'_>, slug: &TenantSlug) -> Result<Tenant> {
    sqlx::query_as!(
        Row,
        r#"select id, slug, name, enabled_tags, meta_tool, ceiling_tags, ceiling_sources, ceiling_groups, ceiling_shell,
                limits as "limits: Json<CallLimits>", tool_limits as "tool_limits: Json<BTreeMap<String, CallLimits>>",
                user_limits as "user_limits: Json<CallLimits>", api_keys_enabled, oauth_enabled, enabled, portable_mcp_schemas,
                tool_discovery, pinned_tools
           from tenant where slug = $1"#,
        slug.as_str()
    )
    .fetch_optional(db)
    .await?
    .map(Tenant::from)
    .ok_or_else(|| Error::not_found(format!("tenant `{slug}`")))
}

pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<Tenant>> {
    let rows = sqlx::query_as!(
        Row,
        r#"select id, slug, name, enabled_tags, meta_tool, ceiling_tags, ceiling_sources, ceiling_groups, ceiling_shell,
                limits as "limits: Json<CallLimits>", tool_limits as "tool_limits: Json<BTreeMap<String, CallLimits>>",
                user_limits as "user_limits: Json<CallLimits>", api_keys_enabled, oauth_enabled, enabled, portable_mcp_schemas,
                tool_discovery, pinned_tools
           from tenant order by slug"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Tenant::from).collect())
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug))]
pub async fn create(pool: &PgPool, actor: &Actor, slug: &TenantSlug, name: &str) -> Result<Tenant> {
    check_name(name)?;
    let mut tx = pool.begin().await?;
    let tenant = sqlx::query_as!(
        Row,
        r#"insert into tenant (slug, name) values ($1, $2) on conflict (slug) do nothing
           returning id, slug, name, enabled_tags, meta_tool, ceiling_tags, ceiling_sources, ceiling_groups, ceiling_shell,
                limits as "limits: Json<CallLimits>", tool_limits as "tool_limits: Json<BTreeMap<String, CallLimits>>",
                user_limits as "user_limits: Json<CallLimits>", api_keys_enabled, oauth_enabled, enabled, portable_mcp_schemas,
                tool_discovery, pinned_tools"#,
        slug.as_str(),
        name,
    )
    .fetch_optional(&mut *tx)
    .await?
    .map(Tenant::from)
    .ok_or_else(|| Error::Conflict(format!("a tenant `{slug}` already exists")))?;
    commit(tx, actor, Change::new("create", "tenant", slug).after(&tenant)).await?;
    Ok(tenant)
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug))]
pub async fn update(pool: &PgPool, actor: &Actor, slug: &TenantSlug, update: TenantUpdate) -> Result<Tenant> {
    if let Some(name) = &update.name {
        check_name(name)?;
    }
    if let Some(pinned) = &update.pinned_tools {
        check_pinned(pinned)?;
    }
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, slug).await?;
    // Tags chosen now must be within the ceiling; a narrowed ceiling leaves earlier choices,
    // which the catalog bounds.
    let choosing_tags = update.enabled_tags.is_some();
    let after = Tenant {
        name: update.name.unwrap_or_else(|| before.name.clone()),
        enabled_tags: match update.enabled_tags {
            Some(tags) => tags.as_deref().map(tag_strings),
            None => before.enabled_tags.clone(),
        },
        meta_tool: update.meta_tool.unwrap_or(before.meta_tool),
        ceiling: update.ceiling.unwrap_or_else(|| before.ceiling.clone()),
        limits: update.limits.unwrap_or(before.limits),
        tool_limits: update.tool_limits.unwrap_or_else(|| before.tool_limits.clone()),
        user_limits: update.user_limits.unwrap_or(before.user_limits),
        api_keys: update.api_keys.unwrap_or(before.api_keys),
        oauth: update.oauth.unwrap_or(before.oauth),
        enabled: update.enabled.unwrap_or(before.enabled),
        portable_mcp_schemas: update.portable_mcp_schemas.unwrap_or(before.portable_mcp_schemas),
        tool_discovery: update.tool_discovery.unwrap_or(before.tool_discovery),
        pinned_tools: update.pinned_tools.unwrap_or_else(|| before.pinned_tools.clone()),
        ..before.clone()
    };
    if choosing_tags
        && let Some(tags) = &after.enabled_tags
        && let Some(refusal) = after.ceiling.refuses_tags(tags.iter().map(String::as_str))
    {
        return Err(Error::Invalid(refusal));
    }
    put(&mut *tx, &after).await?;
    commit(tx, actor, Change::new("update", "tenant", slug).before(&before).after(&after)).await?;
    Ok(after)
}

/// Writes every field of `tenant` (but its id) to the tenant of its slug, creating it if
/// needed, unaudited (the caller's transaction records the change); its id.
pub(crate) async fn put(db: impl PgExecutor<'_>, tenant: &Tenant) -> Result<Uuid> {
    let ceiling = &tenant.ceiling;
    let id = sqlx::query_scalar!(
        "insert into tenant (slug, name, enabled_tags, meta_tool, ceiling_tags, ceiling_sources, ceiling_groups, ceiling_shell,
                             limits, tool_limits, user_limits, api_keys_enabled, oauth_enabled, enabled, portable_mcp_schemas,
                             tool_discovery, pinned_tools)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         on conflict (slug) do update set
            name = excluded.name, enabled_tags = excluded.enabled_tags, meta_tool = excluded.meta_tool,
            ceiling_tags = excluded.ceiling_tags, ceiling_sources = excluded.ceiling_sources,
            ceiling_groups = excluded.ceiling_groups, ceiling_shell = excluded.ceiling_shell, limits = excluded.limits, tool_limits = excluded.tool_limits,
            user_limits = excluded.user_limits, api_keys_enabled = excluded.api_keys_enabled,
            oauth_enabled = excluded.oauth_enabled, enabled = excluded.enabled,
            portable_mcp_schemas = excluded.portable_mcp_schemas, tool_discovery = excluded.tool_discovery,
            pinned_tools = excluded.pinned_tools
         returning id",
        tenant.slug,
        tenant.name,
        tenant.enabled_tags.as_deref(),
        tenant.meta_tool,
        ceiling.tags.as_deref(),
        ceiling.sources.as_deref(),
        ceiling.groups.as_deref(),
        ceiling.shell,
        Json(&tenant.limits) as _,
        Json(&tenant.tool_limits) as _,
        Json(&tenant.user_limits) as _,
        tenant.api_keys,
        tenant.oauth,
        tenant.enabled,
        tenant.portable_mcp_schemas,
        tenant.tool_discovery.as_str(),
        &tenant.pinned_tools,
    )
    .fetch_one(db)
    .await?;
    Ok(id)
}

/// Deletes the tenant `slug` if it exists, unaudited (the caller's transaction records it).
pub(crate) async fn remove(db: impl PgExecutor<'_>, slug: &str) -> Result<()> {
    sqlx::query!("delete from tenant where slug = $1", slug).execute(db).await?;
    Ok(())
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug))]
pub async fn delete(pool: &PgPool, actor: &Actor, slug: &TenantSlug) -> Result<()> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, slug).await?;
    remove(&mut *tx, slug.as_str()).await?;
    commit(tx, actor, Change::new("delete", "tenant", slug).before(&before)).await
}

/// A group as one tenant has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupActivation {
    pub group: String,
    pub description: String,
    pub active_by_default: bool,
    /// The tenant's own choice; `None` follows the default.
    pub active: Option<bool>,
}

/// Every group, with whether the tenant overrides its default.
pub async fn group_activations(pool: &PgPool, slug: &TenantSlug) -> Result<Vec<GroupActivation>> {
    let tenant = get(pool, slug).await?;
    Ok(sqlx::query_as!(
        GroupActivation,
        "select g.name as group, g.description, g.active_by_default, tg.active as \"active?\"
         from tool_group g left join tenant_group tg on tg.group_id = g.id and tg.tenant_id = $1
         order by g.name",
        tenant.id
    )
    .fetch_all(pool)
    .await?)
}

/// Sets whether `group` is active for the tenant; `None` returns to the group's default.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, %group))]
pub async fn set_group(
    pool: &PgPool,
    actor: &Actor,
    slug: &TenantSlug,
    group: &Name,
    active: Option<bool>,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let tenant = get(&mut *tx, slug).await?;
    if active == Some(true)
        && let Some(refusal) = tenant.ceiling.refuses_group(group.as_str())
    {
        return Err(Error::Invalid(refusal));
    }
    let group_id = sqlx::query_scalar!("select id from tool_group where name = $1", group.as_str())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| Error::not_found(format!("group `{group}`")))?;
    let before = sqlx::query_scalar!(
        "select active from tenant_group where tenant_id = $1 and group_id = $2",
        tenant.id,
        group_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    match active {
        Some(active) => {
            sqlx::query!(
                "insert into tenant_group (tenant_id, group_id, active) values ($1, $2, $3)
                 on conflict (tenant_id, group_id) do update set active = excluded.active",
                tenant.id,
                group_id,
                active
            )
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query!(
                "delete from tenant_group where tenant_id = $1 and group_id = $2",
                tenant.id,
                group_id
            )
            .execute(&mut *tx)
            .await?;
        }
    }
    let change = Change::new("set_group", "tenant", slug)
        .before(&serde_json::json!({ "group": group, "active": before }))
        .after(&serde_json::json!({ "group": group, "active": active }));
    commit(tx, actor, change).await
}

/// Every tenant's own group choices: (tenant id, group name, active).
pub(crate) async fn all_group_choices(db: impl PgExecutor<'_>) -> Result<Vec<(Uuid, String, bool)>> {
    let rows = sqlx::query!(
        "select tg.tenant_id, g.name, tg.active from tenant_group tg join tool_group g on g.id = tg.group_id"
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.tenant_id, r.name, r.active)).collect())
}

/// Makes the tenant's own group choices exactly `choices`, unaudited (the caller's
/// transaction records the change).
pub(crate) async fn replace_group_choices(
    tx: &mut sqlx::PgConnection,
    tenant_id: Uuid,
    choices: &BTreeMap<Name, bool>,
) -> Result<()> {
    sqlx::query!("delete from tenant_group where tenant_id = $1", tenant_id).execute(&mut *tx).await?;
    for (group, active) in choices {
        sqlx::query!(
            "insert into tenant_group (tenant_id, group_id, active)
             select $1, id, $3 from tool_group where name = $2",
            tenant_id,
            group.as_str(),
            *active
        )
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
