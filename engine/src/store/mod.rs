//! Persistence of the configuration. Every write is one function here that commits, in one
//! transaction, the change, an audit event (who, what, before/after with secrets redacted) and
//! `pg_notify('toolgate_config', ...)`, so every gateway process reloads.

pub mod admins;
pub mod audit;
pub mod authorizations;
pub(crate) mod catalog;
pub mod finds;
pub mod groups;
pub mod invocations;
pub mod item_overrides;
pub mod items;
pub mod keys;
pub mod mcp_sessions;
pub mod oauth;
pub mod overrides;
pub(crate) mod pending;
pub mod retention;
pub mod servers;
pub mod settings;
pub mod sources;
pub mod sso;
pub mod tenants;
pub mod tokens;
pub mod usage;

pub use crate::error::{Error, Result};
pub use crate::model::Actor;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgExecutor, Postgres, Transaction};

use crate::secret::SecretBox;

/// The notification channel every gateway process listens on.
pub const CHANNEL: &str = "toolgate_config";

/// One audited change.
pub(crate) struct Change<'a> {
    pub action: &'a str,
    pub entity_kind: &'a str,
    pub entity_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl<'a> Change<'a> {
    pub fn new(action: &'a str, entity_kind: &'a str, entity_id: impl ToString) -> Self {
        Change { action, entity_kind, entity_id: entity_id.to_string(), before: None, after: None }
    }

    pub fn before(mut self, value: &impl Serialize) -> Self {
        self.before = serde_json::to_value(value).ok();
        self
    }

    pub fn after(mut self, value: &impl Serialize) -> Self {
        self.after = serde_json::to_value(value).ok();
        self
    }
}

/// Makes `tx` a consistent, read-only view of the whole configuration.
pub(crate) async fn read_only(tx: &mut sqlx::PgConnection) -> Result<()> {
    sqlx::query!("set transaction isolation level repeatable read, read only").execute(tx).await?;
    Ok(())
}

/// Records `change`, notifies every gateway, and commits: the end of every write.
pub(crate) async fn commit(
    mut tx: Transaction<'_, Postgres>,
    actor: &Actor,
    change: Change<'_>,
) -> Result<()> {
    record(&mut *tx, actor, &change).await?;
    notify_and_commit(tx, change.entity_kind).await
}

/// Adds `change` to the audit log (inside the caller's transaction, when `db` is one); a write
/// that changed nothing (the same before and after) is not a change and is not recorded.
pub(crate) async fn record(db: impl PgExecutor<'_>, actor: &Actor, change: &Change<'_>) -> Result<()> {
    if change.before.is_some() && change.before == change.after {
        return Ok(());
    }
    sqlx::query!(
        "insert into audit_event (actor, action, entity_kind, entity_id, before, after)
         values ($1, $2, $3, $4, $5, $6)",
        actor.as_str(),
        change.action,
        change.entity_kind,
        change.entity_id,
        change.before,
        change.after,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Tells every gateway that `entity_kind` changed, moves the configuration epoch (so a process
/// knows when its snapshot holds the change), and commits.
pub(crate) async fn notify_and_commit(mut tx: Transaction<'_, Postgres>, entity_kind: &str) -> Result<()> {
    sqlx::query!(
        "with moved as (update catalog_epoch set config = config + 1) select pg_notify($1, $2)",
        CHANNEL,
        entity_kind
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A secret as an admin writes it: a new value (`"v"` or `{secret: "v"}`), or `{set: true}`
/// to keep the stored one (how secrets are shown once saved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SecretInput {
    Keep { set: bool },
    Secret { secret: String },
    Value(String),
}

impl SecretInput {
    /// What a read shows of a stored secret.
    pub const SET: SecretInput = SecretInput::Keep { set: true };

    pub(crate) fn new_value(&self) -> Option<&str> {
        match self {
            SecretInput::Secret { secret: value } | SecretInput::Value(value) => Some(value),
            SecretInput::Keep { .. } => None,
        }
    }

    fn check_keep(&self, name: &str, stored: Option<&str>) -> Result<()> {
        match (self, stored) {
            (SecretInput::Keep { set: false }, _) => Err(Error::Invalid(format!(
                "secret `{name}`: `{{set: false}}` is not a value; leave it out to remove it"
            ))),
            (SecretInput::Keep { .. }, None) => {
                Err(Error::Invalid(format!("secret `{name}` has no stored value to keep")))
            }
            _ => Ok(()),
        }
    }

    /// The encrypted value to store for secret `name`: a new value sealed, or `stored` kept.
    pub(crate) fn seal(&self, secrets: &SecretBox, name: &str, stored: Option<&str>) -> Result<String> {
        self.check_keep(name, stored)?;
        Ok(match self.new_value() {
            Some(value) => secrets.encrypt(value),
            None => stored.expect("checked").to_owned(),
        })
    }

    /// How the secret shows in a diff: `{set: true}`, plus `changed: true` when a value is
    /// given. A given value is never compared with the stored one: a dry run must not confirm
    /// a guess.
    pub(crate) fn redact(&self, name: &str, stored: Option<&str>) -> Result<Value> {
        self.check_keep(name, stored)?;
        Ok(match self.new_value() {
            None => serde_json::json!({"set": true}),
            Some(_) => serde_json::json!({"set": true, "changed": true}),
        })
    }
}
