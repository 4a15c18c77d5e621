//! What upstream servers offer besides tools — prompts, resources, resource templates — as
//! their discovery records it.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::item_overrides::ItemRef;
use super::servers::{self, OnDefinitionChange};
use super::{Actor, Change, Error, Result, commit, sources};
use crate::model::Name;

/// What an item is; a server's items of one kind are told apart by their key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// Keyed by its name.
    Prompt,
    /// Keyed by its URI.
    Resource,
    /// Keyed by its URI template.
    ResourceTemplate,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Prompt => "prompt",
            ItemKind::Resource => "resource",
            ItemKind::ResourceTemplate => "resource_template",
        }
    }

    /// How people read it: "prompt", "resource", "resource template".
    pub fn label(self) -> &'static str {
        match self {
            ItemKind::ResourceTemplate => "resource template",
            kind => kind.as_str(),
        }
    }
}

/// One item: its key and its definition as the server listed it (for a prompt, as pinned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemDefinition {
    pub kind: ItemKind,
    pub key: String,
    pub definition: Value,
    /// A prompt's changed listing, awaiting an owner's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Value>,
    /// Not served: its change awaits approval under the server's `hold` rule, or was rejected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

impl ItemDefinition {
    /// An item as discovery finds it.
    pub fn listed(kind: ItemKind, key: String, definition: Value) -> Self {
        ItemDefinition { kind, key, definition, pending: None, held: false }
    }

    fn label(&self) -> String {
        format!("{} {}", self.kind.as_str(), self.key)
    }
}

/// How a discovery changed a server's items, by kind and key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ItemsReport {
    pub added: Vec<String>,
    /// Resources and templates served as changed.
    pub changed: Vec<String>,
    /// Prompts whose changed listing now awaits approval.
    pub pending: Vec<String>,
    pub removed: Vec<String>,
}

/// A server's items, sorted by kind and key.
pub async fn of_server(db: impl PgExecutor<'_>, source_id: Uuid) -> Result<Vec<ItemDefinition>> {
    Ok(sqlx::query_as!(
        ItemDefinition,
        r#"select kind as "kind: ItemKind", key, definition, pending, held from upstream_item
           where source_id = $1 order by kind, key"#,
        source_id
    )
    .fetch_all(db)
    .await?)
}

/// An item a server lists, as the catalog shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OfferedItem {
    pub item: ItemRef,
    pub description: String,
}

/// Every item every server lists, by server name, kind and key.
pub async fn offered(db: impl PgExecutor<'_>) -> Result<Vec<OfferedItem>> {
    let rows = sqlx::query!(
        r#"select s.name as server, i.kind as "kind: ItemKind", i.key,
                  coalesce(i.definition->>'description', '') as "description!"
           from upstream_item i join source s on s.id = i.source_id order by 1, 3, 4"#
    )
    .fetch_all(db)
    .await?;
    rows.into_iter()
        .map(|r| {
            let item = ItemRef { server: Name::parse(&r.server)?, kind: r.kind, key: r.key };
            Ok(OfferedItem { item, description: r.description })
        })
        .collect()
}

/// The source of `item`'s server, and with `listed` only when the server lists the item; an
/// unknown one is refused as `item`.
pub(crate) async fn source_of(
    db: &mut sqlx::PgConnection,
    item: &ItemRef,
    listed: bool,
) -> Result<sources::Source> {
    let unknown =
        || Error::not_found(format!("{} `{}` of server `{}`", item.kind.label(), item.key, item.server));
    let source = match sources::get(&mut *db, &item.server).await {
        Err(Error::NotFound(_)) => return Err(unknown()),
        found => found?,
    };
    if listed && !is_listed(&mut *db, source.id, item.kind, &item.key).await? {
        return Err(unknown());
    }
    Ok(source)
}

/// Whether the server `source_id` lists the item `key` of `kind` now.
pub(crate) async fn is_listed(
    db: impl PgExecutor<'_>,
    source_id: Uuid,
    kind: ItemKind,
    key: &str,
) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"select exists (select from upstream_item where source_id = $1 and kind = $2 and key = $3) as "listed!""#,
        source_id,
        kind as ItemKind,
        key
    )
    .fetch_one(db)
    .await?)
}

/// Makes `items` (a discovery's) the server's items, pinning prompts: a prompt listed
/// differently from its pin keeps the pin, the new listing pending (the prompt held under the
/// server's `hold` rule), and a pending change is withdrawn when the listing is back at the
/// pin. Nothing is written when nothing changed.
pub async fn record(pool: &PgPool, server: &Name, items: &[ItemDefinition]) -> Result<ItemsReport> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    let hold = servers::row(&mut *tx, source.id).await?.on_definition_change == OnDefinitionChange::Hold;
    let stored = of_server(&mut *tx, source.id).await?;
    let stored_by_key: HashMap<(ItemKind, &str), &ItemDefinition> =
        stored.iter().map(|old| ((old.kind, old.key.as_str()), old)).collect();
    let stored_as = |item: &ItemDefinition| stored_by_key.get(&(item.kind, item.key.as_str())).copied();
    let mut report = ItemsReport::default();
    let mut next = Vec::with_capacity(items.len());
    for item in items {
        next.push(match stored_as(item) {
            None => {
                report.added.push(item.label());
                item.clone()
            }
            // At its pin: a pending change is withdrawn, and the hold it brought with it.
            Some(old) if old.definition == item.definition => {
                ItemDefinition { pending: None, held: old.held && old.pending.is_none(), ..old.clone() }
            }
            Some(old) if item.kind == ItemKind::Prompt => {
                if old.pending.as_ref() != Some(&item.definition) {
                    report.pending.push(item.label());
                }
                ItemDefinition {
                    pending: Some(item.definition.clone()),
                    held: old.held || hold,
                    ..old.clone()
                }
            }
            Some(_) => {
                report.changed.push(item.label());
                item.clone()
            }
        });
    }
    let listed: HashSet<(ItemKind, &str)> = items.iter().map(|item| (item.kind, item.key.as_str())).collect();
    report.removed = stored
        .iter()
        .filter(|old| !listed.contains(&(old.kind, old.key.as_str())))
        .map(ItemDefinition::label)
        .collect();
    let unchanged = report.removed.is_empty() && next.iter().all(|item| stored_as(item) == Some(item));
    if unchanged {
        return Ok(report);
    }
    sqlx::query!("delete from upstream_item where source_id = $1", source.id).execute(&mut *tx).await?;
    for item in &next {
        sqlx::query!(
            "insert into upstream_item (source_id, kind, key, definition, pending, held)
             values ($1, $2, $3, $4, $5, $6)",
            source.id,
            item.kind as ItemKind,
            item.key,
            item.definition,
            item.pending,
            item.held
        )
        .execute(&mut *tx)
        .await?;
    }
    commit(tx, &Actor::system(), Change::new("discovery", "server_items", server).after(&report)).await?;
    Ok(report)
}

/// Serves the prompt `name` of `server` as it is listed now (its pending listing, or the held
/// prompt).
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %server, name))]
pub async fn approve_prompt(pool: &PgPool, actor: &Actor, server: &Name, name: &str) -> Result<()> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    let approved = sqlx::query_scalar!(
        "update upstream_item set definition = coalesce(pending, definition), pending = null, held = false
         where source_id = $1 and kind = 'prompt' and key = $2 returning definition",
        source.id,
        name
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("prompt `{name}` of server `{server}`")))?;
    commit(
        tx,
        actor,
        Change::new("approve_definition", "prompt", format!("{server} {name}")).after(&approved),
    )
    .await
}

/// Rejects the pending listing of the prompt `name` of `server`: the prompt is held (not
/// served) until an owner approves it.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %server, name))]
pub async fn reject_prompt(pool: &PgPool, actor: &Actor, server: &Name, name: &str) -> Result<()> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    // The self-join reads the row as it was before the update: the rejected listing.
    let rejected = sqlx::query_scalar!(
        r#"update upstream_item item set pending = null, held = true from upstream_item before
           where before.source_id = item.source_id and before.kind = item.kind and before.key = item.key
             and item.source_id = $1 and item.kind = 'prompt' and item.key = $2 and item.pending is not null
           returning before.pending as "pending!""#,
        source.id,
        name
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("pending listing of prompt `{name}` of server `{server}`")))?;
    commit(
        tx,
        actor,
        Change::new("reject_definition", "prompt", format!("{server} {name}")).before(&rejected),
    )
    .await
}
