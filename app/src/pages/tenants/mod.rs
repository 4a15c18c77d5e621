//! Tenants: the list, and a tenant's page — tag and group toggles, limits, per-tool
//! overrides, exactly what its LLM sees (with its size in tokens), name conflicts, API keys,
//! and the tenant itself (rename, disable, delete).

mod choices;
mod items;
mod keys;
mod limits;
mod overrides;
mod page;
mod people;
mod snippets;
mod standing;

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

pub(crate) use items::ItemKey;
#[cfg(feature = "ssr")]
pub(crate) use items::item_ref;
pub use page::TenantPage;

use super::shell::OwnersOnly;
use super::ui::{ErrorNote, action_error, grid, loaded, succeeded};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantRow {
    pub slug: String,
    pub name: String,
    pub tools: usize,
    pub keys: usize,
    pub enabled: bool,
}

#[server]
pub async fn list_tenants() -> Result<Vec<TenantRow>, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    Ok(engine::service::tenants::summaries(&state(), &caller)
        .await?
        .into_iter()
        .map(|summary| TenantRow {
            tools: summary.tools,
            keys: summary.active_keys,
            enabled: summary.tenant.enabled,
            slug: summary.tenant.slug,
            name: summary.tenant.name,
        })
        .collect())
}

#[server]
pub async fn create_tenant(slug: String, name: String) -> Result<String, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let slug = engine::model::TenantSlug::parse(slug.trim()).map_err(engine::Error::from)?;
    engine::service::tenants::create(&state(), &owner, &slug, name.trim()).await?;
    Ok(slug.to_string())
}

#[component]
pub fn TenantsPage() -> impl IntoView {
    let create = ServerAction::<CreateTenant>::new();
    let created = succeeded(create);
    let tenants = Resource::new(move || created.get(), |_| list_tenants());
    let query = leptos_router::hooks::use_query_map();
    let deleted = move || query.read().get("deleted");
    view! {
        <Title text="Tenants" />
        <h1>"Tenants"</h1>
        {move || deleted().map(|slug| view! { <p class="notice ok" role="status">{format!("Deleted the tenant {slug}.")}</p> })}
        {loaded(
            tenants,
            |tenants| {
                grid(tenants, "No tenant yet.", &["Tenant", "Name", "Visible tools", "Active keys"], |t| {
                    view! {
                        <tr class:revoked=!t.enabled>
                            <td>
                                <a href=format!("/tenants/{}", t.slug)>{t.slug.clone()}</a>
                            </td>
                            <td>{t.name}{(!t.enabled).then_some(" (disabled)")}</td>
                            <td>{t.tools}</td>
                            <td>{t.keys}</td>
                        </tr>
                    }
                    .into_any()
                })
            },
        )}
        <OwnersOnly>
        <section class="card form-card">
            <h2>"New tenant"</h2>
            <ActionForm action=create attr:class="inline-form">
                <label>
                    "Slug"
                    <input type="text" name="slug" placeholder="acme" required />
                </label>
                <label>
                    "Name"
                    <input type="text" name="name" placeholder="Acme Corp" required />
                </label>
                <button type="submit" class="primary" disabled=move || create.pending().get()>
                    "Create"
                </button>
            </ActionForm>
            <ErrorNote error=action_error(create) />
        </section>
        </OwnersOnly>
    }
}
