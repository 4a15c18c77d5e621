//! What an admin does to a server from its page: enable, disable, delete or refresh it,
//! approve or reject a definition change, forget an OAuth authorization.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;

/// What an admin does to a server, or (`Approve`, `Reject`) to one of its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerOp {
    Enable,
    Disable,
    Delete,
    /// Discover its tools now.
    Refresh,
    /// Serve the tool's pending definition (or the held tool).
    Approve,
    /// Keep the tool held rather than serve its pending definition.
    Reject,
    /// The same for one of its prompts (named by its name at the server).
    ApprovePrompt,
    RejectPrompt,
    /// Forget one of its OAuth authorizations.
    Forget,
}

/// Does `command` to the server `name` (and to the tool or authorization `id` for their
/// commands).
#[server]
pub async fn server_command(
    name: String,
    command: ServerOp,
    id: Option<String>,
) -> Result<String, PanelError> {
    use axum::http::StatusCode;
    use engine::service::servers;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let server = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    let target = |what: &str| {
        id.as_deref()
            .and_then(|id| id.parse::<uuid::Uuid>().ok())
            .ok_or_else(|| PanelError::rejected(StatusCode::BAD_REQUEST, format!("which {what}?")))
    };
    let tool = || target("tool");
    let prompt = || id.clone().ok_or_else(|| PanelError::rejected(StatusCode::BAD_REQUEST, "which prompt?"));
    let done = match command {
        ServerOp::Enable | ServerOp::Disable => {
            let enable = command == ServerOp::Enable;
            servers::set_enabled(&state, &owner, &server, enable).await?;
            format!("{name} {}", if enable { "enabled" } else { "disabled" })
        }
        ServerOp::Delete => {
            servers::delete(&state, &owner, &server).await?;
            format!("{name} deleted")
        }
        ServerOp::Refresh => {
            let report = servers::refresh(&state, &owner, &server).await?;
            format!(
                "Discovered: {} added, {} changed, {} removed, {} unchanged",
                report.added.len(),
                report.changed.len(),
                report.removed.len(),
                report.unchanged
            )
        }
        ServerOp::Approve => {
            servers::approve(&state, &owner, tool()?).await?;
            "Approved".into()
        }
        ServerOp::Reject => {
            servers::reject(&state, &owner, tool()?).await?;
            "Rejected: the tool stays held".into()
        }
        ServerOp::ApprovePrompt => {
            servers::approve_prompt(&state, &owner, &server, &prompt()?).await?;
            "Approved".into()
        }
        ServerOp::RejectPrompt => {
            servers::reject_prompt(&state, &owner, &server, &prompt()?).await?;
            "Rejected: the prompt stays held".into()
        }
        ServerOp::Forget => {
            servers::remove_authorization(&state, &owner, &server, target("authorization")?).await?;
            "Authorization forgotten".into()
        }
    };
    Ok(done)
}
