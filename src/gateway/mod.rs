//! The surfaces LLM applications reach, authenticated by tenant API keys: the MCP endpoint
//! ([`mcp`]) and the REST API ([`rest`]).

pub mod mcp;
pub mod rest;
pub mod rounds;
pub mod sessions;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engine::catalog::{Catalog, CatalogTool};
use engine::db::PgPool;
use engine::schema::Provider;
use uuid::Uuid;

/// The tenant (and key) a request was authenticated for, put into the request by the key
/// check.
#[derive(Debug, Clone)]
pub struct TenantAccess {
    pub tenant: String,
    pub key_id: Uuid,
}

/// State of the tenant-key checks.
#[derive(Clone)]
pub struct KeyCheck {
    catalog: Catalog,
    pool: PgPool,
    /// When each key's `last_used_at` was last written, so the hot path writes at most once a
    /// minute per key.
    touched: Arc<Mutex<HashMap<Uuid, Instant>>>,
}

impl KeyCheck {
    pub fn new(catalog: Catalog, pool: PgPool) -> Self {
        KeyCheck { catalog, pool, touched: Arc::default() }
    }

    /// The tenant the request's `Authorization: Bearer <key>` belongs to.
    fn authenticate(&self, headers: &HeaderMap) -> Result<TenantAccess, Refusal> {
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(Refusal::NoKey)?;
        let snapshot = self.catalog.snapshot();
        let identity = snapshot.authenticate(key).ok_or(Refusal::NoKey)?;
        if let Some(at) = identity.expired() {
            return Err(Refusal::Expired(at));
        }
        self.touch(identity.key_id);
        Ok(TenantAccess { tenant: identity.tenant.clone(), key_id: identity.key_id })
    }

    fn touch(&self, key_id: Uuid) {
        let mut touched = self.touched.lock().expect("touched keys");
        if touched.get(&key_id).is_some_and(|at| at.elapsed() < Duration::from_secs(60)) {
            return;
        }
        touched.insert(key_id, Instant::now());
        let pool = self.pool.clone();
        tokio::spawn(async move {
            if let Err(err) = engine::store::keys::touch(&pool, key_id).await {
                tracing::warn!(error = %err, "could not record key use");
            }
        });
    }
}

/// Each tenant's tools rendered for one provider, converted to `T` and serialised, kept for
/// one snapshot version: listing tools costs a lookup and a copy of bytes, not a rendering,
/// until the configuration changes. Only the bytes are kept (the rendered values cost
/// several times their size).
pub struct RenderCache<T> {
    provider: Provider,
    convert: fn(serde_json::Value) -> Option<T>,
    entries: Mutex<HashMap<String, Arc<Rendered>>>,
}

/// The size of a serialised tool list whose rendering freed enough memory to return it to the
/// system: the rendered values of 5,000 tools took 16 times their 1.4 MB of JSON.
const BIG_LIST: usize = 1 << 20;

/// A tenant's serialised tool lists for one snapshot version: one per form a surface serves
/// them in (the MCP endpoint's protocol eras; the REST API's one list), each made on first use.
struct Rendered {
    version: u64,
    bodies: [OnceLock<Bytes>; 2],
}

impl<T> RenderCache<T> {
    pub fn new(provider: Provider, convert: fn(serde_json::Value) -> Option<T>) -> Self {
        RenderCache { provider, convert, entries: Mutex::default() }
    }

    /// Renders `tools`, leaving out (with a warning) any that cannot be rendered.
    pub fn render(&self, tools: &[Arc<CatalogTool>]) -> Vec<T> {
        tools
            .iter()
            .filter_map(|tool| match tool.render(self.provider) {
                Ok(rendered) => (self.convert)(rendered),
                Err(err) => {
                    tracing::warn!(tool = %tool.exposed_name, provider = self.provider.as_str(), error = %err, "tool not served");
                    None
                }
            })
            .collect()
    }

    /// The tenant's tools as answer `form`, which `serialise` makes of their rendering once
    /// per snapshot version.
    pub fn body(
        &self,
        catalog: &Catalog,
        tenant: &str,
        form: usize,
        serialise: impl FnOnce(Vec<T>) -> Bytes,
    ) -> Bytes {
        let snapshot = catalog.snapshot();
        let rendered = {
            let mut entries = self.entries.lock().expect("render cache");
            match entries.get(tenant) {
                Some(cached) if cached.version == snapshot.version => cached.clone(),
                _ => {
                    let fresh = Arc::new(Rendered { version: snapshot.version, bodies: Default::default() });
                    entries.insert(tenant.to_string(), fresh.clone());
                    fresh
                }
            }
        };
        rendered.bodies[form]
            .get_or_init(|| {
                let tools = self.render(snapshot.tenant(tenant).map(|view| view.tools()).unwrap_or_default());
                let body = serialise(tools);
                if body.len() >= BIG_LIST {
                    crate::memory::release_soon();
                }
                body
            })
            .clone()
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
    limit: Option<engine::exec::Limited>,
}

/// An RFC 9457 problem response with a stable `code`.
pub fn problem(status: StatusCode, code: &str, detail: impl Into<String>) -> Response {
    problem_with(status, code, detail.into(), None)
}

/// A call a limit refused: 429 with `Retry-After`, code `busy` for too many running calls and
/// `rate_limited` for a spent rate, and the limit in `limit`.
fn limited_problem(limited: &engine::exec::Limited) -> Response {
    let code = match limited.limit {
        engine::exec::limits::Kind::Concurrent => "busy",
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
    limit: Option<engine::exec::Limited>,
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

/// Why a request's key was refused.
enum Refusal {
    /// Missing, unknown, revoked, or another tenant's.
    NoKey,
    Expired(time::OffsetDateTime),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::NoKey => problem(
                StatusCode::UNAUTHORIZED,
                "invalid_api_key",
                "a valid API key of this tenant is required: Authorization: Bearer <key>",
            ),
            Refusal::Expired(at) => {
                let at = at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
                let detail = format!("this API key expired at {at}; ask an administrator for a new one");
                problem(StatusCode::UNAUTHORIZED, "expired_api_key", detail)
            }
        }
    }
}

/// For `/mcp/{tenant}`: the key must belong to the tenant in the path. Anything else is 401,
/// without revealing whether the tenant exists.
pub async fn require_key_of_path_tenant(
    State(check): State<KeyCheck>,
    Path(tenant): Path<String>,
    mut request: Request,
    next: Next,
) -> Response {
    match check.authenticate(request.headers()) {
        Ok(access) if access.tenant == tenant => {
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Ok(_) => Refusal::NoKey.into_response(),
        Err(refused) => refused.into_response(),
    }
}

/// For the REST API: the key decides the tenant.
pub async fn require_key(State(check): State<KeyCheck>, mut request: Request, next: Next) -> Response {
    match check.authenticate(request.headers()) {
        Ok(access) => {
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Err(refused) => refused.into_response(),
    }
}
