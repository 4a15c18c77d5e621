//! The playground's history: the tenant's recent test runs, recorded and made on the page,
//! each to replay or to edit first.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::PanelError;
use crate::pages::ui::StatusBadge;

/// A test invocation in the playground's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PastRun {
    pub at: String,
    pub tool: String,
    /// Who ran it (`admin:<name>`).
    pub by: String,
    pub arguments: Value,
    pub status: String,
    pub latency_ms: f64,
}

/// The tenant's newest test invocations, from the invocation records (so the history
/// outlives the page, and shows other administrators' runs too).
#[server]
pub async fn playground_history(tenant: String) -> Result<Vec<PastRun>, PanelError> {
    use crate::server::{caller, minute, state};
    if tenant.is_empty() {
        return Ok(Vec::new());
    }
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    Ok(engine::service::tenants::test_runs(&state(), &tenant)
        .await?
        .into_iter()
        .map(|r| PastRun {
            at: minute(r.at),
            tool: r.tool,
            by: r.caller,
            arguments: r.arguments,
            status: r.status,
            latency_ms: r.latency_us as f64 / 1000.0,
        })
        .collect())
}

/// The tenant's runs, newest first, each to replay.
#[component]
pub(super) fn History(
    recorded: Resource<Result<Vec<PastRun>, PanelError>>,
    made_here: RwSignal<Vec<PastRun>>,
    replay: impl Fn(PastRun, bool) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let runs = move || {
        let mut runs = made_here.get();
        runs.extend(recorded.get().and_then(Result::ok).unwrap_or_default());
        runs.truncate(20);
        runs
    };
    // The Transition's own view reads the runs (not a `Show` inside it): the server then waits
    // for them before rendering, as the browser hydrates with them.
    view! {
        <Transition fallback=|| ()>
            {move || (!runs().is_empty()).then(|| view! {
                <section class="card">
                    <h2>"Recent runs"</h2>
                    <div class="scroll">
                        <table class="grid history">
                            <tbody>
                                {move || {
                                    runs()
                                        .into_iter()
                                        .map(|past| {
                                            let (again, edit) = (past.clone(), past.clone());
                                            view! {
                                                <tr>
                                                    <td class="small">{past.at}</td>
                                                    <td><code>{past.tool}</code></td>
                                                    <td class="small"><code>{past.arguments.to_string()}</code></td>
                                                    <td><StatusBadge status=past.status /></td>
                                                    <td>{format!("{:.1} ms", past.latency_ms)}</td>
                                                    <td class="small muted">{past.by}</td>
                                                    <td>
                                                        <button type="button" class="link" on:click=move |_| replay(again.clone(), true)>"Replay"</button>
                                                        " "
                                                        <button type="button" class="link" on:click=move |_| replay(edit.clone(), false)>"Edit"</button>
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()
                                }}
                            </tbody>
                        </table>
                    </div>
                </section>
            })}
        </Transition>
    }
}
