//! A tenant's choices for one prompt, resource or resource template of a server: hide it,
//! give a prompt another name, describe it differently. An item is named by its server and its
//! own key (a prompt's name, a URI, a URI template), so that a choice can pick one of two
//! servers offering the same URI and survives a change of the server's prefix; the
//! configuration document may name an item not discovered yet, the admin API and the panel
//! only one its server lists.

use serde::{Deserialize, Serialize};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::items::ItemKind;
use super::overrides::MAX_DESCRIPTION_BYTES;
use super::tenants::Tenant;
use super::{Actor, Change, Error, Result, commit};
use crate::model::naming;
use crate::model::{Name, TenantSlug};

/// A choice as an admin writes it (and the configuration document keeps it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ItemOverrideInput {
    /// `false` hides the item from the tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A prompt's name for this tenant instead of `<prefix>_<name>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ItemOverrideInput {
    /// What is wrong with this choice for an item of `kind`, if anything.
    pub fn check(&self, kind: ItemKind) -> Result<()> {
        if let Some(name) = &self.name {
            if kind != ItemKind::Prompt {
                return Err(Error::Invalid(format!(
                    "only a prompt takes another name: a {}'s URI is how clients read it",
                    kind.label()
                )));
            }
            if !naming::is_valid(name) {
                return Err(Error::Invalid(format!(
                    "`{name}` is not a valid prompt name (1-64 of A-Z, a-z, 0-9, _, -)"
                )));
            }
        }
        match &self.description {
            Some(description) if description.len() > MAX_DESCRIPTION_BYTES => Err(Error::Invalid(format!(
                "a description is at most {MAX_DESCRIPTION_BYTES} bytes (this one is {} bytes)",
                description.len()
            ))),
            _ => Ok(()),
        }
    }
}

/// Which item: its server, its kind and its own key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemRef {
    pub server: Name,
    pub kind: ItemKind,
    pub key: String,
}

/// A choice as it is read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemOverride {
    pub server: String,
    pub kind: ItemKind,
    pub key: String,
    pub enabled: bool,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// A choice as stored, for a catalog rebuild and the configuration document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredItemOverride {
    pub tenant_id: Uuid,
    pub source_id: Uuid,
    pub kind: ItemKind,
    pub key: String,
    pub enabled: bool,
    pub exposed_name: Option<String>,
    pub description: Option<String>,
}

/// Every tenant's choices.
pub(crate) async fn all(db: impl PgExecutor<'_>) -> Result<Vec<StoredItemOverride>> {
    Ok(sqlx::query_as!(
        StoredItemOverride,
        r#"select tenant_id, source_id, kind as "kind: ItemKind", key, enabled, exposed_name, description
           from item_override order by tenant_id, source_id, kind, key"#
    )
    .fetch_all(db)
    .await?)
}

async fn fetch(
    db: impl PgExecutor<'_>,
    tenant_id: Uuid,
    source_id: Uuid,
    item: &ItemRef,
) -> Result<Option<ItemOverride>> {
    Ok(sqlx::query_as!(
        ItemOverride,
        r#"select s.name as server, o.kind as "kind: ItemKind", o.key, o.enabled, o.exposed_name as name, o.description
           from item_override o join source s on s.id = o.source_id
           where o.tenant_id = $1 and o.source_id = $2 and o.kind = $3 and o.key = $4"#,
        tenant_id,
        source_id,
        item.kind as ItemKind,
        item.key
    )
    .fetch_optional(db)
    .await?)
}

/// The tenant's choices, by server, kind and key.
pub async fn list(db: &PgPool, slug: &TenantSlug) -> Result<Vec<ItemOverride>> {
    let tenant = super::tenants::get(db, slug).await?;
    Ok(sqlx::query_as!(
        ItemOverride,
        r#"select s.name as server, o.kind as "kind: ItemKind", o.key, o.enabled, o.exposed_name as name, o.description
           from item_override o join source s on s.id = o.source_id
           where o.tenant_id = $1 order by s.name, o.kind, o.key"#,
        tenant.id
    )
    .fetch_all(db)
    .await?)
}

/// Writes a tenant's choice for the item `key` of `kind` of source `source_id` inside the
/// caller's transaction.
pub(crate) async fn write(
    db: impl PgExecutor<'_>,
    tenant_id: Uuid,
    source_id: Uuid,
    kind: ItemKind,
    key: &str,
    input: &ItemOverrideInput,
) -> Result<()> {
    input.check(kind)?;
    sqlx::query!(
        "insert into item_override (tenant_id, source_id, kind, key, enabled, exposed_name, description)
         values ($1, $2, $3, $4, $5, $6, $7)
         on conflict (tenant_id, source_id, kind, key) do update set
            enabled = excluded.enabled, exposed_name = excluded.exposed_name, description = excluded.description",
        tenant_id,
        source_id,
        kind as ItemKind,
        key,
        input.enabled.unwrap_or(true),
        input.name,
        input.description,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes the tenant's choices for every item but `kept` (source id, kind, key), unaudited
/// (the caller's transaction records the change).
pub(crate) async fn retain(
    db: impl PgExecutor<'_>,
    tenant_id: Uuid,
    kept: &[(Uuid, ItemKind, String)],
) -> Result<()> {
    let sources: Vec<Uuid> = kept.iter().map(|(source, ..)| *source).collect();
    let kinds: Vec<String> = kept.iter().map(|(_, kind, _)| kind.as_str().to_string()).collect();
    let keys: Vec<String> = kept.iter().map(|(.., key)| key.clone()).collect();
    sqlx::query!(
        "delete from item_override o
         where tenant_id = $1
           and not exists (select from unnest($2::uuid[], $3::text[], $4::text[]) k (source_id, kind, key)
                           where (k.source_id, k.kind, k.key) = (o.source_id, o.kind, o.key))",
        tenant_id,
        &sources,
        &kinds,
        &keys
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The source of `item` when `tenant` may use its server (and with `listed`, when the server
/// lists the item); refused alike when the server is another tenant's or beyond the ceiling,
/// so that the refusal tells nothing of it.
async fn usable(
    tx: &mut Transaction<'_, Postgres>,
    tenant: &Tenant,
    item: &ItemRef,
    listed: bool,
) -> Result<Uuid> {
    let source = super::items::source_of(tx, item, listed).await?;
    if !tenant.may_use(source.tenant_id, &source.name, &source.tags) {
        return Err(Error::not_found(format!(
            "{} `{}` of server `{}`",
            item.kind.label(),
            item.key,
            item.server
        )));
    }
    Ok(source.id)
}

/// Sets the tenant's choice for an item of a server it may use.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, server = %item.server, key = item.key))]
pub async fn set(
    pool: &PgPool,
    actor: &Actor,
    slug: &TenantSlug,
    item: &ItemRef,
    input: &ItemOverrideInput,
) -> Result<ItemOverride> {
    input.check(item.kind)?;
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    let source_id = usable(&mut tx, &tenant, item, true).await?;
    let before = fetch(&mut *tx, tenant.id, source_id, item).await?;
    write(&mut *tx, tenant.id, source_id, item.kind, &item.key, input).await?;
    let after = fetch(&mut *tx, tenant.id, source_id, item).await?.expect("just written");
    let change = Change::new("set_item_override", "tenant", slug).after(&after);
    let change = match &before {
        Some(before) => change.before(before),
        None => change,
    };
    commit(tx, actor, change).await?;
    Ok(after)
}

/// Removes the tenant's choice for an item: it is served as its server lists it.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %slug, server = %item.server, key = item.key))]
pub async fn clear(pool: &PgPool, actor: &Actor, slug: &TenantSlug, item: &ItemRef) -> Result<()> {
    let mut tx = pool.begin().await?;
    let tenant = super::tenants::get(&mut *tx, slug).await?;
    let missing = || {
        Error::not_found(format!(
            "choice for {} `{}` of server `{}`",
            item.kind.label(),
            item.key,
            item.server
        ))
    };
    let source_id = match usable(&mut tx, &tenant, item, false).await {
        Err(Error::NotFound(_)) => return Err(missing()),
        found => found?,
    };
    let before = fetch(&mut *tx, tenant.id, source_id, item).await?.ok_or_else(missing)?;
    sqlx::query!(
        "delete from item_override where tenant_id = $1 and source_id = $2 and kind = $3 and key = $4",
        tenant.id,
        source_id,
        item.kind as ItemKind,
        item.key
    )
    .execute(&mut *tx)
    .await?;
    commit(tx, actor, Change::new("clear_item_override", "tenant", slug).before(&before)).await
}
