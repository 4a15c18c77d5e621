//! The admin API under `/api/admin/v1`, for scripts: authenticated by an admin session or an
//! admin token (`Authorization: Bearer tga_...`, from `toolgate admin token create`). Owners
//! and tokens may use it; tenant administrators are refused until tenant assignments exist.

use app::auth::ssr::signed_in;
use app::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use engine::admin::Role;
use engine::config::Document;
use engine::exec::{CallRequest, ExecError};
use engine::model::TenantSlug;
use engine::schema::Provider;
use engine::schema::lint::lint_tool;
use engine::schema::normalize::normalize;
use engine::store::{self, Actor};
use engine::tool::Caller;
use serde::Deserialize;
use serde_json::{Value, json};
use tower_sessions::Session;
use uuid::Uuid;

use crate::gateway::{Body, internal, problem, render_tool};

/// Who is calling the admin API.
#[derive(Debug, Clone)]
struct Admin {
    actor: Actor,
    /// Shown as the caller of test invocations.
    name: String,
}

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/api/admin/v1/tenants/{slug}/keys", post(create_key))
        .route("/api/admin/v1/tenants/{slug}/keys/{id}", delete(revoke_key))
        .route("/api/admin/v1/tenants/{slug}/invoke", post(invoke))
        .route("/api/admin/v1/tools/{id}/schema", get(schema))
        .route("/api/admin/v1/config", get(export_config).put(apply_config))
        .route_layer(middleware::from_fn_with_state(state, require_admin))
}

async fn require_admin(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let admin = match bearer {
        Some(token) => match engine::admin::token_name(&state.pool, &token).await {
            Ok(Some(name)) => Admin { actor: Actor::token(&name), name: format!("token:{name}") },
            Ok(None) => {
                return problem(
                    StatusCode::UNAUTHORIZED,
                    "invalid_admin_token",
                    "the admin token is unknown or revoked",
                );
            }
            Err(err) => return internal(&err),
        },
        None => {
            let Some(session) = request.extensions().get::<Session>().cloned() else {
                return problem(StatusCode::UNAUTHORIZED, "not_signed_in", "sign in or send an admin token");
            };
            match signed_in(&session, &state.pool).await {
                Ok(Some(user)) if user.role == Role::Owner => {
                    Admin { actor: Actor::admin(&user.username), name: user.username }
                }
                Ok(Some(_)) => {
                    return problem(
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        "tenant administrators cannot use the admin API yet",
                    );
                }
                Ok(None) => {
                    return problem(
                        StatusCode::UNAUTHORIZED,
                        "not_signed_in",
                        "sign in or send an admin token",
                    );
                }
                Err(err) => return internal(&err),
            }
        }
    };
    request.extensions_mut().insert(admin);
    next.run(request).await
}

fn store_error(err: store::Error) -> Response {
    match err {
        store::Error::Invalid(m) => problem(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m),
        store::Error::Conflict(m) => problem(StatusCode::CONFLICT, "conflict", m),
        store::Error::NotFound(m) => problem(StatusCode::NOT_FOUND, "not_found", format!("{m} not found")),
        store::Error::Database(err) => internal(&err),
    }
}

fn bad_slug(err: engine::model::Invalid) -> Response {
    problem(StatusCode::NOT_FOUND, "not_found", err.0)
}

#[derive(Deserialize)]
struct NewKey {
    name: String,
}

/// `POST /api/admin/v1/tenants/{slug}/keys` `{"name"}` -> `201 {"id", "key"}`.
async fn create_key(
    State(state): State<AppState>,
    Extension(admin): Extension<Admin>,
    Path(tenant): Path<String>,
    Body(body): Body<NewKey>,
) -> Response {
    let tenant = match TenantSlug::parse(&tenant) {
        Ok(tenant) => tenant,
        Err(err) => return bad_slug(err),
    };
    match store::keys::create(&state.pool, &admin.actor, &tenant, &body.name).await {
        Ok((key, secret)) => {
            (StatusCode::CREATED, Json(json!({"id": key.id, "key": secret}))).into_response()
        }
        Err(err) => store_error(err),
    }
}

/// `DELETE /api/admin/v1/tenants/{slug}/keys/{id}` -> 204.
async fn revoke_key(
    State(state): State<AppState>,
    Extension(admin): Extension<Admin>,
    Path((tenant, id)): Path<(String, Uuid)>,
) -> Response {
    let tenant = match TenantSlug::parse(&tenant) {
        Ok(tenant) => tenant,
        Err(err) => return bad_slug(err),
    };
    match store::keys::revoke(&state.pool, &admin.actor, &tenant, id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => store_error(err),
    }
}

#[derive(Deserialize)]
struct Invoke {
    tool: String,
    #[serde(default)]
    arguments: Value,
}

/// `POST /api/admin/v1/tenants/{slug}/invoke` `{"tool", "arguments"}` -> the call's result.
async fn invoke(
    State(state): State<AppState>,
    Extension(admin): Extension<Admin>,
    Path(tenant): Path<String>,
    Body(body): Body<Invoke>,
) -> Response {
    let request = CallRequest { name: body.tool, arguments: body.arguments };
    match state.executor.call(&tenant, &Caller::Admin(admin.name), request, None).await {
        Ok(result) => Json(result).into_response(),
        Err(err @ (ExecError::UnknownTenant(_) | ExecError::UnknownTool(_))) => {
            problem(StatusCode::NOT_FOUND, "not_found", err.to_string())
        }
        Err(err) => internal(&err),
    }
}

#[derive(Deserialize)]
struct SchemaQuery {
    tenant: String,
    provider: String,
}

/// `GET /api/admin/v1/tools/{id}/schema?tenant=&provider=` -> the schema as the tenant's LLM
/// gets it from that provider, and what the provider would reject in it.
async fn schema(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
    Query(query): Query<SchemaQuery>,
) -> Response {
    let Some(provider) = Provider::parse(&query.provider) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "unknown_provider",
            "provider is one of mcp, openai, anthropic, gemini",
        );
    };
    let snapshot = state.catalog.snapshot();
    let Some(tool) =
        snapshot.tenant(&query.tenant).and_then(|view| view.tools().iter().find(|t| t.tool_id == id))
    else {
        return problem(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("tool {id} is not visible to tenant `{}`", query.tenant),
        );
    };
    let findings = lint_tool(&tool.exposed_name, &tool.input_schema, provider, tool.strict);
    let (rendering, normalised) =
        match (render_tool(tool, provider), normalize(&tool.input_schema, provider, tool.strict)) {
            (Ok(rendering), Ok(normalised)) => (rendering, normalised),
            (Err(err), _) | (_, Err(err)) => {
                return problem(StatusCode::UNPROCESSABLE_ENTITY, "unrenderable", err.to_string());
            }
        };
    Json(json!({
        "tool": tool.exposed_name,
        "provider": provider.as_str(),
        "raw": *tool.raw_input_schema,
        "llm_schema": *tool.input_schema,
        "normalised": normalised,
        "rendering": rendering,
        "findings": findings,
    }))
    .into_response()
}

/// The two spellings of the configuration document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Yaml,
}

impl Format {
    /// YAML when the named header (`Accept`, `Content-Type`) asks for it, else JSON.
    fn from_header(headers: &HeaderMap, name: header::HeaderName) -> Self {
        let value = headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if value.contains("yaml") { Format::Yaml } else { Format::Json }
    }

    fn parse(self, body: &[u8]) -> Result<Document, String> {
        match self {
            Format::Json => serde_json::from_slice(body).map_err(|err| err.to_string()),
            Format::Yaml => {
                let text = std::str::from_utf8(body).map_err(|_| "the document is not UTF-8".to_string())?;
                serde_saphyr::from_str(text).map_err(|err| err.to_string())
            }
        }
    }

    fn respond(self, document: &Document) -> Response {
        match self {
            Format::Json => Json(document).into_response(),
            Format::Yaml => match serde_saphyr::to_string(document) {
                Ok(text) => ([(header::CONTENT_TYPE, "application/yaml")], text).into_response(),
                Err(err) => internal(&err),
            },
        }
    }
}

#[derive(Deserialize)]
struct ConfigQuery {
    #[serde(default)]
    dry_run: bool,
    /// `json` or `yaml`, instead of the `Accept` header.
    format: Option<String>,
}

/// `GET /api/admin/v1/config` -> the whole configuration, JSON or (by `Accept` or
/// `?format=yaml`) YAML; secrets as `{set: true}`.
async fn export_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<ConfigQuery>,
) -> Response {
    let format = match query.format.as_deref() {
        Some("yaml") => Format::Yaml,
        Some("json") => Format::Json,
        Some(other) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "unknown_format",
                format!("format `{other}` is not json or yaml"),
            );
        }
        None => Format::from_header(&headers, header::ACCEPT),
    };
    match engine::config::export(&state.pool).await {
        Ok(document) => format.respond(&document),
        Err(err) => store_error(err),
    }
}

/// `PUT /api/admin/v1/config[?dry_run=true]` with a JSON or YAML document (by
/// `Content-Type`) -> `{"dry_run", "applied", "changes"}`. Applied in one transaction.
async fn apply_config(
    State(state): State<AppState>,
    Extension(admin): Extension<Admin>,
    Query(query): Query<ConfigQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let document = match Format::from_header(&headers, header::CONTENT_TYPE).parse(&body) {
        Ok(document) => document,
        Err(message) => return problem(StatusCode::BAD_REQUEST, "invalid_body", message),
    };
    match engine::config::apply(&state.pool, &state.secrets, &admin.actor, &document, query.dry_run).await {
        Ok(changes) => Json(json!({
            "dry_run": query.dry_run,
            "applied": !query.dry_run && !changes.is_empty(),
            "changes": changes,
        }))
        .into_response(),
        Err(err) => store_error(err),
    }
}
