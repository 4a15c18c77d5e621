//! The application layer: what the panel, the admin API and the gateway ask of Toolgate,
//! written once. [`Services`] is what every surface holds, built once at start-up; each
//! operation takes what it needs of it and returns a typed read model that every surface shows
//! in its own way.

mod access;
pub mod accounts;
pub mod apps;
pub mod calls;
pub mod catalog;
pub mod global;
pub mod members;
pub mod operator;
pub mod servers;
pub mod sessions;
pub mod sign_in;
pub mod tenants;
pub mod upstreams;

pub use crate::db::{Database, PgPool, ping};
pub use crate::store::SecretInput;
pub use access::{Admin, ManagedTenant, Owner};

use std::sync::Arc;

use crate::admin::LoginPolicy;
use crate::catalog::{Catalog, CatalogOptions};
use crate::exec::{ExecConfig, Executor};
use crate::oauth::{AuthServer, OAuthConfig};
use crate::secret::SecretBox;
use crate::tool::ToolProvider;
use crate::upstream::{UpstreamConfig, Upstreams};

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
    /// The OAuth authorization server of the gateway's endpoints.
    pub oauth: AuthServer,
}

/// How [`Services::start`] sets the parts up.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub catalog: CatalogOptions,
    pub upstream: UpstreamConfig,
    pub exec: ExecConfig,
    pub login_policy: LoginPolicy,
    pub oauth: OAuthConfig,
}

impl Services {
    /// Starts the live parts on `pool`: the catalog (loaded now, then kept current), the
    /// connections to upstream servers and the executor with the built-in `providers`.
    pub async fn start(
        pool: PgPool,
        secrets: SecretBox,
        providers: &[Arc<dyn ToolProvider>],
        options: Options,
    ) -> crate::Result<Self> {
        let catalog = Catalog::start(pool.clone(), options.catalog).await?;
        let upstreams =
            Arc::new(Upstreams::start(pool.clone(), secrets.clone(), catalog.clone(), options.upstream));
        let executor = Executor::new(
            catalog.clone(),
            pool.clone(),
            secrets.clone(),
            providers,
            Some(upstreams.clone()),
            options.exec,
        );
        let oauth = AuthServer::new(pool.clone(), catalog.clone(), options.oauth);
        Ok(Services {
            oauth,
            pool,
            login_policy: Arc::new(options.login_policy),
            catalog,
            secrets,
            executor,
            upstreams,
        })
    }
}
