//! The playground's tool search: what an agent searching the tenant's tools would find for a
//! request, best first, with the scores; a tool found can be chosen to run.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;
use crate::pages::ui::ErrorNote;

/// A tool a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Found {
    pub name: String,
    pub server: String,
    pub description: String,
    pub score: f32,
}

#[server]
pub async fn playground_search(tenant: String, query: String) -> Result<Vec<Found>, PanelError> {
    use crate::server::{caller, state};
    /// How many tools the playground's search shows.
    const SHOWN: usize = 10;
    let caller = caller().await?;
    let tenant = caller.tenant(&tenant)?;
    let found = engine::service::tenants::search(&state(), &tenant, &query, SHOWN).await?;
    Ok(found
        .into_iter()
        .map(|f| Found { name: f.name, server: f.server, description: f.description, score: f.score })
        .collect())
}

/// A search box over the tenant's tools; `choose` takes the name of the tool picked.
#[component]
pub(super) fn ToolSearch(
    tenant: RwSignal<String>,
    choose: impl Fn(String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    // Each answer carries the tenant it was asked for: one of another tenant is not shown.
    let search = Action::new(|(asked, words): &(String, String)| {
        let (asked, words) = (asked.clone(), words.clone());
        async move { (asked.clone(), playground_search(asked, words).await) }
    });
    let found =
        move || search.value().get().filter(|(asked, _)| *asked == tenant.get()).map(|(_, found)| found);
    view! {
        <section class="card tool-search">
            <h2>"Find a tool"</h2>
            <form class="filters" on:submit=move |ev| {
                ev.prevent_default();
                if !query.read().trim().is_empty() {
                    search.dispatch((tenant.get(), query.get()));
                }
            }>
                <input
                    type="search"
                    name="tool-search"
                    placeholder="What an agent would ask for, in its words"
                    prop:value=move || query.get()
                    on:input=move |ev| query.set(event_target_value(&ev))
                />
                <button type="submit" disabled=move || tenant.read().is_empty() || search.pending().get()>"Search"</button>
            </form>
            <ErrorNote error=move || found().and_then(Result::err).map(|err| err.to_string()) />
            {move || {
                found().and_then(Result::ok).map(|list| {
                    if list.is_empty() {
                        return view! { <p class="muted">"No tool of this tenant matches these words."</p> }.into_any();
                    }
                    view! {
                        <table class="grid found">
                            <thead>
                                <tr><th>"Tool"</th><th>"Server"</th><th>"Score"</th><th>"Description"</th></tr>
                            </thead>
                            <tbody>
                                {list.into_iter().map(|f| {
                                    let name = f.name.clone();
                                    view! {
                                        <tr>
                                            <td><button type="button" class="link" on:click=move |_| choose(name.clone())><code>{f.name}</code></button></td>
                                            <td>{f.server}</td>
                                            <td>{format!("{:.2}", f.score)}</td>
                                            <td class="small">{f.description}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }
                    .into_any()
                })
            }}
        </section>
    }
}
