//! A tenant's choices for one tool: hide it, rename it, describe it differently, fix some of
//! its arguments (presets, secret or not), change its timeout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::tenants::Tenant;
use super::{Actor, Change, Error, Result, SecretInput, commit};
use crate::model::TenantSlug;
use crate::model::naming;
use crate::secret::SecretBox;

/// An override as an admin writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverrideInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Exposed name for this tenant instead of the generated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i32>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub presets: Map<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_presets: BTreeMap<String, SecretInput>,
}

/// An override as it is read back: secret values are never returned, only their names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Override {
    pub tool_id: Uuid,
    pub enabled: bool,
    pub name: Option<String>,
    pub description: Option<String>,
    pub timeout_ms: Option<i32>,
    pub presets: Map<String, Value>,
    /// Names of the secret presets that are set.
    pub secret_presets: Vec<String>,
}

struct Row {
    tool_id: Uuid,
    enabled: bool,
    exposed_name: Option<String>,
    description: Option<String>,
    timeout_ms: Option<i32>,
    presets: Value,
    secret_presets: Value,
}

impl Row {
    fn into_override(self) -> Override {
        Override {
            secret_presets: self
                .secret_presets
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect(),
            tool_id: self.tool_id,
            enabled: self.enabled,
            name: self.exposed_name,
            description: self.description,
            timeout_ms: self.timeout_ms,
            presets: self.presets.as_object().cloned().unwrap_or_default(),
        }
    }
}

async fn fetch(db: impl PgExecutor<'_>, tenant_id: Uuid, tool_id: Uuid) -> Result<Option<Row>> {
    Ok(sqlx::query_as!(
        Row,
        "select t.id as tool_id, o.enabled, o.exposed_name, o.description, o.timeout_ms, o.presets,
                o.secret_presets
         from tool_override o join tool t using (source_id, upstream_name)
         where o.tenant_id = $1 and t.id = $2",
        tenant_id,
        tool_id
    )
    .fetch_optional(db)
    .await?)
}

/// The tenant's overrides of tools that exist now.
pub async fn list(db: &PgPool, slug: &TenantSlug) -> Result<Vec<Override>> {
    let tenant = super::tenants::get(db, slug).await?;
    let rows = sqlx::query_as!(
        Row,
        "select t.id as tool_id, o.enabled, o.exposed_name, o.description, o.timeout_ms, o.presets,
                o.secret_presets
         from tool_override o join tool t using (source_id, upstream_name)
         where o.tenant_id = $1 order by t.upstream_name",
        tenant.id
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Row::into_override).collect())
}

pub async fn get(db: &PgPool, slug: &TenantSlug, tool_id: Uuid) -> Result<Option<Override>> {
    let tenant = super::tenants::get(db, slug).await?;
    Ok(fetch(db, tenant.id, tool_id).await?.map(Row::into_override))
}

/// The longest description an override may give, in bytes: what upstream descriptions are cut
/// to by default, as an LLM reads it with every tool list.
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;

fn check(input: &OverrideInput) -> Result<()> {
    if let Some(description) = &input.description
        && description.len() > MAX_DESCRIPTION_BYTES
    {
        return Err(Error::Invalid(format!(
            "a description is at most {MAX_DESCRIPTION_BYTES} bytes, as an LLM reads it with every tool list \
             (this one is {} bytes)",
            description.len()
        )));
    }
    if let Some(name) = &input.name
        && !naming::is_valid(name)
    {
        return Err(Error::Invalid(format!(
            "`{name}` is not a valid tool name (1-64 of A-Z, a-z, 0-9, _, -)"
        )));
    }
    if input.timeout_ms.is_some_and(|t| t <= 0) {
        return Err(Error::Invalid("a timeout is a positive number of milliseconds".into()));
    }
    if let Some(both) = input.presets.keys().find(|k| input.secret_presets.contains_key(*k)) {
        return Err(Error::Invalid(format!("preset `{both}` is given both as plain and as secret")));
    }
    Ok(())
}

/// The input schema the tool `upstream_name` of source `source_id` was published with, which
/// presets must fit; `None` while the tool is not discovered (a configuration document may name
/// one), when presets are taken as written.
async fn published_schema(
    db: impl PgExecutor<'_>,
    source_id: Uuid,
    upstream_name: &str,
) -> Result<Option<Value>> {
    Ok(sqlx::query_scalar!(
        "select input_schema from tool where source_id = $1 and upstream_name = $2",
        source_id,
        upstream_name
    )
    .fetch_optional(db)
    .await?)
}

/// The rule presets must keep against the tool's published schema (`catalog::check_presets`,
/// handed in by the caller: the store only says where the schema is).
pub type PresetsCheck = fn(&Value, &OverrideInput) -> Result<()>;

/// Writes a tenant's override of the tool `upstream_name` of source `source_id` inside the
/// caller's transaction, its presets checked by `presets_fit`. Secret presets are encrypted
/// here; `{set: true}` keeps a stored value, and a secret left out is removed.
pub(crate) async fn write(
    tx: &mut Transaction<'_, Postgres>,
    secrets: &SecretBox,
    tenant_id: Uuid,
    source_id: Uuid,
    upstream_name: &str,
    input: &OverrideInput,
    presets_fit: PresetsCheck,
) -> Result<()> {
    check(input)?;
    if let Some(schema) = published_schema(&mut **tx, source_id, upstream_name).await? {
        presets_fit(&schema, input)?;
    }
    let stored = sqlx::query_scalar!(
        "select secret_presets from tool_override
         where tenant_id = $1 and source_id = $2 and upstream_name = $3",
        tenant_id,
        source_id,
        upstream_name
    )
    .fetch_optional(&mut **tx)
    .await?;
    let stored = stored.as_ref().and_then(Value::as_object);
    let mut sealed = Map::new();
    for (name, value) in &input.secret_presets {
        let kept = stored.and_then(|s| s.get(name)).and_then(Value::as_str);
        sealed.insert(name.clone(), Value::String(value.seal(secrets, name, kept)?));
    }
    sqlx::query!(
        "insert into tool_override (tenant_id, source_id, upstream_name, enabled, exposed_name,
                                    description, timeout_ms, presets, secret_presets)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (tenant_id, source_id, upstream_name) do update set
            enabled = excluded.enabled, exposed_name = excluded.exposed_name,
            description = excluded.description, timeout_ms = excluded.timeout_ms,
            presets = excluded.presets, secret_presets = excluded.secret_presets",
        tenant_id,
        source_id,
        upstream_name,
        input.enabled.unwrap_or(true),
        input.name,
        input.description,
        input.timeout_ms,
        Value::Object(input.presets.clone()),
        Value::Object(sealed),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The tool an override is about, with the name admins know it by.
struct NamedTool {
    source_id: Uuid,
    upstream_name: String,
    /// Its name before any tenant renames it.
    name: String,
}

impl NamedTool {
    /// `value` as the audit log keeps it: with the tool's name, not only its id.
    fn audited(&self, value: &Override) -> Value {
        let mut audited = serde_json::to_value(value).unwrap_or_default();
        if let Some(object) = audited.as_object_mut() {
            object.insert("tool".into(), Value::String(self.name.clone()));
        }
        audited
    }
}

async fn named(tx: &mut Transaction<'_, Postgres>, tool_id: Uuid) -> Result<NamedTool> {
    let row = sqlx::query!(
        "select t.source_id, t.upstream_name, s.prefix from tool t join source s on s.id = t.source_id
         where t.id = $1",
        tool_id
    )
    .fetch_optional(&mut **tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("tool {tool_id}")))?;
    let name = naming::exposed_name(&row.prefix, &row.upstream_name);
    Ok(NamedTool { source_id: row.source_id, upstream_name: row.upstream_name, name })
}

/// Refuses a tool `tenant` may not use (another tenant's, or a shared one beyond its ceiling:
/// see [`Tenant::may_use`]) as [`named`] refuses an unknown one, so the refusal tells nothing
/// of the tool, not even that it exists.
async fn check_usable(db: impl PgExecutor<'_>, tenant: &Tenant, tool_id: Uuid) -> Result<()> {
    let tool: Option<(Option<Uuid>, String, Vec<String>)> = sqlx::query_as(
        "select s.tenant_id, s.name, t.tags || s.tags from tool t join source s on s.id = t.source_id
         where t.id = $1",
    )
    .bind(tool_id)
    .fetch_optional(db)
    .await?;
    match tool {
        Some((owner, source, tags)) if tenant.may_use(owner, &source, &tags) => Ok(()),
        _ => Err(Error::not_found(format!("tool {tool_id}"))),
    }
}

/// Sets the tenant's override of a tool it may use (see [`write`] for presets and secrets).
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, %tool_id))]
pub async fn set(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    slug: &TenantSlug,
    tool_id: Uuid,
    input: &OverrideInput,
    presets_fit: PresetsCheck,
) -> Result<Override> {
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    check_usable(&mut *tx, &tenant, tool_id).await?;
    let tool = named(&mut tx, tool_id).await?;
    let before = fetch(&mut *tx, tenant.id, tool_id).await?;
    write(&mut tx, secrets, tenant.id, tool.source_id, &tool.upstream_name, input, presets_fit).await?;
    let after = fetch(&mut *tx, tenant.id, tool_id).await?.expect("just written").into_override();
    let change = Change::new("set_override", "tenant", slug);
    let change = match before {
        Some(before) => change.before(&tool.audited(&before.into_override())),
        None => change,
    };
    commit(tx, actor, change.after(&tool.audited(&after))).await?;
    Ok(after)
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, %tool_id))]
pub async fn clear(pool: &PgPool, actor: &Actor, slug: &TenantSlug, tool_id: Uuid) -> Result<()> {
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    let tool = named(&mut tx, tool_id).await?;
    let before = fetch(&mut *tx, tenant.id, tool_id)
        .await?
        .ok_or_else(|| Error::not_found(format!("override of tool {tool_id} for `{slug}`")))?;
    sqlx::query!(
        "delete from tool_override o using tool t
         where o.tenant_id = $1 and t.id = $2 and (o.source_id, o.upstream_name) = (t.source_id, t.upstream_name)",
        tenant.id,
        tool_id
    )
    .execute(&mut *tx)
    .await?;
    let change = Change::new("clear_override", "tenant", slug).before(&tool.audited(&before.into_override()));
    commit(tx, actor, change).await
}

/// An override as stored, named by its source and upstream name (the tool may not be
/// discovered yet); secret presets sealed.
pub(crate) struct StoredOverride {
    pub tenant_id: Uuid,
    /// `None` while the tool is not discovered.
    pub tool_id: Option<Uuid>,
    pub source_id: Uuid,
    pub upstream_name: String,
    pub enabled: bool,
    pub exposed_name: Option<String>,
    pub description: Option<String>,
    pub timeout_ms: Option<i32>,
    pub presets: Value,
    pub secret_presets: Value,
}

/// Every tenant's overrides.
pub(crate) async fn all(db: impl PgExecutor<'_>) -> Result<Vec<StoredOverride>> {
    let rows = sqlx::query_as!(
        StoredOverride,
        r#"select o.tenant_id, t.id as "tool_id?", o.source_id, o.upstream_name, o.enabled, o.exposed_name,
                  o.description, o.timeout_ms, o.presets, o.secret_presets
           from tool_override o left join tool t using (source_id, upstream_name)"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows)
}

/// Deletes the tenant's overrides of every tool but `kept` (source id, upstream name),
/// unaudited (the caller's transaction records the change).
pub(crate) async fn retain(db: impl PgExecutor<'_>, tenant_id: Uuid, kept: &[(Uuid, String)]) -> Result<()> {
    let (sources, names): (Vec<Uuid>, Vec<String>) = kept.iter().cloned().unzip();
    sqlx::query!(
        "delete from tool_override o
         where tenant_id = $1
           and not exists (select from unnest($2::uuid[], $3::text[]) k (source_id, upstream_name)
                           where (k.source_id, k.upstream_name) = (o.source_id, o.upstream_name))",
        tenant_id,
        &sources,
        &names
    )
    .execute(db)
    .await?;
    Ok(())
}
