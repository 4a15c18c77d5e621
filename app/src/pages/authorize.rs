//! The consent page of Toolgate's authorization server: which app asks, where it came from and
//! where the answer goes, for which tenant, what it will be able to do — approve or deny. The
//! signed-in person's choice is remembered until they revoke the app.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, action_error, loaded};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsentView {
    pub username: String,
    pub client: String,
    /// The client's id, when it says where the app comes from (a metadata document's URL).
    pub client_id: String,
    pub client_host: Option<String>,
    pub registered_by_owner: bool,
    pub redirect_host: String,
    pub redirect_is_local: bool,
    /// The tenant of the endpoint asked for; none for the REST API, where `choices` are offered.
    pub tenant: Option<String>,
    pub choices: Vec<String>,
    pub scopes: Vec<(String, String)>,
    pub resource: String,
    pub allowed: bool,
}

#[server(endpoint = "consent")]
pub async fn consent(id: String) -> Result<ConsentView, PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::state;
    let account = require_admin().await?;
    let id = id.parse().map_err(|_| PanelError::invalid("this sign-in request does not exist"))?;
    let pending = state().oauth.pending(id, &account).await?;
    Ok(ConsentView {
        username: account.username,
        client: pending.client.name.clone(),
        client_id: pending.client.id.clone(),
        client_host: pending.client_host,
        registered_by_owner: pending.client.kind == engine::service::apps::ClientKind::Preregistered,
        redirect_host: pending.redirect_host,
        redirect_is_local: pending.redirect_is_local,
        tenant: pending.tenant.map(|slug| slug.to_string()),
        choices: pending.choices,
        scopes: pending.scopes.iter().map(|(s, what)| (s.to_string(), what.to_string())).collect(),
        resource: pending.resource,
        allowed: pending.allowed,
    })
}

/// Answers the request: the URL (back to the app) the browser goes to next. (A fixed endpoint:
/// the tests drive consent over plain HTTP.)
#[server(endpoint = "decide")]
pub async fn decide(id: String, approve: bool, tenant: Option<String>) -> Result<String, PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::state;
    let account = require_admin().await?;
    let id = id.parse().map_err(|_| PanelError::invalid("this sign-in request does not exist"))?;
    let tenant = tenant.filter(|t| !t.is_empty());
    Ok(state().oauth.decide(id, &account, approve, tenant.as_deref()).await?)
}

/// Sends the browser to `url`, another site (the app's redirect URI): a navigation, not a
/// form post, so the panel's `form-action 'self'` policy does not stop it.
fn go_to(url: &str) {
    #[cfg(feature = "hydrate")]
    if let Err(err) = window().location().set_href(url) {
        leptos::logging::error!("could not go back to the app: {err:?}");
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = url;
}

#[component]
pub fn AuthorizePage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let request = Resource::new(id, consent);
    let decision = ServerAction::<Decide>::new();
    Effect::new(move |_| {
        if let Some(Ok(url)) = decision.value().get() {
            go_to(&url);
        }
    });
    view! {
        <Title text="Allow an app" />
        <main class="login">
            <div class="card login-card consent">
                <h1 class="brand">"Toolgate"</h1>
                {loaded(request, move |c| view! { <ConsentForm consent=c id=id() decision /> })}
                <ErrorNote error=action_error(decision) />
            </div>
        </main>
    }
}

#[component]
fn ConsentForm(consent: ConsentView, id: String, decision: ServerAction<Decide>) -> impl IntoView {
    let picked = RwSignal::new(consent.choices.first().cloned().unwrap_or_default());
    let id = StoredValue::new(id);
    let choose = consent.tenant.is_none();
    let answer = move |approve: bool| {
        let tenant = choose.then(|| picked.get());
        decision.dispatch(Decide { id: id.get_value(), approve, tenant });
    };
    let origin = match (&consent.client_host, consent.registered_by_owner) {
        (Some(host), _) => format!("Its identity is published by {host} ({}).", consent.client_id),
        (None, true) => "An owner of this Toolgate registered it.".to_string(),
        (None, false) => "It registered itself: Toolgate cannot vouch for who made it.".to_string(),
    };
    let done = move || decision.pending().get() || matches!(decision.value().get(), Some(Ok(_)));
    view! {
        <h2>{format!("{} wants to use Toolgate as you", consent.client)}</h2>
        <p class="muted">"Signed in as " <strong>{consent.username.clone()}</strong> "."</p>
        <p class="consent-origin">{origin}</p>
        <p class="consent-redirect">
            "After you answer, your browser goes back to " <strong>{consent.redirect_host.clone()}</strong>
            {consent.redirect_is_local.then_some(" (this computer)")} "."
        </p>
        {if consent.allowed {
            view! {
                {match consent.tenant.clone() {
                    Some(tenant) => view! { <p>"Tenant: " <strong class="consent-tenant">{tenant}</strong> " — " <code>{consent.resource.clone()}</code></p> }.into_any(),
                    None => view! {
                        <label>
                            "Tenant whose REST API it may use"
                            <select name="consent-tenant" on:change=move |ev| picked.set(event_target_value(&ev))>
                                {consent.choices.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                    }.into_any(),
                }}
                <p>"It will be able to:"</p>
                <ul class="scopes">
                    {consent.scopes.iter().map(|(_, what)| view! { <li>{what.clone()}</li> }).collect_view()}
                </ul>
                <p class="muted">"You can revoke it at any time under Connected apps."</p>
                <div class="actions">
                    <button type="button" class="primary" disabled=done on:click=move |_| answer(true)>"Allow"</button>
                    <button type="button" disabled=done on:click=move |_| answer(false)>"Deny"</button>
                </div>
            }
            .into_any()
        } else {
            view! {
                <p class="error" role="alert">
                    {match consent.tenant.clone() {
                        Some(tenant) => format!("Your account may not connect apps to tenant `{tenant}`: ask one of its administrators to add you as a member."),
                        None => "Your account belongs to no tenant that accepts apps: ask an administrator to add you.".to_string(),
                    }}
                </p>
                <div class="actions">
                    <button type="button" disabled=done on:click=move |_| answer(false)>"Back to the app"</button>
                </div>
            }
            .into_any()
        }}
    }
}
