//! What a call answered the direct way sends its client before its answer, and what the
//! client of a session posts back about such calls (answers to their requests, cancellations).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use rmcp::model::{ClientResult, RequestId, ServerJsonRpcMessage, ServerNotification, ServerRequest};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::session::SessionHandle;

/// What a direct call sends its client before its answer: notifications, and for a session's
/// call, requests whose answers the client posts on the session.
#[derive(Clone)]
pub(super) struct Outbox {
    /// The messages as SSE events: a channel allocates room for 32 at a time, and a message
    /// takes 376 bytes where its event takes 32 (an idle listening stream holds such a channel).
    pub(super) messages: mpsc::Sender<Bytes>,
    /// The session the client answers on; none on 2026-07-28, whose questions are rounds.
    pub(super) session: Option<Arc<str>>,
    pub(super) sessions: Arc<SessionCalls>,
}

/// `message` as an SSE event.
pub(super) fn event(message: &ServerJsonRpcMessage) -> Bytes {
    let data = serde_json::to_string(message).expect("messages serialise");
    Bytes::from(format!("data: {data}\n\n"))
}

/// Ids of the requests the direct way sends clients; strings, so they never meet rmcp's
/// numbered ones on the same session.
static ASKED: AtomicU64 = AtomicU64::new(0);

impl Outbox {
    /// Sends `notification` on the request's answer stream; whether it went (an answered
    /// request's stream is closed).
    pub(super) async fn notify(&self, notification: ServerNotification) -> bool {
        self.messages.send(event(&ServerJsonRpcMessage::notification(notification))).await.is_ok()
    }

    /// Whether `other` is this request's outbox.
    pub(super) fn is(&self, other: &Outbox) -> bool {
        self.messages.same_channel(&other.messages)
    }

    pub(super) async fn ask(&self, request: ServerRequest) -> Result<ClientResult, String> {
        let session =
            self.session.clone().ok_or("a request on 2026-07-28 takes no requests from the server")?;
        let id = RequestId::String(format!("toolgate-{}", ASKED.fetch_add(1, Ordering::Relaxed)).into());
        let (answer, answered) = oneshot::channel();
        let _waiting = self.sessions.answers.add((session, id.clone()), answer);
        self.messages
            .send(event(&ServerJsonRpcMessage::request(request, id)))
            .await
            .map_err(|_| "the call has ended".to_string())?;
        answered.await.map_err(|_| "the client did not answer".to_string())?
    }
}

/// What a session's client may post about the direct calls of its session: answers to the
/// requests they sent it, and `notifications/cancelled` for the calls themselves.
#[derive(Default)]
pub(super) struct SessionCalls {
    pub(super) answers: Arc<Table<oneshot::Sender<Result<ClientResult, String>>>>,
    pub(super) calls: Arc<Table<CancellationToken>>,
}

impl SessionCalls {
    /// Hands a session's answer to the request that waits for it; `false` if none does here.
    pub(super) fn answer(
        &self,
        session: &SessionHandle,
        id: RequestId,
        answer: Result<ClientResult, String>,
    ) -> bool {
        let waiting = self.answers.take(&(session.id.clone(), id));
        waiting.is_some_and(|waiting| waiting.send(answer).is_ok())
    }

    /// Cancels a session's call running here; `false` if none is.
    pub(super) fn cancel(&self, session: &SessionHandle, id: RequestId) -> bool {
        let running = self.calls.take(&(session.id.clone(), id));
        running.inspect(CancellationToken::cancel).is_some()
    }
}

type SessionKey = (Arc<str>, RequestId);

/// Entries that live as long as the [`Entry`] their adding returned (or until taken).
pub(super) struct Table<V> {
    entries: Mutex<HashMap<SessionKey, (u64, V)>>,
    /// Tells an entry from a later one under the same key (a client may reuse a request id
    /// once its request is over).
    added: AtomicU64,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table { entries: Mutex::default(), added: AtomicU64::new(0) }
    }
}

impl<V> Table<V> {
    pub(super) fn add(self: &Arc<Self>, key: SessionKey, value: V) -> Entry<V> {
        let generation = self.added.fetch_add(1, Ordering::Relaxed);
        self.entries.lock().expect("session calls").insert(key.clone(), (generation, value));
        Entry { table: self.clone(), key, generation }
    }

    fn take(&self, key: &SessionKey) -> Option<V> {
        self.entries.lock().expect("session calls").remove(key).map(|(_, value)| value)
    }
}

/// Removes its own entry when dropped.
pub(super) struct Entry<V> {
    table: Arc<Table<V>>,
    key: SessionKey,
    generation: u64,
}

impl<V> Drop for Entry<V> {
    fn drop(&mut self) {
        let mut entries = self.table.entries.lock().expect("session calls");
        if entries.get(&self.key).is_some_and(|(generation, _)| *generation == self.generation) {
            entries.remove(&self.key);
        }
    }
}
