//! OpenTelemetry traces against a real OTLP/HTTP receiver (protobuf decoded with the
//! OpenTelemetry protocol's own message types): a REST call carrying a W3C `traceparent`
//! header through a `toolgate gateway` process to an rmcp upstream yields one trace, request →
//! tool call → upstream call, and the upstream sees the same trace in its request's `_meta`;
//! an MCP call carrying it in `_meta` likewise.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use common::{start_process_with_env, until_listed};
use engine::store::{self, Actor};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use sqlx::PgPool;

/// A span as the receiver got it: ids in hex.
#[derive(Debug, Clone)]
struct Received {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    /// The longest of its string attributes, in bytes.
    longest_value: usize,
}

/// An OTLP/HTTP trace receiver on loopback; returns its base URL and what it received.
async fn receiver() -> (String, Arc<Mutex<Vec<Received>>>) {
    async fn export(State(seen): State<Arc<Mutex<Vec<Received>>>>, body: Bytes) -> Vec<u8> {
        let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
        let spans = request.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans);
        seen.lock().unwrap().extend(spans.map(|span| {
            Received {
                name: span.name.clone(),
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent: hex(&span.parent_span_id),
                longest_value: span
                    .attributes
                    .iter()
                    .filter_map(|a| match a.value.as_ref()?.value.as_ref()? {
                        Value::StringValue(value) => Some(value.len()),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0),
            }
        }));
        ExportTraceServiceResponse::default().encode_to_vec()
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let router =
        axum::Router::new().route("/v1/traces", axum::routing::post(export)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

/// The spans of `trace`, once every one of `names` has come (a batch is exported every 100 ms,
/// and the outer spans close, so come, after the inner ones).
async fn trace_of(received: &Mutex<Vec<Received>>, trace: &str, names: &[&str]) -> Vec<Received> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spans: Vec<Received> =
            received.lock().unwrap().iter().filter(|s| s.trace_id == trace).cloned().collect();
        if names.iter().all(|name| spans.iter().any(|s| s.name == *name)) {
            return spans;
        }
        assert!(
            Instant::now() < deadline,
            "not all of {names:?} in trace {trace}: {:?}",
            received.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn span<'a>(spans: &'a [Received], name: &str) -> &'a Received {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no `{name}` span: {spans:?}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An upstream whose `echo` tool remembers the `traceparent` of its request's `_meta`.
#[derive(Clone, Default)]
struct Traced {
    traceparents: Arc<Mutex<Vec<String>>>,
}

impl ServerHandler for Traced {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        common::one_tool("echo", "Echoes")
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(traceparent) = context.meta.get("traceparent").and_then(|v| v.as_str()) {
            self.traceparents.lock().unwrap().push(traceparent.to_string());
        }
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text("echo")])))
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_call_through_toolgate_is_one_trace_from_the_caller_to_the_upstream(pool: PgPool) {
    let acme = engine::model::TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key = store::keys::create(&pool, &Actor::system(), &acme, "traced", None, Default::default())
        .await
        .unwrap()
        .1;
    let upstream = Traced::default();
    common::register_upstream(&pool, "up", upstream.clone()).await;
    let (otlp, received) = receiver().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.as_str()),
        ("OTEL_SERVICE_NAME", "toolgate-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let toolgate = start_process_with_env("gateway", &pool, &env);
    until_listed(&toolgate.url, &key, "up_echo").await;

    let invoke = |tool: &str, traceparent: String| {
        reqwest::Client::new()
            .post(format!("{}/api/v1/tools/{tool}/invoke", toolgate.url))
            .bearer_auth(&key)
            .header("traceparent", traceparent)
            .json(&json!({}))
            .send()
    };
    let (trace, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let answer = invoke("up_echo", format!("00-{trace}-{caller_span}-01")).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());

    // One trace: the request is the caller's child, the tool call the request's, the upstream
    // call the tool call's.
    let names = ["request", "tool call", "upstream tools/call"];
    let spans = trace_of(&received, trace, &names).await;
    let [request, call, upstream_call] = names.map(|name| span(&spans, name));
    assert_eq!(request.parent, caller_span, "{spans:?}");
    assert_eq!(call.parent, request.span_id, "{spans:?}");
    assert_eq!(upstream_call.parent, call.span_id, "{spans:?}");
    // The upstream was told the trace, with the upstream call as the parent of its work.
    let seen = upstream.traceparents.lock().unwrap().clone();
    assert_eq!(seen, [format!("00-{trace}-{}-01", upstream_call.span_id)]);

    // A caller's `sampled=0` does not turn tracing off for its requests (main followed it), and
    // a span keeps a bounded part of what the caller named (main kept all of it).
    let unsampled = "5bf92f3577b34da6a3ce929d0e0e4737";
    let long_name = "x".repeat(8192);
    let answer = invoke(&long_name, format!("00-{unsampled}-{caller_span}-00")).await.unwrap();
    assert_eq!(answer.status(), 404);
    let names = ["request", "tool call"];
    let spans = trace_of(&received, unsampled, &names).await;
    for span in names.map(|name| span(&spans, name)) {
        assert!(span.longest_value <= 256, "{span:?}");
    }

    // Over MCP the trace context comes in the request's `_meta`.
    let (trace, caller_span) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp/acme", toolgate.url)).auth_header(key);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    let mut call = CallToolRequestParams::new("up_echo");
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.0.insert("traceparent".into(), json!(format!("00-{trace}-{caller_span}-01")));
    call.meta = Some(meta);
    let result = client.call_tool(call).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let names = ["mcp tools/call", "tool call", "upstream tools/call"];
    let spans = trace_of(&received, trace, &names).await;
    let [mcp_call, call, upstream_call] = names.map(|name| span(&spans, name));
    assert_eq!(mcp_call.parent, caller_span, "{spans:?}");
    assert_eq!(call.parent, mcp_call.span_id, "{spans:?}");
    assert_eq!(upstream_call.parent, call.span_id, "{spans:?}");
}
