//! Persistence of the configuration. Every write is one function here that commits, in one
//! transaction, the change, an audit event (who, what, before/after with secrets redacted) and
//! `pg_notify('toolgate_config', ...)`, so every gateway process reloads.

pub mod groups;
pub mod keys;
pub mod overrides;
pub mod servers;
pub mod settings;
pub mod sources;
pub mod tenants;

use serde::Serialize;
use serde_json::Value;
use sqlx::{Postgres, Transaction};

use crate::model::Invalid;

/// The notification channel every gateway process listens on.
pub const CHANNEL: &str = "toolgate_config";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks a rule; the message says which (HTTP 422).
    #[error("{0}")]
    Invalid(String),
    /// A name that must be unique is taken (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// The named entity does not exist (HTTP 404).
    #[error("{0} not found")]
    NotFound(String),
    /// Internal; logged, never shown to a client (HTTP 500).
    #[error("database error")]
    Database(#[source] sqlx::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Invalid> for Error {
    fn from(err: Invalid) -> Self {
        Error::Invalid(err.0)
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                Error::Conflict(format!("already exists ({})", db.constraint().unwrap_or("unique")))
            }
            sqlx::Error::Database(db) if db.is_check_violation() => {
                Error::Invalid(format!("rejected by rule {}", db.constraint().unwrap_or("check")))
            }
            _ => Error::Database(err),
        }
    }
}

/// Who makes a change, as recorded in the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor(String);

impl Actor {
    pub fn admin(username: &str) -> Self {
        Actor(format!("admin:{username}"))
    }
    pub fn token(name: &str) -> Self {
        Actor(format!("token:{name}"))
    }
    pub fn cli() -> Self {
        Actor("cli".into())
    }
    pub fn system() -> Self {
        Actor("system".into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

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

/// Records `change`, notifies every gateway, and commits: the end of every write.
pub(crate) async fn commit(
    mut tx: Transaction<'_, Postgres>,
    actor: &Actor,
    change: Change<'_>,
) -> Result<()> {
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
    .execute(&mut *tx)
    .await?;
    sqlx::query!("select pg_notify($1, $2)", CHANNEL, change.entity_kind).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}
