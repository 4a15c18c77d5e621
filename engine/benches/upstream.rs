//! Added latency of a tools/call proxied through Toolgate's executor and upstream pool over
//! the same call made directly with an rmcp client, against one rmcp server on loopback
//! (streamable HTTP), at concurrency 1 and 16 (`make bench`).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::catalog::{Catalog, CatalogOptions};
use engine::exec::{CallRequest, ExecConfig, Executor};
use engine::model::{Name, TenantSlug};
use engine::secret::SecretBox;
use engine::store::servers;
use engine::store::{self, Actor};
use engine::tool::Caller;
use engine::upstream::{UpstreamConfig, Upstreams};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, ClientConfig, ServerCapabilities, ServerConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde_json::json;

use common::{fresh_database, report};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SumArgs {
    a: i64,
    b: i64,
}

#[derive(Clone)]
struct Sum {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Sum {
    #[tool(description = "Add two integers")]
    fn add(&self, Parameters(SumArgs { a, b }): Parameters<SumArgs>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Sum {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

const CALLS: usize = 2000;

/// Runs `calls` of `call` at `concurrency`, returning each call's latency.
async fn measure<F, Fut>(concurrency: usize, call: F) -> Vec<Duration>
where
    F: Fn(i64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let per_task = CALLS / concurrency;
    let tasks: Vec<_> = (0..concurrency)
        .map(|t| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_task);
                for i in 0..per_task {
                    let started = Instant::now();
                    call((t * per_task + i) as i64).await;
                    samples.push(started.elapsed());
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::with_capacity(CALLS);
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

#[tokio::main]
async fn main() {
    if !common::benchmarking() {
        return;
    }
    let service: StreamableHttpService<Sum, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Sum { tool_router: Sum::tool_router() }),
        Default::default(),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await.unwrap()
    });

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()),
    );
    let direct = Arc::new(ClientConfig::default().serve(transport).await.unwrap());

    let pool = fresh_database("bench_upstream").await;
    let secrets = SecretBox::from_key(&[6; 32]).unwrap();
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let upstreams =
        Upstreams::start(pool.clone(), secrets.clone(), catalog.clone(), UpstreamConfig::default());
    let new = servers::ServerConfig::http(Name::parse("sum").unwrap(), url);
    servers::create(&pool, &secrets, &Actor::system(), &new).await.unwrap();
    let executor =
        Executor::new(catalog.clone(), pool, secrets, &[], Some(Arc::new(upstreams)), ExecConfig::default());
    while catalog.snapshot().tenant("acme").unwrap().resolve("sum_add").is_none() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    for concurrency in [1, 16] {
        let client = direct.clone();
        let direct_samples = measure(concurrency, move |i| {
            let client = client.clone();
            async move {
                let args = json!({"a": i, "b": 1}).as_object().cloned().unwrap();
                client.call_tool(CallToolRequestParams::new("add").with_arguments(args)).await.unwrap();
            }
        })
        .await;
        let exec = executor.clone();
        let proxied_samples = measure(concurrency, move |i| {
            let exec = exec.clone();
            async move {
                let request = CallRequest { name: "sum_add".into(), arguments: json!({"a": i, "b": 1}) };
                exec.call("acme", &Caller::Admin("bench".into()), request, None).await.unwrap();
            }
        })
        .await;
        report(&format!("direct rmcp tools/call, c={concurrency}"), direct_samples);
        report(&format!("through Toolgate (exec + upstream pool), c={concurrency}"), proxied_samples);
    }
}
