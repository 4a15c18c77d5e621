//! MCP sessions of the handshake era, shared by the replicas: the key (or the person's grant)
//! that opened each, the
//! `initialize` a replica replays to continue it, and the groups it equipped. A session is
//! written when it opens and when it equips groups; its use is recorded at most every half
//! minute per replica, never per request.

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use uuid::Uuid;

use super::Result;

/// Who opened a session: an API key, or a person through a client they authorized (the
/// grant, which every token refreshed from it continues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOwner {
    Key(Uuid),
    Grant(Uuid),
}

impl SessionOwner {
    pub fn id(self) -> Uuid {
        match self {
            SessionOwner::Key(id) | SessionOwner::Grant(id) => id,
        }
    }
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    /// The id of its key or grant; `None` while the replica that opened it has not bound it yet.
    pub owner: Option<Uuid>,
    /// The client's `initialize` parameters, once the handshake succeeded.
    pub initialize: Option<Value>,
    /// The groups it chose with the meta tool.
    pub equipped: Option<Vec<String>>,
}

pub async fn get(pool: &PgPool, id: &str) -> Result<Option<StoredSession>> {
    Ok(sqlx::query_as!(
        StoredSession,
        "select coalesce(key_id, grant_id) as owner, initialize, equipped from mcp_session where id = $1",
        id
    )
    .fetch_optional(pool)
    .await?)
}

/// Records the handshake of session `id`.
pub async fn save_handshake(pool: &PgPool, id: &str, initialize: &Value) -> Result<()> {
    sqlx::query!(
        "insert into mcp_session (id, initialize) values ($1, $2)
         on conflict (id) do update set initialize = excluded.initialize",
        id,
        initialize
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Binds session `id` to `owner`, unless it has `per_owner` sessions already (on every
/// replica together): `false` then.
pub async fn bind(pool: &PgPool, id: &str, owner: SessionOwner, per_owner: usize) -> Result<bool> {
    let mut tx = pool.begin().await?;
    // The count and the insert are one step for the owner, whichever replica asks.
    sqlx::query!("select pg_advisory_xact_lock(hashtextextended($1::text, 0))", owner.id().to_string())
        .execute(&mut *tx)
        .await?;
    let open = sqlx::query_scalar!(
        r#"select count(*) as "n!" from mcp_session where key_id = $1 or grant_id = $1"#,
        owner.id()
    )
    .fetch_one(&mut *tx)
    .await?;
    if open >= i64::try_from(per_owner).unwrap_or(i64::MAX) {
        return Ok(false);
    }
    let (key, grant) = match owner {
        SessionOwner::Key(key) => (Some(key), None),
        SessionOwner::Grant(grant) => (None, Some(grant)),
    };
    sqlx::query!(
        "insert into mcp_session (id, key_id, grant_id) values ($1, $2, $3)
         on conflict (id) do update set key_id = excluded.key_id, grant_id = excluded.grant_id, seen_at = now()",
        id,
        key,
        grant
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Records the groups session `id` equipped.
pub async fn equip(pool: &PgPool, id: &str, groups: &[String]) -> Result<()> {
    sqlx::query!("update mcp_session set equipped = $2 where id = $1", id, groups).execute(pool).await?;
    Ok(())
}

/// Records that the sessions `ids` were used just now.
pub async fn touch(pool: &PgPool, ids: &[String]) -> Result<()> {
    sqlx::query!("update mcp_session set seen_at = now() where id = any($1)", ids).execute(pool).await?;
    Ok(())
}

/// A connection that hears the id of each session that ends, whichever replica ends it (each
/// row's deletion announces it).
pub async fn listen_ended(pool: &PgPool) -> Result<PgListener> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen("toolgate_mcp_session_ended").await?;
    Ok(listener)
}

/// Those of the sessions `ids` that have not ended.
pub async fn still_open(pool: &PgPool, ids: &[String]) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!("select id from mcp_session where id = any($1)", ids).fetch_all(pool).await?)
}

pub async fn remove(pool: &PgPool, id: &str) -> Result<()> {
    sqlx::query!("delete from mcp_session where id = $1", id).execute(pool).await?;
    Ok(())
}

/// Removes the sessions no replica has used for `idle`.
pub async fn expire(pool: &PgPool, idle: Duration) -> Result<u64> {
    let done = sqlx::query!(
        "delete from mcp_session where seen_at < now() - make_interval(secs => $1)",
        idle.as_secs_f64()
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
