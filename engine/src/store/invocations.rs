//! Invocation records: written in batches off the call path, and what they say about recent
//! traffic (calls and errors per tenant, the slowest tools).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::Result;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantTraffic {
    pub tenant: String,
    pub calls: i64,
    /// Calls that ended in a tool error, a failure or a timeout.
    pub errors: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolLatency {
    pub tool: String,
    pub calls: i64,
    pub p95_ms: f64,
    pub mean_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Traffic {
    pub tenants: Vec<TenantTraffic>,
    /// The ten tools with the highest 95th-percentile latency.
    pub slowest: Vec<ToolLatency>,
}

/// Traffic of the last `minutes` minutes.
pub async fn traffic(pool: &PgPool, minutes: i32) -> Result<Traffic> {
    let tenants = sqlx::query_as!(
        TenantTraffic,
        r#"select t.slug as tenant, count(*) as "calls!",
                  count(*) filter (where i.status in ('tool_error', 'failed', 'timeout')) as "errors!"
           from invocation i join tenant t on t.id = i.tenant_id
           where i.at > now() - make_interval(mins => $1)
           group by t.slug order by 2 desc, 1"#,
        minutes
    )
    .fetch_all(pool)
    .await?;
    let slowest = sqlx::query_as!(
        ToolLatency,
        r#"select tool_name as tool, count(*) as "calls!",
                  (percentile_cont(0.95) within group (order by latency_us) / 1000.0) as "p95_ms!",
                  (avg(latency_us) / 1000.0)::float8 as "mean_ms!"
           from invocation where at > now() - make_interval(mins => $1)
           group by tool_name order by 3 desc limit 10"#,
        minutes
    )
    .fetch_all(pool)
    .await?;
    Ok(Traffic { tenants, slowest })
}

/// One finished call, as recorded.
#[derive(Debug)]
pub(crate) struct Invocation {
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

/// Writes a batch with one statement.
pub(crate) async fn insert(pool: &PgPool, batch: &[Invocation]) -> Result<()> {
    let column = |f: fn(&Invocation) -> String| batch.iter().map(f).collect::<Vec<_>>();
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
