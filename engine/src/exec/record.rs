//! Invocation records, written off the call path: calls hand records to a channel and a
//! background task inserts them in batches. A full channel drops records (with a warning)
//! rather than slow calls down. A record keeps at most [`RECORDED_ARGUMENTS`] bytes of
//! arguments (larger ones are kept as their size, hash and beginning), a batch holds at most
//! [`BATCH_BYTES`] of them, and a batch PostgreSQL refuses is written record by record, so one
//! bad record loses only itself.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use metrics::{Counter, Histogram};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
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
/// The most bytes of arguments one record keeps (as JSON text).
pub const RECORDED_ARGUMENTS: usize = 64 * 1024;
/// The most bytes of arguments one insert carries (one record more if it alone is larger).
const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// How much of arguments too large to keep is kept, as text.
const KEPT_BEGINNING: usize = 1024;

pub(super) use crate::store::invocations::Invocation as Record;

/// A record waiting for the writer, with the size of its arguments.
struct Queued {
    record: Record,
    bytes: usize,
}

pub(super) struct Recorder {
    sender: mpsc::Sender<Queued>,
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
            // PostgreSQL would refuse the row.
            record.arguments = json!({"unrecorded": "the arguments contained U+0000"});
        }
        let bytes = kept_arguments(&mut record.arguments);
        self.measure(&record);
        if let Err(err) = self.sender.try_send(Queued { record, bytes }) {
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

async fn write_batches(pool: PgPool, mut receiver: mpsc::Receiver<Queued>) {
    let mut queued = Vec::with_capacity(BATCH);
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut queued, BATCH).await > 0 {
        // Let the burst gather: one insert per interval rather than one per call.
        tokio::time::sleep(GATHER).await;
        while queued.len() < BATCH
            && let Ok(record) = receiver.try_recv()
        {
            queued.push(record);
        }
        let mut bytes = 0;
        for Queued { record, bytes: size } in queued.drain(..) {
            if !batch.is_empty() && bytes + size > BATCH_BYTES {
                write(&pool, &batch).await;
                batch.clear();
                bytes = 0;
            }
            bytes += size;
            batch.push(record);
        }
        write(&pool, &batch).await;
        batch.clear();
    }
}

/// Writes `batch` in one statement; if PostgreSQL refuses its data, writes each record alone,
/// so a bad one (its tenant removed meanwhile) loses only itself.
async fn write(pool: &PgPool, batch: &[Record]) {
    let err = match store::invocations::insert(pool, batch).await {
        Ok(()) => return,
        Err(err) => err,
    };
    if batch.len() == 1 || !refused_data(&err) {
        tracing::warn!(error = %err, count = batch.len(), "invocation records could not be written");
        return;
    }
    for record in batch {
        if let Err(err) = store::invocations::insert(pool, std::slice::from_ref(record)).await {
            let (tenant, tool) = (&record.tenant, &record.tool_name);
            tracing::warn!(error = %err, %tenant, %tool, "an invocation record could not be written");
        }
    }
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

    /// One record PostgreSQL refuses (its tenant removed before the batch is written) loses
    /// only itself: main lost the whole batch, every tenant's records with it.
    #[sqlx::test(migrator = "crate::db::MIGRATOR")]
    async fn a_refused_record_loses_only_itself(pool: PgPool) {
        let acme = crate::model::TenantSlug::parse("acme").unwrap();
        let tenant = store::tenants::create(&pool, &store::Actor::system(), &acme, "Acme").await.unwrap();
        let record = |tenant_id, tool: &str| Record {
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
        };
        let batch =
            [record(tenant.id, "kept"), record(uuid::Uuid::new_v4(), "orphan"), record(tenant.id, "also")];
        write(&pool, &batch).await;
        let written: Vec<String> = sqlx::query_scalar("select tool_name from invocation order by tool_name")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(written, ["also", "kept"]);
    }
}
