//! MCP sessions bound to the API key that opened them.
//!
//! rmcp's session manager knows sessions only by id, and any request naming an id reached the
//! session, whatever its key or tenant. This layer, between the key check and the MCP service,
//! records the key of every session created and answers a request that names someone else's
//! session (a `POST`, the `GET` stream of notifications and relayed requests, a `DELETE`) as
//! rmcp answers an unknown one: `404 Session not found`, revealing nothing. It also caps the
//! sessions open per key, and closes sessions that have had no request for [`IDLE`] (rmcp
//! stops an idle session's worker after five minutes but keeps its entry). A session ended by
//! its client's `DELETE` is answered `204 No Content`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use uuid::Uuid;

use super::{TenantAccess, problem};

const SESSION_HEADER: &str = "mcp-session-id";

/// How often ended and idle sessions are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(30);

/// A session with no request for this long is closed.
pub const IDLE: Duration = Duration::from_secs(10 * 60);

/// Who opened a session, and when it was last used.
struct Owner {
    key: Uuid,
    seen: Instant,
}

/// The open sessions' keys, and the session manager that knows which are still open.
#[derive(Clone)]
pub struct SessionOwners {
    owners: Arc<Mutex<HashMap<Arc<str>, Owner>>>,
    manager: Arc<LocalSessionManager>,
    /// The most sessions one key may have open.
    per_key: usize,
}

impl SessionOwners {
    /// Binds the sessions of `manager`, at most `per_key` open per key; forgets ended sessions
    /// in the background, for as long as the returned value (or a clone) lives.
    pub fn new(manager: Arc<LocalSessionManager>, per_key: usize) -> Self {
        let owners = SessionOwners { owners: Arc::default(), manager, per_key };
        let weak = Arc::downgrade(&owners.owners);
        let manager = owners.manager.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(PRUNE_EVERY);
            loop {
                every.tick().await;
                let Some(owners) = weak.upgrade() else { break };
                let open: Vec<Arc<str>> = manager.sessions.read().await.keys().cloned().collect();
                let idle: Vec<Arc<str>> = {
                    let mut owners = owners.lock().expect("session owners");
                    owners.retain(|id, _| open.contains(id));
                    let idle =
                        owners.iter().filter(|(_, o)| o.seen.elapsed() > IDLE).map(|(id, _)| id.clone());
                    let idle: Vec<_> = idle.collect();
                    for id in &idle {
                        owners.remove(id);
                    }
                    metrics::gauge!("toolgate_mcp_sessions").set(owners.len() as f64);
                    idle
                };
                for id in idle {
                    let _ = manager.close_session(&id).await;
                }
            }
        });
        owners
    }

    /// The key of a session, marking the session as used.
    fn owner(&self, id: &str) -> Option<Uuid> {
        let mut owners = self.owners.lock().expect("session owners");
        let owner = owners.get_mut(id)?;
        owner.seen = Instant::now();
        Some(owner.key)
    }

    /// Records a new session of `key`, unless the key has its fill of sessions already.
    fn record(&self, id: Arc<str>, key: Uuid) -> bool {
        let mut owners = self.owners.lock().expect("session owners");
        if owners.values().filter(|owner| owner.key == key).count() >= self.per_key {
            return false;
        }
        owners.insert(id, Owner { key, seen: Instant::now() });
        metrics::gauge!("toolgate_mcp_sessions").set(owners.len() as f64);
        true
    }

    fn forget(&self, id: &str) {
        self.owners.lock().expect("session owners").remove(id);
    }
}

/// For `/mcp/{tenant}`, inside the key check: a named session must be the key's own.
pub async fn bind_sessions(State(owners): State<SessionOwners>, request: Request, next: Next) -> Response {
    let Some(key) = request.extensions().get::<TenantAccess>().map(|access| access.key_id) else {
        return next.run(request).await;
    };
    let named = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Some(id) = &named
        && owners.owner(id) != Some(key)
    {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let deleting = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    match (named, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
        (None, Some(created)) => {
            let created: Arc<str> = created.into();
            if !owners.record(created.clone(), key) {
                let _ = owners.manager.close_session(&created).await;
                return too_many_sessions(owners.per_key);
            }
        }
        (Some(id), _) if deleting && response.status().is_success() => {
            owners.forget(&id);
            // rmcp answers 202; the SDKs expect 200 or 204 and log a failure otherwise.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        _ => {}
    }
    response
}

fn too_many_sessions(per_key: usize) -> Response {
    let detail = format!(
        "this API key has {per_key} MCP sessions open, the most it may: close one (DELETE with its \
         Mcp-Session-Id) or wait for an idle one to end (after {} minutes)",
        IDLE.as_secs() / 60
    );
    let mut response = problem(StatusCode::TOO_MANY_REQUESTS, "too_many_sessions", detail);
    response.headers_mut().insert(axum::http::header::RETRY_AFTER, HeaderValue::from_static("60"));
    response
}
