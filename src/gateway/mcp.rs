//! The MCP endpoint a tenant's LLM applications connect to: `/mcp/{tenant}`, streamable HTTP
//! (rmcp's `StreamableHttpService`), authenticated by the tenant's API keys.
//!
//! `tools/list` serves the tenant's visible tools from the live snapshot, rendered for MCP
//! (normalised, lint-clean); `tools/call` runs through the engine's executor. When the
//! tenant's tool list changes, connected sessions get `notifications/tools/list_changed`.
//!
//! What an upstream server asks of the caller during a call (sampling, elicitation) and the log
//! messages it sends are relayed to the session that made the call, and the answers back.
//!
//! A tenant with the meta tool on also offers `reset_equipped_tools(groups)`: a session may
//! choose its own active groups, which then replace the tenant's group activation for that
//! session only (and it gets `list_changed`).

use std::sync::{Arc, Mutex, OnceLock};

use engine::catalog::{Catalog, GroupInfo, TenantTools};
use engine::exec::{CallHooks, CallRequest, ExecError, Executor};
use engine::schema::Provider;
use engine::tool::{Caller, ClientRelay, RelayFuture, ToolOutput};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, ServerNotification,
    ServerRequest, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{RenderCache, TenantAccess, log_internal};

/// The rmcp service behind `/mcp/{tenant}`, its sessions kept by `sessions`. Requests must
/// name a loopback host or one of `public_hosts` (DNS-rebinding protection).
pub fn service(
    catalog: Catalog,
    executor: Executor,
    sessions: Arc<LocalSessionManager>,
    public_hosts: Vec<String>,
) -> StreamableHttpService<Gateway, LocalSessionManager> {
    let rendered = Arc::new(RenderCache::new(Provider::Mcp, |value| serde_json::from_value(value).ok()));
    let gateway = Gateway { catalog, executor, rendered, equipped: Arc::default() };
    let mut config = StreamableHttpServerConfig::default();
    config.allowed_hosts.extend(public_hosts);
    // Each session gets its own handler state.
    StreamableHttpService::new(
        move || Ok(Gateway { equipped: Arc::default(), ..gateway.clone() }),
        sessions,
        config,
    )
}

/// How often a session's `list_changed` watcher checks that the session is still open.
const SESSION_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// The meta tool letting a session choose its active groups.
const META_TOOL: &str = "reset_equipped_tools";

/// One MCP session's handler; all sessions share the rendering cache, the clones of one
/// session share its equipped groups.
#[derive(Clone)]
pub struct Gateway {
    catalog: Catalog,
    executor: Executor,
    rendered: Arc<RenderCache<Tool>>,
    equipped: Arc<Mutex<Option<Equipped>>>,
}

/// The groups a session chose with the meta tool, and its view for one snapshot version.
struct Equipped {
    groups: Vec<String>,
    version: u64,
    view: Arc<TenantTools>,
}

fn access(extensions: &rmcp::model::Extensions) -> Option<TenantAccess> {
    extensions.get::<axum::http::request::Parts>()?.extensions.get::<TenantAccess>().cloned()
}

impl Gateway {
    /// The tools this session sees, and whether they are its own choice of groups rather
    /// than the tenant's.
    fn view(&self, tenant: &str) -> Option<(Arc<TenantTools>, bool)> {
        let snapshot = self.catalog.snapshot();
        let tenant_view = snapshot.tenant(tenant)?.clone();
        let mut equipped = self.equipped.lock().expect("equipped groups");
        let Some(choice) = equipped.as_mut().filter(|_| tenant_view.meta_tool) else {
            return Some((tenant_view, false));
        };
        if choice.version != snapshot.version {
            // A group removed meanwhile leaves the choice.
            choice.groups.retain(|name| tenant_view.groups.iter().any(|g| &g.name == name));
            choice.view = Arc::new(tenant_view.equip(&choice.groups).expect("only known groups remain"));
            choice.version = snapshot.version;
        }
        Some((choice.view.clone(), true))
    }

    fn tool_names(&self, tenant: &str) -> Vec<String> {
        let view = self.view(tenant);
        view.map(|(v, _)| v.tools().iter().map(|t| t.exposed_name.clone()).collect()).unwrap_or_default()
    }

    /// Runs the meta tool: the session's active groups become `groups`.
    async fn equip(
        &self,
        tenant: &str,
        arguments: Option<JsonObject>,
        peer: &Peer<RoleServer>,
    ) -> CallToolResult {
        let failed = |message: String| CallToolResult::error(vec![ContentBlock::text(message)]);
        let groups: Option<Vec<String>> =
            arguments.and_then(|mut args| serde_json::from_value(args.remove("groups")?).ok());
        let Some(groups) = groups else {
            return failed("`groups` must be a list of group names".into());
        };
        let snapshot = self.catalog.snapshot();
        let Some(tenant_view) = snapshot.tenant(tenant) else {
            return failed(format!("unknown tenant `{tenant}`"));
        };
        let view = match tenant_view.equip(&groups) {
            Ok(view) => Arc::new(view),
            Err(unknown) => {
                let known: Vec<&str> = tenant_view.groups.iter().map(|g| g.name.as_str()).collect();
                return failed(format!(
                    "unknown groups: {}; the groups are: {}",
                    unknown.join(", "),
                    known.join(", ")
                ));
            }
        };
        let count = view.tools().len();
        *self.equipped.lock().expect("equipped groups") =
            Some(Equipped { groups: groups.clone(), version: snapshot.version, view });
        let _ = peer.notify_tool_list_changed().await;
        let message = format!("Equipped groups: {}. {count} tools are available now.", groups.join(", "));
        CallToolResult::success(vec![ContentBlock::text(message)])
    }
}

/// A session's client as the engine relays to it what an upstream server asks during a call
/// (sampling, elicitation) and the log messages it sends.
struct SessionRelay {
    peer: Peer<RoleServer>,
    /// Log messages on their way to the client, through one task started by the first of them.
    /// The queue is short: an upstream flooding messages faster than the client reads loses
    /// messages, not Toolgate's memory.
    notices: OnceLock<mpsc::Sender<ServerNotification>>,
}

/// How many relayed notifications wait for a slow client before more are dropped.
const NOTICE_BUFFER: usize = 256;

impl SessionRelay {
    fn new(peer: Peer<RoleServer>) -> Self {
        SessionRelay { peer, notices: OnceLock::new() }
    }

    fn notices(&self) -> &mpsc::Sender<ServerNotification> {
        self.notices.get_or_init(|| {
            let (sender, mut queue) = mpsc::channel(NOTICE_BUFFER);
            let peer = self.peer.clone();
            tokio::spawn(async move {
                while let Some(notification) = queue.recv().await {
                    let _ = peer.send_notification(notification).await;
                }
            });
            sender
        })
    }
}

impl ClientRelay for SessionRelay {
    fn request(&self, request: Value) -> RelayFuture {
        let peer = self.peer.clone();
        Box::pin(async move {
            let request: ServerRequest = serde_json::from_value(request).map_err(|e| e.to_string())?;
            let answer = peer.send_request(request).await.map_err(|e| e.to_string())?;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        })
    }

    fn notify(&self, notification: Value) {
        match serde_json::from_value::<ServerNotification>(notification) {
            Ok(notification) => {
                if self.notices().try_send(notification).is_err() {
                    tracing::debug!("upstream notification dropped: the client reads slower than it arrives");
                }
            }
            Err(err) => tracing::warn!(error = %err, "upstream notification not relayed"),
        }
    }
}

/// The meta tool's definition, offering `groups`.
fn meta_tool(groups: &[GroupInfo]) -> Option<Tool> {
    let listing: Vec<String> = groups
        .iter()
        .map(|g| {
            if g.description.is_empty() { g.name.clone() } else { format!("{} ({})", g.name, g.description) }
        })
        .collect();
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    serde_json::from_value(json!({
        "name": META_TOOL,
        "description": format!(
            "Choose which tool groups are active in this session; the tool list changes to match. Groups: {}.",
            listing.join("; ")
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                    "description": "The groups to activate; every other group is deactivated"
                }
            },
            "required": ["groups"]
        }
    }))
    .ok()
}

/// A tool's output as an MCP result, made by rmcp's constructors so that it carries
/// `resultType: "complete"`: clients on revision 2026-07-28 refuse a result without it, and
/// rmcp leaves it out for peers on older revisions.
fn mcp_result(output: ToolOutput) -> Result<CallToolResult, serde_json::Error> {
    let content = serde_json::from_value(serde_json::to_value(output.content)?)?;
    let mut result =
        if output.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    result.structured_content = output.structured;
    Ok(result)
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
            // The task ends with its session; rmcp has no signal for that, so it looks.
            let mut check = tokio::time::interval(SESSION_CHECK);
            loop {
                tokio::select! {
                    changed = versions.changed() => {
                        if changed.is_err() {
                            break;
                        }
                        let now = gateway.tool_names(&access.tenant);
                        if now != names {
                            names = now;
                            if peer.notify_tool_list_changed().await.is_err() {
                                break;
                            }
                        }
                    }
                    _ = check.tick() => if peer.is_transport_closed() {
                        break;
                    },
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
        let Some((view, equipped)) = self.view(&access.tenant) else {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        };
        let mut tools = if equipped {
            self.rendered.render(view.tools())
        } else {
            self.rendered.tools(&self.catalog, &access.tenant).as_ref().clone()
        };
        if view.meta_tool && view.resolve(META_TOOL).is_none() {
            tools.extend(meta_tool(&view.groups));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let access = access(&context.extensions).ok_or_else(not_authenticated)?;
        let (view, _) = self
            .view(&access.tenant)
            .ok_or_else(|| ErrorData::invalid_params(format!("unknown tenant `{}`", access.tenant), None))?;
        if view.meta_tool && request.name == META_TOOL && view.resolve(META_TOOL).is_none() {
            let result = self.equip(&access.tenant, request.arguments, &context.peer).await;
            return Ok(CallToolResponse::Complete(result));
        }
        let progress = context.meta.get_progress_token().map(|token| {
            let (sink, mut reports) = engine::tool::progress_channel();
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
        let hooks = CallHooks { progress, client: Some(Arc::new(SessionRelay::new(context.peer.clone()))) };
        match self.executor.call_in(&view, &Caller::ApiKey(access.key_id), call, hooks).await {
            Ok(result) => {
                let result =
                    mcp_result(result.output).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(CallToolResponse::Complete(result))
            }
            Err(err @ (ExecError::UnknownTool(_) | ExecError::UnknownTenant(_))) => {
                Err(ErrorData::invalid_params(err.to_string(), None))
            }
            // A tool error the LLM reads, so it can wait and call again.
            Err(ExecError::Busy(busy)) => {
                Ok(CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(
                    busy.to_string(),
                )])))
            }
            Err(err) => Err(ErrorData::internal_error(log_internal(&err), None)),
        }
    }
}
