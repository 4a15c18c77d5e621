//! The one error of Toolgate's operations. Each variant documents what a caller sees; every
//! surface (the panel, the admin API, the REST gateway, MCP) maps it once, in its own terms.

use uuid::Uuid;

use crate::model::{Invalid, Limited, UpstreamError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input breaks a rule; the message says which (HTTP 422).
    #[error("{0}")]
    Invalid(String),
    /// A name that must be unique is taken (HTTP 409).
    #[error("{0}")]
    Conflict(String),
    /// What the request names does not exist, or is not the caller's to see (HTTP 404).
    #[error(transparent)]
    NotFound(#[from] Missing),
    /// The caller's role does not allow this; the message says who may (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// A limit on the calls of the tenant, tool or key refuses this one (HTTP 429 with
    /// `Retry-After`; a tool error for an LLM, which can wait and retry).
    #[error(transparent)]
    Limited(#[from] Limited),
    /// An upstream MCP server failed or could not be reached; the message says how (HTTP
    /// 502).
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The database cannot be reached (down, restarting, pool exhausted): nothing was
    /// changed, and trying again shortly may work (HTTP 503).
    #[error("the database cannot be reached right now; nothing was changed, try again shortly")]
    Unavailable(#[source] sqlx::Error),
    /// Toolgate's own fault (HTTP 500); its text, with the cause, is for the log and never
    /// shown to a client.
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a request named that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    #[error("no tenant `{0}`")]
    Tenant(String),
    /// A tool the tenant does not see by this name.
    #[error("unknown tool `{0}`")]
    Tool(String),
    /// A tool of a tenant in `search` mode that the caller has not found (nor is it pinned).
    #[error("tool `{0}` is not listed yet: find it with `search_tools` first")]
    Unfound(String),
    /// A call that is not pending for this tenant: unknown, or already resumed.
    #[error("no pending call {0} for this tenant (unknown, or already resumed)")]
    PendingCall(Uuid),
    /// Anything else, named as the message shows it: "server `weather`".
    #[error("{0} not found")]
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `what` (for instance "server `weather`") does not exist.
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound(Missing::Other(what.into()))
    }
}

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
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_) => Error::Unavailable(err),
            _ => Error::Internal(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn an_unreachable_database_is_told_apart_from_a_failed_query() {
        let unavailable = |err: sqlx::Error| matches!(Error::from(err), Error::Unavailable(_));
        assert!(unavailable(sqlx::Error::PoolTimedOut));
        assert!(unavailable(sqlx::Error::Io(std::io::ErrorKind::ConnectionRefused.into())));
        assert!(matches!(Error::from(sqlx::Error::RowNotFound), Error::Internal(_)));
    }
}
