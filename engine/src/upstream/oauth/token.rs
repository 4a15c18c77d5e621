//! A stored authorization's token on a connection: opened (its provider discovered, its client
//! configured, the token refreshed if it must be), added to every request (by rmcp's client, and
//! by the direct calls themselves), and, for a client credentials server, exchanged again
//! shortly before it expires.

use std::sync::Arc;
use std::time::Duration;

use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthClient, AuthError, ClientCredentialsConfig, CredentialStore, OAuthClientConfig,
};
use sqlx::PgPool;
use uuid::Uuid;

use super::credentials::{PgCredentialStore, SharedStore};
use super::discovery::discover;
use crate::model::UpstreamError;
use crate::secret::SecretBox;
use crate::store::authorizations::{self, OAuthServer};
use crate::store::servers::OAuthGrant;

/// A machine-to-machine server's client credentials, for its own resource.
pub(super) fn machine_credentials(server: &OAuthServer) -> Result<ClientCredentialsConfig, AuthError> {
    let (client_id, Some(client_secret)) = server.client.clone().unwrap_or_default() else {
        return Err(AuthError::ClientCredentialsError(
            "the client_credentials grant needs a client secret".into(),
        ));
    };
    Ok(ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret,
        scopes: server.scopes.clone(),
        resource: Some(server.url.clone()),
    })
}

/// How long before expiry a client credentials token is replaced.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// One stored authorization's token, for one connection: rmcp's client adds it to every
/// request, refreshes it before it expires and once when the server refuses it; the direct
/// calls do the same with [`Token::bearer`] and [`Token::refreshed`].
pub(in crate::upstream) struct Token {
    pub(in crate::upstream) client: AuthClient<reqwest::Client>,
    /// A client credentials server's: exchanged again shortly before expiry.
    machine: Option<ClientCredentialsConfig>,
    store: Arc<PgCredentialStore>,
}

impl Token {
    /// Opens authorization `id` of `server_url` for a connection: its provider discovered, its
    /// client configured, its token checked (refreshed if it must be).
    pub(in crate::upstream) async fn open(
        pool: &PgPool,
        secrets: &SecretBox,
        http: &reqwest::Client,
        source_id: Uuid,
        id: Uuid,
    ) -> Result<Token, UpstreamError> {
        let failed = |e: &dyn std::fmt::Display| UpstreamError::Authorization(e.to_string());
        let server = authorizations::oauth_server(pool, secrets, source_id).await.map_err(|e| failed(&e))?;
        let store = Arc::new(PgCredentialStore::new(pool.clone(), secrets.clone(), id));
        let Some(stored) = store.load().await.map_err(|e| failed(&e))? else {
            return Err(UpstreamError::NeedsAuthorization(server.name));
        };
        let (mut manager, _) = discover(&server.url).await.map_err(|e| failed(&e))?;
        manager.set_credential_store(SharedStore(store.clone()));
        let machine = match server.grant {
            OAuthGrant::ClientCredentials => {
                let credentials = machine_credentials(&server).map_err(|e| failed(&e))?;
                manager.configure_client_credentials(&credentials).map_err(|e| failed(&e))?;
                Some(credentials)
            }
            OAuthGrant::AuthorizationCode => {
                // A refresh sends no redirect URI; the client needs one to be configured.
                let mut client = OAuthClientConfig::new(&stored.client_id, "http://localhost/");
                if let Some(secret) = server.secret_of(&stored.client_id) {
                    client = client.with_client_secret(secret);
                }
                manager.configure_client(client).map_err(|e| failed(&e))?;
                None
            }
        };
        let token = Token { client: AuthClient::new(http.clone(), manager), machine, store };
        token.renew().await?;
        match token.client.get_access_token().await {
            Ok(_) => Ok(token),
            Err(AuthError::AuthorizationRequired) => {
                let reason = "its token expired and the provider gave no refresh token";
                let _ = authorizations::lost(pool, id, reason).await;
                Err(UpstreamError::NeedsAuthorization(server.name))
            }
            Err(err) => Err(failed(&err)),
        }
    }

    /// The access token to send: exchanged again, or refreshed, first if it must be. `None`
    /// when there is none to send (expired, and no refresh gave another): the request goes
    /// without, as rmcp's client sends it, and the server's challenge marks the authorization.
    pub(in crate::upstream) async fn bearer(&self) -> Result<Option<String>, UpstreamError> {
        self.renew().await?;
        match self.client.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => Ok(None),
            Err(err) => Err(UpstreamError::Authorization(err.to_string())),
        }
    }

    /// After the server refused `sent` with a challenge: a refreshed token, when refreshing
    /// gives a new one (`None` when the provider refuses, or has no refresh token: the
    /// authorization must be given again). A provider out of reach is an error of the call.
    pub(in crate::upstream) async fn refreshed(&self, sent: &str) -> Result<Option<String>, UpstreamError> {
        let manager = self.client.auth_manager.lock().await;
        match manager.refresh_token().await {
            Ok(fresh) => {
                let fresh = fresh.access_token().secret().to_string();
                Ok((fresh != sent).then_some(fresh))
            }
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => Ok(None),
            Err(err) => Err(UpstreamError::Authorization(err.to_string())),
        }
    }

    /// A client credentials token within a minute of expiry is exchanged for a new one (there
    /// is no refresh token to refresh it with).
    pub(in crate::upstream) async fn renew(&self) -> Result<(), UpstreamError> {
        let Some(credentials) = &self.machine else { return Ok(()) };
        if self.store.expires_within(RENEW_BEFORE).await {
            let manager = self.client.auth_manager.lock().await;
            manager
                .exchange_client_credentials(credentials)
                .await
                .map_err(|e| UpstreamError::Authorization(e.to_string()))?;
        }
        Ok(())
    }
}
