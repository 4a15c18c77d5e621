//! The playground's prompts and resources: get one of the tenant's prompts through a form of
//! its arguments, with its server's completions suggested as you type, and read a resource —
//! a listed one, or a URI one of the templates makes — text shown as text, binaries as such.

use std::collections::HashMap;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::stream::content_block;
use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, JsonBlock};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayArgument {
    pub name: String,
    pub description: String,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayPrompt {
    /// Its exposed name.
    pub name: String,
    pub description: String,
    pub arguments: Vec<PlayArgument>,
}

/// A listed resource (`template` false) or a resource template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayResource {
    /// A URI, or a URI template.
    pub uri: String,
    pub description: String,
    pub template: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlayItems {
    pub prompts: Vec<PlayPrompt>,
    pub resources: Vec<PlayResource>,
}

#[server]
pub async fn playground_items(tenant: String) -> Result<PlayItems, PanelError> {
    use crate::server::{caller, state};
    if tenant.is_empty() {
        return Ok(PlayItems::default());
    }
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    let snapshot = state().catalog.snapshot();
    let Some(view) = snapshot.tenant(tenant.slug().as_str()) else { return Ok(PlayItems::default()) };
    let text = |value: &Value, key: &str| value[key].as_str().unwrap_or_default().to_string();
    let prompts = view
        .items
        .prompts()
        .iter()
        .map(|prompt| {
            let definition = &*prompt.definition;
            let arguments = definition["arguments"].as_array().into_iter().flatten();
            PlayPrompt {
                name: prompt.exposed.clone(),
                description: text(definition, "description"),
                arguments: arguments
                    .map(|argument| PlayArgument {
                        name: text(argument, "name"),
                        description: text(argument, "description"),
                        required: argument["required"].as_bool().unwrap_or(false),
                    })
                    .collect(),
            }
        })
        .collect();
    let listed = view.items.resources().iter().map(|r| (r, false));
    let templates = view.items.templates().iter().map(|t| (t, true));
    let resources = listed
        .chain(templates)
        .map(|(item, template)| PlayResource {
            uri: item.exposed.clone(),
            description: text(&item.definition, "description"),
            template,
        })
        .collect();
    Ok(PlayItems { prompts, resources })
}

/// Gets one of the tenant's prompts, filled with `arguments`, as the administrator. (JSON:
/// a form encoding loses an empty map.)
#[server(input = leptos::server_fn::codec::Json)]
pub async fn playground_prompt(
    tenant: String,
    prompt: String,
    arguments: HashMap<String, String>,
) -> Result<Value, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let arguments = arguments.into_iter().filter(|(_, value)| !value.is_empty());
    let arguments = arguments.map(|(name, value)| (name, Value::String(value))).collect();
    let got =
        engine::service::tenants::get_prompt(&state(), &caller.tenant(&tenant)?, &prompt, Some(arguments))
            .await?;
    serde_json::to_value(got).map_err(|e| PanelError::internal(&e))
}

/// What the prompt's server suggests for `argument` starting `value`, the others given.
#[server(input = leptos::server_fn::codec::Json)]
pub async fn playground_complete(
    tenant: String,
    prompt: String,
    argument: String,
    value: String,
    others: HashMap<String, String>,
) -> Result<Vec<String>, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    let typed = (argument.as_str(), value.as_str());
    Ok(engine::service::tenants::complete_prompt_argument(&state(), &tenant, &prompt, typed, others).await?)
}

/// Reads a resource of the tenant, as the administrator.
#[server]
pub async fn playground_read(tenant: String, uri: String) -> Result<Value, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let read = engine::service::tenants::read_resource(&state(), &caller.tenant(&tenant)?, &uri).await?;
    serde_json::to_value(read).map_err(|e| PanelError::internal(&e))
}

/// The prompts and resources of `tenant`, to get and to read.
#[component]
pub fn PromptsAndResources(tenant: RwSignal<String>) -> impl IntoView {
    let items = Resource::new(move || tenant.get(), playground_items);
    view! {
        <Transition fallback=|| ()>
            {move || {
                // The items are refetched when the tenant changes; nothing else redraws them.
                let chosen = !tenant.with_untracked(String::is_empty);
                items.get().and_then(Result::ok).filter(|_| chosen).map(|items| {
                    if items.prompts.is_empty() && items.resources.is_empty() {
                        return view! {
                            <p class="muted">"The tenant's servers offer no prompts or resources."</p>
                        }
                        .into_any();
                    }
                    view! {
                        <h2>"Prompts and resources"</h2>
                        <Prompts tenant prompts=items.prompts />
                        <Resources tenant resources=items.resources />
                    }
                    .into_any()
                })
            }}
        </Transition>
    }
}

#[component]
fn Prompts(tenant: RwSignal<String>, prompts: Vec<PlayPrompt>) -> impl IntoView {
    let chosen = RwSignal::new(None::<PlayPrompt>);
    let values = RwSignal::new(HashMap::<String, String>::new());
    let get = Action::new_local(move |(prompt, values): &(String, HashMap<String, String>)| {
        playground_prompt(tenant.get_untracked(), prompt.clone(), values.clone())
    });
    let offered = StoredValue::new(prompts.clone());
    let choose = move |name: String| {
        values.set(HashMap::new());
        chosen.set(offered.with_value(|list| list.iter().find(|p| p.name == name).cloned()));
    };
    view! {
        <section class="card prompts">
            <label>
                "Prompt "
                <select name="prompt" on:change=move |ev| choose(event_target_value(&ev))>
                    <option value="">"Choose…"</option>
                    {prompts.into_iter().map(|p| view! { <option value=p.name.clone()>{p.name.clone()}</option> }).collect_view()}
                </select>
            </label>
            {move || chosen.get().map(|prompt| {
                let name = prompt.name.clone();
                view! {
                    <p class="description">{prompt.description.clone()}</p>
                    {prompt.arguments.into_iter().map(|argument| argument_field(tenant, name.clone(), argument, values)).collect_view()}
                    <div class="actions">
                        <button type="button" class="primary" disabled=move || get.pending().get()
                            on:click=move |_| { get.dispatch((name.clone(), values.get())); }>
                            "Get prompt"
                        </button>
                    </div>
                }
            })}
            <ErrorNote error=move || get.value().get().and_then(Result::err).map(|err| err.to_string()) />
            {move || get.value().get().and_then(Result::ok).map(|got| {
                let messages = got["messages"].as_array().cloned().unwrap_or_default();
                view! {
                    <div class="prompt-messages">
                        {messages.iter().map(|message| view! {
                            <div class="message">
                                <span class="role muted small">{message["role"].as_str().unwrap_or_default().to_string()}</span>
                                {content_block(&message["content"])}
                            </div>
                        }).collect_view()}
                    </div>
                    <JsonBlock label="Full answer" value=got />
                }
            })}
        </section>
    }
}

/// A text field for one of the prompt's arguments, offering what its server completes the
/// typed beginning to (given the arguments filled so far); an answer to an older beginning
/// that comes late is left out.
fn argument_field(
    tenant: RwSignal<String>,
    prompt: String,
    argument: PlayArgument,
    values: RwSignal<HashMap<String, String>>,
) -> impl IntoView {
    let name = argument.name.clone();
    let suggestions = RwSignal::new(Vec::<String>::new());
    let asked = StoredValue::new(0_u64);
    let list = format!("complete-{name}");
    let typed = move |value: String| {
        values.update(|values| {
            values.insert(name.clone(), value.clone());
        });
        let mut others = values.get_untracked();
        others.remove(&name);
        asked.update_value(|asked| *asked += 1);
        let this = asked.get_value();
        let (prompt, argument) = (prompt.clone(), name.clone());
        leptos::task::spawn_local(async move {
            let completed =
                playground_complete(tenant.get_untracked(), prompt, argument, value, others).await;
            if let Ok(values) = completed
                && asked.get_value() == this
            {
                suggestions.set(values);
            }
        });
    };
    view! {
        <label class="prompt-argument">
            {argument.name.clone()}
            {argument.required.then_some(" (required)")}
            <input type="text" name=format!("prompt-argument-{}", argument.name) list=list.clone() autocomplete="off"
                on:input=move |ev| typed(event_target_value(&ev)) />
            <span class="muted small">{argument.description}</span>
        </label>
        <datalist id=list>
            {move || suggestions.get().into_iter().map(|value| view! { <option value=value></option> }).collect_view()}
        </datalist>
    }
}

#[component]
fn Resources(tenant: RwSignal<String>, resources: Vec<PlayResource>) -> impl IntoView {
    let uri = RwSignal::new(String::new());
    let read = Action::new_local(move |uri: &String| playground_read(tenant.get_untracked(), uri.clone()));
    let (templates, listed): (Vec<_>, Vec<_>) = resources.into_iter().partition(|r| r.template);
    view! {
        <section class="card resources">
            <label>
                "Resource "
                <input type="text" name="resource-uri" list="resource-uris" autocomplete="off" placeholder="a listed URI, or one a template makes"
                    prop:value=move || uri.get() on:input=move |ev| uri.set(event_target_value(&ev)) />
            </label>
            <datalist id="resource-uris">
                {listed.into_iter().map(|r| view! { <option value=r.uri>{r.description}</option> }).collect_view()}
            </datalist>
            {(!templates.is_empty()).then(|| view! {
                <p class="muted small">"Templates (choose one, then fill in its variables): "</p>
                <ul class="templates">
                    {templates.into_iter().map(|t| {
                        let template = t.uri.clone();
                        view! {
                            <li>
                                <button type="button" class="link" on:click=move |_| uri.set(template.clone())>
                                    <code>{t.uri.clone()}</code>
                                </button>
                                " " <span class="muted small">{t.description}</span>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            })}
            <div class="actions">
                <button type="button" class="primary" disabled=move || read.pending().get() || uri.read().is_empty()
                    on:click=move |_| { read.dispatch(uri.get()); }>
                    "Read"
                </button>
            </div>
            <ErrorNote error=move || read.value().get().and_then(Result::err).map(|err| err.to_string()) />
            {move || read.value().get().and_then(Result::ok).map(|read| {
                let contents = read["contents"].as_array().cloned().unwrap_or_default();
                view! {
                    <div class="read-contents">{contents.iter().map(resource_contents).collect_view()}</div>
                    <JsonBlock label="Full answer" value=read />
                }
            })}
        </section>
    }
}

/// One of a read's contents: a text as text, an image as an image, another binary by its size.
fn resource_contents(contents: &Value) -> AnyView {
    let mime = contents["mimeType"].as_str().unwrap_or("application/octet-stream").to_string();
    match (contents["text"].as_str(), contents["blob"].as_str()) {
        (Some(text), _) => view! { <pre class="output">{text.to_string()}</pre> }.into_any(),
        (None, Some(blob)) if mime.starts_with("image/") => {
            view! { <img class="output" src=format!("data:{mime};base64,{blob}") alt="an image the resource holds" /> }
                .into_any()
        }
        (None, Some(blob)) => {
            // Base64: four characters for three bytes, less the padding.
            let bytes = blob.len() / 4 * 3 - blob.chars().rev().take_while(|&c| c == '=').count();
            view! { <p class="binary-contents">{format!("Binary: {bytes} bytes of {mime}")}</p> }.into_any()
        }
        (None, None) => view! { <p class="muted">"Contents without text or data."</p> }.into_any(),
    }
}
