//! A tenant's API keys: create (shown once, with its limits), list, revoke.

use leptos::prelude::*;

use super::limits::{LimitInputs, Limits};
use super::page::TenantView;
use super::snippets::Snippets;
use crate::error::PanelError;
use crate::pages::ui::{Confirm, ErrorNote, ExpiryCell, NameAndExpiry, SecretOnce, action_error};

/// Creates an API key, expiring after `expires_in_days` unless that is empty, under
/// `limits`, and returns it: the only time it is shown.
#[server]
pub async fn create_key(
    slug: String,
    name: String,
    expires_in_days: String,
    limits: Limits,
) -> Result<String, PanelError> {
    use crate::server::{caller, expiry_in_days, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let expires_at = expiry_in_days(&expires_in_days)?;
    let limits = super::limits::ssr::parse(&limits)?;
    let (_, key) =
        engine::service::tenants::create_key(&state(), &tenant, name.trim(), expires_at, limits).await?;
    Ok(key)
}

#[server]
pub async fn revoke_key(slug: String, id: String) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let id = id.parse().map_err(|_| PanelError::invalid("which key?"))?;
    Ok(engine::service::tenants::revoke_key(&state(), &tenant, id).await?)
}

#[component]
pub(super) fn Keys(
    tenant: TenantView,
    create: ServerAction<CreateKey>,
    revoke: ServerAction<RevokeKey>,
) -> impl IntoView {
    let slug = StoredValue::new(tenant.slug.clone());
    let name = RwSignal::new(String::new());
    let days = RwSignal::new(String::new());
    let limits = RwSignal::new(Limits::default());
    let (endpoint, api) = (StoredValue::new(tenant.endpoint.clone()), StoredValue::new(tenant.api.clone()));
    view! {
        <section class="card">
            <h2>"API keys"</h2>
            <p class="muted">"LLM applications send " <code>"Authorization: Bearer <key>"</code> " to " <code>{format!("/mcp/{}", tenant.slug)}</code> " and " <code>"/api/v1"</code> "."</p>
            {move || {
                let (endpoint, api) = (endpoint.get_value(), api.get_value());
                match create.value().get().and_then(Result::ok) {
                    Some(key) => view! {
                        <SecretOnce what="key" secret=key.clone() />
                        <p>"Connect a client with it:"</p>
                        <Snippets endpoint api key />
                    }
                    .into_any(),
                    None => view! {
                        <details class="connect-snippets">
                            <summary>"How Claude, Cursor, VS Code and curl connect with a key"</summary>
                            <Snippets endpoint api />
                        </details>
                    }
                    .into_any(),
                }
            }}
            <div class="scroll"><table class="grid">
                <thead>
                    <tr>
                        <th>"Name"</th>
                        <th>"Key"</th>
                        <th>"Created"</th>
                        <th>"Last used"</th>
                        <th>"Expires"</th>
                        <th>"Limits"</th>
                        <th></th>
                    </tr>
                </thead>
                <tbody>
                    {tenant
                        .keys
                        .into_iter()
                        .map(|k| {
                            let id = k.id.clone();
                            let confirm = format!("Revoke `{}` now", k.name);
                            view! {
                                <tr class:revoked=k.revoked>
                                    <td>{k.name}</td>
                                    <td>
                                        <code>{k.prefix} "…"</code>
                                    </td>
                                    <td>{k.created}</td>
                                    <td>{k.last_used.unwrap_or_else(|| "never".into())}</td>
                                    <ExpiryCell expires=k.expires expired=k.expired />
                                    <td class="key-limits">{k.limits.summary()}</td>
                                    <td>
                                        {if k.revoked {
                                            view! { <span class="muted">"revoked"</span> }.into_any()
                                        } else {
                                            view! {
                                                <Confirm
                                                    ask="Revoke…"
                                                    confirm=confirm
                                                    keep="Keep it"
                                                    on_confirm=Callback::new(move |()| {
                                                        // A key just made and now revoked is no longer shown.
                                                        create.value().set(None);
                                                        revoke.dispatch(RevokeKey { slug: slug.get_value(), id: id.clone() });
                                                    })
                                                />
                                            }
                                                .into_any()
                                        }}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table></div>
            <div class="inline-form">
                <NameAndExpiry what="key" label="Key name" placeholder="production" name days />
                <LimitInputs name="key-limit".into() limits />
                <button
                    type="button"
                    class="primary"
                    disabled=move || create.pending().get()
                    on:click=move |_| {
                        create.dispatch(CreateKey {
                            slug: slug.get_value(),
                            name: name.get(),
                            expires_in_days: days.get(),
                            limits: limits.get(),
                        });
                    }
                >
                    "Create key"
                </button>
            </div>
            <ErrorNote error=action_error(create) />
            <ErrorNote error=action_error(revoke) />
        </section>
    }
}
