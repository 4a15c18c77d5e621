//! A tenant's choices for one tool: hide it, rename it, describe it differently, fix some of
//! its arguments (presets, secret or not), change its timeout.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::{Actor, Change, Error, Result, commit};
use crate::catalog::naming;
use crate::model::TenantSlug;
use crate::secret::SecretBox;

/// A secret preset as written: a new value to encrypt, or "keep what is stored".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SecretInput {
    /// `{set: true}`: keep the stored value (how exports show secrets).
    Keep {
        set: bool,
    },
    Value(String),
}

/// An override as an admin writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverrideInput {
    pub enabled: Option<bool>,
    /// Exposed name for this tenant instead of the generated one.
    pub name: Option<String>,
    pub description: Option<String>,
    pub timeout_ms: Option<i32>,
    pub presets: Map<String, Value>,
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
    fn stored_secrets(&self) -> Map<String, Value> {
        self.secret_presets.as_object().cloned().unwrap_or_default()
    }

    fn into_override(self) -> Override {
        Override {
            secret_presets: self.stored_secrets().keys().cloned().collect(),
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
        "select tool_id, enabled, exposed_name, description, timeout_ms, presets, secret_presets
         from tool_override where tenant_id = $1 and tool_id = $2",
        tenant_id,
        tool_id
    )
    .fetch_optional(db)
    .await?)
}

pub async fn get(db: &PgPool, slug: &TenantSlug, tool_id: Uuid) -> Result<Option<Override>> {
    let tenant = super::tenants::get(db, slug).await?;
    Ok(fetch(db, tenant.id, tool_id).await?.map(Row::into_override))
}

fn check(input: &OverrideInput) -> Result<()> {
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

/// Sets the tenant's override of a tool. Secret presets are encrypted here; `{set: true}`
/// keeps a stored value, and a secret left out is removed.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, %tool_id))]
pub async fn set(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    slug: &TenantSlug,
    tool_id: Uuid,
    input: &OverrideInput,
) -> Result<Override> {
    check(input)?;
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    let exists = sqlx::query_scalar!("select exists (select from tool where id = $1) as \"e!\"", tool_id)
        .fetch_one(&mut *tx)
        .await?;
    if !exists {
        return Err(Error::NotFound(format!("tool {tool_id}")));
    }
    let before = fetch(&mut *tx, tenant.id, tool_id).await?;
    let stored = before.as_ref().map(Row::stored_secrets).unwrap_or_default();
    let mut sealed = Map::new();
    for (name, value) in &input.secret_presets {
        let value = match value {
            SecretInput::Value(plain) => Value::String(secrets.encrypt(plain)),
            SecretInput::Keep { .. } => stored.get(name).cloned().ok_or_else(|| {
                Error::Invalid(format!("secret preset `{name}` has no stored value to keep"))
            })?,
        };
        sealed.insert(name.clone(), value);
    }
    let row = sqlx::query_as!(
        Row,
        "insert into tool_override
            (tenant_id, tool_id, enabled, exposed_name, description, timeout_ms, presets, secret_presets)
         values ($1, $2, $3, $4, $5, $6, $7, $8)
         on conflict (tenant_id, tool_id) do update set
            enabled = excluded.enabled, exposed_name = excluded.exposed_name,
            description = excluded.description, timeout_ms = excluded.timeout_ms,
            presets = excluded.presets, secret_presets = excluded.secret_presets
         returning tool_id, enabled, exposed_name, description, timeout_ms, presets, secret_presets",
        tenant.id,
        tool_id,
        input.enabled.unwrap_or(true),
        input.name,
        input.description,
        input.timeout_ms,
        Value::Object(input.presets.clone()),
        Value::Object(sealed),
    )
    .fetch_one(&mut *tx)
    .await?;
    let after = row.into_override();
    let change = Change::new("set_override", "tenant", slug);
    let change = match before {
        Some(before) => change.before(&before.into_override()),
        None => change,
    };
    commit(tx, actor, change.after(&after)).await?;
    Ok(after)
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, %tool_id))]
pub async fn clear(pool: &PgPool, actor: &Actor, slug: &TenantSlug, tool_id: Uuid) -> Result<()> {
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    let before = fetch(&mut *tx, tenant.id, tool_id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("override of tool {tool_id} for `{slug}`")))?;
    sqlx::query!("delete from tool_override where tenant_id = $1 and tool_id = $2", tenant.id, tool_id)
        .execute(&mut *tx)
        .await?;
    commit(tx, actor, Change::new("clear_override", "tenant", slug).before(&before.into_override())).await
}
