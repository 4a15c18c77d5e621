//! PostgreSQL stopped and started again under a running Toolgate (a private cluster of this
//! test's own, so no other test loses its database): the gateway keeps serving from its last
//! snapshot, writes are refused with a clear 503 and change nothing, and once the database is
//! back the listener reconnects and a change made then reaches the gateway. And a stopping
//! server does not wait forever for streams that never end.

mod common;

use std::time::{Duration, Instant};

use common::{TestApp, json_of};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn eventually<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_rides_out_a_database_restart() {
    let dir = std::env::temp_dir().join(format!("toolgate-resilience-{}", uuid::Uuid::new_v4()));
    let cluster = pgcluster::Cluster::start(&dir).unwrap();
    let pool = engine::db::PgPool::connect(&cluster.url("postgres")).await.unwrap();
    engine::db::MIGRATOR.run(&pool).await.unwrap();
    let app = TestApp::spawn(pool.clone()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key =
        store::keys::create(&pool, &Actor::system(), &acme, "k", None, Default::default()).await.unwrap().1;
    let token = common::admin_token(&pool, "ops").await;
    let http = reqwest::Client::new();
    let tools = || {
        let (http, url, key) = (http.clone(), app.url("/api/v1/tools?format=mcp"), key.clone());
        async move {
            let response = http.get(url).bearer_auth(key).send().await.unwrap();
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            let names: Vec<String> = body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect();
            (status, names)
        }
    };
    eventually("the key never worked", || async { tools().await.0 == StatusCode::OK }).await;

    pgcluster::Cluster::stop_at(&dir).unwrap();

    // Reads and calls are served from the snapshot; the invocation record is lost, not the call.
    let (status, names) = tools().await;
    assert_eq!(status, StatusCode::OK);
    assert!(names.contains(&"run_command".to_string()), "{names:?}");
    let invoke = http.post(app.url("/api/v1/tools/list_directory/invoke")).bearer_auth(&key);
    let invoked = json_of(invoke.json(&json!({"arguments": {"path": ""}}))).await;
    assert_eq!(invoked["status"], "ok", "{invoked}");
    // A write is refused, saying so.
    let write = http
        .patch(app.url("/api/admin/v1/tenants/acme"))
        .bearer_auth(&token)
        .json(&json!({"enabled_tags": ["files"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), StatusCode::SERVICE_UNAVAILABLE);
    let problem: Value = write.json().await.unwrap();
    assert_eq!(problem["code"], "database_unavailable", "{problem}");
    let health = http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);

    let cluster = pgcluster::Cluster::start(&dir).unwrap();
    // Once it is back, the write goes through and reaches the gateway's snapshot.
    eventually("writes never worked again", || async {
        http.patch(app.url("/api/admin/v1/tenants/acme"))
            .bearer_auth(&token)
            .json(&json!({"enabled_tags": ["files"]}))
            .send()
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK)
    })
    .await;
    eventually("the change never reached the gateway", || async {
        let names = tools().await.1;
        !names.is_empty() && !names.contains(&"run_command".to_string())
    })
    .await;

    drop(app);
    pool.close().await;
    cluster.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_stopping_server_does_not_wait_for_streams_that_never_end(pool: sqlx::PgPool) {
    // An MCP session's event stream stays open as long as its client: a client that never goes
    // away kept `toolgate serve` running after SIGTERM for good.
    let mut toolgate = common::start_process("serve", &pool);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key =
        store::keys::create(&pool, &Actor::system(), &acme, "k", None, Default::default()).await.unwrap().1;
    let (http, endpoint) = (reqwest::Client::new(), format!("{}/mcp/acme", toolgate.url));
    let post = |body: Value, session: Option<String>| {
        let request = http
            .post(&endpoint)
            .bearer_auth(&key)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        async move {
            let request = match session {
                Some(session) => request.header("mcp-session-id", session),
                None => request,
            };
            request.send().await.unwrap()
        }
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}
    }});
    let mut answer = post(initialize.clone(), None).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while answer.status() != StatusCode::OK {
        assert!(Instant::now() < deadline, "the key was never accepted: {}", answer.status());
        tokio::time::sleep(Duration::from_millis(100)).await;
        answer = post(initialize.clone(), None).await;
    }
    let session = answer.headers()["mcp-session-id"].to_str().unwrap().to_string();
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(session.clone())).await;
    let stream = http
        .get(&endpoint)
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);

    let status =
        toolgate.terminate(Duration::from_secs(30)).expect("the server stops within its grace period");
    assert!(status.success(), "{status}");
    drop(stream);
}
