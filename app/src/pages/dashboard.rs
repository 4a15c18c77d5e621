//! The landing page: servers by status, the last hour's calls and error rate per tenant, and
//! the slowest tools.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::shell::MeResource;
use super::ui::{StatusBadge, loaded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// (status, number of servers); `None` for a tenant administrator, who has none.
    pub servers: Option<Vec<(String, usize)>>,
    pub tenants: Vec<TenantCalls>,
    pub slowest: Vec<SlowTool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantCalls {
    pub tenant: String,
    pub calls: i64,
    pub errors: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowTool {
    pub tool: String,
    pub calls: i64,
    pub p95_ms: f64,
    pub mean_ms: f64,
}

#[server]
pub async fn load_overview() -> Result<Overview, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let state = state();
    let traffic = engine::service::global::traffic(&state, &caller, 60).await?;
    // Only the statuses are counted: the server list itself, not its tools and tenants.
    let servers = match caller.owner() {
        Ok(owner) => {
            let mut servers: Vec<(String, usize)> = Vec::new();
            for entry in engine::service::servers::list(&state, &owner).await? {
                let status = super::servers::ssr::status(&entry);
                match servers.iter_mut().find(|(known, _)| *known == status) {
                    Some((_, count)) => *count += 1,
                    None => servers.push((status, 1)),
                }
            }
            Some(servers)
        }
        Err(_) => None,
    };
    Ok(Overview {
        servers,
        tenants: traffic
            .tenants
            .into_iter()
            .map(|t| TenantCalls { tenant: t.tenant, calls: t.calls, errors: t.errors })
            .collect(),
        slowest: traffic
            .slowest
            .into_iter()
            .map(|t| SlowTool { tool: t.tool, calls: t.calls, p95_ms: t.p95_ms, mean_ms: t.mean_ms })
            .collect(),
    })
}

#[component]
pub fn Dashboard() -> impl IntoView {
    let overview = Resource::new(|| (), |_| load_overview());
    let me = expect_context::<MeResource>();
    view! {
        <Title text="Dashboard" />
        <h1>"Dashboard"</h1>
        <Transition fallback=|| ()>
            {move || {
                me.get()
                    .and_then(Result::ok)
                    .map(|me| {
                        view! {
                            <p class="signed-in muted">
                                "Signed in as " <strong>{me.username}</strong> " (" {me.role} ")."
                            </p>
                        }
                    })
            }}
        </Transition>
        {loaded(
            overview,
            |o| {
                view! {
                    <div class="cards">
                        {o.servers.map(|servers| view! {
                        <section class="card">
                            <h2>"Servers"</h2>
                            {if servers.is_empty() {
                                view! { <p class="muted">"No server registered. " <a href="/servers">"Register one"</a></p> }.into_any()
                            } else {
                                view! {
                                    <ul class="plain">
                                        {servers
                                            .into_iter()
                                            .map(|(status, count)| view! { <li><StatusBadge status /> " " {count}</li> })
                                            .collect_view()}
                                    </ul>
                                }
                                    .into_any()
                            }}
                        </section>
                        })}
                        <section class="card">
                            <h2>"Calls in the last hour"</h2>
                            {if o.tenants.is_empty() {
                                view! { <p class="muted">"No calls."</p> }.into_any()
                            } else {
                                view! {
                                    <table class="grid">
                                        <thead><tr><th>"Tenant"</th><th>"Calls"</th><th>"Error rate"</th></tr></thead>
                                        <tbody>
                                            {o.tenants
                                                .into_iter()
                                                .map(|t| {
                                                    let rate = 100.0 * t.errors as f64 / t.calls.max(1) as f64;
                                                    view! {
                                                        <tr>
                                                            <td><a href=format!("/tenants/{}", t.tenant)>{t.tenant.clone()}</a></td>
                                                            <td>{t.calls}</td>
                                                            <td>{format!("{rate:.1} %")}</td>
                                                        </tr>
                                                    }
                                                })
                                                .collect_view()}
                                        </tbody>
                                    </table>
                                }
                                    .into_any()
                            }}
                        </section>
                    </div>
                    <section class="card">
                        <h2>"Slowest tools (last hour)"</h2>
                        {if o.slowest.is_empty() {
                            view! { <p class="muted">"No calls."</p> }.into_any()
                        } else {
                            view! {
                                <table class="grid">
                                    <thead><tr><th>"Tool"</th><th>"Calls"</th><th>"p95"</th><th>"Mean"</th></tr></thead>
                                    <tbody>
                                        {o.slowest
                                            .into_iter()
                                            .map(|t| {
                                                view! {
                                                    <tr>
                                                        <td>{t.tool}</td>
                                                        <td>{t.calls}</td>
                                                        <td>{format!("{:.1} ms", t.p95_ms)}</td>
                                                        <td>{format!("{:.1} ms", t.mean_ms)}</td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                            }
                                .into_any()
                        }}
                    </section>
                }
            },
        )}
    }
}
