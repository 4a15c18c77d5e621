//! A tenant as an administrator sees it.

use serde::Serialize;
use uuid::Uuid;

use super::Services;
use crate::catalog::Conflict;
use crate::model::TenantSlug;
use crate::store::keys::ApiKey;
use crate::store::overrides::Override;
use crate::store::tenants::{GroupActivation, Tenant};
use crate::store::{self, Result};

/// A tenant with its groups, overrides and keys, and exactly what its LLM applications see
/// now (from the live catalog, at `snapshot_version`).
#[derive(Debug, Clone, Serialize)]
pub struct TenantDetail {
    pub tenant: Tenant,
    pub groups: Vec<GroupActivation>,
    pub overrides: Vec<Override>,
    pub keys: Vec<ApiKey>,
    pub tools: Vec<EffectiveTool>,
    /// What the tool list costs an LLM's context, roughly: the sum of `tools`.
    pub approx_tokens: usize,
    /// Exposed names claimed by more than one tool (none of them is served).
    pub conflicts: Vec<Conflict>,
    pub snapshot_version: u64,
}

/// One tool the tenant's LLM applications see.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveTool {
    pub tool_id: Uuid,
    pub name: String,
    pub source: String,
    pub description: String,
    pub tags: Vec<String>,
    /// Its OpenAI rendering's size in tokens, roughly (4 bytes a token).
    pub approx_tokens: usize,
}

/// The tenant `slug` in full.
pub async fn detail(services: &Services, slug: &TenantSlug) -> Result<TenantDetail> {
    let (pool, catalog) = (&services.pool, &services.catalog);
    let tenant = store::tenants::get(pool, slug).await?;
    let groups = store::tenants::group_activations(pool, slug).await?;
    let overrides = store::overrides::list(pool, slug).await?;
    let keys = store::keys::list(pool, slug).await?;
    let snapshot = catalog.snapshot();
    let view = snapshot.tenant(slug.as_str());
    let tools: Vec<EffectiveTool> = view
        .map(|view| view.tools())
        .unwrap_or_default()
        .iter()
        .map(|tool| EffectiveTool {
            tool_id: tool.tool_id,
            name: tool.exposed_name.clone(),
            source: tool.source_name.clone(),
            description: tool.description.clone(),
            tags: tool.tags.clone(),
            approx_tokens: tool.approx_tokens(),
        })
        .collect();
    Ok(TenantDetail {
        tenant,
        groups,
        overrides,
        keys,
        approx_tokens: tools.iter().map(|tool| tool.approx_tokens).sum(),
        tools,
        conflicts: view.map(|view| view.conflicts.clone()).unwrap_or_default(),
        snapshot_version: snapshot.version,
    })
}
