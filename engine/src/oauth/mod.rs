//! Toolgate as the OAuth 2.1 authorization server of its own endpoints (the MCP
//! authorization specification, revision 2025-11-25 and what 2026-07-28 keeps).
//!
//! A person signed in to Toolgate allows a client (a Client ID Metadata Document's URL, a
//! dynamic registration, or one an owner registered: [`clients`]) to reach one tenant's endpoint
//! — `<issuer>/mcp/<tenant>`, or the REST API for a tenant they pick — with PKCE (S256 only) and
//! the RFC 8707 `resource` the token is then bound to. What they allowed is a grant, remembered
//! until revoked; its access tokens are short-lived and its refresh tokens rotate, a second use
//! of a code, or of a refresh token after [`REFRESH_RETRY`](exchange::REFRESH_RETRY), revoking
//! the whole grant. Codes and tokens are random strings stored as SHA-256; the gateway checks
//! access tokens with [`AuthServer::authenticate`] ([`tokens`]).
//!
//! Here: the settings, the errors and the server itself; the work is in `audience` (what a token
//! is for), `authorize` (the authorization endpoint and consent), `exchange` (the token endpoint
//! and revocation), [`clients`] and [`tokens`].

mod audience;
mod authorize;
pub mod clients;
mod exchange;
mod fetch;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

pub use audience::{Audience, MCP_PREFIX, REST_PATH, issuer};
pub use authorize::{AuthorizeError, AuthorizeParams, Pending};
pub use clients::{Registered, Registration};
pub use exchange::{TokenParams, Tokens};
pub use tokens::{ACCESS_PREFIX, TokenAccess, TokenRefusal};

use crate::catalog::Catalog;
use crate::store::Actor;

/// What a token may do; one scope for now.
pub const SCOPES: &[(&str, &str)] = &[("tools", "list this tenant's tools and call them")];

/// The authorization server's settings.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    pub access_token_ttl: Duration,
    /// A refresh token unused for this long expires (each refresh issues a new one).
    pub refresh_token_ttl: Duration,
    /// Fetch client metadata documents from private and loopback addresses, over plain HTTP
    /// on loopback (development and tests only).
    pub allow_private_metadata: bool,
    /// Dynamic registrations one address may make per hour.
    pub registrations_per_hour: u32,
    /// Dynamic registrations no grant uses yet, from anywhere, before registration is refused.
    pub unused_registrations: u32,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            access_token_ttl: Duration::from_secs(3600),
            refresh_token_ttl: Duration::from_secs(30 * 24 * 3600),
            allow_private_metadata: false,
            registrations_per_hour: 20,
            unused_registrations: 10_000,
        }
    }
}

/// A refusal in OAuth's terms (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707), or Toolgate's own
/// failure.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// `error` and `error_description` for the client; `invalid_client` is HTTP 401, a
    /// registration limit 429, the rest 400.
    #[error("{code}: {description}")]
    Refused { code: &'static str, description: String },
    /// Toolgate's own fault (the database); HTTP 500 or 503.
    #[error(transparent)]
    Failed(#[from] crate::Error),
}

impl OAuthError {
    fn refused(code: &'static str, description: impl Into<String>) -> Self {
        OAuthError::Refused { code, description: description.into() }
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(err: sqlx::Error) -> Self {
        OAuthError::Failed(err.into())
    }
}

/// The authorization server; cheap to clone.
#[derive(Clone)]
pub struct AuthServer {
    inner: Arc<Inner>,
}

struct Inner {
    pool: sqlx::PgPool,
    catalog: Catalog,
    config: OAuthConfig,
    clients: clients::Clients,
    tokens: tokens::TokenCache,
}

impl AuthServer {
    pub fn new(pool: sqlx::PgPool, catalog: Catalog, config: OAuthConfig) -> Self {
        let clients = clients::Clients::new(config.allow_private_metadata);
        AuthServer { inner: Arc::new(Inner { pool, catalog, config, clients, tokens: Default::default() }) }
    }

    /// Forgets the tokens this process has read: call after revoking any (the other replicas
    /// learn it through the configuration notification).
    pub fn revoked(&self) {
        self.inner.tokens.forget();
    }

    /// What the access token `token` stands for, for the gateway.
    pub async fn authenticate(&self, token: &str) -> Result<Arc<TokenAccess>, TokenRefusal> {
        self.inner.tokens.authenticate(&self.inner.pool, &self.inner.catalog, token).await
    }

    /// Registers a client (RFC 7591) for the caller at `address`.
    pub async fn register(
        &self,
        registration: Registration,
        address: &str,
    ) -> Result<Registered, OAuthError> {
        clients::register(&self.inner.pool, &self.inner.config, registration, address).await
    }

    /// Registers a client an owner entered: its id, and its secret when `confidential`.
    pub async fn preregister(
        &self,
        actor: &Actor,
        name: &str,
        redirect_uris: Vec<String>,
        confidential: bool,
    ) -> crate::Result<(String, Option<String>)> {
        clients::preregister(&self.inner.pool, actor, name, redirect_uris, confidential).await
    }
}
