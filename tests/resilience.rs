//! PostgreSQL stopped and started again under a running Toolgate (a private cluster of each
//! test's own, so no other test loses its database): the gateway keeps serving from its last
//! snapshot, writes are refused with a clear 503 and change nothing, every call's record waits
//! and is written once the database is back, and the listener reconnects so a change made
//! then reaches the gateway. And a stopping server does not wait forever for streams that
//! never end.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Toolgate on a PostgreSQL cluster of the test's own (its folder, to stop and start it),
/// with a tenant `acme`, a key of it and an admin token.
struct Private {
    dir: std::path::PathBuf,
    pool: sqlx::PgPool,
    app: TestApp,
    key: String,
    token: String,
    http: reqwest::Client,
}

impl Private {
    async fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("toolgate-resilience-{}", uuid::Uuid::new_v4()));
        let cluster = pgcluster::Cluster::start(&dir).unwrap();
        let pool = engine::db::PgPool::connect(&cluster.url("postgres")).await.unwrap();
        engine::db::MIGRATOR.run(&pool).await.unwrap();
        let app = TestApp::spawn(pool.clone()).await;
        let key = common::tenant_key(&app, &pool).await;
        let token = common::admin_token(&pool, "ops").await;
        Private { dir, pool, app, key, token, http: reqwest::Client::new() }
    }

    fn stop_database(&self) {
        pgcluster::Cluster::stop_at(&self.dir).unwrap();
    }

    fn start_database(&self) {
        pgcluster::Cluster::start(&self.dir).unwrap();
    }

    /// An admin API write: the tenant's tags.
    async fn set_tags(&self, tags: &[&str]) -> reqwest::Response {
        let url = self.app.url("/api/admin/v1/tenants/acme");
        let request = self.http.patch(url).bearer_auth(&self.token).json(&json!({"enabled_tags": tags}));
        request.send().await.unwrap()
    }

    /// A JSON-RPC message to the tenant's MCP endpoint, with `headers` besides the key.
    async fn mcp(&self, headers: &[(&str, &str)], message: Value) -> reqwest::Response {
        let request = self.http.post(self.app.url("/mcp/acme")).bearer_auth(&self.key);
        let request = headers.iter().fold(request, |request, (name, value)| request.header(*name, *value));
        request.header("accept", "application/json, text/event-stream").json(&message).send().await.unwrap()
    }

    async fn end(self) {
        drop(self.app);
        self.pool.close().await;
        pgcluster::Cluster::stop_at(&self.dir).unwrap();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_rides_out_a_database_restart() {
    let private = Private::start().await;
    let (app, key, http) = (&private.app, &private.key, &private.http);
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

    private.stop_database();

    // Reads and calls are served from the snapshot.
    let (status, names) = tools().await;
    assert_eq!(status, StatusCode::OK);
    assert!(names.contains(&"run_command".to_string()), "{names:?}");
    let invoke = http.post(app.url("/api/v1/tools/list_directory/invoke")).bearer_auth(key);
    let invoked = json_of(invoke.json(&json!({"arguments": {"path": ""}}))).await;
    assert_eq!(invoked["status"], "ok", "{invoked}");
    // A write is refused, saying so.
    let write = private.set_tags(&["files"]).await;
    assert_eq!(write.status(), StatusCode::SERVICE_UNAVAILABLE);
    let problem: Value = write.json().await.unwrap();
    assert_eq!(problem["code"], "database_unavailable", "{problem}");
    let health = http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);

    private.start_database();
    // Once it is back, the write goes through and reaches the gateway's snapshot.
    eventually("writes never worked again", || async {
        private.set_tags(&["files"]).await.status() == StatusCode::OK
    })
    .await;
    eventually("the change never reached the gateway", || async {
        let names = tools().await.1;
        !names.is_empty() && !names.contains(&"run_command".to_string())
    })
    .await;
    private.end().await;
}

/// Under a steady load (20 calls a second) PostgreSQL goes away for 4 s and comes back: no
/// call fails, and every call's record is written (main dropped each batch it could not write:
/// half of the calls had no record); every 503 says when to retry, a new MCP session is refused
/// saying that revision 2026-07-28 needs none, and the admin API answers again within 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_load_a_database_restart_loses_no_call_and_no_record() {
    let private = Private::start().await;
    let (app, key, http, pool) = (&private.app, &private.key, &private.http, &private.pool);
    let invoke = {
        let (http, url, key) = (http.clone(), app.url("/api/v1/tools/list_directory/invoke"), key.clone());
        move || {
            let request = http.post(&url).bearer_auth(&key).json(&json!({"arguments": {"path": ""}}));
            async move {
                let response = request.send().await.map_err(|err| err.to_string())?;
                let body: Value = response.json().await.map_err(|err| err.to_string())?;
                if body["status"] == "ok" { Ok(()) } else { Err(body.to_string()) }
            }
        }
    };
    eventually("the key never worked", || async { invoke().await.is_ok() }).await;
    assert!(app.login(common::PASSWORD).await.status().is_success());
    let recorded = || async {
        sqlx::query_scalar::<_, i64>("select count(*) from invocation")
            .fetch_one(pool)
            .await
            .unwrap_or_default()
    };
    let running = Arc::new(AtomicBool::new(true));
    let load = tokio::spawn({
        let running = running.clone();
        async move {
            let (mut ok, mut failed) = (0, Vec::new());
            let mut every = tokio::time::interval(Duration::from_millis(50));
            while running.load(Ordering::Relaxed) {
                every.tick().await;
                match invoke().await {
                    Ok(()) => ok += 1,
                    Err(err) => failed.push(err),
                }
            }
            (ok, failed)
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;

    private.stop_database();
    let away = Instant::now();
    let retry_after = |response: &reqwest::Response| {
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let seconds = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
        assert!(seconds.as_deref().is_some_and(|s| s.parse::<u32>().is_ok()), "{:?}", response.headers());
    };
    retry_after(&private.set_tags(&["files"]).await);
    retry_after(&http.get(app.url("/healthz")).send().await.unwrap());
    // The panel says what is going on, rather than a bare error.
    let page = app.get("/tenants").await;
    retry_after(&page);
    let page = page.text().await.unwrap();
    assert!(page.contains("Toolgate cannot reach its database"), "{page}");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}
    }});
    let session = private.mcp(&[], initialize).await;
    retry_after(&session);
    let refusal = session.text().await.unwrap();
    assert!(refusal.contains("2026-07-28"), "{refusal}");
    // As it says: a 2026-07-28 client, which needs no session, is served.
    let era = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "list_directory"),
    ];
    let call = private
        .mcp(
            &era,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "list_directory",
                "arguments": {"path": ""},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }}),
        )
        .await;
    assert_eq!(call.status(), StatusCode::OK);
    let answer: Value = call.json().await.unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(away.elapsed())).await;

    private.start_database();
    let back = Instant::now();
    eventually("writes never worked again", || async {
        private.set_tags(&["files", "shell"]).await.status() == StatusCode::OK
    })
    .await;
    let answered = back.elapsed();
    assert!(answered < Duration::from_secs(2), "the admin API answered again only after {answered:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    running.store(false, Ordering::Relaxed);
    let (ok, failed) = load.await.unwrap();
    assert!(failed.is_empty(), "{} of {} calls failed: {:?}", failed.len(), ok + failed.len(), &failed[..1]);
    assert!(ok > 80, "{ok} calls");
    // The first call, the load's and the 2026-07-28 one.
    let made = ok as i64 + 2;
    eventually("some calls were never recorded", || async { recorded().await >= made }).await;
    assert_eq!(recorded().await, made);
    let lost: i64 = sqlx::query_scalar("select count(*) from invocation_loss").fetch_one(pool).await.unwrap();
    assert_eq!(lost, 0);
    private.end().await;
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

/// SIGTERM under load: a call under way finishes and is answered, the server stops within its
/// grace period, and every answered call has its record (written before the process ends).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_server_stopped_under_load_finishes_its_calls_and_writes_their_records(pool: sqlx::PgPool) {
    let mut toolgate = common::start_process_with_env("serve", &pool, &[("TOOLGATE_SHELL_ALLOW", "sleep")]);
    let acme = TenantSlug::parse("acme").unwrap();
    common::create_tenant(&pool, &acme, "Acme").await;
    let key =
        store::keys::create(&pool, &Actor::system(), &acme, "k", None, Default::default()).await.unwrap().1;
    let (http, base) = (reqwest::Client::new(), toolgate.url.clone());
    let call = |tool: &str, arguments: Value| {
        let url = format!("{base}/api/v1/tools/{tool}/invoke");
        let request = http.post(url).bearer_auth(&key).json(&json!({"arguments": arguments}));
        async move {
            let body: Value = request.send().await.ok()?.json().await.ok()?;
            Some(body["status"] == "ok")
        }
    };
    eventually("the key never worked", || async {
        call("list_directory", json!({"path": ""})).await == Some(true)
    })
    .await;
    let (mut answered, mut refused) = (1, 0);
    let slow = tokio::spawn(call("run_command", json!({"program": "sleep", "args": ["2"]})));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopping = tokio::task::spawn_blocking(move || {
        let status = toolgate.terminate(Duration::from_secs(30));
        (toolgate, status)
    });
    // Calls keep coming while it stops: each is answered in full, or refused (never half).
    for _ in 0..40 {
        match call("list_directory", json!({"path": ""})).await {
            Some(true) => answered += 1,
            Some(false) => panic!("a call failed while the server stopped"),
            None => refused += 1,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(slow.await.unwrap(), Some(true), "the call under way was not finished");
    answered += 1;
    let (_toolgate, status) = stopping.await.unwrap();
    assert!(status.expect("the server stops within its grace period").success());
    assert!(refused > 0, "the server never stopped taking calls");
    let recorded: i64 = sqlx::query_scalar("select count(*) from invocation").fetch_one(&pool).await.unwrap();
    assert_eq!(recorded, answered, "calls answered without a record, or records without an answer");
}
