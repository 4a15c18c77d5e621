//! What a server publishes, pinned against tool poisoning: a changed description or schema
//! waits for an admin's approval while the pinned definition is served (or the tool is held).

use std::collections::HashMap;

use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use super::{OnDefinitionChange, row};
use crate::model::Name;
use crate::store::sources::{self, ToolDefinition};
use crate::store::{Actor, Change, Error, Result, commit};

/// What a discovery changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiscoveryReport {
    pub added: Vec<String>,
    /// Tools whose upstream definition differs from the pinned one (now pending approval).
    pub changed: Vec<String>,
    /// Tools whose pending change was withdrawn upstream: back at their pin, served again.
    pub released: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
}

/// Records what a server publishes now, applying pinning: the first discovery pins every
/// tool; later, a new tool is held unless the server serves new tools unreviewed, a changed
/// definition becomes pending (and the tool is held under `hold`), a pending change that
/// returns to the pin is withdrawn, and vanished tools are removed.
#[tracing::instrument(skip_all, err, fields(%server, count = tools.len()))]
pub async fn record_discovery(
    pool: &PgPool,
    server: &Name,
    tools: &[ToolDefinition],
) -> Result<DiscoveryReport> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    let settings = row(&mut *tx, source.id).await?;
    let hold_changes = settings.on_definition_change == OnDefinitionChange::Hold;
    let existing: HashMap<String, (Uuid, String)> =
        sqlx::query!("select id, upstream_name, definition_hash from tool where source_id = $1", source.id)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.upstream_name, (r.id, r.definition_hash)))
            .collect();
    let first_discovery = existing.is_empty();
    let mut report = DiscoveryReport::default();
    for tool in tools {
        let hash = tool.definition_hash();
        match existing.get(&tool.upstream_name) {
            None => {
                let held = !(first_discovery || settings.new_tools_enabled);
                sources::upsert_tool(&mut tx, source.id, tool, held).await?;
                report.added.push(tool.upstream_name.clone());
            }
            Some((id, pinned)) if *pinned == hash => {
                let released = sqlx::query!("delete from tool_pending_definition where tool_id = $1", id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if released > 0 {
                    sqlx::query!("update tool set held = false where id = $1", id).execute(&mut *tx).await?;
                    report.released.push(tool.upstream_name.clone());
                } else {
                    report.unchanged += 1;
                }
            }
            Some((id, _)) => {
                let definition = serde_json::to_value(tool).expect("definitions serialise");
                sqlx::query!(
                    "insert into tool_pending_definition (tool_id, definition, definition_hash) values ($1, $2, $3)
                     on conflict (tool_id) do update set
                        definition = excluded.definition, definition_hash = excluded.definition_hash, seen_at = now()",
                    id,
                    definition,
                    hash
                )
                .execute(&mut *tx)
                .await?;
                sqlx::query!("update tool set held = $2 where id = $1", id, hold_changes)
                    .execute(&mut *tx)
                    .await?;
                report.changed.push(tool.upstream_name.clone());
            }
        }
    }
    let published: Vec<&str> = tools.iter().map(|t| t.upstream_name.as_str()).collect();
    for (name, (id, _)) in &existing {
        if !published.contains(&name.as_str()) {
            sqlx::query!("delete from tool where id = $1", id).execute(&mut *tx).await?;
            report.removed.push(name.clone());
        }
    }
    if report == (DiscoveryReport { unchanged: existing.len(), ..Default::default() }) {
        // Nothing changed: no audit event, no reload.
        return Ok(report);
    }
    commit(tx, &Actor::system(), Change::new("discovery", "server", server).after(&report)).await?;
    Ok(report)
}

/// A definition waiting for approval, next to the pinned one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingChange {
    pub tool_id: Uuid,
    pub upstream_name: String,
    pub pinned: ToolDefinition,
    pub pending: ToolDefinition,
}

pub async fn pending_changes(pool: &PgPool, server: &Name) -> Result<Vec<PendingChange>> {
    let rows = sqlx::query!(
        "select t.id, t.upstream_name, t.description, t.input_schema, t.output_schema, t.annotations,
                t.tags, t.strict, t.timeout_ms, t.meta, p.definition
         from tool_pending_definition p join tool t on t.id = p.tool_id join source s on s.id = t.source_id
         where s.name = $1 order by t.upstream_name",
        server.as_str()
    )
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let pending: ToolDefinition = serde_json::from_value(r.definition)
                .map_err(|err| Error::Invalid(format!("stored pending definition is unreadable: {err}")))?;
            let pinned = ToolDefinition {
                upstream_name: r.upstream_name.clone(),
                description: r.description,
                input_schema: r.input_schema,
                output_schema: r.output_schema,
                annotations: r.annotations,
                tags: r.tags,
                strict: r.strict,
                timeout_ms: r.timeout_ms,
                meta: r.meta,
            };
            Ok(PendingChange { tool_id: r.id, upstream_name: r.upstream_name, pinned, pending })
        })
        .collect()
}

/// Approves a tool: a pending definition becomes the pinned one; a held tool is served.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %tool_id))]
pub async fn approve(pool: &PgPool, actor: &Actor, tool_id: Uuid) -> Result<()> {
    let mut tx = pool.begin().await?;
    let pending =
        sqlx::query!("delete from tool_pending_definition where tool_id = $1 returning definition", tool_id)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some(pending) = &pending {
        let definition: ToolDefinition = serde_json::from_value(pending.definition.clone())
            .map_err(|err| Error::Invalid(format!("stored pending definition is unreadable: {err}")))?;
        sqlx::query!(
            "update tool set description = $2, input_schema = $3, output_schema = $4, annotations = $5,
                             definition_hash = $6, meta = $7
             where id = $1",
            tool_id,
            definition.description,
            definition.input_schema,
            definition.output_schema,
            definition.annotations,
            definition.definition_hash(),
            definition.meta,
        )
        .execute(&mut *tx)
        .await?;
    }
    let found = sqlx::query!("update tool set held = false where id = $1", tool_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if found == 0 {
        return Err(Error::not_found(format!("tool {tool_id}")));
    }
    let change = Change::new("approve_definition", "tool", tool_id).after(&pending.map(|p| p.definition));
    commit(tx, actor, change).await
}

/// Rejects a pending definition: the tool is held (not served) until an admin approves it.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %tool_id))]
pub async fn reject(pool: &PgPool, actor: &Actor, tool_id: Uuid) -> Result<()> {
    let mut tx = pool.begin().await?;
    let removed =
        sqlx::query!("delete from tool_pending_definition where tool_id = $1 returning definition", tool_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| Error::not_found(format!("pending definition of tool {tool_id}")))?;
    sqlx::query!("update tool set held = true where id = $1", tool_id).execute(&mut *tx).await?;
    let change = Change::new("reject_definition", "tool", tool_id).before(&removed.definition);
    commit(tx, actor, change).await
}
