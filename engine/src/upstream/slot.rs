//! One pooled connection: its task (connect, discover, watch, reconnect) and its calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::TryFutureExt;
use futures::future::OptionFuture;
use rmcp::ClientCacheConfig;
use tracing::Instrument;
// Logging is deprecated by SEP-2577, but servers still send it: relayed while they do.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    DEFAULT_MRTR_MAX_ROUNDS, ErrorCode, InputRequests, InputResponses, LoggingLevel, PaginatedRequestParams,
    RequestId, RequestMetaObject, ServerResult, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest,
    UnsubscribeRequestParams,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::connect::{MAX_ANSWER, challenge_of, connect, is_stateless, service_failure};
use super::direct::DirectCalls;
use super::handler::{Handler, token_key};
use super::oauth::{self, Token};
use super::stderr::StderrTail;
use super::{ConnectionStatus, UpstreamConfig, UpstreamError};
use crate::catalog::CatalogTool;
use crate::exec::ResourceUpdated;
use crate::model::Name;
use crate::secret::SecretBox;
use crate::store::items::{self, ItemDefinition, ItemKind};
use crate::store::servers::{self, Credential, Endpoint};
use crate::store::sources::ToolDefinition;
use crate::tool::{ClientRelay, ProgressSink, ToolContext, ToolError, ToolOutput};

#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct PoolKey {
    pub(super) endpoint: Endpoint,
    pub(super) tenant: Option<Uuid>,
}

/// One pooled connection.
pub(super) struct Slot {
    pub(super) me: Weak<Slot>,
    /// The servers whose calls go through this connection (several when they share an
    /// endpoint).
    pub(super) members: Mutex<Vec<Member>>,
    /// The servers' own connection discovers their tools; tenants' connections only call.
    pub(super) discovers: bool,
    /// A server joined the connection: discover its tools without reconnecting.
    pub(super) joined: tokio::sync::Notify,
    pub(super) pool: PgPool,
    /// Opens an OAuth server's stored token.
    pub(super) secrets: SecretBox,
    pub(super) config: UpstreamConfig,
    /// Where direct calls go out ([`DirectCalls`]).
    pub(super) http: reqwest::Client,
    /// When a call last went through (a private connection unused for long is closed).
    pub(super) last_used: Mutex<Instant>,
    pub(super) state: watch::Sender<SlotState>,
    /// Progress sinks of calls in flight, by progress token.
    pub(super) progress: Mutex<HashMap<String, ProgressSink>>,
    /// The MCP clients of calls in flight, by progress token.
    pub(super) relays: Mutex<HashMap<String, Arc<dyn ClientRelay>>>,
    /// A call wanted the connection while it was down: retry after [`DEMAND_RETRY`] rather
    /// than at the end of a long backoff, so a server that comes back is used within a second
    /// or two while traffic waits for it.
    pub(super) wanted: tokio::sync::Notify,
    /// An administrator asked for the connection now ("Refresh tools"): retry at once.
    pub(super) now: tokio::sync::Notify,
    pub(super) cancel: CancellationToken,
    /// Where the server's resource updates go, with [`Slot::id`].
    pub(super) updates: broadcast::Sender<ResourceUpdated>,
    /// Tells this connection's resource updates from another's (of the same server for
    /// another tenant or person, or of another server).
    pub(super) id: u64,
    /// The resources subscribed to through this connection, with how many subscriptions
    /// hold each; a new connection subscribes to them again.
    pub(super) subscribed: tokio::sync::Mutex<HashMap<String, usize>>,
    /// On 2026-07-28, the resources the server acknowledged on the listen stream of the
    /// connection numbered first.
    pub(super) listening: watch::Sender<(u64, Vec<String>)>,
    /// On 2026-07-28, what `subscribed` holds changed: the listen stream opens again.
    pub(super) listen_again: tokio::sync::Notify,
    /// Held by a discovery: two at once would write the same rows.
    pub(super) discovering: tokio::sync::Mutex<()>,
    /// The OAuth authorization whose token the connection carries, and the server's URL.
    pub(super) authorization: Option<(Uuid, String)>,
    /// A stdio server's standard error, its newest lines.
    pub(super) stderr: StderrTail,
}

/// A server using a pooled connection.
pub(super) struct Member {
    pub(super) name: String,
    pub(super) source_id: Uuid,
    /// Why its last discovery failed; the connection itself may be fine.
    pub(super) discovery_error: Option<Failure>,
}

impl Member {
    pub(super) fn new(name: &str, source_id: Uuid) -> Self {
        Member { name: name.to_string(), source_id, discovery_error: None }
    }
}

/// The shortest pause between reconnection attempts that calls ask for.
const DEMAND_RETRY: Duration = Duration::from_millis(500);

/// How long a finished call's progress sink stays registered: rmcp may handle a progress
/// notification the server sent before its result only after the result.
const PROGRESS_DRAIN: Duration = Duration::from_millis(250);

#[derive(Clone)]
pub(super) struct SlotState {
    pub(super) status: ConnectionStatus,
    pub(super) peer: Option<Peer<RoleClient>>,
    /// Set while the connection takes calls straight over HTTP.
    pub(super) direct: Option<Arc<DirectCalls>>,
    pub(super) last_error: Option<Failure>,
    pub(super) last_seen: Option<Instant>,
    /// Reconnecting after a failure: calls fail at once instead of waiting for the attempt
    /// (which, to a host that does not answer, takes the whole connect timeout).
    pub(super) retrying: bool,
    /// Waiting for what no retry brings (an authorization, an allowed program): the
    /// configuration change that brings it starts the connection again.
    pub(super) parked: bool,
    /// Counts connections made, so a call that saw its connection fail can tell whether the
    /// current one is that connection or a newer one.
    pub(super) connection: u64,
}

/// Why something failed, and when.
#[derive(Clone)]
pub(super) struct Failure {
    pub(super) reason: String,
    pub(super) at: Instant,
}

impl Failure {
    fn now(reason: String) -> Self {
        Failure { reason, at: Instant::now() }
    }
}

impl SlotState {
    /// The connection is down for `reason`; calls fail at once while it is retried.
    fn fail(&mut self, reason: String) {
        self.status = ConnectionStatus::Down;
        self.peer = None;
        self.direct = None;
        self.last_error = Some(Failure::now(reason));
        self.retrying = true;
    }
}

impl Slot {
    fn set(&self, change: impl FnOnce(&mut SlotState)) {
        self.state.send_modify(change);
    }

    pub(super) fn members(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().expect("slot members")
    }

    pub(super) fn member_names(&self) -> Vec<String> {
        self.members().iter().map(|m| m.name.clone()).collect()
    }

    /// How long since a call last went through; never idle while a subscription holds it.
    pub(super) fn idle_for(&self) -> Duration {
        if self.subscribed.try_lock().is_ok_and(|subscribed| subscribed.is_empty()) {
            return self.last_used.lock().expect("last used").elapsed();
        }
        Duration::ZERO
    }

    /// A number no other connection of this process has.
    pub(super) fn next_id() -> u64 {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The member servers' names, for the log.
    pub(super) fn label(&self) -> String {
        self.member_names().join(",")
    }

    /// Makes the members `wanted`; servers that joined get their tools discovered.
    pub(super) fn set_members(&self, wanted: Vec<Member>) {
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

    pub(super) async fn run(self: Arc<Self>, endpoint: Endpoint) {
        let mut backoff = Duration::from_millis(200);
        let mut token: Option<Arc<Token>> = None;
        'connecting: while !self.cancel.is_cancelled() {
            // A connection retried after a failure stays down until it is back.
            self.set(|s| {
                if !s.retrying {
                    s.status = ConnectionStatus::Connecting;
                }
            });
            // Only this task counts connections: the next one gets the next number.
            let connection = self.state.borrow().connection + 1;
            let handler = Handler { slot: Arc::downgrade(&self), connection };
            let connecting = async {
                if token.is_none() {
                    token = self.token(&endpoint).await?;
                }
                connect(&endpoint, handler, token.as_deref(), &self.config.stdio_commands, &self.stderr).await
            };
            let connected = tokio::select! {
                () = self.cancel.cancelled() => break,
                result = tokio::time::timeout(self.config.connect_timeout, connecting) => {
                    result.unwrap_or(Err(UpstreamError::ConnectTimeout(self.config.connect_timeout)))
                }
            };
            match connected {
                Ok(service) => {
                    backoff = Duration::from_millis(200);
                    let peer = service.peer().clone();
                    let direct = DirectCalls::of(&endpoint, &peer, &self.http, token.clone()).map(Arc::new);
                    self.set(|s| {
                        s.status = ConnectionStatus::Ready;
                        s.peer = Some(peer.clone());
                        s.direct = direct;
                        s.last_seen = Some(Instant::now());
                        s.retrying = false;
                        s.connection = connection;
                    });
                    tracing::info!(servers = %self.label(), "upstream connected");
                    // Probes must reach the server, never a cached answer.
                    peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
                    let stop = service.cancellation_token();
                    // In the background: a server slow to answer must not hold up the rest.
                    tokio::spawn({
                        let (slot, peer) = (self.clone(), peer.clone());
                        async move { slot.resubscribe(peer).await }
                    });
                    if is_stateless(&peer) {
                        // Ends with the connection.
                        let (slot, peer) = (self.clone(), peer.clone());
                        tokio::spawn(async move { slot.follow(&peer, connection).await });
                    }
                    if self.discovers {
                        self.discover(&peer, connection, &self.member_names()).await;
                    }
                    // A call or a listing that finds the connection broken takes it down
                    // ([`Slot::lose`]); this task then reconnects.
                    let mut watched = self.state.subscribe();
                    let lost = async move {
                        let _ = watched.wait_for(|s| s.peer.is_none()).await;
                    };
                    let waiting = service.waiting();
                    let probe = self.probe(&peer, token.as_deref());
                    tokio::pin!(lost, waiting, probe);
                    loop {
                        tokio::select! {
                            () = self.cancel.cancelled() => { stop.cancel(); break 'connecting; }
                            () = &mut lost => break,
                            quit = &mut waiting => {
                                self.lose(connection, format!("the connection closed ({quit:?})"));
                                break;
                            }
                            err = &mut probe => {
                                self.lose(connection, err);
                                break;
                            }
                            () = self.joined.notified() => {
                                self.discover(&peer, connection, &self.member_names()).await;
                            }
                        }
                    }
                    stop.cancel();
                    let reason =
                        self.state.borrow().last_error.as_ref().map(|f| f.reason.clone()).unwrap_or_default();
                    tracing::warn!(servers = %self.label(), %reason, "upstream connection lost; reconnecting");
                }
                Err(err @ UpstreamError::NeedsAuthorization(_)) => {
                    // Nothing to retry until someone authorizes: the configuration change that
                    // brings then starts this connection again.
                    tracing::info!(servers = %self.label(), "upstream connection waits for an authorization");
                    self.set(|s| {
                        s.fail(err.to_string());
                        s.status = ConnectionStatus::NeedsAuthorization;
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(UpstreamError::Refused(challenge)) if let Some((id, url)) = &self.authorization => {
                    // Retrying cannot help: the configuration change that marking it brings
                    // starts this connection again, to wait for the authorization.
                    let reason = oauth::refused(&self.pool, &self.secrets, url, *id, &challenge).await;
                    self.set(|s| {
                        s.fail(reason);
                        s.status = ConnectionStatus::NeedsAuthorization;
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(err @ UpstreamError::NotAllowed(_)) => {
                    // Nothing to retry: the program stays refused until the server is changed
                    // (a new connection) or Toolgate restarts with another list.
                    tracing::warn!(servers = %self.label(), error = %err, "upstream program not started: not allowed");
                    self.set(|s| {
                        s.fail(err.to_string());
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(err) => {
                    tracing::warn!(servers = %self.label(), error = %err, retry_in = ?backoff, "upstream connection failed");
                    self.set(|s| s.fail(err.to_string()));
                    // A token that failed to open is opened again, fresh.
                    token = None;
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
                () = self.now.notified() => {}
            }
            backoff = (backoff * 2).min(self.config.max_backoff);
        }
        self.set(|s| {
            s.status = ConnectionStatus::Down;
            s.peer = None;
            s.direct = None;
        });
    }

    /// The token an OAuth server's connection carries: `None` for another server.
    async fn token(&self, endpoint: &Endpoint) -> Result<Option<Arc<Token>>, UpstreamError> {
        let server = || self.member_names().first().cloned().unwrap_or_default();
        match endpoint.credential {
            Credential::None => Ok(None),
            Credential::Missing(_) => Err(UpstreamError::NeedsAuthorization(server())),
            Credential::OAuth { id, .. } => {
                let source = self.members().first().map(|m| m.source_id).unwrap_or_default();
                Token::open(&self.pool, &self.secrets, &self.http, source, id)
                    .await
                    .map(|t| Some(Arc::new(t)))
            }
        }
    }

    /// Probes the connection every `health_interval` (renewing a client credentials token
    /// first); returns when a probe fails.
    async fn probe(&self, peer: &Peer<RoleClient>, token: Option<&Token>) -> String {
        loop {
            tokio::time::sleep(self.config.health_interval).await;
            if let Some(Err(err)) = OptionFuture::from(token.map(Token::renew)).await {
                return err.to_string();
            }
            match tokio::time::timeout(self.config.connect_timeout, peer.list_tools(None)).await {
                Ok(Ok(_)) => self.set(|s| s.last_seen = Some(Instant::now())),
                Ok(Err(err)) => return format!("health probe failed: {}", service_failure(&err)),
                Err(_) => {
                    return format!("health probe got no answer within {:?}", self.config.connect_timeout);
                }
            }
        }
    }

    /// Lists every tool (following pagination) once through connection `connection` and
    /// records them for each of `servers`, with pinning; one report (or error) per server. A
    /// listing that cannot reach the server takes the connection down, as a failed probe does.
    pub(super) async fn discover(
        &self,
        peer: &Peer<RoleClient>,
        connection: u64,
        servers: &[String],
    ) -> Vec<Result<servers::DiscoveryReport, UpstreamError>> {
        let _one_at_a_time = self.discovering.lock().await;
        let listed = match tokio::time::timeout(self.config.connect_timeout, list_tools(peer)).await {
            Ok(Err(err)) if is_transport(&err) => {
                let failure = service_failure(&err);
                self.lose(connection, format!("a listing found the connection broken: {failure}"));
                Err(UpstreamError::Listing(failure))
            }
            Ok(listed) => listed.map_err(|e| UpstreamError::Listing(service_failure(&e))),
            Err(_) => {
                let err = UpstreamError::ListingTimeout(self.config.connect_timeout);
                self.lose(connection, err.to_string());
                Err(err)
            }
        };
        let definitions: Result<Vec<ToolDefinition>, UpstreamError> =
            listed.map(|tools| tools.iter().map(|t| definition(t, self.config.description_cap)).collect());
        let items = match definitions {
            Ok(_) => match tokio::time::timeout(self.config.connect_timeout, self.list_items(peer)).await {
                Ok(listed) => listed.map_err(|e| {
                    UpstreamError::Listing(format!("prompts and resources: {}", service_failure(&e)))
                }),
                Err(_) => Err(UpstreamError::ListingTimeout(self.config.connect_timeout)),
            },
            Err(_) => Ok(Vec::new()),
        };
        let mut reports = Vec::with_capacity(servers.len());
        for server in servers {
            let record = async |name: Name, definitions: &[ToolDefinition]| {
                let report = servers::record_discovery(&self.pool, &name, definitions).await?;
                if let Ok(items) = &items {
                    items::record(&self.pool, &name, items).await?;
                }
                Ok::<_, crate::store::Error>(report)
            };
            let report = match &definitions {
                Ok(definitions) => match Name::parse(server) {
                    Ok(name) => {
                        record(name, definitions).await.map_err(|e| UpstreamError::Recording(e.to_string()))
                    }
                    Err(err) => Err(UpstreamError::Recording(err.to_string())),
                },
                Err(err) => Err(err.clone()),
            };
            // The tools are recorded whatever became of the other items.
            let report = report.and_then(|report| items.as_ref().map(|_| report).map_err(Clone::clone));
            match &report {
                Ok(report) => tracing::info!(%server, ?report, "upstream tools discovered"),
                Err(err) => tracing::warn!(%server, error = %err, "upstream discovery failed"),
            }
            if let Some(member) = self.members().iter_mut().find(|m| &m.name == server) {
                member.discovery_error = report.as_ref().err().map(|err| Failure::now(err.to_string()));
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

    /// What the server offers besides tools, as far as its capabilities say it offers any:
    /// prompts, resources, resource templates (at most [`MAX_ITEMS`] of each).
    async fn list_items(&self, peer: &Peer<RoleClient>) -> Result<Vec<ItemDefinition>, ServiceError> {
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        let cap = self.config.description_cap;
        let mut items = Vec::new();
        if capabilities.prompts.is_some() {
            let prompts =
                paged(|page| peer.list_prompts(page).map_ok(|p| (p.prompts, p.next_cursor))).await?;
            items.extend(prompts.iter().filter_map(|p| item(ItemKind::Prompt, &p.name, p, cap)));
        }
        if capabilities.resources.is_some() {
            let resources =
                paged(|page| peer.list_resources(page).map_ok(|p| (p.resources, p.next_cursor))).await?;
            items.extend(resources.iter().filter_map(|r| item(ItemKind::Resource, &r.uri, r, cap)));
            let templates = paged(|page| {
                peer.list_resource_templates(page).map_ok(|p| (p.resource_templates, p.next_cursor))
            })
            .await?;
            items.extend(
                templates.iter().filter_map(|t| item(ItemKind::ResourceTemplate, &t.uri_template, t, cap)),
            );
        }
        Ok(items)
    }

    /// Sends `request` to `server` through this connection and returns its answer; dropped
    /// before the answer, the request is cancelled upstream.
    pub(super) async fn forward(
        &self,
        server: &str,
        request: ClientRequest,
    ) -> Result<ServerResult, ToolError> {
        *self.last_used.lock().expect("last used") = Instant::now();
        let (peer, connection) = self.peer(server).await?;
        let sent = async {
            let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
            let guard = CancelOnDrop { peer: Some(peer.clone()), request: handle.id.clone() };
            let response = handle.await_response().await;
            guard.disarm();
            response
        };
        match sent.await {
            Ok(result) => {
                self.set(|s| s.last_seen = Some(Instant::now()));
                Ok(result)
            }
            Err(ServiceError::McpError(error)) => {
                Err(ToolError::tool(format!("MCP server `{server}` refused: {}", error.message)))
            }
            Err(err) if let Some(refusal) = self.refusal(server, &err).await => Err(refusal),
            Err(err) if is_transport(&err) => {
                self.lose(
                    connection,
                    format!("a request found the connection broken: {}", service_failure(&err)),
                );
                Err(ToolError::tool(format!("MCP server `{server}` dropped the connection before answering")))
            }
            Err(err) => Err(ToolError::tool(format!(
                "MCP server `{server}` failed to answer: {}",
                service_failure(&err)
            ))),
        }
    }

    /// Subscribes to updates of `uri` at `server` through this connection (asking the server
    /// only for the first subscription to it), until the answer is dropped: with
    /// `resources/subscribe` in the handshake era, on the connection's listen stream on
    /// 2026-07-28 ([`Slot::subscribe_listening`]). Subscriptions of a connection are sent one at
    /// a time, so the server's state follows the counts.
    #[allow(deprecated)]
    pub(super) async fn subscribe(&self, server: &str, uri: &str) -> Result<SlotSubscription, ToolError> {
        let (peer, connection) = self.peer(server).await?;
        if is_stateless(&peer) {
            return self.subscribe_listening((&peer, connection), server, uri).await;
        }
        let mut subscribed = self.subscribed.lock().await;
        if !subscribed.contains_key(uri) {
            let request =
                ClientRequest::SubscribeRequest(SubscribeRequest::new(SubscribeRequestParams::new(uri)));
            self.forward(server, request).await?;
        }
        *subscribed.entry(uri.to_string()).or_default() += 1;
        Ok(self.subscription(server, uri))
    }

    /// A subscription to `uri` at `server` through this connection, counted already.
    pub(super) fn subscription(&self, server: &str, uri: &str) -> SlotSubscription {
        SlotSubscription { slot: self.me.clone(), server: server.to_string(), uri: uri.to_string() }
    }

    /// One subscription to `uri` fewer; the server is told to stop once none is left (on
    /// 2026-07-28, by a listen stream without it).
    #[allow(deprecated)]
    async fn unsubscribe(&self, server: &str, uri: &str) {
        let mut subscribed = self.subscribed.lock().await;
        let Some(count) = subscribed.get_mut(uri) else { return };
        *count -= 1;
        if *count > 0 {
            return;
        }
        subscribed.remove(uri);
        let peer = self.state.borrow().peer.clone();
        match peer {
            // The next connection subscribes to what is left.
            None => return,
            Some(peer) if is_stateless(&peer) => {
                self.listen_again.notify_one();
                return;
            }
            Some(_) => {}
        }
        let request =
            ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(UnsubscribeRequestParams::new(uri)));
        match tokio::time::timeout(self.config.connect_timeout, self.forward(server, request)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::debug!(%server, %uri, error = %err, "could not unsubscribe from a resource")
            }
            Err(_) => tracing::debug!(%server, %uri, "an unsubscription got no answer"),
        }
    }

    /// Subscribes a new connection to what the last one was subscribed to.
    #[allow(deprecated)]
    async fn resubscribe(&self, peer: Peer<RoleClient>) {
        if is_stateless(&peer) {
            // Its listen stream carries them ([`Slot::follow`]).
            return;
        }
        let subscribed = self.subscribed.lock().await;
        for uri in subscribed.keys() {
            let sent = tokio::time::timeout(
                self.config.connect_timeout,
                peer.subscribe(SubscribeRequestParams::new(uri)),
            );
            if !matches!(sent.await, Ok(Ok(()))) {
                tracing::warn!(servers = %self.label(), %uri, "could not subscribe again to a resource");
            }
        }
    }

    /// What a request the server refused for this connection's OAuth token answers the
    /// caller, once the authorization is marked as needing to be given again.
    async fn refusal(&self, server: &str, err: &ServiceError) -> Option<ToolError> {
        let (Some((id, url)), ServiceError::TransportSend(error)) = (&self.authorization, err) else {
            return None;
        };
        let reason = oauth::refused(&self.pool, &self.secrets, url, *id, &challenge_of(error)?).await;
        Some(ToolError::tool(format!("MCP server `{server}`: {reason}")))
    }

    /// Takes connection `connection` down for `reason` if it is still the current one (a newer
    /// one is left alone): calls fail at once from now on, and the connection's task, watching
    /// the state, reconnects.
    fn lose(&self, connection: u64, reason: String) {
        self.state.send_if_modified(|s| {
            let current = s.connection == connection && s.peer.is_some();
            if current {
                s.fail(reason);
            }
            current
        });
    }

    /// The connection's peer: at once when ready, after a wait while connecting for the first
    /// time, never when down or reconnecting after a failure.
    pub(super) async fn peer(&self, server: &str) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut state = self.state.subscribe();
        let waiting = state.wait_for(|s| s.status != ConnectionStatus::Connecting || s.retrying);
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

    /// The connection, made again at once if it is down (not after the rest of its backoff);
    /// what the attempt failed with otherwise.
    pub(super) async fn connect_now(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let asked = Instant::now();
        let mut state = self.state.subscribe();
        {
            let current = state.borrow();
            if current.parked {
                let why = current.last_error.as_ref().map(|f| f.reason.clone());
                return Err(why.unwrap_or_default());
            }
            if current.peer.is_none() {
                self.now.notify_one();
            }
        }
        let attempt =
            state.wait_for(|s| s.peer.is_some() || s.last_error.as_ref().is_some_and(|f| f.at >= asked));
        // The attempt may open a token first, then has the whole connect timeout.
        let within = self.config.connect_timeout + Duration::from_secs(1);
        let answered = tokio::time::timeout(within, attempt).await.is_ok();
        let current = self.state.borrow().clone();
        match (current.peer, current.last_error) {
            (Some(peer), _) => Ok((peer, current.connection)),
            (None, Some(failure)) if answered => Err(format!("could not connect: {}", failure.reason)),
            (None, failure) => Err(format!(
                "no connection within {:?}{}",
                self.config.connect_timeout,
                failure
                    .map(|failure| format!(" (it last failed with: {})", failure.reason))
                    .unwrap_or_default()
            )),
        }
    }

    pub(super) async fn call(
        &self,
        tool: &CatalogTool,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &tool.source_name;
        *self.last_used.lock().expect("last used") = Instant::now();
        let (peer, connection) = self.peer(server).await?;
        let direct = self.state.borrow().direct.clone().filter(|direct| direct.takes(tool));
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Default::default(),
        };
        let mut params = CallToolRequestParams::new(tool.upstream_name.clone()).with_arguments(arguments);
        let mut meta = RequestMetaObject::default();
        // A server on 2026-07-28 logs only at the level a request asks for: the caller's.
        #[allow(deprecated)]
        let level: Option<LoggingLevel> = ctx
            .client()
            .and_then(|client| client.log_level())
            .and_then(|name| serde_json::from_value(Value::String(name)).ok());
        if let Some(level) = level {
            meta.set_log_level(level);
        }
        // It asks only what the caller can answer (nothing, for a caller that is no MCP
        // client), and answers -32021 when the tool needs more.
        if is_stateless(&peer) {
            let declared = ctx.client().map(|client| client.capabilities()).unwrap_or_else(|| json!({}));
            meta.set_client_capabilities(serde_json::from_value(declared).unwrap_or_default());
        }
        // The upstream's work joins the caller's trace (SEP-414).
        let span = tracing::info_span!("upstream tools/call", server = %server, tool = %tool.upstream_name);
        for (field, value) in crate::telemetry::context_of(&span) {
            meta.0.insert(field, Value::String(value));
        }
        if !meta.0.is_empty() {
            params.meta = Some(meta);
        }
        // A server on 2026-07-28 asks the caller for input by answering with the questions;
        // the call is sent again with the answers (SEP-2322).
        let mut rounds = 0;
        let rounds_of_the_call = async {
            loop {
                let sent = match &direct {
                    Some(direct) => direct.call(params.clone(), ctx).await,
                    None => self.send_call(&peer, params.clone(), ctx).await,
                };
                match sent {
                    Ok(ServerResult::InputRequiredResult(asked)) if rounds < DEFAULT_MRTR_MAX_ROUNDS => {
                        rounds += 1;
                        let questions = asked.input_requests.unwrap_or_default();
                        params.input_responses = Some(answer_inputs(server, questions, ctx).await?);
                        params.request_state = asked.request_state;
                    }
                    other => break Ok(other),
                }
            }
        };
        let result = rounds_of_the_call.instrument(span).await?;
        match result {
            Ok(ServerResult::CallToolResult(result)) => {
                self.set(|s| s.last_seen = Some(Instant::now()));
                Ok(ToolOutput(result))
            }
            Ok(ServerResult::InputRequiredResult(_)) => Err(ToolError::tool(format!(
                "MCP server `{server}` asked for input {DEFAULT_MRTR_MAX_ROUNDS} times without finishing the call"
            ))),
            Ok(other) => Err(ToolError::internal(format!("unexpected answer to tools/call: {other:?}"))),
            Err(ServiceError::McpError(refused))
                if refused.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
            {
                let required = refused.data.as_ref().and_then(|data| data.get("requiredCapabilities"));
                Err(ToolError::MissingCapability(required.cloned().unwrap_or_else(|| json!({}))))
            }
            Err(err) => {
                tracing::warn!(%server, error = %err, "upstream call failed");
                if let Some(refusal) = self.refusal(server, &err).await {
                    return Err(refusal);
                }
                if is_transport(&err) {
                    self.lose(
                        connection,
                        format!("a call found the connection broken: {}", service_failure(&err)),
                    );
                    return Err(ToolError::tool(format!(
                        "MCP server `{server}` dropped the connection before answering (it went away, or its \
                         answer was over the {} MiB limit); try again later",
                        MAX_ANSWER >> 20
                    )));
                }
                Err(ToolError::tool(format!(
                    "MCP server `{server}` failed to answer: {}",
                    service_failure(&err)
                )))
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
        // rmcp puts its own client's metadata in a request on 2026-07-28; the call's wins.
        let options = match params.meta.clone() {
            Some(meta) => PeerRequestOptions::no_options().with_meta(meta),
            None => PeerRequestOptions::no_options(),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp gives every request its own progress token; progress reports come back under it.
        let handle = peer.send_request_with_option(request, options).await?;
        let key = token_key(&handle.progress_token);
        if let Some(sink) = ctx.progress_sink() {
            self.progress.lock().expect("progress map").insert(key.clone(), sink);
        }
        // Registered for as long as the call runs, timed out or not.
        let _relay = ctx.client().map(|client| {
            self.relays.lock().expect("relay map").insert(key.clone(), client);
            RelayRegistration { slot: self.me.clone(), key: key.clone() }
        });
        // If this future is dropped (the call timed out, or its caller cancelled it), tell the
        // server to stop.
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

/// The caller's answers to what a server on 2026-07-28 asked during a call: every request
/// relayed at once under the server's own keys, refused whole when the caller did not declare
/// what one of them needs.
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
    let declared = client.capabilities();
    let mut asked = crate::tool::Keyed::new();
    for (key, question) in questions {
        let question = serde_json::to_value(question).map_err(ToolError::internal)?;
        if let Some(required) = crate::tool::required_capability(&question)
            && !crate::tool::declares(&declared, &required)
        {
            return Err(ToolError::MissingCapability(required));
        }
        asked.insert(key, question);
    }
    if asked.is_empty() {
        return Ok(InputResponses::new());
    }
    client.request_all(asked).await.map_err(|err| {
        ToolError::tool(format!(
            "MCP server `{server}` asked the caller for input, which it could not give: {err}"
        ))
    })
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
    pub(super) peer: Option<Peer<RoleClient>>,
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
                Some("Toolgate stopped the call: its caller cancelled it, or it timed out".into()),
            );
            tokio::spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// A subscription to a resource through a connection: dropped, the connection's server is
/// told to stop sending its updates once no other subscription holds it.
pub(super) struct SlotSubscription {
    slot: Weak<Slot>,
    server: String,
    uri: String,
}

impl SlotSubscription {
    /// The connection it came through, which its updates name.
    pub(super) fn connection(&self) -> u64 {
        self.slot.upgrade().map_or(0, |slot| slot.id)
    }
}

impl Drop for SlotSubscription {
    fn drop(&mut self) {
        let (Some(slot), Ok(runtime)) = (self.slot.upgrade(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let (server, uri) = (std::mem::take(&mut self.server), std::mem::take(&mut self.uri));
        runtime.spawn(async move { slot.unsubscribe(&server, &uri).await });
    }
}

/// What ends a description cut at the cap.
const TRUNCATED: &str = " [description truncated]";

/// The most entries of one listing (tools, prompts, resources, templates) kept of a server.
const MAX_LISTED: usize = 10_000;

/// The request never reached the server, or its answer never came back: the connection is gone.
fn is_transport(err: &ServiceError) -> bool {
    matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}

/// An untrusted description, cut to `cap` bytes (with a notice).
fn capped(mut description: String, cap: usize) -> String {
    if description.len() > cap {
        // The notice counts against the cap too.
        let mut end = cap.saturating_sub(TRUNCATED.len());
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
        description.push_str(TRUNCATED);
    }
    description
}

/// A listing's pages from `page`, following the server's cursors until it has given
/// [`MAX_LISTED`] entries: a server that pages on and on is cut off there.
async fn paged<T, Page>(
    mut page: impl FnMut(Option<PaginatedRequestParams>) -> Page,
) -> Result<Vec<T>, ServiceError>
where
    Page: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let (entries, next) =
            page(cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)))).await?;
        listed.extend(entries);
        if listed.len() >= MAX_LISTED {
            if next.is_some() || listed.len() > MAX_LISTED {
                tracing::warn!(
                    kept = MAX_LISTED,
                    "an upstream lists more than is kept; the rest is left out"
                );
            }
            listed.truncate(MAX_LISTED);
            return Ok(listed);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(listed),
        }
    }
}

/// A server's tools, at most [`MAX_LISTED`].
pub(super) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<rmcp::model::Tool>, ServiceError> {
    paged(|page| peer.list_tools(page).map_ok(|p| (p.tools, p.next_cursor))).await
}

/// A discovered prompt, resource or template as Toolgate stores it, its description capped;
/// `None` for a key the catalog cannot hold.
fn item(kind: ItemKind, key: &str, listed: &impl serde::Serialize, cap: usize) -> Option<ItemDefinition> {
    if key.is_empty() || key.len() > 2048 {
        tracing::warn!(
            kind = kind.as_str(),
            bytes = key.len(),
            "an upstream item's key is empty or too long; left out"
        );
        return None;
    }
    let mut definition = serde_json::to_value(listed).ok()?;
    if let Some(Value::String(description)) = definition.get_mut("description") {
        *description = capped(std::mem::take(description), cap);
    }
    Some(ItemDefinition::listed(kind, key.to_string(), definition))
}

/// A discovered tool as Toolgate stores it; the description is untrusted and capped.
fn definition(tool: &rmcp::model::Tool, description_cap: usize) -> ToolDefinition {
    let value = serde_json::to_value(tool).unwrap_or_default();
    let description = capped(value["description"].as_str().unwrap_or_default().to_string(), description_cap);
    ToolDefinition {
        upstream_name: value["name"].as_str().unwrap_or_default().to_string(),
        description,
        input_schema: value.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        output_schema: value.get("outputSchema").filter(|s| s.is_object()).cloned(),
        annotations: value.get("annotations").filter(|a| a.is_object()).cloned().unwrap_or_else(|| json!({})),
        tags: vec![],
        strict: false,
        timeout_ms: None,
        meta: crate::catalog::apps::tool_meta(tool.meta.as_deref()),
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

    #[tokio::test]
    async fn a_listing_that_pages_on_and_on_is_cut_off() {
        let mut pages = 0;
        let listed = paged(|cursor| {
            pages += 1;
            let at: usize = cursor.and_then(|c| c.cursor).map_or(0, |c| c.parse().unwrap());
            std::future::ready(Ok(((at..at + 999).collect::<Vec<_>>(), Some((at + 999).to_string()))))
        })
        .await
        .unwrap();
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(listed.last(), Some(&(MAX_LISTED - 1)));
        assert_eq!(pages, MAX_LISTED.div_ceil(999));
    }
}
