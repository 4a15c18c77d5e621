//! The MCP endpoint a tenant's LLM applications connect to: `/mcp/{tenant}`, streamable HTTP
//! (rmcp's `StreamableHttpService`), authenticated by the tenant's API keys.
//!
//! `tools/list` serves the tenant's visible tools from the live snapshot, rendered for MCP
//! (normalised, lint-clean); `tools/call` runs through the engine's executor. When the
//! tenant's tool list changes, connected sessions get `notifications/tools/list_changed`.

use std::sync::Arc;

use engine::catalog::Catalog;
use engine::exec::{CallRequest, ExecError, Executor};
use engine::schema::Provider;
use engine::tool::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

use super::{RenderCache, TenantAccess, log_internal};

/// The rmcp service behind `/mcp/{tenant}`. Requests must name a loopback host or one of
/// `public_hosts` (DNS-rebinding protection).
pub fn service(
    catalog: Catalog,
    executor: Executor,
    public_hosts: Vec<String>,
) -> StreamableHttpService<Gateway, LocalSessionManager> {
    let rendered = Arc::new(RenderCache::new(Provider::Mcp, |value| serde_json::from_value(value).ok()));
    let gateway = Gateway { catalog, executor, rendered };
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(public_hosts);
    StreamableHttpService::new(move || Ok(gateway.clone()), Default::default(), config)
}

/// One MCP session's handler; clones share the rendering cache.
#[derive(Clone)]
pub struct Gateway {
    catalog: Catalog,
    executor: Executor,
    rendered: Arc<RenderCache<Tool>>,
}

fn access(extensions: &rmcp::model::Extensions) -> Option<TenantAccess> {
    extensions.get::<axum::http::request::Parts>()?.extensions.get::<TenantAccess>().cloned()
}

impl Gateway {
    fn tool_names(&self, tenant: &str) -> Vec<String> {
        let snapshot = self.catalog.snapshot();
        let view = snapshot.tenant(tenant);
        view.map(|v| v.tools().iter().map(|t| t.exposed_name.clone()).collect()).unwrap_or_default()
    }
}

fn not_authenticated() -> ErrorData {
    ErrorData::invalid_request("the request carries no tenant authentication", None)
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(access) = access(&context.extensions) else { return };
        let (gateway, peer) = (self.clone(), context.peer);
        tokio::spawn(async move {
            let mut versions = gateway.catalog.versions();
            let mut names = gateway.tool_names(&access.tenant);
            while versions.changed().await.is_ok() {
                let now = gateway.tool_names(&access.tenant);
                if now != names {
                    names = now;
                    if peer.notify_tool_list_changed().await.is_err() {
                        break; // the session is gone
                    }
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let tools = self.rendered.tools(&self.catalog, &access.tenant);
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let progress = context.meta.get_progress_token().map(|token| {
            let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel::<engine::tool::Progress>();
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(report) = reports.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), report.progress);
                    param.total = report.total;
                    param.message = report.message;
                    let _ = peer.notify_progress(param).await;
                }
            });
            sink
        });
        let call = CallRequest {
            name: request.name.to_string(),
            arguments: request.arguments.map(Value::Object).unwrap_or(Value::Null),
        };
        match self.executor.call(&access.tenant, &Caller::ApiKey(access.key_id), call, progress).await {
            Ok(result) => {
                let output = serde_json::to_value(&result.output)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let result = serde_json::from_value(output)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(CallToolResponse::Complete(result))
            }
            Err(err @ (ExecError::UnknownTool(_) | ExecError::UnknownTenant(_))) => {
                Err(ErrorData::invalid_params(err.to_string(), None))
            }
            Err(err) => Err(ErrorData::internal_error(log_internal(&err), None)),
        }
    }
}
