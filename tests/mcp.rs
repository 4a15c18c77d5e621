//! The per-tenant MCP endpoint with a real rmcp client over streamable HTTP: tenant keys,
//! isolation, tools/list and tools/call through the engine, and list_changed delivered live.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{ListChangedCounter, TestApp};
use engine::model::{Tag, TenantSlug};
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use sqlx::PgPool;
use toolgate_bench::raw::RawMcp;

async fn tenant_with_key(pool: &PgPool, slug: &str) -> String {
    let slug = TenantSlug::parse(slug).unwrap();
    store::tenants::create(pool, &Actor::system(), &slug, "Tenant").await.unwrap();
    store::keys::create(pool, &Actor::system(), &slug, "test", None).await.unwrap().1
}

async fn connect(
    app: &TestApp,
    tenant: &str,
    key: &str,
) -> Result<RunningService<RoleClient, ListChangedCounter>, String> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url(&format!("/mcp/{tenant}"))).auth_header(key);
    let transport = StreamableHttpClientTransport::from_config(config);
    ListChangedCounter::default().serve(transport).await.map_err(|e| e.to_string())
}

/// Waits until the new key is in the gateway's snapshot.
async fn until_key_works(
    app: &TestApp,
    tenant: &str,
    key: &str,
) -> RunningService<RoleClient, ListChangedCounter> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match connect(app, tenant, key).await {
            Ok(client) => return client,
            Err(err) if Instant::now() > deadline => panic!("cannot connect: {err}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_lists_and_calls_its_tools_over_mcp(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let client = until_key_works(&app, "acme", &key).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"write_text_file") && names.contains(&"run_command"), "{names:?}");

    let args = json!({"path": "hello.txt", "content": "hi from MCP"}).as_object().cloned().unwrap();
    let written =
        client.call_tool(CallToolRequestParams::new("write_text_file").with_arguments(args)).await.unwrap();
    assert_ne!(written.is_error, Some(true), "{written:?}");
    let args = json!({"path": "hello.txt"}).as_object().cloned().unwrap();
    let read =
        client.call_tool(CallToolRequestParams::new("view_text_file").with_arguments(args)).await.unwrap();
    assert_eq!(serde_json::to_value(&read.content).unwrap()[0]["text"], "1: hi from MCP");

    // Invalid arguments are a tool error the LLM can read, not a protocol failure.
    let args = json!({"path": 3}).as_object().cloned().unwrap();
    let bad =
        client.call_tool(CallToolRequestParams::new("view_text_file").with_arguments(args)).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await;
    assert!(unknown.is_err(), "an unknown tool is a protocol error");
}

/// A client that leaves Nagle's algorithm on and writes each request at once (most HTTP
/// libraries, wrk) must not wait for its own delayed ACK (40 ms) on every call: the answer's
/// small writes go out at once.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn calls_on_a_keep_alive_connection_do_not_wait_for_delayed_acks(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let mut client = RawMcp::connect(&app.url("/mcp/acme"), Some(&key)).await.unwrap();
    let arguments = json!({"path": ""});
    client.call("list_directory", &arguments).await.unwrap();
    let calls = 50;
    let started = Instant::now();
    for _ in 0..calls {
        let result = client.call("list_directory", &arguments).await.unwrap();
        assert_eq!(result["isError"], false, "{result}");
    }
    let per_call = started.elapsed() / calls;
    assert!(per_call < Duration::from_millis(40), "{per_call:?} per call: the delayed-ACK stall is back");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_key_reaches_only_its_own_tenant(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let acme = tenant_with_key(&pool, "acme").await;
    let globex = tenant_with_key(&pool, "globex").await;
    until_key_works(&app, "acme", &acme).await;
    until_key_works(&app, "globex", &globex).await;

    assert!(connect(&app, "acme", &globex).await.is_err(), "globex's key on acme's endpoint");
    assert!(connect(&app, "acme", "tg_not-a-key").await.is_err());
    let anonymous = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert!(anonymous.text().await.unwrap().contains("invalid_api_key"));
    // A revoked key stops working.
    let id = store::keys::list(&pool, &TenantSlug::parse("acme").unwrap()).await.unwrap()[0].id;
    store::keys::revoke(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), id).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while connect(&app, "acme", &acme).await.is_ok() {
        assert!(Instant::now() < deadline, "revoked key still accepted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn changing_a_tenants_tags_updates_its_sessions_live(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let client = until_key_works(&app, "acme", &key).await;
    assert!(client.list_all_tools().await.unwrap().iter().any(|t| t.name == "run_command"));

    let only_files =
        TenantUpdate { enabled_tags: Some(Some(vec![Tag::parse("files").unwrap()])), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), only_files)
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(5);
    while client.service().list_changed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no notifications/tools/list_changed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let names: Vec<String> =
        client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(!names.contains(&"run_command".to_string()), "{names:?}");
    assert!(names.contains(&"view_text_file".to_string()));
}

async fn names(client: &RunningService<RoleClient, ListChangedCounter>) -> Vec<String> {
    client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_meta_tool_equips_groups_for_one_session_only(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let acme = TenantSlug::parse("acme").unwrap();
    let ops = engine::model::Name::parse("ops").unwrap();
    store::groups::put(&pool, &Actor::system(), &ops, "Run programs", false).await.unwrap();
    let run_command: uuid::Uuid =
        sqlx::query_scalar("select id from tool where upstream_name = 'run_command'")
            .fetch_one(&pool)
            .await
            .unwrap();
    store::groups::set_members(&pool, &Actor::system(), &ops, &[run_command]).await.unwrap();
    let meta = TenantUpdate { meta_tool: Some(true), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &acme, meta).await.unwrap();

    let equipping = until_key_works(&app, "acme", &key).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !names(&equipping).await.contains(&"reset_equipped_tools".to_string()) {
        assert!(Instant::now() < deadline, "the meta tool never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = until_key_works(&app, "acme", &key).await;
    assert!(!names(&equipping).await.contains(&"run_command".to_string()), "ops is inactive by default");

    let equip = |groups: Value| {
        let args = json!({"groups": groups}).as_object().cloned().unwrap();
        equipping.call_tool(CallToolRequestParams::new("reset_equipped_tools").with_arguments(args))
    };
    let unknown = equip(json!(["nope"])).await.unwrap();
    assert_eq!(unknown.is_error, Some(true));
    assert!(format!("{:?}", unknown.content).contains("unknown groups: nope; the groups are: ops"));

    let equipped = equip(json!(["ops"])).await.unwrap();
    assert_ne!(equipped.is_error, Some(true), "{equipped:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while equipping.service().list_changed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no list_changed after equipping");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(names(&equipping).await.contains(&"run_command".to_string()));
    let args = json!({"program": "sleep", "args": ["0"]}).as_object().cloned().unwrap();
    let ran = equipping
        .call_tool(CallToolRequestParams::new("run_command").with_arguments(args.clone()))
        .await
        .unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");

    // Another session of the same tenant keeps the tenant's groups.
    assert!(!names(&other).await.contains(&"run_command".to_string()));
    assert!(other.call_tool(CallToolRequestParams::new("run_command").with_arguments(args)).await.is_err());
}

/// An upstream whose `ask` tool, mid-call, asks the caller a question (elicitation) and logs.
#[derive(Clone)]
struct Asking;

impl rmcp::ServerHandler for Asking {
    #[allow(deprecated)] // logging: deprecated by SEP-2577, still sent by servers
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder().enable_tools().enable_logging().build(),
        )
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object"}).as_object().cloned().unwrap();
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![rmcp::model::Tool::new(
            "ask",
            "Asks the caller before answering",
            std::sync::Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let log =
            json!({"method": "notifications/message", "params": {"level": "info", "data": "about to ask"}});
        let _ = context.peer.send_notification(serde_json::from_value(log).unwrap()).await;
        let question = json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        }});
        let answer = context
            .peer
            .send_request(serde_json::from_value(question).unwrap())
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?;
        let text = serde_json::to_string(&answer).unwrap();
        Ok(rmcp::model::CallToolResponse::Complete(rmcp::model::CallToolResult::success(vec![
            rmcp::model::ContentBlock::text(text),
        ])))
    }
}

/// A downstream client that answers elicitations and records log messages.
#[derive(Clone, Default)]
struct Answering {
    questions: Arc<std::sync::Mutex<Vec<String>>>,
    logs: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities = rmcp::model::ClientCapabilities::builder().enable_elicitation().build();
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        self.questions.lock().unwrap().push(request["message"].as_str().unwrap_or_default().to_string());
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"ok": true}})).unwrap())
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(serde_json::to_value(params).unwrap());
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstreams_questions_and_logs_reach_the_caller_and_the_answer_goes_back(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let service: rmcp::transport::streamable_http_server::StreamableHttpService<Asking, _> =
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            || Ok(Asking),
            rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default().into(),
            Default::default(),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await },
    );
    let server = engine::store::servers::ServerConfig::http(engine::model::Name::parse("up").unwrap(), url);
    let secrets = engine::secret::SecretBox::from_key(&[0; 32]).unwrap();
    store::servers::create(&pool, &secrets, &Actor::system(), &server).await.unwrap();

    let until = Instant::now() + Duration::from_secs(10);
    let client = loop {
        let config =
            StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.clone());
        if let Ok(client) =
            Answering::default().serve(StreamableHttpClientTransport::from_config(config)).await
            && client.list_all_tools().await.unwrap().iter().any(|t| t.name == "up_ask")
        {
            break client;
        }
        assert!(Instant::now() < until, "the upstream tool never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let result = client.call_tool(CallToolRequestParams::new("up_ask")).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = format!("{:?}", result.content);
    assert!(text.contains("accept") && text.contains("ok"), "the answer went back upstream: {text}");
    assert_eq!(*client.service().questions.lock().unwrap(), ["Proceed?"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.service().logs.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the upstream's log message never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(client.service().logs.lock().unwrap()[0]["data"], "about to ask");
}
