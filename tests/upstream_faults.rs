//! Upstream MCP servers failing in every way we know of, behind a real `toolgate serve`
//! process: one killed under load and started again, and ones that never answer, answer after
//! the timeout, return 100 MiB, flood notifications or speak broken JSON-RPC. Each failure is a
//! clear error within its timeout, the other servers go on serving, the process's memory stays
//! bounded and no task is leaked.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use common::{json_of, start_process};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use toolgate_bench::ToolgateProcess;

/// The size of `huge`'s answer.
const HUGE: usize = 100 * 1024 * 1024;
/// How many progress reports and log messages `flood` sends before it answers.
const FLOOD: usize = 10_000;

/// An rmcp server whose tools misbehave on purpose.
#[derive(Clone)]
struct Faulty;

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let object = Arc::new(json!({"type": "object"}).as_object().cloned().unwrap());
        let tools = ["echo", "hang", "late", "huge", "flood", "refused"]
            .map(|name| Tool::new(name, format!("misbehaves: {name}"), object.clone()));
        Ok(ListToolsResult::with_all_items(tools.into()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = match request.name.as_ref() {
            "echo" => "echo".to_string(),
            "hang" => std::future::pending().await,
            "late" => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                "too late".into()
            }
            "huge" => "x".repeat(HUGE),
            "flood" => {
                let token = context.meta.get_progress_token();
                for i in 0..FLOOD {
                    if let Some(token) = &token {
                        let report = ProgressNotificationParam::new(token.clone(), i as f64);
                        let _ = context.peer.notify_progress(report).await;
                    }
                    #[allow(deprecated)]
                    let message = rmcp::model::LoggingMessageNotificationParam::new(
                        rmcp::model::LoggingLevel::Info,
                        json!(format!("message {i}")),
                    );
                    #[allow(deprecated)]
                    let _ = context.peer.notify_logging_message(message).await;
                }
                "flooded".into()
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
    }
}

struct Upstream {
    address: SocketAddr,
    stop: CancellationToken,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves `router` at `address` (port 0: any) until `stop` is cancelled or the returned
/// upstream is dropped.
async fn serve(address: SocketAddr, router: axum::Router, stop: CancellationToken) -> Upstream {
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, router).with_graceful_shutdown(shutdown.cancelled_owned()).await.unwrap();
    });
    Upstream { address, stop }
}

async fn serve_faulty(address: SocketAddr) -> Upstream {
    let stop = CancellationToken::new();
    let service: StreamableHttpService<Faulty, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Faulty),
        Default::default(),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None).with_cancellation_token(stop.clone()),
    );
    // `refused` is refused before it reaches the MCP server, as a proxy in front of one does.
    let refuse = |request: axum::extract::Request, next: axum::middleware::Next| async move {
        if request.headers().get("mcp-name").is_some_and(|name| name == "refused") {
            return (StatusCode::BAD_REQUEST, "the X-Tenant header is missing").into_response();
        }
        next.run(request).await
    };
    let router = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(refuse));
    // One token stops the listener and ends the MCP sessions, as a killed process would.
    serve(address, router, stop).await
}

/// A server that handshakes correctly, then answers `tools/call` with broken JSON-RPC: a cut
/// off body, the wrong protocol version, or an answer to a request nobody sent.
async fn serve_broken() -> Upstream {
    async fn answer(Json(message): Json<Value>) -> Response {
        let id = message["id"].clone();
        let result =
            |result: Value| Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response();
        match message["method"].as_str() {
            Some("initialize") => result(json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "1"},
            })),
            Some("tools/list") => {
                let tools = ["garbage", "wrong_version", "wrong_id"]
                    .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}));
                result(json!({"tools": tools}))
            }
            Some("tools/call") => {
                let body = match message["params"]["name"].as_str() {
                    Some("garbage") => r#"{"jsonrpc": "2.0", "id": "#.to_string(),
                    Some("wrong_version") => {
                        json!({"jsonrpc": "1.0", "id": id, "result": {"content": []}}).to_string()
                    }
                    _ => json!({"jsonrpc": "2.0", "id": 987_654, "result": {"content": []}}).to_string(),
                };
                ([(header::CONTENT_TYPE, "application/json")], body).into_response()
            }
            // Any other request (`server/discover` among them) is unknown; a notification is
            // accepted.
            Some(_) if !id.is_null() => Json(json!({
                "jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}
            }))
            .into_response(),
            _ => StatusCode::ACCEPTED.into_response(),
        }
    }
    let router = axum::Router::new().route("/mcp", axum::routing::post(answer));
    serve("127.0.0.1:0".parse().unwrap(), router, CancellationToken::new()).await
}

/// A Toolgate process with the given upstream servers, a tenant `acme` with `overrides`, and
/// a key of it.
struct Setup {
    toolgate: ToolgateProcess,
    token: String,
    key: String,
    http: reqwest::Client,
}

impl Setup {
    async fn start(pool: &PgPool, servers: &[(&str, SocketAddr)], overrides: Value) -> Self {
        let toolgate = start_process("serve", pool);
        let token = common::admin_token(pool, "faults").await;
        // No idle keep-alive connections: Toolgate serves each open one with a task, which the
        // task count below would take for work that outlived its calls.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let servers: Vec<Value> = servers
            .iter()
            .map(|(name, address)| {
                json!({"name": name, "transport": "streamable_http", "url": format!("http://{address}/mcp")})
            })
            .collect();
        let document = json!({"servers": servers, "tenants": [{"slug": "acme", "tools": overrides}]});
        let put = http.put(format!("{}/api/admin/v1/config", toolgate.url)).bearer_auth(&token);
        let applied = json_of(put.json(&document)).await;
        assert_eq!(applied["applied"], true, "{applied}");
        let create =
            http.post(format!("{}/api/admin/v1/tenants/acme/keys", toolgate.url)).bearer_auth(&token);
        let key = json_of(create.json(&json!({"name": "faults"}))).await["key"].as_str().unwrap().to_string();
        Setup { toolgate, token, key, http }
    }

    /// Waits until the tenant sees every one of `tools`.
    async fn until_visible(&self, tools: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let list = self
                .http
                .get(format!("{}/api/v1/tools?format=mcp", self.toolgate.url))
                .bearer_auth(&self.key);
            let listed = json_of(list).await;
            let names: Vec<&str> =
                listed["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
            if tools.iter().all(|tool| names.contains(tool)) {
                return;
            }
            assert!(Instant::now() < deadline, "never saw {tools:?}, only {names:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Calls `tool` over REST: its status, its text and how long it took.
    async fn call(&self, tool: &str) -> (String, String, Duration) {
        let started = Instant::now();
        let url = format!("{}/api/v1/tools/{tool}/invoke", self.toolgate.url);
        let response =
            self.http.post(url).bearer_auth(&self.key).json(&json!({"arguments": {}})).send().await;
        let response = response.unwrap_or_else(|err| panic!("{tool}: no answer: {err}"));
        assert_eq!(response.status(), StatusCode::OK, "{tool}");
        let body: Value = response.json().await.unwrap();
        let text: String = body["output"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        (body["status"].as_str().unwrap().to_string(), text, started.elapsed())
    }

    /// A number of the process's `/metrics`.
    async fn metric(&self, name: &str) -> f64 {
        let metrics = self.http.get(format!("{}/metrics", self.toolgate.url)).send().await.unwrap();
        let text = metrics.text().await.unwrap();
        let line =
            text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("no {name}"));
        line[name.len() + 1..].parse().unwrap()
    }

    /// The connection statuses the admin API shows for `server`.
    async fn health(&self, server: &str) -> Vec<String> {
        let list =
            self.http.get(format!("{}/api/admin/v1/servers", self.toolgate.url)).bearer_auth(&self.token);
        let servers = json_of(list).await;
        let entry =
            servers.as_array().unwrap().iter().find(|s| s["server"]["source"]["name"] == server).cloned();
        let connections = entry.map(|e| e["connections"].clone()).unwrap_or_default();
        connections
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["status"].as_str().unwrap().to_string())
            .collect()
    }

    /// The process's resident memory and its peak, in MiB.
    fn memory(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.toolgate.pid())).unwrap();
        let field = |name: &str| -> f64 {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0
        };
        (field("VmRSS:"), field("VmHWM:"))
    }
}

/// One call made by the load.
struct Sample {
    tool: &'static str,
    at: Instant,
    status: String,
    text: String,
    took: Duration,
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_killed_upstream_fails_fast_and_is_used_again_within_two_seconds_of_its_return(pool: PgPool) {
    let victim = serve_faulty("127.0.0.1:0".parse().unwrap()).await;
    let address = victim.address;
    let steady = serve_faulty("127.0.0.1:0".parse().unwrap()).await;
    let setup =
        Arc::new(Setup::start(&pool, &[("victim", address), ("steady", steady.address)], json!({})).await);
    setup.until_visible(&["victim_echo", "steady_echo"]).await;
    for _ in 0..20 {
        assert_eq!(setup.call("victim_echo").await.0, "ok");
    }
    let baseline_tasks = setup.metric("toolgate_runtime_alive_tasks").await;

    // Eight callers alternate between the two servers for as long as the test runs.
    let running = Arc::new(AtomicBool::new(true));
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let (setup, running) = (setup.clone(), running.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut turn = worker;
                while running.load(Ordering::SeqCst) {
                    let tool = if turn % 2 == 0 { "victim_echo" } else { "steady_echo" };
                    turn += 1;
                    let at = Instant::now();
                    let (status, text, took) = setup.call(tool).await;
                    samples.push(Sample { tool, at, status, text, took });
                }
                samples
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(500)).await;
    let killed = Instant::now();
    drop(victim);
    // Long enough for the reconnection backoff to grow past two seconds.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let outage_health = setup.health("victim").await;
    let steady_health = setup.health("steady").await;
    let restarted = Instant::now();
    let _victim = serve_faulty(address).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    running.store(false, Ordering::SeqCst);
    let mut samples = Vec::new();
    for worker in workers {
        samples.extend(worker.await.unwrap());
    }

    assert_eq!(outage_health, ["down"], "the victim's health during the outage");
    assert_eq!(steady_health, ["ready"]);
    let steady_calls: Vec<&Sample> = samples.iter().filter(|s| s.tool == "steady_echo").collect();
    assert!(steady_calls.len() > 50, "{} steady calls", steady_calls.len());
    for call in &steady_calls {
        assert_eq!(
            (call.status.as_str(), call.text.as_str()),
            ("ok", "echo"),
            "the other server keeps serving"
        );
    }
    let outage: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            s.tool == "victim_echo" && s.at > killed + Duration::from_millis(200) && s.at + s.took < restarted
        })
        .collect();
    assert!(outage.len() > 10, "{} calls during the outage", outage.len());
    for call in &outage {
        assert_eq!(call.status, "tool_error", "{}", call.text);
        assert!(call.text.contains("MCP server `victim` is unavailable"), "{}", call.text);
        assert!(call.took < Duration::from_millis(500), "fails fast, took {:?}", call.took);
    }
    let back = samples
        .iter()
        .filter(|s| s.tool == "victim_echo" && s.at > restarted && s.status == "ok")
        .map(|s| s.at + s.took - restarted)
        .min()
        .expect("no successful call after the restart");
    assert!(back <= Duration::from_secs(2), "calls succeeded again only {back:?} after the restart");
    let failed_after: Vec<(Duration, &str)> = samples
        .iter()
        .filter(|s| s.tool == "victim_echo" && s.at > restarted + Duration::from_secs(2) && s.status != "ok")
        .map(|s| (s.at - restarted, s.text.as_str()))
        .collect();
    assert!(failed_after.is_empty(), "calls still failing two seconds after the restart: {failed_after:?}");
    eprintln!(
        "{} calls; the victim served again {back:?} after its restart; {} calls during the outage, slowest {:?}",
        samples.len(),
        outage.len(),
        outage.iter().map(|s| s.took).max().unwrap_or_default()
    );

    // No task outlives its work: the runtime's task count returns to where it was.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = setup.metric("toolgate_runtime_alive_tasks").await;
        if tasks <= baseline_tasks + 2.0 {
            break;
        }
        assert!(Instant::now() < deadline, "{tasks} tasks alive, {baseline_tasks} before the load");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn misbehaving_upstreams_get_clear_errors_within_their_timeouts_and_bounded_memory(pool: PgPool) {
    let odd = serve_faulty("127.0.0.1:0".parse().unwrap()).await;
    let broken = serve_broken().await;
    let quick = json!({"timeout_ms": 500});
    let overrides = json!({
        "odd_hang": quick, "odd_late": quick,
        "broken_garbage": {"timeout_ms": 2000}, "broken_wrong_version": {"timeout_ms": 2000},
        "broken_wrong_id": {"timeout_ms": 2000},
    });
    let setup = Setup::start(&pool, &[("odd", odd.address), ("broken", broken.address)], overrides).await;
    setup.until_visible(&["odd_echo", "odd_hang", "broken_garbage"]).await;
    let (idle_rss, _) = setup.memory();

    // Never answering, or answering after the timeout: a timeout, and the connection still works.
    for tool in ["odd_hang", "odd_late"] {
        let (status, text, took) = setup.call(tool).await;
        assert_eq!(status, "timeout", "{tool}: {text}");
        assert!(text.contains("did not finish within 500ms"), "{tool}: {text}");
        assert!(took < Duration::from_millis(1500), "{tool} took {took:?}");
        assert_eq!(setup.call("odd_echo").await.0, "ok", "after {tool}");
    }

    // Broken JSON-RPC: an error within the timeout, saying what happened; nothing internal.
    for tool in ["broken_garbage", "broken_wrong_version", "broken_wrong_id"] {
        let (status, text, took) = setup.call(tool).await;
        assert!(["tool_error", "timeout"].contains(&status.as_str()), "{tool}: {status} {text}");
        assert!(text.contains("MCP server `broken`") || text.contains("did not finish"), "{tool}: {text}");
        assert!(took < Duration::from_millis(3000), "{tool} took {took:?}");
        assert_eq!(setup.call("odd_echo").await.0, "ok", "after {tool}");
    }

    // An HTTP failure says what the server said.
    let (status, text, _) = setup.call("odd_refused").await;
    assert_eq!(status, "tool_error", "{text}");
    assert!(text.contains("HTTP 400 Bad Request: the X-Tenant header is missing"), "{text}");

    // 100 MiB: more than an answer may be. The connection is dropped rather than read into
    // memory, the caller is told, and the server is used again at once.
    let (status, text, _) = setup.call("odd_huge").await;
    assert_eq!(status, "tool_error", "{}", &text[..text.len().min(300)]);
    assert!(text.contains("answer was over the 16 MiB limit"), "{text}");
    let deadline = Instant::now() + Duration::from_secs(2);
    while setup.call("odd_echo").await.0 != "ok" {
        assert!(Instant::now() < deadline, "odd was not used again within 2 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, peak) = setup.memory();

    // A notification flood: the call completes and others are served meanwhile.
    let flood = setup.call("odd_flood");
    let others = async {
        for _ in 0..20 {
            assert_eq!(setup.call("odd_echo").await.0, "ok");
        }
    };
    let ((status, text, took), ()) = tokio::join!(flood, others);
    assert_eq!((status.as_str(), text.as_str()), ("ok", "flooded"), "after {took:?}");
    let (rss, flood_peak) = setup.memory();
    eprintln!(
        "memory: idle {idle_rss:.1} MiB, peak with a 100 MiB result {peak:.1} MiB, after the flood {rss:.1} MiB (peak {flood_peak:.1})"
    );
    // Read whole, the answer alone would be 100 MiB more. Read up to the 16 MiB limit, the
    // process grows by less than four times that: at worst the SSE parser's buffer of 16 MiB
    // while it doubles into one of 32, and what the allocator keeps (about 33 MiB here, 50 MiB
    // once on a loaded CI machine).
    const LIMIT_MIB: f64 = 16.0;
    assert!(
        peak - idle_rss < 4.0 * LIMIT_MIB,
        "a 100 MiB result took the process from {idle_rss:.1} to {peak:.1} MiB"
    );
    assert_eq!(flood_peak, peak, "the flood raised the peak");
}
