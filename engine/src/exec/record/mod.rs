//! Invocation records, written off the call path: calls hand records to a channel and a
//! background task inserts them in batches. A record keeps at most [`RECORDED_ARGUMENTS`] bytes
//! of arguments (larger ones are kept as their size, hash and beginning), a batch holds at most
//! [`BATCH_BYTES`] of them, and a batch PostgreSQL refuses is written record by record, so one
//! bad record loses only itself.
//!
//! While PostgreSQL is away the records wait in a buffer and the writer retries with backoff;
//! only past the buffer's bounds ([`RecordBuffer`]) are the oldest dropped. Every record lost
//! (dropped, or refused by PostgreSQL) is counted in [`RECORDS_DROPPED`] and, once the
//! database is back, summed per tenant in `invocation_loss` for the dashboard.

mod arguments;
mod losses;
mod meters;
mod writer;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

pub(crate) use arguments::keepable;
use arguments::{kept_arguments, unrecordable};
use losses::Losses;
use meters::{Meters, entry};
use writer::Writer;

use crate::store::invocations::LossReason;

/// Counter of finished calls, labelled `tenant`, `tool` and `status`.
pub const CALLS_TOTAL: &str = "toolgate_tool_calls_total";
/// Histogram of call latency in seconds, labelled `tenant` and `tool`.
pub const CALL_SECONDS: &str = "toolgate_tool_call_duration_seconds";
/// Counter of invocation records lost, labelled `reason`: `overflow` (the buffer of unwritten
/// records was full) or `refused` (PostgreSQL refused the record).
pub const RECORDS_DROPPED: &str = "toolgate_invocation_records_dropped_total";
/// Gauge of invocation records waiting to be written.
pub const RECORDS_UNWRITTEN: &str = "toolgate_invocation_records_unwritten";

/// Calls hand records over through a channel this long. Records wait in it while the writer
/// gathers a batch (50 ms); otherwise, and all the while the database is away, the writer
/// empties it into its buffer at once.
const CAPACITY: usize = 10_000;
/// The most bytes of arguments one record keeps (as JSON text).
pub const RECORDED_ARGUMENTS: usize = 64 * 1024;
/// The most bytes of arguments one insert carries (one record more if it alone is larger).
const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// What a buffered record costs besides its arguments and names, roughly.
const RECORD_OVERHEAD: usize = 160;

/// How many invocation records may wait to be written (PostgreSQL away or slow), and how many
/// bytes they may take; past either bound the oldest are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBuffer {
    pub records: usize,
    pub bytes: usize,
}

impl Default for RecordBuffer {
    fn default() -> Self {
        RecordBuffer { records: 100_000, bytes: 64 * 1024 * 1024 }
    }
}

pub(super) use crate::store::invocations::Invocation as Record;

/// A record waiting for the writer, with what it costs to keep.
struct Queued {
    record: Record,
    bytes: usize,
}

/// What the recorder tells its writer.
// Nearly every message is a record: boxing it would cost an allocation per call.
#[allow(clippy::large_enum_variant)]
enum Message {
    Record(Queued),
    /// Write everything buffered now, and say when nothing is left.
    Flush(oneshot::Sender<()>),
}

pub(super) struct Recorder {
    sender: mpsc::Sender<Message>,
    losses: Arc<Losses>,
    /// The metric handles of each tenant's tools, by tenant slug then tool name: registered
    /// on a tool's first call, so later calls neither build labels nor look them up in the
    /// metrics registry.
    meters: Mutex<HashMap<String, HashMap<String, Meters>>>,
}

impl Recorder {
    pub fn start(pool: PgPool, buffer: RecordBuffer) -> Self {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        let losses = Arc::new(Losses::new());
        let writer = Writer::new(pool, buffer, losses.clone());
        tokio::spawn(writer.run(receiver));
        Recorder { sender, losses, meters: Mutex::default() }
    }

    /// Counts the call in the process's metrics and queues its invocation row.
    pub fn record(&self, mut record: Record) {
        if super::has_nul(&record.arguments) {
            record.arguments = unrecordable();
        }
        let bytes = kept_arguments(&mut record.arguments)
            + record.tenant.len()
            + record.tool_name.len()
            + record.caller.len()
            + RECORD_OVERHEAD;
        self.measure(&record);
        if let Err(err) = self.sender.try_send(Message::Record(Queued { record, bytes })) {
            tracing::warn!("invocation record dropped: the recorder is behind");
            if let mpsc::error::TrySendError::Full(Message::Record(queued)) = err {
                self.losses.lose(&queued.record, LossReason::Overflow);
            }
        }
    }

    /// Writes every buffered record, waiting at most `within`; says how many are left
    /// unwritten (the database away all along), which are lost when the process ends.
    pub async fn flush(&self, within: Duration) -> usize {
        let (done, flushed) = oneshot::channel();
        let asked = self.sender.send(Message::Flush(done));
        let _ = tokio::time::timeout(within, async {
            asked.await.ok()?;
            flushed.await.ok()
        })
        .await;
        self.losses.unwritten.load(Ordering::Relaxed)
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
