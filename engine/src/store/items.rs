//! What upstream servers offer besides tools — prompts, resources, resource templates — as
//! their discovery records it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::{Actor, Change, Result, commit, sources};
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
}

/// One discovered item: its key and its definition as the server listed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemDefinition {
    pub kind: ItemKind,
    pub key: String,
    pub definition: Value,
}

/// How a discovery changed a server's items, by kind and key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ItemsReport {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
}

impl ItemsReport {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// A server's items, sorted by kind and key.
pub async fn of_server(db: impl PgExecutor<'_>, source_id: Uuid) -> Result<Vec<ItemDefinition>> {
    Ok(sqlx::query_as!(
        ItemDefinition,
        r#"select kind as "kind: ItemKind", key, definition from upstream_item where source_id = $1
           order by kind, key"#,
        source_id
    )
    .fetch_all(db)
    .await?)
}

/// Makes `items` the server's items (a discovery's); nothing is written when they are what is
/// stored already.
pub async fn record(pool: &PgPool, server: &Name, items: &[ItemDefinition]) -> Result<ItemsReport> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    let stored = of_server(&mut *tx, source.id).await?;
    let label = |item: &ItemDefinition| format!("{} {}", item.kind.as_str(), item.key);
    let mut report = ItemsReport::default();
    for item in items {
        match stored.iter().find(|s| s.kind == item.kind && s.key == item.key) {
            None => report.added.push(label(item)),
            Some(old) if old.definition != item.definition => report.changed.push(label(item)),
            Some(_) => {}
        }
    }
    for old in &stored {
        if !items.iter().any(|i| i.kind == old.kind && i.key == old.key) {
            report.removed.push(label(old));
        }
    }
    if report.is_empty() {
        return Ok(report);
    }
    sqlx::query!("delete from upstream_item where source_id = $1", source.id).execute(&mut *tx).await?;
    for item in items {
        sqlx::query!(
            "insert into upstream_item (source_id, kind, key, definition) values ($1, $2, $3, $4)
             on conflict (source_id, kind, key) do update set definition = excluded.definition",
            source.id,
            item.kind as ItemKind,
            item.key,
            item.definition
        )
        .execute(&mut *tx)
        .await?;
    }
    commit(tx, &Actor::system(), Change::new("discovery", "server_items", server).after(&report)).await?;
    Ok(report)
}
