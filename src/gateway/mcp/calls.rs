//! What `tools/list` and `tools/call` do, whichever way the request came in: the listing with
//! its cache hints, the call through the executor with what it relays to its client
//! (progress, log messages, an upstream's questions), multi-round calls for clients on
//! 2026-07-28, and how outcomes become MCP answers.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use axum::http::HeaderMap;
use engine::schema::render;
use engine::service::PgPool;
use engine::service::calls::{CallHooks, CallRequest, CallResult, Executor};
use engine::service::catalog::Catalog;
use engine::service::catalog::{CatalogTool, SEARCH_TOOL, TenantTools, search_tool};
use engine::tool::Caller;
use engine::tool::{ClientRelay, Keyed, RelayAllFuture, RelayFuture, ToolOutput};
use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientResult,
    ContentBlock, ErrorCode, ListToolsResult, LoggingLevel, ProgressNotification, ProgressNotificationParam,
    ProgressToken, RequestMetaObject, ResultType, ServerNotification, ServerRequest, ServerResult, Tool,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::super::TenantAccess;
use super::super::rounds::{INPUT_KEY, Owner, Question, Round, Rounds, RunningCall};
use super::super::{log_internal, shown};
use super::outbox::Outbox;
use super::session::SessionChoices;
use crate::gateway::RenderCache;

/// What every session and the direct way share: the catalog, the executor, the tenants' tool
/// lists (rendered once per snapshot version) and the calls waiting for their client's input.
pub(super) struct Shared {
    pub(super) catalog: Catalog,
    pub(super) executor: Executor,
    /// Where sessions keep what must follow them to another replica.
    pub(super) pool: PgPool,
    /// The tenants' tool lists with schemas as published.
    pub(super) lists: RenderCache<Tool>,
    /// The tool lists of tenants that chose portable schemas on MCP.
    pub(super) portable_lists: RenderCache<Tool>,
    pub(super) rounds: Rounds<Listening>,
}

impl Shared {
    /// The tool lists of `view`'s tenant, as it chose its MCP clients get schemas.
    pub(super) fn lists_of(&self, view: &TenantTools) -> &RenderCache<Tool> {
        if view.portable_mcp_schemas { &self.portable_lists } else { &self.lists }
    }

    /// Whether the tenant still reads `uri`: a subscription's updates stop once it does not.
    pub(super) fn serves(&self, tenant: &str, uri: &str) -> bool {
        self.catalog.snapshot().tenant(tenant).is_some_and(|view| view.items.reading(uri).is_ok())
    }

    /// The tools a request sees: a session's own choice of groups when it made one (and whether
    /// it did), else the tenant's.
    pub(super) fn view(
        &self,
        tenant: &str,
        session: Option<&SessionChoices>,
    ) -> Option<(Arc<TenantTools>, bool)> {
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

/// A list of the tenant's whose change clients hear of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Changed {
    Tools,
    Prompts,
    /// Resources or resource templates.
    Resources,
}

/// The lists that differ between two views of a tenant (`None`: the tenant is gone, and
/// lists nothing).
fn changes(before: Option<&TenantTools>, now: Option<&TenantTools>) -> Vec<Changed> {
    if let (Some(before), Some(now)) = (before, now)
        && std::ptr::eq(before, now)
    {
        return Vec::new();
    }
    fn how(view: Option<&TenantTools>) -> Option<(bool, bool, &HashSet<Uuid>)> {
        view.map(|view| (view.portable_mcp_schemas, view.searching(), &*view.pinned))
    }
    fn tools(view: Option<&TenantTools>) -> &[Arc<CatalogTool>] {
        view.map_or(&[], |view| view.tools())
    }
    let (was, is) = (tools(before), tools(now));
    let tools_alike = how(before) == how(now)
        && was.len() == is.len()
        && is.iter().zip(was).all(|(a, b)| Arc::ptr_eq(a, b) || a.listed_alike(b));
    let items = |view: Option<&TenantTools>| view.map(|view| view.items.clone()).unwrap_or_default();
    let (prompts_alike, resources_alike) = items(now).listed_alike(&items(before));
    [(Changed::Tools, tools_alike), (Changed::Prompts, prompts_alike), (Changed::Resources, resources_alike)]
        .into_iter()
        .filter_map(|(list, alike)| (!alike).then_some(list))
        .collect()
}

/// The protocol era of a request, which decides the shape of its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Era {
    /// Revisions up to 2025-11-25: a session, opened by `initialize`.
    Handshake,
    /// Revision 2026-07-28: no session, every request carries what it needs.
    Stateless,
}

impl Era {
    /// Shapes `result` for a client of this era as rmcp's `ServerHandler` does: cache hints
    /// filled for 2026-07-28; `resultType` and non-object output left out for older revisions.
    pub(super) fn shape(self, result: &mut ServerResult) {
        match self {
            Era::Stateless => result.fill_missing_cache_hints(),
            Era::Handshake => {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
        }
    }

    /// Which of a tool list's serialised answers this era gets.
    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// How a request reaches its client while it runs.
#[derive(Clone)]
pub(super) enum Client {
    /// The request came through rmcp: its peer routes what is sent.
    Peer(Peer<RoleServer>),
    /// The request came the direct way: what is sent goes on its own answer stream.
    Direct(Outbox),
}

impl Client {
    /// Sends `notification`; whether it went (a request answered already takes none).
    async fn notify(&self, notification: ServerNotification) -> bool {
        match self {
            Client::Peer(peer) => peer.send_notification(notification).await.is_ok(),
            Client::Direct(outbox) => outbox.notify(notification).await,
        }
    }

    async fn ask(&self, request: ServerRequest) -> Result<ClientResult, String> {
        match self {
            Client::Peer(peer) => peer.send_request(request).await.map_err(|e| e.to_string()),
            Client::Direct(outbox) => outbox.ask(request).await,
        }
    }
}

/// Where a call's notifications go: the request waiting for its answer. In a multi-round
/// call that is a new request every round.
pub(super) struct Listener {
    pub(super) client: Client,
    pub(super) progress: Option<ProgressToken>,
    /// The least severe log message the request wants; `None`: none at all.
    pub(super) level: Option<LoggingLevel>,
    /// What the client said it can answer (elicitation, sampling).
    pub(super) capabilities: Option<ClientCapabilities>,
    /// Notifications that came for a round already answered (between two rounds, when the
    /// server's messages reach Toolgate by two streams): the next round's request gets them
    /// first.
    held: Vec<ServerNotification>,
}

pub(super) type Listening = Arc<Mutex<Listener>>;

impl Listener {
    /// The listener of a request of `era` with `meta`, from a session with `session_level`
    /// (SEP-2575: a request on 2026-07-28 gets log messages only when it asks for them).
    pub(super) fn new(
        client: Client,
        meta: &RequestMetaObject,
        era: Era,
        session_level: LoggingLevel,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        let level = match era {
            Era::Stateless => meta.log_level(),
            Era::Handshake => Some(session_level),
        };
        Listener { client, progress: meta.get_progress_token(), level, capabilities, held: Vec::new() }
    }

    fn wants(&self, notification: &ServerNotification) -> bool {
        match notification {
            ServerNotification::LoggingMessageNotification(message) => {
                self.level.is_some_and(|least| severity(message.params.level) >= severity(least))
            }
            _ => true,
        }
    }

    /// What of the client's capabilities Toolgate passes on: the requests it relays
    /// (sampling, elicitation — a URL-mode one only to a client that says it opens URLs —
    /// and roots) and MCP Apps, whose views it serves.
    fn relayed_capabilities(&self) -> Value {
        let declared = self.capabilities.as_ref().and_then(|c| serde_json::to_value(c).ok());
        let declared = declared.as_ref();
        let mut relayed = serde_json::Map::new();
        for capability in ["sampling", "elicitation", "roots"] {
            if let Some(offered) = declared.and_then(|d| d.get(capability)) {
                relayed.insert(capability.into(), offered.clone());
            }
        }
        let apps = engine::service::catalog::apps::EXTENSION;
        if let Some(offered) = declared.and_then(|d| d.get("extensions")?.get(apps)) {
            relayed.insert("extensions".into(), serde_json::json!({apps: offered}));
        }
        Value::Object(relayed)
    }
}

fn severity(level: LoggingLevel) -> u8 {
    level as u8
}

/// The client of a call as the engine relays to it what an upstream server asks during the
/// call (sampling, elicitation) and the log messages it sends.
struct CallRelay {
    listening: Listening,
    /// Set for a client that takes no requests: questions become rounds of the call.
    rounds: Option<mpsc::Sender<Question>>,
    /// Answers such a client sent with the call itself, before any question: the first round
    /// asking only what they answer is answered with them.
    given: Mutex<Keyed>,
    /// Notifications on their way to the client, through one task started by the first of
    /// them. The queue is short: an upstream flooding messages faster than the client reads
    /// loses messages, not Toolgate's memory.
    notices: OnceLock<mpsc::Sender<ServerNotification>>,
}

/// How many relayed notifications wait for a slow client before more are dropped.
const NOTICE_BUFFER: usize = 256;

impl CallRelay {
    fn new(listening: Listening, rounds: Option<mpsc::Sender<Question>>, given: Keyed) -> Self {
        CallRelay { listening, rounds, given: Mutex::new(given), notices: OnceLock::new() }
    }

    /// The answers given with the call to all of `requests`, taken, if there are.
    fn answered_up_front(&self, requests: &Keyed) -> Option<Keyed> {
        let mut given = self.given.lock().expect("given answers");
        if given.is_empty() || !requests.keys().all(|key| given.contains_key(key)) {
            return None;
        }
        Some(requests.keys().filter_map(|key| given.remove_entry(key)).collect())
    }

    fn notices(&self) -> &mpsc::Sender<ServerNotification> {
        self.notices.get_or_init(|| {
            let (sender, mut queue) = mpsc::channel::<ServerNotification>(NOTICE_BUFFER);
            let listening = self.listening.clone();
            tokio::spawn(async move {
                while let Some(notification) = queue.recv().await {
                    loop {
                        let client = listening.lock().expect("listener").client.clone();
                        if client.notify(notification.clone()).await {
                            break;
                        }
                        let mut listener = listening.lock().expect("listener");
                        let Client::Direct(answered) = &client else { break };
                        // Unless a new round began meanwhile (then its request takes it).
                        if matches!(&listener.client, Client::Direct(now) if now.is(answered)) {
                            if listener.held.len() < NOTICE_BUFFER {
                                listener.held.push(notification);
                            }
                            break;
                        }
                    }
                }
            });
            sender
        })
    }
}

impl ClientRelay for CallRelay {
    fn request(&self, request: Value) -> RelayFuture {
        let client = self.listening.lock().expect("listener").client.clone();
        if self.rounds.is_some() {
            // One request is a round of its own, under a key of Toolgate's.
            let asked = self.request_all(Keyed::from([(INPUT_KEY.to_string(), request)]));
            return Box::pin(async move {
                asked.await?.remove(INPUT_KEY).ok_or_else(|| "the client did not answer".to_string())
            });
        }
        Box::pin(async move {
            let request: ServerRequest = serde_json::from_value(request).map_err(|e| e.to_string())?;
            let answer = client.ask(request).await?;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        })
    }

    /// For a client that takes no requests, all of them are one round of the call, under the
    /// asker's keys (each already checked against what it declared, by the engine or by
    /// [`Self::request`]).
    fn request_all(&self, requests: Keyed) -> RelayAllFuture {
        let Some(rounds) = self.rounds.clone() else {
            return engine::tool::one_at_a_time(requests, |request| self.request(request));
        };
        if let Some(answers) = self.answered_up_front(&requests) {
            return Box::pin(async move { Ok(answers) });
        }
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let ended = || "the call has ended".to_string();
            rounds.send(Question { requests, answer }).await.map_err(|_| ended())?;
            answered.await.map_err(|_| ended())?
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

    fn capabilities(&self) -> Value {
        self.listening.lock().expect("listener").relayed_capabilities()
    }
}

/// A call's progress reports, sent to whichever request is waiting for the call.
fn progress_reports(listening: &Listening) -> engine::tool::ProgressSink {
    let (sink, mut reports) = engine::tool::progress_channel();
    let listening = listening.clone();
    tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let (client, token) = {
                let listener = listening.lock().expect("listener");
                (listener.client.clone(), listener.progress.clone())
            };
            let Some(token) = token else { continue };
            let mut param = ProgressNotificationParam::new(token, report.progress);
            param.total = report.total;
            param.message = report.message;
            client.notify(ServerNotification::ProgressNotification(ProgressNotification::new(param))).await;
        }
    });
    sink
}

/// Whether a call of `tool` in `era` finds tools for a session, whose list then changes.
pub(super) fn finds_in_session(view: &TenantTools, era: Era, tool: &str) -> bool {
    era == Era::Handshake && tool == SEARCH_TOOL && view.searching()
}

/// Whether a request of `era` is offered the meta tool: a session's, of a tenant with it on,
/// unless a tool of the tenant has its name.
pub(super) fn offers_meta_tool(view: &TenantTools, era: Era) -> bool {
    era == Era::Handshake && view.offers_meta_tool()
}

/// A tool's output as an MCP result, as it came, with `resultType: "complete"`: clients on
/// revision 2026-07-28 refuse a result without it, an upstream on an older revision sends none,
/// and it is left out again for clients on older revisions ([`Era::shape`]).
fn mcp_result(output: ToolOutput) -> CallToolResult {
    let mut result = output.0;
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// A `tools/list` answer with its cache hints (SEP-2549): the list is the tenant's, so no
/// shared cache may keep it, and it can change at any moment (an admin's change reaches the
/// gateway in milliseconds), so it is never fresh for a fixed time — clients that want to know
/// hear `list_changed`.
pub(super) fn tool_list(tools: Vec<Tool>) -> ListToolsResult {
    ListToolsResult::with_all_items(tools).with_ttl_ms(0).with_cache_scope(CacheScope::Private)
}

pub(super) fn not_authenticated() -> ErrorData {
    ErrorData::invalid_request("the request carries no tenant authentication", None)
}

/// The span of one `tools/call`, following the caller's trace context: in `_meta` (SEP-414),
/// else on the HTTP request.
pub(super) fn call_span(tool: &str, meta: &RequestMetaObject, headers: Option<&HeaderMap>) -> tracing::Span {
    let span = tracing::info_span!("mcp tools/call", tool = %engine::telemetry::bounded(tool));
    let header = |name: &str| headers.and_then(|h| h.get(name)?.to_str().ok());
    let field = |name: &str| meta.get(name).and_then(Value::as_str);
    match field("traceparent") {
        Some(traceparent) => engine::telemetry::follow(&span, Some(traceparent), field("tracestate")),
        None => engine::telemetry::follow(&span, header("traceparent"), header("tracestate")),
    }
    span
}

/// One `tools/call` to run, however it came in.
pub(super) struct Call {
    pub(super) access: TenantAccess,
    pub(super) view: Arc<TenantTools>,
    pub(super) params: CallToolRequestParams,
    pub(super) listener: Listener,
    pub(super) era: Era,
    /// Cancelled when the client gives up on a session's request.
    pub(super) cancelled: CancellationToken,
}

impl Shared {
    /// The tools a request of `caller` sees listed: `Some` list when it is not the tenant's
    /// plain list (a session's own choice of groups, the meta tool added, or a tenant in
    /// `search` mode: its search tool, pinned tools and those the caller found), `None` for
    /// the tenant's list as [`Shared::lists_of`] keeps it.
    pub(super) async fn own_listing(
        &self,
        view: &TenantTools,
        equipped: bool,
        era: Era,
        caller: &Caller,
    ) -> Option<Vec<Tool>> {
        let offers = offers_meta_tool(view, era);
        let searching = view.searching();
        if !equipped && !offers && !searching {
            return None;
        }
        let lists = self.lists_of(view);
        let mut tools = if searching {
            let found = self.executor.found(view, caller).await;
            let search =
                render::mcp(&search_tool(), view.portable_mcp_schemas).expect("the search tool renders");
            let mut tools: Vec<Tool> = serde_json::from_value(search).into_iter().collect();
            tools.extend(lists.render_kept(&view.listed_when_searching(&found)));
            tools
        } else {
            lists.render_kept(view.tools())
        };
        if offers {
            tools.extend(view.meta_tool_definition().and_then(|tool| serde_json::from_value(tool).ok()));
        }
        Some(tools)
    }

    /// The tools a request of `caller` sees listed, as a `tools/list` result.
    pub(super) async fn listing(
        &self,
        tenant: &str,
        session: Option<&SessionChoices>,
        era: Era,
        caller: &Caller,
    ) -> ListToolsResult {
        let Some((view, equipped)) = self.view(tenant, session) else {
            return tool_list(Vec::new());
        };
        let tools = match self.own_listing(&view, equipped, era, caller).await {
            Some(tools) => tools,
            None => self.lists_of(&view).render(view.tools()),
        };
        tool_list(tools)
    }

    /// Calls `announce` with each of the tenant's lists (as `session` sees them) that changed
    /// — a tool added or removed, or one's name, description, schemas or annotations, the
    /// form of the schemas (as published or portable), listing by search or not, the pins; a
    /// prompt, resource or template added, removed or changed — until `announce` fails or the
    /// catalog closes. It keeps the view it last saw, which every listener of the tenant shares
    /// with the snapshot, not a copy of its list.
    pub(super) async fn announce_changes<F, E>(
        &self,
        tenant: &str,
        session: Option<&SessionChoices>,
        mut announce: impl FnMut(Changed) -> F,
    ) where
        F: Future<Output = Result<(), E>>,
    {
        let mut versions = self.catalog.versions();
        let mut seen = self.view(tenant, session).map(|(view, _)| view);
        while versions.changed().await.is_ok() {
            let now = self.view(tenant, session).map(|(view, _)| view);
            let changed = changes(seen.as_deref(), now.as_deref());
            seen = now;
            for list in changed {
                if announce(list).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Runs a call: in rounds for a client on 2026-07-28, else until it ends or its client
    /// cancels it.
    pub(super) async fn call(&self, call: Call) -> Result<CallToolResponse, ErrorData> {
        let Call { access, view, params, listener, era, cancelled } = call;
        if era == Era::Stateless {
            let owner = Owner { tenant: access.tenant, caller: access.caller, tool: params.name.to_string() };
            return self.call_in_rounds(owner, view, params, listener).await;
        }
        let listening = Arc::new(Mutex::new(listener));
        let progress = listening.lock().expect("listener").progress.is_some();
        let hooks = CallHooks {
            progress: progress.then(|| progress_reports(&listening)),
            client: Some(Arc::new(CallRelay::new(listening, None, Keyed::new()))),
            format: None,
        };
        let call = self.executor.call_in(&view, &access.caller, call_request(params), hooks);
        // rmcp runs a handler to its end after the client cancels the request (and drops the
        // answer): stop waiting instead, which cancels the call upstream too.
        tokio::select! {
            result = call => complete(result),
            () = cancelled.cancelled() => Err(ErrorData::internal_error("the client cancelled the call", None)),
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
            let client = listener.client.clone();
            let held = std::mem::replace(&mut *listening.lock().expect("listener"), listener).held;
            for notification in held {
                client.notify(notification).await;
            }
            return self.round(owner, call, listening).await;
        }
        let listening = Arc::new(Mutex::new(listener));
        let (asks, questions) = mpsc::channel(1);
        // Answers sent with a new call, as a server on 2026-07-28 may be sent them: keys
        // nothing asks for are ignored, and what is no answer (not an object) is asked again.
        let given = request.input_responses.iter().flatten();
        let given = given
            .filter_map(|(key, answer)| Some((key.clone(), serde_json::to_value(answer).ok()?)))
            .filter(|(_, answer)| answer.is_object());
        let hooks = CallHooks {
            progress: Some(progress_reports(&listening)),
            client: Some(Arc::new(CallRelay::new(listening.clone(), Some(asks), given.collect()))),
            format: None,
        };
        let (executor, caller, call) = (self.executor.clone(), owner.caller.clone(), call_request(request));
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
        // SEP-2575: a request needing what the client did not declare is refused as such.
        Ok(CallResult { required_capabilities: Some(required), .. }) => {
            let message = engine::tool::ToolError::MissingCapability(required.clone()).to_string();
            let data = serde_json::json!({"requiredCapabilities": required});
            Err(ErrorData::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message, Some(data)))
        }
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
pub(super) fn error_data(err: engine::Error) -> ErrorData {
    match err {
        engine::Error::NotFound(_) | engine::Error::Invalid(_) => {
            ErrorData::invalid_params(err.to_string(), None)
        }
        err => ErrorData::internal_error(shown(&err), None),
    }
}
