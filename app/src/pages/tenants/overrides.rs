//! A tenant's per-tool overrides: hide, rename, describe, preset arguments, time out.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::ui::{Confirm, ErrorNote, action_error};

/// The override editor's fields, as typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverrideForm {
    pub tool_id: String,
    pub enabled: bool,
    pub name: String,
    pub description: String,
    pub timeout_ms: String,
    /// A JSON object.
    pub presets: String,
    /// `name=value` per line for new values; names of stored secrets to keep, comma-separated.
    pub new_secrets: String,
    pub keep_secrets: String,
}

#[server]
pub async fn save_override(slug: String, form: OverrideForm) -> Result<(), PanelError> {
    use axum::http::StatusCode;
    use engine::service::SecretInput;
    use engine::service::tenants::OverrideInput;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let invalid = |message: String| PanelError::rejected(StatusCode::UNPROCESSABLE_ENTITY, message);
    let tool_id = form.tool_id.parse::<uuid::Uuid>().map_err(|_| invalid("choose a tool".into()))?;
    let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let presets = match form.presets.trim() {
        "" => serde_json::Map::new(),
        json => {
            serde_json::from_str(json).map_err(|e| invalid(format!("presets must be a JSON object: {e}")))?
        }
    };
    let mut secret_presets: std::collections::BTreeMap<String, SecretInput> =
        crate::server::comma_list(&form.keep_secrets)
            .into_iter()
            .map(|name| (name, SecretInput::SET))
            .collect();
    for line in form.new_secrets.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) =
            line.split_once('=').ok_or_else(|| invalid(format!("`{line}` is not name=value")))?;
        secret_presets.insert(name.trim().to_string(), SecretInput::Value(value.to_string()));
    }
    let input = OverrideInput {
        enabled: Some(form.enabled),
        name: text(&form.name),
        description: text(&form.description),
        timeout_ms: match form.timeout_ms.trim() {
            "" => None,
            ms => Some(crate::server::whole_number("timeout in ms", ms, i32::MAX as u32)? as i32),
        },
        presets,
        secret_presets,
    };
    engine::service::tenants::set_override(&state(), &tenant, tool_id, &input).await?;
    Ok(())
}

#[server]
pub async fn clear_override(slug: String, tool_id: String) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let tool_id = tool_id.parse().map_err(|_| PanelError::invalid("which tool?"))?;
    Ok(engine::service::tenants::clear_override(&state(), &tenant, tool_id).await?)
}

#[component]
pub(super) fn Overrides(
    tenant: TenantView,
    save: ServerAction<SaveOverride>,
    clear: ServerAction<ClearOverride>,
) -> impl IntoView {
    let form = RwSignal::new(OverrideForm { enabled: true, ..Default::default() });
    let overrides = StoredValue::new(tenant.overrides.clone());
    let catalog = StoredValue::new(tenant.catalog.clone());
    // What the tool is called and says when the override leaves them as they are.
    let current = move |pick: fn(&super::page::CatalogEntry) -> String| {
        move || {
            let id = form.read().tool_id.clone();
            catalog.with_value(|c| c.iter().find(|t| t.id == id).map(pick)).unwrap_or_default()
        }
    };
    // Choosing a tool loads its override, if it has one, into the editor.
    let choose = move |tool_id: String| {
        let existing = overrides.with_value(|o| o.iter().find(|o| o.tool_id == tool_id).cloned());
        form.set(match existing {
            Some(o) => OverrideForm {
                tool_id,
                enabled: o.enabled,
                name: o.name.unwrap_or_default(),
                description: o.description.unwrap_or_default(),
                timeout_ms: o.timeout_ms.map(|t| t.to_string()).unwrap_or_default(),
                presets: presets_text(&o.presets),
                new_secrets: String::new(),
                keep_secrets: o.secret_presets.join(", "),
            },
            None => OverrideForm { tool_id, enabled: true, ..Default::default() },
        });
    };
    let slug = StoredValue::new(tenant.slug.clone());
    let edit = move |f: fn(&mut OverrideForm, String)| {
        move |ev| form.update(|form| f(form, event_target_value(&ev)))
    };
    view! {
        <section class="card">
            <h2>"Per-tool overrides"</h2>
            {(!tenant.overrides.is_empty())
                .then(|| {
                    view! {
                        <ul class="plain">
                            {tenant
                                .overrides
                                .iter()
                                .map(|o| {
                                    let (id, clear_id) = (o.tool_id.clone(), o.tool_id.clone());
                                    let summary = [
                                        (!o.enabled).then(|| "hidden".to_string()),
                                        o.name.clone().map(|n| format!("named {n}")),
                                        o.description.as_deref().map(|d| format!("described \"{}\"", shortened(d, 60))),
                                        o.timeout_ms.map(|t| format!("timeout {t} ms")),
                                        (!o.presets.is_empty()).then(|| format!("presets {}", presets_text(&o.presets))),
                                        (!o.secret_presets.is_empty()).then(|| format!("secret presets {} (set)", o.secret_presets.join(", "))),
                                    ]
                                    .into_iter()
                                    .flatten()
                                    .collect::<Vec<_>>()
                                    .join("; ");
                                    view! {
                                        <li>
                                            <code>{o.tool.clone()}</code> ": " {summary} " "
                                            <button type="button" class="link" on:click=move |_| choose(id.clone())>"Edit"</button>
                                            <Confirm
                                                ask="Remove…"
                                                confirm=format!("Remove the override of `{}`", o.tool)
                                                keep="Keep it"
                                                on_confirm=Callback::new(move |_| {
                                                    clear.dispatch(ClearOverride { slug: slug.get_value(), tool_id: clear_id.clone() });
                                                })
                                            />
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ul>
                    }
                })}
            <div class="form-grid">
                <label>
                    "Tool"
                    <select name="override-tool" prop:value=move || form.read().tool_id.clone() on:change=move |ev| choose(event_target_value(&ev))>
                        <option value="">"Choose a tool…"</option>
                        {tenant
                            .catalog
                            .into_iter()
                            .map(|t| view! { <option value=t.id>{format!("{} ({})", t.name, t.source)}</option> })
                            .collect_view()}
                    </select>
                </label>
                <label class="check">
                    <input
                        type="checkbox"
                        prop:checked=move || form.read().enabled
                        on:change=move |ev| form.update(|f| f.enabled = event_target_checked(&ev))
                    />
                    "Enabled for this tenant"
                </label>
                <label>
                    "Exposed name (empty = the default)"
                    <input
                        type="text"
                        name="override-name"
                        placeholder=current(|t| t.name.clone())
                        prop:value=move || form.read().name.clone()
                        on:input=edit(|f, v| f.name = v)
                    />
                </label>
                <label>
                    "Timeout in ms (empty = the tool's)"
                    <input type="text" prop:value=move || form.read().timeout_ms.clone() on:input=edit(|f, v| f.timeout_ms = v) />
                </label>
                <label class="wide">
                    "Description (empty = the tool's; at most 8 KiB, as an LLM reads it with every tool list)"
                    <textarea
                        rows="2"
                        name="override-description"
                        placeholder=current(|t| t.description.clone())
                        prop:value=move || form.read().description.clone()
                        on:input=edit(|f, v| f.description = v)
                    ></textarea>
                </label>
                <label>
                    "Presets (a JSON object; removed from the schema, injected at execution)"
                    <textarea
                        rows="2"
                        name="override-presets"
                        placeholder="{\"region\": \"eu\"}"
                        prop:value=move || form.read().presets.clone()
                        on:input=edit(|f, v| f.presets = v)
                    ></textarea>
                </label>
                <label>
                    "New secret presets (name=value per line; encrypted, never shown again)"
                    <textarea rows="2" prop:value=move || form.read().new_secrets.clone() on:input=edit(|f, v| f.new_secrets = v)></textarea>
                </label>
                <label>
                    "Stored secret presets to keep (comma-separated)"
                    <input type="text" prop:value=move || form.read().keep_secrets.clone() on:input=edit(|f, v| f.keep_secrets = v) />
                </label>
            </div>
            <div class="actions">
                <button
                    type="button"
                    class="primary"
                    disabled=move || save.pending().get() || form.read().tool_id.is_empty()
                    on:click=move |_| {
                        save.dispatch(SaveOverride { slug: slug.get_value(), form: form.get() });
                    }
                >
                    "Save override"
                </button>
            </div>
            <ErrorNote error=action_error(save) />
            <ErrorNote error=action_error(clear) />
        </section>
    }
}

/// `text` cut to `most` characters, with an ellipsis when it was longer.
fn shortened(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Presets as the editor shows them: a JSON object, or nothing when there are none.
fn presets_text(presets: &serde_json::Map<String, serde_json::Value>) -> String {
    if presets.is_empty() { String::new() } else { serde_json::Value::Object(presets.clone()).to_string() }
}
