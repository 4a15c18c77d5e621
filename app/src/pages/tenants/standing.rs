//! The tenant itself: its name, whether it is served (an owner's switch), and deleting it (an
//! owner's too).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::ui::{Confirm, ErrorNote, Saved, action_error, counted};

/// What is done to the tenant itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TenantOp {
    Rename(String),
    Enable,
    Disable,
    Delete,
}

#[server]
pub async fn change_tenant(slug: String, op: TenantOp) -> Result<(), PanelError> {
    use engine::service::tenants;
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let state = state();
    let update = match op {
        TenantOp::Delete => return Ok(tenants::delete(&state, &tenant).await?),
        TenantOp::Rename(name) => TenantUpdate { name: Some(name.trim().to_string()), ..Default::default() },
        TenantOp::Enable | TenantOp::Disable => {
            TenantUpdate { enabled: Some(op == TenantOp::Enable), ..Default::default() }
        }
    };
    tenants::update(&state, &tenant, update).await?;
    Ok(())
}

/// The tenant's name, its switch and its deletion; a deleted tenant's page leads to the list.
#[component]
pub(super) fn StandingCard(tenant: TenantView, action: ServerAction<ChangeTenant>) -> impl IntoView {
    let slug = StoredValue::new(tenant.slug.clone());
    let name = RwSignal::new(tenant.name.clone());
    // Whether the last change was the deletion (the action forgets its input once answered).
    let deleting = StoredValue::new(false);
    let run = move |op: TenantOp| {
        deleting.set_value(op == TenantOp::Delete);
        action.dispatch(ChangeTenant { slug: slug.get_value(), op });
    };
    let navigate = leptos_router::hooks::use_navigate();
    Effect::new(move |_| {
        if matches!(action.value().get(), Some(Ok(()))) && deleting.get_value() {
            navigate(&format!("/tenants?deleted={}", slug.get_value()), Default::default());
        }
    });
    let enabled = tenant.enabled;
    view! {
        <section class="card">
            <h2>"This tenant"</h2>
            {(!enabled).then(|| view! {
                <p class="notice warning" role="status">
                    "Disabled: its endpoints refuse every key and access token (403 tenant_disabled). Everything else is kept."
                </p>
            })}
            <div class="inline-form">
                <label>
                    "Name"
                    <input type="text" name="tenant-name" maxlength="200" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                </label>
                <button type="button" disabled=move || action.pending().get() on:click=move |_| run(TenantOp::Rename(name.get()))>
                    "Rename"
                </button>
            </div>
            {tenant.owner_view.then(|| view! {
                <div class="actions">
                    <button
                        type="button"
                        disabled=move || action.pending().get()
                        on:click=move |_| run(if enabled { TenantOp::Disable } else { TenantOp::Enable })
                    >
                        {if enabled { "Disable the tenant" } else { "Enable the tenant" }}
                    </button>
                    <Confirm
                        ask="Delete the tenant…"
                        confirm=format!(
                            "Delete {} with its {}, its call history, its members' apps and every setting",
                            tenant.slug,
                            counted(tenant.keys.len() as i64, "key"),
                        )
                        keep="Keep it"
                        on_confirm=Callback::new(move |()| run(TenantOp::Delete))
                    />
                </div>
            })}
            <Saved action what="Saved: the gateway applies it at once." />
            <ErrorNote error=action_error(action) />
        </section>
    }
}
