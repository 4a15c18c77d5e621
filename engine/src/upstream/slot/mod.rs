//! One pooled connection: its task (connect, discover, watch, reconnect) and its calls.
//!
//! This module holds the connection's state and its members; the jobs are in its submodules:
//! [`connection`] connects, watches and reconnects (with backoff), [`discovery`] lists what the
//! servers offer and records it, [`call`] sends `tools/call`, [`requests`] sends the other
//! requests (and tells what a failed one means), [`subscriptions`] keeps the subscriptions to
//! resources.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use sqlx::PgPool;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

mod call;
mod connection;
mod discovery;
mod requests;
mod subscriptions;

pub(super) use discovery::list_tools;
pub(super) use requests::CancelOnDrop;
pub(super) use subscriptions::SlotSubscription;

use super::direct::DirectCalls;
use super::handler::CallClient;
use super::stderr::StderrTail;
use super::{ConnectionStatus, UpstreamConfig};
use crate::exec::ResourceUpdated;
use crate::secret::SecretBox;
use crate::store::servers::Endpoint;
use crate::tool::ProgressSink;

#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct PoolKey {
    pub(super) endpoint: Endpoint,
    pub(super) tenant: Option<Uuid>,
}

/// One pooled connection.
pub(super) struct Slot {
    pub(super) me: Weak<Slot>,
    /// The servers whose calls go through this connection (several when they share an
    /// endpoint).
    pub(super) members: Mutex<Vec<Member>>,
    /// The servers' own connection discovers their tools; tenants' connections only call.
    pub(super) discovers: bool,
    /// A server joined the connection: discover its tools without reconnecting.
    pub(super) joined: tokio::sync::Notify,
    pub(super) pool: PgPool,
    /// Opens an OAuth server's stored token.
    pub(super) secrets: SecretBox,
    pub(super) config: UpstreamConfig,
    /// Where direct calls go out ([`DirectCalls`]).
    pub(super) http: reqwest::Client,
    /// When a call last went through (a private connection unused for long is closed).
    pub(super) last_used: Mutex<Instant>,
    pub(super) state: watch::Sender<SlotState>,
    /// Progress sinks of calls in flight, by progress token.
    pub(super) progress: Mutex<HashMap<String, ProgressSink>>,
    /// The MCP clients of calls in flight, by progress token.
    pub(super) relays: Mutex<HashMap<String, Arc<CallClient>>>,
    /// A call wanted the connection while it was down: retry after
    /// [`DEMAND_RETRY`](connection::DEMAND_RETRY) rather than at the end of a long backoff, so
    /// a server that comes back is used within a second or two while traffic waits for it.
    pub(super) wanted: tokio::sync::Notify,
    /// An administrator asked for the connection now ("Refresh tools"): retry at once.
    pub(super) now: tokio::sync::Notify,
    pub(super) cancel: CancellationToken,
    /// Where the server's resource updates go, with [`Slot::id`].
    pub(super) updates: broadcast::Sender<ResourceUpdated>,
    /// Tells this connection's resource updates from another's (of the same server for
    /// another tenant or person, or of another server).
    pub(super) id: u64,
    /// The resources subscribed to through this connection, with how many subscriptions
    /// hold each; a new connection subscribes to them again.
    pub(super) subscribed: tokio::sync::Mutex<HashMap<String, usize>>,
    /// On 2026-07-28, the resources the server acknowledged on the listen stream of the
    /// connection numbered first.
    pub(super) listening: watch::Sender<(u64, Vec<String>)>,
    /// On 2026-07-28, what `subscribed` holds changed: the listen stream opens again.
    pub(super) listen_again: tokio::sync::Notify,
    /// Held by a discovery: two at once would write the same rows.
    pub(super) discovering: tokio::sync::Mutex<()>,
    /// The OAuth authorization whose token the connection carries, and the server's URL.
    pub(super) authorization: Option<(Uuid, String)>,
    /// A stdio server's standard error, its newest lines.
    pub(super) stderr: StderrTail,
}

/// A server using a pooled connection.
pub(super) struct Member {
    pub(super) name: String,
    pub(super) source_id: Uuid,
    /// Why its last discovery failed; the connection itself may be fine.
    pub(super) discovery_error: Option<Failure>,
}

impl Member {
    pub(super) fn new(name: &str, source_id: Uuid) -> Self {
        Member { name: name.to_string(), source_id, discovery_error: None }
    }
}

#[derive(Clone)]
pub(super) struct SlotState {
    pub(super) status: ConnectionStatus,
    pub(super) peer: Option<Peer<RoleClient>>,
    /// Set while the connection takes calls straight over HTTP.
    pub(super) direct: Option<Arc<DirectCalls>>,
    pub(super) last_error: Option<Failure>,
    pub(super) last_seen: Option<Instant>,
    /// Reconnecting after a failure: calls fail at once instead of waiting for the attempt
    /// (which, to a host that does not answer, takes the whole connect timeout).
    pub(super) retrying: bool,
    /// Waiting for what no retry brings (an authorization, an allowed program): the
    /// configuration change that brings it starts the connection again.
    pub(super) parked: bool,
    /// Counts connections made, so a call that saw its connection fail can tell whether the
    /// current one is that connection or a newer one.
    pub(super) connection: u64,
}

/// Why something failed, and when.
#[derive(Clone)]
pub(super) struct Failure {
    pub(super) reason: String,
    pub(super) at: Instant,
}

impl Failure {
    fn now(reason: String) -> Self {
        Failure { reason, at: Instant::now() }
    }
}

impl SlotState {
    /// The connection is down for `reason`; calls fail at once while it is retried.
    fn fail(&mut self, reason: String) {
        self.status = ConnectionStatus::Down;
        self.peer = None;
        self.direct = None;
        self.last_error = Some(Failure::now(reason));
        self.retrying = true;
    }
}

impl Slot {
    fn set(&self, change: impl FnOnce(&mut SlotState)) {
        self.state.send_modify(change);
    }

    pub(super) fn members(&self) -> std::sync::MutexGuard<'_, Vec<Member>> {
        self.members.lock().expect("slot members")
    }

    pub(super) fn member_names(&self) -> Vec<String> {
        self.members().iter().map(|m| m.name.clone()).collect()
    }

    /// How long since a call last went through; never idle while a subscription holds it.
    pub(super) fn idle_for(&self) -> Duration {
        if self.subscribed.try_lock().is_ok_and(|subscribed| subscribed.is_empty()) {
            return self.last_used.lock().expect("last used").elapsed();
        }
        Duration::ZERO
    }

    /// A number no other connection of this process has.
    pub(super) fn next_id() -> u64 {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The member servers' names, for the log.
    pub(super) fn label(&self) -> String {
        self.member_names().join(",")
    }

    /// Makes the members `wanted`; servers that joined get their tools discovered.
    pub(super) fn set_members(&self, wanted: Vec<Member>) {
        let mut members = self.members();
        let joined = wanted.iter().any(|w| !members.iter().any(|m| m.source_id == w.source_id));
        members.retain(|m| wanted.iter().any(|w| w.source_id == m.source_id));
        for member in wanted {
            if !members.iter().any(|m| m.source_id == member.source_id) {
                members.push(member);
            }
        }
        if joined && self.discovers {
            self.joined.notify_one();
        }
    }

    /// Takes connection `connection` down for `reason` if it is still the current one (a newer
    /// one is left alone): calls fail at once from now on, and the connection's task, watching
    /// the state, reconnects.
    fn lose(&self, connection: u64, reason: String) {
        self.state.send_if_modified(|s| {
            let current = s.connection == connection && s.peer.is_some();
            if current {
                s.fail(reason);
            }
            current
        });
    }
}
