//! The surfaces LLM applications reach, authenticated by tenant API keys or OAuth access
//! tokens: the MCP endpoint ([`mcp`]) and the REST API ([`rest`]).

mod lists;
pub mod mcp;
pub mod rest;
pub mod rounds;
pub mod sessions;

pub use lists::RenderCache;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engine::oauth::{AuthServer, TokenRefusal};
use engine::service::PgPool;
use engine::service::catalog::Catalog;
use engine::service::sessions::SessionOwner;
use engine::tool::{Caller, User};
use uuid::Uuid;

/// The tenant a request was authenticated for, and who is calling: an API key, or a person
/// through a client they authorized (an OAuth access token). Put into the request by the
/// credential check.
#[derive(Debug, Clone)]
pub struct TenantAccess {
    pub tenant: String,
    pub caller: Caller,
}

impl TenantAccess {
    /// Who the request's MCP sessions belong to.
    pub fn session_owner(&self) -> Option<SessionOwner> {
        match &self.caller {
            Caller::ApiKey(key) => Some(SessionOwner::Key(*key)),
            Caller::User(user) => Some(SessionOwner::Grant(user.grant)),
            Caller::Admin(_) => None,
        }
    }
}

/// Which endpoint a request is for, which decides the credentials it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint<'a> {
    /// `/mcp/{tenant}`: a key or a token of that tenant's endpoint.
    Mcp(&'a str),
    /// `/api/v1`: a key (its tenant), or a token for the REST API.
    Rest,
}

/// State of the credential checks: API keys (in the catalog snapshot) and access tokens (the
/// authorization server).
#[derive(Clone)]
pub struct Credentials {
    catalog: Catalog,
    pool: PgPool,
    oauth: AuthServer,
    /// `TOOLGATE_PUBLIC_URL`, when set.
    public_url: Option<Arc<str>>,
    /// When each key's `last_used_at` was last written, so the hot path writes at most once a
    /// minute per key.
    touched: Arc<Mutex<HashMap<Uuid, Instant>>>,
}

impl Credentials {
    pub fn new(catalog: Catalog, pool: PgPool, oauth: AuthServer, public_url: Option<&str>) -> Self {
        let public_url = public_url.map(Into::into);
        Credentials { catalog, pool, oauth, public_url, touched: Arc::default() }
    }

    /// The base URL clients reach Toolgate at: the public URL, or this request's host (which
    /// the MCP endpoint only accepts on loopback or the public URL's host).
    pub fn issuer(&self, headers: &HeaderMap) -> String {
        engine::oauth::issuer(self.public_url.as_deref(), headers)
    }

    /// The tenant and caller of the request's `Authorization: Bearer <key or token>`.
    async fn authenticate(
        &self,
        headers: &HeaderMap,
        endpoint: Endpoint<'_>,
    ) -> Result<TenantAccess, Refusal> {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or(Refusal::NoCredentials)?;
        if bearer.starts_with(engine::oauth::ACCESS_PREFIX) {
            return self.token(bearer, endpoint).await;
        }
        let snapshot = self.catalog.snapshot();
        let identity = snapshot.authenticate(bearer).ok_or(Refusal::NoCredentials)?;
        if let Some(at) = identity.expired() {
            return Err(Refusal::Expired(at));
        }
        if let Endpoint::Mcp(tenant) = endpoint
            && identity.tenant != tenant
        {
            return Err(Refusal::NoCredentials);
        }
        if let Some(view) = snapshot.tenant(&identity.tenant) {
            if !view.access.enabled {
                return Err(Refusal::Disabled);
            }
            if !view.access.api_keys {
                return Err(Refusal::KeysOff);
            }
        }
        self.touch(identity.key_id);
        Ok(TenantAccess { tenant: identity.tenant.clone(), caller: Caller::ApiKey(identity.key_id) })
    }

    async fn token(&self, token: &str, endpoint: Endpoint<'_>) -> Result<TenantAccess, Refusal> {
        let access = self.oauth.authenticate(token).await.map_err(|refusal| match refusal {
            TokenRefusal::Failed(err) => Refusal::Failed(err),
            refusal => Refusal::InvalidToken(refusal.to_string()),
        })?;
        let for_here = match endpoint {
            Endpoint::Mcp(tenant) => !access.rest && access.tenant == tenant,
            Endpoint::Rest => access.rest,
        };
        if !for_here {
            return Err(Refusal::InvalidToken(
                "the access token is for another endpoint (its audience)".into(),
            ));
        }
        if let Some(view) = self.catalog.snapshot().tenant(&access.tenant) {
            if !view.access.enabled {
                return Err(Refusal::Disabled);
            }
            if !view.access.oauth {
                return Err(Refusal::InvalidToken("this tenant no longer accepts sign-in with OAuth".into()));
            }
        }
        let user = User {
            account: access.account,
            username: access.username.clone(),
            grant: access.grant,
            client: access.client.clone(),
        };
        Ok(TenantAccess { tenant: access.tenant.clone(), caller: Caller::User(Arc::new(user)) })
    }

    fn touch(&self, key_id: Uuid) {
        let mut touched = self.touched.lock().expect("touched keys");
        if touched.get(&key_id).is_some_and(|at| at.elapsed() < Duration::from_secs(60)) {
            return;
        }
        touched.insert(key_id, Instant::now());
        let pool = self.pool.clone();
        tokio::spawn(async move {
            if let Err(err) = engine::service::sessions::record_key_use(&pool, key_id).await {
                tracing::warn!(error = %err, "could not record key use");
            }
        });
    }
}

/// A refused request, answered as a problem document.
pub struct Failure(Box<Response>);

impl Failure {
    pub fn new(response: Response) -> Self {
        Failure(Box::new(response))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        *self.0
    }
}

/// The REST and admin APIs' answer to an engine error: its status and a stable code.
impl From<engine::Error> for Failure {
    fn from(err: engine::Error) -> Self {
        use engine::{Error, Missing};
        Failure::new(match err {
            Error::Invalid(message) => problem(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message),
            Error::Conflict(message) => problem(StatusCode::CONFLICT, "conflict", message),
            Error::NotFound(missing) => {
                let code = match missing {
                    Missing::Tool(_) => "unknown_tool",
                    Missing::Unfound(_) => "tool_not_found_yet",
                    Missing::PendingCall(_) => "unknown_pending_call",
                    Missing::Tenant(_) | Missing::Other(_) => "not_found",
                };
                problem(StatusCode::NOT_FOUND, code, missing.to_string())
            }
            Error::Forbidden(message) => problem(StatusCode::FORBIDDEN, "forbidden", message),
            Error::Limited(limited) => limited_problem(&limited),
            Error::Upstream(err) => problem(StatusCode::BAD_GATEWAY, "upstream_unavailable", err.to_string()),
            err @ Error::Unavailable(_) => {
                tracing::warn!(error = ?err, "request while the database is unreachable");
                problem(StatusCode::SERVICE_UNAVAILABLE, "database_unavailable", err.to_string())
            }
            Error::Internal(err) => internal(&err),
        })
    }
}

/// Logs `err` under a fresh correlation id; returns the only part a client sees.
pub fn log_internal(err: &dyn std::fmt::Display) -> String {
    let reference = Uuid::new_v4().simple().to_string();
    tracing::error!(%reference, error = %err, "request failed");
    format!("internal error (correlation id {reference})")
}

/// What a client is told of `err`: its message, or for Toolgate's own faults only the
/// correlation id they are logged under.
pub fn shown(err: &engine::Error) -> String {
    match err {
        engine::Error::Internal(cause) => log_internal(cause),
        err => err.to_string(),
    }
}

/// A 500 problem that carries only a correlation id; the details go to the log.
pub fn internal(err: &dyn std::fmt::Display) -> Response {
    problem(StatusCode::INTERNAL_SERVER_ERROR, "internal", log_internal(err))
}

/// A JSON request body. One that does not parse is answered with a 400 `invalid_body`
/// problem saying why (one over the size limit with a 413 `body_too_large`), before the
/// handler runs.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for Body<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(body)) => Ok(Body(body)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(problem(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large", rejection.body_text()))
            }
            Err(rejection) => Err(problem(StatusCode::BAD_REQUEST, "invalid_body", rejection.body_text())),
        }
    }
}

/// An RFC 9457 problem document with a stable `code`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'static str,
    status: u16,
    /// Stable, for programs: `invalid_api_key`, `unknown_tool`, `invalid_body`, ...
    code: String,
    /// For people: what was wrong.
    detail: String,
    /// With `busy` and `rate_limited`: the limit that refused the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    limit: Option<engine::model::Limited>,
}

/// An RFC 9457 problem response with a stable `code`.
pub fn problem(status: StatusCode, code: &str, detail: impl Into<String>) -> Response {
    problem_with(status, code, detail.into(), None)
}

/// A call a limit refused: 429 with `Retry-After`, code `busy` for too many running calls and
/// `rate_limited` for a spent rate, and the limit in `limit`.
fn limited_problem(limited: &engine::model::Limited) -> Response {
    let code = match limited.limit {
        engine::model::limits::Kind::Concurrent => "busy",
        _ => "rate_limited",
    };
    let mut response =
        problem_with(StatusCode::TOO_MANY_REQUESTS, code, limited.to_string(), Some(limited.clone()));
    response.headers_mut().insert(header::RETRY_AFTER, limited.retry_after.as_secs().into());
    response
}

fn problem_with(
    status: StatusCode,
    code: &str,
    detail: String,
    limit: Option<engine::model::Limited>,
) -> Response {
    let body = Problem {
        kind: "about:blank",
        title: status.canonical_reason().unwrap_or("Error"),
        status: status.as_u16(),
        code: code.to_string(),
        detail,
        limit,
    };
    let body = serde_json::to_string(&body).expect("problems serialise");
    let mut response = (status, [(header::CONTENT_TYPE, "application/problem+json")], body).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    }
    response
}

/// Why a request's credentials were refused, with what the client needs to sign in (RFC 6750
/// and RFC 9728: where the protected resource's metadata is).
enum Refusal {
    /// None, or a key that is unknown, revoked, or another tenant's.
    NoCredentials,
    Expired(time::OffsetDateTime),
    /// The tenant turned API keys off.
    KeysOff,
    /// An owner disabled the tenant: no credential helps.
    Disabled,
    /// An access token that is unknown, expired, revoked or for another endpoint.
    InvalidToken(String),
    Failed(engine::Error),
}

impl Refusal {
    fn answer(self, resource_metadata: &str) -> Response {
        let (code, detail, token_error) = match self {
            Refusal::Failed(err) => return Failure::from(err).into_response(),
            Refusal::Disabled => {
                let detail = "this tenant is disabled; an owner can enable it again in the panel";
                return problem(StatusCode::FORBIDDEN, "tenant_disabled", detail);
            }
            Refusal::NoCredentials => (
                "invalid_api_key",
                "a valid API key of this tenant, or an access token, is required: Authorization: Bearer <key>".into(),
                None,
            ),
            Refusal::Expired(at) => {
                let at = at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
                ("expired_api_key", format!("this API key expired at {at}; ask an administrator for a new one"), None)
            }
            Refusal::KeysOff => (
                "invalid_api_key",
                "this tenant does not accept API keys: sign in with OAuth instead".to_string(),
                None,
            ),
            Refusal::InvalidToken(why) => ("invalid_token", why.clone(), Some(why)),
        };
        let mut response = problem(StatusCode::UNAUTHORIZED, code, detail);
        let scope = engine::oauth::SCOPES.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(" ");
        let challenge = match token_error {
            Some(why) => format!(
                r#"Bearer error="invalid_token", error_description="{}", resource_metadata="{resource_metadata}", scope="{scope}""#,
                why.replace('"', "'")
            ),
            None => format!(r#"Bearer resource_metadata="{resource_metadata}", scope="{scope}""#),
        };
        if let Ok(value) = header::HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The well-known URL of the protected resource metadata of `path` (RFC 9728 §3.1).
pub fn resource_metadata_url(issuer: &str, path: &str) -> String {
    format!("{issuer}{}{path}", crate::oauth::PROTECTED_RESOURCE)
}

/// The browser origins whose pages may call the MCP endpoint: Toolgate's public URL's and
/// those an operator lists (a browser-based client such as the MCP Inspector).
pub struct BrowserOrigins {
    all: Vec<String>,
    /// The listed ones, which are other sites: answered with CORS headers.
    listed: Vec<String>,
}

impl BrowserOrigins {
    pub fn new<'a>(public_url: Option<&'a str>, listed: impl IntoIterator<Item = &'a str>) -> Self {
        let listed: Vec<String> = listed.into_iter().map(origin_of).collect();
        BrowserOrigins { all: public_url.map(origin_of).into_iter().chain(listed.clone()).collect(), listed }
    }

    /// CORS for the listed origins, so a browser-based client there can read the answers (the
    /// preflight is answered before any credential check, as browsers send it without).
    pub fn cors(&self) -> tower_http::cors::CorsLayer {
        use axum::http::{HeaderName, HeaderValue, Method};
        let origins = self.listed.iter().filter_map(|origin| HeaderValue::from_str(origin).ok());
        let mcp = ["mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id"];
        tower_http::cors::CorsLayer::new()
            .allow_origin(tower_http::cors::AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers(
                [header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT]
                    .into_iter()
                    .chain(mcp.map(HeaderName::from_static))
                    .collect::<Vec<_>>(),
            )
            .expose_headers([HeaderName::from_static("mcp-session-id"), header::WWW_AUTHENTICATE])
    }
}

/// `origin` as browsers send it: `scheme://host[:port]` with the default port left out; an
/// origin of another kind (`chrome-extension://…`, `null`) as its lower-cased text.
fn origin_of(origin: &str) -> String {
    let origin = origin.trim();
    match url::Url::parse(origin).map(|url| url.origin()) {
        Ok(tuple) if tuple.is_tuple() => tuple.ascii_serialization(),
        _ => origin.to_ascii_lowercase(),
    }
}

/// An answer given before the request's body was read. Over HTTP/1.1 the server cannot keep
/// the connection unless the body happens to be buffered already (hyper closes it otherwise, and
/// silently), so a client could send its next request on a connection about to close and see it
/// dropped: the answer says `Connection: close`.
pub(crate) fn before_the_body(version: Version, response: impl IntoResponse) -> Response {
    let mut response = response.into_response();
    if version < Version::HTTP_2 {
        response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    response
}

/// For `/mcp/{tenant}`: a request from a browser page (it carries `Origin`) must come from one
/// of the [`BrowserOrigins`], else 403 — another site's page, or one reaching a local Toolgate
/// through DNS rebinding, gets nowhere. A request without `Origin` (no browser) passes.
pub async fn allowed_browser_origins(
    State(allowed): State<Arc<BrowserOrigins>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(origin) = request.headers().get(header::ORIGIN) else { return next.run(request).await };
    let origin = origin.to_str().ok().map(origin_of);
    if origin.is_some_and(|origin| allowed.all.contains(&origin)) {
        return next.run(request).await;
    }
    let detail = "the Origin of this request is not allowed: browser pages may call the MCP endpoint only from \
                  TOOLGATE_PUBLIC_URL or an origin in TOOLGATE_MCP_ALLOWED_ORIGINS";
    before_the_body(request.version(), problem(StatusCode::FORBIDDEN, "origin_not_allowed", detail))
}

/// For `/mcp/{tenant}`: a key of the tenant in the path, or a token of its endpoint. Anything
/// else is 401, without revealing whether the tenant exists.
pub async fn require_credentials_of_path_tenant(
    State(check): State<Credentials>,
    Path(tenant): Path<String>,
    mut request: Request,
    next: Next,
) -> Response {
    match check.authenticate(request.headers(), Endpoint::Mcp(&tenant)).await {
        Ok(access) => {
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Err(refused) => {
            let issuer = check.issuer(request.headers());
            let metadata = resource_metadata_url(&issuer, &format!("/mcp/{tenant}"));
            before_the_body(request.version(), refused.answer(&metadata))
        }
    }
}

/// For the REST API: the key, or the token's grant, decides the tenant.
pub async fn require_credentials(
    State(check): State<Credentials>,
    mut request: Request,
    next: Next,
) -> Response {
    match check.authenticate(request.headers(), Endpoint::Rest).await {
        Ok(access) => {
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Err(refused) => {
            let issuer = check.issuer(request.headers());
            let metadata = resource_metadata_url(&issuer, engine::oauth::REST_PATH);
            before_the_body(request.version(), refused.answer(&metadata))
        }
    }
}
