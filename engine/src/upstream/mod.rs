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

use futures::future::BoxFuture;
use rmcp::model::{ClientRequest, ServerResult};
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

mod commands;
mod connect;
mod direct;
mod handler;
mod headers;
mod health;
mod listen;
pub mod oauth;
mod session;
mod slot;
mod sse;
mod stderr;

pub use commands::check_server_command;
pub use connect::test_connection;
pub use health::{ConnectionStatus, Health, ProbedTool, ServerProbe};
use slot::{Member, PoolKey, Slot, SlotState};

use crate::model::UpstreamError;

use crate::catalog::{Catalog, CatalogTool};
use crate::exec::{Held, ResourceUpdated, ServerRef, Upstream};
use crate::secret::SecretBox;
use crate::store::servers::{self, Credential, OAuthMode};
use crate::tool::{Caller, ToolContext, ToolError, ToolFuture};

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
    /// The most connections private to a tenant or a person (their own credentials) open at
    /// once; past it, the one unused longest is closed.
    pub max_private_connections: usize,
    /// A private connection unused this long is closed.
    pub private_idle: Duration,
    /// Toolgate's public URL, for the links a tool error gives a person (to connect their
    /// account).
    pub public_url: Option<String>,
    /// The programs a stdio server may start (`TOOLGATE_STDIO_COMMANDS`), each exactly as a
    /// server's `command` names it; empty = any ([`commands::check_stdio_command`]).
    pub stdio_commands: Vec<String>,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            description_cap: 8 * 1024,
            connect_timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(30),
            health_interval: Duration::from_secs(15),
            max_private_connections: 1000,
            private_idle: Duration::from_secs(600),
            public_url: None,
            stdio_commands: Vec::new(),
        }
    }
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
    /// Every resource update the servers send.
    updates: broadcast::Sender<ResourceUpdated>,
}

/// Which slot the calls of a tenant (by a person) to a server use, valid for one catalog
/// version.
#[derive(Default)]
struct Routes {
    version: u64,
    /// (server source, tenant, person) -> slot.
    slots: HashMap<(Uuid, Uuid, Option<Uuid>), Arc<Slot>>,
}

impl Upstreams {
    /// Connects once to a server that is not saved yet, with this process's timeouts, and
    /// reports what it offers, or why it could not (`Err` when `config` itself is invalid).
    pub async fn probe(
        &self,
        config: &servers::ServerConfig,
    ) -> crate::store::Result<Result<ServerProbe, UpstreamError>> {
        let endpoint = servers::probe_endpoint(config)?;
        check_server_command(&self.inner.config.stdio_commands, config)?;
        if config.oauth.is_some() {
            let url = endpoint.url.as_deref().unwrap_or_default();
            let found =
                tokio::time::timeout(self.inner.config.connect_timeout, oauth::provider_of(url)).await;
            let found =
                found.unwrap_or(Err(UpstreamError::ConnectTimeout(self.inner.config.connect_timeout)));
            return Ok(found.map(|issuer| ServerProbe {
                server_info: Value::Null,
                tools: Vec::new(),
                authorization_server: Some(issuer),
            }));
        }
        Ok(test_connection(&endpoint, &self.inner.config).await)
    }

    /// Connects every enabled server and keeps the connections in line with the
    /// configuration as it changes.
    pub fn start(pool: PgPool, secrets: SecretBox, catalog: Catalog, config: UpstreamConfig) -> Self {
        let http = connect::http_client(&config);
        let inner = Arc::new(Inner {
            pool,
            secrets,
            config,
            http,
            slots: Mutex::default(),
            routes: Mutex::default(),
            catalog: catalog.clone(),
            updates: broadcast::channel(RESOURCE_UPDATES).0,
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            let mut sweeps = tokio::time::interval(PRIVATE_SWEEP);
            loop {
                sweeps.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                inner.close_idle();
            }
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

    /// The programs stdio servers may start (`TOOLGATE_STDIO_COMMANDS`); empty = any.
    pub fn stdio_commands(&self) -> &[String] {
        &self.inner.config.stdio_commands
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
                    stderr: slot.stderr.lines(),
                });
            }
        }
        health.sort_by(|a, b| (&a.server, a.tenant_id).cmp(&(&b.server, b.tenant_id)));
        health
    }

    /// Discovers a server's tools now (an admin's "refresh"), through its own connection,
    /// reconnecting at once if it is down.
    pub async fn refresh(&self, server: &str) -> Result<servers::DiscoveryReport, UpstreamError> {
        let slot = {
            let slots = self.inner.slots.lock().expect("slots");
            slots
                .values()
                .find(|slot| slot.discovers && slot.member_names().iter().any(|m| m == server))
                .cloned()
        };
        let slot = slot.ok_or_else(|| UpstreamError::NotConnected(server.to_string()))?;
        let (peer, connection) = slot.connect_now().await.map_err(UpstreamError::Down)?;
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

/// How long a call waits for its person to connect their account once they accepted to.
const CONNECT_WAIT: Duration = Duration::from_secs(300);

/// How often private connections are checked for idleness.
const PRIVATE_SWEEP: Duration = Duration::from_secs(30);

/// How many resource updates wait for a slow session before it misses the oldest.
const RESOURCE_UPDATES: usize = 256;

impl Inner {
    /// Closes the private connections unused for longer than the configured idle time.
    fn close_idle(&self) {
        let mut slots = self.slots.lock().expect("slots");
        let before = slots.len();
        slots.retain(|key, slot| {
            let idle = key.tenant.is_some() && slot.idle_for() > self.config.private_idle;
            if idle {
                slot.cancel.cancel();
            }
            !idle
        });
        if slots.len() != before {
            tracing::debug!(closed = before - slots.len(), "closed idle private upstream connections");
            self.routes.lock().expect("routes").slots.clear();
        }
    }

    /// Makes room for one more private connection: past the maximum, the one unused longest
    /// is closed.
    fn make_room(&self, slots: &mut HashMap<PoolKey, Arc<Slot>>) {
        let private = slots.keys().filter(|key| key.tenant.is_some()).count();
        if private < self.config.max_private_connections {
            return;
        }
        let oldest = slots
            .iter()
            .filter(|(key, _)| key.tenant.is_some())
            .max_by_key(|(_, slot)| slot.idle_for())
            .map(|(key, _)| key.clone());
        if let Some(slot) = oldest.and_then(|key| slots.remove(&key)) {
            tracing::info!(servers = %slot.label(), "closing the private upstream connection unused longest: at the maximum");
            slot.cancel.cancel();
            self.routes.lock().expect("routes").slots.retain(|_, routed| !Arc::ptr_eq(routed, &slot));
        }
    }

    /// A new connection for `members`; the servers' own (one with no tenant) discovers.
    fn spawn_slot(&self, key: PoolKey, members: Vec<Member>) -> Arc<Slot> {
        let (state, _) = watch::channel(SlotState {
            status: ConnectionStatus::Connecting,
            peer: None,
            direct: None,
            last_error: None,
            last_seen: None,
            retrying: false,
            parked: false,
            connection: 0,
        });
        let slot = Arc::new_cyclic(|me| Slot {
            me: me.clone(),
            members: Mutex::new(members),
            discovers: key.tenant.is_none(),
            joined: tokio::sync::Notify::new(),
            pool: self.pool.clone(),
            secrets: self.secrets.clone(),
            config: self.config.clone(),
            http: self.http.clone(),
            last_used: Mutex::new(std::time::Instant::now()),
            state,
            progress: Mutex::default(),
            relays: Mutex::default(),
            wanted: tokio::sync::Notify::new(),
            now: tokio::sync::Notify::new(),
            cancel: CancellationToken::new(),
            updates: self.updates.clone(),
            id: Slot::next_id(),
            subscribed: tokio::sync::Mutex::default(),
            listening: watch::Sender::new((0, Vec::new())),
            listen_again: tokio::sync::Notify::new(),
            discovering: tokio::sync::Mutex::default(),
            authorization: match key.endpoint.credential {
                Credential::OAuth { id, .. } => Some((id, key.endpoint.url.clone().unwrap_or_default())),
                _ => None,
            },
            stderr: Default::default(),
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
            // One waiting for an authorization starts again: one may have been given.
            let waiting = slot.state.borrow().status == ConnectionStatus::NeedsAuthorization;
            if keep && waiting {
                slot.cancel.cancel();
                if key.tenant.is_none() {
                    wanted.insert(key.clone(), std::mem::take(&mut *slot.members()));
                }
            }
            keep && !waiting
        });
        for (key, members) in wanted {
            let slot = self.spawn_slot(key.clone(), members);
            slots.insert(key, slot);
        }
        self.routes.lock().expect("routes").slots.clear();
        Ok(())
    }

    /// The slot requests of `ctx`'s tenant (and person) to `server` go through.
    async fn route(&self, server: ServerRef<'_>, ctx: &ToolContext) -> Result<Arc<Slot>, ToolError> {
        let tenant = ctx.tenant_id;
        let account = match &ctx.caller {
            Caller::User(user) => Some(user.account),
            Caller::Admin(username) => {
                let account = crate::store::admins::role_of(&self.pool, username).await;
                account.map_err(ToolError::internal)?.map(|(id, _)| id)
            }
            Caller::ApiKey(_) => None,
        };
        let version = self.catalog.snapshot().version;
        let route = (server.id, tenant, account);
        {
            let mut routes = self.routes.lock().expect("routes");
            if routes.version != version {
                *routes = Routes { version, slots: HashMap::new() };
            }
            if let Some(slot) = routes.slots.get(&route) {
                return Ok(slot.clone());
            }
        }
        let lookup = || async {
            let endpoint = servers::endpoint(&self.pool, &self.secrets, server.id, tenant, account).await;
            endpoint.map_err(ToolError::internal)
        };
        let mut endpoint = lookup().await?;
        if endpoint.credential == Credential::Missing(OAuthMode::User) && self.may_ask_to_connect(ctx) {
            // The person connects their account, asked through their client; the call goes on.
            let mut versions = self.catalog.versions();
            self.ask_to_connect(server.name, ctx).await?;
            let waiting = async {
                loop {
                    let found = lookup().await?;
                    if found.credential != Credential::Missing(OAuthMode::User) {
                        return Ok(found);
                    }
                    // An authorization tells every replica, as any configuration change does.
                    if versions.changed().await.is_err() {
                        return Err(ToolError::internal("the catalog stopped"));
                    }
                }
            };
            endpoint = tokio::time::timeout(CONNECT_WAIT, waiting).await.map_err(|_| {
                ToolError::tool(format!(
                    "your account of MCP server `{}` was not connected within {} minutes; connect it at {}, then call again",
                    server.name,
                    CONNECT_WAIT.as_secs() / 60,
                    connect_link(self.config.public_url.as_deref(), server.name)
                ))
            })??;
        }
        let private = match endpoint.credential {
            Credential::Missing(mode) => return Err(self.unauthorized(server.name, mode, ctx)),
            // A tenant's or a person's token makes a connection theirs.
            Credential::OAuth { mode, .. } => mode != OAuthMode::Shared || !endpoint.headers.is_empty(),
            // Credentials make a connection private to its tenant.
            Credential::None => !endpoint.headers.is_empty(),
        };
        let key = PoolKey { endpoint, tenant: private.then_some(tenant) };
        let slot = {
            let mut slots = self.slots.lock().expect("slots");
            if private && !slots.contains_key(&key) {
                self.make_room(&mut slots);
            }
            match slots.get(&key) {
                Some(slot) => {
                    let mut members = slot.members();
                    if !members.iter().any(|m| m.source_id == server.id) {
                        members.push(Member::new(server.name, server.id));
                    }
                    drop(members);
                    slot.clone()
                }
                None => {
                    let slot = self.spawn_slot(key.clone(), vec![Member::new(server.name, server.id)]);
                    slots.insert(key, slot.clone());
                    slot
                }
            }
        };
        self.routes.lock().expect("routes").slots.insert(route, slot.clone());
        Ok(slot)
    }

    /// Whether a person can be asked, through their client, to connect their account.
    fn may_ask_to_connect(&self, ctx: &ToolContext) -> bool {
        matches!(ctx.caller, Caller::User(_)) && ctx.client().is_some()
    }

    /// Sends the person to connect their account of `tool`'s server: a URL-mode elicitation
    /// (revision 2025-11-25; an input request of the call on 2026-07-28). `Ok` once they
    /// accepted to go; a client that cannot ask gets the link in a tool error.
    async fn ask_to_connect(&self, server: &str, ctx: &ToolContext) -> Result<(), ToolError> {
        let link = connect_link(self.config.public_url.as_deref(), server);
        let client = ctx.client().ok_or_else(|| self.unauthorized(server, OAuthMode::User, ctx))?;
        let request = serde_json::json!({
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "elicitationId": Uuid::new_v4().to_string(),
                "url": link,
                "message": format!(
                    "MCP server `{server}` acts as you: connect your account there (sign in to Toolgate, then to \
                     the server) and the call goes on."
                ),
            },
        });
        if crate::tool::undeclared(&client.capabilities(), &request).is_some() {
            return Err(self.unauthorized(server, OAuthMode::User, ctx));
        }
        let asked = client.request(request).await;
        match asked {
            Ok(answer) if answer["action"] == "accept" => Ok(()),
            Ok(_) => Err(ToolError::tool(format!(
                "you did not connect your account of MCP server `{server}`; connect it at {link}, then call again"
            ))),
            Err(why) => {
                tracing::debug!(%why, "the caller's client cannot open a URL");
                Err(self.unauthorized(server, OAuthMode::User, ctx))
            }
        }
    }

    /// What a caller without a token for an OAuth server is told.
    fn unauthorized(&self, server: &str, mode: OAuthMode, ctx: &ToolContext) -> ToolError {
        match (mode, &ctx.caller) {
            (OAuthMode::Shared, _) => ToolError::tool(format!(
                "MCP server `{server}` is not authorized yet: an administrator authorizes it on its page in Toolgate's panel"
            )),
            (OAuthMode::Tenant, _) => ToolError::tool(format!(
                "MCP server `{server}` is not authorized for tenant `{}` yet: a tenant administrator authorizes it on its \
                 page in Toolgate's panel",
                ctx.tenant
            )),
            (OAuthMode::User, Caller::ApiKey(_)) => ToolError::tool(format!(
                "MCP server `{server}` acts as each person: call it through a client you signed in to with your Toolgate \
                 account (OAuth), not with an API key"
            )),
            (OAuthMode::User, _) => ToolError::tool(format!(
                "MCP server `{server}` acts as you, and your account there is not connected yet: open {} to connect it, \
                 then call again",
                connect_link(self.config.public_url.as_deref(), server)
            )),
        }
    }
}

/// Where a person connects their own account of `server`.
pub fn connect_link(public_url: Option<&str>, server: &str) -> String {
    format!("{}{}?server={server}", public_url.unwrap_or_default().trim_end_matches('/'), oauth::START_PATH)
}

impl Upstream for Upstreams {
    fn call<'a>(&'a self, tool: &'a CatalogTool, arguments: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let slot =
                self.inner.route(ServerRef { id: tool.source_id, name: &tool.source_name }, ctx).await?;
            slot.call(tool, arguments, ctx).await
        })
    }

    fn forward<'a>(
        &'a self,
        server: ServerRef<'a>,
        request: ClientRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ServerResult, ToolError>> {
        Box::pin(async move {
            let slot = self.inner.route(server, ctx).await?;
            slot.forward(server.name, request).await
        })
    }

    fn subscribe<'a>(
        &'a self,
        server: ServerRef<'a>,
        uri: &'a str,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Held, ToolError>> {
        Box::pin(async move {
            let slot = self.inner.route(server, ctx).await?;
            let held = slot.subscribe(server.name, uri).await?;
            Ok(Held { connection: held.connection(), guard: Box::new(held) })
        })
    }

    fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdated> {
        self.inner.updates.subscribe()
    }
}
