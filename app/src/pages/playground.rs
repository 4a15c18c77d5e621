//! The playground: pick a tenant and one of its tools, fill in a form generated from the
//! schema its LLM sees (or raw JSON), and run it through the same execution path as real
//! calls, answering what the tool's server asks meanwhile ([`asked`]). Recent runs can be
//! replayed or edited. A search box shows what an agent searching the tenant's tools would find
//! ([`search`]). Below, the tenant's prompts and resources ([`items`]).
//!
//! This file is the page and its wiring; the arguments form is [`form`], the raw JSON editor
//! [`raw`], the run's stream (progress and result) [`stream`], and the recent runs [`history`].

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ui::ErrorNote;
use crate::error::PanelError;

mod asked;
mod form;
mod history;
mod items;
mod raw;
mod search;
mod stream;
#[cfg(feature = "ssr")]
pub use asked::Questions;
use asked::{Messages, OpenQuestions};
use form::{field, initial};
use history::{History, PastRun, playground_history};
use items::PromptsAndResources;
use raw::RawArguments;
use search::ToolSearch;
use stream::{Live, RunProgress, RunResult, outcome, run_tool};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayTool {
    pub name: String,
    pub description: String,
    /// The input schema the tenant's LLM sees.
    pub schema: Value,
}

#[server]
pub async fn playground_tenants() -> Result<Vec<String>, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenants = engine::service::tenants::list(&state(), &caller).await?;
    Ok(tenants.into_iter().map(|t| t.slug).collect())
}

#[server]
pub async fn playground_tools(tenant: String) -> Result<Vec<PlayTool>, PanelError> {
    use crate::server::{caller, state};
    if tenant.is_empty() {
        return Ok(Vec::new());
    }
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    let snapshot = state().catalog.snapshot();
    Ok(snapshot
        .tenant(tenant.slug().as_str())
        .map(|view| view.tools())
        .unwrap_or_default()
        .iter()
        .map(|t| PlayTool {
            name: t.exposed_name.clone(),
            description: t.description.clone(),
            schema: t.input_schema.value(),
        })
        .collect())
}

/// What a run was made with: the result on screen is stale once the choices differ.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    tenant: String,
    tool: String,
    arguments: Value,
}

impl Run {
    /// Whether this run was made with exactly these choices.
    fn made_with(&self, tenant: &str, tool: Option<&PlayTool>, arguments: &Value) -> bool {
        self.tenant == tenant && tool.is_some_and(|t| t.name == self.tool) && &self.arguments == arguments
    }
}

#[component]
pub fn PlaygroundPage() -> impl IntoView {
    let tenants = Resource::new(|| (), |_| playground_tenants());
    // `?tenant=…&tool=…` (the tool page's "Try it") opens on that tool.
    let query = leptos_router::hooks::use_query_map();
    let tenant = RwSignal::new(query.read_untracked().get("tenant").unwrap_or_default());
    let wanted = StoredValue::new(query.read_untracked().get("tool"));
    let tools = Resource::new(move || tenant.get(), playground_tools);
    let tool = RwSignal::new(None::<PlayTool>);
    let arguments = RwSignal::new(json!({}));
    let raw_tab = RwSignal::new(false);
    let raw_error = RwSignal::new(None::<String>);
    let live = Live {
        progress: RwSignal::new(None),
        asked: RwSignal::new(Vec::new()),
        notices: RwSignal::new(Vec::new()),
    };
    let run = Action::new_local(move |entry: &Run| {
        let entry = entry.clone();
        async move {
            live.progress.set(None);
            live.notices.set(Vec::new());
            let events = run_tool(entry.tenant, entry.tool, entry.arguments.to_string()).await?;
            let ended = outcome(events, live).await;
            live.asked.set(Vec::new());
            ended
        }
    });
    // The tenant's recorded runs as the tenant was chosen, and the runs made here since.
    let recorded = Resource::new(move || tenant.get(), playground_history);
    let made_here = RwSignal::new(Vec::<PastRun>::new());
    Effect::new(move |_| {
        tenant.track();
        made_here.set(Vec::new());
    });
    let pending_run = StoredValue::new(None::<Run>);
    let shown = RwSignal::new(None::<Run>);
    // Dropping the run's future ends its request, and with it the call on the server.
    let under_way = StoredValue::new(None::<ActionAbortHandle>);
    let cancelled = RwSignal::new(false);
    let cancel = move || {
        if let Some(handle) = under_way.try_update_value(Option::take).flatten() {
            handle.abort();
            live.asked.set(Vec::new());
            cancelled.set(true);
        }
        if let Some(entry) = pending_run.try_update_value(Option::take).flatten() {
            let past = PastRun {
                at: "just now".into(),
                tool: entry.tool,
                by: "you".into(),
                arguments: entry.arguments,
                status: "cancelled".into(),
                latency_ms: 0.0,
            };
            made_here.update(|h| h.insert(0, past));
        }
    };

    Effect::new(move |_| {
        let Some(Ok(list)) = tools.get() else { return };
        if let Some(found) = wanted.get_value().and_then(|name| list.into_iter().find(|t| t.name == name)) {
            arguments.set(initial(&found.schema));
            tool.set(Some(found));
        }
        wanted.set_value(None);
    });
    // Runs the chosen tool of the chosen tenant with the current arguments.
    let start = move || {
        let Some(chosen) = tool.get() else { return };
        let entry = Run { tenant: tenant.get(), tool: chosen.name, arguments: arguments.get() };
        cancelled.set(false);
        under_way.set_value(Some(run.dispatch(entry.clone())));
        pending_run.set_value(Some(entry));
    };
    // Each finished run goes to the history, newest first, and is what the result shows.
    Effect::new(move |_| {
        let Some(result) = run.value().get() else { return };
        let Some(entry) = pending_run.get_value() else { return };
        pending_run.set_value(None);
        under_way.set_value(None);
        if let Ok(outcome) = result {
            let past = PastRun {
                at: outcome.at,
                tool: entry.tool.clone(),
                by: "you".into(),
                arguments: entry.arguments.clone(),
                status: outcome.status,
                latency_ms: outcome.latency_ms,
            };
            made_here.update(|h| h.insert(0, past));
        }
        shown.set(Some(entry));
    });
    // The result on screen is stale once the tenant, the tool or the arguments differ from
    // the run that produced it.
    let stale = move || {
        shown.with(|run| {
            run.as_ref().is_some_and(|run| {
                tool.with(|t| arguments.with(|a| !run.made_with(&tenant.read(), t.as_ref(), a)))
            })
        })
    };
    // A replay puts back the tool and the arguments together (the history is the chosen
    // tenant's), then runs them, or leaves them to edit first.
    let replay_error = RwSignal::new(None::<String>);
    let replay = move |past: PastRun, now: bool| {
        let offered =
            tools.get().and_then(Result::ok).and_then(|list| list.into_iter().find(|t| t.name == past.tool));
        let Some(found) = offered else {
            replay_error.set(Some(format!("`{}` is no longer offered to this tenant", past.tool)));
            return;
        };
        replay_error.set(None);
        raw_error.set(None);
        tool.set(Some(found));
        arguments.set(past.arguments);
        if now {
            start();
        }
    };
    let choose_tool = move |name: String| {
        let found =
            tools.get().and_then(Result::ok).and_then(|list| list.into_iter().find(|t| t.name == name));
        if let Some(found) = &found {
            arguments.set(initial(&found.schema));
        }
        tool.set(found);
    };
    // A tool a search found may be newer than the list loaded: the list is read again for it.
    let choose_found = move |name: String| {
        let loaded = tools.get_untracked().and_then(Result::ok);
        if loaded.is_some_and(|list| list.iter().any(|t| t.name == name)) {
            choose_tool(name);
        } else {
            wanted.set_value(Some(name));
            tools.refetch();
        }
    };

    view! {
        <Title text="Playground" />
        <h1>"Playground"</h1>
        <div class="filters">
            <label>
                "Tenant "
                <select name="tenant" prop:value=move || tenant.get() on:change=move |ev| { tenant.set(event_target_value(&ev)); tool.set(None); }>
                    <option value="">"Choose…"</option>
                    <Transition fallback=|| ()>
                        {move || {
                            tenants.get().and_then(Result::ok).unwrap_or_default().into_iter()
                                .map(|t| {
                                    let (value, this) = (t.clone(), t.clone());
                                    view! { <option value=value selected=move || tenant.read() == this>{t}</option> }
                                })
                                .collect_view()
                        }}
                    </Transition>
                </select>
            </label>
            <label>
                "Tool "
                <select name="tool" prop:value=move || tool.get().map(|t| t.name).unwrap_or_default() on:change=move |ev| choose_tool(event_target_value(&ev))>
                    <option value="">"Choose…"</option>
                    <Transition fallback=|| ()>
                        {move || {
                            tools.get().and_then(Result::ok).unwrap_or_default().into_iter()
                                .map(|t| {
                                    let (value, this) = (t.name.clone(), t.name.clone());
                                    let chosen = move || tool.read().as_ref().is_some_and(|c| c.name == this);
                                    view! { <option value=value selected=chosen>{t.name}</option> }
                                })
                                .collect_view()
                        }}
                    </Transition>
                </select>
            </label>
        </div>
        <ToolSearch tenant choose=choose_found />
        {move || {
            tool.get()
                .map(|chosen| {
                    let schema = chosen.schema.clone();
                    view! {
                        <section class="card">
                            <p class="description">{chosen.description.clone()}</p>
                            <div class="tabs" role="tablist">
                                <button type="button" role="tab" class:active=move || !raw_tab.get() on:click=move |_| raw_tab.set(false)>"Form"</button>
                                <button type="button" role="tab" class:active=move || raw_tab.get() on:click=move |_| raw_tab.set(true)>"Raw JSON"</button>
                            </div>
                            <Show
                                when=move || raw_tab.get()
                                fallback=move || field(Vec::new(), String::new(), schema.clone(), false, arguments)
                            >
                                <RawArguments arguments raw_error />
                            </Show>
                            <div class="actions">
                                <button type="button" class="primary" disabled=move || run.pending().get() on:click=move |_| start()>
                                    {move || if run.pending().get() { "Running…" } else { "Run" }}
                                </button>
                                <Show when=move || run.pending().get()>
                                    <button type="button" class="cancel-run" on:click=move |_| cancel()>"Cancel"</button>
                                    <RunProgress progress=live.progress />
                                </Show>
                            </div>
                        </section>
                    }
                    .into_any()
                })
        }}
        <OpenQuestions asked=live.asked />
        <ErrorNote error=move || run.value().get().and_then(Result::err).map(|err| err.to_string()) />
        <Show when=move || cancelled.get() && !run.pending().get()>
            <p class="notice" role="status">"Cancelled: the call was stopped, at its server too, and is recorded as cancelled."</p>
        </Show>
        {move || {
            run.value().get().and_then(Result::ok).map(|outcome| view! { <RunResult outcome stale /> }.into_any())
        }}
        <Messages notices=live.notices />
        <ErrorNote error=move || replay_error.get() />
        <History recorded made_here replay />
        <PromptsAndResources tenant />
    }
}
