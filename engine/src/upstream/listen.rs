//! What a server on revision 2026-07-28 tells its clients, which it does only on a
//! `subscriptions/listen` stream: that its tools, prompts or resources changed, and that a
//! resource a client named changed. A connection holds one such stream for as long as it
//! lasts; its filter is fixed when it opens, so a new subscription to a resource (or the last
//! one ending) opens it again, and a new connection opens one for what is subscribed already.

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};

use super::slot::{Slot, SlotSubscription};
use crate::exec::ResourceUpdated;
use crate::tool::ToolError;

/// Which lists a connection hears about changes to.
struct Lists {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Slot {
    /// Follows the server of the connection numbered `connection` through its
    /// `subscriptions/listen` stream until the connection goes: rediscovers (when this
    /// connection discovers) whenever a list changed — and once when the stream first opens:
    /// the revision replays nothing, so a change between the first discovery and the
    /// acknowledgment would otherwise be missed — and passes on the updates of the resources
    /// subscribed to through this connection.
    pub(super) async fn follow(&self, peer: &Peer<RoleClient>, connection: u64) {
        let Some(capabilities) = peer.peer_info().map(|info| info.capabilities.clone()) else { return };
        let changed = |offered: Option<bool>| self.discovers && offered == Some(true);
        let lists = Lists {
            tools: changed(capabilities.tools.as_ref().and_then(|tools| tools.list_changed)),
            prompts: changed(capabilities.prompts.as_ref().and_then(|prompts| prompts.list_changed)),
            resources: changed(capabilities.resources.as_ref().and_then(|resources| resources.list_changed)),
        };
        let mut rediscover = lists.tools || lists.prompts || lists.resources;
        let mut gone = self.state.subscribe();
        let gone = gone.wait_for(|state| state.peer.is_none() || state.connection != connection);
        tokio::pin!(gone);
        loop {
            let filter = self.filter(&lists).await;
            let opened = match filter == SubscriptionFilter::default() {
                true => None,
                false => tokio::select! {
                    opened = peer.listen(filter) => Some(opened),
                    _ = &mut gone => return,
                },
            };
            let mut subscription = match opened {
                None => {
                    self.listening.send_replace(Vec::new());
                    tokio::select! {
                        () = self.listen_again.notified() => continue,
                        _ = &mut gone => return,
                    }
                }
                Some(Err(err)) => {
                    tracing::warn!(servers = %self.label(), error = %err, "upstream refused subscriptions/listen");
                    self.listening.send_replace(Vec::new());
                    tokio::select! {
                        () = self.listen_again.notified() => continue,
                        _ = &mut gone => return,
                    }
                }
                Some(Ok(subscription)) => subscription,
            };
            let acknowledged = subscription.acknowledged().resource_subscriptions.clone();
            self.listening.send_replace(acknowledged.unwrap_or_default());
            if std::mem::take(&mut rediscover) {
                self.discover(peer, connection, &self.member_names()).await;
            }
            loop {
                let notification = tokio::select! {
                    next = subscription.next() => match next {
                        Ok(Some(notification)) => notification,
                        // The stream ended, with the connection or by the server's choice.
                        _ => return,
                    },
                    // Dropped, the stream is cancelled at the server.
                    () = self.listen_again.notified() => break,
                };
                match notification {
                    ServerNotification::ResourceUpdatedNotification(updated) => {
                        // Nobody listening is no failure.
                        let _ = self
                            .updates
                            .send(ResourceUpdated { connection: self.id, uri: updated.params.uri });
                    }
                    ServerNotification::ToolListChangedNotification(_)
                    | ServerNotification::PromptListChangedNotification(_)
                    | ServerNotification::ResourceListChangedNotification(_) => {
                        tracing::info!(servers = %self.label(), "upstream list changed; rediscovering");
                        self.discover(peer, connection, &self.member_names()).await;
                    }
                    _ => {}
                }
            }
        }
    }

    /// What to listen for now: `lists`' changes, and updates of the resources subscribed to.
    async fn filter(&self, lists: &Lists) -> SubscriptionFilter {
        let mut filter = SubscriptionFilter::builder();
        if lists.tools {
            filter = filter.tools_list_changed();
        }
        if lists.prompts {
            filter = filter.prompts_list_changed();
        }
        if lists.resources {
            filter = filter.resources_list_changed();
        }
        let mut uris: Vec<String> = self.subscribed.lock().await.keys().cloned().collect();
        if !uris.is_empty() {
            uris.sort();
            filter = filter.resource_subscriptions(uris);
        }
        filter.build()
    }

    /// Subscribes to updates of `uri` at `server`, on revision 2026-07-28: once the
    /// connection's stream has opened again with it and the server acknowledged it.
    pub(super) async fn subscribe_listening(
        &self,
        peer: &Peer<RoleClient>,
        server: &str,
        uri: &str,
    ) -> Result<SlotSubscription, ToolError> {
        let resources = peer.peer_info().and_then(|info| info.capabilities.resources.clone());
        if resources.and_then(|resources| resources.subscribe) != Some(true) {
            return Err(ToolError::tool(format!(
                "MCP server `{server}` does not offer resource subscriptions"
            )));
        }
        let held = self.hold(server, uri).await;
        let mut listening = self.listening.subscribe();
        let taken = listening.wait_for(|uris| uris.iter().any(|listened| listened == uri));
        match tokio::time::timeout(self.config.connect_timeout, taken).await {
            Ok(Ok(_)) => Ok(held),
            // Dropping `held` lets go of the subscription again.
            _ => Err(ToolError::tool(format!(
                "MCP server `{server}` did not take the subscription to `{uri}` in time"
            ))),
        }
    }
}
