//! The catalog's prompts, resources and resource templates: every one a server offers, and
//! which tenants' clients see it now. A tenant hides, renames or describes one on its page;
//! groups hold them on the groups page.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::tenants::ItemKey;
use super::ui::{grid, loaded, seen_by};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRow {
    pub item: ItemKey,
    pub description: String,
    /// The tenants whose clients see it now.
    pub tenants: Vec<String>,
}

#[server]
pub async fn list_items() -> Result<Vec<ItemRow>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let offered = engine::service::global::offered_items(&state, &owner).await?;
    let mut seen = engine::service::servers::items_seen_by(&state, &owner);
    Ok(offered
        .into_iter()
        .map(|offered| {
            let key = (offered.item.server.to_string(), offered.item.kind, offered.item.key.clone());
            ItemRow {
                tenants: seen.remove(&key).unwrap_or_default(),
                item: offered.item.into(),
                description: offered.description,
            }
        })
        .collect())
}

/// Every prompt, resource and template of the catalog, with who sees it.
#[component]
pub fn CatalogItems() -> impl IntoView {
    let items = Resource::new(|| (), |_| list_items());
    view! {
        <section class="card catalog-items">
            <h2>"Prompts and resources"</h2>
            <p class="muted">
                "What the servers offer besides tools. A tenant hides, renames or describes one on its page; "
                <a href="/groups">"groups"</a> " hold them beside tools."
            </p>
            {loaded(items, |items| grid(items, "No server offers a prompt or resource.", &["Kind", "Name", "Server", "Seen by", "Description"], |row| {
                view! {
                    <tr>
                        <td>{row.item.kind.replace('_', " ")}</td>
                        <td><code>{row.item.key}</code></td>
                        <td><a href=format!("/servers/{}", row.item.server)>{row.item.server.clone()}</a></td>
                        <td class="seen-by small">{seen_by(row.tenants)}</td>
                        <td class="description">{row.description}</td>
                    </tr>
                }
                .into_any()
            }))}
        </section>
    }
}
