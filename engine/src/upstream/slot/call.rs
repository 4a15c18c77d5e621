//! A `tools/call` through the connection: the request (with the caller's log level,
//! capabilities and trace in its metadata), sent straight over HTTP or through rmcp; its
//! progress and what the server asks of the caller relayed while it runs; the rounds of input a
//! server on 2026-07-28 asks for; and what its failures answer the caller.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

// Logging is deprecated by SEP-2577, but servers still send it: relayed while they do.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, DEFAULT_MRTR_MAX_ROUNDS, ErrorCode, InputRequests,
    InputResponses, LoggingLevel, ProgressToken, RequestMetaObject, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Value, json};
use tracing::Instrument;

use super::Slot;
use super::requests::{CancelOnDrop, is_transport};
use crate::catalog::CatalogTool;
use crate::tool::{ToolContext, ToolError, ToolOutput};
use crate::upstream::connect::{MAX_ANSWER, is_stateless, service_failure};
use crate::upstream::handler::{CallClient, token_key};

/// How long a finished call's progress sink stays registered: rmcp may handle a progress
/// notification the server sent before its result only after the result.
const PROGRESS_DRAIN: Duration = Duration::from_millis(250);

impl Slot {
    pub(in crate::upstream) async fn call(
        &self,
        tool: &CatalogTool,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let server = &tool.source_name;
        *self.last_used.lock().expect("last used") = Instant::now();
        let (peer, connection) = self.peer(server).await?;
        let direct = self.state.borrow().direct.clone();
        let caller = ctx.client().map(|client| Arc::new(CallClient::new(client)));
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
                let taken = match &direct {
                    Some(direct) => {
                        let id = direct.next_id();
                        let _registered = direct.in_session().then(|| {
                            self.register(token_key(&ProgressToken(id.clone())), ctx, caller.as_ref())
                        });
                        direct.call(&mut params, &tool.raw_input_schema, ctx, &id, caller.as_deref()).await
                    }
                    None => None,
                };
                let sent = match taken {
                    Some(sent) => sent,
                    None => self.send_call(&peer, params.clone(), ctx, caller.as_ref()).await,
                };
                // A call that failed after its server asked what the caller did not declare
                // failed for want of it.
                let sent = match &caller {
                    Some(caller) => caller.outcome(sent),
                    None => sent,
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

    /// Sends one `tools/call` through rmcp's client, relaying its progress and what the server
    /// asks of `caller` while it runs.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        ctx: &ToolContext,
        caller: Option<&Arc<CallClient>>,
    ) -> Result<ServerResult, ServiceError> {
        // rmcp puts its own client's metadata in a request on 2026-07-28; the call's wins.
        let options = match params.meta.clone() {
            Some(meta) => PeerRequestOptions::no_options().with_meta(meta),
            None => PeerRequestOptions::no_options(),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp gives every request its own progress token; progress reports come back under it.
        let handle = peer.send_request_with_option(request, options).await?;
        let _registered = self.register(token_key(&handle.progress_token), ctx, caller);
        // If this future is dropped (the call timed out, or its caller cancelled it), tell the
        // server to stop.
        let guard = CancelOnDrop { peer: Some(peer.clone()), request: handle.id.clone() };
        let response = handle.await_response().await;
        guard.disarm();
        response
    }

    /// Registers a call's progress sink and MCP client under `key` (its progress token), for
    /// what its server sends on the connection's own stream, for as long as the call runs.
    fn register(&self, key: String, ctx: &ToolContext, caller: Option<&Arc<CallClient>>) -> Registration {
        let sink = ctx.progress_sink();
        let progress = sink.is_some();
        if let Some(sink) = sink {
            self.progress.lock().expect("progress map").insert(key.clone(), sink);
        }
        if let Some(caller) = caller {
            self.relays.lock().expect("relay map").insert(key.clone(), caller.clone());
        }
        Registration { slot: self.me.clone(), key, progress }
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
        if let Some(required) = crate::tool::undeclared(&declared, &question) {
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

/// Unregisters a call when it ends, however it ends: its MCP client at once, its progress
/// sink after a short drain.
struct Registration {
    slot: Weak<Slot>,
    key: String,
    progress: bool,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(slot) = self.slot.upgrade() else { return };
        slot.relays.lock().expect("relay map").remove(&self.key);
        if self.progress {
            let key = std::mem::take(&mut self.key);
            tokio::spawn(async move {
                tokio::time::sleep(PROGRESS_DRAIN).await;
                slot.progress.lock().expect("progress map").remove(&key);
            });
        }
    }
}
