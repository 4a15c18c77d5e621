//! The admin API under `/api/admin/v1`, for scripts and everything the panel can do:
//! authenticated by an admin session or an admin token (`Authorization: Bearer tga_...`, from
//! `toolgate admin token create` or `POST /api/admin/v1/admin_tokens`). Owners and tokens may
//! use it — a read-only token only to read, a tenant's token only under that tenant's path;
//! tenant administrators are refused. Handlers are thin: each is one engine call.

mod config;
mod people;
mod resources;

use axum::extract::{Path, Query, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Extension, Json, Router};
use engine::admin::{AdminUser, Role, Scope};
use engine::model::{CallLimits, Name, TenantSlug};
use engine::schema::Provider;
use engine::service::calls::{CallHooks, CallRequest};
use engine::service::global::{NewToken, TokenGrant};
use engine::service::{Admin, Services, global, tenants};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::gateway::{Body, Failure, problem};

type Answer = Result<Response, Failure>;

fn not_found(what: impl std::fmt::Display) -> Failure {
    Failure::new(problem(StatusCode::NOT_FOUND, "not_found", what.to_string()))
}

/// A tenant named in a path; a malformed slug names no tenant.
fn tenant_slug(slug: &str) -> Result<TenantSlug, Failure> {
    TenantSlug::parse(slug).map_err(|err| not_found(err.0))
}

/// A server or group named in a path.
fn name(name: &str) -> Result<Name, Failure> {
    Name::parse(name).map_err(|err| not_found(err.0))
}

/// The admin API's routes, with their state: they can be merged into any router.
pub fn router<S: Clone + Send + Sync + 'static>(services: Services) -> Router<S> {
    Router::new()
        .route("/api/admin/v1/tenants/{slug}/keys", get(resources::list_keys).post(create_key))
        .route("/api/admin/v1/tenants/{slug}/keys/{id}", delete(revoke_key))
        .route("/api/admin/v1/tenants/{slug}/keys/{id}/limits", put(set_key_limits))
        .route("/api/admin/v1/usage", get(usage))
        .route("/api/admin/v1/tenants/{slug}/invoke", post(invoke))
        .route("/api/admin/v1/tenants/{slug}/search", get(search))
        .route("/api/admin/v1/tools/{id}/schema", get(schema))
        .route("/api/admin/v1/admin_tokens", get(list_tokens).post(create_token))
        .route("/api/admin/v1/admin_tokens/{id}", delete(revoke_token))
        .merge(config::router())
        .merge(resources::router())
        .merge(people::router())
        .route_layer(middleware::from_fn_with_state(services.clone(), require_admin))
        .with_state(services)
}

/// The administrator of the request's panel session, if any, as the panel's session layer
/// found it (`crate::web::identify_session`): the admin API accepts panel sessions without
/// knowing how they are kept.
#[derive(Debug, Clone)]
pub struct SessionAdmin(pub Option<AdminUser>);

async fn require_admin(State(state): State<Services>, mut request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let admin = match bearer {
        Some(token) => match global::authenticate_token(&state.pool, &token).await {
            Ok(Some(grant)) => {
                if let Some(refusal) = beyond_grant(&grant, request.method(), request.uri().path()) {
                    return refusal;
                }
                // A tenant's token chooses within the tenant's ceiling, as a tenant
                // administrator does, and cannot change it.
                let scope = match grant.tenant {
                    Some(tenant) => Scope::Tenants(vec![tenant.to_string()]),
                    None => Scope::Everything,
                };
                Admin::token(&grant.name, scope)
            }
            Ok(None) => {
                return problem(
                    StatusCode::UNAUTHORIZED,
                    "invalid_admin_token",
                    "the admin token is unknown, revoked or expired",
                );
            }
            Err(err) => return Failure::from(err).into_response(),
        },
        None => match request.extensions().get::<SessionAdmin>().and_then(|signed_in| signed_in.0.clone()) {
            Some(user) if user.password_temporary => {
                return problem(
                    StatusCode::FORBIDDEN,
                    "password_change_required",
                    "this session signed in with a one-time password: choose your own in the panel first",
                );
            }
            Some(user) if user.role == Role::Owner => Admin::signed_in(&user.username, Scope::Everything),
            Some(_) => {
                return problem(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "tenant administrators cannot use the admin API yet",
                );
            }
            None => {
                return problem(StatusCode::UNAUTHORIZED, "not_signed_in", "sign in or send an admin token");
            }
        },
    };
    request.extensions_mut().insert(admin);
    next.run(request).await
}

/// The refusal of a request outside what a token's grant allows, if it is.
fn beyond_grant(grant: &TokenGrant, method: &Method, path: &str) -> Option<Response> {
    if grant.read_only && !matches!(*method, Method::GET | Method::HEAD) {
        return Some(problem(StatusCode::FORBIDDEN, "read_only_token", "this admin token may only read"));
    }
    let tenant = grant.tenant.as_ref()?;
    let own = format!("/api/admin/v1/tenants/{tenant}");
    let inside = path.strip_prefix(&own).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    (!inside).then(|| {
        problem(
            StatusCode::FORBIDDEN,
            "tenant_token",
            format!("this admin token may manage only tenant `{tenant}`, under {own}"),
        )
    })
}

#[derive(Deserialize)]
struct NewAdminToken {
    name: String,
    /// RFC 3339; the token never expires when left out.
    #[serde(default, with = "time::serde::rfc3339::option")]
    expires_at: Option<time::OffsetDateTime>,
    #[serde(default)]
    read_only: bool,
    /// Limits the token to this tenant's part of the API.
    tenant: Option<String>,
}

/// `GET /api/admin/v1/admin_tokens` -> every token (never the token itself).
async fn list_tokens(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    Ok(Json(json!({"admin_tokens": global::tokens(&state, &admin.owner()?).await?})).into_response())
}

/// `POST /api/admin/v1/admin_tokens` `{"name", "expires_at"?, "read_only"?, "tenant"?}` ->
/// `201 {"id", "token"}`: the only time the token is shown.
async fn create_token(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(body): Body<NewAdminToken>,
) -> Answer {
    let tenant = body.tenant.as_deref().map(tenant_slug).transpose()?;
    let new = NewToken { name: body.name, expires_at: body.expires_at, read_only: body.read_only, tenant };
    let (token, secret) = global::create_token(&state, &admin.owner()?, &new).await?;
    Ok((StatusCode::CREATED, Json(json!({"id": token.id, "token": secret}))).into_response())
}

/// `DELETE /api/admin/v1/admin_tokens/{id}` -> 204; the token's next request is refused.
async fn revoke_token(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(id): Path<Uuid>,
) -> Answer {
    global::revoke_token(&state, &admin.owner()?, id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct NewKey {
    name: String,
    /// RFC 3339; the key never expires when left out.
    #[serde(default, with = "time::serde::rfc3339::option")]
    expires_at: Option<time::OffsetDateTime>,
    /// `{"per_minute", "per_day", "concurrent"}`, each optional; none when left out.
    #[serde(default)]
    limits: CallLimits,
}

/// `POST /api/admin/v1/tenants/{slug}/keys` `{"name", "expires_at"?, "limits"?}` ->
/// `201 {"id", "key"}`.
async fn create_key(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(tenant): Path<String>,
    Body(body): Body<NewKey>,
) -> Answer {
    let tenant = admin.tenant(&tenant)?;
    let (key, secret) =
        tenants::create_key(&state, &tenant, &body.name, body.expires_at, body.limits).await?;
    Ok((StatusCode::CREATED, Json(json!({"id": key.id, "key": secret}))).into_response())
}

/// `DELETE /api/admin/v1/tenants/{slug}/keys/{id}` -> 204.
async fn revoke_key(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((tenant, id)): Path<(String, Uuid)>,
) -> Answer {
    tenants::revoke_key(&state, &admin.tenant(&tenant)?, id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT /api/admin/v1/tenants/{slug}/keys/{id}/limits` `{"per_minute"?, "per_day"?,
/// "concurrent"?}` -> the key; what is left out is no limit.
async fn set_key_limits(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((tenant, id)): Path<(String, Uuid)>,
    Body(limits): Body<CallLimits>,
) -> Answer {
    let key = tenants::set_key_limits(&state, &admin.tenant(&tenant)?, id, limits).await?;
    Ok(Json(key).into_response())
}

/// `GET /api/admin/v1/usage` -> every rate limit of the tenants the caller manages, with the
/// calls counted against it in its current window.
async fn usage(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    Ok(Json(tenants::usage(&state, &admin).await?).into_response())
}

#[derive(Deserialize)]
struct Invoke {
    tool: String,
    #[serde(default)]
    arguments: Value,
}

/// `POST /api/admin/v1/tenants/{slug}/invoke` `{"tool", "arguments"}` -> the call's result.
async fn invoke(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(tenant): Path<String>,
    Body(body): Body<Invoke>,
) -> Answer {
    let request = CallRequest { name: body.tool, arguments: body.arguments };
    let result = tenants::invoke(&state, &admin.tenant(&tenant)?, request, CallHooks::default()).await?;
    Ok(Json(result).into_response())
}

#[derive(Deserialize)]
struct SearchQuery {
    query: String,
    #[serde(default = "five")]
    count: usize,
}

fn five() -> usize {
    5
}

/// `GET /api/admin/v1/tenants/{slug}/search?query=&count=` -> the tenant's tools that match
/// `query` best (5 unless `count` says, at most 50), best first, with their scores.
async fn search(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(tenant): Path<String>,
    Query(query): Query<SearchQuery>,
) -> Answer {
    let found = tenants::search(&state, &admin.tenant(&tenant)?, &query.query, query.count).await?;
    Ok(Json(found).into_response())
}

#[derive(Deserialize)]
struct SchemaQuery {
    tenant: String,
    provider: String,
}

/// `GET /api/admin/v1/tools/{id}/schema?tenant=&provider=` -> the schema as the tenant's LLM
/// gets it from that provider, and what the provider would reject in it.
async fn schema(
    State(state): State<Services>,
    Path(id): Path<Uuid>,
    Query(query): Query<SchemaQuery>,
) -> Answer {
    let Some(provider) = Provider::parse(&query.provider) else {
        return Err(Failure::new(problem(
            StatusCode::BAD_REQUEST,
            "unknown_provider",
            "provider is one of mcp, openai, anthropic, gemini",
        )));
    };
    let snapshot = state.catalog.snapshot();
    let (view, tool) = snapshot
        .tenant(&query.tenant)
        .and_then(|view| Some((view, view.tools().iter().find(|t| t.tool_id == id)?)))
        .ok_or_else(|| not_found(format!("tool {id} is not visible to tenant `{}`", query.tenant)))?;
    let inspection = tool.inspect(provider, view.portable_mcp_schemas).map_err(|err| {
        Failure::new(problem(StatusCode::UNPROCESSABLE_ENTITY, "unrenderable", err.to_string()))
    })?;
    Ok(Json(inspection).into_response())
}
