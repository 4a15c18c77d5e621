//! Tool groups: named sets of tools (and of prompts, resources and templates), active by
//! default or not, switched per tenant on the tenant's page.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::tenants::ItemKey;
use super::ui::{Confirm, ErrorNote, action_error, loaded, succeeded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    pub name: String,
    pub description: String,
    pub active_by_default: bool,
    /// Member tool ids.
    pub tools: Vec<String>,
    /// Member prompts, resources and templates.
    pub items: Vec<ItemKey>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupsView {
    pub groups: Vec<GroupRow>,
    /// Every tool: (id, exposed name, its source).
    pub tools: Vec<(String, String, String)>,
    /// Every prompt, resource and template the servers offer.
    pub items: Vec<ItemKey>,
}

#[server]
pub async fn load_groups() -> Result<GroupsView, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let tools = engine::service::servers::tools(&state, &owner).await?;
    let groups = engine::service::global::groups(&state, &owner).await?;
    let members = engine::service::global::group_items(&state, &owner).await?;
    let items = engine::service::global::offered_items(&state, &owner).await?;
    Ok(GroupsView {
        groups: groups
            .into_iter()
            .map(|g| GroupRow {
                tools: tools
                    .iter()
                    .filter(|t| t.groups.contains(&g.name))
                    .map(|t| t.id.to_string())
                    .collect(),
                items: members
                    .iter()
                    .filter(|(group, _)| *group == g.name)
                    .map(|(_, item)| ItemKey::from(item.clone()))
                    .collect(),
                name: g.name,
                description: g.description,
                active_by_default: g.active_by_default,
            })
            .collect(),
        tools: tools.into_iter().map(|t| (t.id.to_string(), t.exposed_name, t.source)).collect(),
        items: {
            // A member its server no longer lists stays choosable, to be let go.
            let mut all: Vec<ItemKey> =
                items.into_iter().map(|offered| ItemKey::from(offered.item)).collect();
            for (_, member) in members {
                let member = ItemKey::from(member);
                if !all.contains(&member) {
                    all.push(member);
                }
            }
            all
        },
    })
}

/// Creates or updates a group with exactly `tools` (ids, comma-separated) and `items` as
/// members.
#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_group(
    name: String,
    description: String,
    active_by_default: bool,
    tools: String,
    items: Vec<ItemKey>,
    create: bool,
) -> Result<(), PanelError> {
    use crate::server::{comma_list, owner, state};
    use engine::service::global;
    let owner = owner().await?;
    let state = state();
    let name = engine::model::Name::parse(name.trim()).map_err(engine::Error::from)?;
    let members = comma_list(&tools)
        .iter()
        .map(|id| id.parse::<uuid::Uuid>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PanelError::invalid("a member is not a tool id"))?;
    // A new group never replaces one of the same name; an edit is chosen on the group's row.
    let items = items.into_iter().map(crate::pages::tenants::item_ref).collect::<Result<Vec<_>, _>>()?;
    global::put_group(&state, &owner, &name, description.trim(), active_by_default, !create).await?;
    global::set_members(&state, &owner, &name, &members).await?;
    Ok(global::set_item_members(&state, &owner, &name, &items).await?)
}

#[server]
pub async fn delete_group(name: String) -> Result<(), PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let name = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    Ok(engine::service::global::delete_group(&state(), &owner, &name).await?)
}

#[component]
pub fn GroupsPage() -> impl IntoView {
    let save = ServerAction::<SaveGroup>::new();
    let remove = ServerAction::<DeleteGroup>::new();
    let (saved, removed) = (succeeded(save), succeeded(remove));
    let groups = Resource::new(move || (saved.get(), removed.get()), |_| load_groups());
    // The editor: a new group, or the one chosen below.
    let name = RwSignal::new(String::new());
    let description = RwSignal::new(String::new());
    let active = RwSignal::new(true);
    let members = RwSignal::new(Vec::<String>::new());
    let item_members = RwSignal::new(Vec::<ItemKey>::new());
    let tool_filter = RwSignal::new(String::new());
    // Whether the form edits the group chosen below (its name fixed) or makes a new one.
    let editing = RwSignal::new(false);
    let new_group = move || {
        editing.set(false);
        name.set(String::new());
        description.set(String::new());
        active.set(true);
        members.set(Vec::new());
        item_members.set(Vec::new());
    };
    // A saved group leaves an empty form for the next one.
    Effect::new(move |_| {
        if saved.get() > 0 {
            new_group();
        }
    });
    let edit = move |g: GroupRow| {
        editing.set(true);
        name.set(g.name);
        description.set(g.description);
        active.set(g.active_by_default);
        members.set(g.tools);
        item_members.set(g.items);
    };
    view! {
        <Title text="Groups" />
        <h1>"Groups"</h1>
        <p class="muted">"A tool, prompt or resource in groups is visible to a tenant when one of its groups is active for that tenant; tenants switch groups on their page."</p>
        {loaded(
            groups,
            move |view_data| {
                let tools = StoredValue::new(view_data.tools.clone());
                let name_of = move |id: &String| tools.with_value(|t| t.iter().find(|(i, ..)| i == id).map(|(_, n, _)| n.clone()).unwrap_or_default());
                view! {
                    {if view_data.groups.is_empty() {
                        view! { <p class="muted">"No group yet."</p> }.into_any()
                    } else {
                        view! {
                            <div class="scroll">
                            <table class="grid">
                                <thead><tr><th>"Group"</th><th>"By default"</th><th>"Tools"</th><th>"Prompts and resources"</th><th></th></tr></thead>
                                <tbody>
                                    {view_data.groups.into_iter().map(|g| {
                                        let (chosen, gone) = (g.clone(), g.name.clone());
                                        let members = match g.tools.len() {
                                            1 => "its 1 tool becomes".to_string(),
                                            n => format!("its {n} tools become"),
                                        };
                                        let warning = format!("Delete `{}`: {members} visible to every tenant", g.name);
                                        view! {
                                            <tr>
                                                <td><strong>{g.name.clone()}</strong><div class="muted small">{g.description.clone()}</div></td>
                                                <td>{if g.active_by_default { "active" } else { "inactive" }}</td>
                                                <td>{g.tools.iter().map(name_of).collect::<Vec<_>>().join(", ")}</td>
                                                <td>{g.items.iter().map(ItemKey::label).collect::<Vec<_>>().join(", ")}</td>
                                                <td>
                                                    <button type="button" class="link" on:click=move |_| edit(chosen.clone())>"Edit"</button>
                                                    <Confirm
                                                        ask="Delete…"
                                                        confirm=warning
                                                        keep="Keep it"
                                                        on_confirm=Callback::new(move |_| { remove.dispatch(DeleteGroup { name: gone.clone() }); })
                                                    />
                                                </td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                            </div>
                        }.into_any()
                    }}
                    <section class="card form-card">
                        <h2>{move || if editing.get() { format!("Edit the group {}", name.get()) } else { "New group".to_string() }}</h2>
                        <Show when=move || editing.get()>
                            <p><button type="button" class="link" on:click=move |_| new_group()>"Make a new group instead"</button></p>
                        </Show>
                        <div class="form-grid">
                            <label>"Name"<input type="text" name="group-name" prop:disabled=move || editing.get() prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) /></label>
                            <label>"Description"<input type="text" name="group-description" prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev)) /></label>
                            <label class="check">
                                <input type="checkbox" prop:checked=move || active.get() on:change=move |ev| active.set(event_target_checked(&ev)) />
                                "Active by default"
                            </label>
                        </div>
                        <h3>"Tools"</h3>
                        <input
                            type="search"
                            name="tool-filter"
                            placeholder="Find a tool, prompt or resource"
                            prop:value=move || tool_filter.get()
                            on:input=move |ev| tool_filter.set(event_target_value(&ev))
                        />
                        <div class="switches">
                            {view_data.tools.into_iter().map(|(id, tool, source)| member_switch(members, id, tool, Some(source), tool_filter)).collect_view()}
                        </div>
                        {(!view_data.items.is_empty()).then(|| view! {
                            <h3>"Prompts and resources"</h3>
                            <div class="switches group-items">
                                {view_data.items.into_iter().map(|item| {
                                    let label = item.label();
                                    member_switch(item_members, item, label, None, tool_filter)
                                }).collect_view()}
                            </div>
                        })}
                        <div class="actions">
                            <button
                                type="button"
                                class="primary"
                                disabled=move || save.pending().get()
                                on:click=move |_| {
                                    save.dispatch(SaveGroup { name: name.get(), description: description.get(), active_by_default: active.get(), tools: members.get().join(","), items: item_members.get(), create: !editing.get() });
                                }
                            >
                                "Save group"
                            </button>
                        </div>
                        <ErrorNote error=action_error(save) />
                        <ErrorNote error=action_error(remove) />
                    </section>
                }
            },
        )}
    }
}

/// A switch that makes `value` a member (of `members`) or not, named `label` (with `detail`
/// beside it), hidden while `filter` is not part of its label.
fn member_switch<T: Clone + PartialEq + Send + Sync + 'static>(
    members: RwSignal<Vec<T>>,
    value: T,
    label: String,
    detail: Option<String>,
    filter: RwSignal<String>,
) -> impl IntoView {
    let lowered = label.to_lowercase();
    let hidden = move || !lowered.contains(&filter.read().trim().to_lowercase());
    let checked = value.clone();
    view! {
        <label class="switch" class:hidden=hidden>
            <input
                type="checkbox"
                prop:checked=move || members.read().contains(&checked)
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    members.update(|m| {
                        m.retain(|x| x != &value);
                        if on {
                            m.push(value.clone());
                        }
                    });
                }
            />
            <span>{label}</span>
            {detail.map(|detail| view! { <span class="muted small">{detail}</span> })}
        </label>
    }
}
