//! Requests through the connection other than `tools/call` ([`Slot::forward`]), and what calls
//! share with them: a request abandoned before its answer is cancelled upstream, one refused
//! for the connection's OAuth token marks the authorization, one that finds the transport
//! broken takes the connection down.

use std::time::Instant;

use rmcp::model::{CancelledNotificationParam, ClientRequest, RequestId, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};

use super::Slot;
use crate::tool::ToolError;
use crate::upstream::connect::{challenge_of, service_failure};
use crate::upstream::oauth;

impl Slot {
    /// Sends `request` to `server` through this connection and returns its answer; dropped
    /// before the answer, the request is cancelled upstream.
    pub(in crate::upstream) async fn forward(
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

    /// What a request the server refused for this connection's OAuth token answers the
    /// caller, once the authorization is marked as needing to be given again.
    pub(super) async fn refusal(&self, server: &str, err: &ServiceError) -> Option<ToolError> {
        let (Some((id, url)), ServiceError::TransportSend(error)) = (&self.authorization, err) else {
            return None;
        };
        let reason = oauth::refused(&self.pool, &self.secrets, url, *id, &challenge_of(error)?).await;
        Some(ToolError::tool(format!("MCP server `{server}`: {reason}")))
    }
}

/// Sends `notifications/cancelled` for a request abandoned before its answer.
pub(in crate::upstream) struct CancelOnDrop {
    pub(in crate::upstream) peer: Option<Peer<RoleClient>>,
    pub(in crate::upstream) request: RequestId,
}

impl CancelOnDrop {
    pub(in crate::upstream) fn disarm(mut self) {
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

/// The request never reached the server, or its answer never came back: the connection is gone.
pub(super) fn is_transport(err: &ServiceError) -> bool {
    matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}
