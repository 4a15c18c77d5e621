//! The landing page: calls and errors over the last hour, day or week as a chart (for every
//! tenant or one), latency per server and per tool, the slowest and most failing tools, and
//! the servers by status. Everything is aggregated in the database from the invocation
//! records; the chart is SVG drawn on the server, no script of its own. Beside them, each rate
//! limit with the calls counted against it now.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::shell::MeResource;
use super::ui::{StatusBadge, counted, kept_current, loaded, milliseconds, role_name};
use crate::error::PanelError;

/// Calls, errors, cancelled calls and latency (of the calls that finished) of one tenant,
/// server or tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub name: String,
    pub calls: i64,
    pub errors: i64,
    pub cancelled: i64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// One bar: when it starts (`HH:MM` or `Mon DD HH:MM`), calls, errors, cancelled calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub start: String,
    pub calls: i64,
    pub errors: i64,
    pub cancelled: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// (name, status) of every server; `None` for a tenant administrator, who has none.
    pub servers: Option<Vec<(String, String)>>,
    /// The tenants the caller may look at alone.
    pub choices: Vec<String>,
    /// The span these figures cover, as [`WINDOWS`] names it.
    pub window: String,
    pub bars: Vec<Bar>,
    pub tenants: Vec<Usage>,
    pub sources: Vec<Usage>,
    pub tools: Vec<Usage>,
    pub limits: Vec<LimitRow>,
    /// What could not be recorded of these calls, one sentence per reason.
    pub losses: Vec<String>,
}

/// One rate limit and its use in the current UTC minute or day, summed over the replicas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitRow {
    pub tenant: String,
    /// `all calls`, `tool weather_get` or `key ci (tg_AbC…)`.
    pub whose: String,
    /// `minute` or `day`.
    pub per: String,
    pub used: u64,
    pub max: u32,
}

/// The spans the dashboard looks back over: (value, label, heading).
const WINDOWS: [(&str, &str, &str); 3] = [
    ("hour", "Last hour", "the last hour"),
    ("day", "Last day", "the last day"),
    ("week", "Last week", "the last week"),
];

#[server]
pub async fn load_overview(window: String, tenant: String) -> Result<Overview, PanelError> {
    use engine::service::global::{Latency, Window};
    use time::macros::format_description;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let state = state();
    let (span, window) = match window.as_str() {
        "day" => (Window::Day, "day"),
        "week" => (Window::Week, "week"),
        _ => (Window::Hour, "hour"),
    };
    let tenant = Some(tenant.trim()).filter(|t| !t.is_empty());
    let activity = engine::service::global::activity(&state, &caller, span, tenant).await?;
    let servers = match caller.owner() {
        Ok(owner) => Some(
            engine::service::servers::list(&state, &owner)
                .await?
                .iter()
                .map(|entry| (entry.server.source.name.to_string(), super::servers::ssr::status(entry)))
                .collect(),
        ),
        Err(_) => None,
    };
    let choices =
        engine::service::tenants::list(&state, &caller).await?.into_iter().map(|t| t.slug).collect();
    let limits = engine::service::tenants::usage(&state, &caller)
        .await?
        .into_iter()
        .filter(|u| tenant.is_none_or(|t| t == u.tenant))
        .map(|u| {
            use engine::model::limits::{Kind, Scope};
            LimitRow {
                whose: match (&u.scope, u.key) {
                    (Scope::Tool(tool), _) => format!("tool {tool}"),
                    (Scope::Key, Some(key)) => format!("key {key}"),
                    _ => "all calls".into(),
                },
                per: if u.limit == Kind::PerMinute { "minute" } else { "day" }.into(),
                tenant: u.tenant,
                used: u.used,
                max: u.max,
            }
        })
        .collect();
    let label = match span {
        Window::Hour | Window::Day => format_description!("[hour]:[minute]"),
        Window::Week => format_description!("[month repr:short] [day] [hour]:[minute]"),
    };
    let losses = activity
        .losses
        .iter()
        .map(|loss| {
            use engine::service::global::LossReason;
            let at = format_description!("[month repr:short] [day] [hour]:[minute]:[second] UTC");
            let why = match loss.reason {
                LossReason::Overflow => {
                    "the database was away longer than the buffer of unwritten records could hold"
                }
                LossReason::Refused => "the database refused them",
            };
            format!(
                "{} call records could not be written between {} and {}: {why}.",
                loss.count,
                loss.first.format(at).unwrap_or_default(),
                loss.last.format(at).unwrap_or_default()
            )
        })
        .collect();
    let usage = |rows: Vec<Latency>| {
        rows.into_iter()
            .map(|r| Usage {
                name: r.name,
                calls: r.calls,
                errors: r.errors,
                cancelled: r.cancelled,
                p50_ms: r.p50_ms,
                p95_ms: r.p95_ms,
            })
            .collect()
    };
    Ok(Overview {
        servers,
        choices,
        window: window.into(),
        bars: activity
            .buckets
            .into_iter()
            .map(|b| Bar {
                start: b.start.format(label).unwrap_or_default(),
                calls: b.calls,
                errors: b.errors,
                cancelled: b.cancelled,
            })
            .collect(),
        tenants: usage(activity.tenants),
        sources: usage(activity.sources),
        tools: usage(activity.tools),
        limits,
        losses,
    })
}

/// Calls per bar (errors in red on top of the rest), with the busiest bar's count and the
/// first, middle and last start times along the bottom.
fn chart(bars: &[Bar], heading: &str) -> AnyView {
    const WIDTH: f64 = 720.0;
    const HEIGHT: f64 = 160.0;
    // Room for the time labels.
    const BOTTOM: f64 = 18.0;
    let most = bars.iter().map(|b| b.calls).max().unwrap_or(0).max(1) as f64;
    let step = WIDTH / bars.len().max(1) as f64;
    let scale = |n: i64| n as f64 / most * (HEIGHT - BOTTOM - 12.0);
    let columns = bars
        .iter()
        .enumerate()
        .map(|(i, bar)| {
            let x = i as f64 * step;
            let (all, failed) = (scale(bar.calls), scale(bar.errors));
            let base = HEIGHT - BOTTOM;
            let tip = format!(
                "{}: {}, {}, {} cancelled",
                bar.start,
                counted(bar.calls, "call"),
                counted(bar.errors, "error"),
                bar.cancelled
            );
            view! {
                <g class="bar">
                    <title>{tip}</title>
                    <rect class="calls" x=x y=base - all width=step * 0.8 height=all />
                    <rect class="errors" x=x y=base - failed width=step * 0.8 height=failed />
                </g>
            }
        })
        .collect_view();
    let last = bars.len().saturating_sub(1);
    let ticks = [(0, "start"), (bars.len() / 2, "middle"), (last, "end")]
        .into_iter()
        .filter_map(|(i, anchor)| bars.get(i).map(|b| (i, anchor, b.start.clone())))
        .map(|(i, anchor, start)| {
            // The last label ends at the right edge, the middle one is centred on its bar.
            let x = if i == last { WIDTH } else { i as f64 * step + step * 0.4 };
            view! { <text class="tick" x=x y=HEIGHT - 4.0 text-anchor=anchor>{start}</text> }
        })
        .collect_view();
    let total: i64 = bars.iter().map(|b| b.calls).sum();
    let errors: i64 = bars.iter().map(|b| b.errors).sum();
    let cancelled: i64 = bars.iter().map(|b| b.cancelled).sum();
    view! {
        <div class="scroll">
        <svg
            class="chart"
            viewBox=format!("0 0 {WIDTH} {HEIGHT}")
            role="img"
            aria-label=format!("{} and {} in {heading}", counted(total, "call"), counted(errors, "error"))
        >
            <text class="tick" x="0" y="10">{format!("{} at most per bar", counted(most as i64, "call"))}</text>
            {columns}
            {ticks}
        </svg>
        </div>
        <p class="muted small">
            {format!(
                "{}, {} (tool errors, failures and timeouts), {cancelled} cancelled by their clients in {heading}.",
                counted(total, "call"),
                counted(errors, "error"),
            )}
        </p>
    }
    .into_any()
}

/// A table of usage rows; `link` makes a name a link where it has a page.
fn usage_table(rows: Vec<Usage>, what: &'static str, link: impl Fn(&str) -> Option<String>) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="muted">"No calls."</p> }.into_any();
    }
    let slowest = rows.iter().filter_map(|r| r.p95_ms).fold(0.0, f64::max).max(0.001);
    view! {
        <div class="scroll">
            <table class="grid usage">
                <thead>
                    <tr><th>{what}</th><th>"Calls"</th><th>"Errors"</th><th>"Cancelled"</th><th>"p50"</th><th>"p95"</th></tr>
                </thead>
                <tbody>
                    {rows
                        .into_iter()
                        .map(|r| {
                            let share = 100.0 * r.p95_ms.unwrap_or(0.0) / slowest;
                            let failing = r.errors > 0;
                            view! {
                                <tr>
                                    <td>
                                        {match link(&r.name) {
                                            Some(href) => view! { <a href=href>{r.name.clone()}</a> }.into_any(),
                                            None => r.name.clone().into_any(),
                                        }}
                                    </td>
                                    <td>{r.calls}</td>
                                    <td class:failing=failing>{r.errors}</td>
                                    <td>{r.cancelled}</td>
                                    <td>{milliseconds(r.p50_ms)}</td>
                                    <td>
                                        {milliseconds(r.p95_ms)}
                                        {meter(share)}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
pub fn Dashboard() -> impl IntoView {
    let window = RwSignal::new("hour".to_string());
    let tenant = RwSignal::new(String::new());
    let overview = Resource::new(move || (window.get(), tenant.get()), |(w, t)| load_overview(w, t));
    let chosen = move || (window.get_untracked(), tenant.get_untracked());
    kept_current(overview, chosen, |(window, tenant)| load_overview(window, tenant), PartialEq::eq);
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
                                "Signed in as " <strong>{me.username}</strong> " (" {role_name(&me.role).to_string()} ")."
                            </p>
                        }
                    })
            }}
        </Transition>
        <div class="filters">
            <div class="tabs" role="tablist">
                {WINDOWS
                    .map(|(value, label, _)| {
                        view! {
                            <button
                                type="button"
                                role="tab"
                                class:active=move || window.read().as_str() == value
                                aria-selected=move || (window.read().as_str() == value).to_string()
                                on:click=move |_| window.set(value.to_string())
                            >
                                {label}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
        </div>
        {loaded(overview, move |o| {
            // From the figures, not the tabs: while the next window loads, these stay labelled.
            let heading = WINDOWS.iter().find(|(w, ..)| *w == o.window).map_or("the last hour", |w| w.2);
            let slowest = {
                let mut tools = o.tools.clone();
                tools.retain(|t| t.p95_ms.is_some());
                tools.sort_by(|a, b| b.p95_ms.unwrap_or(0.0).total_cmp(&a.p95_ms.unwrap_or(0.0)));
                tools.truncate(10);
                tools
            };
            let failing = {
                let mut tools: Vec<Usage> = o.tools.iter().filter(|t| t.errors > 0).cloned().collect();
                tools.sort_by(|a, b| b.errors.cmp(&a.errors).then(a.name.cmp(&b.name)));
                tools.truncate(10);
                tools
            };
            // Tools and servers have pages for owners; built-in sources have none.
            let owner = o.servers.is_some();
            let tool_link = move |name: &str| owner.then(|| format!("/tools?q={name}"));
            let servers = o.servers.clone().unwrap_or_default();
            let server_link = move |name: &str| servers.iter().any(|(s, _)| s == name).then(|| format!("/servers/{name}"));
            view! {
                <section class="card">
                    <div class="card-head">
                        <h2>{format!("Calls in {heading}")}</h2>
                        <label>
                            "Tenant "
                            <select name="dashboard-tenant" prop:value=move || tenant.get() on:change=move |ev| tenant.set(event_target_value(&ev))>
                                <option value="">"Every tenant"</option>
                                {o.choices.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                    </div>
                    {chart(&o.bars, heading)}
                    {o.losses.iter().map(|loss| view! { <p class="notice warning">{loss.clone()}</p> }).collect_view()}
                </section>
                <div class="cards">
                    {(!o.limits.is_empty()).then(|| limits_card(o.limits))}
                    {o.servers.map(servers_card)}
                    <section class="card">
                        <h2>"Per tenant"</h2>
                        {usage_table(o.tenants, "Tenant", |name| Some(format!("/tenants/{name}")))}
                    </section>
                    <section class="card">
                        <h2>"Per server and built-in source"</h2>
                        {usage_table(o.sources, "Source", server_link)}
                    </section>
                </div>
                <div class="cards">
                    <section class="card">
                        <h2>{format!("Slowest tools ({heading})")}</h2>
                        {usage_table(slowest, "Tool", tool_link)}
                    </section>
                    <section class="card">
                        <h2>{format!("Most failing tools ({heading})")}</h2>
                        {usage_table(failing, "Tool", tool_link)}
                    </section>
                </div>
            }
            .into_any()
        })}
    }
}

/// A bar `percent` of the cell wide; drawn, not styled: the page's policy admits no inline
/// style.
fn meter(percent: f64) -> impl IntoView {
    view! {
        <svg class="meter" viewBox="0 0 100 4" preserveAspectRatio="none" aria-hidden="true">
            <rect width=percent height="4" />
        </svg>
    }
}

/// Each rate limit with its use, the nearest to its limit first.
fn limits_card(mut limits: Vec<LimitRow>) -> AnyView {
    let share = |l: &LimitRow| l.used as f64 / f64::from(l.max);
    limits.sort_by(|a, b| share(b).total_cmp(&share(a)));
    view! {
        <section class="card">
            <h2>"Limits now"</h2>
            <table class="grid usage limits">
                <thead>
                    <tr><th>"Tenant"</th><th>"Whose"</th><th>"Calls"</th></tr>
                </thead>
                <tbody>
                    {limits
                        .into_iter()
                        .map(|l| {
                            let full = l.used >= u64::from(l.max);
                            let drawn = (100.0 * share(&l)).min(100.0);
                            let window = if l.per == "minute" { "this minute" } else { "today" };
                            let label = format!("{} of {} {window}", l.used, l.max);
                            view! {
                                <tr>
                                    <td><a href=format!("/tenants/{}", l.tenant)>{l.tenant.clone()}</a></td>
                                    <td>{l.whose}</td>
                                    <td class:failing=full>
                                        {label}
                                        {meter(drawn)}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </section>
    }
    .into_any()
}

/// Every server by name with its status, troubled ones first.
fn servers_card(mut servers: Vec<(String, String)>) -> AnyView {
    servers.sort_by_key(|(name, status)| (status == "ready", name.clone()));
    view! {
        <section class="card">
            <h2>"Servers"</h2>
            {if servers.is_empty() {
                view! { <p class="muted">"No server registered. " <a href="/servers">"Register one"</a></p> }.into_any()
            } else {
                view! {
                    <ul class="plain">
                        {servers
                            .into_iter()
                            .map(|(name, status)| {
                                view! { <li><a href=format!("/servers/{name}")>{name.clone()}</a> " " <StatusBadge status /></li> }
                            })
                            .collect_view()}
                    </ul>
                }
                    .into_any()
            }}
        </section>
    }
    .into_any()
}
