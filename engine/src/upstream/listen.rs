//! What a server on revision 2026-07-28 tells its clients, which it does only on a
//! `subscriptions/listen` stream: that its tools, prompts or resources changed, and that a
//! resource a client named changed. A connection holds one such stream for as long as it
//! lasts; its filter is fixed when it opens, so a new subscription to a resource (or the last
//! one ending) opens a new stream — read until the new one is acknowledged, so nothing is
//! lost between them — and a stream that ends is opened again.

use std::time::{Duration, Instant};

use futures::FutureExt;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient, Subscription};
use tokio::sync::Notify;

use super::slot::{Slot, SlotSubscription};
use crate::exec::ResourceUpdated;
use crate::tool::ToolError;

/// The most resources one connection's stream names (each is sent again whenever the set
/// changes).
const MOST_RESOURCES: usize = 1024;

/// How long a change of the resources waits for more before the stream opens again, so that
/// many sessions subscribing at once open it once.
const GATHER: Duration = Duration::from_millis(50);

/// The first pause before a stream that ended, or was refused, is opened again; it doubles
/// with each failure in a row, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_PAUSE: Duration = Duration::from_secs(60);

/// A stream that lasted this long ended for a reason of its own: the pause starts over.
const LASTED: Duration = Duration::from_secs(10);

/// Which lists a connection hears about changes to.
struct Lists {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Lists {
    fn any(&self) -> bool {
        self.tools || self.prompts || self.resources
    }
}

/// The next notification of `current`; `None` once it ended; never while there is none.
async fn next_of(current: &mut Option<Subscription>) -> Option<ServerNotification> {
    match current {
        Some(subscription) => subscription.next().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

impl Slot {
    /// Follows the server of the connection numbered `connection` through its
    /// `subscriptions/listen` stream until the connection goes: rediscovers (when this
    /// connection discovers) whenever a list changed — and when a stream opens after one that
    /// ended or failed: the revision replays nothing, so what changed meanwhile would otherwise
    /// be missed — and passes on the updates of the resources subscribed to through this
    /// connection. Rediscoveries run beside the reading, so a slow one never stalls the stream.
    pub(super) async fn follow(&self, peer: &Peer<RoleClient>, connection: u64) {
        let Some(capabilities) = peer.peer_info().map(|info| info.capabilities.clone()) else { return };
        let changed = |offered: Option<bool>| self.discovers && offered == Some(true);
        let lists = Lists {
            tools: changed(capabilities.tools.as_ref().and_then(|tools| tools.list_changed)),
            prompts: changed(capabilities.prompts.as_ref().and_then(|prompts| prompts.list_changed)),
            resources: changed(capabilities.resources.as_ref().and_then(|resources| resources.list_changed)),
        };
        let rediscovery = Notify::new();
        let discovering = async {
            loop {
                rediscovery.notified().await;
                self.discover(peer, connection, &self.member_names()).await;
            }
        };
        let mut state = self.state.subscribe();
        let gone = async move {
            let _ = state.wait_for(|state| state.peer.is_none() || state.connection != connection).await;
        };
        tokio::select! {
            biased;
            () = gone => {}
            () = self.read(peer, connection, &lists, &rediscovery) => {}
            () = discovering => {}
        }
        self.publish(connection, Vec::new());
    }

    /// Keeps the connection's stream open for what is wanted, and takes what it carries.
    async fn read(&self, peer: &Peer<RoleClient>, connection: u64, lists: &Lists, rediscovery: &Notify) {
        let mut current: Option<Subscription> = None;
        // The revision replays nothing: a change between the connection's first discovery and
        // the first acknowledgment would be missed without one more.
        let mut rediscover = lists.any();
        let mut pause = FIRST_PAUSE;
        let mut opened_at = Instant::now();
        loop {
            // Open the stream for what is wanted now, reading the current one meanwhile.
            let filter = self.filter(lists).await;
            let mut retry = false;
            if filter == SubscriptionFilter::default() {
                current = None;
                self.publish(connection, Vec::new());
            } else {
                let open = tokio::time::timeout(self.config.connect_timeout, peer.listen(filter));
                tokio::pin!(open);
                let opened = loop {
                    tokio::select! {
                        opened = &mut open => break opened,
                        next = next_of(&mut current) => match next {
                            Some(notification) => self.take(notification, rediscovery),
                            None => {
                                current = None;
                                rediscover = lists.any();
                            }
                        },
                    }
                };
                match opened {
                    Ok(Ok(subscription)) => {
                        // What the stream being replaced still holds.
                        while let Some(Ok(Some(notification))) =
                            current.as_mut().and_then(|current| current.next().now_or_never())
                        {
                            self.take(notification, rediscovery);
                        }
                        let acknowledged = subscription.acknowledged().resource_subscriptions.clone();
                        self.publish(connection, acknowledged.unwrap_or_default());
                        current = Some(subscription);
                        opened_at = Instant::now();
                        if std::mem::take(&mut rediscover) {
                            rediscovery.notify_one();
                        }
                    }
                    // The current stream, if any, keeps serving what it names.
                    failed => {
                        match failed {
                            Ok(Err(err)) => {
                                tracing::warn!(servers = %self.label(), error = %err, "upstream refused subscriptions/listen")
                            }
                            _ => {
                                tracing::warn!(servers = %self.label(), "upstream did not acknowledge subscriptions/listen")
                            }
                        }
                        retry = true;
                    }
                }
            }
            // Read it until the resources change, it ends, or a retry is due.
            loop {
                tokio::select! {
                    next = next_of(&mut current) => match next {
                        Some(notification) => self.take(notification, rediscovery),
                        None => {
                            current = None;
                            rediscover = lists.any();
                            self.publish(connection, Vec::new());
                            retry = true;
                            if opened_at.elapsed() >= LASTED {
                                pause = FIRST_PAUSE;
                            }
                        }
                    },
                    () = self.listen_again.notified() => {
                        tokio::time::sleep(GATHER).await;
                        // A change gathered meanwhile is in the next filter already.
                        let _ = self.listen_again.notified().now_or_never();
                        break;
                    }
                    () = tokio::time::sleep(pause), if retry => {
                        pause = (pause * 2).min(LONGEST_PAUSE);
                        break;
                    }
                }
            }
        }
    }

    /// Passes on what the stream carried: a resource's update to the sessions subscribed
    /// through this connection; a list's change as a rediscovery.
    fn take(&self, notification: ServerNotification, rediscovery: &Notify) {
        match notification {
            ServerNotification::ResourceUpdatedNotification(updated) => {
                // Nobody listening is no failure.
                let _ = self.updates.send(ResourceUpdated { connection: self.id, uri: updated.params.uri });
            }
            ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_)
            | ServerNotification::ResourceListChangedNotification(_) => {
                tracing::info!(servers = %self.label(), "upstream list changed; rediscovering");
                rediscovery.notify_one();
            }
            _ => {}
        }
    }

    /// Says which resources the stream of the connection numbered `connection` carries; a
    /// connection that has been replaced says nothing any more.
    fn publish(&self, connection: u64, uris: Vec<String>) {
        self.listening.send_if_modified(|(on, listened)| {
            if *on > connection {
                return false;
            }
            *on = connection;
            *listened = uris;
            true
        });
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

    /// One more subscription to `uri` at `server` through this connection, on 2026-07-28: the
    /// first one to a resource opens the stream again with it.
    async fn hold(&self, server: &str, uri: &str) -> Result<SlotSubscription, ToolError> {
        let mut subscribed = self.subscribed.lock().await;
        if !subscribed.contains_key(uri) && subscribed.len() >= MOST_RESOURCES {
            return Err(ToolError::tool(format!(
                "MCP server `{server}` is sent updates of {MOST_RESOURCES} resources already through this connection"
            )));
        }
        let count = subscribed.entry(uri.to_string()).or_default();
        *count += 1;
        if *count == 1 {
            self.listen_again.notify_one();
        }
        Ok(self.subscription(server, uri))
    }

    /// Subscribes to updates of `uri` at `server` through the connection numbered
    /// `connection`, on 2026-07-28: once its stream has opened again with it and the server
    /// acknowledged it.
    pub(super) async fn subscribe_listening(
        &self,
        (peer, connection): (&Peer<RoleClient>, u64),
        server: &str,
        uri: &str,
    ) -> Result<SlotSubscription, ToolError> {
        let resources = peer.peer_info().and_then(|info| info.capabilities.resources.clone());
        if resources.and_then(|resources| resources.subscribe) != Some(true) {
            return Err(ToolError::tool(format!(
                "MCP server `{server}` does not offer resource subscriptions"
            )));
        }
        let held = self.hold(server, uri).await?;
        let mut listening = self.listening.subscribe();
        let taken =
            listening.wait_for(|(on, uris)| *on == connection && uris.iter().any(|listened| listened == uri));
        match tokio::time::timeout(self.config.connect_timeout, taken).await {
            Ok(Ok(_)) => Ok(held),
            // Dropping `held` lets go of the subscription again.
            _ => Err(ToolError::tool(format!(
                "MCP server `{server}` did not take the subscription to `{uri}` in time"
            ))),
        }
    }
}
