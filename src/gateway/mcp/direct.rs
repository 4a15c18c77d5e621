//! The direct way in: `tools/call`, `tools/list` and `subscriptions/listen` answered without
//! rmcp's per-request machinery (a service and a task per request on 2026-07-28, a session
//! worker, channels and an SSE stream per request in a session), which cost several times the
//! gateway's own work.
//!
//! A request is taken when it is plainly valid for its era: on 2026-07-28 with the revision's
//! per-request metadata and its `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers
//! agreeing with the body; on an older revision, in a session this replica knows. Anything
//! else goes to rmcp unread, which answers what is wrong with its own errors, so both ways
//! accept and refuse alike. Answers are shaped by rmcp's own rules for the era ([`Era::shape`]).
//!
//! A call is answered with one JSON body when it finishes before it sends its client anything;
//! otherwise the answer becomes an SSE stream: progress, log messages and an upstream's
//! questions, then the result. A question to a session's client (elicitation, sampling) goes on
//! that stream, and the client's answer, posted on the session, is taken here, as is its
//! `notifications/cancelled` for a call running here. A call that stays silent for
//! [`KEEP_ALIVE`] also becomes a stream, so keep-alive comments keep idle connections open.
//! A `subscriptions/listen` is such a stream that lasts: held by nothing but its response, it
//! costs an idle client little more than its connection.

use std::borrow::Cow;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use axum::http::request::Parts;
use axum::http::uri::Authority;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use futures::StreamExt;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientNotification, ErrorCode, GetMeta, JsonRpcVersion2_0,
    LoggingLevel, NotificationMetaObject, PaginatedRequestParams, ProtocolVersion, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerNotification, ServerResult, SubscriptionFilter,
    SubscriptionsAcknowledgedNotification, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::super::TenantAccess;
use super::calls::Shared;
use super::calls::{Call, Client, Era, Listener, call_span, finds_in_session, offers_meta_tool, tool_list};
use super::handler::Gateway;
use super::items;
use super::outbox::{Outbox, SessionCalls, event};
use super::session::SessionHandle;
use engine::service::catalog::{META_TOOL, TenantTools};

/// The largest request body taken, as rmcp takes.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// How long a call's answer waits in silence before it becomes an SSE stream carrying
/// keep-alive comments (rmcp's keep-alive interval).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How many messages to its client a call may have on their way at once.
const MESSAGES: usize = 16;

/// The parts of a JSON-RPC message the direct way reads first, borrowed from the body. A
/// request's params are then read as its method's own rmcp type: reading the whole message as
/// rmcp's `ClientJsonRpcMessage` tries each kind of message, and each of 22 kinds of request,
/// in turn.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// `/mcp/{tenant}`: the direct way, and rmcp's service for everything else.
pub(super) struct Endpoint {
    shared: Arc<Shared>,
    rmcp: StreamableHttpService<Gateway, LocalSessionManager>,
    /// The hosts a request may name (DNS-rebinding protection), checked for both ways in.
    hosts: Vec<(String, Option<u16>)>,
    sessions: Arc<SessionCalls>,
}

impl Endpoint {
    pub(super) fn new(
        shared: Arc<Shared>,
        rmcp: StreamableHttpService<Gateway, LocalSessionManager>,
        hosts: Vec<String>,
    ) -> Self {
        let hosts = hosts
            .iter()
            .map(|allowed| match Authority::try_from(allowed.trim()) {
                Ok(authority) => (normal_host(authority.host()), authority.port_u16()),
                Err(_) => (normal_host(allowed.trim()), None),
            })
            .collect();
        Endpoint { shared, rmcp, hosts, sessions: Arc::default() }
    }

    pub(super) fn into_route(self) -> MethodRouter {
        axum::routing::any(serve).with_state(Arc::new(self))
    }

    /// The refusal of a request naming a host other than the allowed ones, as rmcp refuses it.
    fn host_refusal(&self, request: &Request) -> Option<Response> {
        let authority = match request.headers().get(HOST) {
            Some(host) => host.to_str().ok().and_then(|host| Authority::try_from(host).ok()),
            None => request.uri().authority().cloned(),
        };
        let Some(authority) = authority else {
            return Some((StatusCode::BAD_REQUEST, "Bad Request: Invalid Host header").into_response());
        };
        let host = normal_host(authority.host());
        let allowed = self.hosts.iter().any(|(allowed, port)| {
            *allowed == host && port.is_none_or(|port| authority.port_u16() == Some(port))
        });
        if allowed {
            return None;
        }
        tracing::warn!(%host, "refused a request naming another host (possible DNS rebinding)");
        Some((StatusCode::FORBIDDEN, "Forbidden: Host header is not allowed").into_response())
    }

    /// Answers `request` the direct way, or gives it back for rmcp.
    async fn take(&self, request: Request) -> Result<Response, Request> {
        if !plain_post(request.method(), request.headers()) {
            return Err(request);
        }
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
            return Ok((StatusCode::BAD_REQUEST, "Bad Request: the body could not be read").into_response());
        };
        let taken = match serde_json::from_slice::<Envelope>(&bytes) {
            Ok(Envelope { id: Some(id), method: Some(method), params, .. }) => {
                self.request(&parts, id, &method, params).await
            }
            Ok(_) => serde_json::from_slice(&bytes).ok().and_then(|message| self.reply(&parts, message)),
            Err(_) => None,
        };
        taken.ok_or_else(|| Request::from_parts(parts, Body::from(bytes)))
    }

    /// Takes what a session's client posts about a direct call (an answer to its question,
    /// `notifications/cancelled`), or `None` to leave the message to rmcp.
    fn reply(&self, parts: &Parts, message: ClientJsonRpcMessage) -> Option<Response> {
        let session = parts.extensions.get::<SessionHandle>();
        let answered = match message {
            ClientJsonRpcMessage::Request(_) => false,
            ClientJsonRpcMessage::Response(response) => {
                self.sessions.answer(session?, response.id, Ok(response.result))
            }
            ClientJsonRpcMessage::Error(error) => self.sessions.answer(
                session?,
                error.id?,
                Err(ServiceError::McpError(error.error).to_string()),
            ),
            ClientJsonRpcMessage::Notification(notification) => match notification.notification {
                ClientNotification::CancelledNotification(cancelled) => {
                    self.sessions.cancel(session?, cancelled.params.request_id?)
                }
                _ => false,
            },
        };
        answered.then(|| StatusCode::ACCEPTED.into_response())
    }

    /// Answers a `tools/list`, a `tools/call` or a `subscriptions/listen` the direct way, or
    /// `None` to leave the request to rmcp.
    async fn request(
        &self,
        parts: &Parts,
        id: RequestId,
        method: &str,
        params: Option<&RawValue>,
    ) -> Option<Response> {
        let (meta, asked) = match method {
            "tools/list" => {
                let params = match params {
                    Some(params) => Some(read::<PaginatedRequestParams>(params)?),
                    None => None,
                };
                (params.and_then(|p| p.meta), Asked::List)
            }
            "tools/call" => {
                let mut call = read::<CallToolRequestParams>(params?)?;
                (call.meta.take(), Asked::Call(call))
            }
            "subscriptions/listen" => {
                let listen = read::<SubscriptionsListenRequestParams>(params?)?;
                (listen.meta, Asked::Listen(listen.notifications))
            }
            _ => return None,
        };
        let meta = meta.unwrap_or_default();
        let session = parts.extensions.get::<SessionHandle>();
        let access = parts.extensions.get::<TenantAccess>()?.clone();
        let name = match &asked {
            Asked::Call(call) => Some(call.name.as_ref()),
            _ => None,
        };
        let era = era(&parts.headers, &meta, method, name, session.is_some())?;
        let session = session.filter(|_| era == Era::Handshake);
        let (view, equipped) = self.shared.view(&access.tenant, session.map(|s| &*s.state))?;
        let params = match asked {
            Asked::List => {
                let result = match self.shared.own_listing(&view, equipped, era, &access.caller).await {
                    Some(tools) => list_result(tools, era),
                    None => self.shared.lists_of(&view).body(
                        &self.shared.catalog,
                        &access.tenant,
                        era.index(),
                        |tools| list_result(tools, era),
                    ),
                };
                return Some(respond_with(&id, &result));
            }
            // In a session, `subscriptions/listen` is unknown: rmcp says so.
            Asked::Listen(requested) if era == Era::Stateless => {
                return Some(self.listen(id, access, view, &requested).await);
            }
            Asked::Listen(_) => return None,
            Asked::Call(params) => params,
        };
        if (params.name == META_TOOL && offers_meta_tool(&view, era))
            || finds_in_session(&view, era, &params.name)
        {
            // Choosing groups, or finding tools, tells the session's GET stream: rmcp's.
            return None;
        }
        let (messages, outgoing) = mpsc::channel(MESSAGES);
        let outbox =
            Outbox { messages, session: session.map(|s| s.id.clone()), sessions: self.sessions.clone() };
        let (level, capabilities) = match session {
            Some(session) => {
                let state = session.state.lock();
                (state.level, state.capabilities.clone())
            }
            None => (LoggingLevel::Debug, meta.client_capabilities()),
        };
        let listener = Listener::new(Client::Direct(outbox), &meta, era, level, capabilities);
        let cancelled = CancellationToken::new();
        let running = session.map(|s| self.sessions.calls.add((s.id.clone(), id.clone()), cancelled.clone()));
        let span = call_span(&params.name, &meta, Some(&parts.headers));
        let shared = self.shared.clone();
        let call = Call { access, view, params, listener, era, cancelled };
        let answer = async move {
            let _running = running;
            let outcome = shared.call(call).await;
            final_message(outcome.map(ServerResult::from), id, era)
        };
        Some(respond(Box::pin(answer.instrument(span)), outgoing, era).await)
    }

    /// A `subscriptions/listen` stream, as rmcp's: the acknowledgment of what it will hear once
    /// its resources are subscribed to (else an error, as one JSON body), then each
    /// notification, marked with the request's id, until the client goes (the stream dropped
    /// drops its subscriptions).
    async fn listen(
        &self,
        id: RequestId,
        access: TenantAccess,
        view: Arc<TenantTools>,
        requested: &SubscriptionFilter,
    ) -> Response {
        let accepted = items::accepted(requested);
        let (messages, outgoing) = mpsc::channel(MESSAGES);
        let mut acknowledged = SubscriptionsAcknowledgedNotification::new(
            SubscriptionsAcknowledgedNotificationParams::new(accepted.clone()),
        );
        let mut marked = NotificationMetaObject::new();
        marked.set_subscription_id(id.clone());
        acknowledged.extensions.insert(marked);
        let shared = self.shared.clone();
        let listening = async move {
            let send = |mut notification: ServerNotification| {
                notification.get_meta_mut().set_subscription_id(id.clone());
                messages.send(event(&ServerJsonRpcMessage::notification(notification)))
            };
            let acknowledged = send(acknowledged.into());
            let outcome = shared.listen(&access, &view, &accepted, acknowledged, send).await;
            let ended = outcome.map(|()| {
                let mut result = SubscriptionsListenResult::complete(id.clone());
                result.meta.set_server_info(engine::implementation());
                ServerResult::SubscriptionsListenResult(result)
            });
            final_message(ended, id, Era::Stateless)
        };
        respond(Box::pin(listening), outgoing, Era::Stateless).await
    }
}

/// What a request the direct way reads asks for.
enum Asked {
    List,
    Call(CallToolRequestParams),
    Listen(SubscriptionFilter),
}

async fn serve(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    if let Some(refusal) = endpoint.host_refusal(&request) {
        return refusal;
    }
    match endpoint.take(request).await {
        Ok(response) => response,
        Err(request) => endpoint.rmcp.handle(request).await.map(Body::new),
    }
}

/// A request's params as its method's type.
fn read<T: serde::de::DeserializeOwned>(params: &RawValue) -> Option<T> {
    serde_json::from_str(params.get()).ok()
}

/// Hosts compared as rmcp compares them: brackets off, lower case.
fn normal_host(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// Whether the request is a POST the direct way can read: JSON of a known length within the
/// limit, from a client accepting both JSON and SSE answers (media types without parameters;
/// anything subtler is left to rmcp's negotiation).
fn plain_post(method: &Method, headers: &HeaderMap) -> bool {
    let accepted = |wanted: &str| {
        headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .any(|entry| entry.trim().eq_ignore_ascii_case(wanted))
    };
    let json = headers.get(CONTENT_TYPE).and_then(|value| value.to_str().ok()).is_some_and(|value| {
        value.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json")
    });
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|length| length <= MAX_BODY);
    method == Method::POST && json && length && accepted("application/json") && accepted("text/event-stream")
}

/// The era of a request the direct way takes, or `None` to leave it to rmcp: on 2026-07-28,
/// complete per-request metadata and a protocol version header matching it, and the standard
/// headers (SEP-2243) matching the body; before it, no per-request version, a session this
/// replica knows, and a known revision (if the header names one).
fn era(
    headers: &HeaderMap,
    meta: &RequestMetaObject,
    method: &str,
    name: Option<&str>,
    in_session: bool,
) -> Option<Era> {
    let current = ProtocolVersion::V_2026_07_28;
    let header = match headers.get("mcp-protocol-version") {
        Some(value) => Some(value.to_str().ok()?),
        None => None,
    };
    match meta.protocol_version() {
        Some(version) => {
            let complete = version == current && meta.missing_required_keys(&current).is_empty();
            let agree = header == Some(current.as_str())
                && sole(headers, "mcp-method") == Some(method)
                && name.is_none_or(|name| sole(headers, "mcp-name") == Some(name));
            (complete && agree).then_some(Era::Stateless)
        }
        None => {
            let known = header.is_none_or(|header| {
                header < current.as_str()
                    && ProtocolVersion::KNOWN_VERSIONS.iter().any(|v| v.as_str() == header)
            });
            (in_session && known).then_some(Era::Handshake)
        }
    }
}

/// The one value of header `name`, if it has exactly one.
fn sole<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.to_str().ok()).flatten()
}

/// A `tools/list` result of `tools` for `era`, serialised.
fn list_result(tools: Vec<rmcp::model::Tool>, era: Era) -> Bytes {
    let mut result = ServerResult::ListToolsResult(tool_list(tools));
    era.shape(&mut result);
    Bytes::from(serde_json::to_vec(&result).expect("tool lists serialise"))
}

/// A JSON-RPC answer carrying the serialised `result`.
fn respond_with(id: &RequestId, result: &[u8]) -> Response {
    let id = serde_json::to_vec(id).expect("ids serialise");
    let mut body = Vec::with_capacity(result.len() + id.len() + 32);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    body.extend_from_slice(&id);
    body.extend_from_slice(br#","result":"#);
    body.extend_from_slice(result);
    body.push(b'}');
    json(body)
}

fn json(body: Vec<u8>) -> Response {
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

/// The final message of a call: its result shaped for `era`, or its error.
fn final_message(outcome: Result<ServerResult, ErrorData>, id: RequestId, era: Era) -> ServerJsonRpcMessage {
    match outcome {
        Ok(mut result) => {
            era.shape(&mut result);
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

type Answering = Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>;

/// The answer to a request: one JSON body if it finishes before it sends its client anything,
/// else an SSE stream of what it sends and then its answer.
async fn respond(mut answering: Answering, mut outgoing: mpsc::Receiver<Bytes>, era: Era) -> Response {
    let first = tokio::select! {
        biased;
        Some(event) = outgoing.recv() => event,
        answer = &mut answering => {
            let body = json(serde_json::to_vec(&answer).expect("messages serialise"));
            return match &answer {
                // SEP-2575 (2026-07-28): over HTTP, this error is a 400. A session's client
                // reads a POST's failure status as the transport's, not the call's.
                ServerJsonRpcMessage::Error(refused)
                    if era == Era::Stateless
                        && refused.error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
                {
                    (StatusCode::BAD_REQUEST, body).into_response()
                }
                _ => body,
            };
        }
        () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(KEEP_ALIVE_COMMENT),
    };
    let stream = Streaming {
        first: Some(first),
        answering: Some(answering),
        outgoing,
        keep_alive: tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE),
    };
    let body = futures::stream::unfold(stream, Streaming::next).map(Ok::<_, Infallible>);
    let headers = [
        (CONTENT_TYPE, "text/event-stream"),
        (axum::http::header::CACHE_CONTROL, "no-cache"),
        (axum::http::HeaderName::from_static("x-accel-buffering"), "no"),
    ];
    (headers, Body::from_stream(body)).into_response()
}

/// An SSE comment: keeps an idle stream's connection open.
const KEEP_ALIVE_COMMENT: &[u8] = b":\n\n";

/// A request's answer stream: what it sends its client, keep-alive comments while it is
/// silent, then its answer.
struct Streaming {
    first: Option<Bytes>,
    /// `None` once answered.
    answering: Option<Answering>,
    outgoing: mpsc::Receiver<Bytes>,
    keep_alive: tokio::time::Interval,
}

impl Streaming {
    async fn next(mut self) -> Option<(Bytes, Self)> {
        if let Some(first) = self.first.take() {
            return Some((first, self));
        }
        let answering = self.answering.as_mut()?;
        let (bytes, answered) = tokio::select! {
            biased;
            Some(event) = self.outgoing.recv() => (event, false),
            answer = answering => (event(&answer), true),
            _ = self.keep_alive.tick() => (Bytes::from_static(KEEP_ALIVE_COMMENT), false),
        };
        if answered {
            self.answering = None;
        }
        Some((bytes, self))
    }
}
