//! What one session of the endpoint keeps (its chosen groups, logging level, client
//! capabilities and subscriptions), and how the session layer hands it to a request.

use std::sync::{Arc, Mutex, OnceLock};

use engine::service::calls::{ResourceUpdated, Subscription};
use engine::service::catalog::TenantTools;
use rmcp::model::{ClientCapabilities, LoggingLevel};

/// How often a session's `list_changed` watcher checks that the session is still open.
pub(super) const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// What one session chose, shared by its rmcp handler and the direct way.
pub struct SessionChoices(Mutex<Session>);

impl Default for SessionChoices {
    fn default() -> Self {
        SessionChoices(Mutex::new(Session {
            equipped: None,
            level: LoggingLevel::Debug,
            capabilities: None,
            subscriptions: Vec::new(),
        }))
    }
}

impl SessionChoices {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.0.lock().expect("session")
    }

    /// The URI the session subscribed to the resource `update` is about by, if it did.
    pub(super) fn covering(&self, update: &ResourceUpdated) -> Option<String> {
        self.lock()
            .subscriptions
            .iter()
            .find_map(|subscription| subscription.covers(update))
            .map(str::to_string)
    }
}

pub(super) struct Session {
    pub(super) equipped: Option<Equipped>,
    /// From `logging/setLevel`.
    pub(super) level: LoggingLevel,
    /// What its client said in `initialize` it can answer (elicitation, sampling).
    pub(super) capabilities: Option<ClientCapabilities>,
    /// The resources it subscribed to (on this replica), each held until it unsubscribes or
    /// the session ends.
    pub(super) subscriptions: Vec<Subscription>,
}

/// Where `initialize` leaves the state of the session it opens. The handshake does not know
/// the id rmcp gives the session, so the session layer ([`super::sessions`]) puts one into the
/// request and keeps what comes back under the id the answer carries.
#[derive(Clone, Default)]
pub struct Opening(pub(super) Arc<OnceLock<Arc<SessionChoices>>>);

impl Opening {
    /// The state of the session the request opened (or restored), if it did.
    pub fn opened(&self) -> Option<Arc<SessionChoices>> {
        self.0.get().cloned()
    }
}

/// A known session, put into its requests by the session layer for the direct way.
#[derive(Clone)]
pub struct SessionHandle {
    pub id: Arc<str>,
    pub state: Arc<SessionChoices>,
}

/// The groups a session chose with the meta tool, and its view for one snapshot version.
pub(super) struct Equipped {
    pub(super) groups: Vec<String>,
    pub(super) version: u64,
    pub(super) view: Arc<TenantTools>,
}
