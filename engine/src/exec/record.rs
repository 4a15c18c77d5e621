//! Invocation records, written off the call path: calls hand records to a channel and a
//! background task inserts them in batches. A full channel drops records (with a warning)
//! rather than slow calls down.

use std::time::{Duration, Instant};

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
}

impl Recorder {
    pub fn start(pool: PgPool) -> Self {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        tokio::spawn(write_batches(pool, receiver));
        Recorder { sender }
    }

    /// Counts the call in the process's metrics and queues its invocation row.
    pub fn record(&self, mut record: Record) {
        if super::has_nul(&record.arguments) {
            // PostgreSQL would refuse the row, and with it the whole batch.
            record.arguments = serde_json::json!({"unrecorded": "the arguments contained U+0000"});
        }
        let labels = [("tenant", record.tenant.clone()), ("tool", record.tool_name.clone())];
        metrics::histogram!(CALL_SECONDS, &labels).record(record.latency.as_secs_f64());
        let [tenant, tool] = labels;
        metrics::counter!(CALLS_TOTAL, &[tenant, tool, ("status", record.status.to_string())]).increment(1);
        if let Err(err) = self.sender.try_send(record) {
            tracing::warn!(error = %err, "invocation record dropped: the recorder is behind");
        }
    }
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
