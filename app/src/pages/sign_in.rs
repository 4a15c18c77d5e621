//! How people sign in (owners only): local passwords or a break-glass owner only, the OpenID
//! provider with the rules that place its people in tenants, and apps an owner registers for
//! clients that cannot register themselves.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::tenants::list_tenants;
use super::ui::{
    Confirm, CopyButton, ErrorNote, SaveButton, Saved, SecretOnce, action_error, grid, loaded, role_options,
    succeeded,
};
use crate::error::PanelError;

/// A claim rule as the form edits it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleForm {
    /// `email_domain` or `group`.
    pub kind: String,
    pub value: String,
    /// Empty for owners.
    pub tenant: String,
    pub role: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SsoForm {
    pub display_name: String,
    pub issuer: String,
    pub client_id: String,
    /// A new secret; empty keeps the stored one (`secret_set`).
    pub secret: String,
    pub secret_set: bool,
    /// No secret at all (PKCE only).
    pub public_client: bool,
    /// Space-separated.
    pub scopes: String,
    /// `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    pub require_verified_email: bool,
    /// The ID token claim listing the person's groups.
    pub groups_claim: String,
    pub rules: Vec<RuleForm>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignInForm {
    pub local_passwords: bool,
    pub break_glass_owner: String,
    pub sso: Option<SsoForm>,
    /// Where the provider sends people back: what to register at the provider.
    pub callback: String,
}

#[cfg(feature = "ssr")]
mod ssr {
    use engine::model::{Role, TenantSlug};
    use engine::service::SecretInput;
    use engine::service::sign_in::{ClaimRule, SsoAuthMethod, SsoConfig};
    use engine::sso::SignInConfig;

    use super::{RuleForm, SignInForm, SsoForm};
    use crate::error::PanelError;

    pub fn form(config: SignInConfig, callback: String) -> SignInForm {
        let sso = config.sso.map(|sso| SsoForm {
            display_name: sso.display_name,
            issuer: sso.issuer,
            client_id: sso.client_id,
            secret: String::new(),
            secret_set: sso.client_secret.is_some(),
            public_client: sso.client_secret.is_none(),
            scopes: sso.scopes.join(" "),
            auth_method: match sso.auth_method {
                SsoAuthMethod::ClientSecretBasic => "client_secret_basic",
                SsoAuthMethod::ClientSecretPost => "client_secret_post",
            }
            .into(),
            require_verified_email: sso.require_verified_email,
            groups_claim: sso.groups_claim,
            rules: sso
                .rules
                .into_iter()
                .map(|rule| RuleForm {
                    kind: if rule.group.is_some() { "group" } else { "email_domain" }.into(),
                    value: rule.group.or(rule.email_domain).unwrap_or_default(),
                    tenant: rule.tenant.map(|t| t.to_string()).unwrap_or_default(),
                    role: rule.role.to_string(),
                })
                .collect(),
        });
        SignInForm {
            local_passwords: config.local_passwords,
            break_glass_owner: config.break_glass_owner.unwrap_or_default(),
            sso,
            callback,
        }
    }

    pub fn config(form: SignInForm) -> Result<SignInConfig, PanelError> {
        let sso = match form.sso {
            None => None,
            Some(sso) => {
                let rules = sso
                    .rules
                    .into_iter()
                    .enumerate()
                    .map(|(i, rule)| {
                        let at = |why: String| PanelError::invalid(format!("rule {}: {why}", i + 1));
                        let value = Some(rule.value.trim().to_string()).filter(|v| !v.is_empty());
                        let value =
                            value.ok_or_else(|| at("give the email domain or group it matches".into()))?;
                        let tenant = match rule.tenant.trim() {
                            "" => None,
                            slug => Some(TenantSlug::parse(slug).map_err(|err| at(err.0))?),
                        };
                        let (email_domain, group) = match rule.kind.as_str() {
                            "group" => (None, Some(value)),
                            _ => (Some(value), None),
                        };
                        Ok(ClaimRule {
                            email_domain,
                            group,
                            tenant,
                            role: Role::parse(&rule.role).map_err(|err| at(err.0))?,
                        })
                    })
                    .collect::<Result<_, PanelError>>()?;
                let client_secret = match (sso.public_client, sso.secret.is_empty()) {
                    (true, _) => None,
                    (false, false) => Some(SecretInput::Value(sso.secret)),
                    (false, true) if sso.secret_set => Some(SecretInput::SET),
                    (false, true) => {
                        return Err(PanelError::invalid(
                            "give the client secret, or mark it a public client",
                        ));
                    }
                };
                Some(SsoConfig {
                    display_name: sso.display_name.trim().to_string(),
                    issuer: sso.issuer.trim().trim_end_matches('/').to_string(),
                    client_id: sso.client_id.trim().to_string(),
                    client_secret,
                    scopes: sso.scopes.split_whitespace().map(str::to_string).collect(),
                    auth_method: match sso.auth_method.as_str() {
                        "client_secret_post" => SsoAuthMethod::ClientSecretPost,
                        _ => SsoAuthMethod::ClientSecretBasic,
                    },
                    require_verified_email: sso.require_verified_email,
                    groups_claim: sso.groups_claim.trim().to_string(),
                    rules,
                })
            }
        };
        let owner = Some(form.break_glass_owner.trim().to_string()).filter(|o| !o.is_empty());
        Ok(SignInConfig { local_passwords: form.local_passwords, break_glass_owner: owner, sso })
    }
}

#[server]
pub async fn sign_in_settings() -> Result<SignInForm, PanelError> {
    use crate::server::{issuer, owner, state};
    let owner = owner().await?;
    let config = engine::service::sign_in::config(&state(), &owner).await?;
    Ok(ssr::form(config, engine::sso::callback_url(&issuer().await)))
}

#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_sign_in(form: SignInForm) -> Result<(), PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    engine::service::sign_in::update(&state(), &owner, &ssr::config(form)?).await?;
    Ok(())
}

/// An app an owner registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientRow {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub confidential: bool,
    pub created: String,
}

#[server]
pub async fn registered_clients() -> Result<Vec<ClientRow>, PanelError> {
    use crate::server::{minute, owner, state};
    let owner = owner().await?;
    let clients = engine::service::apps::clients(&state(), &owner).await?;
    Ok(clients
        .into_iter()
        .map(|c| ClientRow {
            confidential: c.secret_hash.is_some(),
            id: c.id,
            name: c.name,
            redirect_uris: c.redirect_uris,
            created: minute(c.created_at),
        })
        .collect())
}

/// Registers an app; its client id (and secret, when confidential) as shown once.
#[server]
pub async fn register_client(
    name: String,
    redirect_uris: String,
    confidential: bool,
) -> Result<String, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let uris = redirect_uris.lines().map(str::trim).filter(|u| !u.is_empty()).map(str::to_string).collect();
    let (id, secret) =
        engine::service::apps::register_client(&state(), &owner, &name, uris, confidential).await?;
    Ok(match secret {
        Some(secret) => format!("client_id: {id}\nclient_secret: {secret}"),
        None => format!("client_id: {id}"),
    })
}

#[server]
pub async fn delete_client(id: String) -> Result<(), PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    Ok(engine::service::apps::delete_client(&state(), &owner, &id).await?)
}

#[component]
pub fn SignInPage() -> impl IntoView {
    let save = ServerAction::<SaveSignIn>::new();
    let saved = succeeded(save);
    let settings = Resource::new(move || saved.get(), |_| sign_in_settings());
    let tenants = Resource::new(|| (), |_| list_tenants());
    view! {
        <Title text="Sign-in" />
        <h1>"Sign-in"</h1>
        {loaded(settings, move |form| view! { <SignInSettings form tenants save /> })}
        <RegisteredClients />
    }
}

#[component]
fn SignInSettings(
    form: SignInForm,
    tenants: Resource<Result<Vec<super::tenants::TenantRow>, PanelError>>,
    save: ServerAction<SaveSignIn>,
) -> impl IntoView {
    let local = RwSignal::new(form.local_passwords);
    let break_glass = RwSignal::new(form.break_glass_owner.clone());
    let enabled = RwSignal::new(form.sso.is_some());
    let sso = RwSignal::new(form.sso.clone().unwrap_or_else(|| SsoForm {
        scopes: "openid email profile".into(),
        auth_method: "client_secret_basic".into(),
        require_verified_email: true,
        groups_claim: "groups".into(),
        ..SsoForm::default()
    }));
    let rules = RwSignal::new(sso.get_untracked().rules.into_iter().map(RwSignal::new).collect::<Vec<_>>());
    let text = move |label: &'static str,
                     name: &'static str,
                     get: fn(&SsoForm) -> String,
                     set: fn(&mut SsoForm, String)| {
        view! {
            <label>
                {label}
                <input type="text" name=name prop:value=move || sso.with(get) on:input=move |ev| sso.update(|s| set(s, event_target_value(&ev))) />
            </label>
        }
    };
    let secret_placeholder = move || if sso.with(|s| s.secret_set) { "set — empty keeps it" } else { "" };
    view! {
        <section class="card">
            <h2>"Passwords"</h2>
            <label class="check">
                <input type="checkbox" name="local-passwords" prop:checked=move || local.get() on:change=move |ev| local.set(event_target_checked(&ev)) />
                "Everyone may sign in with a password"
            </label>
            <label>
                "Break-glass owner (keeps a password when passwords are off)"
                <input type="text" name="break-glass-owner" placeholder="admin" prop:value=move || break_glass.get() on:input=move |ev| break_glass.set(event_target_value(&ev)) />
            </label>
        </section>
        <section class="card">
            <h2>"Single sign-on (OpenID Connect)"</h2>
            <label class="check">
                <input type="checkbox" name="sso-enabled" prop:checked=move || enabled.get() on:change=move |ev| enabled.set(event_target_checked(&ev)) />
                "Sign people in through an OpenID provider"
            </label>
            <Show when=move || enabled.get()>
                <p>
                    "Register this redirect URI at the provider: " <code class="sso-callback">{form.callback.clone()}</code>
                    <CopyButton text=form.callback.clone() />
                </p>
                <div class="form-grid">
                    {text("Button name", "sso-name", |s| s.display_name.clone(), |s, v| s.display_name = v)}
                    {text("Issuer URL", "sso-issuer", |s| s.issuer.clone(), |s, v| s.issuer = v)}
                    {text("Client id", "sso-client-id", |s| s.client_id.clone(), |s, v| s.client_id = v)}
                    <label>
                        "Client secret"
                        <input type="password" name="sso-secret" autocomplete="off" placeholder=secret_placeholder prop:value=move || sso.with(|s| s.secret.clone()) on:input=move |ev| sso.update(|s| s.secret = event_target_value(&ev)) />
                    </label>
                    {text("Scopes", "sso-scopes", |s| s.scopes.clone(), |s, v| s.scopes = v)}
                    {text("Groups claim", "sso-groups-claim", |s| s.groups_claim.clone(), |s, v| s.groups_claim = v)}
                    <label>
                        "Client authentication"
                        <select name="sso-auth-method" prop:value=move || sso.with(|s| s.auth_method.clone()) on:change=move |ev| sso.update(|s| s.auth_method = event_target_value(&ev))>
                            <option value="client_secret_basic">"client_secret_basic (HTTP Basic)"</option>
                            <option value="client_secret_post">"client_secret_post (in the form)"</option>
                        </select>
                    </label>
                </div>
                <label class="check">
                    <input type="checkbox" name="sso-public" prop:checked=move || sso.with(|s| s.public_client) on:change=move |ev| sso.update(|s| s.public_client = event_target_checked(&ev)) />
                    "Public client (no secret; PKCE only)"
                </label>
                <label class="check">
                    <input type="checkbox" name="sso-verified-email" prop:checked=move || sso.with(|s| s.require_verified_email) on:change=move |ev| sso.update(|s| s.require_verified_email = event_target_checked(&ev)) />
                    "Email-domain rules need an address the provider marks verified"
                </label>
                <h3>"Who gets in"</h3>
                <p class="muted">
                    "Each rule matches a verified email domain or a value of the groups claim. A person gets the highest role of the rules they match, and every tenant they name; nobody else gets in. Rules apply at each sign-in."
                </p>
                <For each=move || rules.get() key=|rule| *rule let:rule>
                    <RuleRow rule tenants remove=Callback::new(move |()| rules.update(|all| all.retain(|r| *r != rule))) />
                </For>
                <button type="button" on:click=move |_| rules.update(|all| all.push(RwSignal::new(RuleForm { kind: "email_domain".into(), role: "member".into(), ..RuleForm::default() })))>
                    "Add a rule"
                </button>
            </Show>
        </section>
        <SaveButton
            label="Save sign-in settings"
            pending=save.pending()
            on_click=Callback::new(move |()| {
                let sso = enabled.get().then(|| SsoForm { rules: rules.get().iter().map(|r| r.get()).collect(), ..sso.get() });
                let form = SignInForm { local_passwords: local.get(), break_glass_owner: break_glass.get(), sso, callback: String::new() };
                save.dispatch(SaveSignIn { form });
            })
        />
        <Saved action=save what="Sign-in settings saved." />
        <ErrorNote error=action_error(save) />
    }
}

#[component]
fn RuleRow(
    rule: RwSignal<RuleForm>,
    tenants: Resource<Result<Vec<super::tenants::TenantRow>, PanelError>>,
    remove: Callback<()>,
) -> impl IntoView {
    view! {
        <div class="inline-form sso-rule">
            <select name="rule-kind" prop:value=move || rule.with(|r| r.kind.clone()) on:change=move |ev| rule.update(|r| r.kind = event_target_value(&ev))>
                <option value="email_domain">"Email domain"</option>
                <option value="group">"Group"</option>
            </select>
            <input type="text" name="rule-value" placeholder="acme.com" prop:value=move || rule.with(|r| r.value.clone()) on:input=move |ev| rule.update(|r| r.value = event_target_value(&ev)) />
            <select name="rule-role" prop:value=move || rule.with(|r| r.role.clone()) on:change=move |ev| rule.update(|r| r.role = event_target_value(&ev))>
                {role_options()}
            </select>
            <Transition fallback=|| ()>
                {move || tenants.get().and_then(Result::ok).map(|tenants| view! {
                    <select name="rule-tenant" prop:value=move || rule.with(|r| r.tenant.clone()) on:change=move |ev| rule.update(|r| r.tenant = event_target_value(&ev))>
                        <option value="">"— (owners: every tenant)"</option>
                        {tenants.into_iter().map(|t| view! { <option value=t.slug.clone()>{t.slug.clone()}</option> }).collect_view()}
                    </select>
                })}
            </Transition>
            <button type="button" on:click=move |_| remove.run(())>"Remove"</button>
        </div>
    }
}

#[component]
fn RegisteredClients() -> impl IntoView {
    let register = ServerAction::<RegisterClient>::new();
    let delete = ServerAction::<DeleteClient>::new();
    let (registered, deleted) = (succeeded(register), succeeded(delete));
    let clients = Resource::new(move || (registered.get(), deleted.get()), |_| registered_clients());
    let name = RwSignal::new(String::new());
    let uris = RwSignal::new(String::new());
    let confidential = RwSignal::new(false);
    view! {
        <section class="card">
            <h2>"Registered apps"</h2>
            <p class="muted">
                "Most MCP clients register themselves or publish their identity (a client ID metadata document). Register here the ones that need a client id given to them."
            </p>
            {move || register.value().get().and_then(Result::ok).map(|ids| view! { <SecretOnce what="client credentials" secret=ids /> })}
            {loaded(clients, move |clients| grid(clients, "No app registered here.", &["Name", "Client id", "Redirect URIs", "Type", "Registered", ""], move |c| {
                let id = StoredValue::new(c.id.clone());
                view! {
                    <tr>
                        <td>{c.name.clone()}</td>
                        <td><code>{c.id.clone()}</code></td>
                        <td>{c.redirect_uris.join(" ")}</td>
                        <td>{if c.confidential { "confidential" } else { "public" }}</td>
                        <td>{c.created}</td>
                        <td>
                            <Confirm ask="Delete…" confirm=format!("Delete {} and its grants", c.name) keep="Keep"
                                on_confirm=Callback::new(move |()| { delete.dispatch(DeleteClient { id: id.get_value() }); }) />
                        </td>
                    </tr>
                }
                .into_any()
            }))}
            <div class="form-grid">
                <label>
                    "Name"
                    <input type="text" name="client-name" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                </label>
                <label>
                    "Redirect URIs, one per line"
                    <textarea name="client-redirects" prop:value=move || uris.get() on:input=move |ev| uris.set(event_target_value(&ev))></textarea>
                </label>
            </div>
            <label class="check">
                <input type="checkbox" name="client-confidential" prop:checked=move || confidential.get() on:change=move |ev| confidential.set(event_target_checked(&ev)) />
                "Confidential (it gets a client secret)"
            </label>
            <SaveButton
                label="Register app"
                pending=register.pending()
                on_click=Callback::new(move |()| {
                    register.dispatch(RegisterClient { name: name.get(), redirect_uris: uris.get(), confidential: confidential.get() });
                })
            />
            <ErrorNote error=action_error(register) />
            <ErrorNote error=action_error(delete) />
        </section>
    }
}
