//! What the servers of a connection offer: their tools, prompts, resources and resource
//! templates, listed (following the server's pages, up to a cap) and recorded for each server,
//! with pinning; their descriptions, untrusted, capped.

use std::time::Instant;

use futures::TryFutureExt;
use rmcp::model::{ListToolsResult, PaginatedRequestParams};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::{Value, json};

use super::requests::is_transport;
use super::{Failure, Slot};
use crate::model::Name;
use crate::model::UpstreamError;
use crate::store::items::{self, ItemDefinition, ItemKind};
use crate::store::servers;
use crate::store::sources::ToolDefinition;
use crate::upstream::connect::service_failure;

impl Slot {
    /// Lists every tool (following pagination) once through connection `connection` and
    /// records them for each of `servers`, with pinning; one report (or error) per server. A
    /// listing that cannot reach the server takes the connection down, as a failed probe does.
    pub(in crate::upstream) async fn discover(
        &self,
        peer: &Peer<RoleClient>,
        connection: u64,
        servers: &[String],
    ) -> Vec<Result<servers::DiscoveryReport, UpstreamError>> {
        let _one_at_a_time = self.discovering.lock().await;
        let listing = paged(|page| self.tools_page(peer, page).map_ok(|p| (p.tools, p.next_cursor)));
        let listed = match tokio::time::timeout(self.config.connect_timeout, listing).await {
            Ok(Err(err)) if is_transport(&err) => {
                let failure = service_failure(&err);
                self.lose(connection, format!("a listing found the connection broken: {failure}"));
                Err(UpstreamError::Listing(failure))
            }
            Ok(listed) => listed.map_err(|e| UpstreamError::Listing(service_failure(&e))),
            Err(_) => {
                let err = UpstreamError::ListingTimeout(self.config.connect_timeout);
                self.lose(connection, err.to_string());
                Err(err)
            }
        };
        let definitions: Result<Vec<ToolDefinition>, UpstreamError> =
            listed.map(|tools| tools.iter().map(|t| definition(t, self.config.description_cap)).collect());
        let items = match definitions {
            Ok(_) => match tokio::time::timeout(self.config.connect_timeout, self.list_items(peer)).await {
                Ok(listed) => listed.map_err(|e| {
                    UpstreamError::Listing(format!("prompts and resources: {}", service_failure(&e)))
                }),
                Err(_) => Err(UpstreamError::ListingTimeout(self.config.connect_timeout)),
            },
            Err(_) => Ok(Vec::new()),
        };
        let mut reports = Vec::with_capacity(servers.len());
        for server in servers {
            let record = async |name: Name, definitions: &[ToolDefinition]| {
                let report = servers::record_discovery(&self.pool, &name, definitions).await?;
                if let Ok(items) = &items {
                    items::record(&self.pool, &name, items).await?;
                }
                Ok::<_, crate::store::Error>(report)
            };
            let report = match &definitions {
                Ok(definitions) => match Name::parse(server) {
                    Ok(name) => {
                        record(name, definitions).await.map_err(|e| UpstreamError::Recording(e.to_string()))
                    }
                    Err(err) => Err(UpstreamError::Recording(err.to_string())),
                },
                Err(err) => Err(err.clone()),
            };
            // The tools are recorded whatever became of the other items.
            let report = report.and_then(|report| items.as_ref().map(|_| report).map_err(Clone::clone));
            match &report {
                Ok(report) => tracing::info!(%server, ?report, "upstream tools discovered"),
                Err(err) => tracing::warn!(%server, error = %err, "upstream discovery failed"),
            }
            if let Some(member) = self.members().iter_mut().find(|m| &m.name == server) {
                member.discovery_error = report.as_ref().err().map(|err| Failure::now(err.to_string()));
            }
            reports.push(report);
        }
        if definitions.is_ok() {
            self.set(|s| {
                s.last_seen = Some(Instant::now());
                s.last_error = None;
            });
        }
        reports
    }

    /// A page of the server's tools: asked straight over HTTP on 2026-07-28
    /// ([`crate::upstream::direct`]), else through rmcp's client.
    pub(super) async fn tools_page(
        &self,
        peer: &Peer<RoleClient>,
        page: Option<PaginatedRequestParams>,
    ) -> Result<ListToolsResult, ServiceError> {
        let direct = self.state.borrow().direct.clone().filter(|direct| !direct.in_session());
        match direct {
            Some(direct) => direct.list_tools(page).await,
            None => peer.list_tools(page).await,
        }
    }

    /// What the server offers besides tools, as far as its capabilities say it offers any:
    /// prompts, resources, resource templates (at most [`MAX_ITEMS`] of each).
    async fn list_items(&self, peer: &Peer<RoleClient>) -> Result<Vec<ItemDefinition>, ServiceError> {
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        let cap = self.config.description_cap;
        let mut items = Vec::new();
        if capabilities.prompts.is_some() {
            let prompts =
                paged(|page| peer.list_prompts(page).map_ok(|p| (p.prompts, p.next_cursor))).await?;
            items.extend(prompts.iter().filter_map(|p| item(ItemKind::Prompt, &p.name, p, cap)));
        }
        if capabilities.resources.is_some() {
            let resources =
                paged(|page| peer.list_resources(page).map_ok(|p| (p.resources, p.next_cursor))).await?;
            items.extend(resources.iter().filter_map(|r| item(ItemKind::Resource, &r.uri, r, cap)));
            let templates = paged(|page| {
                peer.list_resource_templates(page).map_ok(|p| (p.resource_templates, p.next_cursor))
            })
            .await?;
            items.extend(
                templates.iter().filter_map(|t| item(ItemKind::ResourceTemplate, &t.uri_template, t, cap)),
            );
        }
        Ok(items)
    }
}

/// What ends a description cut at the cap.
const TRUNCATED: &str = " [description truncated]";

/// The most entries of one listing (tools, prompts, resources, templates) kept of a server.
const MAX_LISTED: usize = 10_000;

/// An untrusted description, cut to `cap` bytes (with a notice).
fn capped(mut description: String, cap: usize) -> String {
    if description.len() > cap {
        // The notice counts against the cap too.
        let mut end = cap.saturating_sub(TRUNCATED.len());
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
        description.push_str(TRUNCATED);
    }
    description
}

/// A listing's pages from `page`, following the server's cursors until it has given
/// [`MAX_LISTED`] entries: a server that pages on and on is cut off there.
async fn paged<T, Page>(
    mut page: impl FnMut(Option<PaginatedRequestParams>) -> Page,
) -> Result<Vec<T>, ServiceError>
where
    Page: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let (entries, next) =
            page(cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)))).await?;
        listed.extend(entries);
        if listed.len() >= MAX_LISTED {
            if next.is_some() || listed.len() > MAX_LISTED {
                tracing::warn!(
                    kept = MAX_LISTED,
                    "an upstream lists more than is kept; the rest is left out"
                );
            }
            listed.truncate(MAX_LISTED);
            return Ok(listed);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(listed),
        }
    }
}

/// A server's tools, at most [`MAX_LISTED`].
pub(in crate::upstream) async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<Vec<rmcp::model::Tool>, ServiceError> {
    paged(|page| peer.list_tools(page).map_ok(|p| (p.tools, p.next_cursor))).await
}

/// A discovered prompt, resource or template as Toolgate stores it, its description capped;
/// `None` for a key the catalog cannot hold.
fn item(kind: ItemKind, key: &str, listed: &impl serde::Serialize, cap: usize) -> Option<ItemDefinition> {
    if key.is_empty() || key.len() > 2048 {
        tracing::warn!(
            kind = kind.as_str(),
            bytes = key.len(),
            "an upstream item's key is empty or too long; left out"
        );
        return None;
    }
    let mut definition = serde_json::to_value(listed).ok()?;
    if let Some(Value::String(description)) = definition.get_mut("description") {
        *description = capped(std::mem::take(description), cap);
    }
    Some(ItemDefinition::listed(kind, key.to_string(), definition))
}

/// A discovered tool as Toolgate stores it; the description is untrusted and capped.
fn definition(tool: &rmcp::model::Tool, description_cap: usize) -> ToolDefinition {
    let value = serde_json::to_value(tool).unwrap_or_default();
    let description = capped(value["description"].as_str().unwrap_or_default().to_string(), description_cap);
    ToolDefinition {
        upstream_name: value["name"].as_str().unwrap_or_default().to_string(),
        description,
        input_schema: value.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        output_schema: value.get("outputSchema").filter(|s| s.is_object()).cloned(),
        annotations: value.get("annotations").filter(|a| a.is_object()).cloned().unwrap_or_else(|| json!({})),
        tags: vec![],
        strict: false,
        timeout_ms: None,
        meta: crate::catalog::apps::tool_meta(tool.meta.as_deref()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_long_description_is_cut_to_the_cap_notice_included() {
        let schema = Arc::new(json!({"type": "object"}).as_object().cloned().unwrap());
        let tool = rmcp::model::Tool::new("long", "é".repeat(10_000), schema);
        let description = definition(&tool, 8 * 1024).description;
        assert!(description.len() <= 8 * 1024, "{} bytes", description.len());
        assert!(description.len() > 8 * 1024 - 30);
        assert!(description.ends_with(TRUNCATED));
    }

    #[tokio::test]
    async fn a_listing_that_pages_on_and_on_is_cut_off() {
        let mut pages = 0;
        let listed = paged(|cursor| {
            pages += 1;
            let at: usize = cursor.and_then(|c| c.cursor).map_or(0, |c| c.parse().unwrap());
            std::future::ready(Ok(((at..at + 999).collect::<Vec<_>>(), Some((at + 999).to_string()))))
        })
        .await
        .unwrap();
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(listed.last(), Some(&(MAX_LISTED - 1)));
        assert_eq!(pages, MAX_LISTED.div_ceil(999));
    }
}
