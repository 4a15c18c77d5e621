//! Connections to upstream MCP servers, through rmcp: streamable HTTP, a stdio child, or the
//! legacy HTTP+SSE transport ([`sse`]).
//!
//! Each connection lives in a slot with its own task that connects, discovers (for a server's
//! own connection), watches the session, and reconnects with exponential backoff and jitter.
//! Slots are pooled by what they connect to: identical unauthenticated endpoints share one
//! connection across tenants and servers; an authenticated endpoint (headers, or a tenant's
//! own credentials) gets a connection per tenant. Every server on a shared connection is a
//! member of its slot, with its own discovered tools (under its own prefix and tags), health
//! and refresh; adding or disabling one leaves the others' connection alone. A call to a
//! server that is down fails at once with an error naming the server; nothing waits on a dead
//! upstream. The set of slots follows the configuration: a connection whose servers were all
//! removed or disabled is closed (a stdio child is killed). Stdio children start with a
//! cleared environment (`PATH`, `HOME`, `LANG` and their own `env`).
//!
//! [`connect`] opens a connection (and tests one), [`handler`] answers what an upstream sends
//! on its own, [`slot`] keeps one pooled connection alive and calls through it; this module
//! holds the pool, [`Upstreams`], which follows the configuration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

mod connect;
mod direct;
mod handler;
mod slot;
mod sse;

pub use connect::test_connection;
use slot::{Member, PoolKey, Slot, SlotState};

use crate::catalog::{Catalog, CatalogTool};
use crate::exec::Upstream;
use crate::secret::SecretBox;
use crate::store::servers;
use crate::tool::{ToolContext, ToolError, ToolFuture};

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Upstream tool descriptions are untrusted: longer ones are cut to this many bytes.
    pub description_cap: usize,
    /// How long connecting (and a call waiting for a connection) may take.
    pub connect_timeout: Duration,
    /// The longest pause between reconnection attempts.
    pub max_backoff: Duration,
    /// How often an idle connection is probed (an HTTP server that went away is otherwise
    /// noticed only by the next call).
    pub health_interval: Duration,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            description_cap: 8 * 1024,
            connect_timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(30),
            health_interval: Duration::from_secs(15),
        }
    }
}

/// How an upstream connection is doing (a call's own outcome is [`crate::exec::Status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    Connecting,
    Ready,
    /// Connected, but the last discovery failed.
    Degraded,
    Down,
}

impl ConnectionStatus {
    pub const ALL: [ConnectionStatus; 4] = [
        ConnectionStatus::Connecting,
        ConnectionStatus::Ready,
        ConnectionStatus::Degraded,
        ConnectionStatus::Down,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStatus::Connecting => "connecting",
            ConnectionStatus::Ready => "ready",
            ConnectionStatus::Degraded => "degraded",
            ConnectionStatus::Down => "down",
        }
    }
}

/// The health of one connection, as the panel and metrics show it.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub server: String,
    /// Set for a tenant's private connection.
    pub tenant_id: Option<Uuid>,
    pub status: ConnectionStatus,
    pub last_error: Option<String>,
    /// Seconds since `last_error` happened.
    pub last_error_secs: Option<f64>,
    /// Seconds since the last successful contact.
    pub last_seen_secs: Option<f64>,
    /// The MCP revision the connection speaks (`2026-07-28`, or a handshake-era one).
    pub protocol: Option<String>,
}

/// What `test_connection` reports before a server is saved.
#[derive(Debug, Clone, Serialize)]
pub struct ServerProbe {
    pub server_info: Value,
    pub tool_count: usize,
}

impl ServerProbe {
    /// The name the server gives itself, if any.
    pub fn server_name(&self) -> Option<&str> {
        self.server_info.pointer("/serverInfo/name").and_then(Value::as_str)
    }
}

/// Why an upstream server could not be reached, listed or refreshed; shown to administrators
/// (health, test connection, refresh) as it reads.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// A stdio server's program could not be started.
    #[error("cannot start the server: {0}")]
    Spawn(String),
    /// A legacy HTTP+SSE server's event stream could not be opened.
    #[error("cannot open the event stream: {0}")]
    EventStream(String),
    /// A configured header name is not one HTTP allows.
    #[error("header `{name}`: {reason}")]
    HeaderName { name: String, reason: String },
    /// A configured header value is not one HTTP allows.
    #[error("header `{0}` has an invalid value")]
    HeaderValue(String),
    /// The MCP lifecycle (`server/discover`, or the `initialize` handshake) failed.
    #[error("initialisation failed: {0}")]
    Initialise(String),
    /// Connecting took longer than the connect timeout.
    #[error("no answer within {0:?}")]
    ConnectTimeout(Duration),
    /// `tools/list` failed.
    #[error("listing tools failed: {0}")]
    Listing(String),
    /// `tools/list` took longer than the connect timeout.
    #[error("listing tools got no answer within {0:?}")]
    ListingTimeout(Duration),
    /// The discovered tools could not be recorded.
    #[error("{0}")]
    Recording(String),
    /// The server has no connection of its own (disabled or removed).
    #[error("server `{0}` is not connected (disabled or removed)")]
    NotConnected(String),
    /// Its connection is down; the message says since when and why.
    #[error("{0}")]
    Down(String),
}

/// All upstream connections of this process.
#[derive(Clone)]
pub struct Upstreams {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    secrets: SecretBox,
    config: UpstreamConfig,
    /// The HTTP client of calls made straight over HTTP ([`direct`]): its connections are
    /// kept alive between calls, and shared by every upstream.
    http: reqwest::Client,
    slots: Mutex<HashMap<PoolKey, Arc<Slot>>>,
    routes: Mutex<Routes>,
    catalog: Catalog,
}

/// Which slot the calls of a tenant to a server use, valid for one catalog version.
#[derive(Default)]
struct Routes {
    version: u64,
    /// (server source, tenant) -> slot.
    slots: HashMap<(Uuid, Uuid), Arc<Slot>>,
}

impl Upstreams {
    /// Connects once to a server that is not saved yet, with this process's timeouts, and
    /// reports what it offers, or why it could not (`Err` when `config` itself is invalid).
    pub async fn probe(
        &self,
        config: &servers::ServerConfig,
    ) -> crate::store::Result<Result<ServerProbe, UpstreamError>> {
        let endpoint = servers::probe_endpoint(config)?;
        Ok(test_connection(&endpoint, &self.inner.config).await)
    }

    /// Connects every enabled server and keeps the connections in line with the
    /// configuration as it changes.
    pub fn start(pool: PgPool, secrets: SecretBox, catalog: Catalog, config: UpstreamConfig) -> Self {
        let http = reqwest::Client::builder()
            // A redirect could carry a server's credentials elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            // Connections stay warm under load; one idle for 2 s is closed (well before servers
            // close theirs: uvicorn after 5 s), so none outlives its traffic for long.
            .pool_idle_timeout(Duration::from_secs(2))
            .connect_timeout(config.connect_timeout)
            .build()
            .expect("an HTTP client without TLS builds");
        let inner = Arc::new(Inner {
            pool,
            secrets,
            config,
            http,
            slots: Mutex::default(),
            routes: Mutex::default(),
            catalog: catalog.clone(),
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let mut versions = catalog.versions();
            loop {
                let Some(inner) = weak.upgrade() else { break };
                if let Err(err) = inner.reconcile().await {
                    tracing::warn!(error = %err, "could not update upstream connections");
                }
                drop(inner);
                if versions.changed().await.is_err() {
                    break;
                }
            }
        });
        Upstreams { inner }
    }

    pub fn health(&self) -> Vec<Health> {
        let slots = self.inner.slots.lock().expect("slots");
        let mut health = Vec::new();
        for (key, slot) in slots.iter() {
            let state = slot.state.borrow().clone();
            for member in slot.members().iter() {
                let degraded = state.status == ConnectionStatus::Ready && member.discovery_error.is_some();
                let failure = member.discovery_error.as_ref().or(state.last_error.as_ref());
                health.push(Health {
                    server: member.name.clone(),
                    tenant_id: key.tenant,
                    status: if degraded { ConnectionStatus::Degraded } else { state.status },
                    last_error: failure.map(|f| f.reason.clone()),
                    last_error_secs: failure.map(|f| f.at.elapsed().as_secs_f64()),
                    last_seen_secs: state.last_seen.map(|t| t.elapsed().as_secs_f64()),
                    protocol: state
                        .peer
                        .as_ref()
                        .and_then(|peer| peer.peer_info())
                        .map(|info| info.protocol_version.to_string()),
                });
            }
        }
        health.sort_by(|a, b| (&a.server, a.tenant_id).cmp(&(&b.server, b.tenant_id)));
        health
    }

    /// Discovers a server's tools now (an admin's "refresh"), through its own connection.
    pub async fn refresh(&self, server: &str) -> Result<servers::DiscoveryReport, UpstreamError> {
        let slot = {
            let slots = self.inner.slots.lock().expect("slots");
            slots
                .values()
                .find(|slot| slot.discovers && slot.member_names().iter().any(|m| m == server))
                .cloned()
        };
        let slot = slot.ok_or_else(|| UpstreamError::NotConnected(server.to_string()))?;
        let (peer, connection) =
            slot.peer(server).await.map_err(|err| UpstreamError::Down(err.to_string()))?;
        slot.discover(&peer, connection, &[server.to_string()]).await.remove(0)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for slot in self.slots.lock().expect("slots").values() {
            slot.cancel.cancel();
        }
    }
}

impl Inner {
    /// A new connection for `members`; the servers' own (one with no tenant) discovers.
    fn spawn_slot(&self, key: PoolKey, members: Vec<Member>) -> Arc<Slot> {
        let (state, _) = watch::channel(SlotState {
            status: ConnectionStatus::Connecting,
            peer: None,
            direct: None,
            last_error: None,
            last_seen: None,
            retrying: false,
            connection: 0,
        });
        let slot = Arc::new_cyclic(|me| Slot {
            me: me.clone(),
            members: Mutex::new(members),
            discovers: key.tenant.is_none(),
            joined: tokio::sync::Notify::new(),
            pool: self.pool.clone(),
            config: self.config.clone(),
            http: self.http.clone(),
            state,
            progress: Mutex::default(),
            relays: Mutex::default(),
            wanted: tokio::sync::Notify::new(),
            cancel: CancellationToken::new(),
        });
        tokio::spawn(slot.clone().run(key.endpoint.clone()));
        slot
    }

    /// Opens the server connections the configuration wants, gives each its servers, and
    /// closes the others.
    async fn reconcile(&self) -> Result<(), crate::store::Error> {
        let mut wanted: HashMap<PoolKey, Vec<Member>> = HashMap::new();
        for (name, source_id, endpoint) in servers::enabled_endpoints(&self.pool, &self.secrets).await? {
            wanted.entry(PoolKey { endpoint, tenant: None }).or_default().push(Member::new(&name, source_id));
        }
        let enabled: Vec<Uuid> = wanted.values().flatten().map(|m| m.source_id).collect();
        let mut slots = self.slots.lock().expect("slots");
        slots.retain(|key, slot| {
            match key.tenant {
                Some(_) => slot.members().retain(|m| enabled.contains(&m.source_id)),
                None => slot.set_members(wanted.remove(key).unwrap_or_default()),
            }
            let keep = !slot.members().is_empty();
            if !keep {
                tracing::info!("closing a connection whose servers were all removed or disabled");
                slot.cancel.cancel();
            }
            keep
        });
        for (key, members) in wanted {
            let slot = self.spawn_slot(key.clone(), members);
            slots.insert(key, slot);
        }
        self.routes.lock().expect("routes").slots.clear();
        Ok(())
    }

    /// The slot calls of `tenant` to `tool`'s server go through.
    async fn route(&self, tool: &CatalogTool, tenant: Uuid) -> Result<Arc<Slot>, ToolError> {
        let version = self.catalog.snapshot().version;
        {
            let mut routes = self.routes.lock().expect("routes");
            if routes.version != version {
                *routes = Routes { version, slots: HashMap::new() };
            }
            if let Some(slot) = routes.slots.get(&(tool.source_id, tenant)) {
                return Ok(slot.clone());
            }
        }
        let endpoint = servers::endpoint(&self.pool, &self.secrets, tool.source_id, Some(tenant))
            .await
            .map_err(ToolError::internal)?;
        // Credentials make a connection private to its tenant.
        let private = !endpoint.headers.is_empty();
        let key = PoolKey { endpoint, tenant: private.then_some(tenant) };
        let slot = {
            let mut slots = self.slots.lock().expect("slots");
            match slots.get(&key) {
                Some(slot) => {
                    let mut members = slot.members();
                    if !members.iter().any(|m| m.source_id == tool.source_id) {
                        members.push(Member::new(&tool.source_name, tool.source_id));
                    }
                    drop(members);
                    slot.clone()
                }
                None => {
                    let slot =
                        self.spawn_slot(key.clone(), vec![Member::new(&tool.source_name, tool.source_id)]);
                    slots.insert(key, slot.clone());
                    slot
                }
            }
        };
        self.routes.lock().expect("routes").slots.insert((tool.source_id, tenant), slot.clone());
        Ok(slot)
    }
}

impl Upstream for Upstreams {
    fn call<'a>(&'a self, tool: &'a CatalogTool, arguments: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let slot = self.inner.route(tool, ctx.tenant_id).await?;
            slot.call(tool, arguments, ctx).await
        })
    }
}
