//! An authorization's credentials as rmcp's client keeps them: in the database, sealed, cached
//! for the connection's calls, refreshed one at a time across replicas (an advisory lock).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::secret::SecretBox;
use crate::store::authorizations;

/// When stored credentials' access token expires, if the provider said.
pub(super) fn expires_at(credentials: &StoredCredentials) -> Option<OffsetDateTime> {
    let lifetime = credentials.token_response.as_ref()?.expires_in()?;
    let received = credentials.token_received_at?;
    OffsetDateTime::from_unix_timestamp((received + lifetime.as_secs()) as i64).ok()
}

/// An authorization's credentials in the database, sealed, cached for the connection's calls.
pub(super) struct PgCredentialStore {
    pool: PgPool,
    secrets: SecretBox,
    id: Uuid,
    cached: tokio::sync::Mutex<Option<StoredCredentials>>,
    /// A refresh is under way: the next load reads what another replica may have stored.
    reread: AtomicBool,
}

impl PgCredentialStore {
    pub(super) fn new(pool: PgPool, secrets: SecretBox, id: Uuid) -> Self {
        PgCredentialStore { pool, secrets, id, cached: Default::default(), reread: AtomicBool::new(true) }
    }

    fn failed(err: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(err.to_string())
    }

    pub(super) async fn expires_within(&self, margin: Duration) -> bool {
        let cached = self.cached.lock().await;
        let expires = cached.as_ref().and_then(expires_at);
        expires.is_none_or(|at| at - OffsetDateTime::now_utc() < margin)
    }
}

#[async_trait]
impl CredentialStore for PgCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let mut cached = self.cached.lock().await;
        if self.reread.swap(false, Ordering::AcqRel) {
            let json = authorizations::credentials(&self.pool, &self.secrets, self.id)
                .await
                .map_err(Self::failed)?;
            *cached = json.map(|json| serde_json::from_str(&json)).transpose().map_err(Self::failed)?;
        }
        Ok(cached.clone())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let json = serde_json::to_string(&credentials).map_err(Self::failed)?;
        authorizations::refreshed(&self.pool, &self.secrets, self.id, &json, expires_at(&credentials))
            .await
            .map_err(Self::failed)?;
        *self.cached.lock().await = Some(credentials);
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        authorizations::lost(&self.pool, self.id, "its credentials were cleared")
            .await
            .map_err(Self::failed)?;
        *self.cached.lock().await = None;
        Ok(())
    }

    async fn on_refresh_token_rejected(&self, _: &StoredCredentials) -> Result<(), AuthError> {
        let reason = "the provider refused its refresh token (revoked or expired)";
        authorizations::lost(&self.pool, self.id, reason).await.map_err(Self::failed)?;
        *self.cached.lock().await = None;
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        // A transaction-scoped lock: it goes with the transaction when the guard drops.
        let mut tx = self.pool.begin().await.map_err(Self::failed)?;
        sqlx::query!("select pg_advisory_xact_lock(hashtextextended($1::text, 0))", self.id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(Self::failed)?;
        self.reread.store(true, Ordering::Release);
        Ok(Some(CredentialRefreshGuard::new(tx)))
    }
}

/// The store, shared between the manager and the connection that reads its expiry.
pub(super) struct SharedStore(pub(super) Arc<PgCredentialStore>);

#[async_trait]
impl CredentialStore for SharedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.load().await
    }
    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }
    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }
    async fn on_refresh_token_rejected(&self, credentials: &StoredCredentials) -> Result<(), AuthError> {
        self.0.on_refresh_token_rejected(credentials).await
    }
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        self.0.acquire_refresh_guard().await
    }
}
