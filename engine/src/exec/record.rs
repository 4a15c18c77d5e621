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

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::store::{self, invocations::LossReason};

/// Counter of finished calls, labelled `tenant`, `tool` and `status`.
pub const CALLS_TOTAL: &str = "toolgate_tool_calls_total";
/// Histogram of call latency in seconds, labelled `tenant` and `tool`.
pub const CALL_SECONDS: &str = "toolgate_tool_call_duration_seconds";
/// Counter of invocation records lost, labelled `reason`: `overflow` (the buffer of unwritten
/// records was full) or `refused` (PostgreSQL refused the record).
pub const RECORDS_DROPPED: &str = "toolgate_invocation_records_dropped_total";
/// Gauge of invocation records waiting to be written.
pub const RECORDS_UNWRITTEN: &str = "toolgate_invocation_records_unwritten";

/// Calls hand records over through a channel this long; the writer empties it into its buffer
/// at once, even while the database is away.
const CAPACITY: usize = 10_000;
/// How long the writer waits for more records after the first of a batch.
const GATHER: Duration = Duration::from_millis(50);
const BATCH: usize = 500;
/// The most bytes of arguments one record keeps (as JSON text).
pub const RECORDED_ARGUMENTS: usize = 64 * 1024;
/// The most bytes of arguments one insert carries (one record more if it alone is larger).
const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// How much of arguments too large to keep is kept, as text.
const KEPT_BEGINNING: usize = 1024;
/// What a buffered record costs besides its arguments and names, roughly.
const RECORD_OVERHEAD: usize = 160;
/// The first wait before writing again after a failed write, doubled up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

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

/// Records lost and not yet summed in the database, and how many wait to be written; shared by
/// the recorder and its writer.
struct Losses {
    runs: Mutex<HashMap<(Uuid, LossReason), Run>>,
    overflow: Counter,
    refused: Counter,
    unwritten: AtomicUsize,
    unwritten_gauge: Gauge,
}

/// A run of lost records of one tenant, for one reason.
#[derive(Debug, Clone, Copy)]
struct Run {
    count: i64,
    first: OffsetDateTime,
    last: OffsetDateTime,
}

impl Run {
    fn merge(&mut self, other: Run) {
        self.count += other.count;
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
    }
}

impl Losses {
    fn new() -> Self {
        Losses {
            runs: Mutex::default(),
            overflow: metrics::counter!(RECORDS_DROPPED, "reason" => LossReason::Overflow.as_str()),
            refused: metrics::counter!(RECORDS_DROPPED, "reason" => LossReason::Refused.as_str()),
            unwritten: AtomicUsize::new(0),
            unwritten_gauge: metrics::gauge!(RECORDS_UNWRITTEN),
        }
    }

    fn lose(&self, record: &Record, reason: LossReason) {
        match reason {
            LossReason::Overflow => self.overflow.increment(1),
            LossReason::Refused => self.refused.increment(1),
        }
        let lost = Run { count: 1, first: record.at, last: record.at };
        let mut runs = self.runs.lock().expect("no panic while counting");
        runs.entry((record.tenant_id, reason)).and_modify(|run| run.merge(lost)).or_insert(lost);
    }

    fn take(&self) -> HashMap<(Uuid, LossReason), Run> {
        std::mem::take(&mut *self.runs.lock().expect("no panic while counting"))
    }

    /// Puts back runs that could not be written, merged with those lost since.
    fn put_back(&self, taken: HashMap<(Uuid, LossReason), Run>) {
        let mut runs = self.runs.lock().expect("no panic while counting");
        for (key, run) in taken {
            runs.entry(key).and_modify(|now| now.merge(run)).or_insert(run);
        }
    }

    fn set_unwritten(&self, count: usize) {
        self.unwritten.store(count, Ordering::Relaxed);
        self.unwritten_gauge.set(count as f64);
    }
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

/// What stands for arguments PostgreSQL would refuse to store (a U+0000 in a string).
fn unrecordable() -> Value {
    json!({"unrecorded": "the arguments contained U+0000"})
}

/// `arguments` as they may be kept elsewhere (an audit event), bounded as an invocation
/// record keeps them.
pub(crate) fn keepable(arguments: &Value) -> Value {
    if super::has_nul(arguments) {
        return unrecordable();
    }
    let mut kept = arguments.clone();
    kept_arguments(&mut kept);
    kept
}

/// Replaces `arguments` larger than [`RECORDED_ARGUMENTS`] as JSON text by a notice with their
/// size, SHA-256 and beginning; returns the size of what is kept.
fn kept_arguments(arguments: &mut Value) -> usize {
    let size = json_size(arguments);
    if size <= RECORDED_ARGUMENTS {
        return size;
    }
    let text = serde_json::to_string(arguments).expect("it serialised above");
    let mut end = KEPT_BEGINNING;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sha256: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    *arguments = json!({
        "truncated": format!("{size} bytes of arguments, more than the {RECORDED_ARGUMENTS} a record keeps"),
        "bytes": size,
        "sha256": sha256,
        "beginning": &text[..end],
    });
    json_size(arguments)
}

/// Whether PostgreSQL refused the data itself (SQLSTATE classes 22 and 23: a value out of
/// range, a reference to a row gone), which the batch's other records may not share; a
/// database away or overloaded would refuse them one by one too.
fn refused_data(err: &crate::Error) -> bool {
    match err {
        crate::Error::Conflict(_) | crate::Error::Invalid(_) => true,
        crate::Error::Internal(err) => err
            .downcast_ref::<sqlx::Error>()
            .and_then(|err| err.as_database_error()?.code())
            .is_some_and(|code| code.starts_with("22") || code.starts_with("23")),
        _ => false,
    }
}

/// The size of `value` as JSON text, without writing it anywhere.
fn json_size(value: &Value) -> usize {
    let mut size = Counted(0);
    serde_json::to_writer(&mut size, value).expect("counting cannot fail");
    size.0
}

/// Counts the bytes written to it.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
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

/// The background task: takes the recorder's records into its buffer, and writes them out.
struct Writer {
    pool: PgPool,
    bound: RecordBuffer,
    losses: Arc<Losses>,
    /// Records not written yet, oldest first, and what they cost.
    backlog: VecDeque<Queued>,
    bytes: usize,
    /// Records dropped from the buffer since this was last logged.
    dropped: usize,
}

impl Writer {
    fn new(pool: PgPool, bound: RecordBuffer, losses: Arc<Losses>) -> Self {
        Writer { pool, bound, losses, backlog: VecDeque::new(), bytes: 0, dropped: 0 }
    }

    async fn run(mut self, mut receiver: mpsc::Receiver<Message>) {
        let mut received = Vec::with_capacity(BATCH);
        let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
        // When to write next: `GATHER` after the first record of a batch (one insert per
        // interval rather than one per call), later after a failed write.
        let mut write_at: Option<Instant> = None;
        // The wait after the last write, which failed; `None` while writes succeed.
        let mut retry: Option<Duration> = None;
        let mut open = true;
        while open || (!self.backlog.is_empty() && retry.is_none()) {
            let due = async {
                match write_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                count = receiver.recv_many(&mut received, BATCH), if open => {
                    open = count > 0;
                    for message in received.drain(..) {
                        match message {
                            Message::Record(queued) => self.push(queued),
                            Message::Flush(done) => {
                                flushes.push(done);
                                write_at = Some(Instant::now());
                            }
                        }
                    }
                    if !open {
                        write_at = Some(Instant::now());
                    } else if write_at.is_none() && !self.backlog.is_empty() {
                        write_at = Some(Instant::now() + GATHER);
                    }
                    let full_batch = self.backlog.len() >= BATCH && retry.is_none();
                    if !full_batch && write_at.is_some_and(|at| at > Instant::now()) {
                        continue;
                    }
                }
                () = due => {}
            }
            if self.write_backlog().await {
                retry = None;
                write_at = None;
                self.write_losses().await;
                flushes.drain(..).for_each(|done| _ = done.send(()));
            } else {
                let wait = retry.map_or(RETRY_FIRST, |last| (last * 2).min(RETRY_MAX));
                retry = Some(wait);
                write_at = Some(Instant::now() + wait);
                if self.dropped > 0 {
                    let dropped = std::mem::take(&mut self.dropped);
                    tracing::warn!(
                        dropped,
                        "invocation records dropped: the buffer of unwritten records is full"
                    );
                }
            }
            self.losses.set_unwritten(self.backlog.len());
        }
        if !self.backlog.is_empty() {
            let count = self.backlog.len();
            tracing::error!(
                count,
                "invocation records lost: the database was away when the recorder stopped"
            );
        }
    }

    /// Buffers `queued`, dropping the oldest records past the buffer's bounds.
    fn push(&mut self, queued: Queued) {
        self.bytes += queued.bytes;
        self.backlog.push_back(queued);
        while self.backlog.len() > self.bound.records
            || (self.bytes > self.bound.bytes && self.backlog.len() > 1)
        {
            let oldest = self.backlog.pop_front().expect("over a bound, so not empty");
            self.bytes -= oldest.bytes;
            self.losses.lose(&oldest.record, LossReason::Overflow);
            // Logged with the next failed write, not once per record.
            self.dropped += 1;
        }
    }

    /// Writes the buffer out, batch by batch; false when the database is away (what is left
    /// stays buffered).
    async fn write_backlog(&mut self) -> bool {
        while !self.backlog.is_empty() {
            let mut bytes = 0;
            let count = self
                .backlog
                .iter()
                .take(BATCH)
                .take_while(|queued| {
                    bytes += queued.bytes;
                    bytes == queued.bytes || bytes <= BATCH_BYTES
                })
                .count();
            let batch = &self.backlog.make_contiguous()[..count];
            let done = write(&self.pool, batch, &self.losses).await;
            for queued in self.backlog.drain(..done) {
                self.bytes -= queued.bytes;
            }
            if done < count {
                return false;
            }
        }
        true
    }

    /// Sums the records lost so far in the database; kept for the next try if it is away.
    async fn write_losses(&self) {
        let runs = self.losses.take();
        if runs.is_empty() {
            return;
        }
        let rows: Vec<_> = runs
            .iter()
            .map(|(&(tenant, reason), run)| (tenant, reason, run.count, run.first, run.last))
            .collect();
        if let Err(err) = store::invocations::insert_losses(&self.pool, &rows).await {
            tracing::warn!(error = %err, "lost invocation records could not be counted in the database yet");
            self.losses.put_back(runs);
        }
    }
}

/// Writes `batch` in one statement; if PostgreSQL refuses its data, writes each record alone,
/// so a bad one (its tenant removed meanwhile) loses only itself. Returns how many records are
/// done with (written, or refused and counted lost): fewer than all when the database is away.
async fn write(pool: &PgPool, batch: &[Queued], losses: &Losses) -> usize {
    let records = || batch.iter().map(|queued| &queued.record);
    let err = match store::invocations::insert(pool, records()).await {
        Ok(()) => return batch.len(),
        Err(err) => err,
    };
    if !refused_data(&err) {
        tracing::warn!(error = %err, count = batch.len(), "invocation records not written yet: will retry");
        return 0;
    }
    for (done, record) in records().enumerate() {
        if let Err(err) = store::invocations::insert(pool, std::iter::once(record)).await {
            let (tenant, tool) = (&record.tenant, &record.tool_name);
            if !refused_data(&err) {
                tracing::warn!(error = %err, "invocation records not written yet: will retry");
                return done;
            }
            tracing::warn!(error = %err, %tenant, %tool, "an invocation record was refused by the database");
            losses.lose(record, LossReason::Refused);
        }
    }
    batch.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_too_large_to_keep_are_kept_as_their_size_hash_and_beginning() {
        let mut small = json!({"path": "a.txt"});
        assert_eq!(kept_arguments(&mut small), 16);
        assert_eq!(small, json!({"path": "a.txt"}));

        let mut large = json!({"text": "é".repeat(RECORDED_ARGUMENTS)});
        let text = serde_json::to_string(&large).unwrap();
        let kept = kept_arguments(&mut large);
        assert_eq!(kept, serde_json::to_string(&large).unwrap().len());
        assert!(kept < 4 * KEPT_BEGINNING, "{kept}");
        assert_eq!(large["bytes"], text.len());
        let sha256: String = Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(large["sha256"], sha256);
        let beginning = large["beginning"].as_str().unwrap();
        assert!(text.starts_with(beginning) && beginning.len() > KEPT_BEGINNING - 2, "{beginning}");
        assert!(large["truncated"].as_str().unwrap().contains("more than the 65536 a record keeps"));
    }

    fn record(tenant_id: Uuid, tool: &str) -> Record {
        Record {
            at: OffsetDateTime::now_utc(),
            tenant_id,
            tenant: "acme".into(),
            tool_name: tool.into(),
            source: None,
            caller: "test".into(),
            status: "ok",
            latency: Duration::ZERO,
            result_bytes: 0,
            correlation_id: None,
            arguments: json!({}),
        }
    }

    async fn acme(pool: &PgPool) -> Uuid {
        let acme = crate::model::TenantSlug::parse("acme").unwrap();
        store::tenants::create(pool, &store::Actor::system(), &acme, "Acme").await.unwrap().id
    }

    async fn written(pool: &PgPool) -> Vec<String> {
        sqlx::query_scalar("select tool_name from invocation order by tool_name")
            .fetch_all(pool)
            .await
            .unwrap()
    }

    /// One record PostgreSQL refuses (its tenant removed before the batch is written) loses
    /// only itself: main lost the whole batch, every tenant's records with it.
    #[sqlx::test(migrator = "crate::db::MIGRATOR")]
    async fn a_refused_record_loses_only_itself(pool: PgPool) {
        let tenant = acme(&pool).await;
        let batch = [record(tenant, "kept"), record(Uuid::new_v4(), "orphan"), record(tenant, "also")]
            .map(|record| Queued { record, bytes: 1 });
        let losses = Losses::new();
        assert_eq!(write(&pool, &batch, &losses).await, 3);
        assert_eq!(written(&pool).await, ["also", "kept"]);
        let runs = losses.take();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs.values().next().unwrap().count, 1);
    }

    /// Past the buffer's bounds the oldest records go, counted per tenant; once written, the
    /// count is in the database for the dashboard. Main dropped every batch it could not write.
    #[sqlx::test(migrator = "crate::db::MIGRATOR")]
    async fn records_past_the_buffers_bound_are_dropped_oldest_first_and_counted(pool: PgPool) {
        let tenant = acme(&pool).await;
        let losses = Arc::new(Losses::new());
        let bound = RecordBuffer { records: 3, bytes: 1000 };
        let mut writer = Writer::new(pool.clone(), bound, losses.clone());
        for tool in ["a", "b", "c", "d"] {
            writer.push(Queued { record: record(tenant, tool), bytes: 10 });
        }
        // The byte bound too: this one pushes out two more.
        writer.push(Queued { record: record(tenant, "e"), bytes: 985 });
        let kept: Vec<&str> = writer.backlog.iter().map(|q| q.record.tool_name.as_str()).collect();
        assert_eq!(kept, ["d", "e"]);
        assert!(writer.write_backlog().await);
        writer.write_losses().await;
        assert_eq!(written(&pool).await, ["d", "e"]);
        let lost: (String, i64) =
            sqlx::query_as("select reason, count from invocation_loss").fetch_one(&pool).await.unwrap();
        assert_eq!(lost, ("overflow".to_string(), 3));
        assert!(losses.take().is_empty());
        let activity =
            store::invocations::activity(&pool, store::invocations::Window::Hour, None, None).await.unwrap();
        assert_eq!(activity.losses.len(), 1);
        assert_eq!((activity.losses[0].reason, activity.losses[0].count), (LossReason::Overflow, 3));
    }
}
