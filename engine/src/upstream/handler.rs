//! What an upstream sends on its own, and where it goes.

use std::sync::{Arc, Mutex, Weak};

use rmcp::ClientHandler;
// Sampling and logging are deprecated by SEP-2577, but servers still send them: relayed while
// they do.
#[allow(deprecated)]
use rmcp::model::{
    CallToolResult, ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorCode, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ResourceUpdatedNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, ServiceError};
use serde::Serialize;
use serde_json::{Value, json};

use super::slot::Slot;
use crate::exec::ResourceUpdated;
use crate::tool::{ClientRelay, Progress, send_progress, undeclared};

/// Receives what an upstream sends on its own: tool list changes, progress, log messages, and
/// requests for the caller (sampling, elicitation), which go to the MCP client whose call is
/// running on this connection.
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) slot: Weak<Slot>,
    /// The number of the slot's connection this handler serves.
    pub(super) connection: u64,
}

impl Handler {
    /// The client of the one call in flight on this connection. With several calls in flight
    /// a request cannot be attributed to one of them (MCP does not say which call it belongs
    /// to), so it is refused rather than risk sending it to another caller.
    fn caller(&self) -> Option<Arc<CallClient>> {
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
        let internal = |err: serde_json::Error| rmcp::ErrorData::internal_error(err.to_string(), None);
        let answer = caller.answer(method, serde_json::to_value(params).map_err(internal)?).await?;
        serde_json::from_value(answer).map_err(internal)
    }

    /// The server says one of its lists (`what`) changed: its own connection discovers again.
    async fn rediscover(&self, what: &str, peer: &Peer<RoleClient>) {
        if let Some(slot) = self.slot.upgrade()
            && slot.discovers
        {
            tracing::info!(servers = %slot.label(), "upstream {what} list changed; rediscovering");
            slot.discover(peer, self.connection, &slot.member_names()).await;
        }
    }
}

/// The MCP client of a call in flight, and what its server asked of it that it did not declare
/// (such a call that fails is answered -32021, naming that capability).
pub(super) struct CallClient {
    client: Arc<dyn ClientRelay>,
    undeclared: Mutex<Option<Value>>,
}

impl CallClient {
    pub(super) fn new(client: Arc<dyn ClientRelay>) -> Self {
        CallClient { client, undeclared: Mutex::default() }
    }

    /// Relays a request the server sent during the call (`sampling/createMessage`,
    /// `elicitation/create`, `roots/list`) to the caller; resolves to the caller's result. What
    /// the caller did not declare it is not asked: the server is answered -32021, as a server on
    /// 2026-07-28 would answer it, and so is the call if it then fails ([`Self::outcome`]).
    pub(super) async fn answer(&self, method: &str, params: Value) -> Result<Value, rmcp::ErrorData> {
        if !RELAYED.contains(&method) {
            let refusal = format!("Toolgate relays no {method} to its callers");
            return Err(rmcp::ErrorData::new(ErrorCode::METHOD_NOT_FOUND, refusal, None));
        }
        let request = json!({"method": method, "params": params});
        if let Some(required) = undeclared(&self.client.capabilities(), &request) {
            *self.undeclared.lock().expect("undeclared") = Some(required.clone());
            return Err(rmcp::ErrorData::missing_required_client_capability(
                serde_json::from_value(required).unwrap_or_default(),
            ));
        }
        self.client.request(request).await.map_err(|err| {
            rmcp::ErrorData::internal_error(format!("the caller could not answer {method}: {err}"), None)
        })
    }

    /// Relays a notification the server sent during the call to the caller.
    pub(super) fn notify(&self, notification: Value) {
        self.client.notify(notification);
    }

    /// The call's answer, unless the call failed after its server asked what the caller did
    /// not declare: then it failed for want of that, and says so (-32021).
    pub(super) fn outcome(
        &self,
        response: Result<ServerResult, ServiceError>,
    ) -> Result<ServerResult, ServiceError> {
        let failed = matches!(
            &response,
            Err(_) | Ok(ServerResult::CallToolResult(CallToolResult { is_error: Some(true), .. }))
        );
        match self.undeclared.lock().expect("undeclared").take() {
            Some(required) if failed => {
                Err(ServiceError::McpError(rmcp::ErrorData::missing_required_client_capability(
                    serde_json::from_value(required).unwrap_or_default(),
                )))
            }
            _ => response,
        }
    }
}

/// What a server may ask of the caller of a call in flight: what MCP clients answer.
const RELAYED: [&str; 3] = ["sampling/createMessage", "elicitation/create", "roots/list"];

/// Who Toolgate is to upstreams, and what it can answer them: sampling and elicitation, relayed
/// to its callers, and apps, passed on to them.
pub(super) fn client_config() -> ClientConfig {
    #[allow(deprecated)]
    let capabilities = ClientCapabilities::builder()
        .enable_extensions_with(crate::catalog::apps::capability())
        .enable_sampling()
        .enable_elicitation()
        .build();
    ClientConfig::new(capabilities, crate::implementation())
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        client_config()
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
        self.rediscover("tool", &context.peer).await;
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.rediscover("prompt", &context.peer).await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.rediscover("resource", &context.peer).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        if let Some(slot) = self.slot.upgrade() {
            // Nobody listening is no failure.
            let _ = slot.updates.send(ResourceUpdated { connection: slot.id, uri: params.uri });
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

pub(super) fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}
