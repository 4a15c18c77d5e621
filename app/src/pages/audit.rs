//! The audit log: who changed what and when, each change as the fields it changed (before →
//! after), filtered by entity, actor and date, a page at a time. Owners see every event, a
//! tenant administrator those of their tenants.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ui::{JsonBlock, filters_in_address, loaded};
use crate::error::PanelError;

/// A changed field as the page shows it; a value that was not there is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[cfg(feature = "ssr")]
impl From<engine::diff::FieldChange> for ShownChange {
    fn from(change: engine::diff::FieldChange) -> Self {
        let shown = |value: Option<Value>| value.map(|v| v.to_string());
        ShownChange { path: change.path, before: shown(change.before), after: shown(change.after) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub entity_kind: String,
    pub entity_id: String,
    pub changes: Vec<ShownChange>,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// One page of events, newest first, and whether older ones match too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditPage {
    pub rows: Vec<AuditRow>,
    pub more: bool,
}

/// What the filters ask for; the dates are days (`YYYY-MM-DD`, UTC), both included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditQuery {
    pub entity_kind: String,
    pub actor: String,
    pub from: String,
    pub to: String,
    /// Events older than this id: the next page.
    pub before_id: Option<i64>,
}

#[server]
pub async fn audit_log(query: AuditQuery) -> Result<AuditPage, PanelError> {
    use axum::http::StatusCode;
    use engine::service::global::AuditFilter;
    use time::{Date, Duration, macros::format_description};

    use crate::server::{caller, state};
    /// Events on one page.
    const PAGE: i64 = 50;
    let caller = caller().await?;
    let filled = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let day = |field: &str, text: &str| -> Result<Option<Date>, PanelError> {
        filled(text)
            .map(|text| {
                Date::parse(&text, format_description!("[year]-[month]-[day]")).map_err(|_| {
                    PanelError::rejected(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("{field}: `{text}` is not a date"),
                    )
                })
            })
            .transpose()
    };
    let (from, to) = (day("from", &query.from)?, day("to", &query.to)?);
    let filter = AuditFilter {
        entity_kind: filled(&query.entity_kind),
        actor_contains: filled(&query.actor),
        since: from.map(|d| d.midnight().assume_utc()),
        until: to.map(|d| (d + Duration::days(1)).midnight().assume_utc()),
        before_id: query.before_id,
        limit: Some(PAGE + 1),
        ..Default::default()
    };
    let mut events = engine::service::global::audit(&state(), &caller, &filter).await?;
    let more = events.len() as i64 > PAGE;
    events.truncate(PAGE as usize);
    let rows = events
        .into_iter()
        .map(|e| AuditRow {
            changes: e.changes().into_iter().map(ShownChange::from).collect(),
            id: e.id,
            at: format!("{} {:02}:{:02}:{:02} UTC", e.at.date(), e.at.hour(), e.at.minute(), e.at.second()),
            actor: e.actor,
            action: e.action,
            entity_kind: e.entity_kind,
            entity_id: e.entity_id,
            before: e.before,
            after: e.after,
        })
        .collect();
    Ok(AuditPage { rows, more })
}

/// Changed fields, before → after.
pub(super) fn fields_table(changes: Vec<ShownChange>) -> AnyView {
    let value = |v: Option<String>| match v {
        Some(v) => view! { <code>{v}</code> }.into_any(),
        None => view! { <span class="muted">"—"</span> }.into_any(),
    };
    view! {
        <table class="grid changes">
            <thead>
                <tr><th>"Field"</th><th>"Before"</th><th>"After"</th></tr>
            </thead>
            <tbody>
                {changes
                    .into_iter()
                    .map(|c| {
                        let path = if c.path.is_empty() { "(the value)".to_string() } else { c.path };
                        view! {
                            <tr>
                                <td><code>{path}</code></td>
                                <td class="before">{value(c.before)}</td>
                                <td class="after">{value(c.after)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// Before and after in full, folded away.
fn whole(before: Option<Value>, after: Option<Value>) -> AnyView {
    view! {
        <details>
            <summary>"Before and after, whole"</summary>
            <div class="side-by-side">
                <JsonBlock label="Before" value=before.unwrap_or(Value::Null) />
                <JsonBlock label="After" value=after.unwrap_or(Value::Null) />
            </div>
        </details>
    }
    .into_any()
}

/// One event's row, and below it, when it is the open one, what it changed.
fn entry(e: AuditRow, open: RwSignal<Option<i64>>) -> AnyView {
    let id = e.id;
    let label = match e.changes.len() {
        1 => "1 change".to_string(),
        n => format!("{n} changes"),
    };
    let AuditRow { changes, before, after, .. } = e.clone();
    let detail = move || {
        (open.get() == Some(id)).then(|| {
            view! {
                <tr class="detail">
                    <td colspan="5">
                        {fields_table(changes.clone())}
                        {whole(before.clone(), after.clone())}
                    </td>
                </tr>
            }
            .into_any()
        })
    };
    view! {
        <tr>
            <td class="small">{e.at}</td>
            <td>{e.actor}</td>
            <td>{e.action}</td>
            <td>{e.entity_kind} " " <code>{e.entity_id}</code></td>
            <td>
                <button type="button" class="link" on:click=move |_| open.update(|o| *o = if *o == Some(id) { None } else { Some(id) })>
                    {move || if open.get() == Some(id) { "Hide".to_string() } else { label.clone() }}
                </button>
            </td>
        </tr>
        {detail}
    }
    .into_any()
}

/// The audit page's filters, as they are named in its address.
const FILTERS: [&str; 4] = ["entity", "actor", "from", "to"];

/// What the entity filter offers: every kind of thing the audit log records.
const ENTITY_KINDS: [&str; 13] = [
    "tenant",
    "server",
    "source",
    "tool",
    "group",
    "settings",
    "account",
    "sign_in",
    "admin_token",
    "authorization",
    "oauth_client",
    "oauth_grant",
    "prompt",
];

#[component]
pub fn AuditPage() -> impl IntoView {
    // The filters live in the address and apply as they are typed or picked.
    let [entity, actor, from, to] = filters_in_address("/audit", FILTERS);
    // Where the page shown starts (`None`: the newest), and where each page before it did.
    let before_id = RwSignal::new(None::<i64>);
    let pages = RwSignal::new(Vec::<Option<i64>>::new());
    let query = move || AuditQuery {
        entity_kind: entity.get(),
        actor: actor.get(),
        from: from.get(),
        to: to.get(),
        before_id: before_id.get(),
    };
    let events = Resource::new(query, audit_log);
    let open = RwSignal::new(None::<i64>);
    // A filter change starts again from the newest events.
    let filter = move |field: RwSignal<String>| {
        move |ev| {
            pages.set(Vec::new());
            before_id.set(None);
            field.set(event_target_value(&ev));
        }
    };
    view! {
        <Title text="Audit" />
        <h1>"Audit log"</h1>
        <div class="filters">
            <select name="entity" on:change=filter(entity) prop:value=entity>
                <option value="">"Every entity"</option>
                {ENTITY_KINDS.map(|k| view! { <option value=k>{k}</option> }).collect_view()}
            </select>
            <input type="search" name="actor" placeholder="Actor contains, e.g. alice" prop:value=actor on:input=filter(actor) />
            <label>"From " <input type="date" name="from" prop:value=from on:change=filter(from) /></label>
            <label>"To " <input type="date" name="to" prop:value=to on:change=filter(to) /></label>
        </div>
        {loaded(
            events,
            move |page| {
                if page.rows.is_empty() {
                    return view! { <p class="muted">"No change recorded matches these filters."</p> }.into_any();
                }
                let oldest = page.rows.last().map(|r| r.id);
                view! {
                    <div class="scroll">
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
                                {page.rows.into_iter().map(|e| entry(e, open)).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <div class="actions">
                        <Show when=move || !pages.read().is_empty()>
                            <button type="button" on:click=move |_| {
                                before_id.set(pages.try_update(|p| p.pop().flatten()).flatten());
                            }>"Newer"</button>
                        </Show>
                        {page.more.then(|| view! {
                            <button type="button" on:click=move |_| {
                                pages.update(|p| p.push(before_id.get_untracked()));
                                before_id.set(oldest);
                            }>"Older"</button>
                        })}
                    </div>
                }
                    .into_any()
            },
        )}
    }
}
