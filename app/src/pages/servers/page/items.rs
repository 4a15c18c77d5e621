//! The prompts, resources and resource templates a server offers, as its page lists them,
//! with the held ones to approve.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::commands::ServerOp;
use crate::pages::ui::StatusBadge;

/// A prompt, resource or resource template the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerItem {
    /// "prompt", "resource", "resource template".
    pub kind: String,
    /// What clients know it by: a prompt's exposed name, a URI, a URI template.
    pub name: String,
    pub description: String,
    /// The server's own name for it (what approving a prompt names).
    pub key: String,
    /// Not served: its change awaits approval, or was rejected.
    pub held: bool,
    /// A changed listing awaits approval (above, beside the tools' changes).
    pub pending: bool,
}

/// The server's prompts, resources and templates, served to every tenant that may use the
/// server.
pub(super) fn items_table(
    items: Vec<ServerItem>,
    run: impl Fn(ServerOp, Option<String>) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    (!items.is_empty()).then(|| {
        view! {
            <h2>"Prompts and resources"</h2>
            <p class="muted">"Served to every tenant that may use this server, under its tags."</p>
            <div class="scroll">
                <table class="grid items">
                    <thead>
                        <tr>
                            <th>"Kind"</th>
                            <th>"Name"</th>
                            <th>"Description"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {items
                            .into_iter()
                            .map(|item| {
                                view! {
                                    <tr>
                                        <td>{item.kind}</td>
                                        <td>
                                            <code>{item.name}</code>
                                            {item.held.then(|| view! { " " <StatusBadge status="held" /> })}
                                            {(item.held && !item.pending)
                                                .then(|| {
                                                    let key = item.key.clone();
                                                    view! {
                                                        " "
                                                        <button type="button" on:click=move |_| run(ServerOp::ApprovePrompt, Some(key.clone()))>
                                                            "Approve"
                                                        </button>
                                                    }
                                                })}
                                        </td>
                                        <td class="description">{item.description}</td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        }
    })
}
