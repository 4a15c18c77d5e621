//! A tenant in `search` mode: its LLM is listed the search tool, the pinned tools and what it
//! found; it finds the rest with `search_tools`, and may call a tool once it found it — over MCP
//! in both protocol eras (real rmcp clients) and over REST in each provider's format.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{ListChangedCounter, TestApp, post, tenant_key};
use engine::model::TenantSlug;
use engine::store::tenants::{TenantUpdate, ToolDiscovery};
use engine::store::{self, Actor};
use reqwest::StatusCode;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;

/// Puts tenant `acme` in `search` mode with `pinned` listed all the same.
async fn search_mode(pool: &PgPool, pinned: &[&str]) {
    let update = TenantUpdate {
        tool_discovery: Some(ToolDiscovery::Search),
        pinned_tools: Some(pinned.iter().map(|name| name.to_string()).collect()),
        ..Default::default()
    };
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::update(pool, &Actor::system(), &acme, update).await.unwrap();
}

async fn new_key(pool: &PgPool, name: &str) -> String {
    let acme = TenantSlug::parse("acme").unwrap();
    store::keys::create(pool, &Actor::system(), &acme, name, None, Default::default()).await.unwrap().1
}

async fn names(client: &RunningService<RoleClient, ListChangedCounter>) -> Vec<String> {
    let mut names: Vec<String> =
        client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// A client of `acme` with `key` in `lifecycle`'s era, once the gateway knows the key.
async fn client(
    app: &TestApp,
    key: &str,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, ListChangedCounter> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key);
        let transport = StreamableHttpClientTransport::from_config(config);
        match ListChangedCounter::default().serve_with_lifecycle(transport, lifecycle.clone()).await {
            Ok(client) => return client,
            Err(err) if Instant::now() > deadline => panic!("cannot connect: {err}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_agent_finds_lists_and_calls_tools_it_searched_for_in_both_eras(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenant_key(&app, &pool).await;
    search_mode(&pool, &["list_directory"]).await;
    let current = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    for (era, lifecycle) in [("handshake", ClientLifecycleMode::Initialize), ("2026-07-28", current)] {
        let key = new_key(&pool, era).await;
        let client = client(&app, &key, lifecycle).await;
        let deadline = Instant::now() + Duration::from_secs(5);
        while names(&client).await != ["list_directory", "search_tools"] {
            assert!(Instant::now() < deadline, "{era}: listed {:?}", names(&client).await);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let write = || {
            let args = arguments(json!({"path": format!("{era}.txt"), "content": "found"}));
            client.call_tool(CallToolRequestParams::new("write_text_file").with_arguments(args))
        };
        let refused = write().await.unwrap_err().to_string();
        assert!(
            refused.contains("tool `write_text_file` is not listed yet: find it with `search_tools` first"),
            "{era}: {refused}"
        );

        let query = arguments(json!({"query": "overwrite a text file", "count": 2}));
        let found =
            client.call_tool(CallToolRequestParams::new("search_tools").with_arguments(query)).await.unwrap();
        assert_ne!(found.is_error, Some(true), "{era}: {found:?}");
        let tools = found.structured_content.as_ref().unwrap()["tools"].as_array().unwrap().clone();
        assert_eq!(tools.len(), 2, "{era}: {tools:?}");
        assert_eq!(tools[0]["name"], "write_text_file", "{era}: {tools:?}");
        assert_eq!(tools[0]["inputSchema"]["required"], json!(["path", "content"]), "{era}: {tools:?}");
        if era == "handshake" {
            let deadline = Instant::now() + Duration::from_secs(5);
            while client.service().list_changed.load(Ordering::SeqCst) == 0 {
                assert!(Instant::now() < deadline, "no list_changed after a search found tools");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let listed = names(&client).await;
        assert!(listed.contains(&"write_text_file".to_string()) && listed.len() == 4, "{era}: {listed:?}");
        let written = write().await.unwrap();
        assert_ne!(written.is_error, Some(true), "{era}: {written:?}");

        let bad = arguments(json!({"query": "files", "count": 500}));
        let bad =
            client.call_tool(CallToolRequestParams::new("search_tools").with_arguments(bad)).await.unwrap();
        assert_eq!(bad.is_error, Some(true), "{era}: {bad:?}");
        assert_eq!(bad.content[0].as_text().unwrap().text, "`count` is 1 to 50, not 500");
    }
    // What one key found is not another's.
    let other = client(&app, &new_key(&pool, "other").await, ClientLifecycleMode::Initialize).await;
    assert_eq!(names(&other).await, ["list_directory", "search_tools"]);

    // A pin names a tool by its default name: renamed, the tool stays pinned.
    let acme = TenantSlug::parse("acme").unwrap();
    let rename = store::overrides::OverrideInput { name: Some("ls".into()), ..Default::default() };
    common::set_override(&pool, &acme, common::tool_id(&pool, "list_directory").await, &rename)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while names(&other).await != ["ls", "search_tools"] {
        assert!(Instant::now() < deadline, "listed {:?}", names(&other).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Back to listing every tool: the session hears of it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let heard = other.service().list_changed.load(Ordering::SeqCst);
    let listing = TenantUpdate { tool_discovery: Some(ToolDiscovery::List), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &acme, listing).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while other.service().list_changed.load(Ordering::SeqCst) == heard {
        assert!(Instant::now() < deadline, "no list_changed after the tenant left search mode");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(names(&other).await.contains(&"write_text_file".to_string()));
}

async fn listed(app: &TestApp, key: &str, format: &str) -> Vec<Value> {
    let url = app.url(&format!("/api/v1/tools?format={format}"));
    let list = common::json_of(reqwest::Client::new().get(url).bearer_auth(key)).await;
    list["tools"].as_array().unwrap_or_else(|| panic!("{list}")).clone()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_search_over_rest_answers_in_the_callers_format_and_never_shows_hidden_parameters(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let acme = TenantSlug::parse("acme").unwrap();
    let write = common::tool_id(&pool, "write_text_file").await;
    let preset = store::overrides::OverrideInput {
        presets: arguments(json!({"path": "notes.txt"})),
        ..Default::default()
    };
    common::set_override(&pool, &acme, write, &preset).await.unwrap();
    let off = store::overrides::OverrideInput { enabled: Some(false), ..Default::default() };
    common::set_override(&pool, &acme, common::tool_id(&pool, "list_directory").await, &off).await.unwrap();
    search_mode(&pool, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while listed(&app, &key, "anthropic").await.len() != 1 {
        assert!(Instant::now() < deadline, "search mode never reached the gateway");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let search = listed(&app, &key, "anthropic").await.remove(0);
    assert_eq!(search["name"], "search_tools");
    assert_eq!(search["input_schema"]["required"], json!(["query"]));

    let (status, refused) =
        post(&app, &key, "/api/v1/tools/write_text_file/invoke", json!({"arguments": {"content": "x"}}))
            .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("tool_not_found_yet")),
        "{refused}"
    );

    let query = json!({"arguments": {"query": "overwrite a text file", "count": 1}});
    let (status, found) = post(&app, &key, "/api/v1/tools/search_tools/invoke?format=anthropic", query).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let tool = &found["output"]["structuredContent"]["tools"][0];
    assert_eq!(tool["name"], "write_text_file", "{found}");
    assert!(tool["input_schema"]["properties"].get("content").is_some(), "{found}");
    assert!(
        tool["input_schema"]["properties"].get("path").is_none(),
        "a preset parameter is hidden: {found}"
    );

    // A tool the tenant turned off is never found, nor callable.
    let batch = json!({"tool_calls": [
        {"id": "a", "function": {"name": "search_tools", "arguments": "{\"query\": \"the folders inside a directory\", \"count\": 50}"}},
        {"id": "b", "function": {"name": "list_directory", "arguments": "{}"}}
    ]});
    let (status, answers) = post(&app, &key, "/api/v1/tool_calls?format=openai", batch).await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    let found: Value = serde_json::from_str(answers["results"][0]["content"].as_str().unwrap()).unwrap();
    let found = found["tools"].as_array().unwrap();
    assert!(
        found.iter().all(|t| t["type"] == "function" && t["function"]["name"] != "list_directory"),
        "{found:?}"
    );
    assert_eq!(answers["results"][1]["content"], "unknown tool `list_directory`", "{answers}");

    // Found: listed in every format, and callable.
    let gemini = listed(&app, &key, "gemini").await;
    assert!(gemini.iter().any(|t| t["name"] == "write_text_file"), "{gemini:?}");
    let (status, written) =
        post(&app, &key, "/api/v1/tools/write_text_file/invoke", json!({"arguments": {"content": "x"}}))
            .await;
    assert_eq!((status, written["status"].as_str()), (StatusCode::OK, Some("ok")), "{written}");
    let (status, _) = post(&app, &key, "/api/v1/tools/search_tools/invoke?format=klingon", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// The Python `mcp` 2.x client in both eras and an `openai-agents` agent (a scripted model in
/// the SDK's own agent loop), each with a key of its own: listed the search tool and the pinned
/// tool, they search, and call the tool found (`tests/python/search_client.py`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn python_clients_and_an_openai_agent_search_and_call(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenant_key(&app, &pool).await;
    search_mode(&pool, &["list_directory"]).await;
    let script = format!("{}/tests/python/search_client.py", env!("CARGO_MANIFEST_DIR"));
    for mode in ["auto", "legacy", "agents"] {
        let key = new_key(&pool, mode).await;
        drop(client(&app, &key, ClientLifecycleMode::Initialize).await);
        let output = tokio::process::Command::new(common::venv_program("python"))
            .args([script.as_str(), mode, &app.url("/mcp/acme"), &key])
            .kill_on_drop(true)
            .output()
            .await
            .unwrap();
        let (stdout, stderr) =
            (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "{mode}:\n{stdout}\n{stderr}");
        assert!(stdout.starts_with("ok: "), "{mode}: {stdout}");
    }
}

/// What a tenant in `search` mode serves on REST in each provider's format — its listing (the
/// search tool) and a search's answer — passes the providers' own SDK types without losing
/// anything (`tests/python/provider_sdks.py`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_search_tool_and_its_answers_pass_the_providers_sdk_types(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    search_mode(&pool, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while listed(&app, &key, "openai").await.len() != 1 {
        assert!(Instant::now() < deadline, "search mode never reached the gateway");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut renderings = serde_json::Map::new();
    for format in ["openai", "anthropic", "gemini", "mcp"] {
        // The search tool, and from the second format on the tools found with the first.
        let mut tools = listed(&app, &key, format).await;
        let query = json!({"arguments": {"query": "files and folders", "count": 50}});
        let path = format!("/api/v1/tools/search_tools/invoke?format={format}");
        let (status, found) = post(&app, &key, &path, query).await;
        assert_eq!(status, StatusCode::OK, "{format}: {found}");
        let found = found["output"]["structuredContent"]["tools"].as_array().unwrap().clone();
        assert!(found.len() >= 3, "{format}: {found:?}");
        tools.extend(found);
        renderings.insert(format.into(), Value::Array(tools));
    }
    let file = std::env::temp_dir().join(format!("toolgate-search-renderings-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, serde_json::to_vec(&renderings).unwrap()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/provider_sdks.py");
    let output = tokio::process::Command::new(common::venv_program("python"))
        .arg(script)
        .arg(&file)
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the providers' SDK types rejected tools:\n{stdout}\n{stderr}");
}
