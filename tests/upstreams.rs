//! Toolgate in front of the MCP servers people run: a FastMCP 4 server over streamable HTTP
//! and over the legacy HTTP+SSE transport — on both, Toolgate's `server/discover` finds that
//! it speaks revision 2026-07-28 (server-everything's SSE mode, which does not, is in
//! `engine/tests/upstream.rs`). Each is registered, discovered, and called through Toolgate by an rmcp client:
//! a plain result, structured content, progress-reporting work and a tool error; its prompt is
//! got, its resource and a URI of its template read, and its MCP App reaches the client (the
//! server hearing whether the caller shows apps).

mod common;

use std::time::{Duration, Instant};

use common::{ListChangedCounter, TestApp, tenant_key, venv_program};
use engine::model::Name;
use engine::store::servers::ServerConfig;
use engine::store::{self, Actor};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::process::Child;

/// A host that shows MCP Apps, and says so.
#[derive(Clone)]
struct AppHost;

impl rmcp::ClientHandler for AppHost {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = rmcp::model::ClientCapabilities::builder()
            .enable_extensions_with(engine::catalog::apps::capability())
            .build();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("host", "1"))
    }
}

/// Starts `tests/python/fastmcp_server.py` on `transport`; returns it and its port.
async fn fastmcp(transport: &str) -> (Child, u16) {
    common::python_server(venv_program("python"), "fastmcp_server.py", &[transport]).await
}

/// Registers `server` (named `fm`), waits for its tools, checks the revision its connection
/// speaks (as the admin API reports it), and calls each tool through Toolgate.
async fn fronted(pool: PgPool, server: ServerConfig, revision: &str) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    store::servers::create(&pool, &common::secret_box(), &Actor::system(), &server).await.unwrap();

    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(&key);
    let client = ListChangedCounter::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let names: Vec<String> =
            client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
        if ["fm_add", "fm_weather", "fm_count", "fm_refuse"].iter().all(|n| names.iter().any(|m| m == n)) {
            break;
        }
        assert!(Instant::now() < deadline, "FastMCP's tools never appeared: {names:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let token = common::admin_token(&pool, "upstreams").await;
    let detail =
        common::json_of(reqwest::Client::new().get(app.url("/api/admin/v1/servers/fm")).bearer_auth(&token))
            .await;
    assert_eq!(detail["connections"][0]["protocol"], revision, "{detail}");

    let call = |name: &str, arguments: Value| {
        let request = CallToolRequestParams::new(name.to_string())
            .with_arguments(arguments.as_object().unwrap().clone());
        client.call_tool(request)
    };
    let text = |result: &rmcp::model::CallToolResult| {
        result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<String>()
    };

    let added = call("fm_add", json!({"a": 2, "b": 40})).await.unwrap();
    assert_eq!((added.is_error, text(&added).as_str()), (Some(false), "42"), "{added:?}");
    let weather = call("fm_weather", json!({"city": "Lyon"})).await.unwrap();
    assert_eq!(weather.structured_content.as_ref().unwrap()["temperature"], 21, "{weather:?}");
    let counted = call("fm_count", json!({"to": 3})).await.unwrap();
    assert_eq!(text(&counted), "counted to 3");
    let refused = call("fm_refuse", json!({"reason": "no"})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("refused: no"),
        "the upstream's tool error reaches the caller: {refused:?}"
    );
    let wrong = call("fm_add", json!({"a": "two"})).await.unwrap();
    assert_eq!(wrong.is_error, Some(true), "arguments that break the schema are a tool error");

    // Its prompt, resource and template, discovered over the same revision.
    let prompts: Vec<String> = client.list_all_prompts().await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(prompts, ["fm_review"]);
    let mut review = GetPromptRequestParams::new("fm_review");
    review.arguments = Some(json!({"code": "print(1)"}).as_object().unwrap().clone());
    let got = serde_json::to_string(&client.get_prompt(review).await.unwrap().messages).unwrap();
    assert!(got.contains("Please review this Python code") && got.contains("print(1)"), "{got}");
    let resources: Vec<String> =
        client.list_all_resources().await.unwrap().into_iter().map(|r| r.uri.clone()).collect();
    assert_eq!(resources, ["config://app", "ui://fm/weather/forecast.html"]);
    let read = |uri: &str| client.read_resource(ReadResourceRequestParams::new(uri));
    assert!(serde_json::to_string(&read("config://app").await.unwrap()).unwrap().contains("dark"));
    let profile = serde_json::to_string(&read("users://ada/profile").await.unwrap()).unwrap();
    assert!(profile.contains("Profile of user ada"), "{profile}");

    // Its app: the tool names it, under the server's prefix, and the host reads it so; the
    // server knows its client can show apps.
    let capabilities = &client.peer_info().unwrap().capabilities;
    assert!(capabilities.extensions.as_ref().is_some_and(|e| e.contains_key("io.modelcontextprotocol/ui")));
    let tools = client.list_all_tools().await.unwrap();
    let forecast = tools.iter().find(|t| t.name == "fm_forecast").unwrap();
    let ui = &forecast.meta.as_ref().expect("the tool's _meta is served")["ui"];
    assert_eq!(ui["resourceUri"], "ui://fm/weather/forecast.html", "{ui}");
    let view = serde_json::to_value(read("ui://fm/weather/forecast.html").await.unwrap()).unwrap();
    let content = &view["contents"][0];
    assert_eq!(
        (&content["uri"], &content["mimeType"]),
        (&json!("ui://fm/weather/forecast.html"), &json!("text/html;profile=mcp-app")),
        "{view}"
    );
    assert!(content["text"].as_str().unwrap().contains("<main id=forecast>"), "{view}");
    assert!(read("ui://weather/forecast.html").await.is_err(), "the server's own URI is not the tenant's");
    // The server hears whether the caller shows apps: this client does not say it does.
    let shown = call("fm_forecast", json!({"city": "Lyon"})).await.unwrap();
    assert_eq!(text(&shown), "Sunny in Lyon; the client cannot show apps");
    client.cancel().await.unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(&key);
    let host = AppHost.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let forecast = CallToolRequestParams::new("fm_forecast")
        .with_arguments(json!({"city": "Lyon"}).as_object().unwrap().clone());
    let shown = host.call_tool(forecast).await.unwrap();
    assert_eq!(text(&shown), "Sunny in Lyon; the client can show apps");
    host.cancel().await.unwrap();
    // The tool's page in the panel says which app it opens.
    assert!(app.login(common::PASSWORD).await.status().is_success());
    let page = app.get(&format!("/tools/{}?tenant=acme", common::tool_id(&pool, "forecast").await)).await;
    let page = page.text().await.unwrap();
    assert!(
        page.contains("Opens an app where the host shows apps: <code>ui://fm/weather/forecast.html"),
        "{page}"
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_fastmcp_4_server_over_streamable_http(pool: PgPool) {
    let (_server, port) = fastmcp("http").await;
    fronted(
        pool,
        ServerConfig::http(Name::parse("fm").unwrap(), format!("http://127.0.0.1:{port}/mcp")),
        "2026-07-28",
    )
    .await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_fastmcp_4_server_over_legacy_sse(pool: PgPool) {
    let (_server, port) = fastmcp("sse").await;
    fronted(
        pool,
        ServerConfig::sse(Name::parse("fm").unwrap(), format!("http://127.0.0.1:{port}/sse")),
        "2026-07-28",
    )
    .await;
}
