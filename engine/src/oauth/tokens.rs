//! The gateway's check of access tokens. A token is looked up in PostgreSQL once, then kept in
//! memory with the catalog snapshot version it was read under: every revocation (of a grant,
//! a token, an account's access, a tenant's OAuth switch) commits with the configuration
//! notification, so a new snapshot version on any replica drops what it kept (and a revocation
//! made through this process drops it here at once, before the notification comes back). A
//! token issued on one replica is accepted by every other at once (a miss reads the database).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use time::OffsetDateTime;
use uuid::Uuid;

use super::Audience;
use crate::catalog::Catalog;
use crate::secret::digest as hash;
use crate::store::oauth as store;

/// Access tokens start with this, which tells them apart from API keys.
pub const ACCESS_PREFIX: &str = "tgu_";

/// The most tokens kept in memory; past it the cache starts over.
const CACHED: usize = 100_000;

/// A grant's use is recorded at most this often per replica.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// Whom an access token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAccess {
    pub grant: Uuid,
    pub account: Uuid,
    pub username: String,
    /// The client's name, for records and traces.
    pub client: String,
    pub tenant: String,
    /// For the REST API (else the tenant's MCP endpoint).
    pub rest: bool,
    pub scopes: Vec<String>,
    pub expires_at: OffsetDateTime,
}

/// Why a token was refused (RFC 6750 `invalid_token`).
#[derive(Debug, thiserror::Error)]
pub enum TokenRefusal {
    #[error("the access token is unknown or revoked")]
    Unknown,
    #[error("the access token has expired; refresh it or sign in again")]
    Expired,
    /// The database could not be asked (HTTP 503).
    #[error(transparent)]
    Failed(#[from] crate::Error),
}

/// What a token stands for, and the snapshot version it was read under.
type Known = (u64, Arc<TokenAccess>);

#[derive(Default)]
pub(super) struct TokenCache {
    /// By SHA-256 of the token.
    known: Mutex<HashMap<Vec<u8>, Known>>,
    /// When each grant's use was last recorded.
    touched: Mutex<HashMap<Uuid, Instant>>,
}

impl TokenCache {
    pub(super) async fn authenticate(
        &self,
        pool: &sqlx::PgPool,
        catalog: &Catalog,
        token: &str,
    ) -> Result<Arc<TokenAccess>, TokenRefusal> {
        if !token.starts_with(ACCESS_PREFIX) {
            return Err(TokenRefusal::Unknown);
        }
        let token_hash = hash(token);
        let version = catalog.snapshot().version;
        let cached = self.known.lock().expect("token cache").get(&token_hash).cloned();
        let access = match cached {
            Some((at, access)) if at == version => access,
            _ => {
                let row = store::access(pool, &token_hash).await?.ok_or(TokenRefusal::Unknown)?;
                let access = Arc::new(TokenAccess {
                    grant: row.grant_id,
                    account: row.account_id,
                    username: row.username,
                    client: row.client_name,
                    tenant: row.tenant,
                    rest: Audience::is_rest(&row.resource),
                    scopes: row.scopes,
                    expires_at: row.expires_at,
                });
                let mut known = self.known.lock().expect("token cache");
                if known.len() >= CACHED {
                    known.clear();
                }
                known.insert(token_hash, (version, access.clone()));
                access
            }
        };
        if access.expires_at <= OffsetDateTime::now_utc() {
            return Err(TokenRefusal::Expired);
        }
        self.touch(pool, access.grant);
        Ok(access)
    }

    /// Forgets every token read: a revocation was made through this process.
    pub(super) fn forget(&self) {
        self.known.lock().expect("token cache").clear();
    }

    fn touch(&self, pool: &sqlx::PgPool, grant: Uuid) {
        {
            let mut touched = self.touched.lock().expect("touched grants");
            if touched.get(&grant).is_some_and(|at| at.elapsed() < TOUCH_EVERY) {
                return;
            }
            if touched.len() >= CACHED {
                touched.clear();
            }
            touched.insert(grant, Instant::now());
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            if let Err(err) = store::touch_grants(&pool, &[grant]).await {
                tracing::warn!(error = %err, "could not record a grant's use");
            }
        });
    }
}
