//! Connected apps: the MCP clients (agents) a person authorized, each of which they can revoke;
//! and how to connect one. Every signed-in account has this page; it is all a member sees.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use super::ui::{Confirm, CopyButton, ErrorNote, action_error, grid, loaded, succeeded};
use crate::error::PanelError;

/// An app someone authorized, as the panel lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppRow {
    pub id: String,
    pub client: String,
    /// Where the client comes from: the host of its metadata document, "registered itself", or
    /// "registered by an owner".
    pub origin: String,
    pub username: String,
    pub tenant: String,
    pub endpoint: String,
    pub scopes: String,
    pub authorized: String,
    pub last_used: Option<String>,
}

#[cfg(feature = "ssr")]
pub(crate) mod ssr {
    use engine::service::apps::{ClientKind, Grant};

    use super::AppRow;
    use crate::server::minute;

    impl From<Grant> for AppRow {
        fn from(grant: Grant) -> Self {
            let origin = match grant.client_kind {
                ClientKind::MetadataDocument => reqwest_host(&grant.client_id),
                ClientKind::Dynamic => "registered itself".to_string(),
                ClientKind::Preregistered => "registered by an owner".to_string(),
            };
            AppRow {
                id: grant.id.to_string(),
                client: grant.client_name,
                origin,
                username: grant.username,
                tenant: grant.tenant,
                endpoint: grant.resource,
                scopes: grant.scopes.join(" "),
                authorized: minute(grant.created_at),
                last_used: grant.last_used_at.map(minute),
            }
        }
    }

    /// The host of a metadata document's URL (its client id).
    fn reqwest_host(id: &str) -> String {
        id.split_once("://")
            .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(rest).to_string())
            .unwrap_or_else(|| id.to_string())
    }
}

/// What the signed-in person sees: their apps, and the endpoints they may connect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mine {
    pub apps: Vec<AppRow>,
    /// `(tenant, MCP endpoint URL)` of each tenant they may authorize apps for.
    pub endpoints: Vec<(String, String)>,
}

#[server]
pub async fn my_apps() -> Result<Mine, PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::{issuer, state};
    let account = require_admin().await?;
    let state = state();
    let apps = engine::service::apps::mine(&state, &account).await?.into_iter().map(AppRow::from).collect();
    let tenants = engine::service::apps::tenants_of(&state, &account).await?;
    let issuer = issuer().await;
    let endpoints = tenants.into_iter().map(|slug| (slug.clone(), format!("{issuer}/mcp/{slug}"))).collect();
    Ok(Mine { apps, endpoints })
}

#[server]
pub async fn revoke_my_app(id: String) -> Result<(), PanelError> {
    use crate::auth::ssr::require_admin;
    use crate::server::state;
    let account = require_admin().await?;
    let id = id.parse().map_err(|_| PanelError::invalid("which app?"))?;
    Ok(engine::service::apps::revoke_mine(&state(), &account, id).await?)
}

/// A table of apps, each with a revoke button that runs `revoke` with its id.
pub fn app_table(
    apps: Vec<AppRow>,
    empty: &'static str,
    with_person: bool,
    revoke: Callback<String>,
) -> AnyView {
    let headers: &'static [&'static str] = if with_person {
        &["App", "From", "Person", "Endpoint", "Authorized", "Last used", ""]
    } else {
        &["App", "From", "Endpoint", "Authorized", "Last used", ""]
    };
    grid(apps, empty, headers, move |app| {
        let id = StoredValue::new(app.id.clone());
        view! {
            <tr>
                <td>{app.client.clone()}</td>
                <td class="muted">{app.origin}</td>
                {with_person.then(|| view! { <td>{app.username.clone()}</td> })}
                <td><code>{app.endpoint}</code></td>
                <td>{app.authorized}</td>
                <td>{app.last_used.unwrap_or_else(|| "never".into())}</td>
                <td>
                    <Confirm
                        ask="Revoke…"
                        confirm=format!("Revoke {} now", app.client)
                        keep="Keep it"
                        on_confirm=Callback::new(move |()| revoke.run(id.get_value()))
                    />
                </td>
            </tr>
        }
        .into_any()
    })
}

/// How an OAuth-capable MCP client connects, with no key: the endpoint URL is all it needs.
#[component]
pub fn ConnectSteps(endpoint: String) -> impl IntoView {
    view! {
        <div class="connect">
            <p>
                "Add " <code class="endpoint">{endpoint.clone()}</code> <CopyButton text=endpoint />
                " as a remote MCP server in an OAuth-capable client (Claude, ChatGPT, VS Code, Cursor, MCP Inspector, "
                <code>"npx mcp-remote <url>"</code> "). It opens this site: sign in, check what it asks, and approve. No key goes into any file."
            </p>
        </div>
    }
}

#[component]
pub fn AppsPage() -> impl IntoView {
    let revoke = ServerAction::<RevokeMyApp>::new();
    let revoked = succeeded(revoke);
    let apps = Resource::new(move || revoked.get(), |_| my_apps());
    view! {
        <Title text="Connected apps" />
        <h1>"Connected apps"</h1>
        <p class="muted">
            "The agents and apps you allowed to use Toolgate as you. Revoking one stops it at once; it must ask you again."
        </p>
        {loaded(apps, move |mine| {
            let revoke_app = Callback::new(move |id| {
                revoke.dispatch(RevokeMyApp { id });
            });
            view! {
                <section class="card">
                    <h2>"Your apps"</h2>
                    {app_table(mine.apps, "No app is connected yet.", false, revoke_app)}
                    <ErrorNote error=action_error(revoke) />
                </section>
                <section class="card">
                    <h2>"Connect an agent"</h2>
                    {if mine.endpoints.is_empty() {
                        view! { <p class="muted">"You belong to no tenant yet: ask an administrator to add you."</p> }.into_any()
                    } else {
                        mine.endpoints
                            .into_iter()
                            .map(|(tenant, endpoint)| view! { <h3>{tenant}</h3> <ConnectSteps endpoint /> })
                            .collect_view()
                            .into_any()
                    }}
                </section>
            }
        })}
    }
}
