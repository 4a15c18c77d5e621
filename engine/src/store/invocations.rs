//! Invocation records: written in batches off the call path, and what they say about recent
//! activity (calls, errors and latency over time, per tenant, per source and per tool).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::Result;

/// A span of recent time the dashboard looks back over, and the width of its chart's bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    Hour,
    Day,
    Week,
}

impl Window {
    /// How far back, and each bar's width, in minutes: 60 bars an hour, 48 a day, 56 a week.
    fn minutes(self) -> (i32, i32) {
        match self {
            Window::Hour => (60, 1),
            Window::Day => (24 * 60, 30),
            Window::Week => (7 * 24 * 60, 180),
        }
    }
}

/// Calls, errors and cancelled calls in one bar of the chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    #[serde(with = "time::serde::rfc3339")]
    pub start: time::OffsetDateTime,
    pub calls: i64,
    pub errors: i64,
    /// Calls their client gave up on before they finished: neither answered nor failed.
    pub cancelled: i64,
}

/// What [`Activity`] is broken down by.
#[derive(Clone, Copy)]
enum Breakdown {
    Tenant,
    Source,
    Tool,
}

impl Breakdown {
    fn as_str(self) -> &'static str {
        match self {
            Breakdown::Tenant => "tenant",
            Breakdown::Source => "source",
            Breakdown::Tool => "tool",
        }
    }
}

/// Calls, errors and latency of one tenant, source or tool. The latency is of the calls that
/// finished (`None` when none did): a cancelled call's time is its client's patience.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    pub name: String,
    pub calls: i64,
    pub errors: i64,
    pub cancelled: i64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// What the calls of a window were, aggregated in the database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Activity {
    /// Every bar of the window, oldest first, empty ones included.
    pub buckets: Vec<Bucket>,
    /// Per tenant, busiest first.
    pub tenants: Vec<Latency>,
    /// Per source, busiest first.
    pub sources: Vec<Latency>,
    /// Per tool (by the name tenants call it), busiest first. Each breakdown has at most 50.
    pub tools: Vec<Latency>,
    /// Records of the window's calls that could not be written, per reason (not told per
    /// source).
    pub losses: Vec<Loss>,
}

/// Invocation records lost for one reason: how many, and the calls' first and last time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loss {
    pub reason: LossReason,
    pub count: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub first: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last: time::OffsetDateTime,
}

/// The activity of `window`, for the tenants in `tenants` (`None`: every tenant), and of
/// `source` alone when given.
pub async fn activity(
    pool: &PgPool,
    window: Window,
    tenants: Option<&[String]>,
    source: Option<&str>,
) -> Result<Activity> {
    let (span, width) = window.minutes();
    let scope = tenants.map(<[String]>::to_vec);
    let buckets = sqlx::query_as!(
        Bucket,
        r#"with calls as (
               select date_bin(make_interval(mins => $2), i.at, 'epoch') as start, i.status
               from invocation i join tenant t on t.id = i.tenant_id
               where i.at > now() - make_interval(mins => $1)
                 and ($3::text[] is null or t.slug = any($3)) and ($4::text is null or i.source = $4))
           select b.start as "start!", count(c.status) as "calls!",
                  count(c.status) filter (where c.status in ('tool_error', 'failed', 'timeout')) as "errors!",
                  count(c.status) filter (where c.status = 'cancelled') as "cancelled!"
           from generate_series(date_bin(make_interval(mins => $2), now() - make_interval(mins => $1), 'epoch')
                                    + make_interval(mins => $2),
                                now(), make_interval(mins => $2)) as b(start)
           left join calls c on c.start = b.start
           group by b.start order by b.start"#,
        span,
        width,
        scope.as_deref(),
        source,
    )
    .fetch_all(pool)
    .await?;
    let breakdown = |by: Breakdown| {
        let scope = scope.clone();
        async move {
            sqlx::query_as!(
                Latency,
                r#"select (case $4 when 'tenant' then t.slug when 'source' then i.source else i.tool_name end)
                              as "name!",
                          count(*) as "calls!",
                          count(*) filter (where i.status in ('tool_error', 'failed', 'timeout')) as "errors!",
                          count(*) filter (where i.status = 'cancelled') as "cancelled!",
                          (percentile_cont(0.5) within group (order by i.latency_us)
                               filter (where i.status <> 'cancelled') / 1000.0) as "p50_ms",
                          (percentile_cont(0.95) within group (order by i.latency_us)
                               filter (where i.status <> 'cancelled') / 1000.0) as "p95_ms"
                   from invocation i join tenant t on t.id = i.tenant_id
                   where i.at > now() - make_interval(mins => $1)
                     and ($2::text[] is null or t.slug = any($2)) and ($3::text is null or i.source = $3)
                     and ($4 <> 'source' or i.source is not null)
                   group by 1 order by 2 desc, 1 limit 50"#,
                span,
                scope.as_deref(),
                source,
                by.as_str(),
            )
            .fetch_all(pool)
            .await
        }
    };
    // Lost records are not told per source.
    let losses = if source.is_some() {
        Vec::new()
    } else {
        sqlx::query_as!(
            Loss,
            r#"select l.reason as "reason!: LossReason", sum(l.count)::int8 as "count!",
                  min(l.first_at) as "first!", max(l.last_at) as "last!"
           from invocation_loss l join tenant t on t.id = l.tenant_id
           where l.last_at > now() - make_interval(mins => $1) and ($2::text[] is null or t.slug = any($2))
           group by l.reason order by l.reason"#,
            span,
            scope.as_deref(),
        )
        .fetch_all(pool)
        .await?
    };
    Ok(Activity {
        losses,
        buckets,
        tenants: breakdown(Breakdown::Tenant).await?,
        sources: breakdown(Breakdown::Source).await?,
        tools: breakdown(Breakdown::Tool).await?,
    })
}

/// A call that failed or timed out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedCall {
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub tenant: String,
    pub tool: String,
    pub status: String,
    pub correlation_id: Option<String>,
}

/// The newest calls to `source` that failed or timed out (not tool errors: the tool answered).
pub async fn failures(pool: &PgPool, source: &str, limit: i64) -> Result<Vec<FailedCall>> {
    Ok(sqlx::query_as!(
        FailedCall,
        "select i.at, t.slug as tenant, i.tool_name as tool, i.status, i.correlation_id
         from invocation i join tenant t on t.id = i.tenant_id
         where i.source = $1 and i.status in ('failed', 'timeout')
         order by i.at desc limit $2",
        source,
        limit
    )
    .fetch_all(pool)
    .await?)
}

/// A test invocation an administrator ran (panel playground or admin API).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRun {
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
    pub tool: String,
    /// `admin:<name>`.
    pub caller: String,
    pub status: String,
    pub latency_us: i64,
    /// As recorded: presets and secrets left out.
    pub arguments: Value,
}

/// The newest test invocations of `tenant`, newest first.
pub async fn test_runs(pool: &PgPool, tenant: &str, limit: i64) -> Result<Vec<TestRun>> {
    Ok(sqlx::query_as!(
        TestRun,
        "select i.at, i.tool_name as tool, i.caller, i.status, i.latency_us, i.arguments
         from invocation i join tenant t on t.id = i.tenant_id
         where t.slug = $1 and i.caller like 'admin:%'
         order by i.at desc, i.id desc limit $2",
        tenant,
        limit
    )
    .fetch_all(pool)
    .await?)
}

/// One finished call, as recorded.
#[derive(Debug)]
pub(crate) struct Invocation {
    /// When the call was made (it may be written much later: the database away meanwhile).
    pub at: time::OffsetDateTime,
    pub tenant_id: Uuid,
    pub tenant: String,
    pub tool_name: String,
    /// The source the call went to; `None` for a resumed call.
    pub source: Option<String>,
    pub caller: String,
    pub status: &'static str,
    pub latency: Duration,
    pub result_bytes: usize,
    pub correlation_id: Option<String>,
    pub arguments: Value,
}

/// Writes a batch with one statement.
pub(crate) async fn insert<'a>(
    pool: &PgPool,
    batch: impl Iterator<Item = &'a Invocation> + Clone,
) -> Result<()> {
    let column = |f: fn(&Invocation) -> String| batch.clone().map(f).collect::<Vec<_>>();
    let at: Vec<time::OffsetDateTime> = batch.clone().map(|r| r.at).collect();
    let tenants: Vec<Uuid> = batch.clone().map(|r| r.tenant_id).collect();
    let latencies: Vec<i64> =
        batch.clone().map(|r| i64::try_from(r.latency.as_micros()).unwrap_or(i64::MAX)).collect();
    let sizes: Vec<i32> = batch.clone().map(|r| i32::try_from(r.result_bytes).unwrap_or(i32::MAX)).collect();
    let correlation: Vec<Option<String>> = batch.clone().map(|r| r.correlation_id.clone()).collect();
    let arguments: Vec<Value> = batch.clone().map(|r| r.arguments.clone()).collect();
    let sources: Vec<Option<String>> = batch.clone().map(|r| r.source.clone()).collect();
    sqlx::query!(
        "insert into invocation
            (at, tenant_id, tool_name, caller, status, latency_us, result_bytes, correlation_id, arguments,
             source)
         select * from unnest($1::timestamptz[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int8[],
                              $7::int4[], $8::text[], $9::jsonb[], $10::text[])",
        &at,
        &tenants,
        &column(|r| r.tool_name.clone()),
        &column(|r| r.caller.clone()),
        &column(|r| r.status.to_string()),
        &latencies,
        &sizes,
        &correlation as &[Option<String>],
        &arguments,
        &sources as &[Option<String>],
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Why invocation records were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum LossReason {
    /// The buffer of records waiting to be written was full (the database away too long).
    Overflow,
    /// PostgreSQL refused the record.
    Refused,
}

impl LossReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::Overflow => "overflow",
            LossReason::Refused => "refused",
        }
    }
}

/// Adds runs of lost records: (tenant, reason, count, first, last). Those of tenants removed
/// meanwhile are left out.
pub(crate) async fn insert_losses(
    pool: &PgPool,
    runs: &[(Uuid, LossReason, i64, time::OffsetDateTime, time::OffsetDateTime)],
) -> Result<()> {
    let tenants: Vec<Uuid> = runs.iter().map(|r| r.0).collect();
    let reasons: Vec<&str> = runs.iter().map(|r| r.1.as_str()).collect();
    let counts: Vec<i64> = runs.iter().map(|r| r.2).collect();
    let first: Vec<time::OffsetDateTime> = runs.iter().map(|r| r.3).collect();
    let last: Vec<time::OffsetDateTime> = runs.iter().map(|r| r.4).collect();
    sqlx::query!(
        "insert into invocation_loss (tenant_id, reason, count, first_at, last_at)
         select l.* from unnest($1::uuid[], $2::text[], $3::int8[], $4::timestamptz[], $5::timestamptz[])
                         as l(tenant_id, reason, count, first_at, last_at)
         where exists (select from tenant t where t.id = l.tenant_id)",
        &tenants,
        &reasons as &[&str],
        &counts,
        &first,
        &last,
    )
    .execute(pool)
    .await?;
    Ok(())
}
