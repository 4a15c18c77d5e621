//! Subscriptions to resources through the connection, counted: the server is asked once per
//! resource and told to stop when the last subscription to it ends; a new connection subscribes
//! again to what the last one was subscribed to.

use std::sync::Weak;

// `resources/subscribe` is of the handshake era (on 2026-07-28 the listen stream carries
// subscriptions).
#[allow(deprecated)]
use rmcp::model::{
    ClientRequest, SubscribeRequest, SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient};

use super::Slot;
use crate::tool::ToolError;
use crate::upstream::connect::is_stateless;

impl Slot {
    /// Subscribes to updates of `uri` at `server` through this connection (asking the server
    /// only for the first subscription to it), until the answer is dropped: with
    /// `resources/subscribe` in the handshake era, on the connection's listen stream on
    /// 2026-07-28 ([`Slot::subscribe_listening`]). Subscriptions of a connection are sent one at
    /// a time, so the server's state follows the counts.
    #[allow(deprecated)]
    pub(in crate::upstream) async fn subscribe(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<SlotSubscription, ToolError> {
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
    pub(in crate::upstream) fn subscription(&self, server: &str, uri: &str) -> SlotSubscription {
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
    pub(super) async fn resubscribe(&self, peer: Peer<RoleClient>) {
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
}

/// A subscription to a resource through a connection: dropped, the connection's server is
/// told to stop sending its updates once no other subscription holds it.
pub(in crate::upstream) struct SlotSubscription {
    slot: Weak<Slot>,
    server: String,
    uri: String,
}

impl SlotSubscription {
    /// The connection it came through, which its updates name.
    pub(in crate::upstream) fn connection(&self) -> u64 {
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
