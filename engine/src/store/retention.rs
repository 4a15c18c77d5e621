//! Retention: invocation records, audit events, calls waiting for their results, sign-in
//! failures, counts of calls against the limits and tools found by searching are deleted once
//! older than their settings, in batches, by a task every process runs; expired OAuth
//! requests, codes, tokens and invitations as soon as they expire, and clients that registered
//! themselves (or were fetched) but that nobody authorized within a day. Replicas pruning at
//! once are safe: a row another one deleted first is simply gone.

use std::time::Duration;

use sqlx::PgPool;

/// How long each kind of record is kept; `None` keeps it for ever.
#[derive(Debug, Clone)]
pub struct Retention {
    pub invocations: Option<Duration>,
    pub pending_calls: Option<Duration>,
    pub audit_events: Option<Duration>,
}

/// Sign-in failures count for 15 minutes; a day of them is kept for the record.
const LOGIN_FAILURES: Duration = Duration::from_secs(24 * 3600);

/// Calls counted against the limits are needed for their window only: the day's, and
/// yesterday's for the dashboard.
const CALL_USAGE: Duration = Duration::from_secs(2 * 24 * 3600);

/// A client nobody authorized within this long after it registered (or was fetched) goes.
const UNUSED_CLIENTS: Duration = Duration::from_secs(24 * 3600);

/// Rows deleted per statement, so no statement holds locks for long.
const BATCH: i64 = 5_000;

/// How often the task prunes.
const EVERY: Duration = Duration::from_secs(3600);

impl Retention {
    /// Table, time column and age of each kind that has an age.
    fn ages(&self) -> Vec<(&'static str, &'static str, Duration)> {
        [
            ("invocation", "at", self.invocations),
            ("pending_call", "created_at", self.pending_calls),
            ("audit_event", "at", self.audit_events),
            ("login_failure", "failed_at", Some(LOGIN_FAILURES)),
            ("call_usage", "window_start", Some(CALL_USAGE)),
            ("invocation_loss", "last_at", self.invocations),
            ("tool_find", "found_at", Some(super::finds::FOUND_FOR)),
            ("oauth_request", "expires_at", Some(Duration::ZERO)),
            ("oauth_code", "expires_at", Some(Duration::ZERO)),
            ("oauth_token", "expires_at", Some(Duration::ZERO)),
            ("account_invite", "expires_at", Some(Duration::ZERO)),
        ]
        .into_iter()
        .filter_map(|(table, column, age)| Some((table, column, age?)))
        .collect()
    }
}

/// Deletes every row past its age; returns how many of each table.
pub async fn prune(pool: &PgPool, retention: &Retention) -> super::Result<Vec<(&'static str, u64)>> {
    let mut pruned = Vec::new();
    for (table, column, age) in retention.ages() {
        // Table and column come from the list above, never from input.
        let statement = format!(
            "delete from {table} where ctid = any(array(
                 select ctid from {table} where {column} < now() - make_interval(secs => $1) limit $2))"
        );
        let mut deleted = 0;
        loop {
            let batch = sqlx::query(&statement).bind(age.as_secs_f64()).bind(BATCH).execute(pool).await?;
            deleted += batch.rows_affected();
            if batch.rows_affected() < BATCH as u64 {
                break;
            }
        }
        pruned.push((table, deleted));
    }
    let unused = sqlx::query!(
        "delete from oauth_client c
         where kind in ('dynamic', 'metadata_document') and created_at < now() - make_interval(secs => $1)
           and not exists (select from oauth_grant g where g.client_id = c.id)
           and not exists (select from oauth_request r where r.client_id = c.id)",
        UNUSED_CLIENTS.as_secs_f64()
    )
    .execute(pool)
    .await?;
    pruned.push(("oauth_client", unused.rows_affected()));
    Ok(pruned)
}

/// Prunes now and every hour, for as long as the process runs; counts what it deleted in
/// `toolgate_pruned_rows_total{table}`.
pub async fn keep(pool: PgPool, retention: Retention) {
    let mut ticks = tokio::time::interval(EVERY);
    loop {
        ticks.tick().await;
        match prune(&pool, &retention).await {
            Ok(pruned) => {
                for (table, rows) in pruned.into_iter().filter(|(_, rows)| *rows > 0) {
                    metrics::counter!("toolgate_pruned_rows_total", "table" => table).increment(rows);
                    tracing::info!(table, rows, "pruned records past their retention");
                }
            }
            Err(err) => tracing::warn!(error = %err, "pruning old records failed; trying again in an hour"),
        }
    }
}
