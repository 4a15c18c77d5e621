//! The prompts, resources and templates a tenant's MCP clients see, and the tenant's choices
//! for single ones: hide one (which also settles a conflict between two servers), give a
//! prompt another name, describe one differently.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, action_error, grid};

/// One item a server offers: its server, kind (`prompt`, `resource`, `resource_template`)
/// and the server's own key for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemKey {
    pub server: String,
    pub kind: String,
    pub key: String,
}

impl ItemKey {
    /// How people read it: "prompt `x` of server".
    pub fn label(&self) -> String {
        format!("{} `{}` of {}", self.kind.replace('_', " "), self.key, self.server)
    }
}

#[cfg(feature = "ssr")]
impl From<engine::service::tenants::ItemRef> for ItemKey {
    fn from(item: engine::service::tenants::ItemRef) -> Self {
        ItemKey { server: item.server.to_string(), kind: item.kind.as_str().into(), key: item.key }
    }
}

/// A choice as the editor holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemChoice {
    pub item: ItemKey,
    pub enabled: bool,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemView {
    /// "prompt", "resource", "resource template".
    pub kind: String,
    pub name: String,
    pub source: String,
    pub description: String,
    pub approx_tokens: usize,
    pub item: ItemKey,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemConflictView {
    pub kind: String,
    pub name: String,
    /// Each server's item.
    pub items: Vec<ItemKey>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemOverrideView {
    pub choice: ItemChoice,
    /// "prompt", "resource", "resource template".
    pub kind: String,
}

/// The engine's name for `item`.
#[cfg(feature = "ssr")]
pub(crate) fn item_ref(item: ItemKey) -> Result<engine::service::tenants::ItemRef, PanelError> {
    let invalid = |what: &str| PanelError::invalid(format!("which {what}?"));
    Ok(engine::service::tenants::ItemRef {
        server: engine::model::Name::parse(&item.server).map_err(|_| invalid("server"))?,
        kind: serde_json::from_value(serde_json::Value::String(item.kind))
            .map_err(|_| invalid("kind of item"))?,
        key: item.key,
    })
}

#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_item_choice(slug: String, choice: ItemChoice) -> Result<(), PanelError> {
    use engine::service::tenants::ItemOverrideInput;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let input = ItemOverrideInput {
        enabled: Some(choice.enabled),
        name: text(&choice.name),
        description: text(&choice.description),
    };
    engine::service::tenants::set_item_override(&state(), &tenant, &item_ref(choice.item)?, &input).await?;
    Ok(())
}

#[server(input = leptos::server_fn::codec::Json)]
pub async fn clear_item_choice(slug: String, item: ItemKey) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    Ok(engine::service::tenants::clear_item_override(&state(), &tenant, &item_ref(item)?).await?)
}

/// The items the tenant's clients see, its conflicts and its choices, with the editor.
#[component]
pub(super) fn EffectiveItems(
    tenant: TenantView,
    save: ServerAction<SaveItemChoice>,
    clear: ServerAction<ClearItemChoice>,
) -> impl IntoView {
    if tenant.items.is_empty() && tenant.item_conflicts.is_empty() && tenant.item_overrides.is_empty() {
        return ().into_any();
    }
    let slug = StoredValue::new(tenant.slug.clone());
    let chosen = StoredValue::new(tenant.item_overrides.clone());
    // The choice stored for `item`, or a fresh one that serves it as its server lists it.
    let choice_for = move |item: &ItemKey| {
        chosen
            .with_value(|all| all.iter().find(|o| o.choice.item == *item).map(|o| o.choice.clone()))
            .unwrap_or(ItemChoice { item: item.clone(), enabled: true, ..Default::default() })
    };
    let editing = RwSignal::new(None::<ItemChoice>);
    let hide = move |item: ItemKey| {
        let choice = ItemChoice { enabled: false, ..choice_for(&item) };
        save.dispatch(SaveItemChoice { slug: slug.get_value(), choice });
    };
    let tokens: usize = tenant.items.iter().map(|item| item.approx_tokens).sum();
    view! {
        <section class="card" id="items">
            <h2>"Prompts and resources its clients see"</h2>
            <p class="muted">
                {tenant.items.len()} " items, about " {tokens} " tokens of definitions when a client lists them all."
            </p>
            {tenant
                .item_conflicts
                .into_iter()
                .map(|c| {
                    let servers: Vec<&str> = c.items.iter().map(|item| item.server.as_str()).collect();
                    view! {
                        <div class="notice error">
                            <p>
                                {format!(
                                    "Conflict: the {} `{}` is offered by {}. Neither is served until one is hidden for this tenant (or leaves its view: its tags, the ceiling, or a prefix for prompts).",
                                    c.kind,
                                    c.name,
                                    servers.join(" and "),
                                )}
                            </p>
                            {c.items
                                .into_iter()
                                .map(|item| {
                                    let label = format!("Hide {}'s", item.server);
                                    view! { <button type="button" on:click=move |_| hide(item.clone())>{label}</button> " " }
                                })
                                .collect_view()}
                        </div>
                    }
                })
                .collect_view()}
            {grid(tenant.items, "None is served.", &["Kind", "Name", "Source", "Description", "≈ tokens", ""], move |item| {
                let (edited, hidden) = (item.item.clone(), item.item.clone());
                view! {
                    <tr>
                        <td>{item.kind}</td>
                        <td><code>{item.name}</code></td>
                        <td>{item.source}</td>
                        <td class="description">{item.description}</td>
                        <td>{item.approx_tokens}</td>
                        <td class="actions">
                            <button type="button" class="link" on:click=move |_| editing.set(Some(choice_for(&edited)))>"Edit"</button>
                            " "
                            <button type="button" class="link" on:click=move |_| hide(hidden.clone())>"Hide"</button>
                        </td>
                    </tr>
                }
                .into_any()
            })}
            {(!tenant.item_overrides.is_empty()).then(|| view! {
                <h3>"This tenant's choices"</h3>
                <ul class="plain item-choices">
                    {tenant.item_overrides.into_iter().map(|o| {
                        let choice = o.choice;
                        let summary = [
                            (!choice.enabled).then(|| "hidden".to_string()),
                            (!choice.name.is_empty()).then(|| format!("named {}", choice.name)),
                            (!choice.description.is_empty()).then(|| format!("described \"{}\"", choice.description)),
                        ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join("; ");
                        let (edited, cleared) = (choice.clone(), choice.item.clone());
                        view! {
                            <li>
                                {o.kind} " " <code>{choice.item.key.clone()}</code> " of " {choice.item.server.clone()} ": " {summary} " "
                                <button type="button" class="link" on:click=move |_| editing.set(Some(edited.clone()))>"Edit"</button>
                                " "
                                <button type="button" class="link" on:click=move |_| {
                                    clear.dispatch(ClearItemChoice { slug: slug.get_value(), item: cleared.clone() });
                                }>"Remove"</button>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            })}
            <ItemEditor editing save slug=slug.get_value() />
            <ErrorNote error=action_error(save) />
            <ErrorNote error=action_error(clear) />
        </section>
    }
    .into_any()
}

/// The editor of one item's choice, while one is being edited.
#[component]
fn ItemEditor(
    editing: RwSignal<Option<ItemChoice>>,
    save: ServerAction<SaveItemChoice>,
    slug: String,
) -> impl IntoView {
    let slug = StoredValue::new(slug);
    let field =
        move |read: fn(&ItemChoice) -> String| move || editing.read().as_ref().map(read).unwrap_or_default();
    let edit = move |write: fn(&mut ItemChoice, String)| {
        move |ev| {
            let value = event_target_value(&ev);
            editing.update(|choice| {
                if let Some(choice) = choice {
                    write(choice, value)
                }
            })
        }
    };
    let is_prompt = move || editing.read().as_ref().is_some_and(|c| c.item.kind == "prompt");
    view! {
        <Show when=move || editing.read().is_some()>
            <div class="form-grid item-editor">
                <p class="wide">
                    {move || editing.read().as_ref().map(|c| c.item.label())}
                </p>
                <label class="check">
                    <input
                        type="checkbox"
                        name="item-enabled"
                        prop:checked=move || editing.read().as_ref().is_some_and(|c| c.enabled)
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            editing.update(|c| if let Some(c) = c { c.enabled = on });
                        }
                    />
                    "Served to this tenant"
                </label>
                <Show when=is_prompt>
                    <label>
                        "Name (empty = the server's, with its prefix)"
                        <input type="text" name="item-name" prop:value=field(|c| c.name.clone()) on:input=edit(|c, v| c.name = v) />
                    </label>
                </Show>
                <label class="wide">
                    "Description (empty = the server's; at most 8 KiB)"
                    <textarea rows="2" name="item-description" prop:value=field(|c| c.description.clone()) on:input=edit(|c, v| c.description = v)></textarea>
                </label>
                <div class="actions wide">
                    <button
                        type="button"
                        class="primary"
                        disabled=move || save.pending().get()
                        on:click=move |_| {
                            if let Some(choice) = editing.get() {
                                save.dispatch(SaveItemChoice { slug: slug.get_value(), choice });
                            }
                        }
                    >
                        "Save choice"
                    </button>
                    " "
                    <button type="button" on:click=move |_| editing.set(None)>"Cancel"</button>
                </div>
            </div>
        </Show>
    }
}
