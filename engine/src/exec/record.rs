//! Invocation records, written off the call path: calls hand records to a channel and a
//! background task inserts them in batches. A full channel drops records (with a warning)
//! rather than slow calls down.

use std::time::Duration;

use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::mpsc;
use uuid::Uuid;

/// Counter of finished calls, labelled `tenant`, `tool` and `status`.
pub const CALLS_TOTAL: &str = "toolgate_tool_calls_total";
/// Histogram of call latency in seconds, labelled `tenant` and `tool`.
pub const CALL_SECONDS: &str = "toolgate_tool_call_duration_seconds";

const CAPACITY: usize = 10_000;
/// How long the writer waits for more records after the first of a batch.
const GATHER: Duration = Duration::from_millis(50);
const BATCH: usize = 500;

#[derive(Debug)]
pub(super) struct Record {
    pub tenant_id: Uuid,
    pub tenant: String,
    pub tool_name: String,
    pub caller: String,
    pub status: &'static str,
    pub latency: Duration,
    pub result_bytes: usize,
    pub correlation_id: Option<String>,
    pub arguments: Value,
}

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
        if let Err(err) = insert(&pool, &batch).await {
            tracing::warn!(error = %err, count = batch.len(), "invocation records could not be written");
        }
        batch.clear();
    }
}

/// Writes a batch with one statement.
async fn insert(pool: &PgPool, batch: &[Record]) -> Result<(), sqlx::Error> {
    let column = |f: fn(&Record) -> String| batch.iter().map(f).collect::<Vec<_>>();
    let tenants: Vec<Uuid> = batch.iter().map(|r| r.tenant_id).collect();
    let latencies: Vec<i64> =
        batch.iter().map(|r| i64::try_from(r.latency.as_micros()).unwrap_or(i64::MAX)).collect();
    let sizes: Vec<i32> = batch.iter().map(|r| i32::try_from(r.result_bytes).unwrap_or(i32::MAX)).collect();
    let correlation: Vec<Option<String>> = batch.iter().map(|r| r.correlation_id.clone()).collect();
    let arguments: Vec<Value> = batch.iter().map(|r| r.arguments.clone()).collect();
    sqlx::query!(
        "insert into invocation
            (tenant_id, tool_name, caller, status, latency_us, result_bytes, correlation_id, arguments)
         select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int4[],
                              $7::text[], $8::jsonb[])",
        &tenants,
        &column(|r| r.tool_name.clone()),
        &column(|r| r.caller.clone()),
        &column(|r| r.status.to_string()),
        &latencies,
        &sizes,
        &correlation as &[Option<String>],
        &arguments,
    )
    .execute(pool)
    .await?;
    Ok(())
}
