//! The health card of a server's page: its connection, the last hour of calls to it, the
//! recent failures, and what a stdio server wrote on its standard error.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::pages::ui::{StatusBadge, counted, grid, milliseconds};

/// How the server has been answering: its connection, and the last hour of calls to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerHealth {
    /// Seconds since the last successful contact.
    pub last_seen_secs: Option<f64>,
    /// The connection's last error, and how many seconds ago it happened.
    pub last_error: Option<(String, f64)>,
    pub calls: i64,
    pub errors: i64,
    pub cancelled: i64,
    /// Of the calls that finished.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    /// The newest calls that failed or timed out.
    pub failures: Vec<Failure>,
    /// A stdio server's standard error, its newest lines.
    pub stderr: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub at: String,
    pub tenant: String,
    pub tool: String,
    pub status: String,
    pub correlation_id: Option<String>,
}

/// `secs` seconds ago, in the unit a reader wants.
fn ago(secs: f64) -> String {
    match secs {
        secs if secs < 90.0 => format!("{secs:.0} s ago"),
        secs if secs < 5400.0 => format!("{:.0} min ago", secs / 60.0),
        secs => format!("{:.1} h ago", secs / 3600.0),
    }
}

/// The health card of a server's page.
pub(super) fn health_card(health: ServerHealth) -> AnyView {
    let seen = health.last_seen_secs.map_or_else(|| "never".into(), ago);
    let calls = if health.calls == 0 {
        "No calls in the last hour.".to_string()
    } else {
        format!(
            "Last hour: {}, {}, {} cancelled, p50 {}, p95 {}.",
            counted(health.calls, "call"),
            counted(health.errors, "error"),
            health.cancelled,
            milliseconds(health.p50_ms),
            milliseconds(health.p95_ms)
        )
    };
    view! {
        <section class="card health">
            <h2>"Health"</h2>
            <p>"Last successful contact: " <strong class="last-seen">{seen}</strong></p>
            <p class="calls-summary">{calls}</p>
            {health.last_error.map(|(error, secs)| {
                view! { <p class="error last-error">"Last connection error (" {ago(secs)} "): " {error}</p> }
            })}
            {(!health.stderr.is_empty()).then(|| {
                view! {
                    <details class="stderr">
                        <summary>{format!("What it wrote on its standard error (newest {})", counted(health.stderr.len() as i64, "line"))}</summary>
                        <pre>{health.stderr.join("\n")}</pre>
                    </details>
                }
            })}
            <h3>"Recent failures"</h3>
            {grid(health.failures, "No call to this server failed or timed out.", &["When", "Tenant", "Tool", "Status", "Correlation id"], |f| {
                view! {
                    <tr>
                        <td class="small">{f.at}</td>
                        <td>{f.tenant}</td>
                        <td><code>{f.tool}</code></td>
                        <td><StatusBadge status=f.status /></td>
                        <td><code>{f.correlation_id.unwrap_or_default()}</code></td>
                    </tr>
                }
                .into_any()
            })}
        </section>
    }
    .into_any()
}
