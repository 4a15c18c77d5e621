//! Calls counted against the limits, per window, summed over the replicas (see
//! `exec::limits`): each replica adds what it admitted since its last sync and reads the totals
//! back in the same statement.

use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::Result;
use crate::model::limits::{Kind, Span};

/// A counter's calls in one window: to add (from a replica), or the total (read back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Count {
    pub subject: Uuid,
    pub tool: String,
    pub span: Span,
    /// The window's start, in seconds since the epoch.
    pub window: u64,
    pub calls: u64,
}

fn timestamp(seconds: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(seconds as i64).expect("window starts are recent times")
}

/// Adds each count's calls to its window (none are written for a count of zero) and returns
/// every window's total, in the order given.
pub(crate) async fn add_and_read(pool: &PgPool, counts: &[Count]) -> Result<Vec<Count>> {
    let subjects: Vec<Uuid> = counts.iter().map(|c| c.subject).collect();
    let tools: Vec<String> = counts.iter().map(|c| c.tool.clone()).collect();
    let spans: Vec<String> = counts.iter().map(|c| c.span.as_str().to_string()).collect();
    let windows: Vec<OffsetDateTime> = counts.iter().map(|c| timestamp(c.window)).collect();
    let calls: Vec<i64> = counts.iter().map(|c| c.calls as i64).collect();
    // The outer select sees the table as it was before the insert: an added window's total
    // comes from the insert's `returning`, the others' from the table.
    let totals = sqlx::query_scalar!(
        r#"with given as (
               select * from unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[])
                   with ordinality as g (subject, tool, span, window_start, calls, position)
           ), added as (
               insert into call_usage (subject, tool, span, window_start, calls)
               select subject, tool, span, window_start, calls from given where calls > 0
               on conflict (subject, tool, span, window_start)
                   do update set calls = call_usage.calls + excluded.calls
               returning subject, tool, span, window_start, calls
           )
           select coalesce(a.calls, u.calls, 0) as "calls!"
           from given g
           left join added a using (subject, tool, span, window_start)
           left join call_usage u using (subject, tool, span, window_start)
           order by g.position"#,
        &subjects,
        &tools,
        &spans,
        &windows,
        &calls,
    )
    .fetch_all(pool)
    .await?;
    Ok(counts
        .iter()
        .zip(totals)
        .map(|(count, total)| Count { calls: total as u64, ..count.clone() })
        .collect())
}

/// One counter's calls in the current window, as the replicas last synced them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Used {
    /// The tenant or API key.
    pub subject: Uuid,
    /// A tool's default exposed name, or empty for the subject's own limit.
    pub tool: String,
    /// `PerMinute` or `PerDay`.
    pub limit: Kind,
    pub calls: u64,
}

/// Every counter's calls in the current UTC minute and day.
pub async fn current(pool: &PgPool) -> Result<Vec<Used>> {
    let now = OffsetDateTime::now_utc().unix_timestamp() as u64;
    let (minute, day) = (Span::Minute.window(now), Span::Day.window(now));
    let rows = sqlx::query!(
        "select subject, tool, span, calls from call_usage
         where (span = 'minute' and window_start = $1) or (span = 'day' and window_start = $2)",
        timestamp(minute),
        timestamp(day)
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Used {
            subject: r.subject,
            tool: r.tool,
            limit: if r.span == "minute" { Kind::PerMinute } else { Kind::PerDay },
            calls: r.calls as u64,
        })
        .collect())
}
