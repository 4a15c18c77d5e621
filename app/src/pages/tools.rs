//! The tool catalog with search and filters, and a tool's schema inspector: the raw schema,
//! the one a tenant's LLM sees, each provider's rendering and what each provider would reject.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ui::{JsonBlock, StatusBadge, loaded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRow {
    pub id: String,
    pub name: String,
    pub source: String,
    pub tags: Vec<String>,
    pub groups: Vec<String>,
    pub description: String,
    /// served, held, pending or disabled (its source is).
    pub state: String,
}

#[server]
pub async fn list_tools() -> Result<Vec<ToolRow>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let tools = engine::service::servers::tools(&state(), &owner).await?;
    Ok(tools
        .into_iter()
        .map(|t| ToolRow {
            state: if !t.source_enabled {
                "disabled"
            } else if t.pending {
                "pending"
            } else if t.held {
                "held"
            } else {
                "served"
            }
            .into(),
            id: t.id.to_string(),
            name: t.exposed_name,
            source: t.source,
            tags: t.tags,
            groups: t.groups,
            description: t.description,
        })
        .collect())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InspectorView {
    pub tool_id: String,
    /// The tenants (of the caller's) that see the tool.
    pub tenants: Vec<String>,
    pub tenant: Option<String>,
    pub provider: String,
    /// The inspection for `tenant` and `provider`: tool, raw, llm_schema, normalised,
    /// rendering, findings.
    pub inspection: Option<Value>,
}

#[server]
pub async fn inspect_tool(
    tool_id: String,
    tenant: String,
    provider: String,
) -> Result<InspectorView, PanelError> {
    use axum::http::StatusCode;
    use engine::schema::Provider;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let id: uuid::Uuid =
        tool_id.parse().map_err(|_| PanelError::rejected(StatusCode::NOT_FOUND, "no such tool"))?;
    let provider = Provider::parse(&provider).unwrap_or(Provider::Mcp);
    let snapshot = state().catalog.snapshot();
    let mut seen_by: Vec<&std::sync::Arc<engine::catalog::TenantTools>> = snapshot
        .tenants()
        .filter(|view| caller.scope().allows(&view.slug) && view.tools().iter().any(|t| t.tool_id == id))
        .collect();
    seen_by.sort_by(|a, b| a.slug.cmp(&b.slug));
    let chosen = seen_by.iter().find(|v| v.slug == tenant).or(seen_by.first());
    let inspection = match chosen.and_then(|view| view.tools().iter().find(|t| t.tool_id == id)) {
        Some(tool) => Some(
            serde_json::to_value(
                tool.inspect(provider)
                    .map_err(|e| PanelError::rejected(StatusCode::UNPROCESSABLE_ENTITY, e))?,
            )
            .map_err(|e| PanelError::internal(&e))?,
        ),
        None => None,
    };
    Ok(InspectorView {
        tool_id,
        tenants: seen_by.iter().map(|v| v.slug.clone()).collect(),
        tenant: chosen.map(|v| v.slug.clone()),
        provider: provider.as_str().into(),
        inspection,
    })
}

#[component]
pub fn ToolsPage() -> impl IntoView {
    let tools = Resource::new(|| (), |_| list_tools());
    let search = RwSignal::new(String::new());
    let source = RwSignal::new(String::new());
    let tag = RwSignal::new(String::new());
    let group = RwSignal::new(String::new());
    let state = RwSignal::new(String::new());
    view! {
        <Title text="Tools" />
        <h1>"Tools"</h1>
        {loaded(
            tools,
            move |tools| {
                let options = |pick: fn(&ToolRow) -> Vec<String>| {
                    let mut all: Vec<String> = tools.iter().flat_map(pick).collect();
                    all.sort();
                    all.dedup();
                    all.into_iter().map(|o| view! { <option value=o.clone()>{o.clone()}</option> }).collect_view()
                };
                let sources = options(|t| vec![t.source.clone()]);
                let tags = options(|t| t.tags.clone());
                let groups = options(|t| t.groups.clone());
                let tools = StoredValue::new(tools);
                let shown = move || {
                    let needle = search.get().to_lowercase();
                    tools.with_value(|tools| {
                        tools
                            .iter()
                            .filter(|t| {
                                (needle.is_empty()
                                    || t.name.to_lowercase().contains(&needle)
                                    || t.description.to_lowercase().contains(&needle))
                                    && (source.read().is_empty() || *source.read() == t.source)
                                    && (tag.read().is_empty() || t.tags.contains(&tag.read()))
                                    && (group.read().is_empty() || t.groups.contains(&group.read()))
                                    && (state.read().is_empty() || *state.read() == t.state)
                            })
                            .cloned()
                            .collect::<Vec<_>>()
                    })
                };
                view! {
                    <div class="filters">
                        <input type="search" placeholder="Search names and descriptions" on:input=move |ev| search.set(event_target_value(&ev)) />
                        <select on:change=move |ev| source.set(event_target_value(&ev))>
                            <option value="">"Every source"</option>
                            {sources}
                        </select>
                        <select on:change=move |ev| tag.set(event_target_value(&ev))>
                            <option value="">"Every tag"</option>
                            {tags}
                        </select>
                        <select on:change=move |ev| group.set(event_target_value(&ev))>
                            <option value="">"Every group"</option>
                            {groups}
                        </select>
                        <select on:change=move |ev| state.set(event_target_value(&ev))>
                            <option value="">"Any status"</option>
                            <option value="served">"Served"</option>
                            <option value="held">"Held"</option>
                            <option value="pending">"Change pending"</option>
                            <option value="disabled">"Source disabled"</option>
                        </select>
                    </div>
                    <p class="muted small">{move || format!("{} tools", shown().len())}</p>
                    <table class="grid">
                        <thead>
                            <tr>
                                <th>"Name"</th>
                                <th>"Source"</th>
                                <th>"Tags"</th>
                                <th>"Groups"</th>
                                <th>"Status"</th>
                                <th>"Description"</th>
                            </tr>
                        </thead>
                        <tbody>
                            <For each=shown key=|t| t.id.clone() let:t>
                                <tr>
                                    <td>
                                        <a href=format!("/tools/{}", t.id)>{t.name.clone()}</a>
                                    </td>
                                    <td>{t.source.clone()}</td>
                                    <td>{t.tags.join(", ")}</td>
                                    <td>{t.groups.join(", ")}</td>
                                    <td>
                                        <StatusBadge status=t.state.clone() />
                                    </td>
                                    <td class="description">{t.description.clone()}</td>
                                </tr>
                            </For>
                        </tbody>
                    </table>
                }
            },
        )}
    }
}

const PROVIDERS: [(&str, &str); 4] =
    [("mcp", "MCP"), ("openai", "OpenAI"), ("anthropic", "Anthropic"), ("gemini", "Gemini")];

#[component]
pub fn ToolPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let tenant = RwSignal::new(query.read_untracked().get("tenant").unwrap_or_default());
    let provider = RwSignal::new("mcp".to_string());
    let inspector = Resource::new(
        move || (id(), tenant.get(), provider.get()),
        |(id, tenant, provider)| inspect_tool(id, tenant, provider),
    );
    view! {
        <Title text="Schema inspector" />
        <p>
            <a href="/tools">"← Tools"</a>
        </p>
        {loaded(
            inspector,
            move |view_data| {
                let Some(inspection) = view_data.inspection.clone() else {
                    return view! {
                        <h1>"Schema inspector"</h1>
                        <p class="muted">"No tenant you manage sees this tool, so there is nothing an LLM receives to inspect. Enable it for a tenant first."</p>
                    }
                        .into_any();
                };
                let findings = inspection["findings"].as_array().cloned().unwrap_or_default();
                view! {
                    <h1>{inspection["tool"].as_str().unwrap_or_default().to_string()}</h1>
                    <div class="filters">
                        <label>
                            "As tenant "
                            <select prop:value=view_data.tenant.clone().unwrap_or_default() on:change=move |ev| tenant.set(event_target_value(&ev))>
                                {view_data.tenants.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                        <div class="tabs" role="tablist">
                            {PROVIDERS
                                .iter()
                                .map(|(key, label)| {
                                    let key = *key;
                                    view! {
                                        <button
                                            type="button"
                                            role="tab"
                                            class:active=move || provider.get() == key
                                            aria-selected=move || (provider.get() == key).to_string()
                                            on:click=move |_| provider.set(key.into())
                                        >
                                            {*label}
                                        </button>
                                    }
                                })
                                .collect_view()}
                        </div>
                    </div>
                    <h2>"Findings for " {view_data.provider.clone()}</h2>
                    {if findings.is_empty() {
                        view! { <p class="notice ok">"Nothing this provider rejects."</p> }.into_any()
                    } else {
                        view! {
                            <p class="muted">"What the provider would reject in the schema as declared. The rendering below is normalised, so it is always accepted."</p>
                            <table class="grid findings">
                                <thead>
                                    <tr>
                                        <th>"Pointer"</th>
                                        <th>"Keyword"</th>
                                        <th>"Problem"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {findings
                                        .into_iter()
                                        .map(|f| {
                                            let text = |k: &str| f[k].as_str().unwrap_or_default().to_string();
                                            view! {
                                                <tr>
                                                    <td>
                                                        <code>{match text("pointer") { p if p.is_empty() => "/".to_string(), p => p }}</code>
                                                    </td>
                                                    <td>{text("keyword")}</td>
                                                    <td>{text("message")}</td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        }
                            .into_any()
                    }}
                    <div class="side-by-side">
                        <JsonBlock label="Raw schema (as declared)" value=inspection["raw"].clone() />
                        <JsonBlock label="What the LLM sees (presets removed)" value=inspection["llm_schema"].clone() />
                        <JsonBlock label="Normalised for this provider" value=inspection["normalised"].clone() />
                        <JsonBlock label="The tool as this provider receives it" value=inspection["rendering"].clone() />
                    </div>
                }
                    .into_any()
            },
        )}
    }
}
