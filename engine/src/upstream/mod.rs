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
//! cleared environment ([`INHERITED_ENV`] and their own `env`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

// Sampling and logging are deprecated by SEP-2577, but servers still send them: relayed while
// they do.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, CreateMessageRequestParams, CreateMessageResult, DEFAULT_MRTR_MAX_ROUNDS,
    ElicitRequestParams, ElicitResult, InputRequests, InputResponses, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    RequestMetaObject, ServerNotification, ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, Peer, PeerRequestOptions, RequestContext,
    RoleClient, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler};
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

mod sse;

use crate::catalog::{Catalog, CatalogTool};
use crate::exec::Upstream;
use crate::model::Name;
use crate::secret::SecretBox;
use crate::store::servers::{self, Endpoint, Transport};
use crate::store::sources::ToolDefinition;
use crate::tool::{
    ClientRelay, Progress, ProgressSink, ToolContext, ToolError, ToolFuture, ToolOutput, send_progress,
};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Connecting,
    Ready,
    /// Connected, but the last discovery failed.
    Degraded,
    Down,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Connecting, Status::Ready, Status::Degraded, Status::Down];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Ready => "ready",
            Status::Degraded => "degraded",
            Status::Down => "down",
        }
    }
}

/// The health of one connection, as the panel and metrics show it.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub server: String,
    /// Set for a tenant's private connection.
    pub tenant_id: Option<Uuid>,
    pub status: Status,
    pub last_error: Option<String>,
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

/// Connects once, lists the tools, disconnects.
pub async fn test_connection(
    endpoint: &Endpoint,
    config: &UpstreamConfig,
) -> Result<ServerProbe, UpstreamError> {
    let handler = Handler { slot: Weak::new() };
    let service = tokio::time::timeout(config.connect_timeout, connect(endpoint, handler))
        .await
        .map_err(|_| UpstreamError::ConnectTimeout(config.connect_timeout))??;
    let server_info = serde_json::to_value(service.peer().peer_info()).unwrap_or(Value::Null);
    let tools = service.peer().list_all_tools().await.map_err(|e| UpstreamError::Listing(e.to_string()));
    service.cancellation_token().cancel();
    Ok(ServerProbe { server_info, tool_count: tools?.len() })
}

/// What a stdio server gets of Toolgate's environment, besides its own configured `env`:
/// enough to find programs and a home folder, never Toolgate's settings or secrets
/// (`TOOLGATE_SECRET_KEY` decrypts every stored credential).
const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

async fn connect(
    endpoint: &Endpoint,
    handler: Handler,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, UpstreamError> {
    match endpoint.transport {
        Transport::Stdio => {
            let mut command = tokio::process::Command::new(endpoint.command.as_deref().unwrap_or_default());
            let inherited = INHERITED_ENV.iter().filter_map(|name| Some((*name, std::env::var_os(name)?)));
            command
                .args(&endpoint.args)
                .env_clear()
                .envs(inherited)
                .envs(endpoint.env.iter().cloned())
                .kill_on_drop(true);
            let transport =
                TokioChildProcess::new(command).map_err(|e| UpstreamError::Spawn(e.to_string()))?;
            start(handler, transport).await
        }
        Transport::StreamableHttp => {
            let headers =
                headers(endpoint)?.into_iter().filter_map(|(name, value)| Some((name?, value))).collect();
            let url = endpoint.url.clone().unwrap_or_default();
            let config = StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(headers)
                .max_sse_event_size(MAX_ANSWER)
                .max_json_response_size(MAX_ANSWER);
            start(handler, StreamableHttpClientTransport::from_config(config)).await
        }
        Transport::Sse => {
            let url = endpoint.url.as_deref().unwrap_or_default();
            let transport = sse::SseTransport::connect(url, headers(endpoint)?, MAX_ANSWER, SSE_POST_TIMEOUT)
                .await
                .map_err(|e| UpstreamError::EventStream(e.to_string()))?;
            start(handler, transport).await
        }
    }
}

/// The longest a message POSTed to a legacy SSE server may take to be accepted.
const SSE_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// The endpoint's HTTP headers, checked.
fn headers(endpoint: &Endpoint) -> Result<http::HeaderMap, UpstreamError> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &endpoint.headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| UpstreamError::HeaderName { name: name.clone(), reason: e.to_string() })?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| UpstreamError::HeaderValue(name.to_string()))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Starts the MCP lifecycle on `transport`: `server/discover` first (revision 2026-07-28), the
/// `initialize` handshake for a server that does not know it.
async fn start<T, E, A>(
    handler: Handler,
    transport: T,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, UpstreamError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    handler
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .map_err(|e| UpstreamError::Initialise(e.to_string()))
}

/// Whether the server speaks revision 2026-07-28 or later on this connection: it then sends
/// tool list changes only on a `subscriptions/listen` stream.
fn is_stateless(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| !info.protocol_version.has_initialize())
}

/// Receives what an upstream sends on its own: tool list changes, progress, log messages, and
/// requests for the caller (sampling, elicitation), which go to the MCP client whose call is
/// running on this connection.
#[derive(Clone)]
struct Handler {
    slot: Weak<Slot>,
}

impl Handler {
    /// The client of the one call in flight on this connection. With several calls in flight
    /// a request cannot be attributed to one of them (MCP does not say which call it belongs
    /// to), so it is refused rather than risk sending it to another caller.
    fn caller(&self) -> Option<Arc<dyn ClientRelay>> {
        let slot = self.slot.upgrade()?;
        let relays = slot.relays.lock().expect("relay map");
        match relays.len() {
            1 => relays.values().next().cloned(),
            _ => None,
        }
    }

    async fn relay<P: Serialize, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, rmcp::ErrorData> {
        let caller = self.caller().ok_or_else(|| {
            rmcp::ErrorData::invalid_request(
                format!("{method}: Toolgate cannot tell which caller this is for (not exactly one MCP call in flight on this connection)"),
                None,
            )
        })?;
        let answer = caller.request(json!({"method": method, "params": params})).await.map_err(|err| {
            rmcp::ErrorData::internal_error(format!("the caller could not answer {method}: {err}"), None)
        })?;
        serde_json::from_value(answer).map_err(|err| rmcp::ErrorData::internal_error(err.to_string(), None))
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        #[allow(deprecated)]
        let capabilities = ClientCapabilities::builder().enable_sampling().enable_elicitation().build();
        info.capabilities = capabilities;
        info
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.relay("sampling/createMessage", params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.relay("elicitation/create", params).await
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        match self.caller() {
            Some(caller) => caller.notify(json!({"method": "notifications/message", "params": params})),
            None => tracing::info!(message = ?params, "upstream log message"),
        }
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Some(slot) = self.slot.upgrade()
            && slot.discovers
        {
            tracing::info!(servers = %slot.label(), "upstream tool list changed; rediscovering");
            slot.discover(&context.peer, &slot.member_names()).await;
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(slot) = self.slot.upgrade()
            && let Some(sink) =
                slot.progress.lock().expect("progress map").get(&token_key(&params.progress_token))
        {
            send_progress(
                sink,
                Progress { progress: params.progress, total: params.total, message: params.message },
            );
        }
    }
}

fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    endpoint: Endpoint,
    tenant: Option<Uuid>,
}

/// One pooled connection.
struct Slot {
    me: Weak<Slot>,
    /// The servers whose calls go through this connection (several when they share an
    /// endpoint).
    members: Mutex<Vec<Member>>,
    /// The servers' own connection discovers their tools; tenants' connections only call.
    discovers: bool,
    /// A server joined the connection: discover its tools without reconnecting.
    joined: tokio::sync::Notify,
    pool: PgPool,
    config: UpstreamConfig,
    state: watch::Sender<SlotState>,
    /// Progress sinks of calls in flight, by progress token.
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// The MCP clients of calls in flight, by progress token.
    relays: Mutex<HashMap<String, Arc<dyn ClientRelay>>>,
    /// A call saw the transport fail: reconnect now rather than at the next probe.
    broken: tokio::sync::Notify,
    /// A call wanted the connection while it was down: retry after [`DEMAND_RETRY`] rather
    /// than at the end of a long backoff, so a server that comes back is used within a second
    /// or two while traffic waits for it.
    wanted: tokio::sync::Notify,
    cancel: CancellationToken,
}

/// A server using a pooled connection.
struct Member {
    name: String,
    source_id: Uuid,
    /// Why its last discovery failed; the connection itself may be fine.
    discovery_error: Option<String>,
}

impl Member {
    fn new(name: &str, source_id: Uuid) -> Self {
        Member { name: name.to_string(), source_id, discovery_error: None }
    }
}

/// The largest answer (one JSON body or SSE event) read from an HTTP upstream; a larger one
/// ends the connection rather than Toolgate's memory.
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The shortest pause between reconnection attempts that calls ask for.
const DEMAND_RETRY: Duration = Duration::from_millis(500);

/// How long a finished call's progress sink stays registered: rmcp may handle a progress
/// notification the server sent before its result only after the result.
const PROGRESS_DRAIN: Duration = Duration::from_millis(250);

#[derive(Clone)]
struct SlotState {
    status: Status,
    peer: Option<Peer<RoleClient>>,
    last_error: Option<String>,
    last_seen: Option<Instant>,
    /// Reconnecting after a failure: calls fail at once instead of waiting for the attempt
    /// (which, to a host that does not answer, takes the whole connect timeout).
    retrying: bool,
    /// Counts connections made, so a call that saw its connection fail can tell whether the
    /// current one is that connection or a newer one.
    connection: u64,
}

impl Slot {
    fn set(&self, change: impl FnOnce(&mut SlotState)) {
        self.state.send_modify(change);
    }

    fn members(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().expect("slot members")
    }

    fn member_names(&self) -> Vec<String> {
        self.members().iter().map(|m| m.name.clone()).collect()
    }

    /// The member servers' names, for the log.
    fn label(&self) -> String {
        self.member_names().join(",")
    }

    /// Makes the members `wanted`; servers that joined get their tools discovered.
    fn set_members(&self, wanted: Vec<Member>) {
        let mut members = self.members();
        let joined = wanted.iter().any(|w| !members.iter().any(|m| m.source_id == w.source_id));
        members.retain(|m| wanted.iter().any(|w| w.source_id == m.source_id));
        for member in wanted {
            if !members.iter().any(|m| m.source_id == member.source_id) {
                members.push(member);
            }
        }
        if joined && self.discovers {
            self.joined.notify_one();
        }
    }

    async fn run(self: Arc<Self>, endpoint: Endpoint) {
        let mut backoff = Duration::from_millis(200);
        'connecting: while !self.cancel.is_cancelled() {
            self.set(|s| s.status = Status::Connecting);
            let handler = Handler { slot: Arc::downgrade(&self) };
            let connected = tokio::select! {
                () = self.cancel.cancelled() => break,
                result = tokio::time::timeout(self.config.connect_timeout, connect(&endpoint, handler)) => {
                    result.unwrap_or(Err(UpstreamError::ConnectTimeout(self.config.connect_timeout)))
                }
            };
            match connected {
                Ok(service) => {
                    backoff = Duration::from_millis(200);
                    let peer = service.peer().clone();
                    self.set(|s| {
                        s.status = Status::Ready;
                        s.peer = Some(peer.clone());
                        s.last_seen = Some(Instant::now());
                        s.retrying = false;
                        s.connection += 1;
                    });
                    tracing::info!(servers = %self.label(), "upstream connected");
                    // Probes must reach the server, never a cached answer.
                    peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
                    let stop = service.cancellation_token();
                    if self.discovers {
                        self.discover(&peer, &self.member_names()).await;
                        if is_stateless(&peer) {
                            // Ends with the connection's stream.
                            let (slot, peer) = (self.clone(), peer.clone());
                            tokio::spawn(async move { slot.follow_changes(&peer).await });
                        }
                    }
                    let waiting = service.waiting();
                    let probe = self.probe(&peer);
                    tokio::pin!(waiting, probe);
                    let reason = loop {
                        tokio::select! {
                            () = self.cancel.cancelled() => { stop.cancel(); break 'connecting; }
                            quit = &mut waiting => break format!("the connection closed ({quit:?})"),
                            () = self.broken.notified() => break "a call found the connection broken".to_string(),
                            err = &mut probe => break err,
                            () = self.joined.notified() => {
                                self.discover(&peer, &self.member_names()).await;
                            }
                        }
                    };
                    stop.cancel();
                    tracing::warn!(servers = %self.label(), %reason, "upstream connection lost; reconnecting");
                    self.set(|s| {
                        s.status = Status::Down;
                        s.peer = None;
                        s.last_error = Some(reason);
                        s.retrying = true;
                    });
                }
                Err(err) => {
                    tracing::warn!(servers = %self.label(), error = %err, retry_in = ?backoff, "upstream connection failed");
                    self.set(|s| {
                        s.status = Status::Down;
                        s.peer = None;
                        s.last_error = Some(err.to_string());
                        s.retrying = true;
                    });
                }
            }
            let jitter = Duration::from_millis(rand::random_range(0..=backoff.as_millis() as u64 / 4));
            let pause = backoff + jitter;
            let wanted = async {
                tokio::time::sleep(DEMAND_RETRY.min(pause)).await;
                self.wanted.notified().await;
            };
            tokio::select! {
                () = self.cancel.cancelled() => break,
                () = tokio::time::sleep(pause) => {}
                () = wanted => {}
            }
            backoff = (backoff * 2).min(self.config.max_backoff);
        }
        self.set(|s| {
            s.status = Status::Down;
            s.peer = None;
        });
    }

    /// Rediscovers whenever a server on revision 2026-07-28 says its tools changed, for as long
    /// as its `subscriptions/listen` stream lasts — and once when the stream opens: the revision
    /// replays nothing, so a change between the first discovery and the acknowledgment would
    /// otherwise be missed.
    async fn follow_changes(&self, peer: &Peer<RoleClient>) {
        let advertised = peer.peer_info().is_some_and(|info| {
            info.capabilities.tools.as_ref().is_some_and(|tools| tools.list_changed == Some(true))
        });
        if !advertised {
            return;
        }
        let mut subscription = match peer
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
        {
            Ok(subscription) => subscription,
            Err(err) => {
                tracing::warn!(servers = %self.label(), error = %err, "upstream refused subscriptions/listen");
                return;
            }
        };
        self.discover(peer, &self.member_names()).await;
        while let Ok(Some(notification)) = subscription.next().await {
            if matches!(notification, ServerNotification::ToolListChangedNotification(_)) {
                tracing::info!(servers = %self.label(), "upstream tool list changed; rediscovering");
                self.discover(peer, &self.member_names()).await;
            }
        }
    }

    /// Probes the connection every `health_interval`; returns when a probe fails.
    async fn probe(&self, peer: &Peer<RoleClient>) -> String {
        loop {
            tokio::time::sleep(self.config.health_interval).await;
            match tokio::time::timeout(self.config.connect_timeout, peer.list_tools(None)).await {
                Ok(Ok(_)) => self.set(|s| s.last_seen = Some(Instant::now())),
                Ok(Err(err)) => return format!("health probe failed: {err}"),
                Err(_) => {
                    return format!("health probe got no answer within {:?}", self.config.connect_timeout);
                }
            }
        }
    }

    /// Lists every tool (following pagination) once and records them for each of `servers`,
    /// with pinning; one report (or error) per server.
    async fn discover(
        &self,
        peer: &Peer<RoleClient>,
        servers: &[String],
    ) -> Vec<Result<servers::DiscoveryReport, UpstreamError>> {
        let listed = match tokio::time::timeout(self.config.connect_timeout, peer.list_all_tools()).await {
            Ok(listed) => listed.map_err(|e| UpstreamError::Listing(e.to_string())),
            Err(_) => Err(UpstreamError::ListingTimeout(self.config.connect_timeout)),
        };
        let definitions: Result<Vec<ToolDefinition>, UpstreamError> =
            listed.map(|tools| tools.iter().map(|t| definition(t, self.config.description_cap)).collect());
        let mut reports = Vec::with_capacity(servers.len());
        for server in servers {
            let report = match &definitions {
                Ok(definitions) => match Name::parse(server) {
                    Ok(name) => servers::record_discovery(&self.pool, &name, definitions)
                        .await
                        .map_err(|e| UpstreamError::Recording(e.to_string())),
                    Err(err) => Err(UpstreamError::Recording(err.to_string())),
                },
                Err(err) => Err(err.clone()),
            };
            match &report {
                Ok(report) => tracing::info!(%server, ?report, "upstream tools discovered"),
                Err(err) => tracing::warn!(%server, error = %err, "upstream discovery failed"),
            }
            if let Some(member) = self.members().iter_mut().find(|m| &m.name == server) {
                member.discovery_error = report.as_ref().err().map(ToString::to_string);
            }
            reports.push(report);
        }
        if definitions.is_ok() {
            self.set(|s| {
                s.last_seen = Some(Instant::now());
                s.last_error = None;
            });
        }
        reports
    }

    /// The connection's peer: at once when ready, after a wait while connecting for the first
    /// time, never when down or reconnecting after a failure.
    async fn peer(&self, server: &str) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut state = self.state.subscribe();
        let waiting = state.wait_for(|s| s.status != Status::Connecting || s.retrying);
        // `wait_for` answers with a read guard on the state: it must be gone before the state
        // is read again, or a writer waiting in between deadlocks both.
        let settled = matches!(tokio::time::timeout(self.config.connect_timeout, waiting).await, Ok(Ok(_)));
        let current = self.state.borrow().clone();
        match (settled, current.peer) {
            (true, Some(peer)) => Ok((peer, current.connection)),
            _ => {
                self.wanted.notify_one();
                Err(ToolError::tool(format!(
                    "MCP server `{server}` is unavailable right now; try again later"
                )))
            }
        }
    }

    async fn call(
        &self,
        tool: &CatalogTool,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &tool.source_name;
        let (peer, connection) = self.peer(server).await?;
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Default::default(),
        };
        let mut params = CallToolRequestParams::new(tool.upstream_name.clone()).with_arguments(arguments);
        // A server on 2026-07-28 logs only at the level a request asks for: the caller's.
        #[allow(deprecated)]
        let level: Option<LoggingLevel> = ctx
            .client()
            .and_then(|client| client.log_level())
            .and_then(|name| serde_json::from_value(Value::String(name)).ok());
        if let Some(level) = level {
            let mut meta = RequestMetaObject::default();
            meta.set_log_level(level);
            params.meta = Some(meta);
        }
        // A server on 2026-07-28 asks the caller for input by answering with the questions;
        // the call is sent again with the answers (SEP-2322).
        let mut rounds = 0;
        let result = loop {
            match self.send_call(&peer, params.clone(), ctx).await {
                Ok(ServerResult::InputRequiredResult(asked)) if rounds < DEFAULT_MRTR_MAX_ROUNDS => {
                    rounds += 1;
                    let questions = asked.input_requests.unwrap_or_default();
                    params.input_responses = Some(answer_inputs(server, questions, ctx).await?);
                    params.request_state = asked.request_state;
                }
                other => break other,
            }
        };
        match result {
            Ok(ServerResult::CallToolResult(result)) => {
                self.set(|s| s.last_seen = Some(Instant::now()));
                let value = serde_json::to_value(&result).map_err(ToolError::internal)?;
                serde_json::from_value(value).map_err(ToolError::internal)
            }
            Ok(ServerResult::InputRequiredResult(_)) => Err(ToolError::tool(format!(
                "MCP server `{server}` asked for input {DEFAULT_MRTR_MAX_ROUNDS} times without finishing the call"
            ))),
            Ok(other) => Err(ToolError::internal(format!("unexpected answer to tools/call: {other:?}"))),
            Err(err) => {
                tracing::warn!(%server, error = %err, "upstream call failed");
                if matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
                    // Only the connection the call used is broken: a newer one is left alone.
                    let current = self.state.send_if_modified(|s| {
                        let current = s.connection == connection && s.peer.is_some();
                        if current {
                            s.status = Status::Down;
                            s.peer = None;
                            s.retrying = true;
                        }
                        current
                    });
                    if current {
                        // Wakes the connection's task if it is watching; never a later one.
                        self.broken.notify_waiters();
                    }
                    return Err(ToolError::tool(format!(
                        "MCP server `{server}` dropped the connection before answering (it went away, or its \
                         answer was over the {} MiB limit); try again later",
                        MAX_ANSWER >> 20
                    )));
                }
                Err(ToolError::tool(format!("MCP server `{server}` failed to answer: {err}")))
            }
        }
    }

    /// Sends one `tools/call`, relaying its progress and what the server asks of the caller
    /// while it runs.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        ctx: &ToolContext,
    ) -> Result<ServerResult, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp gives every request its own progress token; progress reports come back under it.
        let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
        let key = token_key(&handle.progress_token);
        if let Some(sink) = ctx.progress_sink() {
            self.progress.lock().expect("progress map").insert(key.clone(), sink);
        }
        // Registered for as long as the call runs, timed out or not.
        let _relay = ctx.client().map(|client| {
            self.relays.lock().expect("relay map").insert(key.clone(), client);
            RelayRegistration { slot: self.me.clone(), key: key.clone() }
        });
        // If this future is dropped (the call timed out), tell the server to stop.
        let guard = CancelOnDrop { peer: Some(peer.clone()), request: handle.id.clone() };
        let response = handle.await_response().await;
        guard.disarm();
        self.forget_progress(key);
        response
    }

    /// Unregisters a finished call's progress sink, after a short drain.
    fn forget_progress(&self, key: String) {
        if let Some(slot) = self.me.upgrade() {
            tokio::spawn(async move {
                tokio::time::sleep(PROGRESS_DRAIN).await;
                slot.progress.lock().expect("progress map").remove(&key);
            });
        }
    }
}

/// The caller's answers to what a server on 2026-07-28 asked during a call.
async fn answer_inputs(
    server: &str,
    questions: InputRequests,
    ctx: &ToolContext,
) -> Result<InputResponses, ToolError> {
    let client = ctx.client().ok_or_else(|| {
        ToolError::tool(format!(
            "MCP server `{server}` asks the caller for input, which only an MCP client can give"
        ))
    })?;
    let mut answers = InputResponses::new();
    for (key, question) in questions {
        let question = serde_json::to_value(question).map_err(ToolError::internal)?;
        let method = question["method"].as_str().unwrap_or_default().to_string();
        let answer =
            client.request(json!({"method": method, "params": question["params"]})).await.map_err(|err| {
                ToolError::tool(format!(
                    "MCP server `{server}` asked the caller ({method}), who could not answer: {err}"
                ))
            })?;
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// Unregisters a call's MCP client when the call ends, however it ends.
struct RelayRegistration {
    slot: Weak<Slot>,
    key: String,
}

impl Drop for RelayRegistration {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.upgrade() {
            slot.relays.lock().expect("relay map").remove(&self.key);
        }
    }
}

/// Sends `notifications/cancelled` for a request abandoned before its answer.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    request: RequestId,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let param = CancelledNotificationParam::new(
                Some(self.request.clone()),
                Some("the call timed out in Toolgate".into()),
            );
            tokio::spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// What ends a description cut at the cap.
const TRUNCATED: &str = " [description truncated]";

/// A discovered tool as Toolgate stores it; the description is untrusted and capped.
fn definition(tool: &rmcp::model::Tool, description_cap: usize) -> ToolDefinition {
    let value = serde_json::to_value(tool).unwrap_or_default();
    let mut description = value["description"].as_str().unwrap_or_default().to_string();
    if description.len() > description_cap {
        // The notice counts against the cap too.
        let mut end = description_cap.saturating_sub(TRUNCATED.len());
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
        description.push_str(TRUNCATED);
    }
    ToolDefinition {
        upstream_name: value["name"].as_str().unwrap_or_default().to_string(),
        description,
        input_schema: value.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        output_schema: value.get("outputSchema").filter(|s| s.is_object()).cloned(),
        annotations: value.get("annotations").filter(|a| a.is_object()).cloned().unwrap_or_else(|| json!({})),
        tags: vec![],
        strict: false,
        timeout_ms: None,
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
        let inner = Arc::new(Inner {
            pool,
            secrets,
            config,
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
                let degraded = state.status == Status::Ready && member.discovery_error.is_some();
                health.push(Health {
                    server: member.name.clone(),
                    tenant_id: key.tenant,
                    status: if degraded { Status::Degraded } else { state.status },
                    last_error: member.discovery_error.clone().or_else(|| state.last_error.clone()),
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
        let (peer, _) = slot.peer(server).await.map_err(|err| UpstreamError::Down(err.to_string()))?;
        slot.discover(&peer, &[server.to_string()]).await.remove(0)
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
            status: Status::Connecting,
            peer: None,
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
            state,
            progress: Mutex::default(),
            relays: Mutex::default(),
            broken: tokio::sync::Notify::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_description_is_cut_to_the_cap_notice_included() {
        let schema = Arc::new(json!({"type": "object"}).as_object().cloned().unwrap());
        let tool = rmcp::model::Tool::new("long", "é".repeat(10_000), schema);
        let description = definition(&tool, 8 * 1024).description;
        assert!(description.len() <= 8 * 1024, "{} bytes", description.len());
        assert!(description.len() > 8 * 1024 - 30);
        assert!(description.ends_with(TRUNCATED));
    }
}
