//! What the invocation records say about recent traffic: calls and errors per tenant, and the
//! slowest tools.

use serde::Serialize;
use sqlx::PgPool;

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
