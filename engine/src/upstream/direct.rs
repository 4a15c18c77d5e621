//! `tools/call` to a streamable HTTP upstream on revision 2026-07-28, made straight over HTTP:
//! one POST from the caller's task on a kept-alive connection, its answer read there (one JSON
//! body, or an SSE stream of progress and log messages before the result).
//!
//! Requests on 2026-07-28 stand alone (no session), so a call needs nothing of the rmcp
//! connection but its URL, its headers and the revision's per-request metadata; discovery,
//! probes and `subscriptions/listen` stay on the connection. rmcp's client would hand each call
//! through its service loop and its transport's worker (tasks and channels that cost more than
//! the call), and its HTTP client keeps no connection alive between requests: a new TCP
//! connection per call. The request and its answer are rmcp's model types, and the exchange is
//! rmcp's own HTTP code (`StreamableHttpClient` for reqwest: headers, size limits, status and
//! auth errors, SSE decoding). What rmcp's client adds that this does not (an `Mcp-Param-*`
//! header for an annotated argument, an encoded `Mcp-Name`) leaves the call to rmcp.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientJsonRpcMessage, ClientRequest, ErrorData,
    InputRequiredResult, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::connect::{MAX_ANSWER, custom_headers};
use super::handler::client_config;
use super::oauth::Token;
use crate::catalog::CatalogTool;
use crate::store::servers::{Endpoint, Transport};
use crate::tool::{Progress, ToolContext, send_progress};

/// How long the rest of an answer stream is read after the result, so its connection can be
/// used again; a server still sending after that loses the connection instead.
const DRAIN: Duration = Duration::from_millis(100);

/// Calls through one connection's HTTP endpoint.
pub(super) struct DirectCalls {
    http: reqwest::Client,
    url: Arc<str>,
    /// The endpoint's own headers and the revision's.
    headers: HashMap<HeaderName, HeaderValue>,
    /// What every request on 2026-07-28 carries in `_meta`: the revision, the client's
    /// information and capabilities.
    meta: RequestMetaObject,
    /// The largest answer read, as on the rmcp connection.
    limits: StreamableHttpResponseLimits,
    /// Ids of this connection's requests.
    ids: AtomicI64,
    /// An OAuth server's token, added to each call (and refreshed) by rmcp's client.
    token: Option<Arc<Token>>,
}

impl DirectCalls {
    /// Direct calls for a connection that takes them: streamable HTTP, on 2026-07-28.
    pub(super) fn of(
        endpoint: &Endpoint,
        peer: &Peer<RoleClient>,
        http: &reqwest::Client,
        token: Option<Arc<Token>>,
    ) -> Option<Self> {
        let version = peer.peer_info()?.protocol_version.clone();
        if endpoint.transport != Transport::StreamableHttp || version != ProtocolVersion::V_2026_07_28 {
            return None;
        }
        let mut headers = custom_headers(endpoint).ok()?;
        let revision = HeaderValue::from_str(version.as_str()).ok()?;
        headers.insert(HeaderName::from_static("mcp-protocol-version"), revision);
        headers.insert(HeaderName::from_static("mcp-method"), HeaderValue::from_static("tools/call"));
        let client = client_config();
        let mut meta = RequestMetaObject::default();
        meta.set_protocol_version(version);
        meta.set_client_info(client.client_info);
        meta.set_client_capabilities(client.capabilities);
        let url = endpoint.url.as_deref()?.into();
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = MAX_ANSWER;
        limits.max_json_response_size = MAX_ANSWER;
        Some(DirectCalls { http: http.clone(), url, headers, meta, limits, ids: AtomicI64::new(0), token })
    }

    /// Whether a call of `tool` can go this way: its name travels as a bare header value and
    /// no argument is to be mirrored in a header (SEP-2243).
    pub(super) fn takes(&self, tool: &CatalogTool) -> bool {
        let name = tool.upstream_name.as_str();
        let bare = !name.is_empty()
            && name.bytes().all(|b| (0x20..=0x7e).contains(&b))
            && !name.starts_with([' ', '\t'])
            && !name.ends_with([' ', '\t'])
            && !name.starts_with("=?base64?");
        bare && !annotates_headers(&tool.raw_input_schema)
    }

    /// Sends one `tools/call`; progress and log messages the server sends before its answer go
    /// to `ctx`.
    pub(super) async fn call(
        &self,
        mut params: CallToolRequestParams,
        ctx: &ToolContext,
    ) -> Result<ServerResult, ServiceError> {
        let id = RequestId::Number(self.ids.fetch_add(1, Ordering::Relaxed));
        let meta = params.meta.get_or_insert_with(RequestMetaObject::default);
        // The call's own (the caller's capabilities) win over the connection's.
        for (key, value) in self.meta.iter() {
            meta.0.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let progress = ctx.progress_sink().map(|_| ProgressToken(id.clone()));
        if let Some(token) = &progress {
            meta.set_progress_token(token.clone());
        }
        let mut headers = self.headers.clone();
        let name = HeaderValue::try_from(params.name.as_ref()).map_err(|e| failed(e.to_string()))?;
        headers.insert(HeaderName::from_static("mcp-name"), name);
        let message = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            id.clone(),
        );
        let url = self.url.clone();
        let response = match &self.token {
            Some(token) => {
                token.renew().await.map_err(|e| failed(e.to_string()))?;
                token
                    .client
                    .post_message_with_response_limits(url, message, None, None, headers, self.limits)
                    .await
            }
            None => {
                self.http
                    .post_message_with_response_limits(url, message, None, None, headers, self.limits)
                    .await
            }
        }
        .map_err(http_error)?;
        match response {
            StreamableHttpPostResponse::Json(message, _) => answer_of(message),
            StreamableHttpPostResponse::Sse(mut stream, _) => {
                let answer = read_stream(&mut stream, &id, progress.as_ref(), ctx).await;
                // The rest of the stream, so its connection goes back to the pool.
                let _ = tokio::time::timeout(DRAIN, stream.for_each(|_| async {})).await;
                answer
            }
            _ => Err(failed("the server accepted the call but sent no answer")),
        }
    }
}

/// Whether a schema annotates any property with `x-mcp-header`.
fn annotates_headers(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.iter().any(|(key, value)| key == "x-mcp-header" || annotates_headers(value))
        }
        Value::Array(items) => items.iter().any(annotates_headers),
        _ => false,
    }
}

/// A message of an answer stream, read as far as needed to tell what it is.
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

/// Reads an answer stream up to the answer to request `id`, relaying progress under `progress`
/// and log messages to `ctx`.
async fn read_stream(
    stream: &mut (impl futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin),
    id: &RequestId,
    progress: Option<&ProgressToken>,
    ctx: &ToolContext,
) -> Result<ServerResult, ServiceError> {
    while let Some(event) = stream.next().await {
        let event = event.map_err(|_| ServiceError::TransportClosed)?;
        // A priming event carries no message.
        let Some(data) = event.data.filter(|data| !data.is_empty()) else { continue };
        let message: Message = serde_json::from_str(&data).map_err(|e| failed(e.to_string()))?;
        match (&message.id, message.method.as_deref()) {
            (Some(answered), None) if answered == id => {
                return match (message.result, message.error) {
                    (Some(result), _) => result_of(result),
                    (None, Some(error)) => Err(ServiceError::McpError(error)),
                    (None, None) => Err(failed("an answer without a result or an error")),
                };
            }
            (None, Some("notifications/progress")) => {
                let report = message
                    .params
                    .and_then(|p| serde_json::from_str::<ProgressNotificationParam>(p.get()).ok());
                if let (Some(report), Some(token), Some(sink)) =
                    (report, progress, ctx.progress_sink().as_ref())
                    && report.progress_token == *token
                {
                    let progress =
                        Progress { progress: report.progress, total: report.total, message: report.message };
                    send_progress(sink, progress);
                }
            }
            (None, Some(method @ "notifications/message")) => {
                if let (Some(client), Some(params)) = (ctx.client(), message.params) {
                    let params: Value = serde_json::from_str(params.get()).unwrap_or_default();
                    client.notify(serde_json::json!({"method": method, "params": params}));
                }
            }
            (_, method) => tracing::debug!(?method, "upstream message not for this call's caller"),
        }
    }
    Err(ServiceError::TransportClosed)
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

/// The answer a JSON body carried.
fn answer_of(message: ServerJsonRpcMessage) -> Result<ServerResult, ServiceError> {
    match message {
        ServerJsonRpcMessage::Response(response) => Ok(response.result),
        ServerJsonRpcMessage::Error(error) => Err(ServiceError::McpError(error.error)),
        _ => Err(failed("the answer is not a response")),
    }
}

/// A failure to reach the server is the connection's; any other is the call's.
fn http_error(err: StreamableHttpError<reqwest::Error>) -> ServiceError {
    match err {
        StreamableHttpError::Client(_) | StreamableHttpError::Io(_) | StreamableHttpError::Sse(_) => {
            tracing::debug!(error = %err, "a direct call found the connection broken");
            ServiceError::TransportClosed
        }
        StreamableHttpError::ResponseBodyTooLarge { .. } => ServiceError::TransportClosed,
        // As rmcp's client reports it: the connection then marks the authorization.
        refused @ (StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)) => {
            let id = std::any::TypeId::of::<DirectCalls>();
            ServiceError::TransportSend(DynamicTransportError::from_parts(
                "direct call",
                id,
                Box::new(refused),
            ))
        }
        other => failed(other.to_string()),
    }
}

fn failed(reason: impl Into<String>) -> ServiceError {
    ServiceError::McpError(ErrorData::internal_error(reason.into(), None))
}
