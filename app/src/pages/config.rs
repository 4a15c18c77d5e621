//! Config as code in the panel: the whole configuration as one YAML (or JSON) document,
//! exported, edited or uploaded, previewed as the changes it would make (secrets as
//! `{set: true}`), then applied in one transaction — the same document and semantics as
//! `PUT /api/admin/v1/config`.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::audit::{ShownChange, fields_table};
use super::ui::{ErrorNote, action_error};
use crate::error::PanelError;

/// One entity the document creates, changes or removes, with the fields that change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedChange {
    pub action: String,
    pub kind: String,
    pub name: String,
    pub fields: Vec<ShownChange>,
    /// What the change drops that the document does not show (a moved server's tenant
    /// credentials and OAuth authorizations).
    pub dropped: Vec<String>,
}

/// The configuration now, as YAML.
#[server]
pub async fn export_document() -> Result<String, PanelError> {
    use engine::config::Format;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let document = engine::service::global::export_config(&state(), &owner).await?;
    Format::Yaml.write(&document).map_err(|e| PanelError::internal(&e))
}

/// What `text` (YAML, or JSON, which is YAML too) changes; with `apply`, changes it.
#[server]
pub async fn plan_document(text: String, apply: bool) -> Result<Vec<PlannedChange>, PanelError> {
    use engine::config::Format;
    use engine::diff::field_changes;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let document =
        Format::Yaml.parse(text.as_bytes()).map_err(|e| PanelError::invalid(format!("the document: {e}")))?;
    let changes = engine::service::global::apply_config(&state(), &owner, &document, !apply).await?;
    Ok(changes
        .into_iter()
        .map(|change| PlannedChange {
            action: serde_json::to_value(change.action)
                .ok()
                .and_then(|a| a.as_str().map(str::to_string))
                .unwrap_or_default(),
            kind: change.kind.to_string(),
            fields: field_changes(change.before.as_ref(), change.after.as_ref())
                .into_iter()
                .map(ShownChange::from)
                .collect(),
            name: change.name,
            dropped: change.dropped,
        })
        .collect())
}

#[component]
pub fn ConfigPage() -> impl IntoView {
    let text = RwSignal::new(String::new());
    let export = ServerAction::<ExportDocument>::new();
    let plan = ServerAction::<PlanDocument>::new();
    // The document of the last preview or apply, and which of the two it was.
    let planned = RwSignal::new(None::<(String, bool)>);
    Effect::new(move |_| {
        if let Some(Ok(document)) = export.value().get() {
            text.set(document);
        }
    });
    let run = move |apply: bool| {
        planned.set(Some((text.get(), apply)));
        plan.dispatch(PlanDocument { text: text.get(), apply });
    };
    view! {
        <Title text="Configuration" />
        <h1>"Configuration as code"</h1>
        <p class="muted">
            "The whole configuration as one document: servers, groups, tenants and settings. What it leaves out is removed; secrets read "
            <code>"{set: true}"</code> " and stay as stored. The same document as " <code>"GET/PUT /api/admin/v1/config"</code> "."
        </p>
        <section class="card">
            <div class="actions">
                <button type="button" disabled=move || export.pending().get() on:click=move |_| { export.dispatch(ExportDocument {}); }>
                    "Load the current configuration"
                </button>
                <Upload text />
            </div>
            <textarea
                class="raw-json"
                name="document"
                rows="18"
                placeholder="tenants:\n  - slug: acme\n    name: Acme"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
            <div class="actions">
                <button type="button" class="primary" disabled=move || plan.pending().get() on:click=move |_| run(false)>
                    "Preview the changes"
                </button>
            </div>
            <ErrorNote error=action_error(export) />
            <ErrorNote error=action_error(plan) />
        </section>
        {move || {
            let (document, applied) = planned.get()?;
            // The last outcome stays in `plan.value()` until the next arrives: while a request
            // is in flight, say what it does, never the outcome of the one before.
            if plan.pending().get() {
                let doing = if applied { "Applying the changes…" } else { "Previewing the changes…" };
                return Some(view! { <section class="card plan"><p class="notice" role="status">{doing}</p></section> }.into_any());
            }
            let changes = plan.value().get().and_then(Result::ok)?;
            // Apply applies exactly what was previewed: an edit since asks for a new preview.
            let edited = Memo::new(move |_| text.read().as_str() != document);
            let summary = match (applied, changes.len()) {
                (_, 0) => "The document matches the configuration: nothing to change.".to_string(),
                (false, 1) => "Preview: 1 change, nothing written yet.".to_string(),
                (false, n) => format!("Preview: {n} changes, nothing written yet."),
                (true, 1) => "Applied 1 change.".to_string(),
                (true, n) => format!("Applied {n} changes."),
            };
            let pending = !applied && !changes.is_empty();
            Some(view! {
                <section class="card plan">
                    <p class=if applied { "notice ok" } else { "notice" } role="status">{summary}</p>
                    {(!changes.is_empty()).then(|| changes_table(changes))}
                    {pending.then(|| view! {
                        <div class="actions">
                            <button type="button" class="primary" disabled=move || plan.pending().get() || edited.get() on:click=move |_| run(true)>
                                "Apply these changes"
                            </button>
                            <Show when=move || edited.get()>
                                <span class="muted">"The document changed since this preview: preview it again."</span>
                            </Show>
                        </div>
                    })}
                </section>
            }.into_any())
        }}
    }
}

/// Each entity the document changes, with the fields that change.
fn changes_table(changes: Vec<PlannedChange>) -> impl IntoView {
    view! {
        <div class="scroll">
            <table class="grid plan-changes">
                <thead>
                    <tr><th>"Change"</th><th>"Entity"</th><th>"Fields"</th></tr>
                </thead>
                <tbody>
                    {changes
                        .into_iter()
                        .map(|c| {
                            view! {
                                <tr>
                                    <td>{c.action}</td>
                                    <td>{c.kind} " " <code>{c.name}</code></td>
                                    <td>
                                        {fields_table(c.fields)}
                                        {(!c.dropped.is_empty())
                                            .then(|| {
                                                view! {
                                                    <p class="notice stale-note">
                                                        "Dropped, as the server moves to a new target: "
                                                        {c.dropped.join("; ")}
                                                    </p>
                                                }
                                            })}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// Reads a chosen file into the editor.
#[component]
fn Upload(text: RwSignal<String>) -> impl IntoView {
    let failed = RwSignal::new(None::<String>);
    view! {
        <label class="upload">
            "Or upload a file "
            <input
                type="file"
                name="upload"
                accept=".yaml,.yml,.json,application/yaml,application/json"
                on:change=move |ev| read_file(ev, text, failed)
            />
        </label>
        <ErrorNote error=move || failed.get() />
    }
}

/// Puts the text of the file chosen in `ev`'s input into `text`, or says why it could not.
#[cfg(feature = "hydrate")]
fn read_file(ev: leptos::ev::Event, text: RwSignal<String>, failed: RwSignal<Option<String>>) {
    use wasm_bindgen::JsCast;
    let Some(file) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        .and_then(|input| input.files())
        .and_then(|files| files.get(0))
    else {
        return;
    };
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(file.text()).await.ok().and_then(|t| t.as_string()) {
            Some(contents) => {
                failed.set(None);
                text.set(contents);
            }
            None => failed.set(Some(format!("`{}` could not be read as text", file.name()))),
        }
    });
}

/// On the server no file is ever chosen.
#[cfg(not(feature = "hydrate"))]
fn read_file(_: leptos::ev::Event, _: RwSignal<String>, _: RwSignal<Option<String>>) {}
