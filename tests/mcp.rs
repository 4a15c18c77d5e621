//! The per-tenant MCP endpoint with a real rmcp client over streamable HTTP: tenant keys,
//! isolation, tools/list and tools/call through the engine, and list_changed delivered live.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{ListChangedCounter, TestApp, one_tool};
use engine::model::{Tag, TenantSlug};
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use sqlx::PgPool;
use toolgate_bench::raw::RawMcp;

async fn tenant_with_key(pool: &PgPool, slug: &str) -> String {
    let slug = TenantSlug::parse(slug).unwrap();
    common::create_tenant(pool, &slug, "Tenant").await;
    store::keys::create(pool, &Actor::system(), &slug, "test", None, Default::default()).await.unwrap().1
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

/// A client of tenant `acme` with `key`, on the protocol era `lifecycle` chooses.
async fn acme_client(
    app: &TestApp,
    key: &str,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, ListChangedCounter> {
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key);
    let transport = StreamableHttpClientTransport::from_config(config);
    ListChangedCounter::default().serve_with_lifecycle(transport, lifecycle).await.unwrap()
}

/// An upstream tool's answer: `text`, complete.
fn answer(text: impl Into<String>) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
    let result = rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text.into())]);
    Ok(rmcp::model::CallToolResponse::Complete(result))
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

/// A request refused for its credentials before its body arrived: the server answers without
/// reading the body and cannot keep the connection, so the answer says `Connection: close`. Main
/// closed it without saying so, and a client that sent its next request on it saw it dropped
/// ("Server disconnected without sending a response": the Python SDK re-authorizing after a
/// revocation, under load in CI).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_refusal_before_the_body_arrives_says_the_connection_closes(pool: PgPool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn(pool).await;
    let address = app.url("").trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let head = format!(
        "POST /mcp/acme HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer tg_not-a-key\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk)).await;
        let read = read.expect("answered before the body was sent").unwrap();
        assert!(read > 0, "closed without an answer");
        answer.extend_from_slice(&chunk[..read]);
    }
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    // The body comes late, and a second request after it: the connection is gone by then.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = stream.write_all(format!("{body}{head}{body}").as_bytes()).await;
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    let second_answered = String::from_utf8_lossy(&rest).contains("HTTP/1.1 401");
    assert!(
        second_answered || answer.contains("\r\nconnection: close\r\n"),
        "the connection was closed without the answer saying so:\n{answer}"
    );
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

/// A tool whose description changes (here an override; an approved definition change alike)
/// is announced too: clients keep the definitions they listed. Main announced only a change
/// of names.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_changed_description_is_announced_to_the_sessions(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let client = until_key_works(&app, "acme", &key).await;
    assert!(client.list_all_tools().await.unwrap().iter().any(|t| t.name == "run_command"));
    let run_command = common::tool_id(&pool, "run_command").await;
    let described = store::overrides::OverrideInput {
        description: Some("Runs one program".into()),
        ..Default::default()
    };
    let acme = TenantSlug::parse("acme").unwrap();
    common::set_override(&pool, &acme, run_command, &described).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(5);
    while client.service().list_changed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no notifications/tools/list_changed for a new description");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tools = client.list_all_tools().await.unwrap();
    let listed = tools.iter().find(|t| t.name == "run_command").unwrap();
    assert_eq!(listed.description.as_deref(), Some("Runs one program"));
}

async fn names(client: &RunningService<RoleClient, ListChangedCounter>) -> Vec<String> {
    client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_meta_tool_equips_groups_for_one_session_only(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let acme = TenantSlug::parse("acme").unwrap();
    common::ops_group_and_meta_tool(&pool, &acme).await;

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

/// The meta tool writes PostgreSQL and renders a list at every call: it counts against the
/// key's limits like any call. Main let a key call it without end.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_meta_tool_counts_against_the_keys_limits(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let limits = serde_json::from_value(json!({"per_minute": 2})).unwrap();
    let (_, key) =
        engine::store::keys::create(&pool, &Actor::system(), &acme, "ci", None, limits).await.unwrap();
    common::ops_group_and_meta_tool(&pool, &acme).await;
    let client = until_key_works(&app, "acme", &key).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !names(&client).await.contains(&"reset_equipped_tools".to_string()) {
        assert!(Instant::now() < deadline, "the meta tool never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let args = json!({"groups": ["ops"]}).as_object().cloned().unwrap();
    let equip =
        || client.call_tool(CallToolRequestParams::new("reset_equipped_tools").with_arguments(args.clone()));
    for _ in 0..2 {
        let equipped = equip().await.unwrap();
        assert_ne!(equipped.is_error, Some(true), "{equipped:?}");
    }
    let refused = equip().await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = format!("{:?}", refused.content);
    assert!(text.contains("the limit of 2 calls per minute for this API key is reached"), "{text}");
}

/// An upstream whose `ask` tool, mid-call, logs and asks the caller a question (elicitation):
/// with a request to a session's client, or with an `InputRequiredResult` to a client on
/// 2026-07-28. A `legacy` one predates 2026-07-28: it knows no `server/discover`.
#[derive(Clone)]
struct Asking {
    legacy: bool,
}

impl rmcp::ServerHandler for Asking {
    #[allow(deprecated)] // logging: deprecated by SEP-2577, still sent by servers
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder().enable_tools().enable_logging().build(),
        )
    }

    async fn discover(
        &self,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, rmcp::ErrorData> {
        if self.legacy {
            return Err(rmcp::ErrorData::method_not_found::<rmcp::model::DiscoverRequestMethod>());
        }
        let versions = self.supported_protocol_versions().into_owned();
        Ok(rmcp::model::DiscoverResult::from_server_info(versions, self.get_info()))
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        one_tool("ask", "Asks the caller before answering")
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let failed = |e: &dyn std::fmt::Display| rmcp::ErrorData::internal_error(e.to_string(), None);
        let log =
            json!({"method": "notifications/message", "params": {"level": "info", "data": "about to ask"}});
        let _ = context.peer.send_notification(serde_json::from_value(log).unwrap()).await;
        let question = json!({"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Proceed?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        }});
        let stateless = context.protocol_version().is_some_and(|v| !v.has_initialize());
        let reply = if !stateless {
            let reply = context.peer.send_request(serde_json::from_value(question).unwrap()).await;
            serde_json::to_value(reply.map_err(|e| failed(&e))?).unwrap()
        } else if let Some(reply) = request.input_responses.and_then(|mut replies| replies.remove("proceed"))
        {
            assert_eq!(request.request_state.as_deref(), Some("asked"), "the request state comes back");
            reply
        } else {
            let questions = [("proceed".to_string(), serde_json::from_value(question).unwrap())];
            let asked = rmcp::model::InputRequiredResult::new(Some(questions.into()), Some("asked".into()));
            return Ok(rmcp::model::CallToolResponse::InputRequired(asked));
        };
        answer(reply.to_string())
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

/// Tenant `acme` (its key returned) with the `Asking` upstream registered as `up`.
async fn with_asking_upstream(pool: &PgPool, legacy: bool) -> String {
    let key = tenant_with_key(pool, "acme").await;
    common::register_upstream(pool, "up", Asking { legacy }).await;
    key
}

/// An `Answering` client of `acme` in the given era, once `up_ask` is listed.
async fn answering_client(
    app: &TestApp,
    key: &str,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, Answering> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key);
        let transport = StreamableHttpClientTransport::from_config(config);
        if let Ok(client) = Answering::default().serve_with_lifecycle(transport, lifecycle.clone()).await
            && client.list_all_tools().await.unwrap().iter().any(|t| t.name == "up_ask")
        {
            return client;
        }
        assert!(Instant::now() < until, "the upstream tool never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `tools/call` of `up_ask`, asking for log messages of `info` and above (revision 2026-07-28).
fn ask_logging_info() -> CallToolRequestParams {
    let mut meta = rmcp::model::RequestMetaObject::default();
    #[allow(deprecated)]
    meta.set_log_level(rmcp::model::LoggingLevel::Info);
    let mut call = CallToolRequestParams::new("up_ask");
    call.meta = Some(meta);
    call
}

/// An upstream of either protocol era asks the caller, of either era, a question during a
/// call and logs: the question reaches the caller, the answer goes back, the log message
/// arrives (on 2026-07-28 because the call asked for `info` and above).
async fn questions_and_logs_cross(
    pool: PgPool,
    upstream_legacy: bool,
    client_lifecycle: ClientLifecycleMode,
) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = with_asking_upstream(&pool, upstream_legacy).await;
    let client = answering_client(&app, &key, client_lifecycle).await;
    let result = client.call_tool(ask_logging_info()).await.unwrap();
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

fn legacy_client() -> ClientLifecycleMode {
    ClientLifecycleMode::Initialize
}

fn current_client() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28] }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_legacy_upstream_asks_a_legacy_client(pool: PgPool) {
    questions_and_logs_cross(pool, true, legacy_client()).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_legacy_upstream_asks_a_client_on_2026_07_28(pool: PgPool) {
    questions_and_logs_cross(pool, true, current_client()).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstream_on_2026_07_28_asks_a_legacy_client(pool: PgPool) {
    questions_and_logs_cross(pool, false, legacy_client()).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstream_on_2026_07_28_asks_a_client_on_2026_07_28(pool: PgPool) {
    questions_and_logs_cross(pool, false, current_client()).await;
}

/// An upstream tool that runs until it is cancelled, and says when it was.
#[derive(Clone, Default)]
struct Endless {
    cancelled: Arc<std::sync::atomic::AtomicBool>,
}

impl rmcp::ServerHandler for Endless {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        one_tool("endless", "Runs until cancelled")
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        context.ct.cancelled().await;
        self.cancelled.store(true, Ordering::SeqCst);
        answer("cancelled")
    }
}

/// A client's `notifications/cancelled` reaches the upstream, and the call is recorded as
/// cancelled. rmcp runs a server's handler to its end regardless: main waited for the upstream
/// tool, for as long as its timeout allowed.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_the_client_cancels_is_cancelled_upstream(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let upstream = Endless::default();
    common::register_upstream(&pool, "up", upstream.clone()).await;
    let client = until_key_works(&app, "acme", &key).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.list_all_tools().await.unwrap().iter().any(|t| t.name == "up_endless") {
        assert!(Instant::now() < deadline, "the upstream tool never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        CallToolRequestParams::new("up_endless"),
    ));
    let handle = client
        .peer()
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel = rmcp::model::CancelledNotificationParam::new(
        Some(handle.id.clone()),
        Some("no longer needed".into()),
    );
    client.peer().notify_cancelled(cancel).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !upstream.cancelled.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the upstream never heard of the cancellation");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        let status: Option<String> =
            sqlx::query_scalar("select status from invocation where tool_name = 'up_endless'")
                .fetch_optional(&pool)
                .await
                .unwrap();
        match status {
            Some(status) => break assert_eq!(status, "cancelled"),
            None => assert!(Instant::now() < deadline, "the cancelled call was not recorded"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A call on 2026-07-28 whose client goes away (the connection closed before the answer) is
/// cancelled upstream and recorded as cancelled: main ran it on to its timeout for nobody.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_on_2026_07_28_whose_client_goes_away_is_cancelled_upstream(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let upstream = Endless::default();
    common::register_upstream(&pool, "up", upstream.clone()).await;
    let client = until_key_works(&app, "acme", &key).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.list_all_tools().await.unwrap().iter().any(|t| t.name == "up_endless") {
        assert!(Instant::now() < deadline, "the upstream tool never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "up_endless",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }});
    let gone = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .bearer_auth(&key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "up_endless")
        .timeout(Duration::from_millis(500))
        .json(&body)
        .send()
        .await;
    assert!(gone.is_err_and(|err| err.is_timeout()), "the call was answered");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !upstream.cancelled.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the upstream call runs on for nobody");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    loop {
        let status: Option<String> =
            sqlx::query_scalar("select status from invocation where tool_name = 'up_endless'")
                .fetch_optional(&pool)
                .await
                .unwrap();
        match status {
            Some(status) => break assert_eq!(status, "cancelled"),
            None => assert!(Instant::now() < deadline, "the abandoned call was not recorded"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A session's `logging/setLevel` holds back the relayed messages below it; a call on
/// 2026-07-28 that asks for no level gets none (SEP-2575).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn log_messages_reach_a_caller_only_at_the_level_it_chose(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = with_asking_upstream(&pool, false).await;
    let session = answering_client(&app, &key, legacy_client()).await;
    #[allow(deprecated)]
    {
        let warning = rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Warning);
        session.peer().set_level(warning).await.expect("logging/setLevel is accepted");
    }
    let current = answering_client(&app, &key, current_client()).await;
    for client in [&session, &current] {
        let result = client.call_tool(CallToolRequestParams::new("up_ask")).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    // The messages would have come before the results.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(session.service().logs.lock().unwrap().is_empty(), "an info message passed `warning`");
    assert!(
        current.service().logs.lock().unwrap().is_empty(),
        "a message reached a call that asked for none"
    );
}

/// The `requestState` of a call waiting for input is its key's alone: another key of the
/// tenant presenting it is told it is unknown, and the call still waits for its owner.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_waiting_for_input_is_resumed_only_by_its_own_key(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = with_asking_upstream(&pool, false).await;
    let other_key = store::keys::create(
        &pool,
        &Actor::system(),
        &TenantSlug::parse("acme").unwrap(),
        "other",
        None,
        Default::default(),
    )
    .await
    .unwrap()
    .1;
    let owner = answering_client(&app, &key, current_client()).await;
    let other = answering_client(&app, &other_key, current_client()).await;
    let rmcp::model::CallToolResponse::InputRequired(asked) =
        owner.call_tool_once(CallToolRequestParams::new("up_ask")).await.unwrap()
    else {
        panic!("the call should wait for input");
    };
    let questions = asked.input_requests.expect("the question");
    let handle = asked.request_state.expect("a request state");
    let answer = json!({"action": "accept", "content": {"ok": true}});
    let retry = |handle: String| {
        let mut retry = CallToolRequestParams::new("up_ask");
        retry.input_responses = Some(questions.keys().map(|k| (k.clone(), answer.clone())).collect());
        retry.request_state = Some(handle);
        retry
    };
    let refused = other.call_tool_once(retry(handle.clone())).await.unwrap_err();
    assert!(refused.to_string().contains("unknown or expired `requestState`"), "{refused}");
    let forged = owner.call_tool_once(retry(format!("{handle}x"))).await.unwrap_err();
    assert!(forged.to_string().contains("unknown or expired `requestState`"), "{forged}");
    let rmcp::model::CallToolResponse::Complete(done) = owner.call_tool_once(retry(handle)).await.unwrap()
    else {
        panic!("the retry should complete the call");
    };
    let text = format!("{:?}", done.content);
    assert!(text.contains("accept"), "the owner's answer went upstream: {text}");
}

/// A client on 2026-07-28 has no session: it hears of tool list changes on
/// `subscriptions/listen`.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_client_on_2026_07_28_hears_of_changes_on_subscriptions_listen(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    let client = until_key_works(&app, "acme", &key).await;
    drop(client);
    let client = acme_client(&app, &key, current_client()).await;
    let filter = rmcp::model::SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client.peer().listen(filter).await.expect("subscriptions/listen is served");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));

    let only_files =
        TenantUpdate { enabled_tags: Some(Some(vec![Tag::parse("files").unwrap()])), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), only_files)
        .await
        .unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await;
    let notification = heard.expect("no notification within 5 s").unwrap().expect("the stream is open");
    assert!(
        matches!(notification, rmcp::model::ServerNotification::ToolListChangedNotification(_)),
        "{notification:?}"
    );
    assert!(!names(&client).await.contains(&"run_command".to_string()));
}

/// A subscription to a resource the tenant does not serve is refused, saying which, before
/// anything is acknowledged: the client is never told it listens to what it cannot hear.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_subscription_to_an_unknown_resource_is_refused_before_it_is_acknowledged(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_with_key(&pool, "acme").await;
    drop(until_key_works(&app, "acme", &key).await);
    let client = acme_client(&app, &key, current_client()).await;
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .resource_subscriptions(["file:///nowhere.txt"])
        .build();
    match client.peer().listen(filter).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND, "{error:?}");
            assert_eq!(error.data, Some(json!({"uri": "file:///nowhere.txt"})));
        }
        Err(other) => panic!("expected the resource's refusal, got {other:?}"),
        Ok(subscription) => panic!("acknowledged {:?}", subscription.acknowledged()),
    }
}

/// An upstream on 2026-07-28 whose `execute_sql` mirrors `region` into the `Mcp-Param-Region`
/// header (`x-mcp-header`, SEP-2243). rmcp's server refuses a call whose `Mcp-Name` or
/// `Mcp-Param-*` headers are missing or differ from the body (-32020), and the tool answers
/// with the headers it got. It also lists `où` (a name sent Base64-encoded in `Mcp-Name`) and
/// `broken`, whose annotation is on a number (a client leaves it out).
#[derive(Clone)]
struct Regional;

impl Regional {
    fn tools() -> Vec<rmcp::model::Tool> {
        serde_json::from_value(json!([
            {
                "name": "execute_sql",
                "description": "Runs SQL in one region",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"},
                        "query": {"type": "string"}
                    },
                    "required": ["region", "query"]
                }
            },
            {"name": "où", "description": "Says where", "inputSchema": {"type": "object"}},
            {
                "name": "broken",
                "description": "Mirrors a number",
                "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
            }
        ]))
        .unwrap()
    }
}

impl rmcp::ServerHandler for Regional {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        Self::tools().into_iter().find(|tool| tool.name == name)
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(Self::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let headers = &context.extensions.get::<axum::http::request::Parts>().unwrap().headers;
        let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_string());
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let text = format!(
            "{} {} (Mcp-Name {:?}, Mcp-Param-Region {:?})",
            arguments["region"].as_str().unwrap_or("?"),
            arguments["query"].as_str().unwrap_or("?"),
            header("mcp-name"),
            header("mcp-param-region"),
        );
        answer(text)
    }
}

/// A tenant renames an upstream tool and presets its header-mirrored parameter: the client
/// neither sees the parameter nor its annotation, and the upstream still gets its own tool
/// name in `Mcp-Name` and the preset value in `Mcp-Param-Region`. The list is marked as the
/// tenant's own (`cacheScope: private`) and never fresh for a fixed time (`ttlMs: 0`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_preset_parameter_mirrored_in_a_header_reaches_a_renamed_upstream_tool(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    common::register_upstream(&pool, "db", Regional).await;
    let client = acme_client(&app, &key, current_client()).await;
    let listed = async |name: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let page = client.peer().list_tools(None).await.unwrap();
            if let Some(tool) = page.tools.iter().find(|t| t.name == name) {
                return (page.clone(), tool.clone());
            }
            assert!(Instant::now() < deadline, "`{name}` was never listed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let (page, offered) = listed("db_execute_sql").await;
    assert_eq!((page.ttl_ms, page.cache_scope), (Some(0), Some(rmcp::model::CacheScope::Private)));
    let offered = serde_json::to_value(&offered.input_schema).unwrap();
    assert_eq!(offered["properties"]["region"], json!({"type": "string", "description": "Where to run"}));

    let tool_id = common::tool_id(&pool, "execute_sql").await;
    let renamed = store::overrides::OverrideInput {
        name: Some("run_sql".into()),
        presets: json!({"region": "eu-west1"}).as_object().cloned().unwrap(),
        ..Default::default()
    };
    let acme = TenantSlug::parse("acme").unwrap();
    common::set_override(&pool, &acme, tool_id, &renamed).await.unwrap();
    let (_, offered) = listed("run_sql").await;
    assert!(offered.input_schema.get("properties").unwrap().get("region").is_none(), "{offered:?}");

    let args = json!({"query": "select 1"}).as_object().cloned().unwrap();
    let ran = client.call_tool(CallToolRequestParams::new("run_sql").with_arguments(args)).await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(
        ran.content[0].as_text().unwrap().text,
        r#"eu-west1 select 1 (Mcp-Name Some("execute_sql"), Mcp-Param-Region Some("eu-west1"))"#
    );
}

/// On 2026-07-28 Toolgate lists and calls its upstream's tools itself: `broken`, whose
/// `x-mcp-header` annotation is on a number, is left out (no call of it could be sent), and
/// `où`, a name no header value holds as it is, goes Base64-encoded in `Mcp-Name` (rmcp's
/// server decodes it and refuses a call whose header differs from its body).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstream_tool_with_broken_header_annotations_is_left_out_and_an_unusual_name_travels_encoded(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    common::register_upstream(&pool, "db", Regional).await;
    common::until_listed(&app.url(""), &key, "db_execute_sql").await;
    let client = acme_client(&app, &key, current_client()).await;
    let tools = client.peer().list_tools(None).await.unwrap().tools;
    let listed: Vec<String> =
        tools.iter().map(|t| t.name.to_string()).filter(|name| name.starts_with("db_")).collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.contains(&"db_execute_sql".to_string()), "{listed:?}");
    let where_ = listed.iter().find(|name| name.starts_with("db_o_")).expect("`où` listed");

    let ran = client.call_tool(CallToolRequestParams::new(where_.clone())).await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(
        ran.content[0].as_text().unwrap().text,
        r#"? ? (Mcp-Name Some("=?base64?b8O5?="), Mcp-Param-Region None)"#
    );
}

/// DNS rebinding: a request naming a host that is neither loopback nor one of Toolgate's public
/// hosts is refused, even with a valid key (the conformance suite checks this without a key, so
/// only this test shows that the key does not open the door).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_request_for_a_foreign_host_is_refused_even_with_a_key(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }});
    let post = |host: String| {
        reqwest::Client::new()
            .post(app.url("/mcp/acme"))
            .bearer_auth(&key)
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    assert_eq!(post(app.address.to_string()).await.unwrap().status(), 200);
    assert_eq!(post("evil.example.com".into()).await.unwrap().status(), 403);
}

/// A browser page may call the MCP endpoint only from Toolgate's public URL or an origin the
/// operator lists; another site's page (even with a key, in either era, on rmcp's way or the
/// direct one) gets 403, and a request without `Origin` (no browser) passes. Main checked no
/// `Origin`.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_browser_page_of_another_origin_is_refused_even_with_a_key(pool: PgPool) {
    let app = TestApp::spawn_configured(pool.clone(), |s| {
        s.public_url = Some("https://gate.example.com/".into());
        s.mcp_allowed_origins = vec!["http://localhost:6274".into()];
    })
    .await;
    let key = common::tenant_key(&app, &pool).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }});
    let stateless = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let post = async |origin: Option<&str>, body: &Value| {
        let mut request = reqwest::Client::new()
            .post(app.url("/mcp/acme"))
            .bearer_auth(&key)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if body["method"] == "tools/list" {
            request = request.header("mcp-protocol-version", "2026-07-28").header("mcp-method", "tools/list");
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let answer = request.send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    };
    for body in [&initialize, &stateless] {
        for origin in [None, Some("https://gate.example.com"), Some("http://localhost:6274")] {
            let (status, text) = post(origin, body).await;
            assert_eq!(status, 200, "{origin:?}: {text}");
        }
        for origin in ["https://evil.example", "http://gate.example.com", "http://localhost:6275", "null"] {
            let (status, text) = post(Some(origin), body).await;
            assert_eq!(status, 403, "{origin}: {text}");
            assert!(text.contains("TOOLGATE_MCP_ALLOWED_ORIGINS"), "{text}");
        }
    }
    // A listed origin's page can read the answers: its preflight (without credentials) passes.
    let preflight = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, app.url("/mcp/acme"))
        .header("origin", "http://localhost:6274")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type, mcp-protocol-version")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let allowed = preflight.headers().get("access-control-allow-origin").and_then(|v| v.to_str().ok());
    assert_eq!(allowed, Some("http://localhost:6274"));
}

/// Revision 2026-07-28's request checks, on a tenant's endpoint: `Mcp-Method` and `Mcp-Name`
/// must match the body (`HeaderMismatch`, -32020) and an unknown revision is refused with the
/// ones served (`UnsupportedProtocolVersion`, -32022), each with HTTP 400.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn requests_on_2026_07_28_must_agree_with_their_headers(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let post = async |version: &str, method: &str, name: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "list_directory",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        let answer = reqwest::Client::new()
            .post(app.url("/mcp/acme"))
            .bearer_auth(&key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        let text = answer.text().await.unwrap();
        let message = text.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or(&text).trim().to_string();
        (status, serde_json::from_str::<Value>(&message).unwrap_or_else(|_| panic!("{text}")))
    };
    let (status, answer) = post("2026-07-28", "tools/call", "list_directory").await;
    assert_eq!((status, answer["result"]["isError"].clone()), (200, json!(false)), "{answer}");
    let (status, answer) = post("2026-07-28", "tools/call", "run_command").await;
    assert_eq!((status, answer["error"]["code"].clone()), (400, json!(-32020)), "{answer}");
    let (status, answer) = post("2026-07-28", "tools/list", "list_directory").await;
    assert_eq!((status, answer["error"]["code"].clone()), (400, json!(-32020)), "{answer}");
    let (status, answer) = post("2099-01-01", "tools/call", "list_directory").await;
    assert_eq!((status, answer["error"]["code"].clone()), (400, json!(-32022)), "{answer}");
    assert!(answer["error"]["data"]["supported"].to_string().contains("2026-07-28"), "{answer}");
}

/// An upstream that speaks only revision 2026-07-28: it supports no other and refuses
/// requests without the revision's per-request metadata, so the handshake era is closed to it.
#[derive(Clone)]
struct ModernOnly;

impl rmcp::ServerHandler for ModernOnly {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        std::borrow::Cow::Owned(vec![rmcp::model::ProtocolVersion::V_2026_07_28])
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        one_tool("now", "Says which revision it speaks")
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let revision = context.protocol_version().map(|v| v.to_string()).unwrap_or_default();
        answer(revision)
    }
}

/// A server that speaks only 2026-07-28 (the handshake refused) is connected with
/// `server/discover`, and a client of either era calls it through Toolgate.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstream_that_speaks_only_2026_07_28_is_served_to_clients_of_both_eras(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let mut config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default();
    config.stateless_protocol_metadata_required = true;
    let url = common::register_upstream_with(&pool, "modern", ModernOnly, config).await;
    let handshake = ListChangedCounter::default()
        .serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url), legacy_client())
        .await;
    assert!(handshake.is_err(), "the upstream must refuse the handshake era for this test to mean anything");

    for lifecycle in [legacy_client(), current_client()] {
        let client = acme_client(&app, &key, lifecycle).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !names(&client).await.contains(&"modern_now".to_string()) {
            assert!(Instant::now() < deadline, "the modern upstream's tool never appeared");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let said = client.call_tool(CallToolRequestParams::new("modern_now")).await.unwrap();
        assert_eq!(said.content[0].as_text().unwrap().text, "2026-07-28", "{said:?}");
    }
}

/// A call a limit refuses is answered, in both protocol eras, with a tool error the LLM reads:
/// which limit, and when to try again.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_spent_limit_is_a_tool_error_naming_it_in_both_eras(pool: PgPool) {
    common::within_one_minute().await;
    let app = TestApp::spawn(pool.clone()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let two_a_minute: engine::model::CallLimits = serde_json::from_value(json!({"per_minute": 2})).unwrap();
    for (era, lifecycle) in [("legacy", legacy_client()), ("2026-07-28", current_client())] {
        let key =
            store::keys::create(&pool, &Actor::system(), &acme, era, None, two_a_minute).await.unwrap().1;
        drop(until_key_works(&app, "acme", &key).await);
        let client = acme_client(&app, &key, lifecycle).await;
        let list = || CallToolRequestParams::new("list_directory");
        for _ in 0..2 {
            let passed = client.call_tool(list()).await.unwrap();
            assert_ne!(passed.is_error, Some(true), "{era}: {passed:?}");
        }
        let refused = client.call_tool(list()).await.unwrap();
        assert_eq!(refused.is_error, Some(true), "{era}: {refused:?}");
        let text = serde_json::to_value(&refused.content).unwrap()[0]["text"].as_str().unwrap().to_string();
        assert!(
            text.starts_with("the limit of 2 calls per minute for this API key is reached; try again in "),
            "{era}: {text}"
        );
    }
}

/// POSTs one JSON-RPC message to acme's endpoint with `headers`; returns the answer's
/// content type, its `Mcp-Session-Id` if any, and its messages (one JSON body, or the events
/// of an SSE stream).
async fn post_raw(
    app: &TestApp,
    key: &str,
    headers: &[(&str, &str)],
    message: Value,
) -> (String, Option<String>, Vec<Value>) {
    let mut request = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = request.json(&message).send().await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let header = |name: &str| answer.headers().get(name).map(|v| v.to_str().unwrap().to_string());
    let (content_type, session) = (header("content-type").unwrap_or_default(), header("mcp-session-id"));
    let text = answer.text().await.unwrap();
    let messages = if content_type.starts_with("application/json") {
        vec![serde_json::from_str(&text).unwrap()]
    } else {
        let events = text.lines().filter_map(|line| line.strip_prefix("data:"));
        events
            .filter(|data| !data.trim().is_empty())
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    };
    (content_type, session, messages)
}

/// Opens a session of acme on revision 2025-11-25 the way a plain HTTP client does; returns
/// the headers its requests carry.
async fn open_raw_session(app: &TestApp, key: &str) -> Vec<(&'static str, String)> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}
    }});
    let (_, session, _) = post_raw(app, key, &[], initialize).await;
    let headers = vec![("mcp-session-id", session.unwrap()), ("mcp-protocol-version", "2025-11-25".into())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post_raw(app, key, &borrowed(&headers), initialized).await;
    headers
}

fn borrowed<'a>(headers: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    headers.iter().map(|(name, value)| (*name, value.as_str())).collect()
}

/// A call in a session that sends its client nothing before its result is answered with one
/// JSON body (rmcp answered each with an SSE stream: priming event, then the result), in the
/// shape of the session's revision (no `resultType`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_plain_call_in_a_session_is_answered_with_one_json_body(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let session = open_raw_session(&app, &key).await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "list_directory", "arguments": {"path": ""}
    }});
    let (content_type, _, messages) = post_raw(&app, &key, &borrowed(&session), call).await;
    assert!(content_type.starts_with("application/json"), "{content_type}");
    let [answer] = &messages[..] else { panic!("{messages:?}") };
    assert_eq!(
        (answer["id"].clone(), answer["result"]["isError"].clone()),
        (json!(7), json!(false)),
        "{answer}"
    );
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
}

/// An upstream tool that reports its progress three times before it answers.
#[derive(Clone)]
struct Counting;

impl rmcp::ServerHandler for Counting {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        one_tool("count", "Counts to three, reporting progress")
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let token = context.meta.get_progress_token().expect("the call asks for progress");
        for step in 1..=3 {
            let mut report = rmcp::model::ProgressNotificationParam::new(token.clone(), step as f64);
            report.total = Some(3.0);
            context.peer.notify_progress(report).await.unwrap();
        }
        // Reports sent just before a result may be handled after it; the test is about order.
        tokio::time::sleep(Duration::from_millis(100)).await;
        answer("counted")
    }
}

/// A call that reports progress is answered with an SSE stream, in either era: its progress
/// (under the client's token, in order), then its result.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_reporting_progress_streams_it_before_its_answer_in_both_eras(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    common::register_upstream(&pool, "up", Counting).await;
    common::until_listed(&app.url(""), &key, "up_count").await;
    let session = open_raw_session(&app, &key).await;
    let current = [
        ("mcp-protocol-version", "2026-07-28".to_string()),
        ("mcp-method", "tools/call".into()),
        ("mcp-name", "up_count".into()),
    ];
    let revision_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for (headers, mut meta) in [(&session[..], json!({})), (&current[..], revision_meta)] {
        meta["progressToken"] = json!("p");
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "up_count", "arguments": {}, "_meta": meta
        }});
        let (content_type, _, messages) = post_raw(&app, &key, &borrowed(headers), call).await;
        assert!(content_type.starts_with("text/event-stream"), "{content_type}");
        let (answer, reports) = messages.split_last().unwrap();
        let progress: Vec<Value> = reports
            .iter()
            .map(|m| {
                assert_eq!(
                    (m["method"].clone(), m["params"]["progressToken"].clone()),
                    (json!("notifications/progress"), json!("p"))
                );
                m["params"]["progress"].clone()
            })
            .collect();
        assert_eq!(progress, [json!(1.0), json!(2.0), json!(3.0)], "{messages:?}");
        assert_eq!(answer["result"]["content"][0]["text"], "counted", "{answer}");
    }
}
