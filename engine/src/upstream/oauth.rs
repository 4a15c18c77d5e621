//! Toolgate as the OAuth client of protected upstream servers, through rmcp's `auth`: discovery
//! (from the server's challenge: protected resource metadata, then the authorization
//! server's), the client (one the admin registered, Toolgate's Client ID Metadata Document, or
//! dynamic registration, kept per server), the authorization code flow with PKCE and
//! `resource`, and the tokens of each stored authorization, refreshed before they expire and
//! once when the server refuses one; a server refusing one still, or wanting a scope it lacks,
//! needs the authorization given again ([`refused`]).
//!
//! An authorization is started in a browser ([`begin`]), where the provider sends the person
//! back to Toolgate's callback ([`finish`]), which must be the same browser session. The PKCE
//! verifier waits in the database between the two, sealed, so any replica takes the callback.
//! A refresh is one at a time across replicas (an advisory lock): providers rotate refresh
//! tokens, and a second use of the old one would revoke the grant. A refresh the provider
//! refuses marks the authorization "needs authorization", and nothing retries it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use oauth2::TokenResponse;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::ProtocolVersion;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, CredentialRefreshGuard,
    CredentialStore, InMemoryCredentialStore, InMemoryStateStore, OAuthClientConfig, StateStore,
    StoredAuthorizationState, StoredCredentials, WWWAuthenticateParams,
};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::UpstreamError;
use crate::secret::SecretBox;
use crate::store::authorizations::{self, Flow, OAuthServer, Owner, Registered};
use crate::store::servers::OAuthGrant;
use crate::store::{self, Actor};

/// Where a provider sends the person back, under Toolgate's public URL.
pub const CALLBACK_PATH: &str = "/oauth/upstream/callback";
/// Where a person (signed in to the panel) starts authorizing a server, under Toolgate's
/// public URL.
pub const START_PATH: &str = "/oauth/upstream/start";
/// Toolgate's Client ID Metadata Document as an upstream's client, under its public URL.
pub const CLIENT_METADATA_PATH: &str = "/oauth/upstream/client.json";

/// The callback URL of Toolgate at `base` (its public URL): the one to give a provider.
pub fn callback_url(base: &str) -> String {
    format!("{base}{CALLBACK_PATH}")
}

/// Toolgate's Client ID Metadata Document at `base`: its URL is its client id wherever a
/// provider accepts such documents (it must be https).
pub fn client_metadata(base: &str) -> Value {
    json!({
        "client_id": format!("{base}{CLIENT_METADATA_PATH}"),
        "client_name": "Toolgate",
        "client_uri": base,
        "redirect_uris": [callback_url(base)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    })
}

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

/// What the server at `url` answers a client without a token: its `WWW-Authenticate`
/// challenge to the request Toolgate opens a connection with (`server/discover`, then
/// `initialize` for a server of the handshake era). It may point to metadata found nowhere else
/// and names the scope to ask for; a server that lets both through gives none.
async fn challenge(url: &str) -> Result<Option<String>, AuthError> {
    let latest = ProtocolVersion::LATEST.to_string();
    let discover = json!({
        "jsonrpc": "2.0", "id": 0, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": latest}},
    });
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {},
            "clientInfo": crate::implementation(),
        },
    });
    let http = reqwest::Client::new();
    for (request, version) in [(discover, Some(latest.as_str())), (initialize, None)] {
        let mut post = http
            .post(url)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .timeout(Duration::from_secs(10));
        if let Some(version) = version {
            post = post.header("mcp-protocol-version", version);
        }
        let response = post.body(request.to_string()).send().await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            let challenges: Vec<&str> =
                response.headers().get_all(WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).collect();
            let pointing = challenges.iter().find(|challenge| challenge.contains("resource_metadata"));
            return Ok(pointing.or(challenges.first()).map(|challenge| challenge.to_string()));
        }
    }
    Ok(None)
}

/// An rmcp manager for the provider of the server at `url`, found by discovery from the
/// server's challenge, and the provider's metadata.
async fn discover(url: &str) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthError> {
    // Upstream servers, and their providers, are often on private networks; link-local and
    // other reserved addresses stay refused.
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    let challenge = challenge(url).await?;
    let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        return Err(AuthError::AuthorizationFailed(format!(
            "`{url}` publishes no OAuth metadata (RFC 9728 protected resource metadata, or RFC 8414)"
        )));
    }
    manager.set_metadata(resolution.metadata.clone());
    Ok((manager, resolution.metadata))
}

/// The authorization server of the protected server at `url` (its issuer, else its
/// authorization endpoint), found as an authorization finds it: what testing an OAuth server
/// before it is saved can check.
pub(super) async fn provider_of(url: &str) -> Result<String, UpstreamError> {
    let (_, metadata) = discover(url).await.map_err(|e| UpstreamError::Authorization(e.to_string()))?;
    Ok(metadata.issuer.unwrap_or(metadata.authorization_endpoint))
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

/// Marks authorization `id` of the server at `url` as needing to be given again, the server
/// having refused its token with `challenge` (a 401 even after a refresh, or a 403). For want
/// of scope, every later authorization asks for the scopes granted and the one the server
/// wants (SEP-2350). Why, as the server's page says it.
pub(super) async fn refused(
    pool: &PgPool,
    secrets: &SecretBox,
    url: &str,
    id: Uuid,
    challenge: &str,
) -> String {
    let params =
        url::Url::parse(url).map(|base| WWWAuthenticateParams::parse(challenge, &base)).unwrap_or_default();
    let insufficient = params.is_insufficient_scope();
    let (reason, marked) = match params.scope.filter(|_| insufficient) {
        Some(scope) => {
            let reason =
                format!("the server wants the scope `{scope}`, which its token lacks: authorize it again");
            let marked = match granted_and(pool, secrets, id, &scope).await {
                Ok(wanted) => authorizations::wants_scopes(pool, id, &reason, &wanted).await,
                Err(err) => Err(err),
            };
            (reason, marked)
        }
        None => {
            let reason = format!("the server refused its token, even refreshed ({challenge})");
            let marked = authorizations::lost(pool, id, &reason).await;
            (reason, marked)
        }
    };
    tracing::warn!(authorization = %id, %reason, "an upstream server refused its token");
    if let Err(err) = marked {
        tracing::warn!(authorization = %id, error = %err, "the authorization could not be marked");
    }
    reason
}

/// The scopes authorization `id` was granted, and those of `scope` (space-separated).
async fn granted_and(
    pool: &PgPool,
    secrets: &SecretBox,
    id: Uuid,
    scope: &str,
) -> store::Result<Vec<String>> {
    let stored = authorizations::credentials(pool, secrets, id).await?;
    let granted = stored.and_then(|json| serde_json::from_str::<StoredCredentials>(&json).ok());
    let mut scopes = granted.map(|credentials| credentials.granted_scopes).unwrap_or_default();
    scopes.extend(scope.split_whitespace().map(str::to_string));
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
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

/// When stored credentials' access token expires, if the provider said.
fn expires_at(credentials: &StoredCredentials) -> Option<OffsetDateTime> {
    let lifetime = credentials.token_response.as_ref()?.expires_in()?;
    let received = credentials.token_received_at?;
    OffsetDateTime::from_unix_timestamp((received + lifetime.as_secs()) as i64).ok()
}

/// A machine-to-machine server's client credentials, for its own resource.
fn machine_credentials(server: &OAuthServer) -> Result<ClientCredentialsConfig, AuthError> {
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
/// request, refreshes it before it expires and once when the server refuses it.
pub(super) struct Token {
    pub(super) client: AuthClient<reqwest::Client>,
    /// A client credentials server's: exchanged again shortly before expiry.
    machine: Option<ClientCredentialsConfig>,
    store: Arc<PgCredentialStore>,
}

impl Token {
    /// Opens authorization `id` of `server_url` for a connection: its provider discovered, its
    /// client configured, its token checked (refreshed if it must be).
    pub(super) async fn open(
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

    /// A client credentials token within a minute of expiry is exchanged for a new one (there
    /// is no refresh token to refresh it with).
    pub(super) async fn renew(&self) -> Result<(), UpstreamError> {
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
    fn new(pool: PgPool, secrets: SecretBox, id: Uuid) -> Self {
        PgCredentialStore { pool, secrets, id, cached: Default::default(), reread: AtomicBool::new(true) }
    }

    fn failed(err: impl std::fmt::Display) -> AuthError {
        AuthError::CredentialStoreError(err.to_string())
    }

    async fn expires_within(&self, margin: Duration) -> bool {
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
struct SharedStore(Arc<PgCredentialStore>);

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

/// Whose authorization `account` may give of a server, from a request's `for`: `me` (a
/// per-person server), `shared` (owners), or `tenant:<slug>` (a per-tenant server, by an
/// administrator of that tenant).
pub async fn owner_for(
    pool: &PgPool,
    account: &crate::admin::AdminUser,
    server: &crate::model::Name,
    wanted: &str,
) -> Result<(Uuid, Owner), store::Error> {
    use crate::store::servers::OAuthMode;
    let found = crate::store::servers::get(pool, server).await?;
    let mode = found
        .oauth
        .map(|oauth| oauth.mode)
        .ok_or_else(|| store::Error::Invalid(format!("server `{server}` does not use OAuth")))?;
    let owner = match wanted.split_once(':') {
        None if wanted == "shared" => {
            if account.role != crate::admin::Role::Owner {
                return Err(store::Error::Forbidden(
                    "only owners authorize a server for every tenant".into(),
                ));
            }
            Owner::Shared
        }
        None if wanted == "me" && mode == OAuthMode::User => Owner::Account(account.id),
        Some(("tenant", slug)) if mode == OAuthMode::Tenant => {
            if !crate::admin::scope(pool, account).await?.allows(slug) {
                return Err(store::Error::Forbidden(format!(
                    "only administrators of tenant `{slug}` authorize it"
                )));
            }
            Owner::Tenant(store::tenants::get(pool, &crate::model::TenantSlug::parse(slug)?).await?.id)
        }
        _ => {
            return Err(store::Error::Invalid(format!(
                "server `{server}` takes {} authorizations, not `{wanted}`",
                match mode {
                    OAuthMode::Shared => "shared (`shared`)",
                    OAuthMode::Tenant => "per-tenant (`tenant:<slug>`) and shared",
                    OAuthMode::User => "per-person (`me`) and shared",
                }
            )));
        }
    };
    Ok((found.source.id, owner))
}
