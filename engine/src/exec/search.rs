//! The search tool of a tenant in `search` mode: it finds the tools for a query, answers their
//! definitions in the caller's format, and records what the caller found, which the caller may
//! then list and call ([`crate::store::finds`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::CallToolResult;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::record::Record;
use super::{Executor, Outcome};
use crate::catalog::{CatalogTool, FOUND_BY_DEFAULT, MAX_FOUND, SEARCH_TOOL, TenantTools};
use crate::error::{Error, Missing};
use crate::exec::CallResult;
use crate::schema::Provider;
use crate::store;
use crate::tool::{Caller, ToolOutput};

/// The search tool's arguments.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Query {
    query: String,
    count: Option<usize>,
}

fn parse(arguments: Value) -> Result<(String, usize), String> {
    let arguments = match arguments {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    let Query { query, count } = serde_json::from_value(arguments)
        .map_err(|err| format!("the arguments of `{SEARCH_TOOL}`: {err}"))?;
    if query.trim().is_empty() {
        return Err("`query` is empty: say in a few words what the tool should do".into());
    }
    match count.unwrap_or(FOUND_BY_DEFAULT) {
        count @ 1..=MAX_FOUND => Ok((query, count)),
        count => Err(format!("`count` is 1 to {MAX_FOUND}, not {count}")),
    }
}

/// A tool found, as the caller lists tools: in `format`, or as the tenant's MCP clients get them.
fn definition(view: &TenantTools, tool: &CatalogTool, format: Option<Provider>) -> Option<Value> {
    let rendered = match format {
        Some(provider) => tool.render(provider),
        None => tool.mcp_definition(view.portable_mcp_schemas),
    };
    rendered
        .inspect_err(|err| tracing::warn!(tool = %tool.exposed_name, error = %err, "tool found not served"))
        .ok()
}

impl Executor {
    /// Runs the search tool for `caller` among the tools of `view`: a call under the tenant's
    /// and the caller's limits (no tool's), recorded like any other.
    pub(super) async fn search(
        &self,
        view: &Arc<TenantTools>,
        caller: &Caller,
        arguments: Value,
        format: Option<Provider>,
    ) -> Result<CallResult, Error> {
        let started = Instant::now();
        // Among the calls running at once too: a search may build the tenant's index.
        let _places = self
            .admit(view, Uuid::nil(), caller)
            .await
            .inspect_err(|limited| super::limits::count_refusal(limited, &view.slug))?;
        let kept = super::keepable(&arguments);
        let outcome = match parse(arguments) {
            Err(message) => Outcome::ToolError(message),
            Ok((query, count)) => match view.clone().find(query, count).await {
                Err(Error::Invalid(message)) => Outcome::ToolError(message),
                Err(err) => return Err(err),
                Ok(found) => Outcome::Done(self.answer(view, caller, &found, format).await),
            },
        };
        let result = self.finish(outcome, started);
        self.inner.recorder.record(Record {
            at: time::OffsetDateTime::now_utc(),
            tenant_id: view.tenant_id,
            tenant: view.slug.clone(),
            tool_name: SEARCH_TOOL.to_string(),
            source: None,
            caller: caller.to_string(),
            status: result.status.as_str(),
            latency: started.elapsed(),
            result_bytes: result.output.size(),
            correlation_id: None,
            arguments: kept,
        });
        Ok(result)
    }

    /// The answer to a search that found `found`, recording them as found by the caller.
    async fn answer(
        &self,
        view: &TenantTools,
        caller: &Caller,
        found: &[(Arc<CatalogTool>, f32)],
        format: Option<Provider>,
    ) -> ToolOutput {
        if found.is_empty() {
            return ToolOutput::text("No tool matches this query: try other words, or a broader task.");
        }
        let (names, tools): (Vec<String>, Vec<Value>) = found
            .iter()
            .filter_map(|(tool, _)| Some((tool.exposed_name.clone(), definition(view, tool, format)?)))
            .unzip();
        let mut answer = json!({"tools": tools});
        if let Some(owner) = caller.owner()
            && let Err(err) = store::finds::record(&self.inner.pool, view.tenant_id, owner, &names).await
        {
            tracing::warn!(error = %err, "could not record the tools a search found");
            answer["note"] = json!(
                "These tools could not be made callable (Toolgate's database is away): search again shortly."
            );
        }
        ToolOutput(CallToolResult::structured(answer))
    }

    /// The tools `caller` found within the hour among those of `view` (the latest
    /// [`store::finds::MOST_LISTED`]), if its tenant is in `search` mode (none otherwise).
    /// With the database away none are: the search tool and the pinned tools stay listed.
    pub async fn found(&self, view: &TenantTools, caller: &Caller) -> HashSet<String> {
        let Some(owner) = caller.owner().filter(|_| view.searching()) else { return HashSet::new() };
        match store::finds::found(&self.inner.pool, view.tenant_id, owner).await {
            Ok(found) => found.into_iter().collect(),
            Err(err) => {
                tracing::warn!(error = %err, "could not read the tools a caller found");
                HashSet::new()
            }
        }
    }

    /// Refuses a call of a tool of a tenant in `search` mode that `caller` has not found
    /// within the hour (pinned tools and administrators' test calls excepted).
    pub(super) async fn check_found(
        &self,
        view: &TenantTools,
        caller: &Caller,
        tool: &CatalogTool,
    ) -> Result<(), Error> {
        let Some(owner) = caller.owner() else { return Ok(()) };
        let name = &tool.exposed_name;
        if view.is_pinned(tool)
            || store::finds::was_found(&self.inner.pool, view.tenant_id, owner, name).await?
        {
            return Ok(());
        }
        Err(Missing::Unfound(name.clone()).into())
    }
}
