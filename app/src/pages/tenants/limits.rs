//! The owner's limits on a tenant's calls (all of them, and single tools'), and the inputs
//! every limit is edited with (a key's too, at its creation).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, SaveButton, Saved, action_error};

/// Limits on calls as the panel edits them: each a whole number, empty for no limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub per_minute: String,
    pub per_day: String,
    pub concurrent: String,
}

impl Limits {
    /// `60/min · 10000/day · 4 at once`, or `none`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> =
            [(&self.per_minute, "/min"), (&self.per_day, "/day"), (&self.concurrent, " at once")]
                .into_iter()
                .filter(|(n, _)| !n.is_empty())
                .map(|(n, unit)| format!("{n}{unit}"))
                .collect();
        if parts.is_empty() { "none".into() } else { parts.join(" · ") }
    }
}

#[cfg(feature = "ssr")]
pub(crate) mod ssr {
    use std::num::NonZeroU32;

    use engine::model::CallLimits;

    use super::Limits;
    use crate::error::PanelError;

    impl From<CallLimits> for Limits {
        fn from(limits: CallLimits) -> Self {
            let shown = |n: Option<NonZeroU32>| n.map(|n| n.to_string()).unwrap_or_default();
            Limits {
                per_minute: shown(limits.per_minute),
                per_day: shown(limits.per_day),
                concurrent: shown(limits.concurrent),
            }
        }
    }

    /// The limits `form` sets, or which of its numbers is wrong.
    pub fn parse(form: &Limits) -> Result<CallLimits, PanelError> {
        let number = |what: &str, text: &str| -> Result<_, PanelError> {
            match text.trim() {
                "" => Ok(None),
                text => Ok(NonZeroU32::new(crate::server::whole_number(what, text, u32::MAX)?)),
            }
        };
        Ok(CallLimits {
            per_minute: number("calls per minute", &form.per_minute)?,
            per_day: number("calls per day", &form.per_day)?,
            concurrent: number("calls at once", &form.concurrent)?,
        })
    }
}

/// Sets the tenant's limits: on all its calls, and on each listed tool's (by default exposed
/// name; a tool left out has none). Sent as JSON: a form encoding loses an empty list.
#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_limits(
    slug: String,
    limits: Limits,
    tools: Vec<(String, Limits)>,
    users: Limits,
) -> Result<(), PanelError> {
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, state};
    // Only owners set limits: the update asks the tenant's proof for the owner's rights.
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let mut tool_limits = std::collections::BTreeMap::new();
    for (tool, form) in &tools {
        let set = ssr::parse(form).map_err(|err| PanelError::invalid(format!("`{tool}`: {err}")))?;
        if !set.is_none() {
            tool_limits.insert(tool.clone(), set);
        }
    }
    let update = TenantUpdate {
        limits: Some(ssr::parse(&limits)?),
        tool_limits: Some(tool_limits),
        user_limits: Some(
            ssr::parse(&users).map_err(|err| PanelError::invalid(format!("each person: {err}")))?,
        ),
        ..Default::default()
    };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

/// Three number inputs, named `<name>-per-minute`, `<name>-per-day`, `<name>-concurrent`.
#[component]
pub fn LimitInputs(name: String, limits: RwSignal<Limits>) -> impl IntoView {
    let input = move |label: &'static str,
                      field: &'static str,
                      get: fn(&Limits) -> String,
                      set: fn(&mut Limits, String)| {
        view! {
            <label>
                {label}
                <input
                    type="number"
                    min="1"
                    placeholder="no limit"
                    name=format!("{name}-{field}")
                    prop:value=move || limits.with(get)
                    on:input=move |ev| limits.update(|l| set(l, event_target_value(&ev)))
                />
            </label>
        }
    };
    view! {
        {input("Calls per minute", "per-minute", |l| l.per_minute.clone(), |l, v| l.per_minute = v)}
        {input("Calls per day", "per-day", |l| l.per_day.clone(), |l, v| l.per_day = v)}
        {input("At once", "concurrent", |l| l.concurrent.clone(), |l, v| l.concurrent = v)}
    }
}

/// The tenant's limits: editable by owners, shown to tenant administrators.
#[component]
pub(super) fn LimitsCard(tenant: TenantView, action: ServerAction<SaveLimits>) -> impl IntoView {
    let note = "Per-minute and per-day counts are shared by every gateway replica (about a second behind); \
                calls at once are bounded by each replica. A refused call gets HTTP 429 on REST and a tool \
                error on MCP, both saying when to try again.";
    if !tenant.owner_view {
        let tools = tenant
            .tool_limits
            .iter()
            .map(|(tool, limits)| view! { <li><code>{tool.clone()}</code> ": " {limits.summary()}</li> })
            .collect_view();
        return view! {
            <section class="card">
                <h2>"Limits"</h2>
                <p class="limits-summary">"All calls: " {tenant.limits.summary()}</p>
                <p class="limits-summary">"Each signed-in person: " {tenant.user_limits.summary()}</p>
                <ul>{tools}</ul>
                <p class="muted">{note}</p>
            </section>
        }
        .into_any();
    }
    let limits = RwSignal::new(tenant.limits.clone());
    let users = RwSignal::new(tenant.user_limits.clone());
    let tools = RwSignal::new(
        tenant
            .tool_limits
            .iter()
            .map(|(tool, l)| (tool.clone(), RwSignal::new(l.clone())))
            .collect::<Vec<_>>(),
    );
    let adding = RwSignal::new(String::new());
    let names: Vec<(String, String)> =
        tenant.catalog.iter().map(|t| (t.name.clone(), t.source.clone())).collect();
    let slug = StoredValue::new(tenant.slug.clone());
    view! {
        <section class="card">
            <h2>"Limits"</h2>
            <p class="muted">{note}</p>
            <h3>"All calls of this tenant"</h3>
            <div class="inline-form">
                <LimitInputs name="tenant-limit".into() limits />
            </div>
            <h3>"Each person signed in through an app (OAuth)"</h3>
            <div class="inline-form">
                <LimitInputs name="user-limit".into() limits=users />
            </div>
            <h3>"Single tools"</h3>
            <For each=move || tools.get() key=|(tool, _)| tool.clone() let:((tool, limits))>
                <div class="inline-form tool-limit">
                    <code>{tool.clone()}</code>
                    <LimitInputs name=format!("tool-limit-{tool}") limits />
                    <button type="button" on:click=move |_| tools.update(|t| t.retain(|(name, _)| *name != tool))>
                        "Remove"
                    </button>
                </div>
            </For>
            <div class="inline-form">
                <label>
                    "Limit a tool"
                    <select name="limit-tool" prop:value=move || adding.get() on:change=move |ev| adding.set(event_target_value(&ev))>
                        <option value="">"Choose a tool…"</option>
                        {names.into_iter().map(|(name, source)| view! { <option value=name.clone()>{format!("{name} ({source})")}</option> }).collect_view()}
                    </select>
                </label>
                <button
                    type="button"
                    disabled=move || adding.get().is_empty()
                    on:click=move |_| {
                        let tool = adding.get();
                        if !tools.with(|t| t.iter().any(|(name, _)| *name == tool)) {
                            tools.update(|t| t.push((tool, RwSignal::new(Limits::default()))));
                        }
                        adding.set(String::new());
                    }
                >
                    "Add"
                </button>
            </div>
            <SaveButton
                label="Save limits"
                pending=action.pending()
                on_click=Callback::new(move |()| {
                    let tools = tools.get().into_iter().map(|(tool, l)| (tool, l.get())).collect();
                    action.dispatch(SaveLimits { slug: slug.get_value(), limits: limits.get(), tools, users: users.get() });
                })
            />
            <Saved action=action what="Limits saved." />
            <ErrorNote error=action_error(action) />
        </section>
    }
    .into_any()
}
