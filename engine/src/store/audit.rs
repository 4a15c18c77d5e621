//! Reading the audit log: who changed what, when, with before/after (secrets were redacted
//! before they were recorded).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;

use super::Result;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEvent {
    pub id: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub actor: String,
    pub action: String,
    pub entity_kind: String,
    pub entity_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Which events to read; `None` fields do not filter.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuditFilter {
    pub entity_kind: Option<String>,
    pub entity_id: Option<String>,
    pub actor: Option<String>,
    /// Only events older than this id (the next page).
    pub before_id: Option<i64>,
    /// At most this many (default 100, at most 1,000).
    pub limit: Option<i64>,
}

/// The newest events matching `filter`, newest first.
pub async fn list(pool: &PgPool, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
    Ok(sqlx::query_as!(
        AuditEvent,
        "select id, at, actor, action, entity_kind, entity_id, before, after from audit_event
         where ($1::text is null or entity_kind = $1) and ($2::text is null or entity_id = $2)
           and ($3::text is null or actor = $3) and ($4::bigint is null or id < $4)
         order by id desc limit $5",
        filter.entity_kind,
        filter.entity_id,
        filter.actor,
        filter.before_id,
        filter.limit.unwrap_or(100).clamp(1, 1000),
    )
    .fetch_all(pool)
    .await?)
}
