//! A tool's schemas as MCP clients get them: full JSON Schema 2020-12 as the server published
//! it (SEP-2106), hidden preset parameters removed, in both protocol eras; arguments checked
//! against all of it; and, where a tenant chooses portable schemas on MCP, the normalised
//! schema the REST API serves.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ListChangedCounter, TestApp};
use engine::model::TenantSlug;
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use rmcp::model::ProtocolVersion;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;

/// What `ship` publishes as its input schema: references, an anchor, conditionals, a
/// composition, dependent requirements and unevaluated properties, with its own `$schema`.
fn published_input() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {"city": {"type": "string"}, "lines": {"type": "array", "prefixItems": [{"type": "string"}]}},
                "required": ["city"]
            }
        },
        "properties": {
            "to": {"$ref": "#address"},
            "from": {"$ref": "#/$defs/address"},
            "mode": {"enum": ["post", "courier"]},
            "tracking": {"type": "string"},
            "apiKey": {"type": "string"}
        },
        "required": ["to", "apiKey"],
        "if": {"properties": {"mode": {"const": "courier"}}, "required": ["mode"]},
        "then": {"required": ["tracking"]},
        "allOf": [{"not": {"required": ["express"]}}],
        "dependentRequired": {"tracking": ["mode"]},
        "unevaluatedProperties": false
    })
}

fn published_output() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"sent": {"type": "boolean"}},
        "required": ["sent"]
    })
}

/// An upstream whose tool `ship` records the arguments it got and answers as its output schema
/// says; `misship` answers against the same schema, and `track` with an array, as its output
/// schema says (any JSON value since 2026-07-28); `trace` takes a recursive schema, which no
/// provider's subset can say.
#[derive(Clone, Default)]
struct Shipping {
    received: Arc<Mutex<Vec<Value>>>,
}

impl Shipping {
    fn tools() -> Vec<Tool> {
        let tool = |name: &str, output: Value| {
            serde_json::from_value(json!({
                "name": name,
                "description": "Ships a parcel",
                "inputSchema": published_input(),
                "outputSchema": output
            }))
            .unwrap()
        };
        let track = json!({"type": "array", "items": {"type": "string"}});
        let mut trace: Tool = tool("trace", published_output());
        let recursive = json!({"type": "object",
            "$defs": {"hop": {"type": "object", "properties": {"next": {"$ref": "#/$defs/hop"}}}},
            "properties": {"first": {"$ref": "#/$defs/hop"}}
        });
        trace.input_schema = Arc::new(recursive.as_object().cloned().unwrap());
        vec![
            tool("ship", published_output()),
            tool("misship", published_output()),
            tool("track", track),
            trace,
        ]
    }
}

impl rmcp::ServerHandler for Shipping {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
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
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let structured = match request.name.as_ref() {
            "ship" => json!({"sent": true}),
            "misship" => json!({"sent": "yes"}),
            _ => json!(["posted", "delivered"]),
        };
        self.received.lock().unwrap().push(Value::Object(request.arguments.unwrap_or_default()));
        Ok(rmcp::model::CallToolResponse::Complete(CallToolResult::structured(structured)))
    }
}

async fn client(app: &TestApp, key: &str, legacy: bool) -> RunningService<RoleClient, ListChangedCounter> {
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key);
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = if legacy {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    };
    ListChangedCounter::default().serve_with_lifecycle(transport, lifecycle).await.unwrap()
}

/// `ship` as `client` lists it, once `ready` holds of it.
async fn listed(
    client: &RunningService<RoleClient, ListChangedCounter>,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tools = client.peer().list_tools(None).await.unwrap().tools;
        if let Some(tool) = tools.iter().find(|t| t.name == "shipping_ship") {
            let tool = serde_json::to_value(tool).unwrap();
            if ready(&tool) {
                return tool;
            }
        }
        assert!(Instant::now() < deadline, "`shipping_ship` was never listed as expected: {tools:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn call(client: &RunningService<RoleClient, ListChangedCounter>, arguments: Value) -> CallToolResult {
    call_tool(client, "shipping_ship", arguments).await
}

async fn call_tool(
    client: &RunningService<RoleClient, ListChangedCounter>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let request =
        CallToolRequestParams::new(tool.to_string()).with_arguments(arguments.as_object().cloned().unwrap());
    client.call_tool(request).await.unwrap()
}

/// Main served MCP clients the portable rendering: no `$schema`, `$defs`, `allOf`, `if`/`then`
/// or `$anchor`, the `$ref`s inlined and the output schema's `$schema` dropped.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn mcp_clients_get_schemas_as_published_less_the_presets_and_arguments_meet_all_of_them(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let upstream = Shipping::default();
    common::register_upstream(&pool, "shipping", upstream.clone()).await;
    let acme = TenantSlug::parse("acme").unwrap();
    let preset = store::overrides::OverrideInput {
        presets: json!({"apiKey": "k-123"}).as_object().cloned().unwrap(),
        ..Default::default()
    };
    common::until_listed(&app.url(""), &key, "shipping_ship").await;
    let tool_id = common::tool_id(&pool, "ship").await;
    common::set_override(&pool, &acme, tool_id, &preset).await.unwrap();

    let mut expected = published_input();
    expected["properties"].as_object_mut().unwrap().remove("apiKey");
    expected["required"] = json!(["to"]);
    for legacy in [true, false] {
        let client = client(&app, &key, legacy).await;
        let tool = listed(&client, |t| t["inputSchema"]["properties"].get("apiKey").is_none()).await;
        assert_eq!(tool["inputSchema"], expected, "legacy {legacy}");
        assert_eq!(tool["outputSchema"], published_output(), "legacy {legacy}");

        // Each keyword is checked before the call leaves Toolgate.
        let refused = [
            (json!({"to": {"lines": ["1 Main St"]}}), "city"),
            (json!({"to": {"city": "Oslo"}, "from": {"city": 7}}), "from/city"),
            (json!({"to": {"city": "Oslo"}, "mode": "courier"}), "tracking"),
            (json!({"to": {"city": "Oslo"}, "tracking": "T1"}), "mode"),
            (json!({"to": {"city": "Oslo"}, "express": true}), "express"),
            (json!({"to": {"city": "Oslo", "lines": [3]}}), "lines/0"),
        ];
        for (arguments, about) in refused {
            let result = call(&client, arguments.clone()).await;
            assert_eq!(result.is_error, Some(true), "{arguments} was accepted: {result:?}");
            let text = &result.content[0].as_text().unwrap().text;
            assert!(text.contains("invalid arguments") && text.contains(about), "{arguments}: {text}");
        }
        let sent = call(&client, json!({"to": {"city": "Oslo"}, "mode": "courier", "tracking": "T1"})).await;
        assert_ne!(sent.is_error, Some(true), "{sent:?}");
        assert_eq!(sent.structured_content, Some(json!({"sent": true})));
    }
    let received = upstream.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "only the valid calls reach the upstream: {received:?}");
    assert!(received.iter().all(|args| args["apiKey"] == "k-123"), "{received:?}");
}

/// Structured content is checked against the tool's output schema (main passed a mismatch
/// on), and any JSON value the schema allows reaches a client on 2026-07-28 as it is, while a
/// client of the handshake era, whose revision allows only objects, gets it as text.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn structured_results_meet_their_output_schema_and_reach_each_era_as_it_allows(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    common::register_upstream(&pool, "shipping", Shipping::default()).await;
    common::until_listed(&app.url(""), &key, "shipping_track").await;
    let arguments = json!({"to": {"city": "Oslo"}, "apiKey": "k"});
    for legacy in [true, false] {
        let client = client(&app, &key, legacy).await;
        let wrong = call_tool(&client, "shipping_misship", arguments.clone()).await;
        assert_eq!(wrong.is_error, Some(true), "{wrong:?}");
        let text = &wrong.content[0].as_text().unwrap().text;
        assert!(text.contains("does not match its output schema") && text.contains("/sent"), "{text}");

        let tracked = call_tool(&client, "shipping_track", arguments.clone()).await;
        assert_ne!(tracked.is_error, Some(true), "{tracked:?}");
        if legacy {
            assert_eq!(tracked.structured_content, None, "{tracked:?}");
            assert_eq!(tracked.content[0].as_text().unwrap().text, r#"["posted","delivered"]"#);
        } else {
            assert_eq!(tracked.structured_content, Some(json!(["posted", "delivered"])), "{tracked:?}");
        }
    }
}

/// A tenant that chooses portable schemas on MCP: its sessions hear of the change, and then
/// list exactly the schema the REST API's `mcp` format serves; the admin API's inspection says
/// which form the tenant's MCP clients get.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenant_that_chooses_portable_schemas_gets_the_rest_apis_rendering_on_mcp(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    common::register_upstream(&pool, "shipping", Shipping::default()).await;
    common::until_listed(&app.url(""), &key, "shipping_ship").await;
    let session = client(&app, &key, true).await;
    let published = listed(&session, |_| true).await;
    assert!(published["inputSchema"].get("$defs").is_some(), "{published}");
    let tool_id = common::tool_id(&pool, "ship").await;
    let admin = common::admin_token(&pool, "ops").await;
    let inspect = async || {
        let url = app.url(&format!("/api/admin/v1/tools/{tool_id}/schema?tenant=acme&provider=mcp"));
        common::json_of(reqwest::Client::new().get(url).bearer_auth(&admin)).await
    };
    let inspection = inspect().await;
    assert_eq!((&inspection["portable"], &inspection["rendering"]), (&json!(false), &published));
    // A schema no provider's subset can say is served as published, and inspected so.
    let trace = common::tool_id(&pool, "trace").await;
    let url = app.url(&format!("/api/admin/v1/tools/{trace}/schema?tenant=acme&provider=mcp"));
    let traced = common::json_of(reqwest::Client::new().get(url).bearer_auth(&admin)).await;
    assert_eq!(traced["normalised"], Value::Null, "{traced}");
    assert_eq!(traced["rendering"]["inputSchema"]["$defs"]["hop"]["type"], "object", "{traced}");

    let portable = TenantUpdate { portable_mcp_schemas: Some(true), ..Default::default() };
    store::tenants::update(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), portable)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while session.service().list_changed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no notifications/tools/list_changed for the portable schemas");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rest =
        common::json_of(reqwest::Client::new().get(app.url("/api/v1/tools?format=mcp")).bearer_auth(&key))
            .await;
    let rest =
        rest["tools"].as_array().unwrap().iter().find(|t| t["name"] == "shipping_ship").unwrap().clone();
    for legacy in [true, false] {
        let tool =
            listed(&client(&app, &key, legacy).await, |t| t["inputSchema"].get("$defs").is_none()).await;
        assert_eq!(tool["inputSchema"], rest["inputSchema"], "legacy {legacy}");
        assert_eq!(tool["outputSchema"], rest["outputSchema"], "legacy {legacy}");
        assert!(
            tool["inputSchema"].get("if").is_none() && tool["outputSchema"].get("$schema").is_none(),
            "{tool}"
        );
    }
    let inspection = inspect().await;
    assert_eq!(inspection["portable"], true);
    assert_eq!(inspection["rendering"]["inputSchema"], rest["inputSchema"]);
}
