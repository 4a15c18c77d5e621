//! Tenants as their administrators manage them: every operation takes the proof that the
//! caller manages the tenant ([`ManagedTenant`]); what only owners may do asks it for
//! [`ManagedTenant::owner`].

pub use crate::store::item_overrides::{ItemOverrideInput, ItemRef};
pub use crate::store::overrides::OverrideInput;
pub use crate::store::tenants::{Tenant, TenantUpdate, ToolDiscovery};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, GetPromptResult, JsonObject, ReadResourceResult,
    Reference,
};
use serde::Serialize;
use uuid::Uuid;

use super::Services;
use super::access::{Admin, ManagedTenant, Owner};
use crate::Result;
use crate::catalog;
use crate::catalog::items::{ItemConflict, TenantItems};
use crate::catalog::{Conflict, TenantTools};
use crate::error::Missing;
use crate::exec::{CallHooks, CallRequest, CallResult};
use crate::model::CallLimits;
use crate::model::limits::{Kind, Scope};
use crate::model::{Name, TenantSlug};
use crate::schema::JsonText;
use crate::store;
use crate::store::SecretInput;
use crate::store::invocations::TestRun;
use crate::store::item_overrides::ItemOverride;
use crate::store::items::ItemKind;
use crate::store::keys::ApiKey;
use crate::store::overrides::Override;
use crate::store::sources::ToolRecord;
use crate::store::tenants::GroupActivation;

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
    /// The meta tool, which MCP sessions get besides `tools` (not counted in `approx_tokens`).
    pub meta_tool: Option<MetaTool>,
    /// The prompts, resources and resource templates its MCP clients see.
    pub items: Vec<EffectiveItem>,
    /// Prompt names, URIs and templates offered by more than one server (none is served).
    pub item_conflicts: Vec<ItemConflict>,
    /// The tenant's choices for single prompts, resources and templates.
    pub item_overrides: Vec<ItemOverride>,
    pub snapshot_version: u64,
}

/// One prompt, resource or resource template the tenant's MCP clients see.
#[derive(Debug, Clone, Serialize)]
pub struct EffectiveItem {
    pub kind: ItemKind,
    /// What clients know it by: a prompt's exposed name, a URI, a URI template.
    pub name: String,
    /// Its server's own key for it: a prompt's name before its prefix, a URI, a template.
    pub key: String,
    pub source: String,
    pub description: String,
    /// Its listed definition's size in tokens, roughly (4 bytes a token).
    pub approx_tokens: usize,
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

/// The meta tool as the tenant's MCP sessions are offered it.
#[derive(Debug, Clone, Serialize)]
pub struct MetaTool {
    pub name: &'static str,
    pub description: String,
    /// Its definition's size in tokens, roughly (4 bytes a token).
    pub approx_tokens: usize,
}

fn effective_items(items: &TenantItems) -> Vec<EffectiveItem> {
    let all = items.prompts().iter().chain(items.resources()).chain(items.templates());
    all.map(|item| EffectiveItem {
        kind: item.kind,
        name: item.exposed.clone(),
        key: item.key.clone(),
        source: item.source_name.clone(),
        description: item.definition["description"].as_str().unwrap_or_default().to_string(),
        approx_tokens: item.definition.to_string().len().div_ceil(4),
    })
    .collect()
}

/// The tenants `admin` manages.
pub async fn list(services: &Services, admin: &Admin) -> Result<Vec<Tenant>> {
    let mut tenants = store::tenants::list(&services.pool).await?;
    tenants.retain(|tenant| admin.scope().allows(&tenant.slug));
    Ok(tenants)
}

/// Every tenant, for an owner.
pub async fn all(services: &Services, _: &Owner) -> Result<Vec<Tenant>> {
    store::tenants::list(&services.pool).await
}

/// A tenant in a list: how many tools its LLM applications see, how many keys it has.
#[derive(Debug, Clone, Serialize)]
pub struct TenantSummary {
    pub tenant: Tenant,
    pub tools: usize,
    pub active_keys: usize,
}

/// The tenants `admin` manages, each with its counts.
pub async fn summaries(services: &Services, admin: &Admin) -> Result<Vec<TenantSummary>> {
    let keys = store::keys::active_counts(&services.pool).await?;
    let snapshot = services.catalog.snapshot();
    Ok(list(services, admin)
        .await?
        .into_iter()
        .map(|tenant| TenantSummary {
            tools: snapshot.tenant(&tenant.slug).map_or(0, |view| view.tools().len()),
            active_keys: keys.get(&tenant.id).copied().unwrap_or(0) as usize,
            tenant,
        })
        .collect())
}

/// One rate limit of a tenant's, with the calls counted against it in its current window (the
/// UTC minute or day) by every replica, as of their last sync.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitUsage {
    pub tenant: String,
    #[serde(flatten)]
    pub scope: Scope,
    /// With scope `key`: the key's name and prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `per_minute` or `per_day`.
    pub limit: Kind,
    pub max: u32,
    pub used: u64,
}

/// Every rate limit of the tenants `admin` manages, with its use now.
pub async fn usage(services: &Services, admin: &Admin) -> Result<Vec<LimitUsage>> {
    let tenants = list(services, admin).await?;
    let keys = store::keys::limited(&services.pool).await?;
    let used: HashMap<(Uuid, String, Kind), u64> = store::usage::current(&services.pool)
        .await?
        .into_iter()
        .map(|u| ((u.subject, u.tool, u.limit), u.calls))
        .collect();
    let mut rows = Vec::new();
    for tenant in &tenants {
        let mut row = |subject: Uuid, scope: Scope, key: Option<String>, limits: &CallLimits| {
            let tool = match &scope {
                Scope::Tool(name) => name.clone(),
                _ => String::new(),
            };
            for (limit, max) in [(Kind::PerMinute, limits.per_minute), (Kind::PerDay, limits.per_day)] {
                let Some(max) = max else { continue };
                rows.push(LimitUsage {
                    tenant: tenant.slug.clone(),
                    scope: scope.clone(),
                    key: key.clone(),
                    limit,
                    max: max.get(),
                    used: used.get(&(subject, tool.clone(), limit)).copied().unwrap_or(0),
                });
            }
        };
        row(tenant.id, Scope::Tenant, None, &tenant.limits);
        for (name, limits) in &tenant.tool_limits {
            row(tenant.id, Scope::Tool(name.clone()), None, limits);
        }
        for (_, key) in keys.iter().filter(|(owner, _)| *owner == tenant.id) {
            row(key.id, Scope::Key, Some(format!("{} ({}…)", key.name, key.prefix)), &key.limits);
        }
    }
    Ok(rows)
}

pub async fn create(services: &Services, owner: &Owner, slug: &TenantSlug, name: &str) -> Result<Tenant> {
    store::tenants::create(&services.pool, owner.actor(), slug, name).await
}

/// Changes what `update` sets; only an owner may set the ceiling and the limits.
pub async fn update(services: &Services, tenant: &ManagedTenant<'_>, update: TenantUpdate) -> Result<Tenant> {
    if update.owners_only() {
        tenant.owner()?;
    }
    store::tenants::update(&services.pool, tenant.actor(), tenant.slug(), update).await
}

/// Deletes the tenant with its keys and choices; only an owner may.
pub async fn delete(services: &Services, tenant: &ManagedTenant<'_>) -> Result<()> {
    let owner = tenant.owner()?;
    store::tenants::delete(&services.pool, owner.actor(), tenant.slug()).await
}

/// Turns `group` on or off for the tenant; `None` follows the group's default.
pub async fn set_group(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    group: &Name,
    active: Option<bool>,
) -> Result<()> {
    store::tenants::set_group(&services.pool, tenant.actor(), tenant.slug(), group, active).await
}

/// Sets the tenant's override of a tool it may use; any other tool is answered as unknown.
pub async fn set_override(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    tool_id: Uuid,
    input: &OverrideInput,
) -> Result<Override> {
    if let Some(name) = &input.name {
        refuse_taken_name(services, tenant, tool_id, name)?;
    }
    let (pool, secrets) = (&services.pool, &services.secrets);
    store::overrides::set(
        pool,
        secrets,
        tenant.actor(),
        tenant.slug(),
        tool_id,
        input,
        catalog::check_presets,
    )
    .await
}

/// A rename to a name another of the tenant's tools goes by (or that several already claim)
/// would take both out of its list: refused, naming the tool that has it.
fn refuse_taken_name(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    tool_id: Uuid,
    name: &str,
) -> Result<()> {
    let snapshot = services.catalog.snapshot();
    let Some(view) = snapshot.tenant(tenant.slug().as_str()) else { return Ok(()) };
    if let Some(other) = view.resolve(name).filter(|other| other.tool_id != tool_id) {
        return Err(crate::Error::Invalid(format!(
            "`{name}` is the name of `{}` of server `{}` for this tenant already: two tools of one name are \
             both left out of its list; choose another",
            other.upstream_name, other.source_name
        )));
    }
    if view
        .conflicts
        .iter()
        .any(|conflict| conflict.exposed_name == name && !conflict.tool_ids.contains(&tool_id))
    {
        return Err(crate::Error::Invalid(format!(
            "`{name}` is claimed by several of this tenant's tools already, none of them served; choose another"
        )));
    }
    Ok(())
}

/// Sets the tenant's choice for a prompt, resource or template of a server it may use; any
/// other is answered as unknown. A prompt's new name must be free among the tenant's prompts.
pub async fn set_item_override(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    item: &ItemRef,
    input: &ItemOverrideInput,
) -> Result<ItemOverride> {
    if let Some(name) = &input.name {
        let snapshot = services.catalog.snapshot();
        let items =
            snapshot.tenant(tenant.slug().as_str()).map(|view| view.items.clone()).unwrap_or_default();
        let other = items
            .prompt(name)
            .filter(|other| other.source_name != item.server.as_str() || other.key != item.key);
        let claimed = items.conflicts.iter().any(|c| c.kind == ItemKind::Prompt && c.exposed == *name);
        if let Some(other) = other {
            return Err(crate::Error::Invalid(format!(
                "`{name}` is the name of prompt `{}` of server `{}` for this tenant already: two prompts of one name \
                 are both left out of its list; choose another",
                other.key, other.source_name
            )));
        }
        if claimed {
            return Err(crate::Error::Invalid(format!(
                "`{name}` is claimed by several of this tenant's prompts already, none of them served; choose another"
            )));
        }
    }
    store::item_overrides::set(&services.pool, tenant.actor(), tenant.slug(), item, input).await
}

/// Removes the tenant's choice for an item: it is served as its server lists it.
pub async fn clear_item_override(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    item: &ItemRef,
) -> Result<()> {
    store::item_overrides::clear(&services.pool, tenant.actor(), tenant.slug(), item).await
}

/// Enables or disables `tools` for the tenant, each keeping the rest of its override (name,
/// description, timeout, presets, stored secret presets).
pub async fn set_enabled(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    tools: &[Uuid],
    enabled: bool,
) -> Result<()> {
    for &tool_id in tools {
        let kept = store::overrides::get(&services.pool, tenant.slug(), tool_id).await?;
        let input = match kept {
            Some(o) => OverrideInput {
                enabled: Some(enabled),
                name: o.name,
                description: o.description,
                timeout_ms: o.timeout_ms,
                presets: o.presets,
                secret_presets: o.secret_presets.into_iter().map(|name| (name, SecretInput::SET)).collect(),
            },
            None => OverrideInput { enabled: Some(enabled), ..Default::default() },
        };
        set_override(services, tenant, tool_id, &input).await?;
    }
    Ok(())
}

pub async fn clear_override(services: &Services, tenant: &ManagedTenant<'_>, tool_id: Uuid) -> Result<()> {
    store::overrides::clear(&services.pool, tenant.actor(), tenant.slug(), tool_id).await
}

/// The tenant's API keys (their prefixes, never the keys).
pub async fn keys(services: &Services, tenant: &ManagedTenant<'_>) -> Result<Vec<ApiKey>> {
    store::keys::list(&services.pool, tenant.slug()).await
}

/// A new API key, and the key itself: the only time it is shown. Its limits are the creator's
/// choice, a tenant administrator's too: the tenant's own limits, which only owners set, bound
/// every key's calls.
pub async fn create_key(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    name: &str,
    expires_at: Option<time::OffsetDateTime>,
    limits: CallLimits,
) -> Result<(ApiKey, String)> {
    store::keys::create(&services.pool, tenant.actor(), tenant.slug(), name, expires_at, limits).await
}

/// Sets the limits on an active key's calls. An owner sets any; a tenant administrator (or a
/// tenant's token) only tightens them: each limit the key has stays, no higher, so a limit an
/// owner set can never be loosened but by an owner.
pub async fn set_key_limits(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    id: Uuid,
    limits: CallLimits,
) -> Result<ApiKey> {
    let owner = tenant.owner().is_ok();
    store::keys::set_limits(&services.pool, tenant.actor(), tenant.slug(), id, limits, owner).await
}

pub async fn revoke_key(services: &Services, tenant: &ManagedTenant<'_>, id: Uuid) -> Result<()> {
    store::keys::revoke(&services.pool, tenant.actor(), tenant.slug(), id).await
}

/// A test invocation of one of the tenant's tools, recorded as the administrator's; what the
/// call sends its caller (progress, questions, log messages) goes to `hooks`. Dropping the
/// future cancels the call.
pub async fn invoke(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    request: CallRequest,
    hooks: CallHooks,
) -> Result<CallResult> {
    let view = view(services, tenant)?;
    // Recorded before it runs (a run that never ends was still asked for), with its arguments
    // bounded as the call's own record keeps them.
    let what =
        serde_json::json!({"tool": request.name, "arguments": crate::exec::keepable(&request.arguments)});
    let change = store::Change::new("test_call", "tenant", tenant.slug()).after(&what);
    store::record(&services.pool, tenant.actor(), &change).await?;
    services.executor.call_in(&view, &tenant.caller(), request, hooks).await
}

/// A tool a search found for a tenant.
#[derive(Debug, Clone, Serialize)]
pub struct FoundTool {
    /// Its exposed name.
    pub name: String,
    pub server: String,
    pub description: String,
    /// The BM25 score: higher is better; comparable within one search only.
    pub score: f32,
    /// The schema the tenant's LLM sees (presets removed).
    pub input_schema: JsonText,
}

/// The `count` (at most [`catalog::MAX_FOUND`]) tools of the tenant that match `query` best,
/// best first ([`TenantTools::find`]).
pub async fn search(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    query: &str,
    count: usize,
) -> Result<Vec<FoundTool>> {
    let found = view(services, tenant)?.find(query.to_string(), count).await?;
    Ok(found
        .into_iter()
        .map(|(tool, score)| FoundTool {
            name: tool.exposed_name.clone(),
            server: tool.source_name.clone(),
            description: tool.description.clone(),
            score,
            input_schema: tool.input_schema.clone(),
        })
        .collect())
}

/// The tenant's view of the catalog, for its prompts, resources and searches.
fn view(services: &Services, tenant: &ManagedTenant<'_>) -> Result<Arc<TenantTools>> {
    let snapshot = services.catalog.snapshot();
    let view = snapshot.tenant(tenant.slug().as_str()).cloned();
    view.ok_or_else(|| Missing::Tenant(tenant.slug().to_string()).into())
}

/// A test `prompts/get` of one of the tenant's prompts, as the administrator.
pub async fn get_prompt(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<GetPromptResult> {
    services.executor.get_prompt(&*view(services, tenant)?, &tenant.caller(), name, arguments).await
}

/// A test `resources/read` of one of the tenant's resources, as the administrator.
pub async fn read_resource(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    uri: &str,
) -> Result<ReadResourceResult> {
    services.executor.read_resource(&*view(services, tenant)?, &tenant.caller(), uri).await
}

/// What the server of one of the tenant's prompts completes `value` of its `argument` to,
/// given the `others` filled already, for the administrator.
pub async fn complete_prompt_argument(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    prompt: &str,
    (argument, value): (&str, &str),
    others: HashMap<String, String>,
) -> Result<Vec<String>> {
    let mut params =
        CompleteRequestParams::new(Reference::for_prompt(prompt), ArgumentInfo::new(argument, value));
    params.context = Some(CompletionContext::with_arguments(others));
    let completed = services.executor.complete(&*view(services, tenant)?, &tenant.caller(), params).await?;
    Ok(completed.completion.values)
}

/// The tenant's newest test invocations (the playground's history), newest first.
/// The servers that take an account per tenant, with this tenant's authorization of each:
/// what its administrators authorize (through [`crate::upstream::connect_link`]).
pub async fn upstream_accounts(
    services: &Services,
    tenant: &ManagedTenant<'_>,
) -> Result<Vec<store::authorizations::Connectable>> {
    store::authorizations::tenant_connectable(&services.pool, tenant.slug().as_str()).await
}

pub async fn test_runs(services: &Services, tenant: &ManagedTenant<'_>) -> Result<Vec<TestRun>> {
    store::invocations::test_runs(&services.pool, tenant.slug().as_str(), 20).await
}

/// The tenant in full; to a tenant administrator, only the groups its ceiling admits and the
/// overrides of tools it may use.
pub async fn detail(services: &Services, managed: &ManagedTenant<'_>) -> Result<TenantDetail> {
    let (pool, catalog, slug) = (&services.pool, &services.catalog, managed.slug());
    let tenant = store::tenants::get(pool, slug).await?;
    let mut groups = store::tenants::group_activations(pool, slug).await?;
    let mut overrides = store::overrides::list(pool, slug).await?;
    let mut item_overrides = store::item_overrides::list(pool, slug).await?;
    if managed.owner().is_err() {
        groups.retain(|group| tenant.ceiling.admits_group(&group.group));
        let usable: HashSet<Uuid> = store::sources::tools(pool)
            .await?
            .into_iter()
            .filter(|tool| tenant.may_use(tool.tenant_id, &tool.source, &tool.tags))
            .map(|tool| tool.id)
            .collect();
        overrides.retain(|o| usable.contains(&o.tool_id));
        let servers: HashSet<String> = store::sources::list(pool)
            .await?
            .into_iter()
            .filter(|source| tenant.may_use(source.tenant_id, &source.name, &source.tags))
            .map(|source| source.name)
            .collect();
        item_overrides.retain(|o| servers.contains(&o.server));
    }
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
        meta_tool: view.and_then(|view| view.meta_tool_definition()).map(|definition| MetaTool {
            name: crate::catalog::META_TOOL,
            description: definition["description"].as_str().unwrap_or_default().to_string(),
            approx_tokens: definition.to_string().len().div_ceil(4),
        }),
        items: view.map(|view| effective_items(&view.items)).unwrap_or_default(),
        item_conflicts: view.map(|view| view.items.conflicts.clone()).unwrap_or_default(),
        item_overrides,
        snapshot_version: snapshot.version,
    })
}

/// What an administrator chooses from for a tenant. An owner's choices name every tool and
/// shared source; a tenant administrator's only those the tenant may use.
#[derive(Debug, Clone, Serialize)]
pub struct TenantChoices {
    /// The tools the tenant may use (its own and the shared ones its ceiling admits).
    pub usable: Vec<ToolRecord>,
    /// The tags its tag whitelist may name: those its usable tools carry, the default tags
    /// and its own, within its ceiling.
    pub tags: Vec<String>,
    /// The shared sources a ceiling may name (to a tenant administrator, those with a tool the
    /// tenant may use).
    pub shared_sources: Vec<String>,
    pub default_tags: Vec<String>,
    /// The tools' default exposed names, by id (for naming overrides and conflicts): every
    /// tool's, or to a tenant administrator those the tenant may use.
    pub names: HashMap<Uuid, String>,
}

/// What `tenant` can be given.
pub async fn choices(services: &Services, tenant: &ManagedTenant<'_>) -> Result<TenantChoices> {
    let stored = store::tenants::get(&services.pool, tenant.slug()).await?;
    let default_tags = store::settings::get(&services.pool).await?.default_tags;
    let mut tools = store::sources::tools(&services.pool).await?;
    if tenant.owner().is_err() {
        tools.retain(|tool| stored.may_use(tool.tenant_id, &tool.source, &tool.tags));
    }
    let names = tools.iter().map(|tool| (tool.id, tool.exposed_name.clone())).collect();
    let mut shared_sources: Vec<String> =
        tools.iter().filter(|tool| tool.tenant_id.is_none()).map(|tool| tool.source.clone()).collect();
    shared_sources.sort();
    shared_sources.dedup();
    let usable: Vec<ToolRecord> =
        tools.into_iter().filter(|tool| stored.may_use(tool.tenant_id, &tool.source, &tool.tags)).collect();
    let mut tags: Vec<String> = usable.iter().flat_map(|tool| tool.tags.iter().cloned()).collect();
    tags.extend(default_tags.iter().cloned());
    tags.extend(stored.enabled_tags.iter().flatten().cloned());
    if let Some(allowed) = &stored.ceiling.tags {
        tags.retain(|tag| allowed.contains(tag));
    }
    tags.sort();
    tags.dedup();
    Ok(TenantChoices { usable, tags, shared_sources, default_tags, names })
}
