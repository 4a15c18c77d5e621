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
//! and `subscriptions/listen` are answered the direct way ([`direct`]): the request is read
//! once with rmcp's model types, run, and answered with one JSON body, or with an SSE stream
//! when the call has something to send its client first (a listen stream always), without
//! rmcp's per-request service, tasks and channels. Everything else (the handshake,
//! `server/discover`, GET streams, `DELETE`, the meta tool, and any request the direct way does
//! not take as plainly valid) goes to rmcp's `StreamableHttpService` and this endpoint's
//! `ServerHandler` ([`handler`]), which answers invalid requests with rmcp's own errors. Both
//! run the same listing, call and listening code ([`calls`], [`items`]).
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
mod outbox;
pub(super) mod session;

use std::sync::Arc;

use axum::routing::MethodRouter;
use engine::schema::Provider;
use engine::service::PgPool;
use engine::service::calls::Executor;
use engine::service::catalog::Catalog;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

pub use handler::Gateway;

use super::RenderCache;
use super::rounds::Rounds;
use super::sessions::StoredSessions;
use calls::Shared;

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
