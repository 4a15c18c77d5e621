//! What a tool is to Toolgate: a name, a description, schemas, and an async call that takes
//! validated arguments and an execution context.
//!
//! Tools written in Rust implement [`TypedTool`]: the input schema is derived from the
//! argument struct (schemars), the way `@Tool`/`@ToolParam` derive it in the seeds. A
//! [`ToolProvider`] groups tools under tags, like `@ToolService(tags)`. Tenant, caller and
//! request id reach a tool through [`ToolContext`], never through its arguments.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// Who is calling, for tools and for the invocation record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// An LLM application, by the id of the API key it used.
    ApiKey(uuid::Uuid),
    /// A person, through a client they authorized (an OAuth access token).
    User(Arc<User>),
    /// An administrator's test invocation.
    Admin(String),
}

/// A person calling through a client they authorized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct User {
    /// Their account.
    pub account: uuid::Uuid,
    pub username: String,
    /// What they allowed the client (one per person, client and tenant endpoint).
    pub grant: uuid::Uuid,
    /// The client's name.
    pub client: String,
}

impl Caller {
    /// Whose MCP sessions and waiting inputs these are: the key, or the person's grant (a
    /// refreshed token continues them).
    pub fn owner(&self) -> Option<uuid::Uuid> {
        match self {
            Caller::ApiKey(id) => Some(*id),
            Caller::User(user) => Some(user.grant),
            Caller::Admin(_) => None,
        }
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caller::ApiKey(id) => write!(f, "key:{id}"),
            Caller::User(user) => write!(f, "user:{} via {}", user.username, user.client),
            Caller::Admin(name) => write!(f, "admin:{name}"),
        }
    }
}

/// Progress of a long tool: logged and forwarded to clients as MCP progress notifications,
/// never put into the text the LLM reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The answer to a relayed request.
pub type RelayFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<serde_json::Value, String>> + Send>>;

/// Requests (or their answers) asked together, by the asker's own keys.
pub type Keyed = std::collections::BTreeMap<String, Value>;

/// The answers to requests relayed together, by the same keys.
pub type RelayAllFuture = Pin<Box<dyn Future<Output = Result<Keyed, String>> + Send>>;

/// The MCP client a call came from, for what an upstream server asks of it while the call
/// runs (sampling, elicitation, roots) and the log messages it sends. Messages are JSON-RPC shaped:
/// `{"method": ..., "params": ...}`.
pub trait ClientRelay: Send + Sync {
    /// Relays a request to the client; resolves to the client's result. Whoever relays has
    /// checked the request against [`capabilities`](Self::capabilities) ([`undeclared`]).
    fn request(&self, request: serde_json::Value) -> RelayFuture;
    /// Relays requests asked together (a server's input requests on 2026-07-28), each under
    /// its key; resolves to the client's results by the same keys. One at a time, unless the
    /// client takes them together.
    fn request_all(&self, requests: Keyed) -> RelayAllFuture {
        one_at_a_time(requests, |request| self.request(request))
    }
    /// Relays a notification to the client.
    fn notify(&self, notification: serde_json::Value);
    /// The least severe log level the client wants messages of (`"debug"` ... `"emergency"`);
    /// `None` when it wants none.
    fn log_level(&self) -> Option<String>;
    /// What the client declared, as MCP `ClientCapabilities`, of what Toolgate passes on (the
    /// requests it relays, MCP Apps): handed to a server on 2026-07-28 with each call, which
    /// asks only that.
    fn capabilities(&self) -> Value;
}

/// Relays `requests` through `request`, one after the other.
pub fn one_at_a_time(requests: Keyed, request: impl Fn(Value) -> RelayFuture) -> RelayAllFuture {
    let asked: Vec<(String, RelayFuture)> =
        requests.into_iter().map(|(key, asked)| (key, request(asked))).collect();
    Box::pin(async move {
        let mut answers = Keyed::new();
        for (key, answer) in asked {
            answers.insert(key, answer.await?);
        }
        Ok(answers)
    })
}

/// The capability a client must have declared to be asked `request` (`{"method", "params"}`),
/// as a `ClientCapabilities` object; `None` for a request no client capability covers (nothing
/// an upstream may ask of a caller). A sampling request that offers the model tools needs
/// `sampling.tools` (revision 2025-11-25: a server must not send one to a client without it).
pub fn required_capability(request: &Value) -> Option<Value> {
    let params = &request["params"];
    Some(match request["method"].as_str().unwrap_or_default() {
        "sampling/createMessage" if !params["tools"].is_null() || !params["toolChoice"].is_null() => {
            json!({"sampling": {"tools": {}}})
        }
        "sampling/createMessage" => json!({"sampling": {}}),
        "roots/list" => json!({"roots": {}}),
        "elicitation/create" if params["mode"] == "url" => json!({"elicitation": {"url": {}}}),
        "elicitation/create" => json!({"elicitation": {"form": {}}}),
        _ => return None,
    })
}

/// The capability `request` needs that the client's `declared` capabilities lack, if any: such a
/// request is not relayed to it (every relay checks here first).
pub fn undeclared(declared: &Value, request: &Value) -> Option<Value> {
    required_capability(request).filter(|required| !declares(declared, required))
}

/// Whether the `ClientCapabilities` a client declared cover `required`; `elicitation: {}`
/// declares forms.
fn declares(declared: &Value, required: &Value) -> bool {
    let Some(required) = required.as_object() else { return true };
    required.iter().all(|(capability, modes)| {
        let Some(offered) = declared.get(capability) else { return false };
        modes.as_object().into_iter().flatten().all(|(mode, _)| {
            offered.get(mode).is_some()
                || (mode == "form" && offered.as_object().is_some_and(|o| o.is_empty()))
        })
    })
}

/// What a running tool knows about its call.
#[derive(Clone)]
pub struct ToolContext {
    pub tenant_id: uuid::Uuid,
    /// The tenant's slug.
    pub tenant: String,
    pub caller: Caller,
    pub request_id: String,
    progress: Option<ProgressSink>,
    client: Option<std::sync::Arc<dyn ClientRelay>>,
}

/// Where a call's progress reports go. It holds a few unread reports; while it is full, new
/// ones are dropped: a tool (or an upstream) reporting faster than the caller reads costs
/// reports, never memory.
pub type ProgressSink = mpsc::Sender<Progress>;

/// How many unread progress reports a sink holds.
const PROGRESS_BUFFER: usize = 64;

/// A sink for one call's progress, and where its reports come out.
pub fn progress_channel() -> (ProgressSink, mpsc::Receiver<Progress>) {
    mpsc::channel(PROGRESS_BUFFER)
}

/// Hands `report` to `sink` unless it is full (a later report supersedes it anyway).
pub fn send_progress(sink: &ProgressSink, report: Progress) {
    if sink.try_send(report).is_err() {
        tracing::trace!("progress report dropped: the caller reads slower than the tool reports");
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("tenant", &self.tenant)
            .field("caller", &self.caller)
            .field("request_id", &self.request_id)
            .field("progress", &self.progress.is_some())
            .field("client", &self.client.is_some())
            .finish()
    }
}

impl ToolContext {
    pub fn new(
        tenant_id: uuid::Uuid,
        tenant: impl Into<String>,
        caller: Caller,
        request_id: impl Into<String>,
    ) -> Self {
        ToolContext {
            tenant_id,
            tenant: tenant.into(),
            caller,
            request_id: request_id.into(),
            progress: None,
            client: None,
        }
    }

    /// Relays what an upstream asks of the caller during this call to `client`.
    pub fn with_client(mut self, client: std::sync::Arc<dyn ClientRelay>) -> Self {
        self.client = Some(client);
        self
    }

    /// The caller's MCP client, when the call came over MCP.
    pub fn client(&self) -> Option<std::sync::Arc<dyn ClientRelay>> {
        self.client.clone()
    }

    /// Sends this call's progress reports to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Where this call's progress goes, if its caller asked for progress.
    pub fn progress_sink(&self) -> Option<ProgressSink> {
        self.progress.clone()
    }

    /// Reports progress; a caller that did not ask for progress simply does not get it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: impl Into<String>) {
        let report = Progress { progress, total, message: Some(message.into()) };
        tracing::debug!(request_id = %self.request_id, ?report, "tool progress");
        if let Some(sink) = &self.progress {
            send_progress(sink, report);
        }
    }
}

/// A tool's result: rmcp's `CallToolResult`, exactly what MCP carries, so a proxied call's
/// result passes through as it came (annotations, `_meta`, resource links and all) and is
/// never converted on its way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(value_type = Object, example = json!({
    "content": [{"type": "text", "text": "4"}], "structuredContent": {"sum": 4}, "isError": false
})))]
pub struct ToolOutput(pub CallToolResult);

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    /// A JSON result: structured content, with its text form for LLMs that read text only.
    pub fn json(value: Value) -> Self {
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        ToolOutput(result)
    }

    pub fn image(data_base64: String, mime_type: impl Into<String>) -> Self {
        ToolOutput(CallToolResult::success(vec![ContentBlock::image(data_base64, mime_type)]))
    }

    /// A tool error, as the LLM receives it (`isError: true`).
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput(CallToolResult::error(vec![ContentBlock::text(message)]))
    }

    pub fn is_error(&self) -> bool {
        self.0.is_error == Some(true)
    }

    /// The text blocks, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.0.content.iter().filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
    }

    /// Bytes of text and data, for caps and records.
    pub fn size(&self) -> usize {
        self.0.content.iter().map(block_size).sum::<usize>()
            + self.0.structured_content.as_ref().map_or(0, |s| s.to_string().len())
    }
}

/// Bytes of a kind of content this version does not know, as JSON.
fn serialized_len(value: &impl Serialize) -> usize {
    serde_json::to_string(value).map_or(0, |json| json.len())
}

/// Bytes of one content block's text or data.
pub(crate) fn block_size(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(text) => text.text.len(),
        ContentBlock::Image(image) => image.data.len(),
        ContentBlock::Audio(audio) => audio.data.len(),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.len(),
            ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
            other => serialized_len(other),
        },
        ContentBlock::ResourceLink(link) => link.uri.len(),
        other => serialized_len(other),
    }
}

/// How a tool call can fail.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The message goes to the LLM verbatim, so it can correct its next call.
    #[error("{0}")]
    Tool(String),
    /// The call needs of the caller's MCP client what it did not declare (the missing
    /// `ClientCapabilities`): MCP's -32021 to an MCP client, a tool error elsewhere.
    #[error("the tool needs the client capabilities {0}, which the caller did not declare")]
    MissingCapability(Value),
    /// Anything else: logged with a correlation id; the caller sees only a generic message.
    #[error(transparent)]
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl ToolError {
    pub fn tool(message: impl Into<String>) -> Self {
        ToolError::Tool(message.into())
    }

    pub fn internal(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ToolError::Internal(err.into())
    }
}

pub type ToolResult = Result<ToolOutput, ToolError>;
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// A tool's definition, as registered in the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Value,
    pub strict: bool,
}

/// A callable tool.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Runs the tool. `arguments` already passed validation against the input schema.
    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> ToolFuture<'a>;
}

/// A tool with typed arguments. Its input schema is derived from `Args`.
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    /// Ask providers that support it to follow the schema strictly.
    const STRICT: bool = false;

    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, ...).
    fn annotations(&self) -> Value {
        json!({})
    }

    fn run(&self, args: Self::Args, ctx: &ToolContext) -> impl Future<Output = ToolResult> + Send;
}

/// The input schema of a typed tool's arguments as their type declares it, less the title
/// schemars takes from the type's name: "WriteArgs" is Rust's word, and an LLM would read it.
fn arguments_schema<A: schemars::JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(A);
    schema.remove("title");
    schema.to_value()
}

impl<T: TypedTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            input_schema: arguments_schema::<T::Args>(),
            output_schema: None,
            annotations: self.annotations(),
            strict: T::STRICT,
        }
    }

    fn call<'a>(&'a self, arguments: Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = serde_json::from_value(arguments)
                .map_err(|err| ToolError::tool(format!("invalid arguments: {err}")))?;
            self.run(args, ctx).await
        })
    }
}

/// A set of tools registered together under one source, with the source's tags.
pub trait ToolProvider: Send + Sync {
    /// The source name the tools are registered under.
    fn name(&self) -> &str;
    fn tags(&self) -> Vec<String>;
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_needs_the_capability_of_its_kind() {
        let sampling = json!({"method": "sampling/createMessage", "params": {}});
        let form = json!({"method": "elicitation/create", "params": {"message": "?"}});
        let url = json!({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}});
        let roots = json!({"method": "roots/list"});
        let asked =
            |declared: Value, request: &Value| declares(&declared, &required_capability(request).unwrap());
        assert!(asked(json!({"elicitation": {}, "sampling": {}}), &sampling));
        assert!(asked(json!({"elicitation": {}}), &form), "an empty elicitation declares forms");
        assert!(asked(json!({"elicitation": {"form": {}, "url": {}}}), &form));
        assert!(!asked(json!({"elicitation": {"url": {}}}), &form), "links only");
        assert!(!asked(json!({"elicitation": {}}), &url));
        assert!(asked(json!({"elicitation": {"url": {}}}), &url));
        assert!(!asked(json!({"sampling": {}}), &roots));
        let with_tools = json!({"method": "sampling/createMessage", "params": {"tools": [{"name": "t"}]}});
        assert!(!asked(json!({"sampling": {}}), &with_tools), "tools need sampling.tools");
        assert!(asked(json!({"sampling": {"tools": {}}}), &with_tools));
        assert!(asked(json!({"sampling": {"tools": {}}}), &sampling));
        assert_eq!(required_capability(&url), Some(json!({"elicitation": {"url": {}}})));
        assert_eq!(required_capability(&json!({"method": "ping"})), None);
    }
}
