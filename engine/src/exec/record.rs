//! Invocation records, written off the call path: calls hand records to a channel and a
//! background task inserts them in batches. A full channel drops records (with a warning)
//! rather than slow calls down.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram};
use sqlx::PgPool;
use tokio::sync::mpsc;

use crate::store;

/// Counter of finished calls, labelled `tenant`, `tool` and `status`.
pub const CALLS_TOTAL: &str = "toolgate_tool_calls_total";
/// Histogram of call latency in seconds, labelled `tenant` and `tool`.
pub const CALL_SECONDS: &str = "toolgate_tool_call_duration_seconds";

const CAPACITY: usize = 10_000;
/// How long the writer waits for more records after the first of a batch.
const GATHER: Duration = Duration::from_millis(50);
const BATCH: usize = 500;

pub(super) use crate::store::invocations::Invocation as Record;

pub(super) struct Recorder {
    sender: mpsc::Sender<Record>,
    /// The metric handles of each tenant's tools, by tenant slug then tool name: registered
    /// on a tool's first call, so later calls neither build labels nor look them up in the
    /// metrics registry.
    meters: Mutex<HashMap<String, HashMap<String, Meters>>>,
}

/// One tool's metrics in one tenant.
struct Meters {
    seconds: Histogram,
    /// A counter per status seen, a handful at most.
    calls: Vec<(&'static str, Counter)>,
}

impl Meters {
    fn register(tenant: &str, tool: &str) -> Self {
        let labels = [("tenant", tenant.to_string()), ("tool", tool.to_string())];
        Meters { seconds: metrics::histogram!(CALL_SECONDS, &labels), calls: Vec::new() }
    }

    fn calls(&mut self, tenant: &str, tool: &str, status: &'static str) -> &Counter {
        let at = match self.calls.iter().position(|(seen, _)| *seen == status) {
            Some(at) => at,
            None => {
                let labels = [
                    ("tenant", tenant.to_string()),
                    ("tool", tool.to_string()),
                    ("status", status.to_string()),
                ];
                self.calls.push((status, metrics::counter!(CALLS_TOTAL, &labels)));
                self.calls.len() - 1
            }
        };
        &self.calls[at].1
    }
}

impl Recorder {
    pub fn start(pool: PgPool) -> Self {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        tokio::spawn(write_batches(pool, receiver));
        Recorder { sender, meters: Mutex::default() }
    }

    /// Counts the call in the process's metrics and queues its invocation row.
    pub fn record(&self, mut record: Record) {
        if super::has_nul(&record.arguments) {
            // PostgreSQL would refuse the row, and with it the whole batch.
            record.arguments = serde_json::json!({"unrecorded": "the arguments contained U+0000"});
        }
        self.measure(&record);
        if let Err(err) = self.sender.try_send(record) {
            tracing::warn!(error = %err, "invocation record dropped: the recorder is behind");
        }
    }

    fn measure(&self, record: &Record) {
        let (tenant, tool) = (record.tenant.as_str(), record.tool_name.as_str());
        let mut meters = self.meters.lock().expect("no panic while measuring");
        let tools = entry(&mut meters, tenant, HashMap::new);
        let meters = entry(tools, tool, || Meters::register(tenant, tool));
        meters.seconds.record(record.latency.as_secs_f64());
        meters.calls(tenant, tool, record.status).increment(1);
    }
}

/// `map`'s value at `key`, made by `new` if it has none; the key is copied only then.
fn entry<'m, V>(map: &'m mut HashMap<String, V>, key: &str, new: impl FnOnce() -> V) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), new());
    }
    map.get_mut(key).expect("inserted above")
}

/// The invocation record of a call under way, queued when the call ends: with its outcome when
/// [`Unfinished::finish`] is given one, as `cancelled` when the call is dropped before (its
/// client cancelled, or went away).
pub(super) struct Unfinished<'a> {
    recorder: &'a Recorder,
    started: Instant,
    /// Taken when it is queued.
    record: Option<Record>,
}

impl<'a> Unfinished<'a> {
    /// `record` as it is queued if the call is dropped; its latency is measured from `started`.
    pub(super) fn new(recorder: &'a Recorder, started: Instant, record: Record) -> Self {
        Unfinished { recorder, started, record: Some(record) }
    }

    pub(super) fn arguments(&self) -> &serde_json::Value {
        &self.record.as_ref().expect("queued only when dropped").arguments
    }

    /// Queues nothing: the call never started.
    pub(super) fn discard(mut self) {
        self.record = None;
    }

    pub(super) fn finish(mut self, result: &super::CallResult) {
        if let Some(record) = &mut self.record {
            record.status = result.status.as_str();
            record.result_bytes = result.output.size();
            record.correlation_id = result.correlation_id.clone();
        }
    }
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.latency = self.started.elapsed();
            self.recorder.record(record);
        }
    }
}

async fn write_batches(pool: PgPool, mut receiver: mpsc::Receiver<Record>) {
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        // Let the burst gather: one insert per interval rather than one per call.
        tokio::time::sleep(GATHER).await;
        while batch.len() < BATCH
            && let Ok(record) = receiver.try_recv()
        {
            batch.push(record);
        }
        if let Err(err) = store::invocations::insert(&pool, &batch).await {
            tracing::warn!(error = %err, count = batch.len(), "invocation records could not be written");
        }
        batch.clear();
    }
}
