//! How a call runs: the exposed name is resolved in the tenant's snapshot, the arguments are
//! validated against the schema the LLM was given, presets are injected, and the call is
//! dispatched to its source under the tool's timeout. Every outcome becomes a [`CallResult`]:
//! a tool error's message reaches the caller verbatim; any other failure (a panic included)
//! becomes a generic message with a correlation id, and the details go to the log only.
//! Calls are bounded by the limits set for their tenant, tool and key ([`limits`]), and
//! concurrent calls by each process per tenant and per key ([`admission`]); a call is admitted
//! before its arguments are checked, so a call they refuse counts too.

mod admission;
mod call;
mod items;
pub mod limits;
mod record;
mod search;
mod upstream;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use rmcp::model::ContentBlock;
use serde_json::{Map, Value};
use sqlx::PgPool;
use uuid::Uuid;

use crate::catalog::{Catalog, CatalogTool, SEARCH_TOOL, TenantTools};
use crate::error::{Error, Missing};
use crate::model::{Limited, SourceKind};
use crate::schema::Provider;
use crate::secret::SecretBox;
use crate::store;
use crate::tool::{Caller, ProgressSink, Tool, ToolContext, ToolError, ToolOutput, ToolProvider, block_size};
use admission::Admission;
pub use call::{CallHooks, CallRequest, CallResult, PendingCall, Status};
pub use items::Subscription;
use limits::{Holder, Quotas};
pub(crate) use record::keepable;
pub use record::{CALL_SECONDS, RecordBuffer};
use record::{Record, Recorder, Unfinished};
pub use upstream::{Held, ResourceUpdated, ServerRef, Upstream};

#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Results larger than this many bytes are truncated, with a notice.
    pub output_cap_bytes: usize,
    /// Run the calls of a batch concurrently (the seeds' default) or one after another.
    pub parallel: bool,
    /// The most calls of one tenant running at once.
    pub max_concurrent_per_tenant: usize,
    /// The most calls of one API key running at once.
    pub max_concurrent_per_key: usize,
    /// The most calls of one tenant waiting for their results (external tools) at once.
    pub max_pending_per_tenant: i64,
    /// How often this process shares the calls it counted against rate limits with the other
    /// replicas (and learns theirs).
    pub limit_sync: Duration,
    /// How many invocation records may wait while the database is away.
    pub record_buffer: RecordBuffer,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            output_cap_bytes: 1024 * 1024,
            parallel: true,
            max_concurrent_per_tenant: 128,
            max_concurrent_per_key: 32,
            max_pending_per_tenant: 1000,
            limit_sync: Duration::from_secs(1),
            record_buffer: RecordBuffer::default(),
        }
    }
}

/// PostgreSQL's JSON cannot hold U+0000, so values that reach the database may not.
const NUL_REFUSED: &str = "may not contain the NUL character (\\u0000)";

/// What is wrong with a successful result's structured content, if the tool declares an
/// output schema it breaks (MCP: a server's structured results conform to its output schema).
fn structured_mismatch(tool: &CatalogTool, output: &ToolOutput) -> Option<String> {
    let structured = output.0.structured_content.as_ref().filter(|_| !output.is_error())?;
    tool.output_validator()?.check_output(structured).err()
}

/// Whose limits a call of `caller` counts against, besides the tenant's and the tool's.
fn holder(view: &TenantTools, caller: &Caller) -> Option<Holder> {
    match caller {
        Caller::ApiKey(key) => Some(Holder::Key(*key)),
        Caller::User(user) => Some(Holder::user(view.tenant_id, user.account)),
        Caller::Admin(_) => None,
    }
}

/// Whether any string or key in `value` contains U+0000.
pub(crate) fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

/// Executes calls. Clones share everything.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

struct Inner {
    catalog: Catalog,
    pool: PgPool,
    secrets: SecretBox,
    /// Built-in tools by (source name, tool name).
    builtins: HashMap<(String, String), Arc<dyn Tool>>,
    upstream: Option<Arc<dyn Upstream>>,
    config: ExecConfig,
    recorder: Recorder,
    admission: Admission,
    quotas: Arc<Quotas>,
}

/// What the dispatch produced, before it is shaped into a [`CallResult`].
enum Outcome {
    Done(ToolOutput),
    ToolError(String),
    /// The capabilities the caller's client lacks.
    MissingCapability(Value),
    Failed(String),
    Timeout(Duration),
    Suspended(PendingCall),
}

fn correlation_id() -> String {
    Uuid::new_v4().simple().to_string()[..16].to_string()
}

impl Executor {
    pub fn new(
        catalog: Catalog,
        pool: PgPool,
        secrets: SecretBox,
        providers: &[Arc<dyn ToolProvider>],
        upstream: Option<Arc<dyn Upstream>>,
        config: ExecConfig,
    ) -> Self {
        let builtins = providers
            .iter()
            .flat_map(|p| p.tools().into_iter().map(|t| ((p.name().to_string(), t.spec().name), t)))
            .collect();
        let recorder = Recorder::start(pool.clone(), config.record_buffer);
        let admission = Admission::new(config.max_concurrent_per_tenant, config.max_concurrent_per_key);
        let quotas = Arc::new(Quotas::default());
        tokio::spawn(share_usage(Arc::downgrade(&quotas), pool.clone(), config.limit_sync));
        let inner = Inner { catalog, pool, secrets, builtins, upstream, config, recorder, admission, quotas };
        Executor { inner: Arc::new(inner) }
    }

    /// Writes the invocation records still buffered (a stopping process), waiting at most
    /// `within`; returns how many could not be written.
    pub async fn flush_records(&self, within: Duration) -> usize {
        self.inner.recorder.flush(within).await
    }

    /// Runs one call for `tenant`. Progress reports go to `progress` when given.
    pub async fn call(
        &self,
        tenant: &str,
        caller: &Caller,
        request: CallRequest,
        progress: Option<ProgressSink>,
    ) -> Result<CallResult, Error> {
        self.call_hooked(tenant, caller, request, CallHooks { progress, ..CallHooks::default() }).await
    }

    /// Runs one call for `tenant` with `hooks`.
    pub async fn call_hooked(
        &self,
        tenant: &str,
        caller: &Caller,
        request: CallRequest,
        hooks: CallHooks,
    ) -> Result<CallResult, Error> {
        let snapshot = self.inner.catalog.snapshot();
        let view = snapshot.tenant(tenant).ok_or_else(|| Missing::Tenant(tenant.to_string()))?;
        self.call_in(view, caller, request, hooks).await
    }

    /// Runs one call among the tools of `view` (the tenant's, or an MCP session's own choice
    /// of groups, [`TenantTools::equip`]); `hooks` receive what the call sends its caller. A
    /// tenant in `search` mode runs its search tool here, and refuses a tool the caller has
    /// not found ([`search`]).
    #[tracing::instrument(name = "tool call", skip_all, fields(tenant = %view.slug, tool = %crate::telemetry::bounded(&request.name), caller = %caller, status))]
    pub async fn call_in(
        &self,
        view: &Arc<TenantTools>,
        caller: &Caller,
        request: CallRequest,
        hooks: CallHooks,
    ) -> Result<CallResult, Error> {
        let started = Instant::now();
        let tenant = view.slug.as_str();
        let searching = view.searching();
        if searching && request.name == SEARCH_TOOL {
            return self.search(view, caller, request.arguments, hooks.format).await;
        }
        let tool = view.resolve(&request.name).ok_or_else(|| Missing::Tool(request.name.clone()))?.clone();
        let arguments = match request.arguments {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let mut ctx = ToolContext::new(view.tenant_id, tenant, caller.clone(), correlation_id());
        if let Some(sink) = hooks.progress {
            ctx = ctx.with_progress(sink);
        }
        if let Some(client) = hooks.client {
            ctx = ctx.with_client(client);
        }
        // Admitted before its arguments are checked (and, in `search` mode, whether the caller
        // found the tool): a call they refuse is a call, and counts against the limits like any
        // other (a key whose limit is spent stores nothing more).
        // Refused here, it is not a call: nothing is recorded.
        let _places = self
            .admit(view, tool.tool_id, caller)
            .await
            .inspect_err(|limited| limits::count_refusal(limited, tenant))?;
        if searching {
            self.check_found(view, caller, &tool).await?;
        }
        let unfinished = Unfinished::new(
            &self.inner.recorder,
            started,
            Record {
                at: time::OffsetDateTime::now_utc(),
                tenant_id: view.tenant_id,
                tenant: tenant.to_string(),
                tool_name: tool.exposed_name.clone(),
                source: Some(tool.source_name.clone()),
                caller: caller.to_string(),
                // What a call dropped before it finishes is recorded as.
                status: "cancelled",
                latency: Duration::ZERO,
                result_bytes: 0,
                correlation_id: None,
                arguments,
            },
        );
        let arguments = unfinished.arguments();
        let outcome = if has_nul(arguments) {
            Outcome::ToolError(format!("arguments {NUL_REFUSED}"))
        } else {
            match tool.validator().check(arguments) {
                Err(problems) => Outcome::ToolError(problems),
                Ok(()) => self.dispatch(view.tenant_id, &tool, arguments.clone(), ctx).await,
            }
        };
        let result = self.finish(outcome, started);
        tracing::Span::current().record("status", result.status.as_str());
        unfinished.finish(&result);
        Ok(result)
    }

    /// Runs the calls of one LLM turn, concurrently unless configured otherwise; results come
    /// in call order. A search among them answers in `format`.
    pub async fn call_batch(
        &self,
        tenant: &str,
        caller: &Caller,
        requests: Vec<CallRequest>,
        format: Option<Provider>,
    ) -> Vec<Result<CallResult, Error>> {
        let hooks = || CallHooks { format, ..CallHooks::default() };
        if !self.inner.config.parallel {
            let mut results = Vec::with_capacity(requests.len());
            for request in requests {
                results.push(self.call_hooked(tenant, caller, request, hooks()).await);
            }
            return results;
        }
        let handles: Vec<_> = requests
            .into_iter()
            .map(|request| {
                let (executor, tenant, caller, hooks) =
                    (self.clone(), tenant.to_string(), caller.clone(), hooks());
                tokio::spawn(async move { executor.call_hooked(&tenant, &caller, request, hooks).await })
            })
            .collect();
        let mut results = Vec::with_capacity(handles.len());
        for handle in handles {
            results.push(handle.await.expect("Executor::call does not panic: tool panics are caught"));
        }
        results
    }

    /// Completes a suspended call with the result the caller computed.
    pub async fn resume(&self, tenant: &str, id: Uuid, output: ToolOutput) -> Result<CallResult, Error> {
        let started = Instant::now();
        let stored = serde_json::to_value(&output).expect("tool output serialises");
        if has_nul(&stored) {
            return Err(Error::Invalid(format!("the result {NUL_REFUSED}")));
        }
        let snapshot = self.inner.catalog.snapshot();
        let view = snapshot.tenant(tenant).ok_or_else(|| Missing::Tenant(tenant.to_string()))?;
        let resumed = store::pending::resolve(&self.inner.pool, view.tenant_id, id, &stored)
            .await?
            .ok_or(Missing::PendingCall(id))?;
        let result = self.finish(Outcome::Done(output), started);
        self.inner.recorder.record(Record {
            at: time::OffsetDateTime::now_utc(),
            tenant_id: view.tenant_id,
            tenant: tenant.to_string(),
            tool_name: resumed.tool_name,
            source: None,
            caller: "resume".into(),
            status: result.status.as_str(),
            latency: started.elapsed(),
            result_bytes: result.output.size(),
            correlation_id: None,
            arguments: resumed.arguments,
        });
        Ok(result)
    }

    /// Admits a call under its limits: places among the running calls, then its count
    /// against the rate limits (a call that waited for a place and was refused is not counted).
    /// `tool` is the nil id for a call that runs no tool (the search tool): no tool's limits
    /// apply to it.
    async fn admit(
        &self,
        view: &TenantTools,
        tool: Uuid,
        caller: &Caller,
    ) -> Result<admission::Permit, Limited> {
        let holder = holder(view, caller);
        let places = self.inner.admission.admit(&view.limits, view.tenant_id, tool, holder).await?;
        let inner = &self.inner;
        inner.quotas.admit(&inner.pool, &view.limits, view.tenant_id, tool, holder).await?;
        Ok(places)
    }

    /// Counts a request that runs no tool but costs like a call (the meta tool choosing a
    /// session's groups) against the tenant's and the caller's rate limits, or refuses it
    /// naming the limit (counted in the metrics).
    pub async fn admit_toolless(&self, view: &TenantTools, caller: &Caller) -> Result<(), Limited> {
        let inner = &self.inner;
        // No tool's limits apply to the nil id.
        let admitted = inner
            .quotas
            .admit(&inner.pool, &view.limits, view.tenant_id, Uuid::nil(), holder(view, caller))
            .await;
        admitted.inspect_err(|limited| limits::count_refusal(limited, &view.slug))
    }

    async fn dispatch(
        &self,
        tenant_id: Uuid,
        tool: &CatalogTool,
        mut arguments: Value,
        ctx: ToolContext,
    ) -> Outcome {
        if let Value::Object(args) = &mut arguments {
            // The no-parameter schema's `reason` is for the LLM only.
            if !tool.takes_reason() {
                args.remove("reason");
            }
            args.extend(tool.presets.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if tool.source_kind == SourceKind::External {
            let cap = self.inner.config.max_pending_per_tenant;
            return match self.suspend(tenant_id, tool, arguments).await {
                Ok(Some(pending)) => Outcome::Suspended(pending),
                Ok(None) => Outcome::ToolError(format!(
                    "{cap} calls of this tenant are already waiting for their results; \
                     post their results (or wait for them to expire) before calling `{}` again",
                    tool.exposed_name
                )),
                Err(err) => self.failed(&err),
            };
        }
        if let Value::Object(args) = &mut arguments {
            for (name, sealed) in tool.secret_presets.iter() {
                match sealed.as_str().map(|s| self.inner.secrets.decrypt(s)) {
                    Some(Ok(plain)) => {
                        args.insert(name.clone(), Value::String(plain));
                    }
                    _ => {
                        return self.failed(&format!(
                            "secret preset `{name}` of `{}` cannot be decrypted",
                            tool.exposed_name
                        ));
                    }
                }
            }
        }
        // A panic fails the call, not the process; the call stops when it is dropped (its
        // client cancelled) or times out, which cancels an upstream call.
        let running = AssertUnwindSafe(self.run(tool, arguments, &ctx)).catch_unwind();
        match tokio::time::timeout(tool.timeout, running).await {
            Err(_) => Outcome::Timeout(tool.timeout),
            Ok(Err(_)) => self.failed(&format!("tool `{}` panicked", tool.exposed_name)),
            Ok(Ok(Ok(output))) => match structured_mismatch(tool, &output) {
                Some(problems) => Outcome::ToolError(format!(
                    "`{}` answered with structured content that does not match its output schema: {problems}",
                    tool.exposed_name
                )),
                None => Outcome::Done(output),
            },
            Ok(Ok(Err(ToolError::Tool(message)))) => Outcome::ToolError(message),
            Ok(Ok(Err(ToolError::MissingCapability(required)))) => Outcome::MissingCapability(required),
            Ok(Ok(Err(ToolError::Internal(err)))) => self.failed(&err),
        }
    }

    async fn run(
        &self,
        tool: &CatalogTool,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        match tool.source_kind {
            SourceKind::Builtin => {
                let key = (tool.source_name.clone(), tool.upstream_name.clone());
                let builtin = self.inner.builtins.get(&key).ok_or_else(|| {
                    ToolError::internal(format!(
                        "built-in tool `{}` of `{}` is not compiled in",
                        key.1, key.0
                    ))
                })?;
                builtin.call(arguments, ctx).await
            }
            SourceKind::Mcp => match &self.inner.upstream {
                Some(upstream) => upstream.call(tool, arguments, ctx).await,
                None => Err(ToolError::tool(format!("MCP server `{}` is not connected", tool.source_name))),
            },
            SourceKind::External => unreachable!("external tools are suspended, not run"),
        }
    }

    /// Records a call waiting for its result, unless the tenant already has as many waiting
    /// as it may (`None`). Suspensions of one tenant take turns, so the cap holds exactly.
    async fn suspend(
        &self,
        tenant_id: Uuid,
        tool: &CatalogTool,
        arguments: Value,
    ) -> crate::Result<Option<PendingCall>> {
        let max = self.inner.config.max_pending_per_tenant;
        let id =
            store::pending::suspend(&self.inner.pool, tenant_id, &tool.exposed_name, &arguments, max).await?;
        Ok(id.map(|id| PendingCall { id, tool: tool.exposed_name.clone(), arguments }))
    }

    /// Logs `err` under a fresh correlation id; only the id leaves.
    fn failed(&self, err: &dyn std::fmt::Display) -> Outcome {
        let id = correlation_id();
        tracing::error!(correlation_id = %id, error = %err, "tool call failed");
        Outcome::Failed(id)
    }

    fn finish(&self, outcome: Outcome, started: Instant) -> CallResult {
        let mut required_capabilities = None;
        let (status, output, correlation_id, pending) = match outcome {
            Outcome::Done(output) => {
                let status = if output.is_error() { Status::ToolError } else { Status::Ok };
                (status, cap(output, self.inner.config.output_cap_bytes), None, None)
            }
            Outcome::ToolError(message) => (Status::ToolError, ToolOutput::error(message), None, None),
            Outcome::MissingCapability(required) => {
                let message = ToolError::MissingCapability(required.clone()).to_string();
                required_capabilities = Some(required);
                (Status::ToolError, ToolOutput::error(message), None, None)
            }
            Outcome::Failed(id) => {
                let message = format!("The tool failed because of an internal error (correlation id {id}).");
                (Status::Failed, ToolOutput::error(message), Some(id), None)
            }
            Outcome::Timeout(after) => {
                let message = format!("The tool did not finish within {after:?} and was cancelled.");
                (Status::Timeout, ToolOutput::error(message), None, None)
            }
            Outcome::Suspended(pending) => {
                let message = format!("`{}` runs outside Toolgate: waiting for its result.", pending.tool);
                (Status::Suspended, ToolOutput::text(message), None, Some(pending))
            }
        };
        CallResult {
            status,
            output,
            correlation_id,
            pending,
            required_capabilities,
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

/// Shares this process's rate counts every `every` until the executor is gone. A sync that
/// fails (the database unreachable) is retried at the next: counting goes on locally meanwhile.
async fn share_usage(quotas: Weak<Quotas>, pool: PgPool, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(quotas) = quotas.upgrade() else { return };
        if let Err(err) = quotas.sync(&pool).await {
            tracing::warn!(error = %err, "call usage could not be shared with the other replicas");
        }
    }
}

/// Truncates `output` to `cap` bytes of content, ending with a notice of what was cut.
fn cap(output: ToolOutput, cap: usize) -> ToolOutput {
    let size = output.size();
    if size <= cap {
        return output;
    }
    let mut result = output.0;
    let mut left = cap;
    result.content.retain_mut(|block| match block {
        ContentBlock::Text(piece) if left > 0 => {
            let mut end = piece.text.len().min(left);
            while !piece.text.is_char_boundary(end) {
                end -= 1;
            }
            piece.text.truncate(end);
            left -= end;
            true
        }
        ContentBlock::Text(_) => false,
        other => {
            let size = block_size(other);
            let kept = size <= left;
            if kept {
                left -= size;
            }
            kept
        }
    });
    result
        .content
        .push(ContentBlock::text(format!("\n[output truncated: {size} bytes exceed the {cap}-byte limit]")));
    result.structured_content = None;
    ToolOutput(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_untouched() {
        let output = ToolOutput::text("hello");
        assert_eq!(cap(output.clone(), 10), output);
    }

    #[test]
    fn large_output_is_truncated_on_a_char_boundary_with_a_notice() {
        let capped = cap(ToolOutput::text("héllo wörld"), 2);
        let texts: Vec<&str> = capped.texts().collect();
        let [text, notice] = texts[..] else { panic!("{texts:?}") };
        assert_eq!(text, "h");
        assert!(notice.contains("output truncated: 13 bytes exceed the 2-byte limit"), "{notice}");
    }
}
