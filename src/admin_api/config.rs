//! Config as code over HTTP: `GET`/`PUT /api/admin/v1/config`, JSON or YAML (see
//! docs/config.md).

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use engine::config::{Document, Format};
use engine::service::Services;
use serde::Deserialize;
use serde_json::json;

use super::{Answer, Failure};
use engine::service::{Admin, global};

pub(super) fn router() -> Router<Services> {
    Router::new().route("/api/admin/v1/config", get(export).put(apply))
}
use crate::gateway::{internal, problem};

/// YAML when the named header (`Accept`, `Content-Type`) asks for it, else JSON.
fn format_of(headers: &HeaderMap, name: header::HeaderName) -> Format {
    let value = headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if value.contains("yaml") { Format::Yaml } else { Format::Json }
}

fn respond(format: Format, document: &Document) -> Response {
    match format {
        Format::Json => Json(document).into_response(),
        Format::Yaml => match format.write(document) {
            Ok(text) => ([(header::CONTENT_TYPE, "application/yaml")], text).into_response(),
            Err(err) => internal(&err),
        },
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
async fn export(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    headers: HeaderMap,
    Query(query): Query<ConfigQuery>,
) -> Answer {
    let format = match query.format.as_deref() {
        Some("yaml") => Format::Yaml,
        Some("json") => Format::Json,
        Some(other) => {
            let detail = format!("format `{other}` is not json or yaml");
            return Err(Failure::new(problem(StatusCode::BAD_REQUEST, "unknown_format", detail)));
        }
        None => format_of(&headers, header::ACCEPT),
    };
    Ok(respond(format, &global::export_config(&state, &admin.owner()?).await?))
}

/// `PUT /api/admin/v1/config[?dry_run=true]` with a JSON or YAML document (by
/// `Content-Type`) -> `{"dry_run", "applied", "changes"}`. Applied in one transaction.
async fn apply(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Query(query): Query<ConfigQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let document = format_of(&headers, header::CONTENT_TYPE)
        .parse(&body)
        .map_err(|message| Failure::new(problem(StatusCode::BAD_REQUEST, "invalid_body", message)))?;
    let changes = global::apply_config(&state, &admin.owner()?, &document, query.dry_run).await?;
    Ok(Json(json!({
        "dry_run": query.dry_run,
        "applied": !query.dry_run && !changes.is_empty(),
        "changes": changes,
    }))
    .into_response())
}
