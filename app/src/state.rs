//! What every request handler and server function can reach on the server.

use std::sync::Arc;

use axum::extract::FromRef;
use engine::admin::LoginPolicy;
use engine::catalog::Catalog;
use engine::db::PgPool;
use engine::exec::Executor;
use engine::secret::SecretBox;
use engine::upstream::Upstreams;
use leptos::prelude::LeptosOptions;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub pool: PgPool,
    /// Limits on failed sign-ins (tests use a faster one).
    pub login_policy: Arc<LoginPolicy>,
    /// The live tool catalog.
    pub catalog: Catalog,
    /// Encrypts secrets before they are stored.
    pub secrets: SecretBox,
    /// Runs tool calls (test invocations from the panel, and the gateway's).
    pub executor: Executor,
    /// Connections to upstream MCP servers: health, refresh.
    pub upstreams: Arc<Upstreams>,
}
