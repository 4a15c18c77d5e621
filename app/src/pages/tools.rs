//! The tool catalog with search and filters, and a tool's schema inspector: the raw schema,
//! the one a tenant's LLM sees, each provider's rendering and what each provider would reject.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::items::CatalogItems;
use super::ui::{
    ErrorNote, JsonBlock, StatusBadge, action_error, counted, filters_in_address, grid, loaded, seen_by,
    succeeded,
};
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
    /// The tenants whose LLMs see it now.
    pub tenants: Vec<String>,
}

#[server]
pub async fn list_tools() -> Result<Vec<ToolRow>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let tools = engine::service::servers::tools(&state, &owner).await?;
    let mut seen_by = engine::service::servers::seen_by(&state, &owner);
    Ok(tools
        .into_iter()
        .map(|t| ToolRow {
            tenants: seen_by.remove(&t.id).unwrap_or_default(),
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

/// What a bulk action does to the chosen tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bulk {
    /// For one tenant (an override each, keeping the rest of it).
    Enable,
    Disable,
    AddToGroup,
}

/// Where bulk actions may go: (tenants, groups).
#[server]
pub async fn bulk_targets() -> Result<(Vec<String>, Vec<String>), PanelError> {
    use crate::server::{caller, state};
    // Signed in once: the caller's tenants, and as owner the groups.
    let caller = caller().await?;
    let owner = caller.owner()?;
    let state = state();
    let tenants = engine::service::tenants::list(&state, &caller).await?;
    let groups = engine::service::global::groups(&state, &owner).await?;
    Ok((tenants.into_iter().map(|t| t.slug).collect(), groups.into_iter().map(|g| g.name).collect()))
}

/// Applies `action` to the tools `ids` for `target` (a tenant, or a group); says what it did.
/// In JSON, like every server function taking a list (see `save_groups`).
#[server(input = leptos::server_fn::codec::Json)]
pub async fn bulk_tools(action: Bulk, target: String, ids: Vec<String>) -> Result<String, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let owner = caller.owner()?;
    let state = state();
    let tools = ids
        .iter()
        .map(|id| id.parse::<uuid::Uuid>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PanelError::invalid("a chosen tool is not a tool id"))?;
    if tools.is_empty() {
        return Err(PanelError::invalid("choose at least one tool"));
    }
    if target.is_empty() {
        return Err(PanelError::invalid(match action {
            Bulk::AddToGroup => "choose a group",
            Bulk::Enable | Bulk::Disable => "choose a tenant",
        }));
    }
    let count = tools.len();
    Ok(match action {
        Bulk::Enable | Bulk::Disable => {
            let tenant = caller.tenant(&target)?;
            let enabled = action == Bulk::Enable;
            engine::service::tenants::set_enabled(&state, &tenant, &tools, enabled).await?;
            format!("{count} tools {} for {target}.", if enabled { "enabled" } else { "disabled" })
        }
        Bulk::AddToGroup => {
            let group = engine::model::Name::parse(&target).map_err(engine::Error::from)?;
            let added = engine::service::global::add_members(&state, &owner, &group, &tools).await?;
            format!("{added} of {count} tools added to {target} (the others were in it).")
        }
    })
}

/// The bar acting on the chosen tools: enable or disable them for a tenant, or add them to a
/// group.
#[component]
fn BulkBar(chosen: RwSignal<Vec<String>>, action: ServerAction<BulkTools>) -> impl IntoView {
    let targets = Resource::new(|| (), |_| bulk_targets());
    let tenant = RwSignal::new(String::new());
    let group = RwSignal::new(String::new());
    let run = move |bulk: Bulk| {
        let target = if bulk == Bulk::AddToGroup { group.get() } else { tenant.get() };
        action.dispatch(BulkTools { action: bulk, target, ids: chosen.get() });
    };
    let busy = move || action.pending().get() || chosen.read().is_empty();
    let options = |names: Vec<String>| {
        names
            .into_iter()
            .map(|n| {
                let value = n.clone();
                view! { <option value=value>{n}</option> }
            })
            .collect_view()
    };
    view! {
        <div class="filters bulk">
            <span class="muted">{move || format!("{} chosen:", chosen.read().len())}</span>
            <Transition fallback=|| ()>
                {move || targets.get().and_then(Result::ok).map(|(tenants, groups)| view! {
                    <select name="bulk-tenant" on:change=move |ev| tenant.set(event_target_value(&ev))>
                        <option value="">"Tenant…"</option>
                        {options(tenants)}
                    </select>
                    <button type="button" disabled=busy on:click=move |_| run(Bulk::Enable)>"Enable"</button>
                    <button type="button" disabled=busy on:click=move |_| run(Bulk::Disable)>"Disable"</button>
                    <select name="bulk-group" on:change=move |ev| group.set(event_target_value(&ev))>
                        <option value="">"Group…"</option>
                        {options(groups)}
                    </select>
                    <button type="button" disabled=busy on:click=move |_| run(Bulk::AddToGroup)>"Add to group"</button>
                })}
            </Transition>
        </div>
        {move || action.value().get().and_then(Result::ok).map(|said| view! { <p class="notice ok" role="status">{said}</p> })}
        <ErrorNote error=action_error(action) />
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InspectorView {
    pub tool_id: String,
    /// The tenants (of the caller's) that see the tool.
    pub tenants: Vec<String>,
    pub tenant: Option<String>,
    pub provider: String,
    /// The inspection for `tenant` (without one, the tool as its source declares it) and
    /// `provider`: tool, raw, llm_schema, normalised, rendering, findings.
    pub inspection: Option<Value>,
    /// The tool as `tenant` sees it (or as its source declares it).
    pub facts: Option<ToolFacts>,
}

/// What the tool page says of the tool besides its schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolFacts {
    /// The name the tenant calls it by.
    pub name: String,
    pub source: String,
    /// Its source is an MCP server (with a page of its own).
    pub from_server: bool,
    pub tags: Vec<String>,
    pub approx_tokens: usize,
    /// The `ui://` resource of the app it opens (MCP Apps), as the tenant reads it.
    pub app: Option<String>,
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
    let mut seen_by: Vec<&std::sync::Arc<engine::service::catalog::TenantTools>> = snapshot
        .tenants()
        .filter(|view| caller.scope().allows(&view.slug) && view.tools().iter().any(|t| t.tool_id == id))
        .collect();
    seen_by.sort_by(|a, b| a.slug.cmp(&b.slug));
    let chosen = seen_by.iter().find(|v| v.slug == tenant).or(seen_by.first());
    // A tool no tenant sees yet is shown to owners as its source declares it.
    let tool = match chosen {
        Some(view) => view.tools().iter().find(|t| t.tool_id == id),
        None if caller.owner().is_ok() => snapshot.untenanted(id),
        None => None,
    };
    let facts = tool.map(|t| ToolFacts {
        name: t.exposed_name.clone(),
        source: t.source_name.clone(),
        from_server: t.source_kind == engine::model::SourceKind::Mcp,
        tags: t.tags.clone(),
        approx_tokens: t.approx_tokens(),
        app: t.meta.as_deref().and_then(engine::service::catalog::apps::resource_uri).map(str::to_string),
    });
    let inspection = match tool {
        Some(tool) => Some(
            serde_json::to_value(
                tool.inspect(provider, chosen.is_some_and(|view| view.portable_mcp_schemas))
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
        facts,
    })
}

/// The catalog's filters, as they are named in its address.
const FILTERS: [&str; 5] = ["q", "source", "tag", "group", "status"];

#[component]
pub fn ToolsPage() -> impl IntoView {
    let bulk = ServerAction::<BulkTools>::new();
    let bulk_done = succeeded(bulk);
    let tools = Resource::new(move || bulk_done.get(), |_| list_tools());
    let chosen = RwSignal::new(Vec::<String>::new());
    let [search, source, tag, group, state] = filters_in_address("/tools", FILTERS);
    view! {
        <Title text="Tools" />
        <h1>"Tools"</h1>
        <BulkBar chosen action=bulk />
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
                        <input type="search" placeholder="Search names and descriptions" prop:value=move || search.get() on:input=move |ev| search.set(event_target_value(&ev)) />
                        <select name="source" prop:value=move || source.get() on:change=move |ev| source.set(event_target_value(&ev))>
                            <option value="">"Every source"</option>
                            {sources}
                        </select>
                        <select name="tag" prop:value=move || tag.get() on:change=move |ev| tag.set(event_target_value(&ev))>
                            <option value="">"Every tag"</option>
                            {tags}
                        </select>
                        <select name="group" prop:value=move || group.get() on:change=move |ev| group.set(event_target_value(&ev))>
                            <option value="">"Every group"</option>
                            {groups}
                        </select>
                        <select name="status" prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev))>
                            <option value="">"Any status"</option>
                            <option value="served">"Served"</option>
                            <option value="held">"Held"</option>
                            <option value="pending">"Change pending"</option>
                            <option value="disabled">"Source disabled"</option>
                        </select>
                    </div>
                    <p class="muted small">{move || counted(shown().len() as i64, "tool")}</p>
                    <Show when=move || !shown().is_empty() fallback=|| view! { <p class="muted">"No tool matches these filters."</p> }>
                    <div class="scroll">
                    <table class="grid">
                        <thead>
                            <tr>
                                <th>
                                    <input
                                        type="checkbox"
                                        aria-label="Choose every tool shown"
                                        on:change=move |ev| {
                                            let all = event_target_checked(&ev);
                                            chosen.set(if all { shown().into_iter().map(|t| t.id).collect() } else { Vec::new() });
                                        }
                                    />
                                </th>
                                <th>"Name"</th>
                                <th>"Source"</th>
                                <th>"Tags"</th>
                                <th>"Groups"</th>
                                <th>"Status"</th>
                                <th>"Seen by"</th>
                                <th>"Description"</th>
                            </tr>
                        </thead>
                        <tbody>
                            <For each=shown key=|t| t.id.clone() let:t>
                                <tr>
                                    <td>
                                        <input
                                            type="checkbox"
                                            aria-label=format!("Choose {}", t.name)
                                            prop:checked={
                                                let id = t.id.clone();
                                                move || chosen.read().contains(&id)
                                            }
                                            on:change={
                                                let id = t.id.clone();
                                                move |ev| {
                                                    let on = event_target_checked(&ev);
                                                    chosen.update(|c| {
                                                        c.retain(|x| x != &id);
                                                        if on {
                                                            c.push(id.clone());
                                                        }
                                                    });
                                                }
                                            }
                                        />
                                    </td>
                                    <td>
                                        <a href=format!("/tools/{}", t.id)>{t.name.clone()}</a>
                                    </td>
                                    <td>{t.source.clone()}</td>
                                    <td>{t.tags.join(", ")}</td>
                                    <td>{t.groups.join(", ")}</td>
                                    <td>
                                        <StatusBadge status=t.state.clone() />
                                    </td>
                                    <td class="seen-by small">{seen_by(t.tenants.clone())}</td>
                                    <td class="description">{t.description.clone()}</td>
                                </tr>
                            </For>
                        </tbody>
                    </table>
                    </div>
                    </Show>
                }
            },
        )}
        <CatalogItems />
    }
}

const PROVIDERS: [(&str, &str); 4] =
    [("mcp", "MCP"), ("openai", "OpenAI"), ("anthropic", "Anthropic"), ("gemini", "Gemini")];

/// What the renderer changed in the schema for the provider: each field as declared and as
/// sent, and the provider's rule behind the change when there is one.
fn render_changes(changes: Vec<Value>) -> AnyView {
    if changes.is_empty() {
        return view! { <p class="notice ok">"Sent as declared: the renderer changed nothing."</p> }
            .into_any();
    }
    let value = |v: &Value| match v {
        Value::Null => view! { <span class="muted">"—"</span> }.into_any(),
        v => view! { <code>{v.to_string()}</code> }.into_any(),
    };
    grid(changes, "", &["Field", "Declared", "Sent", "Why"], move |c| {
        let why = c["why"]
            .as_array()
            .map(|why| why.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("; "));
        view! {
            <tr>
                <td><code>{c["path"].as_str().unwrap_or_default().to_string()}</code></td>
                <td>{value(&c["declared"])}</td>
                <td>{value(&c["sent"])}</td>
                <td class="small">{why.filter(|w| !w.is_empty()).unwrap_or_else(|| "normalised for this provider".into())}</td>
            </tr>
        }
        .into_any()
    })
}

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
                let changes = inspection["changes"].as_array().cloned().unwrap_or_default();
                // On MCP a tenant's clients get the schemas as published unless it chose portable ones.
                let published = inspection["portable"] == false;
                let (changes_heading, rendering_label) = if published {
                    (
                        "What portable schemas on MCP would change",
                        "The tool as this tenant's MCP clients receive it (schemas as published)",
                    )
                } else {
                    ("What the renderer changed for ", "The tool as this provider receives it")
                };
                let facts = view_data.facts.clone().map(|facts| {
                    let source = if facts.from_server {
                        view! { <a href=format!("/servers/{}", facts.source)>{facts.source.clone()}</a> }.into_any()
                    } else {
                        view! { <span>{format!("{} (built in)", facts.source)}</span> }.into_any()
                    };
                    let tags = if facts.tags.is_empty() { "none".to_string() } else { facts.tags.join(", ") };
                    let served = match view_data.tenant.clone() {
                        Some(tenant) => {
                            let try_it = format!("/playground?tenant={tenant}&tool={}", facts.name);
                            view! {
                                <StatusBadge status="served" />
                                {format!(" to {tenant} · ≈ {} tokens · ", facts.approx_tokens)}
                                <a href=try_it>"Try it in the playground"</a>
                            }
                                .into_any()
                        }
                        None => view! {
                            <span class="untenanted">
                                {format!(
                                    "served to no tenant yet: shown as its server declares it, before any tenant's override or presets · ≈ {} tokens",
                                    facts.approx_tokens,
                                )}
                            </span>
                        }
                            .into_any(),
                    };
                    view! {
                        <p class="tool-facts">
                            "From " {source} " · tags: " {tags} " · " {served}
                        </p>
                        {facts.app.map(|uri| {
                            view! {
                                <p class="tool-facts">
                                    "Opens an app where the host shows apps: " <code>{uri}</code>
                                </p>
                            }
                        })}
                    }
                });
                view! {
                    <h1>{inspection["tool"].as_str().unwrap_or_default().to_string()}</h1>
                    {facts}
                    <div class="filters">
                        {(!view_data.tenants.is_empty()).then(|| view! {
                            <label>
                                "As tenant "
                                <select prop:value=view_data.tenant.clone().unwrap_or_default() on:change=move |ev| tenant.set(event_target_value(&ev))>
                                    {view_data.tenants.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                                </select>
                            </label>
                        })}
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
                    <h2>{changes_heading} {(!published).then(|| view_data.provider.clone())}</h2>
                    {published.then(|| view! {
                        <p class="muted">
                            "This tenant's MCP clients get the schema as its server published it, presets removed. \
                             With portable schemas on MCP (the tenant page) they would get the normalised one."
                        </p>
                    })}
                    {render_changes(changes)}
                    <div class="side-by-side">
                        <JsonBlock label="Raw schema (as declared)" value=inspection["raw"].clone() />
                        <JsonBlock label="What the LLM sees (presets removed)" value=inspection["llm_schema"].clone() />
                        <JsonBlock label="Normalised for this provider" value=inspection["normalised"].clone() />
                        <JsonBlock label=rendering_label value=inspection["rendering"].clone() />
                    </div>
                }
                    .into_any()
            },
        )}
    }
}
