//! Every account (owners only): who signs in how, to which tenants; make one with a one-time
//! password, change its role or its tenants, reset it to a one-time password, disable, enable or
//! delete it. (A tenant's page manages its own members.)

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::ui::{Confirm, ErrorNote, Saved, SecretOnce, action_error, grid, loaded, role_options, succeeded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountView {
    pub username: String,
    /// As the role choice names it: `owner`, `tenant_admin` or `member`.
    pub role: String,
    pub tenants: String,
    pub signs_in: String,
    pub disabled: bool,
    pub last_sign_in: String,
}

#[server]
pub async fn list_accounts() -> Result<Vec<AccountView>, PanelError> {
    use crate::server::{minute, owner, state};
    let owner = owner().await?;
    let accounts = engine::service::accounts::list(&state(), &owner).await?;
    Ok(accounts
        .into_iter()
        .map(|account| AccountView {
            signs_in: account.signs_in().into(),
            role: account.role.to_string(),
            tenants: account.tenants.join(", "),
            disabled: account.disabled_at.is_some(),
            last_sign_in: account.signed_in_at.map(minute).unwrap_or_else(|| "never".into()),
            username: account.username,
        })
        .collect())
}

#[cfg(feature = "ssr")]
fn role(name: &str) -> Result<engine::admin::Role, PanelError> {
    engine::admin::Role::parse(name).map_err(|err| PanelError::invalid(err.0))
}

/// Makes an account; returns its one-time password (the only time it is shown).
#[server]
pub async fn create_account(username: String, role: String, tenants: String) -> Result<String, PanelError> {
    use crate::server::{comma_list, owner, state};
    let owner = owner().await?;
    let username = engine::admin::Username::parse(username.trim())?;
    let password = engine::service::accounts::create(
        &state(),
        &owner,
        &username,
        self::role(&role)?,
        &comma_list(&tenants),
    )
    .await?;
    Ok(password.expose().to_string())
}

#[server]
pub async fn set_account_role(username: String, role: String) -> Result<(), PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let username = engine::admin::Username::parse(&username)?;
    engine::service::accounts::set_role(&state(), &owner, &username, self::role(&role)?).await?;
    Ok(())
}

/// Makes `tenants` (comma-separated slugs) the account's tenants.
#[server]
pub async fn set_account_tenants(username: String, tenants: String) -> Result<(), PanelError> {
    use crate::server::{comma_list, owner, state};
    let owner = owner().await?;
    let username = engine::admin::Username::parse(&username)?;
    engine::service::accounts::set_tenants(&state(), &owner, &username, &comma_list(&tenants)).await?;
    Ok(())
}

/// What an owner does to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AccountOp {
    Disable,
    Enable,
    ResetPassword,
    Delete,
}

/// Applies `op` to `username`; a reset returns whose new one-time password it is, with it.
#[server]
pub async fn change_account(username: String, op: AccountOp) -> Result<Option<(String, String)>, PanelError> {
    use engine::admin::Username;
    use engine::service::accounts;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let username = Username::parse(&username)?;
    let state = state();
    Ok(match op {
        AccountOp::Disable | AccountOp::Enable => {
            accounts::set_disabled(&state, &owner, &username, op == AccountOp::Disable).await?;
            None
        }
        AccountOp::ResetPassword => {
            let password = accounts::reset_password(&state, &owner, &username).await?;
            Some((username.as_str().to_string(), password.expose().to_string()))
        }
        AccountOp::Delete => {
            accounts::delete(&state, &owner, &username).await?;
            None
        }
    })
}

#[component]
pub fn AccountsPage() -> impl IntoView {
    let create = ServerAction::<CreateAccount>::new();
    let change = ServerAction::<ChangeAccount>::new();
    let set_role = ServerAction::<SetAccountRole>::new();
    let set_tenants = ServerAction::<SetAccountTenants>::new();
    let changes = [succeeded(create), succeeded(change), succeeded(set_role), succeeded(set_tenants)];
    let accounts = Resource::new(move || changes.map(|c| c.get()), |_| list_accounts());
    let (username, role, tenants) = (
        RwSignal::new(String::new()),
        RwSignal::new("tenant_admin".to_string()),
        RwSignal::new(String::new()),
    );
    // Whose one-time password is shown, with it.
    let shown = RwSignal::new(None::<(String, String)>);
    Effect::new(move |_| {
        if let Some(Ok(password)) = create.value().get() {
            shown.set(Some((username.get_untracked(), password)));
            username.set(String::new());
            tenants.set(String::new());
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(Some(reset))) = change.value().get() {
            shown.set(Some(reset));
        }
    });
    let run = move |username: String, op: AccountOp| {
        change.dispatch(ChangeAccount { username, op });
    };
    view! {
        <Title text="Accounts" />
        <h1>"Accounts"</h1>
        <p class="muted">
            "Every account of this Toolgate. A printed password is for one sign-in, which asks for a password of the \
             account's own. A tenant's page manages its members too."
        </p>
        {move || shown.get().map(|(whose, password)| view! {
            <p class="muted">{format!("For {whose}: give it to them in person or over a channel you trust.")}</p>
            <SecretOnce what="one-time password" secret=password />
        })}
        <ErrorNote error=action_error(change) />
        <ErrorNote error=action_error(set_role) />
        <Saved action=set_role what="Role saved." />
        <ErrorNote error=action_error(set_tenants) />
        <Saved action=set_tenants what="Tenants saved." />
        {loaded(accounts, move |accounts| {
            grid(accounts, "No account yet.", &["Name", "Role", "Tenants", "Signs in with", "Last sign-in", "State", ""], move |account| {
                let name = StoredValue::new(account.username.clone());
                let toggle = if account.disabled { AccountOp::Enable } else { AccountOp::Disable };
                let assigned = RwSignal::new(account.tenants.clone());
                view! {
                    <tr class:revoked=account.disabled>
                        <td>{account.username.clone()}</td>
                        <td>
                            <select
                                name=format!("role-{}", account.username)
                                prop:value=account.role.clone()
                                on:change=move |ev| {
                                    set_role.dispatch(SetAccountRole { username: name.get_value(), role: event_target_value(&ev) });
                                }
                            >
                                {role_options()}
                            </select>
                        </td>
                        <td>
                            {if account.role == "owner" {
                                view! { <span class="muted">"every tenant"</span> }.into_any()
                            } else {
                                view! {
                                    <span class="tenants-edit">
                                        <input
                                            type="text"
                                            name=format!("tenants-{}", account.username)
                                            aria-label=format!("Tenants of {}", account.username)
                                            placeholder="acme, globex"
                                            prop:value=move || assigned.get()
                                            on:input=move |ev| assigned.set(event_target_value(&ev))
                                        />
                                        <button
                                            type="button"
                                            disabled=move || set_tenants.pending().get()
                                            on:click=move |_| {
                                                set_tenants.dispatch(SetAccountTenants { username: name.get_value(), tenants: assigned.get() });
                                            }
                                        >
                                            "Save"
                                        </button>
                                    </span>
                                }.into_any()
                            }}
                        </td>
                        <td>{account.signs_in}</td>
                        <td>{account.last_sign_in}</td>
                        <td>{if account.disabled { "disabled" } else { "enabled" }}</td>
                        <td class="row-actions">
                            <button type="button" disabled=move || change.pending().get() on:click=move |_| run(name.get_value(), toggle)>
                                {if account.disabled { "Enable" } else { "Disable" }}
                            </button>
                            <Confirm
                                ask="Reset password…"
                                confirm=format!("Give `{}` a new one-time password", account.username)
                                keep="Keep the password"
                                on_confirm=Callback::new(move |()| run(name.get_value(), AccountOp::ResetPassword))
                            />
                            <Confirm
                                ask="Delete…"
                                confirm=format!("Delete `{}` and the apps it authorized", account.username)
                                keep="Keep it"
                                on_confirm=Callback::new(move |()| run(name.get_value(), AccountOp::Delete))
                            />
                        </td>
                    </tr>
                }
                .into_any()
            })
        })}
        <section class="card">
            <h2>"New account"</h2>
            <div class="inline-form">
                <label>
                    "Name"
                    <input type="text" name="account-name" prop:value=move || username.get() on:input=move |ev| username.set(event_target_value(&ev)) />
                </label>
                <label>
                    "Role"
                    <select name="account-role" prop:value=move || role.get() on:change=move |ev| role.set(event_target_value(&ev))>
                        {role_options()}
                    </select>
                </label>
                <label>
                    "Tenants (comma-separated)"
                    <input type="text" name="account-tenants" prop:value=move || tenants.get() on:input=move |ev| tenants.set(event_target_value(&ev)) />
                </label>
                <button
                    type="button"
                    class="primary"
                    disabled=move || create.pending().get()
                    on:click=move |_| {
                        create.dispatch(CreateAccount { username: username.get(), role: role.get(), tenants: tenants.get() });
                    }
                >
                    "Create with a one-time password"
                </button>
            </div>
            <ErrorNote error=action_error(create) />
        </section>
    }
}
