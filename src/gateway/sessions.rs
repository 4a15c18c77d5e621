//! MCP sessions bound to the API key that opened them, and shared by the replicas.
//!
//! rmcp's session manager knows sessions only by id, and any request naming an id reached the
//! session, whatever its key or tenant. This layer, between the key check and the MCP service,
//! records the key of every session created and answers a request that names someone else's
//! session (a `POST`, the `GET` stream of notifications and relayed requests, a `DELETE`) as
//! rmcp answers an unknown one: `404 Session not found`, revealing nothing. It also caps the
//! sessions open per key, and closes sessions that have had no request for [`IDLE`] (rmcp
//! stops an idle session's worker after five minutes but keeps its entry). A session ended by
//! its client's `DELETE` is answered `204 No Content`.
//!
//! It also keeps each session's state (what it chose, what its client can answer) under the
//! session's id and puts it into the session's requests, for the MCP endpoint's direct way.
//!
//! Sessions live in PostgreSQL too ([`StoredSessions`], rmcp's session store): a replica that
//! gets a request for a session opened elsewhere (or before it restarted) checks its key there
//! and rmcp replays the handshake, so a load balancer needs no sticky sessions. The cap counts
//! the sessions of every replica. A session ended on one replica ends on every other within
//! milliseconds: each row's deletion is announced through PostgreSQL, and a replica that was
//! not listening checks the sessions it serves when it listens again (and every half minute).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engine::service::PgPool;
use engine::service::sessions::{self as mcp_sessions, SessionOwner};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use uuid::Uuid;

use super::mcp::session::{Opening, SessionChoices, SessionHandle};
use super::{Failure, TenantAccess, problem};

const SESSION_HEADER: &str = "mcp-session-id";

/// How often ended and idle sessions are looked for.
const PRUNE_EVERY: Duration = Duration::from_secs(30);

/// A session with no request for this long is closed.
pub const IDLE: Duration = Duration::from_secs(10 * 60);

/// Who opened a session, and when it was last used here.
struct Owner {
    key: Uuid,
    seen: Instant,
    /// Used since its use was last recorded in PostgreSQL.
    unrecorded: bool,
    /// Its handler's state, once its handshake has run on this replica.
    state: Option<Arc<SessionChoices>>,
}

impl Owner {
    fn new(key: Uuid, state: Option<Arc<SessionChoices>>) -> Self {
        Owner { key, seen: Instant::now(), unrecorded: false, state }
    }
}

/// A session a request names, as this replica knows it.
struct Known {
    key: Uuid,
    /// The groups it equipped on the replica it comes from, when it first arrives here.
    equipped: Option<EquippedElsewhere>,
    state: Option<Arc<SessionChoices>>,
}

/// The keys of the sessions used on this replica, and the session manager that knows which
/// are still open here.
#[derive(Clone)]
pub struct SessionOwners {
    owners: Arc<Mutex<HashMap<Arc<str>, Owner>>>,
    manager: Arc<LocalSessionManager>,
    pool: PgPool,
    /// The most sessions one key may have open.
    per_key: usize,
}

impl SessionOwners {
    /// Binds the sessions of `manager`, at most `per_key` open per key; in the background, for
    /// as long as the returned value (or a clone) lives, forgets ended sessions, closes idle
    /// ones and those that ended on another replica, and records in PostgreSQL which were used.
    pub fn new(manager: Arc<LocalSessionManager>, pool: PgPool, per_key: usize) -> Self {
        let owners = SessionOwners { owners: Arc::default(), manager, pool, per_key };
        tokio::spawn(hear_ended(Arc::downgrade(&owners.owners), owners.manager.clone(), owners.pool.clone()));
        let weak = Arc::downgrade(&owners.owners);
        let (manager, pool) = (owners.manager.clone(), owners.pool.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(PRUNE_EVERY);
            loop {
                every.tick().await;
                let Some(owners) = weak.upgrade() else { break };
                let open: Vec<Arc<str>> = manager.sessions.read().await.keys().cloned().collect();
                let (idle, used): (Vec<Arc<str>>, Vec<String>) = {
                    let mut owners = owners.lock().expect("session owners");
                    owners.retain(|id, _| open.contains(id));
                    let idle =
                        owners.iter().filter(|(_, o)| o.seen.elapsed() > IDLE).map(|(id, _)| id.clone());
                    let idle: Vec<_> = idle.collect();
                    for id in &idle {
                        owners.remove(id);
                    }
                    let used = owners
                        .iter_mut()
                        .filter_map(|(id, o)| std::mem::take(&mut o.unrecorded).then(|| id.to_string()))
                        .collect();
                    metrics::gauge!("toolgate_mcp_sessions").set(owners.len() as f64);
                    (idle, used)
                };
                for id in idle {
                    let _ = manager.close_session(&id).await;
                }
                let recorded = async {
                    if !used.is_empty() {
                        mcp_sessions::touch(&pool, &used).await?;
                    }
                    mcp_sessions::expire(&pool, IDLE).await?;
                    // A session that ended while this replica was adopting it has no
                    // announcement left to hear.
                    end_those_gone(&owners, &manager, &pool).await
                };
                if let Err(err) = recorded.await {
                    tracing::warn!(error = %err, "could not record the use of MCP sessions; will retry");
                    // Told next time, so no replica takes a session in use for an idle one.
                    let mut owners = owners.lock().expect("session owners");
                    for id in used {
                        if let Some(owner) = owners.get_mut(id.as_str()) {
                            owner.unrecorded = true;
                        }
                    }
                }
            }
        });
        owners
    }

    /// A session by id, marking it as used; a session this replica does not know is looked
    /// up in PostgreSQL (opened on another replica, or before a restart), with the groups it
    /// equipped there.
    async fn known(&self, id: &str) -> Result<Option<Known>, engine::Error> {
        if let Some(owner) = self.owners.lock().expect("session owners").get_mut(id) {
            owner.seen = Instant::now();
            owner.unrecorded = true;
            return Ok(Some(Known { key: owner.key, equipped: None, state: owner.state.clone() }));
        }
        let Some(stored) = mcp_sessions::get(&self.pool, id).await? else { return Ok(None) };
        let (Some(key), Some(_)) = (stored.owner, stored.initialize) else { return Ok(None) };
        self.owners.lock().expect("session owners").insert(id.into(), Owner::new(key, None));
        Ok(Some(Known { key, equipped: stored.equipped.map(EquippedElsewhere), state: None }))
    }

    /// Records a new session of `owner`, unless it has its fill of sessions already.
    async fn record(
        &self,
        id: Arc<str>,
        owner: SessionOwner,
        state: Option<Arc<SessionChoices>>,
    ) -> Result<bool, engine::Error> {
        if !mcp_sessions::bind(&self.pool, &id, owner, self.per_key).await? {
            return Ok(false);
        }
        let mut owners = self.owners.lock().expect("session owners");
        owners.insert(id, Owner::new(owner.id(), state));
        metrics::gauge!("toolgate_mcp_sessions").set(owners.len() as f64);
        Ok(true)
    }

    /// Keeps the state of a session whose handshake rmcp replayed here.
    fn restored(&self, id: &str, state: Arc<SessionChoices>) {
        if let Some(owner) = self.owners.lock().expect("session owners").get_mut(id) {
            owner.state.get_or_insert(state);
        }
    }

    fn forget(&self, id: &str) {
        self.owners.lock().expect("session owners").remove(id);
    }
}

/// Ends here, within milliseconds, each session another replica ended (a DELETE there, its key
/// removed, expiry): the id its row's deletion announces; on every (re)connection, whatever
/// ended while this replica was not listening. Ends with the session owners, or the pool.
async fn hear_ended(
    owners: Weak<Mutex<HashMap<Arc<str>, Owner>>>,
    manager: Arc<LocalSessionManager>,
    pool: PgPool,
) {
    let mut delay = Duration::from_millis(100);
    let over = |pool: &PgPool| pool.is_closed() || owners.strong_count() == 0;
    while !over(&pool) {
        let mut listener = match mcp_sessions::listen_ended(&pool).await {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!(error = %err, retry_in = ?delay, "cannot hear of MCP sessions ended elsewhere");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        delay = Duration::from_millis(100);
        let Some(known) = owners.upgrade() else { return };
        if let Err(err) = end_those_gone(&known, &manager, &pool).await {
            tracing::warn!(error = %err, "could not check for MCP sessions ended elsewhere");
        }
        drop(known);
        loop {
            match listener.try_recv().await {
                Ok(Some(ended)) => {
                    let Some(known) = owners.upgrade() else { return };
                    end(&known, &manager, &Arc::from(ended.payload())).await;
                }
                Ok(None) => {
                    tracing::warn!(
                        "lost the connection that hears of MCP sessions ended elsewhere; reconnecting"
                    );
                    break;
                }
                Err(_) if over(&pool) => return,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot hear of MCP sessions ended elsewhere; reconnecting");
                    break;
                }
            }
        }
    }
}

/// Ends the sessions this replica serves whose rows are gone.
async fn end_those_gone(
    owners: &Mutex<HashMap<Arc<str>, Owner>>,
    manager: &LocalSessionManager,
    pool: &PgPool,
) -> Result<(), engine::Error> {
    let served: Vec<String> =
        owners.lock().expect("session owners").keys().map(|id| id.to_string()).collect();
    if served.is_empty() {
        return Ok(());
    }
    let open = mcp_sessions::still_open(pool, &served).await?;
    for id in served.into_iter().filter(|id| !open.contains(id)) {
        end(owners, manager, &Arc::from(id)).await;
    }
    Ok(())
}

/// Ends session `id` on this replica: its state, its rmcp worker and streams.
async fn end(owners: &Mutex<HashMap<Arc<str>, Owner>>, manager: &LocalSessionManager, id: &Arc<str>) {
    let served = {
        let mut owners = owners.lock().expect("session owners");
        let served = owners.remove(id).is_some();
        metrics::gauge!("toolgate_mcp_sessions").set(owners.len() as f64);
        served
    };
    if served || manager.sessions.read().await.contains_key(id) {
        let _ = manager.close_session(id).await;
    }
}

/// The groups a session equipped on the replica it comes from, put on the request that brings
/// it here, for the handshake rmcp replays from that request.
#[derive(Debug, Clone)]
pub struct EquippedElsewhere(pub Vec<String>);

/// rmcp's session store: the handshake of each session in PostgreSQL, for any replica to
/// replay.
pub struct StoredSessions(pub PgPool);

#[async_trait::async_trait]
impl SessionStore for StoredSessions {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let stored = mcp_sessions::get(&self.0, id).await?;
        let initialize = stored.and_then(|stored| stored.initialize);
        Ok(initialize.map(serde_json::from_value).transpose()?)
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(mcp_sessions::save_handshake(&self.0, id, &serde_json::to_value(state)?).await?)
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        Ok(mcp_sessions::remove(&self.0, id).await?)
    }
}

/// For `/mcp/{tenant}`, inside the key check: a named session must be the key's own.
pub async fn bind_sessions(
    State(owners): State<SessionOwners>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(owner) = request.extensions().get::<TenantAccess>().and_then(|access| access.session_owner())
    else {
        return next.run(request).await;
    };
    let key = owner.id();
    let named: Option<Arc<str>> =
        request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(Into::into);
    // Where a handshake run for this request leaves the session's state.
    let opening = Opening::default();
    match &named {
        Some(id) => match owners.known(id).await {
            Ok(Some(known)) if known.key == key => {
                if let Some(equipped) = known.equipped {
                    request.extensions_mut().insert(equipped);
                }
                match known.state {
                    Some(state) => {
                        request.extensions_mut().insert(SessionHandle { id: id.clone(), state });
                    }
                    None => {
                        request.extensions_mut().insert(opening.clone());
                    }
                }
            }
            Ok(_) => {
                let gone = (StatusCode::NOT_FOUND, "Not Found: Session not found");
                return super::before_the_body(request.version(), gone);
            }
            Err(err) => return super::before_the_body(request.version(), session_failure(err)),
        },
        None => {
            request.extensions_mut().insert(opening.clone());
        }
    }
    let deleting = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    match (named, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
        (None, Some(created)) => {
            let created: Arc<str> = created.into();
            let refused = match owners.record(created.clone(), owner, opening.opened()).await {
                Ok(true) => None,
                Ok(false) => Some(too_many_sessions(owners.per_key)),
                Err(err) => Some(session_failure(err)),
            };
            if let Some(refused) = refused {
                let _ = owners.manager.close_session(&created).await;
                let _ = mcp_sessions::remove(&owners.pool, &created).await;
                return refused;
            }
        }
        (Some(id), _) if deleting && response.status().is_success() => {
            owners.forget(&id);
            // rmcp answers 202; the SDKs expect 200 or 204 and log a failure otherwise.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        (Some(id), _) => {
            if let Some(state) = opening.opened() {
                owners.restored(&id, state);
            }
        }
        _ => {}
    }
    response
}

/// Why a session could not be opened or found. The replicas share sessions through the
/// database: while it is away none can be, but revision 2026-07-28, which has no sessions, is
/// served from the catalog in memory; the answer says so.
fn session_failure(err: engine::Error) -> Response {
    match err {
        engine::Error::Unavailable(_) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            "MCP sessions are kept in the database, which cannot be reached right now: try again shortly. \
             Meanwhile requests of protocol revision 2026-07-28, which needs no session, are served."
                .to_string(),
        ),
        err => Failure::from(err).into_response(),
    }
}

fn too_many_sessions(per_key: usize) -> Response {
    let detail = format!(
        "this API key or app has {per_key} MCP sessions open, the most it may: close one (DELETE with its \
         Mcp-Session-Id) or wait for an idle one to end (after {} minutes)",
        IDLE.as_secs() / 60
    );
    let mut response = problem(StatusCode::TOO_MANY_REQUESTS, "too_many_sessions", detail);
    response.headers_mut().insert(axum::http::header::RETRY_AFTER, HeaderValue::from_static("60"));
    response
}
