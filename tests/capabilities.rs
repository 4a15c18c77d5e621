//! What a caller's MCP client declared it can answer (SEP-2575, revision 2026-07-28): handed to
//! an upstream on that revision with each call, so it asks only that; a tool that needs more is
//! refused with `MissingRequiredClientCapabilityError` (-32021, HTTP 400) — whether the
//! upstream says so or asks anyway — instead of running without it.

mod common;

use common::{ListChangedCounter, TestApp};
use engine::model::Name;
use engine::store::servers::ServerConfig;
use engine::store::{self, Actor};
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

/// An upstream on 2026-07-28 with five tools: `summarise` needs sampling and says so when the
/// request does not declare it; `capabilities` answers with what the request declared;
/// `confirm` asks for a form whatever was declared; `plan` asks for a sample that may use a
/// tool whatever was declared; `survey` asks a form and the roots at once, under its own keys,
/// and answers with the responses it got.
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
        let tools = ["summarise", "capabilities", "confirm", "plan", "survey"].map(|name| {
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
        let asked_all = |questions: Value| {
            let questions = serde_json::from_value(questions).unwrap();
            Ok(CallToolResponse::InputRequired(InputRequiredResult::new(Some(questions), None)))
        };
        let asked = |key: &str, question: Value| asked_all(json!({key: question}));
        let text = |text: String| {
            Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)])))
        };
        match request.name.as_ref() {
            "capabilities" => text(serde_json::to_string(&declared).unwrap()),
            "survey" => match request.input_responses {
                Some(answers) => text(serde_json::to_string(&answers).unwrap()),
                None => asked_all(json!({
                    "user_name": {"method": "elicitation/create", "params": {
                        "mode": "form", "message": "Your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                    }},
                    "workspace": {"method": "roots/list"}
                })),
            },
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
            "plan" => asked(
                "plan",
                json!({"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Plan the trip"}}],
                    "maxTokens": 50,
                    "tools": [{"name": "find_train", "inputSchema": {"type": "object"}}]
                }}),
            ),
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
    common::call_2026(app, key, tool, capabilities, json!({})).await
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

    // What the request declared, as far as Toolgate relays it (not tasks: it runs none).
    let declared = json!({"sampling": {}, "roots": {"listChanged": true}, "tasks": {"list": {}}});
    let (status, answer) = call(&app, &key, "needy_capabilities", declared).await;
    assert_eq!(status, 200, "{answer}");
    let seen: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen, json!({"sampling": {}, "roots": {"listChanged": true}}));

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
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{answer}"
    );

    // A sample that offers the model tools needs a client that said it takes those (main
    // relayed it to any client that could sample).
    let (status, answer) = call(&app, &key, "needy_plan", json!({"sampling": {}})).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["data"]["requiredCapabilities"], json!({"sampling": {"tools": {}}}));
    let (status, answer) = call(&app, &key, "needy_plan", json!({"sampling": {"tools": {}}})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["inputRequests"]["plan"]["params"]["tools"][0]["name"], "find_train");
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

/// A client on 2026-07-28 gets an upstream's input requests as the upstream asked them — both at
/// once, under its keys — and its answers go back by those keys, an extra one ignored; a retry
/// that leaves one unanswered is refused and may come again. Main asked them one at a time,
/// each under the key `input`, and failed the call on an unknown key.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn input_requests_are_relayed_under_the_upstreams_keys_all_at_once(pool: PgPool) {
    let (app, key) = with_needy_upstream(&pool).await;
    let declared = json!({"elicitation": {}, "roots": {}});
    let (status, asked) = call(&app, &key, "needy_survey", declared.clone()).await;
    assert_eq!(status, 200, "{asked}");
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(result["inputRequests"]["user_name"]["method"], "elicitation/create", "{asked}");
    assert_eq!(result["inputRequests"]["user_name"]["params"]["message"], "Your name?", "{asked}");
    assert_eq!(result["inputRequests"]["workspace"]["method"], "roots/list", "{asked}");
    assert_eq!(result["inputRequests"].as_object().unwrap().len(), 2, "{asked}");
    let state = result["requestState"].clone();

    let name = json!({"action": "accept", "content": {"name": "Ada"}});
    let roots = json!({"roots": [{"uri": "file:///work", "name": "work"}]});
    let partial = json!({"requestState": state, "inputResponses": {"user_name": name}});
    let (_, refused) = common::call_2026(&app, &key, "needy_survey", declared.clone(), partial).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("workspace"), "{refused}");

    let answers = json!({"user_name": name, "workspace": roots, "stray": {"ignored": true}});
    let retry = json!({"requestState": state, "inputResponses": answers});
    let (status, done) = common::call_2026(&app, &key, "needy_survey", declared, retry).await;
    assert_eq!(status, 200, "{done}");
    let got: Value = serde_json::from_str(done["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got, json!({"user_name": name, "workspace": roots}), "{done}");
}

/// A session's client (handshake era) that answers forms and lists its roots.
#[derive(Clone)]
struct Surveyed;

#[allow(deprecated)] // roots: deprecated by SEP-2577, still asked by servers
impl rmcp::ClientHandler for Surveyed {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = ClientCapabilities::builder().enable_elicitation().enable_roots().build();
        rmcp::model::ClientConfig::new(capabilities, rmcp::model::Implementation::new("surveyed", "1"))
    }

    async fn create_elicitation(
        &self,
        _: rmcp::model::ElicitRequestParams,
        _: RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"name": "Ada"}})).unwrap())
    }

    async fn list_roots(
        &self,
        _: RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        Ok(serde_json::from_value(json!({"roots": [{"uri": "file:///work"}]})).unwrap())
    }
}

/// The same input requests reach a session's client as requests on its session, and the
/// upstream gets each answer under its own key.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_sessions_client_answers_an_upstreams_input_requests_one_by_one(pool: PgPool) {
    let (app, key) = with_needy_upstream(&pool).await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.as_str());
    let client = Surveyed.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let result = client.call_tool(CallToolRequestParams::new("needy_survey")).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let got: Value = serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap();
    let expected = json!({
        "user_name": {"action": "accept", "content": {"name": "Ada"}},
        "workspace": {"roots": [{"uri": "file:///work"}]}
    });
    assert_eq!(got, expected);
}

/// A call to a server of the handshake era is Toolgate's own POST in the session rmcp's client
/// opened (an id of Toolgate's, never one of rmcp's numbers), and what the server asks the
/// caller during the call reaches the caller, on the call's stream or the session's. Main sent
/// every such call through rmcp's client.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_to_a_handshake_era_server_is_a_post_on_its_session(pool: PgPool) {
    let (_upstream, port) =
        common::python_server(common::venv_program_of("mcp1", "python"), "session_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let server = ServerConfig::http(Name::parse("old").unwrap(), format!("http://127.0.0.1:{port}/mcp"));
    store::servers::create(&pool, &common::secret_box(), &Actor::system(), &server).await.unwrap();
    common::until_listed(&app.url(""), &key, "old_ask_in_session").await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key.as_str());
    let client = Surveyed.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();

    let whoami = || async {
        let result = client.call_tool(CallToolRequestParams::new("old_whoami")).await.unwrap();
        serde_json::from_str::<Value>(&result.content[0].as_text().unwrap().text).unwrap()
    };
    let (first, second) = (whoami().await, whoami().await);
    assert!(first["request"].as_str().is_some_and(|id| id.starts_with("toolgate-")), "{first}");
    assert_ne!(first["request"], second["request"]);
    assert!(first["session"].is_string() && first["session"] == second["session"], "{first} {second}");

    for tool in ["old_ask_in_call", "old_ask_in_session"] {
        let result = client.call_tool(CallToolRequestParams::new(tool)).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
        assert_eq!(result.content[0].as_text().unwrap().text, "Ada", "{tool}");
    }
}
