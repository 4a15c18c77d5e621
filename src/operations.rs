//! What operators and orchestrators read, in the panel process and in gateway replicas alike:
//! `/healthz`, `/readyz` and Prometheus `/metrics`.
//!
//! Tool calls are counted by the engine through the `metrics` facade (by tenant, tool and
//! status, with latency histograms); upstream health and the catalog snapshot's version and
//! age are read at scrape time, so they are never stale.

use std::fmt::Write;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use engine::service::PgPool;
use engine::service::calls::CALL_SECONDS;
use engine::service::catalog::Catalog;
use engine::service::upstreams::{ConnectionStatus, Upstreams};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use subtle::ConstantTimeEq;

/// Latency buckets of tool calls, in seconds: from local tools to slow upstreams.
const BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Clone)]
pub struct Operations {
    pub pool: PgPool,
    pub catalog: Catalog,
    pub upstreams: Arc<Upstreams>,
    /// When set, `/metrics` wants `Authorization: Bearer <token>`.
    pub metrics_token: Option<String>,
    /// Whether the process listens on a loopback address only: without a token, metrics are
    /// served there and nowhere else.
    pub loopback: bool,
}

pub fn router(operations: Operations) -> Router {
    recorder();
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(operations)
}

/// The process's Prometheus recorder, installed on first use.
fn recorder() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(CALL_SECONDS.into()), BUCKETS)
            .expect("the buckets are not empty")
            .install_recorder()
            .expect("nothing else installs a metrics recorder");
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkeep.run_upkeep();
                }
            })
            .expect("cannot start the metrics upkeep thread");
        handle
    })
}

/// `GET /healthz`: 200 when the database answers, 503 otherwise.
async fn healthz(State(ops): State<Operations>) -> Response {
    match engine::service::ping(&ops.pool).await {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "health check: database unreachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response()
        }
    }
}

/// `GET /readyz`: 200 when the database answers and a catalog snapshot is loaded; the body
/// says which snapshot and how old it is.
async fn readyz(State(ops): State<Operations>) -> Response {
    let snapshot = ops.catalog.snapshot();
    let age = snapshot.built_at.elapsed().unwrap_or_default().as_secs_f64();
    let database = engine::service::ping(&ops.pool).await.is_ok();
    let ready = database && snapshot.version > 0;
    let body = serde_json::json!({
        "ready": ready,
        "database": if database { "ok" } else { "unreachable" },
        "snapshot_version": snapshot.version,
        "snapshot_age_seconds": age,
    });
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, axum::Json(body)).into_response()
}

/// `GET /metrics`: Prometheus text format.
async fn metrics(State(ops): State<Operations>, headers: HeaderMap) -> Response {
    match &ops.metrics_token {
        Some(token) => {
            let sent = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
            let sent = sent.and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
            // In constant time: how much of a guess matched must not show in the timing.
            if !bool::from(sent.as_bytes().ct_eq(token.as_bytes())) {
                return (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Bearer")],
                    "metrics need the token",
                )
                    .into_response();
            }
        }
        None if !ops.loopback => {
            let detail = "this server listens beyond loopback: set TOOLGATE_METRICS_TOKEN to serve metrics";
            return (StatusCode::FORBIDDEN, detail).into_response();
        }
        None => {}
    }
    let mut text = recorder().render();
    let snapshot = ops.catalog.snapshot();
    let age = snapshot.built_at.elapsed().unwrap_or_default().as_secs_f64();
    let _ = write!(
        text,
        "# HELP toolgate_catalog_version Version of the catalog snapshot this process serves.\n\
         # TYPE toolgate_catalog_version gauge\n\
         toolgate_catalog_version {}\n\
         # HELP toolgate_catalog_age_seconds Time since the snapshot was built.\n\
         # TYPE toolgate_catalog_age_seconds gauge\n\
         toolgate_catalog_age_seconds {age}\n\
         # HELP toolgate_runtime_alive_tasks Tasks alive in the async runtime (a leak shows as growth).\n\
         # TYPE toolgate_runtime_alive_tasks gauge\n\
         toolgate_runtime_alive_tasks {}\n\
         # HELP toolgate_upstream_status 1 for the status each upstream connection is in.\n\
         # TYPE toolgate_upstream_status gauge\n",
        snapshot.version,
        tokio::runtime::Handle::current().metrics().num_alive_tasks()
    );
    let health = ops.upstreams.health();
    for connection in &health {
        // Server names are `[A-Za-z0-9_-]`: nothing to escape.
        let tenant = connection.tenant_id.map(|id| id.to_string()).unwrap_or_default();
        for status in ConnectionStatus::ALL {
            let _ = writeln!(
                text,
                "toolgate_upstream_status{{server=\"{}\",tenant_id=\"{tenant}\",status=\"{}\"}} {}",
                connection.server,
                status.as_str(),
                u8::from(connection.status == status)
            );
        }
    }
    let _ = writeln!(
        text,
        "# HELP toolgate_upstream_last_seen_seconds Time since the last successful contact.\n\
         # TYPE toolgate_upstream_last_seen_seconds gauge"
    );
    for connection in health.iter().filter(|c| c.last_seen_secs.is_some()) {
        let tenant = connection.tenant_id.map(|id| id.to_string()).unwrap_or_default();
        let _ = writeln!(
            text,
            "toolgate_upstream_last_seen_seconds{{server=\"{}\",tenant_id=\"{tenant}\"}} {}",
            connection.server,
            connection.last_seen_secs.unwrap_or_default()
        );
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}
