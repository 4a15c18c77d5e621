//! Toolgate as the OAuth 2.1 authorization server of its own endpoints (the MCP
//! authorization specification, revision 2025-11-25 and what 2026-07-28 keeps).
//!
//! A person signed in to Toolgate allows a client (a Client ID Metadata Document's URL, a
//! dynamic registration, or one an owner registered: [`clients`]) to reach one tenant's endpoint
//! — `<issuer>/mcp/<tenant>`, or the REST API for a tenant they pick — with PKCE (S256 only) and
//! the RFC 8707 `resource` the token is then bound to. What they allowed is a grant, remembered
//! until revoked; its access tokens are short-lived and its refresh tokens rotate, a second use
//! of a code, or of a refresh token after [`REFRESH_RETRY`], revoking the whole grant. Codes
//! and tokens are random strings stored as SHA-256; the gateway checks access tokens with
//! [`AuthServer::authenticate`] ([`tokens`]).

pub mod clients;
mod fetch;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

pub use clients::{Registered, Registration};
pub use tokens::{ACCESS_PREFIX, TokenAccess, TokenRefusal};

use crate::admin::AdminUser;
use crate::catalog::Catalog;
use crate::model::TenantSlug;
use crate::secret::{digest as hash, random_token as random_secret};
use crate::store::oauth::{self as store, AuthMethod, Client};
use crate::store::{self as stores, Actor, Change};

/// What a token may do; one scope for now.
pub const SCOPES: &[(&str, &str)] = &[("tools", "list this tenant's tools and call them")];

/// How long an authorization code, and a request waiting for consent, are valid.
const CODE_TTL: Duration = Duration::from_secs(60);
const REQUEST_TTL: Duration = Duration::from_secs(10 * 60);

/// A refresh token presented again this soon after its first use is a retry (or a concurrent
/// refresh) of its client, answered with new tokens; later, a reuse that revokes the grant.
const REFRESH_RETRY: time::Duration = time::Duration::seconds(10);

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

/// An authorization request that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    /// Shown to the person, never redirected: the client or its redirect URI cannot be trusted.
    #[error("{0}")]
    Show(String),
    /// Sent back to the client at its redirect URI (RFC 6749 §4.1.2.1).
    #[error("{code}: {description}")]
    Redirect {
        redirect_uri: String,
        state: Option<String>,
        issuer: String,
        code: &'static str,
        description: String,
    },
    /// Toolgate's own fault (the database): HTTP 500 or 503, the details only in the log.
    #[error(transparent)]
    Failed(#[from] crate::Error),
}

impl AuthorizeError {
    /// The URL the person's browser goes back to.
    pub fn location(&self) -> Option<String> {
        let AuthorizeError::Redirect { redirect_uri, state, issuer, code, description } = self else {
            return None;
        };
        Some(with_query(
            redirect_uri,
            &[
                ("error", code),
                ("error_description", description),
                ("state", state.as_deref().unwrap_or("")),
                ("iss", issuer),
            ],
        ))
    }
}

/// What a token is for: one tenant's MCP endpoint, or the REST API (of the tenant the person
/// picks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    Mcp(TenantSlug),
    Rest,
}

/// The base URL clients reach Toolgate at, which is the issuer and the prefix of every
/// resource: the public URL (`TOOLGATE_PUBLIC_URL`), or else `http://` and the request's host
/// (the MCP endpoint accepts only loopback hosts and the public URL's).
pub fn issuer(public_url: Option<&str>, headers: &http::HeaderMap) -> String {
    match public_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok());
            format!("http://{}", host.unwrap_or("localhost"))
        }
    }
}

/// The REST API's path, and the MCP endpoints' prefix.
pub const REST_PATH: &str = "/api/v1";
pub const MCP_PREFIX: &str = "/mcp/";

impl Audience {
    /// The audience `resource` names at `issuer` (the public base URL, no trailing slash).
    pub fn parse(resource: &str, issuer: &str) -> Option<Audience> {
        let head = resource.get(..issuer.len())?;
        if !head.eq_ignore_ascii_case(issuer) {
            return None;
        }
        let path = resource[issuer.len()..].trim_end_matches('/');
        if path == REST_PATH {
            return Some(Audience::Rest);
        }
        TenantSlug::parse(path.strip_prefix(MCP_PREFIX)?).ok().map(Audience::Mcp)
    }

    /// The canonical resource of this audience at `issuer`.
    pub fn resource(&self, issuer: &str) -> String {
        match self {
            Audience::Mcp(slug) => format!("{issuer}{MCP_PREFIX}{slug}"),
            Audience::Rest => format!("{issuer}{REST_PATH}"),
        }
    }

    /// Whether tokens for `resource` are for the REST API (else an MCP endpoint).
    pub fn is_rest(resource: &str) -> bool {
        resource.trim_end_matches('/').ends_with(REST_PATH)
    }

    /// The issuer a canonical `resource` was made at.
    fn issuer_of(resource: &str) -> &str {
        match resource.find(MCP_PREFIX).or_else(|| resource.rfind(REST_PATH)) {
            Some(at) => &resource[..at],
            None => resource,
        }
    }
}

/// The parameters of an authorization request, as the client's browser brought them.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
}

/// A token request's form (RFC 6749 §4.1.3, §6), client credentials aside.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct TokenParams {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// The successful answer of the token endpoint.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tokens {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    pub scope: String,
}

/// An authorization waiting for consent, as the consent page shows it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub client: Client,
    /// The host of the client's id when it is a URL (a metadata document's).
    pub client_host: Option<String>,
    /// The host the answer goes back to, and whether that is this machine only.
    pub redirect_host: String,
    pub redirect_is_local: bool,
    /// The tenant of an MCP endpoint; `None` for the REST API, where one of `choices` is picked.
    pub tenant: Option<TenantSlug>,
    /// The tenants the person may authorize for (the REST API's choice).
    pub choices: Vec<String>,
    pub scopes: Vec<(&'static str, &'static str)>,
    pub resource: String,
    /// Whether this person may authorize for the request's tenant.
    pub allowed: bool,
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

/// `base` with `pairs` added to its query (empty values left out).
fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = match reqwest::Url::parse(base) {
        Ok(url) => url,
        Err(_) => return base.to_string(),
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
            query.append_pair(name, value);
        }
    }
    url.to_string()
}

/// Whether `verifier` is the PKCE verifier of the S256 `challenge` (RFC 7636 §4.6).
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    use oauth2::{PkceCodeChallenge, PkceCodeVerifier};
    // Checked first: the crate asserts the length (a panic on a client's bad input).
    let valid = (43..=128).contains(&verifier.len())
        && verifier.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c));
    if !valid {
        return false;
    }
    let computed = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.to_string()));
    subtle::ConstantTimeEq::ct_eq(computed.as_str().as_bytes(), challenge.as_bytes()).into()
}

/// The known scopes of a space-separated `scope` (others are left out: RFC 6749 lets the server
/// grant less than asked, and says so in the answer); `tools` when none is asked or known.
fn granted_scopes(scope: Option<&str>) -> Vec<String> {
    let mut scopes: Vec<String> = scope
        .unwrap_or_default()
        .split(' ')
        .filter(|s| SCOPES.iter().any(|(known, _)| known == s))
        .map(str::to_string)
        .collect();
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        scopes.push(SCOPES[0].0.to_string());
    }
    scopes
}

impl AuthServer {
    pub fn new(pool: sqlx::PgPool, catalog: Catalog, config: OAuthConfig) -> Self {
        let clients = clients::Clients::new(config.allow_private_metadata);
        AuthServer { inner: Arc::new(Inner { pool, catalog, config, clients, tokens: Default::default() }) }
    }

    /// Checks an authorization request and keeps it until its person consents; the id of the
    /// kept request (the consent page's).
    #[tracing::instrument(skip_all, fields(client = params.client_id.as_deref()))]
    pub async fn begin(&self, issuer: &str, params: AuthorizeParams) -> Result<Uuid, AuthorizeError> {
        let inner = &self.inner;
        let client_id = params
            .client_id
            .as_deref()
            .ok_or_else(|| AuthorizeError::Show("the request names no client (client_id)".into()))?;
        let client = inner.clients.resolve(&inner.pool, client_id).await.map_err(|err| match err {
            OAuthError::Refused { description, .. } => AuthorizeError::Show(description),
            OAuthError::Failed(err) => AuthorizeError::Failed(err),
        })?;
        let redirect_uri = match params.redirect_uri.as_deref() {
            Some(uri) if clients::redirect_allowed(&client.redirect_uris, uri) => uri.to_string(),
            Some(uri) => {
                return Err(AuthorizeError::Show(format!(
                    "`{uri}` is not a redirect URI registered by {}; the request is refused and nothing was sent there",
                    client.name
                )));
            }
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => return Err(AuthorizeError::Show("the request names no redirect_uri".into())),
        };
        let refuse = |code: &'static str, description: String| AuthorizeError::Redirect {
            redirect_uri: redirect_uri.clone(),
            state: params.state.clone(),
            issuer: issuer.to_string(),
            code,
            description,
        };
        if params.response_type.as_deref() != Some("code") {
            return Err(refuse("unsupported_response_type", "only response_type=code is supported".into()));
        }
        let challenge = match (params.code_challenge.as_deref(), params.code_challenge_method.as_deref()) {
            (Some(challenge), Some("S256"))
                if challenge.len() == 43
                    && challenge.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                challenge.to_string()
            }
            (Some(_), Some("S256")) => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge is not an S256 challenge (43 characters of base64url)".into(),
                ));
            }
            _ => {
                return Err(refuse(
                    "invalid_request",
                    "PKCE is required: code_challenge with code_challenge_method=S256".into(),
                ));
            }
        };
        let resource = params.resource.as_deref().ok_or_else(|| {
            refuse(
                "invalid_request",
                format!(
                    "resource is required (RFC 8707): the endpoint, such as {issuer}{MCP_PREFIX}<tenant>"
                ),
            )
        })?;
        let audience = Audience::parse(resource, issuer).ok_or_else(|| {
            refuse("invalid_target", format!("`{resource}` is not an endpoint of this server"))
        })?;
        // Whether the tenant exists and takes OAuth is told only to a person signed in (on the
        // consent page), never to whoever sends this request.
        let tenant = match &audience {
            Audience::Rest => None,
            Audience::Mcp(slug) => Some(slug.to_string()),
        };
        let request = store::Request {
            id: Uuid::new_v4(),
            client_id: client.id.clone(),
            redirect_uri,
            state: params.state.clone(),
            code_challenge: challenge,
            resource: audience.resource(issuer),
            tenant,
            scopes: granted_scopes(params.scope.as_deref()),
            expires_at: OffsetDateTime::now_utc() + REQUEST_TTL,
        };
        store::insert_request(&inner.pool, &request).await?;
        Ok(request.id)
    }

    /// The request `id` as the consent page shows it to `account`.
    pub async fn pending(&self, id: Uuid, account: &AdminUser) -> crate::Result<Pending> {
        let pool = &self.inner.pool;
        let request = store::request(pool, id).await?.ok_or_else(expired_request)?;
        let client = store::client(pool, &request.client_id).await?.ok_or_else(expired_request)?;
        let tenant = request.tenant.as_deref().map(TenantSlug::parse).transpose()?;
        let choices = self.tenants_for(account).await?;
        let allowed = match &tenant {
            Some(slug) => choices.iter().any(|c| c == slug.as_str()),
            None => !choices.is_empty(),
        };
        let redirect = reqwest::Url::parse(&request.redirect_uri).ok();
        let redirect_host = redirect
            .as_ref()
            .map(|url| url.host_str().map(str::to_string).unwrap_or_else(|| url.scheme().to_string()))
            .unwrap_or_default();
        let client_host =
            reqwest::Url::parse(&client.id).ok().and_then(|url| url.host_str().map(str::to_string));
        Ok(Pending {
            client_host,
            redirect_is_local: redirect.as_ref().is_some_and(clients::is_loopback_url),
            redirect_host,
            tenant,
            choices,
            scopes: SCOPES.iter().copied().filter(|(s, _)| request.scopes.iter().any(|r| r == s)).collect(),
            resource: request.resource,
            allowed,
            client,
        })
    }

    /// The tenants `account` may authorize clients for (enabled ones accepting OAuth).
    pub async fn tenants_for(&self, account: &AdminUser) -> crate::Result<Vec<String>> {
        let snapshot = self.inner.catalog.snapshot();
        let oauth =
            |slug: &str| snapshot.tenant(slug).is_some_and(|view| view.access.oauth && view.access.enabled);
        let mut slugs = match account.role {
            crate::admin::Role::Owner => snapshot.tenants().map(|view| view.slug.clone()).collect(),
            _ => stores::admins::tenant_slugs(&self.inner.pool, account.id).await?,
        };
        slugs.retain(|slug| oauth(slug));
        slugs.sort();
        Ok(slugs)
    }

    /// The id of tenant `slug`, if it exists.
    fn tenant_id(&self, slug: &str) -> Option<Uuid> {
        self.inner.catalog.snapshot().tenant(slug).map(|view| view.tenant_id)
    }

    /// When `account` has allowed this client this tenant's endpoint with these scopes before
    /// (and not revoked it), answers the request as approved: the URL to send the browser to.
    pub async fn remembered(&self, id: Uuid, account: &AdminUser) -> crate::Result<Option<String>> {
        let pool = &self.inner.pool;
        let Some(request) = store::request(pool, id).await? else { return Ok(None) };
        let Some(tenant_id) = request.tenant.as_deref().and_then(|slug| self.tenant_id(slug)) else {
            return Ok(None);
        };
        let grant =
            store::active_grant(pool, account.id, &request.client_id, tenant_id, &request.resource).await?;
        match grant {
            Some(grant) if request.scopes.iter().all(|s| grant.scopes.contains(s)) => {
                self.decide(id, account, true, None).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Answers the request `id` as `account` decided: the URL (the client's redirect URI with a
    /// code, or with `access_denied`) to send the browser to. `tenant` is the pick for the
    /// REST API.
    #[tracing::instrument(skip_all, err, fields(%id, username = account.username))]
    pub async fn decide(
        &self,
        id: Uuid,
        account: &AdminUser,
        approve: bool,
        tenant: Option<&str>,
    ) -> crate::Result<String> {
        // Read before the transaction: it must not wait for a second connection.
        let choices = self.tenants_for(account).await?;
        let mut tx = self.inner.pool.begin().await?;
        let request = store::take_request(&mut *tx, id).await?.ok_or_else(expired_request)?;
        let issuer = Audience::issuer_of(&request.resource).to_string();
        let back = |pairs: &[(&str, &str)]| {
            let state = [("state", request.state.as_deref().unwrap_or("")), ("iss", issuer.as_str())];
            with_query(&request.redirect_uri, &[pairs, &state].concat())
        };
        if !approve {
            tx.commit().await?;
            return Ok(back(&[("error", "access_denied"), ("error_description", "the person declined")]));
        }
        let slug = request
            .tenant
            .as_deref()
            .or(tenant)
            .ok_or_else(|| crate::Error::Invalid("choose the tenant this app may use".into()))?;
        // A tenant that does not exist, or takes no OAuth, is one the person may not choose.
        let tenant_id = match self.tenant_id(slug) {
            Some(id) if choices.iter().any(|c| c == slug) => id,
            _ => {
                return Err(crate::Error::Forbidden(format!(
                    "your account may not authorize apps for tenant `{slug}`; ask one of its administrators to add you"
                )));
            }
        };
        let grant = store::put_grant(
            &mut *tx,
            account.id,
            &request.client_id,
            tenant_id,
            &request.resource,
            &request.scopes,
        )
        .await?;
        let code = random_secret("");
        let expires = OffsetDateTime::now_utc() + CODE_TTL;
        store::insert_code(
            &mut *tx,
            &hash(&code),
            grant,
            &request.redirect_uri,
            &request.code_challenge,
            expires,
        )
        .await?;
        let what = serde_json::json!({
            "client_id": request.client_id, "tenant": slug, "resource": request.resource, "scopes": request.scopes,
        });
        stores::record(
            &mut *tx,
            &Actor::admin(&account.username),
            &Change::new("authorize", "oauth_grant", grant).after(&what),
        )
        .await?;
        tx.commit().await?;
        Ok(back(&[("code", &code)]))
    }

    /// The token endpoint: a code or a refresh token for new tokens.
    #[tracing::instrument(skip_all, fields(grant_type = params.grant_type.as_deref()))]
    pub async fn token(
        &self,
        params: TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<Tokens, OAuthError> {
        let client = self.authenticate_client(&params, basic).await?;
        let pool = &self.inner.pool;
        // What is spent is spent only with the tokens it buys: a failure on the way leaves the
        // code or refresh token as it was, for the client's retry.
        let mut tx = pool.begin().await?;
        let spent = match params.grant_type.as_deref() {
            Some("authorization_code") => {
                let code = params
                    .code
                    .as_deref()
                    .ok_or_else(|| OAuthError::refused("invalid_request", "code is missing"))?;
                store::spend_code(&mut *tx, &hash(code)).await?
            }
            Some("refresh_token") => {
                let token = params
                    .refresh_token
                    .as_deref()
                    .ok_or_else(|| OAuthError::refused("invalid_request", "refresh_token is missing"))?;
                store::spend_refresh_token(&mut *tx, &hash(token), REFRESH_RETRY).await?
            }
            Some(other) => {
                return Err(OAuthError::refused(
                    "unsupported_grant_type",
                    format!("`{other}` is not supported: authorization_code or refresh_token"),
                ));
            }
            None => return Err(OAuthError::refused("invalid_request", "grant_type is missing")),
        };
        let what =
            if params.grant_type.as_deref() == Some("refresh_token") { "refresh token" } else { "code" };
        let spent = spent
            .ok_or_else(|| OAuthError::refused("invalid_grant", format!("unknown or revoked {what}")))?;
        if spent.client_id != client.id {
            return Err(OAuthError::refused(
                "invalid_grant",
                format!("this {what} was issued to another client"),
            ));
        }
        // A refresh token presented again within moments is a retry or a concurrent refresh of the
        // same client (its answer was lost, two windows share its storage), not a thief.
        if spent.used_before.is_some() && !spent.retry {
            drop(tx);
            store::revoke_for_reuse(pool, spent.grant_id, what).await?;
            self.revoked();
            tracing::warn!(grant = %spent.grant_id, what, "one-use secret presented twice: grant revoked");
            return Err(OAuthError::refused(
                "invalid_grant",
                format!(
                    "this {what} was used already; every token of its authorization is revoked, sign in again"
                ),
            ));
        }
        if spent.expired {
            return Err(OAuthError::refused("invalid_grant", format!("this {what} has expired")));
        }
        if let Some(expected) = &spent.redirect_uri
            && params.redirect_uri.as_ref().is_some_and(|given| given != expected)
        {
            return Err(OAuthError::refused(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        if let Some(challenge) = &spent.code_challenge {
            let verifier = params
                .code_verifier
                .as_deref()
                .ok_or_else(|| OAuthError::refused("invalid_request", "code_verifier is missing (PKCE)"))?;
            if !pkce_matches(verifier, challenge) {
                return Err(OAuthError::refused(
                    "invalid_grant",
                    "code_verifier does not match the code_challenge",
                ));
            }
        }
        if let Some(resource) = &params.resource
            && resource.trim_end_matches('/') != spent.resource
        {
            return Err(OAuthError::refused(
                "invalid_target",
                format!("this authorization is for `{}`, not `{resource}`", spent.resource),
            ));
        }
        // A scope beyond the grant is refused; the tokens carry the grant's scopes (with the one
        // scope there is, nothing narrower can be asked for).
        let asked = params.scope.as_deref().unwrap_or_default();
        if let Some(beyond) = asked.split(' ').find(|s| !s.is_empty() && !spent.scopes.iter().any(|g| g == s))
        {
            return Err(OAuthError::refused("invalid_scope", format!("scope `{beyond}` was not granted")));
        }
        let Some(first_use) = spent.used_before else {
            let tokens = self.issue(&mut tx, spent.grant_id, &spent.scopes).await?;
            tx.commit().await?;
            return Ok(tokens);
        };
        // A retry: what the first use bought goes, on every replica, so that one chain of tokens
        // lives on (whoever else presented it in the window is left with nothing).
        store::drop_tokens_since(&mut *tx, spent.grant_id, first_use).await?;
        let tokens = self.issue(&mut tx, spent.grant_id, &spent.scopes).await?;
        stores::notify_and_commit(tx, "oauth_token").await?;
        self.revoked();
        Ok(tokens)
    }

    async fn issue(
        &self,
        tx: &mut sqlx::PgTransaction<'_>,
        grant: Uuid,
        scopes: &[String],
    ) -> Result<Tokens, OAuthError> {
        let config = &self.inner.config;
        let (access, refresh) = (random_secret(tokens::ACCESS_PREFIX), random_secret("tgr_"));
        let now = OffsetDateTime::now_utc();
        store::insert_tokens(
            &mut **tx,
            grant,
            (&hash(&access), now + config.access_token_ttl),
            (&hash(&refresh), now + config.refresh_token_ttl),
        )
        .await?;
        Ok(Tokens {
            access_token: access,
            token_type: "Bearer",
            expires_in: config.access_token_ttl.as_secs(),
            refresh_token: refresh,
            scope: scopes.join(" "),
        })
    }

    /// The client a token or revocation request comes from: its id, and its secret when it
    /// has one (HTTP Basic or the form, as it registered).
    async fn authenticate_client(
        &self,
        params: &TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<Client, OAuthError> {
        let invalid = |why: &str| OAuthError::refused("invalid_client", why.to_string());
        let (id, secret, method) = match basic {
            Some((id, secret)) => (id, Some(secret), AuthMethod::ClientSecretBasic),
            None => {
                let id = params.client_id.clone().ok_or_else(|| invalid("client_id is missing"))?;
                let method = match params.client_secret {
                    Some(_) => AuthMethod::ClientSecretPost,
                    None => AuthMethod::None,
                };
                (id, params.client_secret.clone(), method)
            }
        };
        let client = store::client(&self.inner.pool, &id).await?.ok_or_else(|| invalid("unknown client"))?;
        match (&client.secret_hash, secret) {
            (None, None) => Ok(client),
            (None, Some(_)) => Err(invalid("this client is public: it has no secret to send")),
            (Some(_), None) => Err(invalid("this client must authenticate with its secret")),
            (Some(stored), Some(secret)) => {
                let equal: bool =
                    subtle::ConstantTimeEq::ct_eq(stored.as_slice(), hash(&secret).as_slice()).into();
                if !equal || method != client.auth_method {
                    return Err(invalid("client authentication failed"));
                }
                Ok(client)
            }
        }
    }

    /// RFC 7009 revocation: a refresh token revokes its whole grant, an access token itself.
    /// An unknown token is not an error (the answer is the same either way).
    pub async fn revoke(
        &self,
        token: &str,
        params: &TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<(), OAuthError> {
        let client = self.authenticate_client(params, basic).await?;
        let pool = &self.inner.pool;
        let token_hash = hash(token);
        if let Some(grant) = store::refresh_token_grant(pool, &token_hash, &client.id).await? {
            let actor = Actor::client(&client.id);
            stores::oauth::revoke_grant(pool, &actor, grant, None, None).await?;
        } else {
            let mut tx = pool.begin().await?;
            if store::delete_access_token(&mut *tx, &token_hash, &client.id).await? {
                stores::notify_and_commit(tx, "oauth_token").await?;
            }
        }
        self.revoked();
        Ok(())
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

fn expired_request() -> crate::Error {
    crate::Error::Invalid(
        "this sign-in request has expired or was answered already; start again from your app".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_name_an_endpoint_of_this_issuer() {
        let issuer = "http://127.0.0.1:3000";
        let acme = Audience::Mcp(TenantSlug::parse("acme").unwrap());
        assert_eq!(Audience::parse("http://127.0.0.1:3000/mcp/acme", issuer), Some(acme.clone()));
        assert_eq!(Audience::parse("http://127.0.0.1:3000/mcp/acme/", issuer), Some(acme.clone()));
        assert_eq!(Audience::parse("HTTP://127.0.0.1:3000/mcp/acme", issuer), Some(acme));
        assert_eq!(Audience::parse("http://127.0.0.1:3000/api/v1", issuer), Some(Audience::Rest));
        for other in [
            "http://evil.example/mcp/acme",
            "http://127.0.0.1:3000/mcp/",
            "http://127.0.0.1:3000/mcp/A_B",
            "http://127.0.0.1:3000",
        ] {
            assert_eq!(Audience::parse(other, issuer), None, "{other}");
        }
        assert_eq!(Audience::issuer_of("http://h:1/mcp/acme"), "http://h:1");
        assert_eq!(Audience::issuer_of("https://gate.example/tg/api/v1"), "https://gate.example/tg");
    }

    #[test]
    fn pkce_checks_the_s256_challenge() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl", challenge));
        assert!(!pkce_matches("short", challenge));
        assert!(!pkce_matches(&"a".repeat(129), challenge));
    }

    #[test]
    fn unknown_scopes_are_left_out() {
        assert_eq!(granted_scopes(None), ["tools"]);
        assert_eq!(granted_scopes(Some("openid tools offline_access")), ["tools"]);
        assert_eq!(granted_scopes(Some("openid")), ["tools"]);
    }

    #[test]
    fn errors_go_back_with_state_and_issuer() {
        let err = AuthorizeError::Redirect {
            redirect_uri: "http://127.0.0.1:9/cb?x=1".into(),
            state: Some("s 1".into()),
            issuer: "http://h".into(),
            code: "invalid_request",
            description: "PKCE".into(),
        };
        assert_eq!(
            err.location().unwrap(),
            "http://127.0.0.1:9/cb?x=1&error=invalid_request&error_description=PKCE&state=s+1&iss=http%3A%2F%2Fh"
        );
    }
}
