//! The audit log: who changed what and when, with before and after, filtered by entity and
//! actor.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ui::{JsonBlock, loaded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub entity_kind: String,
    pub entity_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

#[server]
pub async fn audit_log(entity_kind: String, actor: String) -> Result<Vec<AuditRow>, PanelError> {
    use engine::store::audit::AuditFilter;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let filled = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let filter = AuditFilter {
        entity_kind: filled(entity_kind),
        actor: filled(actor),
        limit: Some(200),
        ..Default::default()
    };
    Ok(engine::service::global::audit(&state(), &owner, &filter)
        .await?
        .into_iter()
        .map(|e| AuditRow {
            id: e.id,
            at: format!("{} {:02}:{:02}:{:02} UTC", e.at.date(), e.at.hour(), e.at.minute(), e.at.second()),
            actor: e.actor,
            action: e.action,
            entity_kind: e.entity_kind,
            entity_id: e.entity_id,
            before: e.before,
            after: e.after,
        })
        .collect())
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let kind = RwSignal::new(String::new());
    let actor = RwSignal::new(String::new());
    let events = Resource::new(move || (kind.get(), actor.get()), |(kind, actor)| audit_log(kind, actor));
    let open = RwSignal::new(None::<i64>);
    view! {
        <Title text="Audit" />
        <h1>"Audit log"</h1>
        <div class="filters">
            <select on:change=move |ev| kind.set(event_target_value(&ev))>
                <option value="">"Every entity"</option>
                {["tenant", "server", "source", "group", "settings", "tool"]
                    .map(|k| view! { <option value=k>{k}</option> })
                    .collect_view()}
            </select>
            <input type="search" placeholder="Actor, e.g. admin:alice" on:change=move |ev| actor.set(event_target_value(&ev)) />
        </div>
        {loaded(
            events,
            move |events| {
                if events.is_empty() {
                    return view! { <p class="muted">"No change recorded matches."</p> }.into_any();
                }
                view! {
                    <table class="grid audit">
                        <thead>
                            <tr>
                                <th>"When"</th>
                                <th>"Who"</th>
                                <th>"What"</th>
                                <th>"Entity"</th>
                                <th></th>
                            </tr>
                        </thead>
                        <tbody>
                            {events
                                .into_iter()
                                .map(|e| {
                                    let id = e.id;
                                    view! {
                                        <tr>
                                            <td class="small">{e.at}</td>
                                            <td>{e.actor}</td>
                                            <td>{e.action}</td>
                                            <td>{e.entity_kind} " " <code>{e.entity_id}</code></td>
                                            <td>
                                                <button type="button" class="link" on:click=move |_| open.update(|o| *o = if *o == Some(id) { None } else { Some(id) })>
                                                    {move || if open.get() == Some(id) { "Hide" } else { "Before / after" }}
                                                </button>
                                            </td>
                                        </tr>
                                        <Show when=move || open.get() == Some(id)>
                                            <tr class="detail">
                                                <td colspan="5">
                                                    <div class="side-by-side">
                                                        <JsonBlock label="Before" value=e.before.clone().unwrap_or(Value::Null) />
                                                        <JsonBlock label="After" value=e.after.clone().unwrap_or(Value::Null) />
                                                    </div>
                                                </td>
                                            </tr>
                                        </Show>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            },
        )}
    }
}
