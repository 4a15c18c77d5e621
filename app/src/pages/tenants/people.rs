//! Who reaches a tenant: the ways in it accepts (API keys, people signing in with OAuth), its
//! members (add with a password or an invitation link, disable, remove), and the apps people
//! connected to it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::apps::{AppRow, ConnectSteps, app_table};
use crate::pages::ui::{
    Confirm, ErrorNote, Saved, SecretOnce, action_error, grid, loaded, role_name, succeeded,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberView {
    pub username: String,
    pub role: String,
    /// `password`, `single sign-on`, or `invited` (no password chosen yet).
    pub sign_in: String,
    pub disabled: bool,
    pub last_sign_in: Option<String>,
    pub apps: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct People {
    pub members: Vec<MemberView>,
    pub apps: Vec<AppRow>,
}

#[server]
pub async fn tenant_people(slug: String) -> Result<People, PanelError> {
    use crate::server::{caller, minute, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let state = state();
    let members = engine::service::members::list(&state, &tenant)
        .await?
        .into_iter()
        .map(|m| MemberView {
            sign_in: match (m.has_password, m.sso) {
                (true, _) => "password",
                (false, true) => "single sign-on",
                (false, false) => "invited",
            }
            .to_string(),
            username: m.username,
            role: m.role.to_string(),
            disabled: m.disabled_at.is_some(),
            last_sign_in: m.signed_in_at.map(minute),
            apps: m.apps,
        })
        .collect();
    let apps =
        engine::service::apps::of_tenant(&state, &tenant).await?.into_iter().map(AppRow::from).collect();
    Ok(People { members, apps })
}

/// The invitation link of `token`, as the person opens it.
#[cfg(feature = "ssr")]
async fn invitation_link(token: Option<String>) -> Option<String> {
    match token {
        Some(token) => Some(format!("{}/invite/{token}", crate::server::issuer().await)),
        None => None,
    }
}

/// Adds a member with `password`, or, when it is empty, an invitation link (returned: it is
/// shown once).
#[server]
pub async fn add_member(
    slug: String,
    username: String,
    password: String,
) -> Result<Option<String>, PanelError> {
    use engine::service::members::{self, Credential};

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let credential =
        if password.is_empty() { Credential::Invitation } else { Credential::Password(password) };
    let added = members::add(&state(), &tenant, &username, credential).await?;
    Ok(invitation_link(added.invitation).await)
}

/// `disable`, `enable`, `invite` (a new link, returned) or `remove` a member.
#[server]
pub async fn member_action(
    slug: String,
    username: String,
    action: String,
) -> Result<Option<String>, PanelError> {
    use engine::service::members;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let state = state();
    match action.as_str() {
        "disable" | "enable" => {
            members::set_disabled(&state, &tenant, &username, action == "disable").await?
        }
        "invite" => {
            return Ok(invitation_link(Some(members::invite(&state, &tenant, &username).await?)).await);
        }
        "remove" => members::remove(&state, &tenant, &username).await?,
        other => return Err(PanelError::invalid(format!("`{other}` is not something to do to a member"))),
    }
    Ok(None)
}

#[server]
pub async fn revoke_tenant_app(slug: String, id: String) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let id = id.parse().map_err(|_| PanelError::invalid("which app?"))?;
    Ok(engine::service::apps::revoke_of_tenant(&state(), &tenant, id).await?)
}

#[server]
pub async fn save_access(slug: String, api_keys: bool, oauth: bool) -> Result<(), PanelError> {
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let update = TenantUpdate { api_keys: Some(api_keys), oauth: Some(oauth), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

/// The ways into the tenant's endpoints, and how an agent connects.
#[component]
pub(super) fn AccessCard(tenant: TenantView, action: ServerAction<SaveAccess>) -> impl IntoView {
    let api_keys = RwSignal::new(tenant.api_keys);
    let oauth = RwSignal::new(tenant.oauth);
    let slug = StoredValue::new(tenant.slug.clone());
    let switch = move |label: &'static str, name: &'static str, value: RwSignal<bool>| {
        view! {
            <label class="check">
                <input type="checkbox" name=name prop:checked=move || value.get() on:change=move |ev| value.set(event_target_checked(&ev)) />
                {label}
            </label>
        }
    };
    view! {
        <section class="card">
            <h2>"Connecting agents"</h2>
            <ConnectSteps endpoint=tenant.endpoint.clone() />
            <p class="muted">"Members sign in as themselves; machine clients use an API key (below). Turn off what this tenant does not use."</p>
            <div class="inline-form">
                {switch("People sign in with OAuth", "access-oauth", oauth)}
                {switch("API keys", "access-api-keys", api_keys)}
                <button
                    type="button"
                    class="primary"
                    disabled=move || action.pending().get()
                    on:click=move |_| {
                        action.dispatch(SaveAccess { slug: slug.get_value(), api_keys: api_keys.get(), oauth: oauth.get() });
                    }
                >
                    "Save"
                </button>
            </div>
            <Saved action what="Saved: the gateway applies it at once." />
            <ErrorNote error=action_error(action) />
        </section>
    }
}

/// The tenant's members and connected apps, with the actions that change them. Made by the page
/// itself, outside the tenant's `Transition`: a resource created inside it would never let the
/// server finish the page (leptos-rs/leptos#4866).
#[derive(Clone, Copy)]
pub(super) struct PeopleData {
    add: ServerAction<AddMember>,
    act: ServerAction<MemberAction>,
    revoke: ServerAction<RevokeTenantApp>,
    people: Resource<Result<People, PanelError>>,
}

impl PeopleData {
    pub(super) fn new(slug: impl Fn() -> String + Send + Sync + 'static) -> Self {
        let add = ServerAction::<AddMember>::new();
        let act = ServerAction::<MemberAction>::new();
        let revoke = ServerAction::<RevokeTenantApp>::new();
        let changes = [succeeded(add), succeeded(act), succeeded(revoke)];
        let people =
            Resource::new(move || (slug(), changes.map(|c| c.get())), |(slug, _)| tenant_people(slug));
        Self { add, act, revoke, people }
    }
}

/// The tenant's members and the apps people connected.
#[component]
pub(super) fn PeopleCards(slug: String, data: PeopleData) -> impl IntoView {
    let PeopleData { add, act, revoke, people } = data;
    let slug = StoredValue::new(slug);
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let link = move || {
        let from_add = add.value().get().and_then(Result::ok).flatten();
        from_add.or_else(|| act.value().get().and_then(Result::ok).flatten())
    };
    let run = move |username: String, action: &'static str| {
        act.dispatch(MemberAction { slug: slug.get_value(), username, action: action.into() });
    };
    let revoke_app = Callback::new(move |id| {
        revoke.dispatch(RevokeTenantApp { slug: slug.get_value(), id });
    });
    // One Transition reads the resource: two reading one resource can leave a server-rendered
    // page unfinished (leptos-rs/leptos#4851).
    loaded(people, move |people| {
        view! {
            <section class="card">
                <h2>"Members"</h2>
                <p class="muted">
                    "Members connect agents to this tenant as themselves; in the panel they see only their connected apps."
                </p>
                {move || link().map(|link| view! { <SecretOnce what="invitation link (valid 7 days)" secret=link /> })}
                {grid(people.members, "No member yet.", &["Name", "Role", "Signs in with", "Last sign-in", "Apps", ""], move |m| {
                        let name = StoredValue::new(m.username.clone());
                        let member = m.role == "member";
                        view! {
                            <tr class:revoked=m.disabled>
                                <td>{m.username.clone()}{m.disabled.then_some(" (disabled)")}</td>
                                <td>{role_name(&m.role).to_string()}</td>
                                <td>{m.sign_in.clone()}</td>
                                <td>{m.last_sign_in.clone().unwrap_or_else(|| "never".into())}</td>
                                <td>{m.apps}</td>
                                <td class="member-actions">
                                    {member.then(|| view! {
                                        {if m.disabled {
                                            view! { <button type="button" on:click=move |_| run(name.get_value(), "enable")>"Enable"</button> }.into_any()
                                        } else {
                                            view! { <button type="button" on:click=move |_| run(name.get_value(), "disable")>"Disable"</button> }.into_any()
                                        }}
                                        <button type="button" on:click=move |_| run(name.get_value(), "invite")>"New sign-in link"</button>
                                        <Confirm
                                            ask="Remove…"
                                            confirm=format!("Remove {} and revoke their apps", m.username)
                                            keep="Keep"
                                            on_confirm=Callback::new(move |()| run(name.get_value(), "remove"))
                                        />
                                    })}
                                </td>
                            </tr>
                        }
                        .into_any()
                    })}
                <div class="inline-form">
                    <label>
                        "Username"
                        <input type="text" name="member-name" placeholder="jane@acme.com" prop:value=move || username.get() on:input=move |ev| username.set(event_target_value(&ev)) />
                    </label>
                    <label>
                        "Password (empty: send an invitation link)"
                        <input type="password" name="member-password" autocomplete="new-password" prop:value=move || password.get() on:input=move |ev| password.set(event_target_value(&ev)) />
                    </label>
                    <button
                        type="button"
                        class="primary"
                        disabled=move || add.pending().get()
                        on:click=move |_| {
                            add.dispatch(AddMember { slug: slug.get_value(), username: username.get(), password: password.get() });
                        }
                    >
                        "Add member"
                    </button>
                </div>
                <ErrorNote error=action_error(add) />
                <ErrorNote error=action_error(act) />
            </section>
            <section class="card">
                <h2>"Connected apps"</h2>
                {app_table(people.apps, "Nobody has connected an app to this tenant yet.", true, revoke_app)}
                <ErrorNote error=action_error(revoke) />
            </section>
        }
    })
}
