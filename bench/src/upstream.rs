//! An rmcp upstream on a loopback port (streamable HTTP) publishing a fixed list of tools, for
//! the load benchmark and the tests: `echo` and `add` answer cheaply, so what is measured is
//! the path, not the work. It counts the clients that connect to it (`initialize` or
//! `server/discover`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverResult,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

/// How many tools the big upstream publishes.
pub const MANY: usize = 5_000;

/// The tools an upstream publishes, and how many clients connected.
#[derive(Clone)]
pub struct Upstream {
    tools: Arc<Vec<Tool>>,
    connections: Arc<AtomicUsize>,
}

impl Upstream {
    pub fn echo_and_add() -> Self {
        let schema = |v: Value| Arc::new(v.as_object().cloned().unwrap_or_default());
        Upstream::of(vec![
            Tool::new(
                "echo",
                "Says it back",
                schema(json!({"type": "object", "properties": {"message": {"type": "string"}}})),
            ),
            Tool::new(
                "add",
                "Adds two numbers",
                schema(
                    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
                ),
            ),
        ])
    }

    fn of(tools: Vec<Tool>) -> Self {
        Upstream { tools: Arc::new(tools), connections: Arc::default() }
    }

    /// [`MANY`] tools, each with a small schema of its own.
    pub fn many() -> Self {
        let tools = (0..MANY)
            .map(|i| {
                let schema = json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": format!("What tool {i} looks for")},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                }, "required": ["query"]});
                Tool::new(
                    format!("tool_{i:04}"),
                    format!("Tool number {i}, one of many"),
                    Arc::new(schema.as_object().cloned().unwrap_or_default()),
                )
            })
            .collect();
        Upstream::of(tools)
    }
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.connections.fetch_add(1, Ordering::SeqCst);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(&self, _: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        self.connections.fetch_add(1, Ordering::SeqCst);
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match request.name.as_ref() {
            "add" => (args.get("a").and_then(Value::as_f64).unwrap_or(0.0)
                + args.get("b").and_then(Value::as_f64).unwrap_or(0.0))
            .to_string(),
            _ => args.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
    }
}

/// A running upstream.
pub struct Served {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    connections: Arc<AtomicUsize>,
}

impl Served {
    /// How many MCP clients have connected to it.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Serves `upstream` over streamable HTTP on a loopback port, with `TCP_NODELAY` on accepted
/// connections as production servers set it.
pub async fn serve(upstream: Upstream) -> Result<Served> {
    let connections = upstream.connections.clone();
    let service = StreamableHttpService::new(
        move || Ok(upstream.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(
        async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await },
    );
    Ok(Served { url, connections })
}
