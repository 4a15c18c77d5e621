//! MCP sessions of the handshake era belong to the key that opened them: another key (of
//! another tenant or the same) cannot use, stream from or delete them; one key cannot open
//! sessions without bound; a session's background work ends with it.

mod common;

use std::time::{Duration, Instant};

use common::TestApp;
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn key_of(pool: &PgPool, tenant: &str) -> String {
    let slug = TenantSlug::parse(tenant).unwrap();
    if store::tenants::get(pool, &slug).await.is_err() {
        store::tenants::create(pool, &Actor::system(), &slug, tenant).await.unwrap();
    }
    store::keys::create(pool, &Actor::system(), &slug, "test", None, Default::default()).await.unwrap().1
}

/// One MCP request over plain HTTP: the response.
async fn send(
    app: &TestApp,
    method: reqwest::Method,
    tenant: &str,
    key: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .request(method, app.url(&format!("/mcp/{tenant}")))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

fn list_tools() -> Option<Value> {
    Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
}

/// Opens a session of `key` (once the key is in the gateway's snapshot); its id.
async fn open_session(app: &TestApp, tenant: &str, key: &str) -> Result<String, reqwest::Response> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let deadline = Instant::now() + Duration::from_secs(5);
    let response = loop {
        let response = send(app, reqwest::Method::POST, tenant, key, None, Some(initialize.clone())).await;
        if response.status() != StatusCode::UNAUTHORIZED || Instant::now() > deadline {
            break response;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let Some(id) = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string()) else {
        return Err(response);
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = send(app, reqwest::Method::POST, tenant, key, Some(&id), Some(initialized)).await;
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    Ok(id)
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_session_answers_only_the_key_that_opened_it(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let acme = key_of(&pool, "acme").await;
    let acme_other = key_of(&pool, "acme").await;
    let globex = key_of(&pool, "globex").await;
    let session = open_session(&app, "acme", &acme).await.unwrap();
    // Both keys work on their own.
    open_session(&app, "globex", &globex).await.unwrap();
    open_session(&app, "acme", &acme_other).await.unwrap();

    use reqwest::Method;
    for (tenant, key) in [("globex", &globex), ("acme", &acme_other)] {
        let listed = send(&app, Method::POST, tenant, key, Some(&session), list_tools()).await;
        assert_eq!(listed.status(), StatusCode::NOT_FOUND, "{tenant}: another key used the session");
        assert_eq!(listed.text().await.unwrap(), "Not Found: Session not found");
        let stream = send(&app, Method::GET, tenant, key, Some(&session), None).await;
        assert_eq!(stream.status(), StatusCode::NOT_FOUND, "{tenant}: another key read the session's stream");
        let deleted = send(&app, Method::DELETE, tenant, key, Some(&session), None).await;
        assert_eq!(deleted.status(), StatusCode::NOT_FOUND, "{tenant}: another key ended the session");
    }
    let listed = send(&app, Method::POST, "acme", &acme, Some(&session), list_tools()).await;
    assert_eq!(listed.status(), StatusCode::OK, "the owner's session survived");
    let body = listed.text().await.unwrap();
    assert!(body.contains("\"tools\""), "{body}");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn one_key_opens_a_bounded_number_of_sessions(pool: PgPool) {
    let app = TestApp::spawn_configured(pool.clone(), |s| s.limits.mcp_sessions_per_key = 2).await;
    let key = key_of(&pool, "acme").await;
    let first = open_session(&app, "acme", &key).await.unwrap();
    open_session(&app, "acme", &key).await.unwrap();
    let refused = open_session(&app, "acme", &key).await.unwrap_err();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "60");
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "too_many_sessions");
    assert!(problem["detail"].as_str().unwrap().contains("2 MCP sessions"), "{problem}");
    // Another key of the tenant has its own allowance; closing one frees a place.
    let other = key_of(&pool, "acme").await;
    open_session(&app, "acme", &other).await.unwrap();
    let closed = send(&app, reqwest::Method::DELETE, "acme", &key, Some(&first), None).await;
    // The SDKs log "Session termination failed" for anything but 200 or 204.
    assert_eq!(closed.status(), StatusCode::NO_CONTENT);
    open_session(&app, "acme", &key).await.unwrap();
}

/// Each session watches the tenant's tools for `list_changed`; that task used to outlive the
/// session until the tools next changed, so opening and dropping sessions leaked tasks.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_sessions_watcher_ends_with_the_session(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = key_of(&pool, "acme").await;
    open_session(&app, "acme", &key).await.unwrap();
    let alive = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = alive();
    for _ in 0..20 {
        let session = open_session(&app, "acme", &key).await.unwrap();
        let closed = send(&app, reqwest::Method::DELETE, "acme", &key, Some(&session), None).await;
        assert!(closed.status().is_success());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() > before + 5 {
        assert!(
            Instant::now() < deadline,
            "{} tasks alive, {before} before 20 sessions came and went",
            alive()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
