//! Multi-round-trip tool calls (SEP-2322) for clients on revision 2026-07-28, which take no
//! requests from the server: when an upstream asks the caller something during a call
//! (elicitation, sampling, roots — several at once, under its own keys), the call is answered
//! with an `InputRequiredResult`, the upstream's requests are kept waiting, and the client's
//! retry with `inputResponses` answers them and picks up the same call where it stood.
//!
//! The `requestState` handed out is an unguessable handle to state kept here, valid for
//! [`INPUT_WAIT`], for the tenant, key and tool it was issued to and for nothing else: someone
//! else's retry is answered as if the handle did not exist. At most `per_key` calls of one key
//! wait for input at a time; beyond that the upstream's question is refused.
//! The waiting call lives in this process, so a retry must reach the replica that issued it.
//! A call whose client goes away during a round is cancelled (upstream too).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::service::calls::CallResult;
use engine::tool::{Caller, Keyed};
use rand::distr::{Alphanumeric, SampleString};
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, InputResponses};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// How long a call waits for the client to come back with the input asked for.
pub const INPUT_WAIT: Duration = Duration::from_secs(5 * 60);

/// The key of a request an upstream asks alone (a server-initiated request of the handshake
/// era); input requests on 2026-07-28 keep the upstream's own keys.
pub const INPUT_KEY: &str = "input";

/// What an upstream asked of the caller at once (`{"method", "params"}` by key), and where the
/// answers go, by the same keys.
pub struct Question {
    pub requests: Keyed,
    pub answer: oneshot::Sender<Result<Keyed, String>>,
}

/// The caller of one multi-round call: the call in flight, and the questions it asks.
pub struct RunningCall {
    pub task: JoinHandle<Result<CallResult, engine::Error>>,
    pub questions: mpsc::Receiver<Question>,
}

/// How a round ended.
pub enum Round {
    Done(Result<CallResult, engine::Error>),
    Asks(InputRequiredResult),
    /// The call's task panicked.
    Lost(tokio::task::JoinError),
}

/// Who may resume a waiting call: the same tenant, caller (key, or person through one app)
/// and tool.
#[derive(Clone)]
pub struct Owner {
    pub tenant: String,
    pub caller: Caller,
    pub tool: String,
}

/// The same key or grant (a refetched client name does not make another caller).
impl PartialEq for Owner {
    fn eq(&self, other: &Self) -> bool {
        self.tenant == other.tenant && self.caller.owner() == other.caller.owner() && self.tool == other.tool
    }
}

/// A call waiting for its client's input, with whatever travels with it between rounds.
struct Waiting<T> {
    owner: Owner,
    call: RunningCall,
    /// The keys of the input requests the retry must answer.
    keys: Vec<String>,
    answer: oneshot::Sender<Result<Keyed, String>>,
    extra: T,
}

/// The calls waiting for input, by handle. `T` travels with a call from round to round.
pub struct Rounds<T> {
    waiting: Arc<Mutex<HashMap<String, Waiting<T>>>>,
    per_key: usize,
}

impl<T: Send + 'static> Rounds<T> {
    pub fn new(per_key: usize) -> Self {
        Rounds { waiting: Arc::default(), per_key }
    }

    /// Runs `call` until it finishes or asks something its client must answer. A round whose
    /// client goes away (its request, and with it this future, dropped) cancels the call.
    pub async fn next(&self, owner: Owner, mut call: RunningCall, extra: T) -> Round {
        let mut cancel = CancelOnDrop(Some(call.task.abort_handle()));
        loop {
            let question = tokio::select! {
                outcome = &mut call.task => return joined(outcome),
                question = call.questions.recv() => question,
            };
            let Some(Question { requests, answer }) = question else {
                return joined((&mut call.task).await);
            };
            let inputs: Result<InputRequests, serde_json::Error> = requests
                .into_iter()
                .map(|(key, request)| Ok((key, serde_json::from_value::<InputRequest>(request)?)))
                .collect();
            let inputs = match inputs {
                Ok(inputs) => inputs,
                Err(err) => {
                    let _ = answer.send(Err(format!("not a request a client can be asked: {err}")));
                    continue;
                }
            };
            if self.waiting_of(&owner.caller) >= self.per_key {
                let refusal = format!(
                    "{} calls of this API key or app are waiting for input already; answer or abandon one first",
                    self.per_key
                );
                let _ = answer.send(Err(refusal));
                continue;
            }
            // It waits for the client's retry now, not for this round.
            cancel.0 = None;
            let handle = new_handle();
            let keys = inputs.keys().cloned().collect();
            let waiting = Waiting { owner: owner.clone(), call, keys, answer, extra };
            self.waiting.lock().expect("waiting calls").insert(handle.clone(), waiting);
            self.expire(handle.clone());
            return Round::Asks(InputRequiredResult::new(Some(inputs), Some(handle)));
        }
    }

    /// The call `handle` stands for, if `owner` may resume it, answered with `responses`
    /// (one for each input request; others are ignored). `None` for a handle unknown, expired
    /// or someone else's.
    pub fn resume(
        &self,
        handle: &str,
        owner: &Owner,
        responses: Option<InputResponses>,
    ) -> Option<Result<(RunningCall, T), String>> {
        let mut all = self.waiting.lock().expect("waiting calls");
        if all.get(handle)?.owner != *owner {
            return None;
        }
        // Without every answer the call stays where it was: the client may retry with them.
        let mut responses = responses.unwrap_or_default();
        let keys = &all.get(handle)?.keys;
        let unanswered: Vec<&str> =
            keys.iter().filter(|key| !responses.contains_key(*key)).map(String::as_str).collect();
        if !unanswered.is_empty() {
            return Some(Err(format!("`inputResponses` must answer the input requests {unanswered:?}")));
        }
        let answers = keys.iter().filter_map(|key| Some((key.clone(), responses.remove(key)?))).collect();
        let waiting = all.remove(handle)?;
        let _ = waiting.answer.send(Ok(answers));
        Some(Ok((waiting.call, waiting.extra)))
    }

    fn waiting_of(&self, caller: &Caller) -> usize {
        let waiting = self.waiting.lock().expect("waiting calls");
        waiting.values().filter(|w| w.owner.caller.owner() == caller.owner()).count()
    }

    /// Forgets `handle` after [`INPUT_WAIT`]: the upstream's question is answered with an
    /// error, and the call goes on to its end without a listener.
    fn expire(&self, handle: String) {
        let waiting = Arc::downgrade(&self.waiting);
        tokio::spawn(async move {
            tokio::time::sleep(INPUT_WAIT).await;
            let expired =
                waiting.upgrade().and_then(|all| all.lock().expect("waiting calls").remove(&handle));
            if let Some(expired) = expired {
                let _ = expired.answer.send(Err("the client did not answer in time".into()));
            }
        });
    }
}

/// Aborts a call's task when dropped, unless disarmed (`None`).
struct CancelOnDrop(Option<AbortHandle>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

fn joined(outcome: Result<Result<CallResult, engine::Error>, tokio::task::JoinError>) -> Round {
    outcome.map_or_else(Round::Lost, Round::Done)
}

/// 256 random bits.
fn new_handle() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 43)
}
