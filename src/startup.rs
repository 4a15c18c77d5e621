//! Builds the HTTP application and runs it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use app::state::AppState;
use app::{App, shell};
use axum::Router;
use axum::http::HeaderName;
use axum::serve::ListenerExt;
use engine::admin::LoginPolicy;
use engine::builtin;
use engine::secret::SecretBox;
use engine::service::catalog::CatalogOptions;
use engine::service::{self, Services};
use engine::service::{Database, PgPool};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::session_store::ExpiredDeletion;
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

use crate::admin_api;
use crate::gateway::sessions::{self, SessionOwners};
use crate::gateway::{self, mcp, rest};
use crate::oauth;
use crate::operations::{self, Operations};
use crate::settings::ServeSettings;
use crate::web;

/// What a process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surfaces {
    /// `toolgate serve`: the panel, the admin API and the gateway.
    All,
    /// `toolgate gateway`: only the gateway (MCP, REST) and operations, for replicas.
    Gateway,
}

/// `toolgate serve` / `toolgate gateway`: opens the database (and for `serve` makes sure an
/// owner exists), serves until Ctrl-C or SIGTERM, then stops the private cluster if it
/// started one.
pub async fn serve(settings: ServeSettings, surfaces: Surfaces) -> anyhow::Result<()> {
    let db = Database::open(settings.database.database_url.as_deref(), &settings.database.data_dir).await?;
    if surfaces == Surfaces::All
        && let Some(password) = engine::admin::ensure_owner(db.pool()).await?
    {
        // Printed once, to the console only (not to the log).
        println!(
            "Created the owner account. Sign in as `admin` with this one-time password:\n{}\n\
             (signing in with it asks you to choose your own at once)",
            password.expose()
        );
    }
    let app = Application::build(&settings, db.pool().clone(), LoginPolicy::default(), surfaces).await?;
    tracing::info!(url = %format!("http://{}", app.address()), ?surfaces, "Toolgate is listening");
    let served = app.run_until(shutdown_signal()).await;
    db.close().await?;
    served
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// How long a stopping server waits for the requests under way.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long a stopping server waits for its buffered invocation records to be written.
const RECORDS_FLUSH: Duration = Duration::from_secs(5);

/// A bound, ready-to-run server.
pub struct Application {
    listener: TcpListener,
    router: Router,
    services: Services,
}

impl Application {
    pub async fn build(
        settings: &ServeSettings,
        pool: PgPool,
        login_policy: LoginPolicy,
        surfaces: Surfaces,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(settings.addr)
            .await
            .with_context(|| format!("cannot listen on {}", settings.addr))?;
        let site_root = settings.site_root();
        let leptos_options = LeptosOptions::builder()
            .output_name("toolgate")
            .site_root(site_root.to_string_lossy().as_ref())
            .site_pkg_dir("pkg")
            .site_addr(listener.local_addr()?)
            .build();
        let secrets = SecretBox::load(settings.secret_key.as_deref(), &settings.database.data_dir)?;
        settings
            .move_files_from_the_old_default()
            .context("moving the tenants' files out of the data folder")?;
        let providers = builtin::providers(&settings.builtin_config());
        builtin::register(&pool, &providers).await.context("registering the built-in tools")?;
        tokio::spawn(engine::service::global::keep_pruning(pool.clone(), settings.retention.retention()));
        let options = service::Options {
            catalog: CatalogOptions { force_tools_off: !settings.tools_enabled },
            // Links in tool errors need an absolute URL: the listening address stands in for
            // a public URL not set.
            upstream: settings.upstream_config(&format!("http://{}", listener.local_addr()?)),
            exec: settings.exec_config(),
            login_policy,
            oauth: settings.oauth.config(),
        };
        let services =
            Services::start(pool, secrets, &providers, options).await.context("loading the tool catalog")?;
        crate::memory::after_rebuilds(&services.catalog);
        let operations = operations::router(Operations {
            pool: services.pool.clone(),
            catalog: services.catalog.clone(),
            upstreams: services.upstreams.clone(),
            metrics_token: settings.metrics_token.clone(),
            loopback: listener.local_addr()?.ip().is_loopback(),
        });
        let public_url = settings.public_url.as_deref().map(Into::into);
        let state = AppState {
            leptos_options,
            services: services.clone(),
            public_url,
            questions: Default::default(),
        };
        let mut router = gateway_router(&state, settings).merge(operations);
        if surfaces == Surfaces::All {
            let sessions = session_layer(settings, &state.pool).await?;
            router = router.merge(panel_router(state, sessions, settings.public_url.clone()));
        }
        let router = web::security_headers(with_request_ids(router), settings.served_over_https());
        // Around everything: each handler finds the client's address (behind trusted proxies,
        // the one they forward) already worked out.
        let router = router.layer(axum::middleware::from_fn_with_state(
            Arc::new(settings.trusted_proxies.clone()),
            web::client_address,
        ));
        Ok(Application { listener, router, services })
    }

    /// The running services, for tests that act as an administrator would.
    pub fn services(&self) -> Services {
        self.services.clone()
    }

    pub fn address(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        // An MCP answer is an SSE body written in several small writes; with Nagle's algorithm
        // on, the second one waits for the client's delayed ACK (40 ms) on every call.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(err) = tcp.set_nodelay(true) {
                tracing::debug!(error = %err, "could not set TCP_NODELAY on an accepted connection");
            }
        });
        // Requests under way get `SHUTDOWN_GRACE` to finish; a stream that never ends (an MCP
        // session's event stream, a stuck client) does not keep the process alive after it.
        let shutdown = futures::FutureExt::shared(shutdown);
        let served = axum::serve(listener, self.router.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(shutdown.clone());
        let served = tokio::select! {
            served = served => served.context("the HTTP server failed"),
            () = async { shutdown.await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
                tracing::warn!(grace = ?SHUTDOWN_GRACE, "requests still open after the grace period: closing them");
                Ok(())
            }
        };
        // The records of the calls that finished, buffered if the database was away.
        let unwritten = self.services.executor.flush_records(RECORDS_FLUSH).await;
        if unwritten > 0 {
            tracing::error!(unwritten, wait = ?RECORDS_FLUSH, "invocation records lost on stopping: the database did not take them");
        }
        served
    }
}

async fn session_layer(
    settings: &ServeSettings,
    pool: &PgPool,
) -> anyhow::Result<SessionManagerLayer<PostgresStore>> {
    let store = PostgresStore::new(pool.clone());
    store.migrate().await.context("creating the session table")?;
    tokio::spawn(store.clone().continuously_delete_expired(Duration::from_secs(300)));
    let ttl = time::Duration::try_from(settings.session_ttl()).context("session lifetime")?;
    Ok(SessionManagerLayer::new(store)
        .with_name(web::SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_secure(settings.served_over_https())
        .with_expiry(Expiry::OnInactivity(ttl)))
}

/// What logs and traces keep of a request's URI: its path, without the query (an OAuth or
/// sign-in answer's code and state ride there) and with an invitation link's token hidden.
fn logged_path(uri: &axum::http::Uri) -> &str {
    let path = uri.path();
    if path.starts_with("/invite/") { "/invite/…" } else { path }
}

/// Every request gets an `x-request-id` (kept when the client sent one), echoed in the
/// response and recorded in the request's log span.
fn with_request_ids(router: Router) -> Router {
    let trace = TraceLayer::new_for_http().make_span_with(|request: &axum::http::Request<_>| {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        let id = header(REQUEST_ID.as_str()).unwrap_or_default();
        let (path, id) =
            (engine::telemetry::bounded(logged_path(request.uri())), engine::telemetry::bounded(id));
        let span = tracing::info_span!("request", method = %request.method(), %path, request_id = %id);
        // A caller's W3C trace context makes this request part of its trace.
        engine::telemetry::follow(&span, header("traceparent"), header("tracestate"));
        span
    });
    router.layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
            .layer(trace)
            .layer(PropagateRequestIdLayer::new(REQUEST_ID)),
    )
}

/// The panel and the admin API, behind sessions and the cross-site check.
fn panel_router(
    state: AppState,
    sessions: SessionManagerLayer<PostgresStore>,
    public_url: Option<String>,
) -> Router {
    let routes = generate_route_list(App);
    let context = {
        let state = state.clone();
        move || provide_context(state.clone())
    };
    let pkg = ServeDir::new(std::path::Path::new(state.leptos_options.site_root.as_ref()).join("pkg"))
        .precompressed_gzip();

    Router::new()
        .leptos_routes_with_context(&state, routes, context.clone(), {
            let options = state.leptos_options.clone();
            move || shell(options.clone())
        })
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), web::require_sign_in))
        .merge(oauth::panel_router())
        // Inside the session and cross-site layers: the admin API accepts panel sessions.
        .merge(
            admin_api::router(state.services.clone())
                .layer(axum::middleware::from_fn_with_state(state.clone(), web::identify_session)),
        )
        .nest_service("/pkg", pkg)
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(context, shell))
        .layer(axum::middleware::from_fn_with_state(state.clone(), web::read_your_writes))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(web::AllowedOrigins::new(public_url)),
            web::same_origin_writes,
        ))
        .layer(sessions)
        .with_state(state)
}

/// The surfaces for LLM applications: `/mcp/{tenant}` and `/api/v1`, behind tenant keys or
/// access tokens, and the OAuth endpoints every process serves.
fn gateway_router(state: &AppState, settings: &ServeSettings) -> Router {
    let public_hosts = settings
        .public_url
        .as_deref()
        .and_then(|url| url.parse::<axum::http::Uri>().ok())
        .and_then(|uri| uri.authority().map(|a| a.to_string()))
        .into_iter()
        .collect();
    let credentials = gateway::Credentials::new(
        state.catalog.clone(),
        state.pool.clone(),
        state.oauth.clone(),
        settings.public_url.as_deref(),
    );
    let mut manager = LocalSessionManager::default();
    // Idle sessions are closed by the session layer, which sees every request of a session;
    // rmcp's own idle timer would see only those the MCP endpoint leaves to rmcp.
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let owners =
        SessionOwners::new(manager.clone(), state.pool.clone(), settings.limits.mcp_sessions_per_key);
    let service = mcp::service(
        state.catalog.clone(),
        state.executor.clone(),
        state.pool.clone(),
        manager,
        public_hosts,
        settings.limits.input_waits_per_key,
    );
    // Outermost the Origin check, then the credential check: a named session must then be the
    // key's (or grant's) own.
    let origins = gateway::BrowserOrigins::new(
        settings.public_url.as_deref(),
        settings.mcp_allowed_origins.iter().map(String::as_str),
    );
    let cors = origins.cors();
    let mcp = Router::new()
        .route("/mcp/{tenant}", service)
        .route_layer(axum::middleware::from_fn_with_state(owners, sessions::bind_sessions))
        .route_layer(axum::middleware::from_fn_with_state(
            credentials.clone(),
            gateway::require_credentials_of_path_tenant,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::new(origins),
            gateway::allowed_browser_origins,
        ))
        .route_layer(cors);
    let rest = rest::router(
        state.catalog.clone(),
        state.executor.clone(),
        credentials.clone(),
        settings.limits.batch_calls,
    );
    mcp.merge(rest).merge(oauth::public_router(credentials, state.oauth.clone()))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        tokio::signal::ctrl_c().await.expect("cannot listen for Ctrl-C");
    };
    let terminate = async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("cannot listen for SIGTERM")
            .recv()
            .await;
    };
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
