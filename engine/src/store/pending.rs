//! Calls of external tools waiting for the result their caller computes.

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::Result;

/// Records a call of `tool_name` waiting for its result, unless the tenant already has `max`
/// waiting (`None`). Suspensions of one tenant take turns, so the cap holds exactly.
pub(crate) async fn suspend(
    pool: &PgPool,
    tenant_id: Uuid,
    tool_name: &str,
    arguments: &Value,
    max: i64,
) -> Result<Option<Uuid>> {
    let mut tx = pool.begin().await?;
    sqlx::query!("select pg_advisory_xact_lock(hashtextextended($1::uuid::text, 0))", tenant_id)
        .execute(&mut *tx)
        .await?;
    let id = sqlx::query_scalar!(
        "insert into pending_call (tenant_id, tool_name, arguments)
         select $1, $2, $3
         where (select count(*) from pending_call where tenant_id = $1 and resolved_at is null) < $4
         returning id",
        tenant_id,
        tool_name,
        arguments,
        max,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// A resolved call: the tool it called and its arguments.
pub(crate) struct Resolved {
    pub tool_name: String,
    pub arguments: Value,
}

/// Stores `result` as the outcome of the tenant's waiting call `id`; `None` when the tenant
/// has no such call waiting (unknown, or already resolved).
pub(crate) async fn resolve(
    pool: &PgPool,
    tenant_id: Uuid,
    id: Uuid,
    result: &Value,
) -> Result<Option<Resolved>> {
    let resolved = sqlx::query_as!(
        Resolved,
        "update pending_call set resolved_at = now(), result = $3
         where id = $1 and tenant_id = $2 and resolved_at is null
         returning tool_name, arguments",
        id,
        tenant_id,
        result,
    )
    .fetch_optional(pool)
    .await?;
    Ok(resolved)
}
