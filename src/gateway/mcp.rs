//! The MCP endpoint a tenant's LLM applications connect to: `/mcp/{tenant}`, streamable HTTP
//! (rmcp's `StreamableHttpService`), authenticated by the tenant's API keys.
//!
//! `tools/list` serves the tenant's visible tools from the live snapshot, rendered for MCP
//! (normalised, lint-clean); `tools/call` runs through the engine's executor. When the
//! tenant's tool list changes, connected sessions get `notifications/tools/list_changed`.
//!
//! Both protocol eras are served on the one endpoint. Sessions (revisions up to 2025-11-25)
//! get `list_changed` on their GET stream; requests on 2026-07-28, which have no session, get it
//! on `subscriptions/listen`.
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

use std::sync::{Arc, Mutex, OnceLock};

use engine::catalog::{Catalog, CatalogTool, GroupInfo, TenantTools};
use engine::db::PgPool;
use engine::exec::{CallHooks, CallRequest, CallResult, Executor};
use engine::schema::Provider;
use engine::tool::{Caller, ClientRelay, RelayFuture, ToolOutput};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ResultType, ServerCapabilities,
    ServerConfig, ServerNotification, ServerRequest, SetLevelRequestParams, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use super::rounds::{Owner, Question, Round, Rounds, RunningCall};
use super::sessions::{EquippedElsewhere, StoredSessions};
use super::{RenderCache, TenantAccess, log_internal, shown};

/// The rmcp service behind `/mcp/{tenant}`, its sessions kept by `sessions`. Requests must
/// name a loopback host or one of `public_hosts` (DNS-rebinding protection). At most
/// `input_waits_per_key` calls of a key wait for their client's input at once.
pub fn service(
    catalog: Catalog,
    executor: Executor,
    pool: PgPool,
    sessions: Arc<LocalSessionManager>,
    public_hosts: Vec<String>,
    input_waits_per_key: usize,
) -> StreamableHttpService<Gateway, LocalSessionManager> {
    let rendered = Arc::new(RenderCache::new(Provider::Mcp, |value| serde_json::from_value(value).ok()));
    let rounds = Arc::new(Rounds::new(input_waits_per_key));
    let gateway =
        Gateway { catalog, executor, pool: pool.clone(), rendered, rounds, session: Arc::default() };
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(public_hosts);
    // Any replica continues a session: rmcp replays its handshake from PostgreSQL.
    config.session_store = Some(Arc::new(StoredSessions(pool)));
    // A request on 2026-07-28 whose handler answers at once (no progress, no question to the
    // client first) gets one JSON body instead of an SSE stream; rmcp falls back to the stream
    // as soon as anything comes before the answer.
    config.json_response = true;
    // Each session gets its own handler state.
    StreamableHttpService::new(
        move || Ok(Gateway { session: Arc::default(), ..gateway.clone() }),
        sessions,
        config,
    )
}

/// How often a session's `list_changed` watcher checks that the session is still open.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// The meta tool letting a session choose its active groups.
const META_TOOL: &str = "reset_equipped_tools";

/// One MCP session's handler; all sessions share the rendering cache and the calls waiting
/// for input, the clones of one session share its state.
#[derive(Clone)]
pub struct Gateway {
    catalog: Catalog,
    executor: Executor,
    /// Where sessions keep what must follow them to another replica.
    pool: PgPool,
    rendered: Arc<RenderCache<Tool>>,
    rounds: Arc<Rounds<Listening>>,
    session: Arc<Mutex<Session>>,
}

/// What a session chose.
struct Session {
    equipped: Option<Equipped>,
    /// From `logging/setLevel`.
    level: LoggingLevel,
}

impl Default for Session {
    fn default() -> Self {
        Session { equipped: None, level: LoggingLevel::Debug }
    }
}

/// The groups a session chose with the meta tool, and its view for one snapshot version.
struct Equipped {
    groups: Vec<String>,
    version: u64,
    view: Arc<TenantTools>,
}

fn access(extensions: &rmcp::model::Extensions) -> Option<TenantAccess> {
    extensions.get::<axum::http::request::Parts>()?.extensions.get::<TenantAccess>().cloned()
}

/// The id of the session a request belongs to.
fn session_id(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    Some(parts.headers.get("mcp-session-id")?.to_str().ok()?.to_string())
}

impl Gateway {
    /// The tools this session sees, and whether they are its own choice of groups rather
    /// than the tenant's.
    fn view(&self, tenant: &str) -> Option<(Arc<TenantTools>, bool)> {
        let snapshot = self.catalog.snapshot();
        let tenant_view = snapshot.tenant(tenant)?.clone();
        let mut session = self.session.lock().expect("session");
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

    /// The tools this session's client is shown.
    fn listing(&self, tenant: &str) -> Vec<Arc<CatalogTool>> {
        self.view(tenant).map(|(view, _)| view.tools().to_vec()).unwrap_or_default()
    }

    /// Runs the meta tool: the session's active groups become `groups`.
    async fn equip(
        &self,
        tenant: &str,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let failed = |message: String| CallToolResult::error(vec![ContentBlock::text(message)]);
        let groups: Option<Vec<String>> =
            arguments.and_then(|mut args| serde_json::from_value(args.remove("groups")?).ok());
        let Some(groups) = groups else {
            return failed("`groups` must be a list of group names".into());
        };
        let snapshot = self.catalog.snapshot();
        let Some(tenant_view) = snapshot.tenant(tenant) else {
            return failed(format!("unknown tenant `{tenant}`"));
        };
        let view = match tenant_view.equip(&groups) {
            Ok(view) => Arc::new(view),
            Err(unknown) => {
                let known: Vec<&str> = tenant_view.groups.iter().map(|g| g.name.as_str()).collect();
                return failed(format!(
                    "unknown groups: {}; the groups are: {}",
                    unknown.join(", "),
                    known.join(", ")
                ));
            }
        };
        let count = view.tools().len();
        self.session.lock().expect("session").equipped =
            Some(Equipped { groups: groups.clone(), version: snapshot.version, view });
        // The choice follows the session to another replica.
        if let Some(id) = session_id(&context.extensions)
            && let Err(err) = engine::store::mcp_sessions::equip(&self.pool, &id, &groups).await
        {
            tracing::warn!(error = %err, "could not record the groups a session equipped");
        }
        let _ = context.peer.notify_tool_list_changed().await;
        let message = format!("Equipped groups: {}. {count} tools are available now.", groups.join(", "));
        CallToolResult::success(vec![ContentBlock::text(message)])
    }

    /// Takes back what a session brought from the replica that opened it: the groups it
    /// equipped (less those removed meanwhile).
    fn restore(&self, extensions: &rmcp::model::Extensions) {
        let parts = extensions.get::<axum::http::request::Parts>();
        let brought = parts.and_then(|parts| parts.extensions.get::<EquippedElsewhere>());
        let (Some(access), Some(EquippedElsewhere(groups))) = (access(extensions), brought) else { return };
        let snapshot = self.catalog.snapshot();
        let Some(tenant_view) = snapshot.tenant(&access.tenant) else { return };
        let mut groups = groups.clone();
        groups.retain(|name| tenant_view.groups.iter().any(|g| &g.name == name));
        let view = Arc::new(tenant_view.equip(&groups).expect("only known groups remain"));
        self.session.lock().expect("session").equipped =
            Some(Equipped { groups, version: snapshot.version, view });
    }
}

/// Where a call's notifications go: the request waiting for its answer. In a multi-round
/// call that is a new request every round.
struct Listener {
    peer: Peer<RoleServer>,
    progress: Option<ProgressToken>,
    /// The least severe log message the request wants; `None`: none at all.
    level: Option<LoggingLevel>,
    /// What the client said it can answer (elicitation, sampling).
    capabilities: Option<ClientCapabilities>,
}

type Listening = Arc<Mutex<Listener>>;

impl Listener {
    fn of(context: &RequestContext<RoleServer>, session_level: LoggingLevel) -> Self {
        let stateless = is_stateless(context);
        Listener {
            peer: context.peer.clone(),
            progress: context.meta.get_progress_token(),
            // SEP-2575: a request on 2026-07-28 gets log messages only when it asks for them.
            level: if stateless { context.meta.log_level() } else { Some(session_level) },
            capabilities: context.client_capabilities(),
        }
    }

    fn wants(&self, notification: &ServerNotification) -> bool {
        match notification {
            ServerNotification::LoggingMessageNotification(message) => {
                self.level.is_some_and(|least| severity(message.params.level) >= severity(least))
            }
            _ => true,
        }
    }

    /// Whether the client can answer `method`.
    fn answers(&self, method: &str) -> bool {
        let capabilities = self.capabilities.as_ref();
        match method {
            "elicitation/create" => capabilities.is_some_and(|c| c.elicitation.is_some()),
            "sampling/createMessage" => capabilities.is_some_and(|c| c.sampling.is_some()),
            _ => false,
        }
    }
}

fn severity(level: LoggingLevel) -> u8 {
    level as u8
}

/// Whether the request is on revision 2026-07-28 or later: no session, no requests to the
/// client.
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|version| !version.has_initialize())
}

/// The client of a call as the engine relays to it what an upstream server asks during the
/// call (sampling, elicitation) and the log messages it sends.
struct CallRelay {
    listening: Listening,
    /// Set for a client that takes no requests: questions become rounds of the call.
    rounds: Option<mpsc::Sender<Question>>,
    /// Notifications on their way to the client, through one task started by the first of
    /// them. The queue is short: an upstream flooding messages faster than the client reads
    /// loses messages, not Toolgate's memory.
    notices: OnceLock<mpsc::Sender<ServerNotification>>,
}

/// How many relayed notifications wait for a slow client before more are dropped.
const NOTICE_BUFFER: usize = 256;

impl CallRelay {
    fn new(listening: Listening, rounds: Option<mpsc::Sender<Question>>) -> Self {
        CallRelay { listening, rounds, notices: OnceLock::new() }
    }

    fn notices(&self) -> &mpsc::Sender<ServerNotification> {
        self.notices.get_or_init(|| {
            let (sender, mut queue) = mpsc::channel(NOTICE_BUFFER);
            let listening = self.listening.clone();
            tokio::spawn(async move {
                while let Some(notification) = queue.recv().await {
                    let peer = listening.lock().expect("listener").peer.clone();
                    let _ = peer.send_notification(notification).await;
                }
            });
            sender
        })
    }
}

impl ClientRelay for CallRelay {
    fn request(&self, request: Value) -> RelayFuture {
        let method = request["method"].as_str().unwrap_or_default().to_string();
        let (peer, answers) = {
            let listener = self.listening.lock().expect("listener");
            (listener.peer.clone(), listener.answers(&method))
        };
        let rounds = self.rounds.clone();
        Box::pin(async move {
            if !answers {
                return Err(format!("the caller's MCP client does not take {method} requests"));
            }
            if let Some(rounds) = rounds {
                let (answer, answered) = oneshot::channel();
                rounds
                    .send(Question { request, answer })
                    .await
                    .map_err(|_| "the call has ended".to_string())?;
                return answered.await.map_err(|_| "the call has ended".to_string())?;
            }
            let request: ServerRequest = serde_json::from_value(request).map_err(|e| e.to_string())?;
            let answer = peer.send_request(request).await.map_err(|e| e.to_string())?;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        })
    }

    fn notify(&self, notification: Value) {
        match serde_json::from_value::<ServerNotification>(notification) {
            Ok(notification) if self.listening.lock().expect("listener").wants(&notification) => {
                if self.notices().try_send(notification).is_err() {
                    tracing::debug!("upstream notification dropped: the client reads slower than it arrives");
                }
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "upstream notification not relayed"),
        }
    }

    fn log_level(&self) -> Option<String> {
        let level = self.listening.lock().expect("listener").level?;
        serde_json::to_value(level).ok()?.as_str().map(String::from)
    }
}

/// A call's progress reports, sent to whichever request is waiting for the call.
fn progress_reports(listening: &Listening) -> engine::tool::ProgressSink {
    let (sink, mut reports) = engine::tool::progress_channel();
    let listening = listening.clone();
    tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let (peer, token) = {
                let listener = listening.lock().expect("listener");
                (listener.peer.clone(), listener.progress.clone())
            };
            let Some(token) = token else { continue };
            let mut param = ProgressNotificationParam::new(token, report.progress);
            param.total = report.total;
            param.message = report.message;
            let _ = peer.notify_progress(param).await;
        }
    });
    sink
}

/// The meta tool's definition, offering `groups`.
fn meta_tool(groups: &[GroupInfo]) -> Option<Tool> {
    let listing: Vec<String> = groups
        .iter()
        .map(|g| {
            if g.description.is_empty() { g.name.clone() } else { format!("{} ({})", g.name, g.description) }
        })
        .collect();
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    serde_json::from_value(json!({
        "name": META_TOOL,
        "description": format!(
            "Choose which tool groups are active in this session; the tool list changes to match. Groups: {}.",
            listing.join("; ")
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                    "description": "The groups to activate; every other group is deactivated"
                }
            },
            "required": ["groups"]
        }
    }))
    .ok()
}

/// A tool's output as an MCP result, as it came, with `resultType: "complete"`: clients on
/// revision 2026-07-28 refuse a result without it, an upstream on an older revision sends none,
/// and rmcp leaves it out for peers on older revisions.
fn mcp_result(output: ToolOutput) -> CallToolResult {
    let mut result = output.0;
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// A `tools/list` answer with its cache hints (SEP-2549): the list is the tenant's, so no
/// shared cache may keep it, and it can change at any moment (an admin's change reaches the
/// gateway in milliseconds), so it is never fresh for a fixed time — clients that want to know
/// hear `list_changed`.
fn tool_list(tools: Vec<Tool>) -> ListToolsResult {
    ListToolsResult::with_all_items(tools).with_ttl_ms(0).with_cache_scope(CacheScope::Private)
}

fn not_authenticated() -> ErrorData {
    ErrorData::invalid_request("the request carries no tenant authentication", None)
}

impl Gateway {
    /// Calls `announce` whenever the tenant's tool list (as this handler sees it) changes — a
    /// tool added or removed, or one's name, description, schemas or annotations — until
    /// `announce` fails or the catalog closes.
    async fn announce_changes<F, E>(&self, tenant: &str, mut announce: impl FnMut() -> F)
    where
        F: Future<Output = Result<(), E>>,
    {
        let mut versions = self.catalog.versions();
        let mut listed = self.listing(tenant);
        while versions.changed().await.is_ok() {
            let now = self.listing(tenant);
            let alike = now.len() == listed.len()
                && now.iter().zip(&listed).all(|(a, b)| Arc::ptr_eq(a, b) || a.listed_alike(b));
            if !alike {
                listed = now;
                if announce().await.is_err() {
                    return;
                }
            }
        }
    }

    /// Runs a call for a client that takes no requests from the server: what an upstream asks
    /// during the call becomes an `InputRequiredResult`, and the retry carrying its
    /// `requestState` continues the same call.
    async fn call_in_rounds(
        &self,
        owner: Owner,
        view: Arc<TenantTools>,
        request: CallToolRequestParams,
        listener: Listener,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(handle) = &request.request_state {
            let resumed = self.rounds.resume(handle, &owner, request.input_responses).ok_or_else(|| {
                ErrorData::invalid_params(
                    "unknown or expired `requestState`: call the tool again without it",
                    None,
                )
            })?;
            let (call, listening) = resumed.map_err(|message| ErrorData::invalid_params(message, None))?;
            *listening.lock().expect("listener") = listener;
            return self.round(owner, call, listening).await;
        }
        let listening = Arc::new(Mutex::new(listener));
        let (asks, questions) = mpsc::channel(1);
        let hooks = CallHooks {
            progress: Some(progress_reports(&listening)),
            client: Some(Arc::new(CallRelay::new(listening.clone(), Some(asks)))),
        };
        let (executor, caller, call) =
            (self.executor.clone(), Caller::ApiKey(owner.key), call_request(request));
        let task = tokio::spawn(async move { executor.call_in(&view, &caller, call, hooks).await });
        self.round(owner, RunningCall { task, questions }, listening).await
    }

    async fn round(
        &self,
        owner: Owner,
        call: RunningCall,
        listening: Listening,
    ) -> Result<CallToolResponse, ErrorData> {
        match self.rounds.next(owner, call, listening).await {
            Round::Done(outcome) => complete(outcome),
            Round::Asks(input) => Ok(CallToolResponse::InputRequired(input)),
            Round::Lost(err) => Err(ErrorData::internal_error(log_internal(&err), None)),
        }
    }
}

fn call_request(request: CallToolRequestParams) -> CallRequest {
    CallRequest {
        name: request.name.to_string(),
        arguments: request.arguments.map(Value::Object).unwrap_or(Value::Null),
    }
}

/// A finished call as the MCP answer to `tools/call`.
fn complete(outcome: Result<CallResult, engine::Error>) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Ok(result) => Ok(CallToolResponse::Complete(mcp_result(result.output))),
        // A tool error the LLM reads, so it can wait and call again.
        Err(engine::Error::Limited(limited)) => {
            Ok(CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(
                limited.to_string(),
            )])))
        }
        Err(err) => Err(error_data(err)),
    }
}

/// An engine error as MCP's: what the request named or sent is the client's mistake
/// (invalid params); the rest is the server's, with Toolgate's own faults only logged.
fn error_data(err: engine::Error) -> ErrorData {
    match err {
        engine::Error::NotFound(_) | engine::Error::Invalid(_) => {
            ErrorData::invalid_params(err.to_string(), None)
        }
        err => ErrorData::internal_error(shown(&err), None),
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_logging().build();
        ServerConfig::new(capabilities)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        if context.extensions.get::<SessionRestoreMarker>().is_some() {
            self.restore(&context.extensions);
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(access) = access(&context.extensions) else { return };
        let (gateway, peer) = (self.clone(), context.peer);
        tokio::spawn(async move {
            // The task ends with its session; rmcp has no signal for that, so it looks.
            let closed = async {
                let mut check = tokio::time::interval(SESSION_CHECK);
                while !peer.is_transport_closed() {
                    check.tick().await;
                }
            };
            tokio::select! {
                () = gateway.announce_changes(&access.tenant, || peer.notify_tool_list_changed()) => {}
                () = closed => {}
            }
        });
    }

    fn accepted_subscription_filter(&self, _: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let access = access(&subscription.request_context().extensions).ok_or_else(not_authenticated)?;
        if subscription.accepted().tools_list_changed == Some(true) {
            let sink = subscription.sink();
            tokio::select! {
                () = self.announce_changes(&access.tenant, || sink.notify_tool_list_changed()) => {}
                () = subscription.cancelled() => {}
            }
        } else {
            subscription.cancelled().await;
        }
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.lock().expect("session").level = request.level;
        Ok(())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let Some((view, equipped)) = self.view(&access.tenant) else {
            return Ok(tool_list(Vec::new()));
        };
        let mut tools = if equipped {
            self.rendered.render(view.tools())
        } else {
            self.rendered.tools(&self.catalog, &access.tenant).as_ref().clone()
        };
        if offers_meta_tool(&view, &context) {
            tools.extend(meta_tool(&view.groups));
        }
        Ok(tool_list(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The caller's trace context: in `_meta` (SEP-414), else on the HTTP request.
        let span = tracing::info_span!("mcp tools/call", tool = %request.name);
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let header = |name: &str| parts.and_then(|p| p.headers.get(name)?.to_str().ok());
        let meta = |name: &str| context.meta.get(name).and_then(Value::as_str);
        match meta("traceparent") {
            Some(traceparent) => engine::telemetry::follow(&span, Some(traceparent), meta("tracestate")),
            None => engine::telemetry::follow(&span, header("traceparent"), header("tracestate")),
        }
        self.answer_call(request, context).instrument(span).await
    }
}

impl Gateway {
    async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let (view, _) = self
            .view(&access.tenant)
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown tenant `{}`", access.tenant), None))?;
        if request.name == META_TOOL && offers_meta_tool(&view, &context) {
            let result = self.equip(&access.tenant, request.arguments, &context).await;
            return Ok(CallToolResponse::Complete(result));
        }
        let listener = Listener::of(&context, self.session.lock().expect("session").level);
        if is_stateless(&context) {
            let owner = Owner { tenant: access.tenant, key: access.key_id, tool: request.name.to_string() };
            return self.call_in_rounds(owner, view, request, listener).await;
        }
        let listening = Arc::new(Mutex::new(listener));
        let hooks = CallHooks {
            progress: context.meta.get_progress_token().map(|_| progress_reports(&listening)),
            client: Some(Arc::new(CallRelay::new(listening, None))),
        };
        let caller = Caller::ApiKey(access.key_id);
        let call = self.executor.call_in(&view, &caller, call_request(request), hooks);
        // rmcp runs a handler to its end after the client cancels the request (and drops the
        // answer): stop waiting instead, which cancels the call upstream too.
        tokio::select! {
            result = call => complete(result),
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the client cancelled the call", None)),
        }
    }
}

/// Whether the request is offered the meta tool: a session's, of a tenant with it on, unless a
/// tool of the tenant has its name.
fn offers_meta_tool(view: &TenantTools, context: &RequestContext<RoleServer>) -> bool {
    view.meta_tool && !is_stateless(context) && view.resolve(META_TOOL).is_none()
}
