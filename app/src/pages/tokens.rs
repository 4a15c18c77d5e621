//! Admin API tokens (owners only): what each may do and when it was last used; make one,
//! shown once, and revoke one.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::tenants::list_tenants;
use super::ui::{
    Confirm, ErrorNote, ExpiryCell, NameAndExpiry, SecretOnce, action_error, grid, loaded, succeeded,
};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenRow {
    pub id: String,
    pub name: String,
    /// Its first characters, if kept.
    pub prefix: Option<String>,
    pub limits: String,
    pub created: String,
    pub last_used: Option<String>,
    pub expires: Option<String>,
    pub expired: bool,
    pub revoked: Option<String>,
}

#[server]
pub async fn list_admin_tokens() -> Result<Vec<TokenRow>, PanelError> {
    use crate::server::{minute, owner, state};
    let owner = owner().await?;
    let now = time::OffsetDateTime::now_utc();
    let tokens = engine::service::global::tokens(&state(), &owner).await?;
    Ok(tokens
        .into_iter()
        .map(|token| TokenRow {
            id: token.id.to_string(),
            limits: token.limits(),
            name: token.name,
            prefix: token.prefix,
            created: minute(token.created_at),
            last_used: token.last_used_at.map(minute),
            expires: token.expires_at.map(minute),
            expired: token.expires_at.is_some_and(|at| at <= now),
            revoked: token.revoked_at.map(minute),
        })
        .collect())
}

/// Makes a token and returns it: the only time it is shown. `tenant` empty: every tenant.
#[server]
pub async fn create_admin_token(
    name: String,
    expires_in_days: String,
    read_only: bool,
    tenant: String,
) -> Result<String, PanelError> {
    use engine::model::TenantSlug;
    use engine::service::global::NewToken;

    use crate::server::{expiry_in_days, owner, state};
    let owner = owner().await?;
    let tenant = match tenant.trim() {
        "" => None,
        slug => Some(TenantSlug::parse(slug).map_err(|err| PanelError::invalid(err.0))?),
    };
    let new = NewToken {
        name: name.trim().to_string(),
        expires_at: expiry_in_days(&expires_in_days)?,
        read_only,
        tenant,
    };
    let (_, token) = engine::service::global::create_token(&state(), &owner, &new).await?;
    Ok(token)
}

/// The programs stdio servers may start (`TOOLGATE_STDIO_COMMANDS`); empty = any.
#[server]
pub async fn list_stdio_commands() -> Result<Vec<String>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    Ok(engine::service::servers::stdio_commands(&state(), &owner))
}

#[server]
pub async fn revoke_admin_token(id: String) -> Result<(), PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let id = id.parse().map_err(|_| PanelError::invalid("which token?"))?;
    engine::service::global::revoke_token(&state(), &owner, id).await?;
    Ok(())
}

#[component]
pub fn TokensPage() -> impl IntoView {
    let create = ServerAction::<CreateAdminToken>::new();
    let revoke = ServerAction::<RevokeAdminToken>::new();
    let (created, revoked) = (succeeded(create), succeeded(revoke));
    let tokens = Resource::new(move || (created.get(), revoked.get()), |_| list_admin_tokens());
    let tenants = Resource::new(|| (), |_| list_tenants());
    let stdio = Resource::new(|| (), |_| list_stdio_commands());
    let name = RwSignal::new(String::new());
    let days = RwSignal::new(String::new());
    let read_only = RwSignal::new(false);
    let tenant = RwSignal::new(String::new());
    // A created token leaves an empty form for the next one.
    Effect::new(move |_| {
        if created.get() > 0 {
            name.set(String::new());
            days.set(String::new());
            read_only.set(false);
            tenant.set(String::new());
        }
    });
    view! {
        <Title text="Admin tokens" />
        <h1>"Admin tokens"</h1>
        <p class="muted">
            "Scripts send " <code>"Authorization: Bearer <token>"</code> " to " <code>"/api/admin/v1"</code>
            ". A token has owner rights unless it is read-only (only reads) or limited to one tenant."
        </p>
        {move || create.value().get().and_then(Result::ok).map(|token| view! { <SecretOnce what="token" secret=token /> })}
        {loaded(
            tokens,
            move |tokens| {
                grid(tokens, "No admin token yet.", &["Name", "Token", "May", "Created", "Last used", "Expires", ""], move |token| {
                    let id = StoredValue::new(token.id.clone());
                    let revoked = token.revoked.is_some();
                    view! {
                        <tr class:revoked=revoked>
                            <td>{token.name.clone()}</td>
                            <td>{token.prefix.map(|p| view! { <code>{p} "…"</code> })}</td>
                            <td>{token.limits}</td>
                            <td>{token.created}</td>
                            <td>{token.last_used.unwrap_or_else(|| "never".into())}</td>
                            <ExpiryCell expires=token.expires expired=token.expired />
                            <td>
                                {match token.revoked {
                                    Some(at) => view! { <span class="muted">{format!("revoked {at}")}</span> }.into_any(),
                                    None => view! {
                                        <Confirm
                                            ask="Revoke…"
                                            confirm=format!("Revoke `{}` now", token.name)
                                            keep="Keep it"
                                            on_confirm=Callback::new(move |()| {
                                                revoke.dispatch(RevokeAdminToken { id: id.get_value() });
                                            })
                                        />
                                    }.into_any(),
                                }}
                            </td>
                        </tr>
                    }
                    .into_any()
                })
            },
        )}
        <section class="card">
            <h2>"New token"</h2>
            <p class="muted">
                "A token with owner rights can register stdio MCP servers, and a stdio server starts a program "
                "on this machine, as Toolgate's own user. "
                <Transition fallback=|| ()>
                    {move || {
                        stdio.get().and_then(Result::ok).map(|commands| {
                            if commands.is_empty() {
                                view! {
                                    <span>
                                        "Any program: " <code>"TOOLGATE_STDIO_COMMANDS"</code>
                                        " is not set. Give scripts such as CI read-only or tenant tokens, or set it."
                                    </span>
                                }
                                .into_any()
                            } else {
                                view! {
                                    <span>
                                        "Only these programs (" <code>"TOOLGATE_STDIO_COMMANDS"</code> "): "
                                        <code>{commands.join(", ")}</code> "."
                                    </span>
                                }
                                .into_any()
                            }
                        })
                    }}
                </Transition>
            </p>
            {loaded(tenants, move |tenants| view! {
            <div class="inline-form">
                <NameAndExpiry what="token" label="Name" placeholder="ci" name days />
                <label>
                    "Tenant"
                    <select name="token-tenant" prop:value=move || tenant.get() on:change=move |ev| tenant.set(event_target_value(&ev))>
                        <option value="">"Every tenant"</option>
                        {tenants.into_iter().map(|t| { let label = t.slug.clone(); view! { <option value=t.slug>{label}</option> } }).collect_view()}
                    </select>
                </label>
                <label class="check">
                    <input type="checkbox" name="token-read-only" prop:checked=move || read_only.get() on:change=move |ev| read_only.set(event_target_checked(&ev)) />
                    "Read-only"
                </label>
                <button
                    type="button"
                    class="primary"
                    disabled=move || create.pending().get()
                    on:click=move |_| {
                        create.dispatch(CreateAdminToken {
                            name: name.get(),
                            expires_in_days: days.get(),
                            read_only: read_only.get(),
                            tenant: tenant.get(),
                        });
                    }
                >
                    "Create token"
                </button>
            </div>
            })}
            <ErrorNote error=action_error(create) />
            <ErrorNote error=action_error(revoke) />
        </section>
    }
}
