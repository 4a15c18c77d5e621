//! MCP servers: the list with health, registering one (after testing its connection), and a
//! server's page with its tools and the definition changes awaiting approval.

mod page;
mod register;

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

pub use page::ServerPage;
use register::{SaveServer, ServerFormCard};

use super::ui::{StatusBadge, kept_current, loaded, succeeded};
use crate::error::PanelError;

/// A server as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub name: String,
    pub transport: String,
    /// The URL, or the command line of a stdio server (and the directory it runs in).
    pub target: String,
    pub tags: Vec<String>,
    /// "shared", or the owning tenant.
    pub scope: String,
    pub enabled: bool,
    /// The connection's status in this process, or "disabled".
    pub status: String,
    pub last_error: Option<String>,
    pub tool_count: usize,
    /// Tools held back or with a definition change awaiting approval.
    pub awaiting: usize,
    /// The MCP revision its connection speaks, once connected.
    pub protocol: Option<String>,
}
#[cfg(feature = "ssr")]
pub(super) mod ssr {
    use engine::service::Owner;
    use engine::service::servers::ServerEntry;
    use engine::service::servers::ToolRecord;
    use engine::service::tenants::Tenant;

    use super::ServerSummary;
    use crate::error::PanelError;
    use crate::server::state;

    /// Every server as the list shows it, given every tool (which callers need too).
    pub async fn summaries(owner: &Owner, tools: &[ToolRecord]) -> Result<Vec<ServerSummary>, PanelError> {
        let state = state();
        let tenants = engine::service::tenants::all(&state, owner).await?;
        let servers = engine::service::servers::list(&state, owner).await?;
        Ok(servers.iter().map(|entry| summary(entry, &tenants, tools)).collect())
    }

    /// A server as the list shows it, given every tenant and tool.
    pub fn summary(entry: &ServerEntry, tenants: &[Tenant], tools: &[ToolRecord]) -> ServerSummary {
        let server = &entry.server;
        let name = server.source.name.clone();
        let connection = entry.connections.iter().find(|h| h.tenant_id.is_none());
        let own_tools: Vec<_> = tools.iter().filter(|t| t.source == name).collect();
        ServerSummary {
            transport: server.transport.as_str().into(),
            target: match &server.url {
                Some(url) => url.clone(),
                None => {
                    let line = std::iter::once(server.command.clone().unwrap_or_default())
                        .chain(server.args.iter().cloned())
                        .collect::<Vec<_>>()
                        .join(" ");
                    match &server.cwd {
                        Some(cwd) => format!("{line} (in {cwd})"),
                        None => line,
                    }
                }
            },
            tags: server.source.tags.clone(),
            scope: server
                .source
                .tenant_id
                .and_then(|id| tenants.iter().find(|t| t.id == id).map(|t| t.slug.clone()))
                .unwrap_or_else(|| "shared".into()),
            enabled: server.source.enabled,
            status: status(entry),
            last_error: connection.and_then(|c| c.last_error.clone()),
            protocol: connection.and_then(|c| c.protocol.clone()),
            tool_count: own_tools.len(),
            awaiting: own_tools.iter().filter(|t| t.held || t.pending).count(),
            name,
        }
    }

    /// How a server is doing: disabled, or its shared connection's status.
    pub fn status(entry: &ServerEntry) -> String {
        let connection = entry.connections.iter().find(|h| h.tenant_id.is_none());
        match (entry.server.source.enabled, connection) {
            (false, _) => "disabled".into(),
            (true, Some(c)) => c.status.as_str().into(),
            (true, None) => "connecting".into(),
        }
    }
}

#[server]
pub async fn list_servers() -> Result<Vec<ServerSummary>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let tools = engine::service::servers::tools(&state(), &owner).await?;
    ssr::summaries(&owner, &tools).await
}
#[component]
pub fn ServersPage() -> impl IntoView {
    let register = ServerAction::<SaveServer>::new();
    let registered = succeeded(register);
    let servers = Resource::new(move || registered.get(), |_| list_servers());
    kept_current(servers, || (), |()| list_servers(), PartialEq::eq);
    let query = leptos_router::hooks::use_query_map();
    let deleted = move || query.read().get("deleted");
    view! {
        <Title text="Servers" />
        <h1>"Servers"</h1>
        {move || deleted().map(|name| view! { <p class="notice ok" role="status">{format!("Deleted the server {name} and its tools.")}</p> })}
        {loaded(servers, |servers| view! { <ServerTable servers /> })}
        <ServerFormCard save=register />
    }
}

#[component]
fn ServerTable(servers: Vec<ServerSummary>) -> impl IntoView {
    if servers.is_empty() {
        return view! { <p class="muted">"No MCP server is registered yet."</p> }.into_any();
    }
    view! {
        <div class="scroll">
        <table class="grid">
            <thead>
                <tr>
                    <th>"Server"</th>
                    <th>"Status"</th>
                    <th>"Tools"</th>
                    <th>"Tags"</th>
                    <th>"Scope"</th>
                    <th>"Last error"</th>
                </tr>
            </thead>
            <tbody>
                {servers
                    .into_iter()
                    .map(|s| {
                        view! {
                            <tr>
                                <td>
                                    <a href=format!("/servers/{}", s.name)>{s.name.clone()}</a>
                                    <div class="muted small">{s.transport} " · " {s.target}</div>
                                </td>
                                <td>
                                    <StatusBadge status=s.status />
                                </td>
                                <td>
                                    {s.tool_count}
                                    {(s.awaiting > 0)
                                        .then(|| {
                                            view! {
                                                <span class="status status-pending">
                                                    {s.awaiting} " awaiting approval"
                                                </span>
                                            }
                                        })}
                                </td>
                                <td>{s.tags.join(", ")}</td>
                                <td>{s.scope}</td>
                                <td class="small">{s.last_error.unwrap_or_default()}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        </div>
    }
    .into_any()
}
