//! The definition changes awaiting approval on a server's page: a tool's or a prompt's pinned
//! and published definitions side by side, to approve or reject.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::commands::ServerOp;
use crate::pages::ui::JsonBlock;

/// A tool's or a prompt's definition change: what is pinned and what the upstream publishes
/// now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingDefinition {
    pub prompt: bool,
    /// The tool's id, or the prompt's name at the server: what approving names.
    pub id: String,
    pub name: String,
    pub pinned: Value,
    pub pending: Value,
}

#[component]
pub(super) fn PendingChanges(
    pending: Vec<PendingDefinition>,
    run: impl Fn(ServerOp, Option<String>) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    if pending.is_empty() {
        return ().into_any();
    }
    view! {
        <h2>"Definition changes awaiting approval"</h2>
        <p class="muted">
            "The upstream now describes these tools or prompts differently. Until you decide, the pinned definition is served or the tool or prompt is held back."
        </p>
        {pending
            .into_iter()
            .map(|p| {
                let (approve_id, reject_id) = (p.id.clone(), p.id.clone());
                let (kind, approve, reject) = match p.prompt {
                    true => ("prompt", ServerOp::ApprovePrompt, ServerOp::RejectPrompt),
                    false => ("tool", ServerOp::Approve, ServerOp::Reject),
                };
                view! {
                    <section class="card diff">
                        <h3>{kind} " " {p.name.clone()}</h3>
                        <div class="side-by-side">
                            <JsonBlock label="Pinned (served)" value=p.pinned />
                            <JsonBlock label="Published now" value=p.pending />
                        </div>
                        <div class="actions">
                            <button type="button" class="primary" on:click=move |_| run(approve, Some(approve_id.clone()))>
                                "Approve the new definition"
                            </button>
                            <button type="button" on:click=move |_| run(reject, Some(reject_id.clone()))>
                                {format!("Reject (hold the {kind})")}
                            </button>
                        </div>
                    </section>
                }
            })
            .collect_view()}
    }
    .into_any()
}
