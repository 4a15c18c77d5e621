//! The REST API under `/api/v1` for LLM applications that drive tool calls themselves: the
//! tenant's tools in a provider's format, one call, a batch of OpenAI-style `tool_calls` run
//! concurrently with results in call order, and resuming a suspended (external) call. The API
//! key decides the tenant. Errors are problem+json with a stable `code`; no 5xx carries
//! internals.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, middleware};
use engine::catalog::Catalog;
use engine::exec::{CallRequest, CallResult, ExecError, Executor};
use engine::schema::Provider;
use engine::tool::{Caller, Content, ToolOutput};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{Body, KeyCheck, RenderCache, TenantAccess, internal, problem, require_key};

#[derive(Clone)]
struct Rest {
    catalog: Catalog,
    executor: Executor,
    /// One rendering cache per provider format.
    rendered: Arc<HashMap<Provider, RenderCache<Value>>>,
}

pub fn router(catalog: Catalog, executor: Executor, keys: KeyCheck) -> Router {
    let caches = Provider::ALL.into_iter().map(|p| (p, RenderCache::new(p, Some))).collect();
    Router::new()
        .route("/api/v1/tools", get(list_tools))
        .route("/api/v1/tools/{name}/invoke", post(invoke))
        .route("/api/v1/tool_calls", post(tool_calls))
        .route("/api/v1/calls/{id}/resume", post(resume))
        .route_layer(middleware::from_fn_with_state(keys, require_key))
        .with_state(Rest { catalog, executor, rendered: Arc::new(caches) })
}

fn caller(access: &TenantAccess) -> Caller {
    Caller::ApiKey(access.key_id)
}

fn exec_error(err: ExecError) -> Response {
    match err {
        ExecError::UnknownTool(_) => problem(StatusCode::NOT_FOUND, "unknown_tool", err.to_string()),
        ExecError::UnknownPendingCall(_) => {
            problem(StatusCode::NOT_FOUND, "unknown_pending_call", err.to_string())
        }
        ExecError::UnknownTenant(_) => problem(StatusCode::NOT_FOUND, "unknown_tenant", err.to_string()),
        ExecError::Database(_) => internal(&err),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    format: Option<String>,
}

/// `GET /api/v1/tools?format=openai|anthropic|gemini|mcp` (default openai).
async fn list_tools(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Query(query): Query<ListQuery>,
) -> Response {
    let format = query.format.as_deref().unwrap_or("openai");
    let Some(provider) = Provider::parse(format) else {
        let detail = format!("format `{format}` is unknown; use one of mcp, openai, anthropic, gemini");
        return problem(StatusCode::BAD_REQUEST, "unknown_format", detail);
    };
    let tools = rest.rendered[&provider].tools(&rest.catalog, &access.tenant);
    Json(json!({"format": provider.as_str(), "tools": *tools})).into_response()
}

#[derive(Deserialize)]
struct Invoke {
    #[serde(default)]
    arguments: Value,
}

/// `POST /api/v1/tools/{name}/invoke` `{"arguments": {...}}`.
async fn invoke(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Path(name): Path<String>,
    Body(body): Body<Invoke>,
) -> Response {
    let request = CallRequest { name, arguments: body.arguments };
    match rest.executor.call(&access.tenant, &caller(&access), request, None).await {
        Ok(result) => Json(result).into_response(),
        Err(err) => exec_error(err),
    }
}

#[derive(Deserialize)]
struct ToolCalls {
    tool_calls: Vec<ToolCall>,
}

/// One entry of an OpenAI `tool_calls` array; `arguments` is a JSON string.
#[derive(Deserialize)]
struct ToolCall {
    id: String,
    function: FunctionCall,
}

#[derive(Deserialize)]
struct FunctionCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

fn text_of(output: &ToolOutput) -> String {
    let texts: Vec<&str> = output
        .content
        .iter()
        .filter_map(|c| if let Content::Text { text, .. } = c { Some(text.as_str()) } else { None })
        .collect();
    texts.join("\n")
}

/// A batch result, shaped to be appended as an OpenAI `tool` message as it is.
fn tool_message(id: &str, result: Result<CallResult, String>) -> Value {
    match result {
        Ok(result) => json!({
            "tool_call_id": id,
            "role": "tool",
            "content": text_of(&result.output),
            "status": result.status,
            "output": result.output,
            "correlation_id": result.correlation_id,
            "pending": result.pending,
        }),
        Err(message) => json!({
            "tool_call_id": id,
            "role": "tool",
            "content": message,
            "status": "tool_error",
            "output": ToolOutput::error(message),
        }),
    }
}

/// `POST /api/v1/tool_calls` `{"tool_calls": [{id, type: "function", function: {name,
/// arguments}}]}`: runs them concurrently and answers one result per call id, in order.
async fn tool_calls(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Body(body): Body<ToolCalls>,
) -> Response {
    // Arguments that are not a JSON object are the LLM's mistake: a tool error for that call.
    let parsed: Vec<Result<CallRequest, String>> = body
        .tool_calls
        .iter()
        .map(|call| {
            let arguments = if call.function.arguments.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str::<Value>(&call.function.arguments)
                    .map_err(|err| format!("arguments are not valid JSON: {err}"))?
            };
            Ok(CallRequest { name: call.function.name.clone(), arguments })
        })
        .collect();
    let runnable: Vec<CallRequest> = parsed.iter().filter_map(|p| p.as_ref().ok().cloned()).collect();
    let mut results = rest.executor.call_batch(&access.tenant, &caller(&access), runnable).await.into_iter();
    let messages: Vec<Value> = body
        .tool_calls
        .iter()
        .zip(parsed)
        .map(|(call, parsed)| {
            let result = match parsed {
                Err(message) => Err(message),
                Ok(_) => results.next().expect("one result per runnable call").map_err(|err| err.to_string()),
            };
            tool_message(&call.id, result)
        })
        .collect();
    Json(json!({"results": messages})).into_response()
}

/// `POST /api/v1/calls/{id}/resume` with the tool's result (MCP result shape).
async fn resume(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Path(id): Path<Uuid>,
    Body(output): Body<ToolOutput>,
) -> Response {
    match rest.executor.resume(&access.tenant, id, output).await {
        Ok(result) => Json(result).into_response(),
        Err(err) => exec_error(err),
    }
}
