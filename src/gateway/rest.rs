//! The REST API under `/api/v1` for LLM applications that drive tool calls themselves: the
//! tenant's tools in a provider's format, one call, a batch of OpenAI-style `tool_calls` run
//! concurrently with results in call order, resuming a suspended (external) call, and the
//! tenant's prompts and resources (listed, a prompt got, a resource read) as MCP gives them.
//! The API key decides the tenant. Errors are problem+json with a stable `code`; no 5xx carries
//! internals.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, middleware};
use engine::schema::{Provider, render};
use engine::service::calls::{CallHooks, CallRequest, CallResult, Executor};
use engine::service::catalog::CatalogItem;
use engine::service::catalog::{Catalog, TenantTools, search_tool};
use engine::tool::ToolOutput;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use uuid::Uuid;

use super::{
    Body, Credentials, Failure, Problem, RenderCache, TenantAccess, problem, require_credentials, shown,
};

/// The OpenAPI 3.1 document of this API, served at `/api/v1/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "Toolgate REST API", description = "Tools of one tenant (chosen by the API key) for LLM applications."),
    paths(list_tools, invoke, tool_calls, resume, list_prompts, get_prompt, list_resources, read_resource),
    components(schemas(Problem, engine::service::calls::CallResult, engine::tool::ToolOutput)),
    modifiers(&ApiKeyAuth),
    security(("api_key" = []))
)]
struct ApiDoc;

struct ApiKeyAuth;

impl Modify for ApiKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("A tenant API key, `tg_...`"))
            .build();
        components.add_security_scheme("api_key", SecurityScheme::Http(scheme));
    }
}

#[derive(Clone)]
struct Rest {
    catalog: Catalog,
    executor: Executor,
    /// One rendering cache per provider format.
    rendered: Arc<HashMap<Provider, RenderCache<Value>>>,
    /// The most calls one batch may hold.
    batch_limit: usize,
}

pub fn router(catalog: Catalog, executor: Executor, credentials: Credentials, batch_limit: usize) -> Router {
    let caches = Provider::ALL.into_iter().map(|p| (p, RenderCache::new(p, Some))).collect();
    let document = Arc::new(ApiDoc::openapi().to_json().expect("the OpenAPI document serialises"));
    Router::new()
        .route("/api/v1/tools", get(list_tools))
        .route("/api/v1/tools/{name}/invoke", post(invoke))
        .route("/api/v1/tool_calls", post(tool_calls))
        .route("/api/v1/calls/{id}/resume", post(resume))
        .route("/api/v1/prompts", get(list_prompts))
        .route("/api/v1/prompts/{name}/get", post(get_prompt))
        .route("/api/v1/resources", get(list_resources))
        .route("/api/v1/resources/read", get(read_resource))
        .route_layer(middleware::from_fn_with_state(credentials, require_credentials))
        .with_state(Rest { catalog, executor, rendered: Arc::new(caches), batch_limit })
        .route(
            "/api/v1/openapi.json",
            get(move || async move {
                ([(axum::http::header::CONTENT_TYPE, "application/json")], (*document).clone())
            }),
        )
}

#[derive(Deserialize, utoipa::IntoParams)]
struct ListQuery {
    /// `openai` (default), `anthropic`, `gemini` or `mcp`: of the tools listed, and of those a
    /// search (`search_tools`) answers.
    format: Option<String>,
}

impl ListQuery {
    fn provider(&self) -> Result<Provider, Failure> {
        let format = self.format.as_deref().unwrap_or("openai");
        Provider::parse(format).ok_or_else(|| {
            let detail = format!("format `{format}` is unknown; use one of mcp, openai, anthropic, gemini");
            Failure::new(problem(StatusCode::BAD_REQUEST, "unknown_format", detail))
        })
    }
}

/// The tenant's tools in one provider's format.
#[derive(Serialize, ToSchema)]
struct ToolList {
    format: &'static str,
    /// Each tool exactly as the provider takes it (normalised, lint-clean). A tenant in
    /// `search` mode lists its search tool `search_tools`, its pinned tools and the tools the
    /// key found within the hour.
    tools: Vec<Value>,
}

/// List the tenant's tools in a provider's format.
#[utoipa::path(get, path = "/api/v1/tools", params(ListQuery), responses(
    (status = 200, body = ToolList),
    (status = 400, description = "Unknown format", body = Problem),
    (status = 401, description = "No valid API key", body = Problem),
))]
async fn list_tools(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Query(query): Query<ListQuery>,
) -> Result<Response, Failure> {
    let provider = query.provider()?;
    let serialise = |tools| {
        let list = ToolList { format: provider.as_str(), tools };
        serde_json::to_vec(&list).expect("tool lists serialise").into()
    };
    let lists = &rest.rendered[&provider];
    let body: axum::body::Bytes = match view_of(&rest, &access) {
        Ok(view) if view.searching() => {
            let found = rest.executor.found(&view, &access.caller).await;
            let search = render::render(&search_tool(), provider).expect("the search tool renders");
            let listed = lists.render_kept(&view.listed_when_searching(&found));
            serialise([search].into_iter().chain(listed).collect())
        }
        _ => lists.body(&rest.catalog, &access.tenant, 0, serialise),
    };
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response())
}

#[derive(Deserialize, ToSchema)]
struct Invoke {
    /// The tool's arguments (an object).
    #[serde(default)]
    arguments: Value,
}

/// Call one tool.
#[utoipa::path(post, path = "/api/v1/tools/{name}/invoke", params(("name" = String, Path, description = "The tool's exposed name"), ListQuery),
    request_body = Invoke, responses(
    (status = 200, description = "The call's result; a tool error is `status: tool_error`", body = engine::service::calls::CallResult),
    (status = 400, description = "The body is not valid JSON of this shape, or the format is unknown (`unknown_format`)", body = Problem),
    (status = 401, description = "No valid API key", body = Problem),
    (status = 404, description = "The tenant has no such tool (`unknown_tool`), or, in `search` mode, the key has not found it (`tool_not_found_yet`)", body = Problem),
    (status = 429, description = "A limit refused the call (`rate_limited`, or `busy` for calls at once), with `Retry-After` and the `limit`", body = Problem),
))]
async fn invoke(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Path(name): Path<String>,
    Query(query): Query<ListQuery>,
    Body(body): Body<Invoke>,
) -> Result<Response, Failure> {
    let hooks = CallHooks { format: Some(query.provider()?), ..CallHooks::default() };
    let request = CallRequest { name, arguments: body.arguments };
    let result = rest.executor.call_hooked(&access.tenant, &access.caller, request, hooks).await?;
    Ok(Json(result).into_response())
}

#[derive(Deserialize, ToSchema)]
struct ToolCalls {
    tool_calls: Vec<ToolCall>,
}

/// One entry of an OpenAI `tool_calls` array; `arguments` is a JSON string.
#[derive(Deserialize, ToSchema)]
struct ToolCall {
    id: String,
    function: FunctionCall,
}

#[derive(Deserialize, ToSchema)]
struct FunctionCall {
    name: String,
    /// The arguments as a JSON string, as the LLM wrote them.
    #[serde(default)]
    arguments: String,
}

/// The results of a batch, one per call id in call order.
#[derive(Serialize, ToSchema)]
struct ToolMessages {
    results: Vec<ToolMessage>,
}

/// One result, ready to append to the conversation as a `tool` message.
#[derive(Serialize, ToSchema)]
struct ToolMessage {
    tool_call_id: String,
    role: &'static str,
    /// The result's text.
    content: String,
    status: engine::service::calls::Status,
    output: ToolOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<engine::service::calls::PendingCall>,
}

fn text_of(output: &ToolOutput) -> String {
    output.texts().collect::<Vec<_>>().join("\n")
}

/// A batch result, shaped to be appended as an OpenAI `tool` message as it is.
fn tool_message(id: &str, result: Result<CallResult, String>) -> ToolMessage {
    let tool_call_id = id.to_string();
    match result {
        Ok(result) => ToolMessage {
            tool_call_id,
            role: "tool",
            content: text_of(&result.output),
            status: result.status,
            output: result.output,
            correlation_id: result.correlation_id,
            pending: result.pending,
        },
        Err(message) => ToolMessage {
            tool_call_id,
            role: "tool",
            status: engine::service::calls::Status::ToolError,
            output: ToolOutput::error(message.clone()),
            content: message,
            correlation_id: None,
            pending: None,
        },
    }
}

/// Run a batch of OpenAI-style `tool_calls` concurrently; one result per call id, in order.
#[utoipa::path(post, path = "/api/v1/tool_calls", params(ListQuery), request_body = ToolCalls, responses(
    (status = 200, body = ToolMessages),
    (status = 400, description = "The body is not valid JSON of this shape, or the format is unknown (`unknown_format`)", body = Problem),
    (status = 401, description = "No valid API key", body = Problem),
    (status = 413, description = "More calls than one batch may hold (`too_many_calls`)", body = Problem),
))]
async fn tool_calls(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Query(query): Query<ListQuery>,
    Body(body): Body<ToolCalls>,
) -> Response {
    let provider = match query.provider() {
        Ok(provider) => provider,
        Err(failure) => return failure.into_response(),
    };
    if body.tool_calls.len() > rest.batch_limit {
        let detail = format!(
            "a batch holds at most {} tool calls; this one has {}: send them in several batches",
            rest.batch_limit,
            body.tool_calls.len()
        );
        return problem(StatusCode::PAYLOAD_TOO_LARGE, "too_many_calls", detail);
    }
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
    let mut results =
        rest.executor.call_batch(&access.tenant, &access.caller, runnable, Some(provider)).await.into_iter();
    let messages: Vec<ToolMessage> = body
        .tool_calls
        .iter()
        .zip(parsed)
        .map(|(call, parsed)| {
            let result = match parsed {
                Err(message) => Err(message),
                Ok(_) => results.next().expect("one result per runnable call").map_err(|err| shown(&err)),
            };
            tool_message(&call.id, result)
        })
        .collect();
    Json(ToolMessages { results: messages }).into_response()
}

/// Resume a suspended (external) call with the result the caller computed.
#[utoipa::path(post, path = "/api/v1/calls/{id}/resume", params(("id" = Uuid, Path, description = "The pending call's id")),
    request_body = ToolOutput, responses(
    (status = 200, body = engine::service::calls::CallResult),
    (status = 400, description = "The body is not a tool result", body = Problem),
    (status = 401, description = "No valid API key", body = Problem),
    (status = 404, description = "No such pending call for this tenant", body = Problem),
    (status = 422, description = "The result cannot be stored (it contains U+0000)", body = Problem),
))]
async fn resume(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Path(id): Path<Uuid>,
    Body(output): Body<ToolOutput>,
) -> Response {
    match rest.executor.resume(&access.tenant, id, output).await {
        Ok(result) => Json(result).into_response(),
        // What is invalid here is the result the caller sent.
        Err(engine::Error::Invalid(message)) => {
            problem(StatusCode::UNPROCESSABLE_ENTITY, "invalid_result", message)
        }
        Err(err) => Failure::from(err).into_response(),
    }
}

/// The tenant's view, for its tools, prompts and resources.
fn view_of(rest: &Rest, access: &TenantAccess) -> Result<Arc<TenantTools>, Failure> {
    let snapshot = rest.catalog.snapshot();
    let view = snapshot.tenant(&access.tenant).cloned();
    view.ok_or_else(|| engine::Error::from(engine::Missing::Tenant(access.tenant.clone())).into())
}

/// The definitions of `items`, as MCP lists them.
fn definitions(items: &[Arc<CatalogItem>]) -> Vec<&Value> {
    items.iter().map(|item| &*item.definition).collect()
}

/// List the tenant's prompts (as MCP's `prompts/list` gives them).
#[utoipa::path(get, path = "/api/v1/prompts", responses(
    (status = 200, description = "`{prompts: [...]}`, each an MCP prompt under its exposed name"),
    (status = 401, description = "No valid API key", body = Problem),
))]
async fn list_prompts(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
) -> Result<Response, Failure> {
    let view = view_of(&rest, &access)?;
    Ok(Json(json!({"prompts": definitions(view.items.prompts())})).into_response())
}

#[derive(Deserialize, ToSchema)]
struct GetPrompt {
    /// The prompt's arguments (an object of strings).
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// Get one prompt, filled with its arguments (as MCP's `prompts/get` gives it).
#[utoipa::path(post, path = "/api/v1/prompts/{name}/get", params(("name" = String, Path, description = "The prompt's exposed name")),
    request_body = GetPrompt, responses(
    (status = 200, description = "The prompt's `description` and `messages`"),
    (status = 400, description = "The body is not valid JSON of this shape", body = Problem),
    (status = 401, description = "No valid API key", body = Problem),
    (status = 404, description = "The tenant has no such prompt", body = Problem),
    (status = 429, description = "A limit refused the request, with `Retry-After`", body = Problem),
    (status = 502, description = "The server offering it failed", body = Problem),
))]
async fn get_prompt(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Path(name): Path<String>,
    Body(body): Body<GetPrompt>,
) -> Result<Response, Failure> {
    let view = view_of(&rest, &access)?;
    let prompt = rest.executor.get_prompt(&view, &access.caller, &name, body.arguments).await?;
    Ok(Json(prompt).into_response())
}

/// List the tenant's resources and resource templates (as MCP lists them).
#[utoipa::path(get, path = "/api/v1/resources", responses(
    (status = 200, description = "`{resources: [...], resourceTemplates: [...]}`"),
    (status = 401, description = "No valid API key", body = Problem),
))]
async fn list_resources(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
) -> Result<Response, Failure> {
    let view = view_of(&rest, &access)?;
    let listed = json!({
        "resources": definitions(view.items.resources()),
        "resourceTemplates": definitions(view.items.templates()),
    });
    Ok(Json(listed).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
struct ReadQuery {
    /// The resource's URI: one a server lists, or one a template of a server matches.
    uri: String,
}

/// Read one resource (as MCP's `resources/read` gives it; contents cut to the output cap).
#[utoipa::path(get, path = "/api/v1/resources/read", params(ReadQuery), responses(
    (status = 200, description = "`{contents: [...]}`: texts, and binaries in base64 `blob`s"),
    (status = 401, description = "No valid API key", body = Problem),
    (status = 404, description = "No server of the tenant offers this URI", body = Problem),
    (status = 409, description = "Templates of several servers match the URI", body = Problem),
    (status = 429, description = "A limit refused the request, with `Retry-After`", body = Problem),
    (status = 502, description = "The server offering it failed", body = Problem),
))]
async fn read_resource(
    State(rest): State<Rest>,
    Extension(access): Extension<TenantAccess>,
    Query(query): Query<ReadQuery>,
) -> Result<Response, Failure> {
    let view = view_of(&rest, &access)?;
    let read = rest.executor.read_resource(&view, &access.caller, &query.uri).await?;
    Ok(Json(read).into_response())
}
