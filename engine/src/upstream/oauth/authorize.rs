//! An authorization given in a browser: started ([`begin`]) with the client Toolgate is at the
//! provider (one the admin registered, its Client ID Metadata Document, or one registered
//! dynamically and kept), finished at the callback ([`finish`]), where the code is exchanged and
//! the tokens kept; or, for a client credentials server, exchanged at once.

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession, CredentialStore,
    InMemoryCredentialStore, InMemoryStateStore, OAuthClientConfig, StateStore, StoredAuthorizationState,
};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::credentials::expires_at;
use super::discovery::discover;
use super::token::machine_credentials;
use super::{CLIENT_METADATA_PATH, callback_url};
use crate::secret::SecretBox;
use crate::store::authorizations::{self, Flow, Owner, Registered};
use crate::store::servers::OAuthGrant;
use crate::store::{self, Actor};

/// Why an authorization could not be started or finished.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The server or its provider refused, or answered what Toolgate cannot use.
    #[error("{0}")]
    Provider(String),
    /// No authorization under way matches the callback, for this browser.
    #[error(
        "this authorization is unknown, was started in another browser session, or took longer than 10 minutes: start it again"
    )]
    Stale,
}

fn provider(err: AuthError) -> AuthorizeError {
    AuthorizeError::Provider(err.to_string())
}

/// What an authorization started: a browser must go to the provider, or (client credentials)
/// the token is already there.
pub enum Begun {
    Browser(String),
    Authorized,
}

/// Starts `owner`'s authorization of a server for the person `started_by`, whose browser will
/// come back to [`finish`] at Toolgate's `base` URL, then to `return_to` (a panel path).
pub async fn begin(
    pool: &PgPool,
    secrets: &SecretBox,
    base: &str,
    source_id: Uuid,
    owner: Owner,
    started_by: (Uuid, &Actor),
    return_to: &str,
) -> Result<Begun, AuthorizeError> {
    let server = authorizations::oauth_server(pool, secrets, source_id).await?;
    let (mut manager, metadata) = discover(&server.url).await.map_err(provider)?;
    if server.grant == OAuthGrant::ClientCredentials {
        let credentials = machine_credentials(&server).map_err(provider)?;
        let store = InMemoryCredentialStore::new();
        manager.set_credential_store(store.clone());
        manager.configure_client_credentials(&credentials).map_err(provider)?;
        manager.exchange_client_credentials(&credentials).await.map_err(provider)?;
        keep(pool, secrets, started_by.1, source_id, owner, &store).await?;
        return Ok(Begun::Authorized);
    }
    let callback = callback_url(base);
    let current_issuer = metadata.issuer.clone();
    // Unless the admin named scopes, or the server wanted more than an earlier authorization
    // was granted: the challenge's, else all the server's metadata lists.
    let mut request = AuthorizationRequest::new(&callback)
        .with_initial_scope_selection()
        .with_client_name("Toolgate")
        // A loopback callback is a native app's; anything else is a web server's.
        .with_application_type(if callback.starts_with("https://") { "web" } else { "native" });
    let wanted = authorizations::wanted_scopes(pool, source_id, owner).await?;
    if !server.scopes.is_empty() {
        request = request.with_scopes(server.scopes.clone());
    } else if !wanted.is_empty() {
        request = request.with_scopes(wanted);
    }
    let registered = server.registered.as_ref().filter(|registered| {
        current_issuer.as_deref() == Some(registered.issuer.as_str()) && registered.redirect_uri == callback
    });
    match (&server.client, registered.map(|r| (&r.client_id, &r.client_secret))) {
        (Some((id, secret)), _) | (None, Some((id, secret))) => {
            request = request.with_preregistered_client(id);
            if let Some(secret) = secret {
                request = request.with_client_secret(secret);
            }
        }
        (None, None) if base.starts_with("https://") && supports_metadata_documents(&metadata) => {
            request = request.with_client_metadata_url(format!("{base}{CLIENT_METADATA_PATH}"));
        }
        (None, None) => {
            // Registered once per server and provider, and kept: every authorization of the
            // server is then one client's.
            let scopes: Vec<&str> = server.scopes.iter().map(String::as_str).collect();
            let client = manager.register_client("Toolgate", &callback, &scopes).await.map_err(provider)?;
            let registered = Registered {
                issuer: current_issuer.clone().unwrap_or_default(),
                redirect_uri: callback.clone(),
                client_id: client.client_id,
                client_secret: client.client_secret,
            };
            authorizations::registered(pool, secrets, source_id, &registered).await?;
            request = request.with_preregistered_client(&registered.client_id);
            if let Some(secret) = &registered.client_secret {
                request = request.with_client_secret(secret);
            }
        }
    }
    let states = InMemoryStateStore::new();
    manager.set_state_store(states.clone());
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, err)| provider(err))?;
    let url = session.get_authorization_url().to_string();
    let state_param = url::Url::parse(&url)
        .ok()
        .and_then(|url| url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .ok_or_else(|| AuthorizeError::Provider("the authorization URL has no state".into()))?;
    let state = states
        .load(&state_param)
        .await
        .map_err(provider)?
        .ok_or_else(|| AuthorizeError::Provider("rmcp kept no state for the authorization".into()))?;
    let (client_id, _) = session.get_credentials().await.map_err(provider)?;
    let flow = Flow {
        source_id,
        owner,
        started_by: started_by.0,
        client_id,
        state: serde_json::to_string(&state).expect("states serialise"),
        return_to: return_to.to_string(),
    };
    authorizations::start_flow(pool, secrets, &state_param, &flow).await?;
    Ok(Begun::Browser(url))
}

/// Whether the provider takes Client ID Metadata Documents as client ids.
fn supports_metadata_documents(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Finishes an authorization at the callback: the person signed in as `account` in this
/// browser started it; the code is exchanged and the tokens kept. Where the browser goes next.
pub async fn finish(
    pool: &PgPool,
    secrets: &SecretBox,
    base: &str,
    (account, actor): (Uuid, &Actor),
    state_param: &str,
    code: &str,
    received_issuer: Option<&str>,
) -> Result<String, AuthorizeError> {
    let flow = authorizations::take_flow(pool, secrets, state_param).await?.ok_or(AuthorizeError::Stale)?;
    if flow.started_by != account {
        return Err(AuthorizeError::Stale);
    }
    let server = authorizations::oauth_server(pool, secrets, flow.source_id).await?;
    let (mut manager, _) = discover(&server.url).await.map_err(provider)?;
    let mut client = OAuthClientConfig::new(&flow.client_id, callback_url(base));
    if let Some(secret) = server.secret_of(&flow.client_id) {
        client = client.with_client_secret(secret);
    }
    manager.configure_client(client).map_err(provider)?;
    let state: StoredAuthorizationState =
        serde_json::from_str(&flow.state).map_err(|e| AuthorizeError::Provider(e.to_string()))?;
    let states = InMemoryStateStore::new();
    states.save(state_param, state).await.map_err(provider)?;
    manager.set_state_store(states);
    let store = InMemoryCredentialStore::new();
    manager.set_credential_store(store.clone());
    manager
        .exchange_code_for_token_with_issuer(code, state_param, received_issuer)
        .await
        .map_err(provider)?;
    keep(pool, secrets, actor, flow.source_id, flow.owner, &store).await?;
    Ok(flow.return_to)
}

/// Stores the credentials an exchange left in `store` as `owner`'s authorization.
async fn keep(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    source_id: Uuid,
    owner: Owner,
    store: &InMemoryCredentialStore,
) -> Result<Uuid, AuthorizeError> {
    let credentials = store
        .load()
        .await
        .map_err(provider)?
        .ok_or_else(|| AuthorizeError::Provider("the provider gave no token".into()))?;
    let json = serde_json::to_string(&credentials).expect("credentials serialise");
    Ok(authorizations::authorized(pool, secrets, actor, source_id, owner, &json, expires_at(&credentials))
        .await?)
}
