//! Reading the audit log: who changed what, when, with before/after (secrets were redacted
//! before they were recorded).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;

use super::Result;
use crate::diff::{FieldChange, field_changes};

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

impl AuditEvent {
    /// The fields the event changed (see [`field_changes`]).
    pub fn changes(&self) -> Vec<FieldChange> {
        field_changes(self.before.as_ref(), self.after.as_ref())
    }
}

/// Which events to read; `None` fields do not filter.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuditFilter {
    pub entity_kind: Option<String>,
    pub entity_id: Option<String>,
    /// The actor exactly (`admin:alice`, `token:ci`).
    pub actor: Option<String>,
    /// Actors containing this, in any case (`alice`).
    pub actor_contains: Option<String>,
    /// Only events at or after this time (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub since: Option<time::OffsetDateTime>,
    /// Only events before this time (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub until: Option<time::OffsetDateTime>,
    /// Only events older than this id (the next page).
    pub before_id: Option<i64>,
    /// At most this many (default 100, at most 1,000).
    pub limit: Option<i64>,
    /// Only the events of these tenants (a tenant administrator's view); set by the service
    /// from who asks, never by a caller.
    #[serde(skip)]
    pub tenants: Option<Vec<String>>,
}

/// The newest events matching `filter`, newest first.
pub async fn list(pool: &PgPool, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
    Ok(sqlx::query_as!(
        AuditEvent,
        "select id, at, actor, action, entity_kind, entity_id, before, after from audit_event
         where ($1::text is null or entity_kind = $1) and ($2::text is null or entity_id = $2)
           and ($3::text is null or actor = $3) and ($4::bigint is null or id < $4)
           and ($6::text is null or strpos(lower(actor), lower($6)) > 0)
           and ($7::timestamptz is null or at >= $7) and ($8::timestamptz is null or at < $8)
           and ($9::text[] is null or (entity_kind = 'tenant' and entity_id = any($9)))
         order by id desc limit $5",
        filter.entity_kind,
        filter.entity_id,
        filter.actor,
        filter.before_id,
        filter.limit.unwrap_or(100).clamp(1, 1000),
        filter.actor_contains,
        filter.since,
        filter.until,
        filter.tenants.as_deref(),
    )
    .fetch_all(pool)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(before: Option<Value>, after: Option<Value>) -> AuditEvent {
        AuditEvent {
            id: 1,
            at: time::OffsetDateTime::UNIX_EPOCH,
            actor: "admin:alice".into(),
            action: "update".into(),
            entity_kind: "tenant".into(),
            entity_id: "acme".into(),
            before,
            after,
        }
    }

    fn change(path: &str, before: Option<Value>, after: Option<Value>) -> FieldChange {
        FieldChange { path: path.into(), before, after }
    }

    #[test]
    fn an_update_lists_only_the_fields_it_changed() {
        let before = json!({"name": "Acme", "tags": ["files"], "ceiling": {"tags": null, "groups": []}});
        let after =
            json!({"name": "Acme", "tags": ["files", "shell"], "ceiling": {"tags": ["files"], "groups": []}});
        assert_eq!(
            event(Some(before), Some(after)).changes(),
            [
                change("ceiling.tags", Some(Value::Null), Some(json!(["files"]))),
                change("tags", Some(json!(["files"])), Some(json!(["files", "shell"]))),
            ]
        );
    }

    #[test]
    fn a_creation_lists_every_field_and_a_deletion_every_field_gone() {
        let tenant = json!({"slug": "acme", "name": "Acme"});
        let created = [change("name", None, Some(json!("Acme"))), change("slug", None, Some(json!("acme")))];
        assert_eq!(event(None, Some(tenant.clone())).changes(), created);
        let deleted = [change("name", Some(json!("Acme")), None), change("slug", Some(json!("acme")), None)];
        assert_eq!(event(Some(tenant), None).changes(), deleted);
    }

    #[test]
    fn values_that_are_not_objects_are_compared_whole() {
        assert_eq!(event(None, Some(json!(["a"]))).changes(), [change("", None, Some(json!(["a"])))]);
        assert_eq!(event(Some(json!(1)), Some(json!(1))).changes(), []);
    }
}
