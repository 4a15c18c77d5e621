//! The recorder's background task: buffers the records calls hand over, and writes them out in
//! batches, retrying with backoff while PostgreSQL is away.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use super::losses::Losses;
use super::{BATCH_BYTES, Message, Queued, RecordBuffer};
use crate::store::{self, invocations::LossReason};

/// How long the writer waits for more records after the first of a batch.
const GATHER: Duration = Duration::from_millis(50);
const BATCH: usize = 500;
/// The first wait before writing again after a failed write, doubled up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The background task: takes the recorder's records into its buffer, and writes them out.
pub(super) struct Writer {
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
    pub(super) fn new(pool: PgPool, bound: RecordBuffer, losses: Arc<Losses>) -> Self {
        Writer { pool, bound, losses, backlog: VecDeque::new(), bytes: 0, dropped: 0 }
    }

    pub(super) async fn run(mut self, mut receiver: mpsc::Receiver<Message>) {
        let mut received = Vec::with_capacity(BATCH);
        let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
        // When to write next: `GATHER` after the first record of a batch (one insert per
        // interval rather than one per call), later after a failed write.
        let mut write_at: Option<Instant> = None;
        // The wait after the last write, which failed; `None` while writes succeed.
        let mut retry: Option<Duration> = None;
        let mut open = true;
        while open || (!self.backlog.is_empty() && retry.is_none()) {
            // Gathering a batch while writes succeed, the writer sleeps until the batch is due:
            // the records that come meanwhile wait in the channel without waking it, one wake
            // per batch rather than one per call.
            if let Some(at) =
                write_at.filter(|&at| retry.is_none() && flushes.is_empty() && at > Instant::now())
            {
                tokio::time::sleep_until(at.into()).await;
            }
            let due = async {
                match write_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // What waits in the channel is taken before a due write.
                biased;
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
    use serde_json::json;
    use time::OffsetDateTime;
    use uuid::Uuid;

    use super::*;
    use crate::exec::record::Record;

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
