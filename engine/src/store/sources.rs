//! Tool sources (built-in providers, MCP servers, external schema-only tools) and their tools.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{Actor, Change, Error, Result, commit};
use crate::model::{Name, SourceKind, Tag, TenantSlug, check_prefix, tag_strings};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub id: Uuid,
    pub kind: SourceKind,
    pub name: String,
    pub prefix: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// `None` = shared by every tenant.
    pub tenant_id: Option<Uuid>,
}

#[derive(Debug, Clone)]
pub struct NewSource {
    pub kind: SourceKind,
    pub name: Name,
    pub prefix: String,
    pub tags: Vec<Tag>,
    /// The owning tenant, or `None` for a shared source.
    pub tenant: Option<TenantSlug>,
}

/// A tool as its source defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub upstream_name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
    #[serde(default)]
    pub output_schema: Option<Value>,
    #[serde(default = "empty_object")]
    pub annotations: Value,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub strict: bool,
    #[serde(default)]
    pub timeout_ms: Option<i32>,
    /// What hosts read to show the tool's app (MCP Apps): the part of its `_meta` Toolgate
    /// keeps (see `catalog::apps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

fn empty_object() -> Value {
    json!({})
}

impl ToolDefinition {
    /// Hash of what an LLM and its host are told about the tool (description, schemas,
    /// annotations, and the app it opens if it has one): the value pinned against tool
    /// poisoning.
    pub fn definition_hash(&self) -> String {
        // serde_json's maps are ordered, so equal definitions serialise equally. A tool
        // without an app hashes as before apps were kept.
        let mut canonical =
            json!([self.description, self.input_schema, self.output_schema, self.annotations]);
        if let (Some(meta), Value::Array(parts)) = (&self.meta, &mut canonical) {
            parts.push(meta.clone());
        }
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn check(&self) -> Result<()> {
        if !(1..=512).contains(&self.upstream_name.len()) {
            return Err(Error::Invalid("a tool name is 1 to 512 bytes".into()));
        }
        if !self.input_schema.is_object() {
            return Err(Error::Invalid(format!(
                "tool `{}`: the input schema must be a JSON object",
                self.upstream_name
            )));
        }
        if self.output_schema.as_ref().is_some_and(|s| !s.is_object()) {
            return Err(Error::Invalid(format!(
                "tool `{}`: the output schema must be a JSON object",
                self.upstream_name
            )));
        }
        if self.timeout_ms.is_some_and(|t| t <= 0) {
            return Err(Error::Invalid("a timeout is a positive number of milliseconds".into()));
        }
        crate::model::parse_tags(&self.tags)?;
        Ok(())
    }
}

struct SourceRow {
    id: Uuid,
    kind: SourceKind,
    name: String,
    prefix: String,
    tags: Vec<String>,
    enabled: bool,
    tenant_id: Option<Uuid>,
}

impl From<SourceRow> for Source {
    fn from(r: SourceRow) -> Self {
        Source {
            id: r.id,
            kind: r.kind,
            name: r.name,
            prefix: r.prefix,
            tags: r.tags,
            enabled: r.enabled,
            tenant_id: r.tenant_id,
        }
    }
}

pub async fn get(db: impl PgExecutor<'_>, name: &Name) -> Result<Source> {
    sqlx::query_as!(
        SourceRow,
        r#"select id, kind as "kind: SourceKind", name, prefix, tags, enabled, tenant_id from source where name = $1"#,
        name.as_str()
    )
    .fetch_optional(db)
    .await?
    .map(Source::from)
    .ok_or_else(|| Error::not_found(format!("source `{name}`")))
}

pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<Source>> {
    let rows = sqlx::query_as!(
        SourceRow,
        r#"select id, kind as "kind: SourceKind", name, prefix, tags, enabled, tenant_id from source order by name"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(Source::from).collect())
}

/// Inserts a source inside the caller's transaction.
pub(super) async fn insert(tx: &mut Transaction<'_, Postgres>, new: &NewSource) -> Result<Source> {
    check_prefix(&new.prefix)?;
    let tenant_id = match &new.tenant {
        Some(slug) => Some(super::tenants::get(&mut **tx, slug).await?.id),
        None => None,
    };
    Ok(sqlx::query_as!(
        SourceRow,
        r#"insert into source (kind, name, prefix, tags, tenant_id) values ($1, $2, $3, $4, $5)
         on conflict (name) do nothing
         returning id, kind as "kind: SourceKind", name, prefix, tags, enabled, tenant_id"#,
        new.kind as SourceKind,
        new.name.as_str(),
        new.prefix,
        &tag_strings(&new.tags),
        tenant_id,
    )
    .fetch_optional(&mut **tx)
    .await?
    .ok_or_else(|| Error::Conflict(format!("a source named `{}` already exists", new.name)))?
    .into())
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), name = %new.name))]
pub async fn create(pool: &PgPool, actor: &Actor, new: &NewSource) -> Result<Source> {
    let mut tx = pool.begin().await?;
    let source = insert(&mut tx, new).await?;
    commit(tx, actor, Change::new("create", "source", &new.name).after(&source)).await?;
    Ok(source)
}

/// Inserts or updates a tool of a source inside the caller's transaction. `held` applies to
/// a new tool only; an existing tool keeps its pinning state.
pub(super) async fn upsert_tool(
    tx: &mut Transaction<'_, Postgres>,
    source_id: Uuid,
    tool: &ToolDefinition,
    held: bool,
) -> Result<Uuid> {
    tool.check()?;
    Ok(sqlx::query_scalar!(
        "insert into tool (source_id, upstream_name, description, input_schema, output_schema,
                           annotations, tags, strict, timeout_ms, definition_hash, held, meta)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         on conflict (source_id, upstream_name) do update set
            description = excluded.description, input_schema = excluded.input_schema,
            output_schema = excluded.output_schema, annotations = excluded.annotations,
            tags = excluded.tags, strict = excluded.strict, timeout_ms = excluded.timeout_ms,
            definition_hash = excluded.definition_hash, meta = excluded.meta
         returning id",
        source_id,
        tool.upstream_name,
        tool.description,
        tool.input_schema,
        tool.output_schema,
        tool.annotations,
        &tag_strings(&crate::model::parse_tags(&tool.tags)?),
        tool.strict,
        tool.timeout_ms,
        tool.definition_hash(),
        held,
        tool.meta,
    )
    .fetch_one(&mut **tx)
    .await?)
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name, enabled))]
pub async fn set_enabled(pool: &PgPool, actor: &Actor, name: &Name, enabled: bool) -> Result<()> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, name).await?;
    sqlx::query!("update source set enabled = $2 where id = $1", before.id, enabled)
        .execute(&mut *tx)
        .await?;
    let after = Source { enabled, ..before.clone() };
    commit(tx, actor, Change::new("update", "source", name).before(&before).after(&after)).await
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name))]
pub async fn delete(pool: &PgPool, actor: &Actor, name: &Name) -> Result<()> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, name).await?;
    remove(&mut *tx, before.id).await?;
    commit(tx, actor, Change::new("delete", "source", name).before(&before)).await
}

/// Makes the source's tools exactly `tools`: new ones are added, changed ones updated,
/// missing ones removed. Returns the ids of the tools, in the order given.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %source, count = tools.len()))]
pub async fn sync_tools(
    pool: &PgPool,
    actor: &Actor,
    source: &Name,
    tools: &[ToolDefinition],
) -> Result<Vec<Uuid>> {
    let mut tx = pool.begin().await?;
    let source_row = get(&mut *tx, source).await?;
    let mut ids = Vec::with_capacity(tools.len());
    for tool in tools {
        ids.push(upsert_tool(&mut tx, source_row.id, tool, false).await?);
    }
    let removed = sqlx::query_scalar!(
        "delete from tool where source_id = $1 and not (id = any($2)) returning upstream_name",
        source_row.id,
        &ids,
    )
    .fetch_all(&mut *tx)
    .await?;
    let names: Vec<&str> = tools.iter().map(|t| t.upstream_name.as_str()).collect();
    let change =
        Change::new("sync_tools", "source", source).after(&json!({ "tools": names, "removed": removed }));
    commit(tx, actor, change).await?;
    Ok(ids)
}

/// Each tool of the source by upstream name, with its definition hash.
pub async fn tool_hashes(
    db: impl PgExecutor<'_>,
    source: &Name,
) -> Result<std::collections::HashMap<String, String>> {
    let rows = sqlx::query!(
        "select t.upstream_name, t.definition_hash from tool t join source s on s.id = t.source_id where s.name = $1",
        source.as_str()
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.upstream_name, r.definition_hash)).collect())
}

/// A tool as the catalog lists it to administrators.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRecord {
    pub id: Uuid,
    pub source: String,
    pub source_kind: SourceKind,
    pub source_enabled: bool,
    pub upstream_name: String,
    /// The name tenants see unless an override renames it.
    pub exposed_name: String,
    pub description: String,
    /// The tool's own tags and its source's.
    pub tags: Vec<String>,
    /// Not served: a new or changed definition awaits approval.
    pub held: bool,
    /// A changed upstream definition awaits approval.
    pub pending: bool,
    pub groups: Vec<String>,
    /// The tenant that owns the tool's source; `None`: shared.
    pub tenant_id: Option<Uuid>,
}

/// Every tool of every source, by exposed name.
pub async fn tools(pool: &PgPool) -> Result<Vec<ToolRecord>> {
    tools_where(pool, None).await
}

/// The tools of the source named `source`, by exposed name.
pub async fn tools_of(pool: &PgPool, source: &Name) -> Result<Vec<ToolRecord>> {
    tools_where(pool, Some(source.as_str())).await
}

async fn tools_where(pool: &PgPool, source: Option<&str>) -> Result<Vec<ToolRecord>> {
    let rows = sqlx::query!(
        r#"select t.id, s.name as source, s.kind as "kind: SourceKind", s.enabled, s.prefix, s.tenant_id, t.upstream_name, t.description,
                  array(select distinct unnest(t.tags || s.tags) order by 1) as "tags!",
                  t.held, exists (select from tool_pending_definition p where p.tool_id = t.id) as "pending!",
                  array(select g.name from tool_group_member m join tool_group g on g.id = m.group_id
                        where (m.source_id, m.upstream_name) = (t.source_id, t.upstream_name)
                        order by g.name) as "groups!"
           from tool t join source s on s.id = t.source_id
          where $1::text is null or s.name = $1"#,
        source
    )
    .fetch_all(pool)
    .await?;
    let mut tools: Vec<ToolRecord> = rows
        .into_iter()
        .map(|r| ToolRecord {
            exposed_name: crate::model::naming::exposed_name(&r.prefix, &r.upstream_name),
            id: r.id,
            source: r.source,
            source_kind: r.kind,
            source_enabled: r.enabled,
            upstream_name: r.upstream_name,
            description: r.description,
            tags: r.tags,
            held: r.held,
            pending: r.pending,
            groups: r.groups,
            tenant_id: r.tenant_id,
        })
        .collect();
    tools.sort_by(|a, b| a.exposed_name.cmp(&b.exposed_name));
    Ok(tools)
}

/// Deletes the source `id` with its tools, unaudited (the caller's transaction records it).
pub(crate) async fn remove(db: impl PgExecutor<'_>, id: Uuid) -> Result<()> {
    sqlx::query!("delete from source where id = $1", id).execute(db).await?;
    Ok(())
}

/// A source with one of its tools, or with none (`upstream_name: None`) when it has none.
pub(crate) struct SourceTool {
    pub source_id: Uuid,
    pub tenant_id: Option<Uuid>,
    pub prefix: String,
    pub kind: SourceKind,
    pub upstream_name: Option<String>,
}

/// Every source with each of its tools.
pub(crate) async fn with_tools(db: impl PgExecutor<'_>) -> Result<Vec<SourceTool>> {
    let rows = sqlx::query_as!(
        SourceTool,
        r#"select s.id as "source_id!", s.tenant_id, s.prefix as "prefix!", s.kind as "kind!: SourceKind",
                  t.upstream_name as "upstream_name?"
           from source s left join tool t on t.source_id = s.id"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows)
}
