//! Tool groups: named sets of tools, active by default or not, switchable per tenant.

use serde::Serialize;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::item_overrides::ItemRef;
use super::items::ItemKind;
use super::{Actor, Change, Error, Result, commit};
use crate::model::Name;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub active_by_default: bool,
}

pub async fn get(db: impl PgExecutor<'_>, name: &Name) -> Result<Group> {
    sqlx::query_as!(
        Group,
        "select id, name, description, active_by_default from tool_group where name = $1",
        name.as_str()
    )
    .fetch_optional(db)
    .await?
    .ok_or_else(|| Error::not_found(format!("group `{name}`")))
}

pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<Group>> {
    let groups = sqlx::query_as!(
        Group,
        "select id, name, description, active_by_default from tool_group order by name"
    )
    .fetch_all(db)
    .await?;
    Ok(groups)
}

/// Creates the group, or with `replace` updates its description and default if it exists;
/// without it, a group of that name is refused, never changed. Audited.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name))]
pub async fn write(
    pool: &PgPool,
    actor: &Actor,
    name: &Name,
    description: &str,
    active_by_default: bool,
    replace: bool,
) -> Result<Group> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, name).await.ok();
    let group = upsert(&mut *tx, name, description, active_by_default, replace).await?;
    let change = Change::new(if before.is_some() { "update" } else { "create" }, "group", name);
    let change = match &before {
        Some(before) => change.before(before),
        None => change,
    };
    commit(tx, actor, change.after(&group)).await?;
    Ok(group)
}

/// Creates the group, or (with `replace`) updates it, unaudited (the caller's transaction
/// records the change). Without `replace`, an existing group is refused in the same statement.
pub(crate) async fn upsert(
    db: impl PgExecutor<'_>,
    name: &Name,
    description: &str,
    active_by_default: bool,
    replace: bool,
) -> Result<Group> {
    sqlx::query_as!(
        Group,
        "insert into tool_group (name, description, active_by_default) values ($1, $2, $3)
         on conflict (name) do update set
            description = excluded.description, active_by_default = excluded.active_by_default
         where $4
         returning id, name, description, active_by_default",
        name.as_str(),
        description,
        active_by_default,
        replace,
    )
    .fetch_optional(db)
    .await?
    .ok_or_else(|| {
        Error::Conflict(format!("a group named `{name}` exists already: choose Edit on its row to change it"))
    })
}

/// Deletes the group `name` if it exists, unaudited (the caller's transaction records it).
pub(crate) async fn remove(db: impl PgExecutor<'_>, name: &str) -> Result<()> {
    sqlx::query!("delete from tool_group where name = $1", name).execute(db).await?;
    Ok(())
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name))]
pub async fn delete(pool: &PgPool, actor: &Actor, name: &Name) -> Result<()> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, name).await?;
    remove(&mut *tx, name.as_str()).await?;
    commit(tx, actor, Change::new("delete", "group", name).before(&before)).await
}

/// Makes the group's members exactly `tools`.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name, count = tools.len()))]
pub async fn set_members(pool: &PgPool, actor: &Actor, name: &Name, tools: &[Uuid]) -> Result<()> {
    let mut tools = tools.to_vec();
    tools.sort();
    tools.dedup();
    let mut tx = pool.begin().await?;
    let group = get(&mut *tx, name).await?;
    let before = sqlx::query_scalar!(
        "select t.id from tool_group_member m join tool t using (source_id, upstream_name)
         where m.group_id = $1 order by t.id",
        group.id
    )
    .fetch_all(&mut *tx)
    .await?;
    sqlx::query!("delete from tool_group_member where group_id = $1", group.id).execute(&mut *tx).await?;
    let inserted = sqlx::query!(
        "insert into tool_group_member (group_id, source_id, upstream_name)
         select $1, source_id, upstream_name from tool where id = any($2)",
        group.id,
        &tools,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted != tools.len() as u64 {
        return Err(Error::not_found("one of the tools"));
    }
    let change = Change::new("set_members", "group", name).before(&before).after(&tools);
    commit(tx, actor, change).await
}

/// Adds `tools` to the group (a member already there stays); how many were new.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name))]
pub async fn add_members(pool: &PgPool, actor: &Actor, name: &Name, tools: &[Uuid]) -> Result<u64> {
    let mut tx = pool.begin().await?;
    let group = get(&mut *tx, name).await?;
    let known = sqlx::query_scalar!("select count(*) as \"n!\" from tool where id = any($1)", tools)
        .fetch_one(&mut *tx)
        .await?;
    let mut distinct = tools.to_vec();
    distinct.sort();
    distinct.dedup();
    if known != distinct.len() as i64 {
        return Err(Error::not_found("one of the tools"));
    }
    let added = sqlx::query!(
        "insert into tool_group_member (group_id, source_id, upstream_name)
         select $1, source_id, upstream_name from tool where id = any($2) on conflict do nothing",
        group.id,
        &distinct,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if added > 0 {
        commit(tx, actor, Change::new("add_members", "group", name).after(&distinct)).await?;
    }
    Ok(added)
}

/// Every group membership: (group id, source id, the tool's upstream name). A member is named
/// by its source and upstream name, so it may be a tool not discovered yet.
pub(crate) async fn all_members(db: impl PgExecutor<'_>) -> Result<Vec<(Uuid, Uuid, String)>> {
    let rows = sqlx::query!("select group_id, source_id, upstream_name from tool_group_member")
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().map(|r| (r.group_id, r.source_id, r.upstream_name)).collect())
}

/// Makes the group's members exactly `members` (source id, upstream name), unaudited (the
/// caller's transaction records the change).
pub(crate) async fn replace_members(
    tx: &mut sqlx::PgConnection,
    group_id: Uuid,
    members: &[(Uuid, String)],
) -> Result<()> {
    sqlx::query!("delete from tool_group_member where group_id = $1", group_id).execute(&mut *tx).await?;
    for (source_id, upstream) in members {
        sqlx::query!(
            "insert into tool_group_member (group_id, source_id, upstream_name) values ($1, $2, $3)",
            group_id,
            source_id,
            upstream
        )
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// A prompt, resource or template in a group, by its server's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ItemMember {
    pub group_id: Uuid,
    pub source_id: Uuid,
    pub kind: ItemKind,
    pub key: String,
}

/// Every group's prompts, resources and templates.
pub(crate) async fn all_item_members(db: impl PgExecutor<'_>) -> Result<Vec<ItemMember>> {
    Ok(sqlx::query_as!(
        ItemMember,
        r#"select group_id, source_id, kind as "kind: ItemKind", key from item_group_member
           order by group_id, source_id, kind, key"#
    )
    .fetch_all(db)
    .await?)
}

/// Every group's prompts, resources and templates, by group name.
pub async fn item_members(db: impl PgExecutor<'_>) -> Result<Vec<(String, ItemRef)>> {
    let rows = sqlx::query!(
        r#"select g.name as "group", s.name as server, m.kind as "kind: ItemKind", m.key
           from item_group_member m join tool_group g on g.id = m.group_id join source s on s.id = m.source_id
           order by 1, 2, 3, 4"#
    )
    .fetch_all(db)
    .await?;
    rows.into_iter()
        .map(|r| Ok((r.group, ItemRef { server: Name::parse(&r.server)?, kind: r.kind, key: r.key })))
        .collect()
}

/// Makes the group's prompts, resources and templates exactly `items` (each new one of a server
/// that lists it). Audited.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %name, count = items.len()))]
pub async fn set_item_members(pool: &PgPool, actor: &Actor, name: &Name, items: &[ItemRef]) -> Result<()> {
    let mut items = items.to_vec();
    items.sort();
    items.dedup();
    let mut tx = pool.begin().await?;
    let group = get(&mut *tx, name).await?;
    let mut before: Vec<ItemRef> =
        item_members(&mut *tx).await?.into_iter().filter(|(g, _)| *g == group.name).map(|(_, i)| i).collect();
    before.sort();
    let mut members = Vec::with_capacity(items.len());
    for item in &items {
        // A member kept need not be listed now (its server may list it again).
        let source = super::items::source_of(&mut tx, item, before.binary_search(item).is_err()).await?;
        members.push((source.id, item.kind, item.key.clone()));
    }
    replace_item_members(&mut tx, group.id, &members).await?;
    let change = Change::new("set_item_members", "group", name).before(&before).after(&items);
    commit(tx, actor, change).await
}

/// Makes the group's prompts, resources and templates exactly `members` (source id, kind,
/// key), unaudited (the caller's transaction records the change).
pub(crate) async fn replace_item_members(
    tx: &mut sqlx::PgConnection,
    group_id: Uuid,
    members: &[(Uuid, ItemKind, String)],
) -> Result<()> {
    sqlx::query!("delete from item_group_member where group_id = $1", group_id).execute(&mut *tx).await?;
    for (source_id, kind, key) in members {
        sqlx::query!(
            "insert into item_group_member (group_id, source_id, kind, key) values ($1, $2, $3, $4)
             on conflict do nothing",
            group_id,
            source_id,
            *kind as ItemKind,
            key
        )
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}
