//! `tools/call` to a streamable HTTP upstream, made straight over HTTP: one POST from the
//! caller's task on a kept-alive connection, its answer read there (one JSON body, or an SSE
//! stream of progress, log messages and the server's own requests before the result).
//!
//! Requests on 2026-07-28 stand alone (no session), so a call needs nothing of the rmcp
//! connection but its URL, its headers and the revision's per-request metadata. On the
//! handshake era a call goes on the session rmcp's client opened (its id watched as rmcp sends
//! it, [`super::session`]), with an id of its own kind so that it never meets one of rmcp's;
//! what the server asks during the call comes on the call's stream and is answered by a POST on
//! the session. Discovery, probes, the session's own stream and `subscriptions/listen` stay on
//! the connection. rmcp's client would hand each call
//! through its service loop and its transport's worker (tasks and channels that cost more than
//! the call), and its HTTP client keeps no connection alive between requests: a new TCP
//! connection per call. The exchange is Toolgate's own, as the gateway's inbound side is: the
//! request written from rmcp's model types into one buffer, and the answer read as far as needed
//! (the JSON-RPC envelope borrowed from the body, the result parsed once into its type). rmcp's
//! own POST (`StreamableHttpClient`) parsed every answer into its message enum, variant by
//! variant over a buffered copy, and parsed the URL again for every call. The headers revision
//! 2026-07-28 asks of a request ([`super::headers`]) are written here too.
//!
//! On 2026-07-28 the server's tools are listed this way as well: rmcp's client keeps the input
//! schema of every tool it reads in a listing, for as long as the connection lives, to mirror
//! arguments in headers (13.5 MB for 5,000 tools), which Toolgate does itself.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorData, InputRequiredResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, RequestId, RequestMetaObject,
    ServerResult,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpError,
};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use sse_stream::SseStream;

use super::connect::{MAX_ANSWER, headers};
use super::handler::{CallClient, client_config};
use super::headers::{mirrored, param_headers, value_of};
use super::oauth::Token;
use super::session::SessionWatch;
use super::slot::CancelOnDrop;
use super::sse::bounded;
use crate::schema::JsonText;
use crate::store::servers::{Endpoint, Transport};
use crate::tool::{Progress, ToolContext, send_progress};

/// How long the rest of an answer stream is read after the result, so its connection can be
/// used again; a server still sending after that loses the connection instead.
const DRAIN: Duration = Duration::from_millis(100);

/// Calls through one connection's HTTP endpoint.
pub(super) struct DirectCalls {
    http: reqwest::Client,
    url: reqwest::Url,
    /// The endpoint's own headers, the revision's and the exchange's.
    headers: HeaderMap,
    /// What every request on 2026-07-28 carries in `_meta`: the revision, the client's
    /// information and capabilities.
    meta: RequestMetaObject,
    /// Ids of this connection's requests.
    ids: AtomicI64,
    /// An OAuth server's token, added to each call (and refreshed).
    token: Option<Arc<Token>>,
    /// On the handshake era: the session calls go on, and the connection that cancels them.
    session: Option<(SessionWatch, Peer<RoleClient>)>,
}

/// Why a call was not answered.
enum Unanswered {
    /// The server no longer knows the session (HTTP 404): rmcp's client is to send the call.
    SessionGone,
    Failed(ServiceError),
}

impl From<ServiceError> for Unanswered {
    fn from(err: ServiceError) -> Self {
        Unanswered::Failed(err)
    }
}

/// A JSON-RPC request as sent: the envelope around its params.
#[derive(Serialize)]
struct Request<'a, P> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'static str,
    params: P,
}

/// A page of `tools/list` asked on 2026-07-28: its cursor, and the connection's `_meta`.
#[derive(Serialize)]
struct ListParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
    #[serde(rename = "_meta")]
    meta: &'a RequestMetaObject,
}

/// What a call's answer stream brings besides the answer, and where it goes: progress under
/// `progress` and log messages to `ctx`, the server's requests to `caller`.
#[derive(Clone, Copy)]
struct Relay<'a> {
    ctx: &'a ToolContext,
    progress: Option<&'a ProgressToken>,
    caller: Option<&'a CallClient>,
}

/// A call's params as rmcp writes them (their own `_meta` set aside), with the `_meta` a direct
/// call sends.
#[derive(Serialize)]
struct Params<'a> {
    #[serde(flatten)]
    call: &'a CallToolRequestParams,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

/// A direct call's `_meta`: the call's own entries (the caller's capabilities, log level and
/// trace), the connection's where the call has none (the revision, the client's information),
/// and the progress token; written from where they are, not merged into a copy.
struct Meta<'a> {
    call: Option<&'a RequestMetaObject>,
    connection: &'a RequestMetaObject,
    progress: Option<&'a ProgressToken>,
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        const PROGRESS: &str = "progressToken";
        let call = self.call.map(|meta| &meta.0.0);
        let in_call = |key: &str| call.is_some_and(|call| call.contains_key(key));
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in call.into_iter().flatten() {
            if key != PROGRESS || self.progress.is_none() {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.connection.iter().filter(|(key, _)| !in_call(key)) {
            map.serialize_entry(key, value)?;
        }
        if let Some(token) = self.progress {
            map.serialize_entry(PROGRESS, token)?;
        }
        map.end()
    }
}

impl DirectCalls {
    /// Direct calls for a connection over streamable HTTP; on the handshake era they go on
    /// the session `session` watches (none for a server that keeps no sessions: its calls stay
    /// with rmcp's client).
    pub(super) fn of(
        endpoint: &Endpoint,
        peer: &Peer<RoleClient>,
        http: &reqwest::Client,
        token: Option<Arc<Token>>,
        session: SessionWatch,
    ) -> Option<Self> {
        if endpoint.transport != Transport::StreamableHttp {
            return None;
        }
        let version = peer.peer_info()?.protocol_version.clone();
        let mut headers = headers(endpoint).ok()?;
        let revision = HeaderValue::from_str(version.as_str()).ok()?;
        headers.insert(HeaderName::from_static("mcp-protocol-version"), revision);
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream, application/json"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut meta = RequestMetaObject::default();
        let session = if version.has_initialize() {
            session.current()?;
            Some((session, peer.clone()))
        } else {
            let client = client_config();
            meta.set_protocol_version(version);
            meta.set_client_info(client.client_info);
            meta.set_client_capabilities(client.capabilities);
            None
        };
        let url = endpoint.url.as_deref()?.parse().ok()?;
        Some(DirectCalls { http: http.clone(), url, headers, meta, ids: AtomicI64::new(0), token, session })
    }

    /// The id of a new call: a string, never one of the numbers rmcp's client gives its own
    /// requests in the same session.
    pub(super) fn next_id(&self) -> RequestId {
        RequestId::String(format!("toolgate-{}", self.ids.fetch_add(1, Ordering::Relaxed)).into())
    }

    /// Whether calls go on a session (the handshake era), whose server may also send what
    /// concerns a call on the session's own stream.
    pub(super) fn in_session(&self) -> bool {
        self.session.is_some()
    }

    /// Sends the `tools/call` `id` of a tool whose input schema is `schema`; progress and log
    /// messages the server sends before its answer go to `ctx`, and what it asks meanwhile to
    /// `caller`. `params` is written as it is, its `_meta` completed with the connection's (set
    /// aside while the request is written, so nothing of the call is copied). `None` when the
    /// call is not taken, for want of a session (none yet, or the server forgot it): rmcp's
    /// client is to send it.
    pub(super) async fn call(
        &self,
        params: &mut CallToolRequestParams,
        schema: &JsonText,
        ctx: &ToolContext,
        id: &RequestId,
        caller: Option<&CallClient>,
    ) -> Option<Result<ServerResult, ServiceError>> {
        let session = match &self.session {
            Some((watch, _)) => Some(watch.current()?),
            None => None,
        };
        // Abandoned (timed out, or its caller gone), a call in a session is cancelled; a call on
        // 2026-07-28 ends with its request's connection.
        let cancel = self
            .session
            .as_ref()
            .map(|(_, peer)| CancelOnDrop { peer: Some(peer.clone()), request: id.clone() });
        let answered = self.send(params, schema, ctx, id, session.as_deref(), caller).await;
        if let Some(cancel) = cancel {
            cancel.disarm();
        }
        match answered {
            Ok(answer) => Some(Ok(answer)),
            Err(Unanswered::Failed(err)) => Some(Err(err)),
            Err(Unanswered::SessionGone) => {
                if let (Some((watch, _)), Some(gone)) = (&self.session, &session) {
                    watch.forget(gone);
                }
                None
            }
        }
    }

    /// Sends the call `id` (in `session`, if any) and reads its answer.
    async fn send(
        &self,
        params: &mut CallToolRequestParams,
        schema: &JsonText,
        ctx: &ToolContext,
        id: &RequestId,
        session: Option<&str>,
        caller: Option<&CallClient>,
    ) -> Result<ServerResult, Unanswered> {
        let progress = ctx.progress_sink().map(|_| ProgressToken(id.clone()));
        let name = value_of(&params.name).ok_or_else(|| failed("the tool's name cannot be sent"))?;
        let mut headers = method_headers("tools/call");
        headers.insert(HeaderName::from_static("mcp-name"), name);
        if session.is_none() {
            headers.extend(param_headers(schema, params.arguments.as_ref()));
        }
        let own = params.meta.take();
        let meta = Meta { call: own.as_ref(), connection: &self.meta, progress: progress.as_ref() };
        let request =
            Request { jsonrpc: "2.0", id, method: "tools/call", params: Params { call: params, meta } };
        let body = serde_json::to_vec(&request).map(Bytes::from);
        params.meta = own;
        let body = body.map_err(|e| failed(e.to_string()))?;
        let relay = Relay { ctx, progress: progress.as_ref(), caller };
        self.exchange(body, headers, id, session, Some(relay), result_of).await
    }

    /// A page of the server's tools, asked on 2026-07-28 (no session); a tool whose
    /// `x-mcp-header` annotations break the rules is left out, as its calls could not be sent.
    pub(super) async fn list_tools(
        &self,
        page: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, ServiceError> {
        let id = self.next_id();
        let cursor = page.as_ref().and_then(|page| page.cursor.as_deref());
        let request = Request {
            jsonrpc: "2.0",
            id: &id,
            method: "tools/list",
            params: ListParams { cursor, meta: &self.meta },
        };
        let body = serde_json::to_vec(&request).map(Bytes::from).map_err(|e| failed(e.to_string()))?;
        let answered = self.exchange(body, method_headers("tools/list"), &id, None, None, tools_of).await;
        answered.map_err(|unanswered| match unanswered {
            Unanswered::Failed(err) => err,
            Unanswered::SessionGone => ServiceError::TransportClosed,
        })
    }

    /// POSTs the request `id` (in `session`, if any) with its own `headers`, and reads its
    /// answer with `read`, relaying what comes before it on an answer stream.
    async fn exchange<T>(
        &self,
        body: Bytes,
        headers: HeaderMap,
        id: &RequestId,
        session: Option<&str>,
        relay: Option<Relay<'_>>,
        read: fn(&RawValue) -> Result<T, ServiceError>,
    ) -> Result<T, Unanswered> {
        let response = self.post(body, headers, session).await?;
        let status = response.status();
        let kind = response.headers().get(CONTENT_TYPE).map(|v| v.as_bytes().to_vec()).unwrap_or_default();
        if status == StatusCode::NOT_FOUND && session.is_some() {
            return Err(Unanswered::SessionGone);
        }
        if !status.is_success() {
            return Err(refusal(response).await.into());
        }
        if media_type_is(&kind, b"text/event-stream") {
            let mut stream = SseStream::from_bytes_stream(bounded(response.bytes_stream(), MAX_ANSWER));
            let answer = self.read_stream(&mut stream, id, relay, session, read).await;
            // The rest of the stream, so its connection goes back to the pool.
            let _ = tokio::time::timeout(DRAIN, stream.for_each(|_| async {})).await;
            return Ok(answer?);
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(failed("the server accepted the call but sent no answer").into());
        }
        if !media_type_is(&kind, b"application/json") {
            let kind = String::from_utf8_lossy(&kind);
            return Err(failed(format!(
                "the server answered with `{kind}`, neither JSON nor an event stream"
            ))
            .into());
        }
        let body = read_body(response).await?;
        let message: Message = serde_json::from_slice(&body).map_err(|e| failed(e.to_string()))?;
        Ok(answer_of(message, read)?)
    }

    /// Reads an answer stream up to the answer to request `id` (read with `read`), relaying
    /// what comes before it through `relay` and answering what the server asks meanwhile (in
    /// `session`, if any).
    async fn read_stream<T>(
        &self,
        stream: &mut (impl futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin),
        id: &RequestId,
        relay: Option<Relay<'_>>,
        session: Option<&str>,
        read: fn(&RawValue) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        while let Some(event) = stream.next().await {
            let event = event.map_err(|_| ServiceError::TransportClosed)?;
            // A priming event carries no message.
            let Some(data) = event.data.filter(|data| !data.is_empty()) else { continue };
            let message: Message = serde_json::from_str(&data).map_err(|e| failed(e.to_string()))?;
            match (&message.id, message.method.as_deref()) {
                (Some(answered), None) if answered == id => return answer_of(message, read),
                (None, Some("notifications/progress")) => {
                    let Some(Relay { ctx, progress: Some(token), .. }) = relay else { continue };
                    let report = message
                        .params
                        .and_then(|p| serde_json::from_str::<ProgressNotificationParam>(p.get()).ok());
                    if let (Some(report), Some(sink)) = (report, ctx.progress_sink().as_ref())
                        && report.progress_token == *token
                    {
                        let progress = Progress {
                            progress: report.progress,
                            total: report.total,
                            message: report.message,
                        };
                        send_progress(sink, progress);
                    }
                }
                (None, Some(method @ "notifications/message")) => {
                    let Some(Relay { ctx, .. }) = relay else { continue };
                    if let (Some(client), Some(params)) = (ctx.client(), message.params) {
                        let params: Value = serde_json::from_str(params.get()).unwrap_or_default();
                        client.notify(serde_json::json!({"method": method, "params": params}));
                    }
                }
                (Some(asked), Some(method)) => {
                    let params = message.params.and_then(|p| serde_json::from_str(p.get()).ok());
                    let answer = ask(relay.and_then(|r| r.caller), method, params.unwrap_or_default()).await;
                    self.respond(asked, answer, session).await;
                }
                (_, method) => tracing::debug!(?method, "upstream message not for this call's caller"),
            }
        }
        Err(ServiceError::TransportClosed)
    }

    /// POSTs the answer to a request the server sent during a call. A server that does not
    /// take it is left to give up on its request; the call goes on.
    async fn respond(&self, asked: &RequestId, answer: Result<Value, ErrorData>, session: Option<&str>) {
        let response = match answer {
            Ok(result) => serde_json::json!({"jsonrpc": "2.0", "id": asked, "result": result}),
            Err(error) => serde_json::json!({"jsonrpc": "2.0", "id": asked, "error": error}),
        };
        let body = serde_json::to_vec(&response).map(Bytes::from).unwrap_or_default();
        match self.post(body, HeaderMap::new(), session).await {
            Ok(taken) if taken.status().is_success() => {}
            Ok(refused) => {
                tracing::debug!(status = %refused.status(), "the server refused an answer to its request")
            }
            Err(err) => tracing::debug!(error = %err, "the answer to a server's request was not sent"),
        }
    }

    /// POSTs `body` with its own `headers`, in `session` if any, with the connection's token
    /// when it has one: refreshed once, and sent again, when the server refuses it with a
    /// challenge.
    async fn post(
        &self,
        body: Bytes,
        headers: HeaderMap,
        session: Option<&str>,
    ) -> Result<reqwest::Response, ServiceError> {
        let session = session.map(HeaderValue::from_str).transpose().map_err(|e| failed(e.to_string()))?;
        let send = |bearer: Option<&str>| {
            let mut request = self
                .http
                .post(self.url.clone())
                .headers(self.headers.clone())
                .headers(headers.clone())
                .body(body.clone());
            if let Some(session) = &session {
                request = request.header(HeaderName::from_static("mcp-session-id"), session.clone());
            }
            if let Some(bearer) = bearer {
                request = request.bearer_auth(bearer);
            }
            async move { request.send().await.map_err(broken) }
        };
        let Some(token) = &self.token else { return send(None).await };
        let sent = token.bearer().await.map_err(|e| failed(e.to_string()))?;
        let response = send(sent.as_deref()).await?;
        let challenged = response.headers().contains_key(WWW_AUTHENTICATE);
        let Some(sent) = sent.filter(|_| response.status() == StatusCode::UNAUTHORIZED && challenged) else {
            return Ok(response);
        };
        match token.refreshed(&sent).await.map_err(|e| failed(e.to_string()))? {
            Some(fresh) => send(Some(&fresh)).await,
            None => Ok(response),
        }
    }
}

/// Whether a `Content-Type` value names `expected` (any parameters after it).
fn media_type_is(value: &[u8], expected: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    essence.trim_ascii().eq_ignore_ascii_case(expected)
}

/// The headers naming a request's method.
fn method_headers(method: &'static str) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(4);
    headers.insert(HeaderName::from_static("mcp-method"), HeaderValue::from_static(method));
    headers
}

/// A JSON-RPC message of an answer, read as far as needed to tell what it is.
#[derive(Deserialize)]
struct Message<'a> {
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorData>,
}

/// The answer a message carries: its result (read with `read`), or its error.
fn answer_of<T>(message: Message, read: fn(&RawValue) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    match (message.result, message.error) {
        (Some(result), _) => read(result),
        (None, Some(error)) => Err(ServiceError::McpError(error)),
        (None, None) => Err(failed("an answer without a result or an error")),
    }
}

/// What the caller answers a request its server sent during a call: relayed as on rmcp's
/// connection ([`CallClient`]); a ping answered here.
async fn ask(caller: Option<&CallClient>, method: &str, params: Value) -> Result<Value, ErrorData> {
    if method == "ping" {
        return Ok(serde_json::json!({}));
    }
    let Some(caller) = caller else {
        return Err(ErrorData::invalid_request(
            format!("{method}: the call's caller is no MCP client and cannot answer it"),
            None,
        ));
    };
    caller.answer(method, params).await
}

/// A `tools/call` result: a call's result, or on 2026-07-28 the questions it asks first.
fn result_of(result: &RawValue) -> Result<ServerResult, ServiceError> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<Cow<'a, str>>,
    }
    let kind: Kind = serde_json::from_str(result.get()).map_err(|e| failed(e.to_string()))?;
    let read = match kind.result_type.as_deref() {
        Some("input_required") => {
            serde_json::from_str::<InputRequiredResult>(result.get()).map(ServerResult::InputRequiredResult)
        }
        _ => serde_json::from_str::<CallToolResult>(result.get()).map(ServerResult::CallToolResult),
    };
    read.map_err(|e| failed(format!("the answer is not a tools/call result: {e}")))
}

/// A `tools/list` result, without the tools whose calls could not be sent (their `x-mcp-header`
/// annotations break the rules; rmcp's client leaves them out likewise).
fn tools_of(result: &RawValue) -> Result<ListToolsResult, ServiceError> {
    let mut page: ListToolsResult = serde_json::from_str(result.get())
        .map_err(|e| failed(format!("the answer is not a tools/list result: {e}")))?;
    page.tools.retain(|tool| match mirrored(&tool.input_schema) {
        Ok(_) => true,
        Err(reason) => {
            let tool = &tool.name;
            tracing::warn!(%tool, %reason, "an upstream tool's header annotations are invalid; left out");
            false
        }
    });
    Ok(page)
}

/// A JSON body, read up to the answer limit.
async fn read_body(mut response: reqwest::Response) -> Result<Bytes, ServiceError> {
    if response.content_length().is_some_and(|length| length > MAX_ANSWER as u64) {
        return Err(too_large());
    }
    let mut body = BytesMut::with_capacity(response.content_length().unwrap_or(0) as usize);
    while let Some(chunk) = response.chunk().await.map_err(broken)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// What a server's failure status answers the call: its challenge (401, or 403 for want of
/// scope) as rmcp's client reports one, so the connection marks the authorization; the JSON-RPC
/// error a JSON body carries; or the status.
async fn refusal(response: reqwest::Response) -> ServiceError {
    let status = response.status();
    let challenge =
        response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let refused: Option<StreamableHttpError<reqwest::Error>> = match (status, challenge) {
        (StatusCode::UNAUTHORIZED, Some(challenge)) => {
            Some(StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge)))
        }
        // The scope it wants is read from the challenge where the authorization is marked.
        (StatusCode::FORBIDDEN, Some(challenge)) => {
            Some(StreamableHttpError::InsufficientScope(InsufficientScopeError::new(challenge, None)))
        }
        _ => None,
    };
    if let Some(refused) = refused {
        let id = std::any::TypeId::of::<DirectCalls>();
        return ServiceError::TransportSend(DynamicTransportError::from_parts(
            "direct call",
            id,
            Box::new(refused),
        ));
    }
    // A 401 or 403 without a challenge keeps its status, as rmcp's client reports it.
    let is_json = !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        && response
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|v| media_type_is(v.as_bytes(), b"application/json"));
    if is_json {
        return match read_body(response).await {
            Ok(body) => match serde_json::from_slice(&body) {
                Ok(Message { error: Some(error), .. }) => ServiceError::McpError(error),
                _ => status_failure(status, &body),
            },
            Err(err) => err,
        };
    }
    status_failure(status, &body_prefix(response).await)
}

/// How much of a failure's body its message quotes: what a server says went wrong.
const QUOTED: usize = 1024;

/// A failure status, with the start of what the server said.
fn status_failure(status: StatusCode, body: &[u8]) -> ServiceError {
    let said = String::from_utf8_lossy(&body[..body.len().min(QUOTED)]);
    match said.trim() {
        "" => failed(format!("the server answered HTTP {status}")),
        said => failed(format!("the server answered HTTP {status}: {said}")),
    }
}

/// The start of a body (at least [`QUOTED`] bytes, if it has them), the rest left unread.
async fn body_prefix(mut response: reqwest::Response) -> Bytes {
    let mut prefix = BytesMut::new();
    while prefix.len() < QUOTED
        && let Ok(Some(chunk)) = response.chunk().await
    {
        prefix.extend_from_slice(&chunk);
    }
    prefix.freeze()
}

/// A failure to reach the server, or to read its answer: the connection's, not the call's.
fn broken(err: reqwest::Error) -> ServiceError {
    tracing::debug!(error = %err, "a direct call found the connection broken");
    ServiceError::TransportClosed
}

/// An answer over the limit is not read: its connection is dropped, as rmcp's client does.
fn too_large() -> ServiceError {
    tracing::debug!("a direct call's answer is over the limit");
    ServiceError::TransportClosed
}

fn failed(reason: impl Into<String>) -> ServiceError {
    ServiceError::McpError(ErrorData::internal_error(reason.into(), None))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_direct_calls_meta_is_its_own_then_the_connections_then_its_progress_token() {
        const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
        const REVISION: &str = "io.modelcontextprotocol/protocolVersion";
        let mut own = RequestMetaObject::default();
        own.0.insert(CAPABILITIES.into(), json!({"sampling": {}}));
        own.0.insert("progressToken".into(), json!("stale"));
        let mut connection = RequestMetaObject::default();
        connection.0.insert(CAPABILITIES.into(), json!({}));
        connection.0.insert(REVISION.into(), json!("2026-07-28"));
        let arguments = json!({"text": "hi"}).as_object().cloned().unwrap();
        let call = CallToolRequestParams::new("echo").with_arguments(arguments);
        let token = ProgressToken(RequestId::Number(7));
        let meta = Meta { call: Some(&own), connection: &connection, progress: Some(&token) };
        let written = serde_json::to_value(Params { call: &call, meta }).unwrap();
        let expected = json!({
            "name": "echo",
            "arguments": {"text": "hi"},
            "_meta": {CAPABILITIES: {"sampling": {}}, REVISION: "2026-07-28", "progressToken": 7},
        });
        assert_eq!(written, expected);
    }
}
