//! Two processes on one database, as deployed: `toolgate serve` (panel, admin API) and a
//! `toolgate gateway` replica. A change made through the first reaches the MCP clients of the
//! second, list_changed included; the replica serves health and metrics but no panel.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{ListChangedCounter, json_of, start_process};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_change_through_serve_reaches_the_clients_of_a_gateway_replica(pool: PgPool) {
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key = store::keys::create(&pool, &Actor::system(), &acme, "replica", None).await.unwrap().1;
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
