//! What the executor asks of upstream MCP servers (the `upstream` module answers it).

use futures::future::BoxFuture;
use rmcp::model::{ClientRequest, ServerResult};
use serde_json::Value;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::catalog::CatalogTool;
use crate::tool::{ToolContext, ToolError, ToolFuture};

/// Runs calls on tools of MCP servers (see the upstream module).
pub trait Upstream: Send + Sync {
    fn call<'a>(&'a self, tool: &'a CatalogTool, arguments: Value, ctx: &'a ToolContext) -> ToolFuture<'a>;

    /// Sends `request` (about one of its prompts or resources) to `server`, for `ctx`'s tenant
    /// and caller, and returns the server's answer.
    fn forward<'a>(
        &'a self,
        server: ServerRef<'a>,
        request: ClientRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ServerResult, ToolError>>;

    /// Subscribes, for `ctx`'s tenant and caller, to updates of `uri` at `server`, until the
    /// answer is dropped.
    fn subscribe<'a>(
        &'a self,
        server: ServerRef<'a>,
        uri: &'a str,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Held, ToolError>>;

    /// Every resource update an upstream sends.
    fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdated>;
}

/// An upstream server says a resource changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUpdated {
    /// The upstream connection it came through: the subscriptions made through it are the
    /// ones it is for (another tenant's connection to the same server is another).
    pub connection: u64,
    pub uri: String,
}

/// A subscription an upstream holds until `guard` is dropped.
pub struct Held {
    /// Whose updates are its ([`ResourceUpdated::connection`]).
    pub connection: u64,
    pub guard: Box<dyn Send + Sync>,
}

/// An upstream server, by source id and name.
#[derive(Debug, Clone, Copy)]
pub struct ServerRef<'a> {
    pub id: Uuid,
    pub name: &'a str,
}
