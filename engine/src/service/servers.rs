//! Upstream MCP servers as an administrator sees them: what is stored, and how their
//! connections are doing.

use serde::Serialize;

use super::Services;
use crate::model::Name;
use crate::store::servers::{PendingChange, Server};
use crate::store::sources::ToolRecord;
use crate::store::{self, Result};
use crate::upstream::Health;

/// A server with the health of its connections (one, or one per tenant with credentials of
/// its own).
#[derive(Debug, Clone, Serialize)]
pub struct ServerEntry {
    pub server: Server,
    pub connections: Vec<Health>,
}

/// A server with its connections, its tools and the definition changes awaiting approval.
#[derive(Debug, Clone, Serialize)]
pub struct ServerDetail {
    #[serde(flatten)]
    pub entry: ServerEntry,
    pub tools: Vec<ToolRecord>,
    pub pending: Vec<PendingChange>,
}

/// Every server, with its connections.
pub async fn list(services: &Services) -> Result<Vec<ServerEntry>> {
    let health = services.upstreams.health();
    let servers = store::servers::list(&services.pool).await?;
    Ok(servers.into_iter().map(|server| with_connections(server, &health)).collect())
}

/// The server `name` in full.
pub async fn detail(services: &Services, name: &Name) -> Result<ServerDetail> {
    let server = store::servers::get(&services.pool, name).await?;
    let pending = store::servers::pending_changes(&services.pool, name).await?;
    let mut tools = store::sources::tools(&services.pool).await?;
    tools.retain(|tool| tool.source == name.as_str());
    Ok(ServerDetail { entry: with_connections(server, &services.upstreams.health()), tools, pending })
}

fn with_connections(server: Server, health: &[Health]) -> ServerEntry {
    let connections = health.iter().filter(|h| h.server == server.source.name).cloned().collect();
    ServerEntry { server, connections }
}
