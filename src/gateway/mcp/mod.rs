//! The MCP endpoint a tenant's LLM applications connect to: `/mcp/{tenant}`, streamable HTTP,
//! authenticated by the tenant's API keys.
//!
//! `tools/list` serves the tenant's visible tools from the live snapshot, rendered for MCP
//! (normalised, lint-clean); `tools/call` runs through the engine's executor. When the
//! tenant's tool list changes, connected sessions get `notifications/tools/list_changed`.
//!
//! Both protocol eras are served on the one endpoint. Sessions (revisions up to 2025-11-25)
//! get `list_changed` on their GET stream; requests on 2026-07-28, which have no session, get it
//! on `subscriptions/listen`.
//!
//! Two ways in, one behaviour. `tools/call` and `tools/list`, nearly all of a client's traffic,
//! are answered the direct way ([`direct`]): the request is read once with rmcp's model types,
//! run, and answered with one JSON body, or with an SSE stream when the call has something to
//! send its client first, without rmcp's per-request service, tasks and channels. Everything
//! else (the handshake, `server/discover`, GET streams, `DELETE`, `subscriptions/listen`, the
//! meta tool, and any request the direct way does not take as plainly valid) goes to rmcp's
//! `StreamableHttpService` and this endpoint's `ServerHandler` ([`handler`]), which answers
//! invalid requests with rmcp's own errors. Both run the same listing and call code ([`calls`]).
//!
//! What an upstream server asks of the caller during a call (sampling, elicitation) is relayed
//! to the client that made the call, and the answer back: as a request to a session's client,
//! as rounds of the call ([`super::rounds`]) for a client on 2026-07-28. Log messages reach the
//! caller at the level it chose: `logging/setLevel` for a session (default: every message), the
//! request's `_meta` on 2026-07-28 (default: none).
//!
//! A tenant with the meta tool on also offers sessions `reset_equipped_tools(groups)`: a session
//! may choose its own active groups, which then replace the tenant's group activation for that
//! session only (and it gets `list_changed`). Requests on 2026-07-28 have no session to keep a
//! choice in and a list that may not vary per connection (SEP-2567), so they are not offered the
//! meta tool and see the tenant's activation.

// Logging is deprecated by SEP-2577 and still what clients and servers use.
#![allow(deprecated)]

mod calls;
mod direct;
mod handler;
mod items;

use std::sync::{Arc, Mutex, OnceLock};

use axum::routing::MethodRouter;
use engine::catalog::{Catalog, META_TOOL, TenantTools};
use engine::db::PgPool;
use engine::exec::{Executor, ResourceUpdated, Subscription};
use engine::schema::Provider;
use rmcp::model::{ClientCapabilities, LoggingLevel, Tool};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use handler::Gateway;

use super::RenderCache;
use super::rounds::Rounds;
use super::sessions::StoredSessions;
use calls::Listening;

/// The service behind `/mcp/{tenant}`, its sessions kept by `sessions`. Requests must name a
/// loopback host or one of `public_hosts` (DNS-rebinding protection). At most
/// `input_waits_per_key` calls of a key wait for their client's input at once.
pub fn service(
    catalog: Catalog,
    executor: Executor,
    pool: PgPool,
    sessions: Arc<LocalSessionManager>,
    public_hosts: Vec<String>,
    input_waits_per_key: usize,
) -> MethodRouter {
    let shared = Arc::new(Shared {
        catalog,
        executor,
        pool: pool.clone(),
        lists: RenderCache::published_mcp(|value| serde_json::from_value(value).ok()),
        portable_lists: RenderCache::new(Provider::Mcp, |value| serde_json::from_value(value).ok()),
        rounds: Rounds::new(input_waits_per_key),
    });
    let mut config = StreamableHttpServerConfig::default();
    // The allowed hosts are checked once, in front of both ways in.
    let hosts = std::mem::take(&mut config.allowed_hosts).into_iter().chain(public_hosts).collect();
    // Any replica continues a session: rmcp replays its handshake from PostgreSQL.
    config.session_store = Some(Arc::new(StoredSessions(pool)));
    // A request on 2026-07-28 whose handler answers at once (no progress, no question to the
    // client first) gets one JSON body instead of an SSE stream; rmcp falls back to the stream
    // as soon as anything comes before the answer.
    config.json_response = true;
    let handlers = shared.clone();
    // Each session gets its own handler state.
    let rmcp = StreamableHttpService::new(move || Ok(Gateway::new(handlers.clone())), sessions, config);
    direct::Endpoint::new(shared, rmcp, hosts).into_route()
}

/// How often a session's `list_changed` watcher checks that the session is still open.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// What every session and the direct way share: the catalog, the executor, the tenants' tool
/// lists (rendered once per snapshot version) and the calls waiting for their client's input.
struct Shared {
    catalog: Catalog,
    executor: Executor,
    /// Where sessions keep what must follow them to another replica.
    pool: PgPool,
    /// The tenants' tool lists with schemas as published.
    lists: RenderCache<Tool>,
    /// The tool lists of tenants that chose portable schemas on MCP.
    portable_lists: RenderCache<Tool>,
    rounds: Rounds<Listening>,
}

impl Shared {
    /// The tool lists of `view`'s tenant, as it chose its MCP clients get schemas.
    fn lists_of(&self, view: &TenantTools) -> &RenderCache<Tool> {
        if view.portable_mcp_schemas { &self.portable_lists } else { &self.lists }
    }
}

/// What one session chose, shared by its rmcp handler and the direct way.
pub struct SessionChoices(Mutex<Session>);

impl Default for SessionChoices {
    fn default() -> Self {
        SessionChoices(Mutex::new(Session {
            equipped: None,
            level: LoggingLevel::Debug,
            capabilities: None,
            subscriptions: Vec::new(),
        }))
    }
}

impl SessionChoices {
    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.0.lock().expect("session")
    }

    /// The URI the session subscribed to the resource `update` is about by, if it did.
    fn covering(&self, update: &ResourceUpdated) -> Option<String> {
        self.lock()
            .subscriptions
            .iter()
            .find_map(|subscription| subscription.covers(update))
            .map(str::to_string)
    }
}

struct Session {
    equipped: Option<Equipped>,
    /// From `logging/setLevel`.
    level: LoggingLevel,
    /// What its client said in `initialize` it can answer (elicitation, sampling).
    capabilities: Option<ClientCapabilities>,
    /// The resources it subscribed to (on this replica), each held until it unsubscribes or
    /// the session ends.
    subscriptions: Vec<Subscription>,
}

/// Where `initialize` leaves the state of the session it opens. The handshake does not know
/// the id rmcp gives the session, so the session layer ([`super::sessions`]) puts one into the
/// request and keeps what comes back under the id the answer carries.
#[derive(Clone, Default)]
pub struct Opening(Arc<OnceLock<Arc<SessionChoices>>>);

impl Opening {
    /// The state of the session the request opened (or restored), if it did.
    pub fn opened(&self) -> Option<Arc<SessionChoices>> {
        self.0.get().cloned()
    }
}

/// A known session, put into its requests by the session layer for the direct way.
#[derive(Clone)]
pub struct SessionHandle {
    pub id: Arc<str>,
    pub state: Arc<SessionChoices>,
}

/// The groups a session chose with the meta tool, and its view for one snapshot version.
struct Equipped {
    groups: Vec<String>,
    version: u64,
    view: Arc<TenantTools>,
}

impl Shared {
    /// Whether the tenant still reads `uri`: a subscription's updates stop once it does not.
    fn serves(&self, tenant: &str, uri: &str) -> bool {
        self.catalog.snapshot().tenant(tenant).is_some_and(|view| view.items.reading(uri).is_ok())
    }

    /// The tools a request sees: a session's own choice of groups when it made one (and whether
    /// it did), else the tenant's.
    fn view(&self, tenant: &str, session: Option<&SessionChoices>) -> Option<(Arc<TenantTools>, bool)> {
        let snapshot = self.catalog.snapshot();
        let tenant_view = snapshot.tenant(tenant)?.clone();
        let Some(session) = session else { return Some((tenant_view, false)) };
        let mut session = session.lock();
        let Some(choice) = session.equipped.as_mut().filter(|_| tenant_view.meta_tool) else {
            return Some((tenant_view, false));
        };
        if choice.version != snapshot.version {
            // A group removed meanwhile leaves the choice.
            choice.groups.retain(|name| tenant_view.groups.iter().any(|g| &g.name == name));
            choice.view = Arc::new(tenant_view.equip(&choice.groups).expect("only known groups remain"));
            choice.version = snapshot.version;
        }
        Some((choice.view.clone(), true))
    }
}
