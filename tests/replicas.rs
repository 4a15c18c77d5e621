//! Two processes on one database, as deployed: `toolgate serve` (panel, admin API) and a
//! `toolgate gateway` replica. A change made through the first reaches the MCP clients of the
//! second, list_changed included; the replica serves health and metrics but no panel; and an
//! MCP session moves between replicas.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{ListChangedCounter, json_of, start_process};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_change_through_serve_reaches_the_clients_of_a_gateway_replica(pool: PgPool) {
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let key = store::keys::create(&pool, &Actor::system(), &acme, "replica", None, Default::default())
        .await
        .unwrap()
        .1;
    let token = common::admin_token(&pool, "replicas").await;
    let serve = start_process("serve", &pool);
    let gateway = start_process("gateway", &pool);

    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp/acme", gateway.url)).auth_header(key);
    let client = ListChangedCounter::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    let names = || async {
        let tools = client.list_all_tools().await.unwrap();
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    };
    assert!(names().await.contains(&"write_text_file".to_string()));

    let put = reqwest::Client::new().put(format!("{}/api/admin/v1/config", serve.url)).bearer_auth(&token);
    let applied =
        json_of(put.json(&json!({"tenants": [{"slug": "acme", "name": "Acme", "enabled_tags": ["shell"]}]})))
            .await;
    assert_eq!(applied["applied"], true, "{applied}");

    let deadline = Instant::now() + Duration::from_secs(10);
    while client.service().list_changed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the replica's client got no notifications/tools/list_changed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(names().await, ["run_command"], "only the shell-tagged tool is left");

    // The replica serves operations, and no panel or admin API.
    let http = reqwest::Client::new();
    let metrics = http.get(format!("{}/metrics", gateway.url)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("toolgate_catalog_version"), "{metrics}");
    assert_eq!(http.get(format!("{}/readyz", gateway.url)).send().await.unwrap().status(), 200);
    let admin =
        http.get(format!("{}/api/admin/v1/config", gateway.url)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(admin.status(), 404);
    let panel = http.get(format!("{}/login", gateway.url)).send().await.unwrap();
    assert_eq!(panel.status(), 404);
}

/// One JSON-RPC message to the MCP endpoint at `url`, as a client of the handshake era sends
/// it: the status, the session id the server gave, and the answer (from the JSON body or the
/// SSE stream), if any.
async fn rpc(url: &str, key: &str, session: Option<&str>, message: Value) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .json(&message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    let body = response.text().await.unwrap();
    let answer = body
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or(Value::Null);
    (status, session, answer)
}

/// Lists the tools of `session` at `url` until `tool` is among them (a replica's catalog
/// follows a change within milliseconds, not at once).
async fn lists(url: &str, key: &str, session: &str, tool: &str) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _, answer) = rpc(url, key, Some(session), list.clone()).await;
        let tools = answer["result"]["tools"].as_array().cloned().unwrap_or_default();
        if tools.iter().any(|t| t["name"] == tool) {
            return;
        }
        assert!(Instant::now() < deadline, "{url} never listed {tool}: {status} {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A session opened on one replica continues on another, with no sticky load balancer: the
/// second replica checks its key in PostgreSQL, rmcp replays the handshake, the groups it
/// equipped come along, its list_changed notifications come from the second replica, and it
/// outlives the first. Main answered `404 Session not found` on the second replica.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_mcp_session_moves_to_another_replica_with_its_key_and_its_equipped_groups(pool: PgPool) {
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let key = store::keys::create(&pool, &Actor::system(), &acme, "moving", None, Default::default())
        .await
        .unwrap()
        .1;
    let other_key = store::keys::create(&pool, &Actor::system(), &acme, "other", None, Default::default())
        .await
        .unwrap()
        .1;
    // The built-in tools are recorded as a process starts.
    let first = start_process("gateway", &pool);
    let second = start_process("gateway", &pool);
    let run_command = common::ops_group_and_meta_tool(&pool, &acme).await;
    let (a, b) = (format!("{}/mcp/acme", first.url), format!("{}/mcp/acme", second.url));

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "moving-client", "version": "1"}}});
    let (status, session, answer) = rpc(&a, &key, None, initialize).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(rpc(&a, &key, Some(&session), initialized).await.0, 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    lists(&a, &key, &session, "reset_equipped_tools").await;
    let equip = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "reset_equipped_tools", "arguments": {"groups": ["ops"]}}});
    let (_, _, equipped) = rpc(&a, &key, Some(&session), equip).await;
    assert_ne!(equipped["result"]["isError"], true, "{equipped}");
    lists(&a, &key, &session, "run_command").await;

    // The second replica continues it, with its choice of groups; another key may not.
    lists(&b, &key, &session, "run_command").await;
    assert_eq!(rpc(&b, &other_key, Some(&session), list.clone()).await.0, 404);

    // Its notifications come from the second replica now: list_changed on its GET stream.
    let mut stream = reqwest::Client::new()
        .get(&b)
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let renamed =
        engine::store::overrides::OverrideInput { name: Some("run_program".into()), ..Default::default() };
    common::set_override(&pool, &acme, run_command, &renamed).await.unwrap();
    let mut heard = String::new();
    while !heard.contains("notifications/tools/list_changed") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk()).await;
        let chunk =
            chunk.expect("no list_changed from the second replica").unwrap().expect("the stream ended");
        heard.push_str(&String::from_utf8_lossy(&chunk));
    }

    // And outlives the first.
    drop(first);
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "run_program", "arguments": {"program": "sleep", "args": ["0"]}}});
    let (status, _, ran) = rpc(&b, &key, Some(&session), call).await;
    assert_eq!(status, 200, "{ran}");
    // The equipped tool itself answered (this process allows no program): not "unknown tool".
    let text = ran["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, "program `sleep` is not allowed (allowed: none)", "{ran}");
}

/// Opens a handshake-era session at `url` with `key`: its id, or the status that refused it.
async fn open_session(url: &str, key: &str) -> Result<String, u16> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "ending-client", "version": "1"}}});
    let (status, session, _) = rpc(url, key, None, initialize).await;
    let session = session.filter(|_| status == 200).ok_or(status)?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(rpc(url, key, Some(&session), initialized).await.0, 202);
    Ok(session)
}

/// Ends `session` at `url` with its client's DELETE.
async fn end_session(url: &str, key: &str, session: &str) {
    let ended = reqwest::Client::new()
        .delete(url)
        .bearer_auth(key)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 204);
}

/// Waits until `session` is unknown at `url` (404), as it must be promptly once it ended.
async fn until_gone(url: &str, key: &str, session: &str) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (status, _, answer) = rpc(url, key, Some(session), list.clone()).await;
        if status == 404 {
            return;
        }
        assert!(Instant::now() < deadline, "{url} still serves ended session {session}: {status} {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A session its client ends on one replica ends on the others within milliseconds, with its
/// stream, so the per-key cap counts what is really open: main kept every session alive on the
/// replica that had adopted it, and a key capped at one session could hold any number there
/// (open on A, use on B, DELETE on A, again).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_session_ended_on_one_replica_ends_on_every_other_and_the_cap_holds_across_them(pool: PgPool) {
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let key = store::keys::create(&pool, &Actor::system(), &acme, "capped", None, Default::default())
        .await
        .unwrap()
        .1;
    let one = [("TOOLGATE_MCP_SESSIONS_PER_KEY", "1")];
    let first = common::start_process_with_env("gateway", &pool, &one);
    let second = common::start_process_with_env("gateway", &pool, &one);
    let (a, b) = (format!("{}/mcp/acme", first.url), format!("{}/mcp/acme", second.url));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    let session = open_session(&a, &key).await.unwrap();
    for _ in 0..2 {
        let (status, _, answer) = rpc(&b, &key, Some(&session), list.clone()).await;
        assert_eq!(status, 200, "the second replica adopts it: {answer}");
    }
    let mut stream = reqwest::Client::new()
        .get(&b)
        .bearer_auth(&key)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(open_session(&b, &key).await, Err(429), "one session per key");

    end_session(&a, &key, &session).await;
    until_gone(&b, &key, &session).await;
    let closed = async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            let _ = chunk;
        }
    };
    tokio::time::timeout(Duration::from_secs(3), closed)
        .await
        .expect("its stream on the second replica ends");

    // The cap counts the one session open now, on whichever replica.
    let again = open_session(&b, &key).await.expect("the ended session no longer counts");
    assert_eq!(rpc(&a, &key, Some(&again), list.clone()).await.0, 200);
    assert_eq!(open_session(&a, &key).await, Err(429));
    end_session(&b, &key, &again).await;
    until_gone(&a, &key, &again).await;
    let open: i64 = sqlx::query_scalar("select count(*) from mcp_session").fetch_one(&pool).await.unwrap();
    assert_eq!(open, 0);
}

/// A tenant's daily limit holds across two gateway replicas: each counts locally and shares
/// its count through PostgreSQL at every sync, so a call on one replica is refused once the
/// calls of both reach the limit.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_limit_holds_across_two_gateway_replicas(pool: PgPool) {
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let limits = serde_json::from_value(json!({"per_day": 10})).unwrap();
    let update = store::tenants::TenantUpdate { limits: Some(limits), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &acme, update).await.unwrap();
    let key = store::keys::create(&pool, &Actor::system(), &acme, "limited", None, Default::default())
        .await
        .unwrap()
        .1;
    let sync = [("TOOLGATE_LIMIT_SYNC_MS", "100")];
    let a = common::start_process_with_env("gateway", &pool, &sync);
    let b = common::start_process_with_env("gateway", &pool, &sync);
    let call = |replica: &str| {
        reqwest::Client::new()
            .post(format!("{replica}/api/v1/tools/list_directory/invoke"))
            .bearer_auth(&key)
            .json(&json!({"arguments": {}}))
            .send()
    };
    let shared = || async {
        sqlx::query_scalar::<_, i64>("select coalesce(sum(calls), 0)::bigint from call_usage")
            .fetch_one(&pool)
            .await
            .unwrap()
    };

    for _ in 0..6 {
        assert_eq!(call(&a.url).await.unwrap().status(), 200);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while shared().await < 6 {
        assert!(Instant::now() < deadline, "replica A never shared its count");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // B reads the day's count before its first call, and admits what is left.
    for _ in 0..4 {
        assert_eq!(call(&b.url).await.unwrap().status(), 200);
    }
    let refused = call(&b.url).await.unwrap();
    assert_eq!(refused.status(), 429);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["limit"]["limit"], "per_day", "{problem}");
    // A learns B's calls at its next sync; until then it admits what its own view leaves (the
    // documented overshoot: at most the calls of the others since its last sync, here 4).
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut beyond = 0;
    while call(&a.url).await.unwrap().status() != 429 {
        beyond += 1;
        assert!(Instant::now() < deadline, "replica A never learned of B's calls");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(beyond <= 4, "A admitted {beyond} beyond the limit");
    let deadline = Instant::now() + Duration::from_secs(5);
    while shared().await < 10 + beyond {
        assert!(Instant::now() < deadline, "the replicas never shared every call");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(shared().await, 10 + beyond);
}
