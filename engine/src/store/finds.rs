//! The tools a key or a person's grant found with the search tool of a tenant that lists its
//! tools by search: listed for it and callable by it for [`FOUND_FOR`] after the search that
//! found them, by whichever replica serves it.

use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

use super::Result;

/// How long a tool found stays listed and callable.
pub const FOUND_FOR: Duration = Duration::from_secs(3600);

/// Records that `owner` (a key or a grant) found `tools` of the tenant now.
pub async fn record(pool: &PgPool, tenant_id: Uuid, owner: Uuid, tools: &[String]) -> Result<()> {
    sqlx::query!(
        "insert into tool_find (tenant_id, owner_id, tool) select $1, $2, unnest($3::text[])
         on conflict (tenant_id, owner_id, tool) do update set found_at = now()",
        tenant_id,
        owner,
        tools
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The most tools found that a listing holds: as many as a tenant may pin.
pub const MOST_LISTED: i64 = super::tenants::MAX_PINNED as i64;

/// The tools of the tenant `owner` found within [`FOUND_FOR`], the latest [`MOST_LISTED`].
pub async fn found(pool: &PgPool, tenant_id: Uuid, owner: Uuid) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        "select tool from tool_find
          where tenant_id = $1 and owner_id = $2 and found_at > now() - make_interval(secs => $3)
          order by found_at desc limit $4",
        tenant_id,
        owner,
        FOUND_FOR.as_secs_f64(),
        MOST_LISTED
    )
    .fetch_all(pool)
    .await?)
}

/// Whether `owner` found the tenant's tool `tool` within [`FOUND_FOR`].
pub async fn was_found(pool: &PgPool, tenant_id: Uuid, owner: Uuid, tool: &str) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"select exists (select from tool_find
            where tenant_id = $1 and owner_id = $2 and tool = $3 and found_at > now() - make_interval(secs => $4)) as "found!""#,
        tenant_id,
        owner,
        tool,
        FOUND_FOR.as_secs_f64()
    )
    .fetch_one(pool)
    .await?)
}
