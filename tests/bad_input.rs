//! Bad input on every surface — the MCP endpoint, the REST API, the admin API, sign-in and the
//! static files: malformed JSON, wrong JSON-RPC, unknown methods, tenants and tools, bodies
//! over the limit, path traversal, revoked and expired keys. Each is answered with a 4xx (or,
//! inside a valid JSON-RPC exchange, a JSON-RPC error) that says what was wrong; never a 5xx,
//! never a panic. Arguments that break a tool's schema are a tool error the LLM can act on.

mod common;

use common::{TestApp, json_of, tenant_key};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};
use sqlx::PgPool;

/// Over every body limit (2 MiB for JSON APIs, 4 MiB for MCP).
const HUGE: usize = 5 * 1024 * 1024;

/// Sends `request`; asserts a 4xx whose body says something; returns status and body text.
async fn refused(what: &str, request: RequestBuilder) -> (StatusCode, String) {
    let response = request.send().await.unwrap_or_else(|err| panic!("{what}: no answer: {err}"));
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_client_error(), "{what}: {status} {body}");
    assert!(!body.trim().is_empty(), "{what}: {status} without a message");
    (status, body)
}

/// The stable `code` of a problem document.
fn code(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .map(|p| p["code"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// A POST to the tenant's MCP endpoint, as MCP clients send it.
fn mcp(app: &TestApp, key: &str, tenant: &str) -> RequestBuilder {
    reqwest::Client::new()
        .post(app.url(&format!("/mcp/{tenant}")))
        .bearer_auth(key)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
}

/// Opens an MCP session over raw HTTP; returns its id.
async fn mcp_session(app: &TestApp, key: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let response = mcp(app, key, "acme").json(&initialize).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = mcp(app, key, "acme").header("mcp-session-id", &session).json(&initialized).send().await;
    assert!(response.unwrap().status().is_success());
    session
}

/// The JSON-RPC error in an MCP answer (a JSON body or an SSE stream of one message).
async fn jsonrpc_error(request: RequestBuilder) -> Value {
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let data = text.lines().filter_map(|l| l.strip_prefix("data:")).find(|d| !d.trim().is_empty());
    let message = data.unwrap_or(&text).trim();
    let message: Value = serde_json::from_str(message).unwrap_or_else(|_| panic!("not JSON-RPC: {text}"));
    assert!(message["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{message}");
    message["error"].clone()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_mcp_endpoint_refuses_bad_requests_clearly(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;

    refused("malformed JSON", mcp(&app, &key, "acme").body("{\"jsonrpc\": \"2.0\", \"id\": ")).await;
    let wrong_version = json!({"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {}});
    refused("JSON-RPC 1.0", mcp(&app, &key, "acme").json(&wrong_version)).await;
    refused("not JSON-RPC at all", mcp(&app, &key, "acme").json(&json!([1, 2, 3]))).await;
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "padding": "x".repeat(HUGE)});
    let (status, _) = refused("a 5 MiB body", mcp(&app, &key, "acme").json(&huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (_, body) = refused("another tenant", mcp(&app, &key, "globex").json(&ping)).await;
    assert_eq!(code(&body), "invalid_api_key");
    let bogus = mcp(&app, &key, "acme").header("mcp-session-id", "no-such-session").json(&ping);
    refused("an unknown session", bogus).await;

    let session = mcp_session(&app, &key).await;
    let in_session = || mcp(&app, &key, "acme").header("mcp-session-id", &session);
    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/frobnicate", "params": {}});
    assert_eq!(jsonrpc_error(in_session().json(&unknown)).await["code"], -32601);
    let call = |name: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let error = jsonrpc_error(in_session().json(&call("no_such_tool", json!({})))).await;
    assert!(error["message"].as_str().unwrap().contains("no_such_tool"), "{error}");

    // A schema violation is a tool result the LLM can correct itself from.
    let response = in_session().json(&call("list_directory", json!({"path": 42}))).send().await.unwrap();
    let text = response.text().await.unwrap();
    assert!(text.contains("\"isError\":true") && text.contains("expected string"), "{text}");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_rest_api_refuses_bad_requests_clearly(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let http = reqwest::Client::new();
    let invoke = |tool: &str| http.post(app.url(&format!("/api/v1/tools/{tool}/invoke"))).bearer_auth(&key);

    let (_, body) = refused(
        "malformed JSON",
        invoke("list_directory").header(CONTENT_TYPE, "application/json").body("{"),
    )
    .await;
    assert_eq!(code(&body), "invalid_body");
    let (status, body) = refused(
        "a 5 MiB body",
        invoke("list_directory").json(&json!({"arguments": {"path": "x".repeat(HUGE)}})),
    )
    .await;
    assert_eq!((status, code(&body).as_str()), (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large"));
    let (_, body) = refused("an unknown tool", invoke("no_such_tool").json(&json!({}))).await;
    assert_eq!(code(&body), "unknown_tool");
    let (_, body) =
        refused("a traversing tool name", invoke("..%2F..%2Fetc%2Fpasswd").json(&json!({}))).await;
    assert_eq!(code(&body), "unknown_tool");
    let batch = json!({"tool_calls": [{"id": "1", "function": {"name": "list_directory", "arguments": "{not json"}}]});
    let answered = json_of(http.post(app.url("/api/v1/tool_calls")).bearer_auth(&key).json(&batch)).await;
    assert_eq!(answered["results"][0]["status"], "tool_error", "{answered}");
    let (_, body) =
        refused("an unknown format", http.get(app.url("/api/v1/tools?format=cobol")).bearer_auth(&key)).await;
    assert_eq!(code(&body), "unknown_format");
    let (_, body) = refused(
        "an unknown call to resume",
        http.post(app.url(&format!("/api/v1/calls/{}/resume", uuid::Uuid::new_v4())))
            .bearer_auth(&key)
            .json(&json!({"result": {}})),
    )
    .await;
    assert!(!code(&body).is_empty(), "{body}");

    // Path traversal in the files tools: a tool error naming the problem, nothing read.
    for (path, why) in [
        ("../../../../etc/passwd", "`..` is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("a/../../b", "`..` is not allowed"),
    ] {
        let result = json_of(invoke("view_text_file").json(&json!({"arguments": {"path": path}}))).await;
        assert_eq!(result["status"], "tool_error", "{path}: {result}");
        let text = result["output"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(why) && !text.contains("root:"), "{path}: {text}");
    }
    for (arguments, expected) in [(json!({"path": 42}), "expected string"), (json!("ls"), "expected object")]
    {
        let result = json_of(invoke("list_directory").json(&json!({"arguments": arguments}))).await;
        assert_eq!(result["status"], "tool_error");
        assert!(result["output"]["content"][0]["text"].as_str().unwrap().contains(expected), "{result}");
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn revoked_and_expired_keys_are_refused_saying_which(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let acme = TenantSlug::parse("acme").unwrap();
    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
    let (_, short_key) =
        store::keys::create(&pool, &Actor::system(), &acme, "short", Some(soon), Default::default())
            .await
            .unwrap();
    let past = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let err = store::keys::create(&pool, &Actor::system(), &acme, "past", Some(past), Default::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("expiry must be in the future"), "{err}");
    let http = reqwest::Client::new();
    let tools = |key: &str| http.get(app.url("/api/v1/tools")).bearer_auth(key.to_string());
    // The short-lived key works until it expires (once the snapshot has it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while tools(&short_key).send().await.unwrap().status() != StatusCode::OK {
        assert!(std::time::Instant::now() < deadline, "the new key never worked");
    }
    let left = soon - time::OffsetDateTime::now_utc() + time::Duration::milliseconds(50);
    tokio::time::sleep(left.try_into().unwrap_or_default()).await;
    let (_, body) = refused("an expired key", tools(&short_key)).await;
    assert_eq!(code(&body), "expired_api_key");
    assert!(body.contains("expired at"), "{body}");
    let (_, body) = refused("an expired key over MCP", mcp(&app, &short_key, "acme").json(&json!({}))).await;
    assert_eq!(code(&body), "expired_api_key");

    let id = store::keys::list(&pool, &acme).await.unwrap()[0].id;
    store::keys::revoke(&pool, &Actor::system(), &acme, id).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let response = tools(&key).send().await.unwrap();
        if response.status() == StatusCode::UNAUTHORIZED {
            assert_eq!(code(&response.text().await.unwrap()), "invalid_api_key");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the revoked key still works");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for (what, request) in [
        ("no key", http.get(app.url("/api/v1/tools"))),
        ("not a bearer key", http.get(app.url("/api/v1/tools")).header("authorization", "Basic YTpi")),
        ("a made-up key", tools("tg_madeup")),
    ] {
        let (_, body) = refused(what, request).await;
        assert_eq!(code(&body), "invalid_api_key", "{what}");
    }

    // Through the admin API: an expiry in the past is refused, one in the future is kept.
    let token = common::admin_token(&pool, "keys").await;
    let create = || http.post(app.url("/api/admin/v1/tenants/acme/keys")).bearer_auth(&token);
    let (status, body) = refused(
        "an expiry in the past",
        create().json(&json!({"name": "old", "expires_at": "2020-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!((status, code(&body).as_str()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid"), "{body}");
    let (_, body) =
        refused("an expiry that is no time", create().json(&json!({"name": "x", "expires_at": "tomorrow"})))
            .await;
    assert_eq!(code(&body), "invalid_body");
    let created =
        create().json(&json!({"name": "new", "expires_at": "2099-01-01T00:00:00Z"})).send().await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let listed = json_of(http.get(app.url("/api/admin/v1/tenants/acme/keys")).bearer_auth(&token)).await;
    let new = listed.as_array().unwrap().iter().find(|k| k["name"] == "new").unwrap();
    assert_eq!(new["expires_at"], "2099-01-01T00:00:00Z");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_admin_api_sign_in_and_static_files_refuse_bad_requests_clearly(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let token = common::admin_token(&pool, "bad-input").await;
    let http = reqwest::Client::new();
    let admin = |method: reqwest::Method, path: &str| http.request(method, app.url(path)).bearer_auth(&token);
    use reqwest::Method;

    let (_, body) = refused(
        "malformed JSON",
        admin(Method::POST, "/api/admin/v1/tenants")
            .header(CONTENT_TYPE, "application/json")
            .body("{\"slug\":"),
    )
    .await;
    assert_eq!(code(&body), "invalid_body");
    let (_, body) = refused(
        "a bad slug",
        admin(Method::POST, "/api/admin/v1/tenants").json(&json!({"slug": "../etc", "name": "x"})),
    )
    .await;
    assert!(["invalid", "invalid_body"].contains(&code(&body).as_str()), "{body}");
    let (status, _) = refused(
        "a 5 MiB body",
        admin(Method::POST, "/api/admin/v1/tenants").json(&json!({"slug": "a", "name": "x".repeat(HUGE)})),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, _) = refused(
        "a 5 MiB document",
        admin(Method::PUT, "/api/admin/v1/config").json(&json!({"default_tags": ["x".repeat(HUGE)]})),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (_, body) = refused(
        "YAML that is not",
        admin(Method::PUT, "/api/admin/v1/config")
            .header(CONTENT_TYPE, "application/yaml")
            .body("servers: ["),
    )
    .await;
    assert_eq!(code(&body), "invalid_body");
    let (_, body) = refused(
        "an unknown key in the document",
        admin(Method::PUT, "/api/admin/v1/config").json(&json!({"servers": [], "surprise": 1})),
    )
    .await;
    assert_eq!(code(&body), "invalid_body");
    for path in [
        "/api/admin/v1/tenants/nobody",
        "/api/admin/v1/tenants/..%2F..%2Fetc",
        "/api/admin/v1/servers/nothing-here",
        "/api/admin/v1/tools/not-a-uuid/schema",
        "/api/admin/v1/tools/00000000-0000-0000-0000-000000000000/schema",
    ] {
        refused(path, admin(Method::GET, path)).await;
    }
    let (_, body) =
        refused("an unknown admin token", http.get(app.url("/api/admin/v1/tenants")).bearer_auth("tga_nope"))
            .await;
    assert_eq!(code(&body), "invalid_admin_token");
    let invoke = json!({"tool": "no_such_tool", "arguments": {}});
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    refused(
        "invoking an unknown tool",
        admin(Method::POST, "/api/admin/v1/tenants/acme/invoke").json(&invoke),
    )
    .await;

    // Sign-in: a wrong password and a missing field are refused; so is a cross-site post.
    assert!(
        app.login("wrong").await.status().is_client_error()
            || app.login("wrong").await.status().is_redirection()
    );
    refused(
        "a sign-in without a password",
        app.client.post(app.url("/api/login")).form(&[("username", "admin")]),
    )
    .await;
    let foreign = common::client_with_origin("http://evil.example");
    refused(
        "a cross-site sign-in",
        foreign.post(app.url("/api/login")).form(&[("username", "admin"), ("password", "x")]),
    )
    .await;

    // Static files never leave the site directory.
    for path in [
        "/pkg/../../../../etc/passwd",
        "/pkg/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        "/pkg/%2e%2e/%2e%2e/etc/passwd",
    ] {
        let response = http.get(app.url(path)).send().await.unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(!body.contains("root:"), "{path} served a file outside the site");
        assert!(status.is_client_error() || status.is_redirection(), "{path}: {status}");
    }
}
