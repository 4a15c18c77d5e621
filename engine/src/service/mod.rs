//! The application layer: what the panel, the admin API and the gateway ask of Toolgate,
//! written once. [`Services`] is what every surface holds, built once at start-up; each
//! operation takes what it needs of it and returns a typed read model that every surface shows
//! in its own way.

pub mod tenants;

use std::sync::Arc;

use sqlx::PgPool;

use crate::admin::LoginPolicy;
use crate::catalog::Catalog;
use crate::exec::Executor;
use crate::secret::SecretBox;
use crate::upstream::Upstreams;

/// The running parts of Toolgate every surface works with; cheap to clone.
#[derive(Clone)]
pub struct Services {
    pub pool: PgPool,
    /// Limits on failed sign-ins (tests use a faster one).
    pub login_policy: Arc<LoginPolicy>,
    /// The live tool catalog.
    pub catalog: Catalog,
    /// Encrypts secrets before they are stored.
    pub secrets: SecretBox,
    /// Runs tool calls: the gateway's, and test invocations from the panel and the admin API.
    pub executor: Executor,
    /// Connections to upstream MCP servers: health, refresh, probes.
    pub upstreams: Arc<Upstreams>,
}
