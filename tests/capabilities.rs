//! What a caller's MCP client declared it can answer (SEP-2575, revision 2026-07-28): handed to
//! an upstream on that revision with each call, so it asks only that; a tool that needs more is
//! refused with `MissingRequiredClientCapabilityError` (-32021, HTTP 400) — whether the
//! upstream says so or asks anyway — instead of running without it.

mod common;

use common::{ListChangedCounter, TestApp};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, ErrorCode,
    InputRequiredResult,
};
use rmcp::service::{RequestContext, RoleServer, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value, json};
use sqlx::PgPool;

/// An upstream on 2026-07-28 with three tools: `summarise` needs sampling and says so when the
/// request does not declare it; `capabilities` answers with what the request declared;
/// `confirm` asks for a form whatever was declared.
#[derive(Clone)]
struct Needy;

impl rmcp::ServerHandler for Needy {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        let tools = ["summarise", "capabilities", "confirm"].map(|name| {
            let schema = json!({"type": "object"}).as_object().cloned().unwrap();
            rmcp::model::Tool::new(name, "Needs something of the caller", std::sync::Arc::new(schema))
        });
        Ok(rmcp::model::ListToolsResult::with_all_items(tools.into()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared = context.client_capabilities().unwrap_or_default();
        let asked = |key: &str, question: Value| {
            let questions = [(key.to_string(), serde_json::from_value(question).unwrap())];
            Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(questions.into()), None)))
        };
        let text = |text: String| {
            Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
        };
        match request.name.as_ref() {
            "capabilities" => text(serde_json::to_string(&declared).unwrap()),
            "summarise" if declared.sampling.is_none() => {
                let sampling = serde_json::from_value::<ClientCapabilities>(json!({"sampling": {}})).unwrap();
                Err(ErrorData::missing_required_client_capability(sampling))
            }
            "summarise" => match request.input_responses.and_then(|mut answers| answers.remove("summary")) {
                Some(answer) => text(answer.to_string()),
                None => asked(
                    "summary",
                    json!({"method": "sampling/createMessage", "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}],
                        "maxTokens": 50
                    }}),
                ),
            },
            _ => asked(
                "confirm",
                json!({"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Sure?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                }}),
            ),
        }
    }
}

/// A `tools/call` of `tool` on 2026-07-28 declaring `capabilities`: its status and JSON body.
async fn call(app: &TestApp, key: &str, tool: &str, capabilities: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": tool, "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities
        }
    }});
    let answer = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap())
}

async fn with_needy_upstream(pool: &PgPool) -> (TestApp, String) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, pool).await;
    common::register_upstream(pool, "needy", Needy).await;
    common::until_listed(&app.url(""), &key, "needy_confirm").await;
    (app, key)
}

/// Main sent every upstream Toolgate's own capabilities (sampling and forms, whoever called),
/// so `summarise` asked a client that cannot sample, and `confirm` ran on to a tool error.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_upstream_hears_what_the_caller_declared_and_a_missing_capability_is_a_400(pool: PgPool) {
    let (app, key) = with_needy_upstream(&pool).await;

    // What the request declared, as far as Toolgate relays it (not roots: it asks no client).
    let (status, answer) =
        call(&app, &key, "needy_capabilities", json!({"sampling": {}, "roots": {"listChanged": true}})).await;
    assert_eq!(status, 200, "{answer}");
    let seen: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen, json!({"sampling": {}}));

    // The upstream refuses: the refusal reaches the client as it is.
    let (status, answer) = call(&app, &key, "needy_summarise", json!({"elicitation": {}})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}), "{answer}");
    assert_eq!(answer["id"], 7);

    // Declared, the same tool asks the client for a sample (a round of the call).
    let (status, answer) = call(&app, &key, "needy_summarise", json!({"sampling": {}})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");

    // An upstream asking what was not declared gets no further than Toolgate.
    let (status, answer) = call(&app, &key, "needy_confirm", json!({"sampling": {}})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}}), "{answer}");
}

/// A client of the handshake era that declared nothing gets the same refusal on its session,
/// and the REST API (no MCP client at all) a tool error that says why.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_session_without_sampling_and_a_rest_caller_are_refused_alike(pool: PgPool) {
    let (app, key) = with_needy_upstream(&pool).await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.as_str());
    let client = ListChangedCounter::default()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    match client.call_tool(CallToolRequestParams::new("needy_summarise")).await {
        Err(ServiceError::McpError(refused)) => {
            assert_eq!(refused.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, "{refused:?}");
            assert_eq!(refused.data, Some(json!({"requiredCapabilities": {"sampling": {}}})));
        }
        other => panic!("expected -32021, got {other:?}"),
    }

    let invoked = reqwest::Client::new()
        .post(app.url("/api/v1/tools/needy_summarise/invoke"))
        .bearer_auth(&key)
        .json(&json!({"arguments": {}}))
        .send()
        .await
        .unwrap();
    let result: Value = invoked.json().await.unwrap();
    assert_eq!(result["status"], "tool_error", "{result}");
    assert_eq!(result["required_capabilities"], json!({"sampling": {}}), "{result}");
    let text = result["output"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#"{"sampling":{}}"#) && text.contains("did not declare"), "{text}");
}
