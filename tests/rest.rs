//! The REST API for LLM applications, over HTTP with a tenant key.

mod common;

use std::time::{Duration, Instant};

use common::{TestApp, json_of, post, tenant_key};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn tools_are_listed_in_each_provider_format(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let get = |format: &'static str| {
        let (url, key) = (app.url(&format!("/api/v1/tools?format={format}")), key.clone());
        async move { reqwest::Client::new().get(url).bearer_auth(key).send().await.unwrap() }
    };
    let openai: Value = get("openai").await.json().await.unwrap();
    let write = openai["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "write_text_file")
        .unwrap();
    assert_eq!(write["type"], "function");
    assert_eq!(write["function"]["parameters"]["type"], "object");
    let anthropic: Value = get("anthropic").await.json().await.unwrap();
    assert!(anthropic["tools"][0]["input_schema"].is_object());
    let gemini: Value = get("gemini").await.json().await.unwrap();
    assert!(gemini["tools"][0]["parameters"].is_object());
    let bad = get("xml").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(bad.json::<Value>().await.unwrap()["code"], "unknown_format");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn invoke_and_errors(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let (status, body) = post(
        &app,
        &key,
        "/api/v1/tools/write_text_file/invoke",
        json!({"arguments": {"path": "a.txt", "content": "x"}}),
    )
    .await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("ok")), "{body}");
    let (status, body) = post(&app, &key, "/api/v1/tools/nope/invoke", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (StatusCode::NOT_FOUND, Some("unknown_tool")));
    let malformed = reqwest::Client::new()
        .post(app.url("/api/v1/tools/write_text_file/invoke"))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(malformed.headers().contains_key("x-request-id"), "every answer carries its request id");
    assert_eq!(malformed.json::<Value>().await.unwrap()["code"], "invalid_body");
    let anonymous = reqwest::Client::new().get(app.url("/api/v1/tools")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    // U+0000 cannot be stored by PostgreSQL: refused with a clear message, never a 500.
    let (status, body) =
        post(&app, &key, "/api/v1/tools/write_text_file/invoke", json!({"arguments": {"path": "a\u{0}b"}}))
            .await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("tool_error")), "{body}");
    let resume = format!("/api/v1/calls/{}/resume", uuid::Uuid::new_v4());
    let (status, body) =
        post(&app, &key, &resume, json!({"content": [{"type": "text", "text": "\u{0}"}]})).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_result")),
        "{body}"
    );

    // The call is counted, with its latency, in the Prometheus metrics.
    let metrics = app.get("/metrics").await.text().await.unwrap();
    let counted = r#"toolgate_tool_calls_total{tenant="acme",tool="write_text_file",status="ok"} 1"#;
    assert!(metrics.contains(counted), "{metrics}");
    assert!(metrics.contains(
        r#"toolgate_tool_call_duration_seconds_bucket{tenant="acme",tool="write_text_file",le="+Inf"} 2"#
    ));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_batch_of_tool_calls_runs_concurrently_in_order(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let sleep = |id: &str| json!({"id": id, "type": "function", "function": {"name": "run_command", "arguments": "{\"program\": \"sleep\", \"args\": [\"0.2\"]}"}});
    let batch = json!({"tool_calls": [
        sleep("call_1"),
        {"id": "call_2", "type": "function", "function": {"name": "list_directory", "arguments": "{oops"}},
        sleep("call_3"),
        sleep("call_4"),
    ]});
    let started = Instant::now();
    let (status, body) = post(&app, &key, "/api/v1/tool_calls", batch).await;
    let elapsed = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(elapsed < Duration::from_millis(550), "three 200 ms calls took {elapsed:?}");
    let results = body["results"].as_array().unwrap();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3", "call_4"]);
    assert_eq!(results[0]["status"], "ok");
    assert_eq!(results[0]["role"], "tool");
    assert_eq!(results[1]["status"], "tool_error");
    assert!(results[1]["content"].as_str().unwrap().starts_with("arguments are not valid JSON"));
}

/// Metrics name every tenant and tool: beyond loopback they need the token.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn metrics_on_a_public_address_need_the_token(pool: PgPool) {
    let open = TestApp::spawn_configured(pool.clone(), |s| s.addr = "0.0.0.0:0".parse().unwrap()).await;
    let url = |app: &TestApp| format!("http://127.0.0.1:{}/metrics", app.address.port());
    let refused = reqwest::get(url(&open)).await.unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::FORBIDDEN);
    assert!(refused.text().await.unwrap().contains("TOOLGATE_METRICS_TOKEN"));

    let guarded = TestApp::spawn_configured(pool, |s| {
        s.addr = "0.0.0.0:0".parse().unwrap();
        s.metrics_token = Some("metrics-secret".into());
    })
    .await;
    let http = reqwest::Client::new();
    for wrong in ["", "metrics-secre", "metrics-secret-", "METRICS-SECRET"] {
        let answer = http.get(url(&guarded)).bearer_auth(wrong).send().await.unwrap();
        assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED, "{wrong:?}");
    }
    let answer = http.get(url(&guarded)).bearer_auth("metrics-secret").send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
}

/// One request cannot start unbounded work: a batch holds at most 128 calls, and one key's
/// calls beyond its bound wait briefly, then get 429 with `Retry-After`.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn work_per_request_and_per_key_is_bounded(pool: PgPool) {
    let app = TestApp::spawn_configured(pool.clone(), |s| s.limits.concurrent_calls_per_key = 2).await;
    let key = tenant_key(&app, &pool).await;

    let calls: Vec<Value> = (0..129)
        .map(|i| json!({"id": i.to_string(), "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}))
        .collect();
    let (status, problem) = post(&app, &key, "/api/v1/tool_calls", json!({"tool_calls": calls})).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(problem["code"], "too_many_calls");
    assert!(
        problem["detail"].as_str().unwrap().contains("at most 128 tool calls; this one has 129"),
        "{problem}"
    );

    let sleep = json!({"arguments": {"program": "sleep", "args": ["4"]}});
    let running: Vec<_> = (0..3)
        .map(|_| {
            let request = reqwest::Client::new()
                .post(app.url("/api/v1/tools/run_command/invoke"))
                .bearer_auth(&key)
                .json(&sleep);
            tokio::spawn(async move { request.send().await.unwrap() })
        })
        .collect();
    let mut statuses = Vec::new();
    for call in running {
        let answer = call.await.unwrap();
        if answer.status() == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(answer.headers()["retry-after"], "1");
            let problem: Value = answer.json().await.unwrap();
            assert_eq!(problem["code"], "busy");
            assert!(
                problem["detail"].as_str().unwrap().contains("this API key (at most 2 at once)"),
                "{problem}"
            );
            statuses.push(StatusCode::TOO_MANY_REQUESTS);
        } else {
            statuses.push(answer.status());
        }
    }
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::OK, StatusCode::TOO_MANY_REQUESTS]);
}

/// A spent rate limit answers 429 with `Retry-After` and a problem naming the limit; the limits
/// are set through the admin API, their use is read back there, and refusals are counted.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_spent_limit_is_refused_with_429_naming_it(pool: PgPool) {
    common::within_one_minute().await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let admin = reqwest::Client::new();
    let token = common::admin_token(&pool, "limits").await;
    let edited: Value =
        json_of(admin.patch(app.url("/api/admin/v1/tenants/acme")).bearer_auth(&token).json(
            &json!({"limits": {"per_minute": 3}, "tool_limits": {"list_directory": {"per_day": 1000}}}),
        ))
        .await;
    assert_eq!(edited["limits"], json!({"per_minute": 3}), "{edited}");
    let refused = admin
        .patch(app.url("/api/admin/v1/tenants/acme"))
        .bearer_auth(&token)
        .json(&json!({"limits": {"per_minute": 0}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(refused.text().await.unwrap().contains("nonzero"));

    // Calls pass until the gateway's catalog has the limit, then three a minute.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = reqwest::Client::new()
            .post(app.url("/api/v1/tools/list_directory/invoke"))
            .bearer_auth(&key)
            .json(&json!({"arguments": {}}))
            .send()
            .await
            .unwrap();
        if answer.status() != StatusCode::OK {
            break answer;
        }
        assert!(Instant::now() < deadline, "the limit never applied");
    };
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = answer.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let problem: Value = answer.json().await.unwrap();
    assert_eq!(problem["code"], "rate_limited");
    assert_eq!(
        problem["limit"],
        json!({"limit": "per_minute", "scope": "tenant", "max": 3, "retry_after_seconds": retry})
    );
    assert_eq!(
        problem["detail"],
        format!("the limit of 3 calls per minute for this tenant is reached; try again in {retry} s")
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics
            .contains(r#"toolgate_calls_refused_total{tenant="acme",scope="tenant",limit="per_minute"} 1"#),
        "{metrics}"
    );

    // The counts reach the database within a sync interval; the usage shows them.
    let deadline = Instant::now() + Duration::from_secs(5);
    let usage = loop {
        let usage: Value = json_of(admin.get(app.url("/api/admin/v1/usage")).bearer_auth(&token)).await;
        if usage.as_array().unwrap().iter().any(|u| u["scope"] == "tenant" && u["used"] == 3)
            || Instant::now() > deadline
        {
            break usage;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        usage.as_array().unwrap().contains(
            &json!({"tenant": "acme", "scope": "tenant", "limit": "per_minute", "max": 3, "used": 3})
        ),
        "{usage}"
    );
    assert!(
        usage
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["scope"] == "tool" && u["tool"] == "list_directory" && u["max"] == 1000),
        "{usage}"
    );

    // A key made with limits, and its limits changed.
    let made: Value = json_of(
        admin
            .post(app.url("/api/admin/v1/tenants/acme/keys"))
            .bearer_auth(&token)
            .json(&json!({"name": "batch", "limits": {"per_day": 50, "concurrent": 2}})),
    )
    .await;
    let id = made["id"].as_str().unwrap();
    let limits = app.url(&format!("/api/admin/v1/tenants/acme/keys/{id}/limits"));
    let changed = json_of(admin.put(limits).bearer_auth(&token).json(&json!({"per_minute": 5}))).await;
    assert_eq!(changed["limits"], json!({"per_minute": 5}), "{changed}");
    let keys: Value =
        json_of(admin.get(app.url("/api/admin/v1/tenants/acme/keys")).bearer_auth(&token)).await;
    assert_eq!(keys[1]["limits"], json!({"per_minute": 5}), "{keys}");
}
