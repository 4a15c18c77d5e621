//! Upstream MCP servers, the owners': what is stored, how their connections are doing, and
//! what an owner does with them (register, change, test, refresh, approve definitions).

pub use crate::store::servers::{
    EnvValue, OAuthGrant, OAuthMode, OAuthSettings, OnDefinitionChange, Server, ServerConfig, Transport,
};
pub use crate::store::sources::ToolRecord;

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use serde::Serialize;
use uuid::Uuid;

use super::{Owner, Services};
use crate::Result;
use crate::catalog::TenantTools;
use crate::model::UpstreamError;
use crate::model::{Name, TenantSlug};
use crate::store::authorizations::Authorization;
use crate::store::invocations::{self, Activity, FailedCall, Window};
use crate::store::items::{ItemDefinition, ItemKind};
use crate::store::servers::{DiscoveryReport, PendingChange};
use crate::store::{self, SecretInput};
use crate::upstream::{self, Health, ServerProbe};

/// A server with the health of its connections (one, or one per tenant with credentials of
/// its own).
#[derive(Debug, Clone, Serialize)]
pub struct ServerEntry {
    pub server: Server,
    pub connections: Vec<Health>,
}

/// A server with its connections, its tools and the definition changes awaiting approval.
#[derive(Debug, Clone, Serialize)]
pub struct ServerDetail {
    #[serde(flatten)]
    pub entry: ServerEntry,
    pub tools: Vec<ToolRecord>,
    pub pending: Vec<PendingChange>,
    /// An OAuth server's authorizations: whose, how each token is doing (never a token).
    pub authorizations: Vec<Authorization>,
    /// Its prompts, resources and resource templates.
    pub items: Vec<ItemDefinition>,
}

/// Every server, with its connections.
pub async fn list(services: &Services, _: &Owner) -> Result<Vec<ServerEntry>> {
    let health = services.upstreams.health();
    let servers = store::servers::list(&services.pool).await?;
    Ok(servers.into_iter().map(|server| with_connections(server, &health)).collect())
}

/// The server `name` in full.
pub async fn detail(services: &Services, _: &Owner, name: &Name) -> Result<ServerDetail> {
    let server = store::servers::get(&services.pool, name).await?;
    let pending = store::servers::pending_changes(&services.pool, name).await?;
    let tools = store::sources::tools_of(&services.pool, name).await?;
    let authorizations = store::authorizations::list(&services.pool, Some(name), None).await?;
    let items = store::items::of_server(&services.pool, server.source.id).await?;
    let entry = with_connections(server, &services.upstreams.health());
    Ok(ServerDetail { entry, tools, pending, authorizations, items })
}

/// A server's settings, secrets as the names that are set.
pub async fn get(services: &Services, _: &Owner, name: &Name) -> Result<Server> {
    store::servers::get(&services.pool, name).await
}

fn with_connections(server: Server, health: &[Health]) -> ServerEntry {
    let connections = health.iter().filter(|h| h.server == server.source.name).cloned().collect();
    ServerEntry { server, connections }
}

/// Registers a server; a stdio one only with a program `TOOLGATE_STDIO_COMMANDS` allows.
pub async fn create(services: &Services, owner: &Owner, config: &ServerConfig) -> Result<Server> {
    upstream::check_server_command(services.upstreams.stdio_commands(), config)?;
    store::servers::create(&services.pool, &services.secrets, owner.actor(), config).await
}

/// Replaces a server's settings; secrets given as `{set: true}` keep their stored values, and
/// what tenants gave it is dropped when it moves to a new target. A stdio server keeps only a
/// program `TOOLGATE_STDIO_COMMANDS` allows.
pub async fn update(
    services: &Services,
    owner: &Owner,
    config: &ServerConfig,
) -> Result<store::servers::Updated> {
    upstream::check_server_command(services.upstreams.stdio_commands(), config)?;
    store::servers::update(&services.pool, &services.secrets, owner.actor(), config).await
}

/// Removes a server with its tools (and every tenant's choices about them).
pub async fn delete(services: &Services, owner: &Owner, name: &Name) -> Result<()> {
    store::sources::delete(&services.pool, owner.actor(), name).await
}

/// A disabled server's tools are served to nobody, and it is not connected.
pub async fn set_enabled(services: &Services, owner: &Owner, name: &Name, enabled: bool) -> Result<()> {
    store::sources::set_enabled(&services.pool, owner.actor(), name, enabled).await
}

/// The headers `tenant` connects to the server with instead of the server's own.
pub async fn set_credentials(
    services: &Services,
    owner: &Owner,
    server: &Name,
    tenant: &TenantSlug,
    headers: &BTreeMap<String, SecretInput>,
) -> Result<()> {
    store::servers::set_credentials(&services.pool, &services.secrets, owner.actor(), server, tenant, headers)
        .await
}

/// Connects to a server that is not saved: what it is and how many tools it has, or what
/// failed (an answer, not an error: it is what the owner asked to know). A stdio program
/// `TOOLGATE_STDIO_COMMANDS` does not allow is refused (an error), never started.
pub async fn probe(
    services: &Services,
    _: &Owner,
    config: &ServerConfig,
) -> Result<Result<ServerProbe, UpstreamError>> {
    services.upstreams.probe(config).await
}

/// The programs stdio servers may start (`TOOLGATE_STDIO_COMMANDS`); empty = any.
pub fn stdio_commands(services: &Services, _: &Owner) -> Vec<String> {
    services.upstreams.stdio_commands().to_vec()
}

/// The last hour of calls to a server, and its newest failures.
pub async fn calls(services: &Services, _: &Owner, name: &Name) -> Result<(Activity, Vec<FailedCall>)> {
    let activity = invocations::activity(&services.pool, Window::Hour, None, Some(name.as_str())).await?;
    Ok((activity, invocations::failures(&services.pool, name.as_str(), 5).await?))
}

/// Discovers the server's tools now.
pub async fn refresh(services: &Services, _: &Owner, name: &Name) -> Result<DiscoveryReport> {
    store::servers::get(&services.pool, name).await?;
    Ok(services.upstreams.refresh(name.as_str()).await?)
}

/// Serves the tool's pending definition from now on.
pub async fn approve(services: &Services, owner: &Owner, tool_id: Uuid) -> Result<()> {
    store::servers::approve(&services.pool, owner.actor(), tool_id).await
}

/// Keeps the tool's pinned definition (or keeps a new tool held).
pub async fn reject(services: &Services, owner: &Owner, tool_id: Uuid) -> Result<()> {
    store::servers::reject(&services.pool, owner.actor(), tool_id).await
}

/// Serves the server's prompt `prompt` as it is listed now.
pub async fn approve_prompt(services: &Services, owner: &Owner, server: &Name, prompt: &str) -> Result<()> {
    store::items::approve_prompt(&services.pool, owner.actor(), server, prompt).await
}

/// Keeps the prompt's pinned listing, holding the prompt until it is approved.
pub async fn reject_prompt(services: &Services, owner: &Owner, server: &Name, prompt: &str) -> Result<()> {
    store::items::reject_prompt(&services.pool, owner.actor(), server, prompt).await
}

/// Every tool of every source.
pub async fn tools(services: &Services, _: &Owner) -> Result<Vec<ToolRecord>> {
    store::sources::tools(&services.pool).await
}

/// The tenants whose LLMs see each tool now (from the live catalog).
pub fn seen_by(services: &Services, _: &Owner) -> HashMap<Uuid, Vec<String>> {
    seen(services, |view| view.tools().iter().map(|tool| tool.tool_id).collect())
}

/// The tenants whose clients see each prompt, resource and template now (from the live
/// catalog), by server, kind and the server's own key.
pub fn items_seen_by(services: &Services, _: &Owner) -> HashMap<(String, ItemKind, String), Vec<String>> {
    seen(services, |view| {
        let items = view.items.prompts().iter().chain(view.items.resources()).chain(view.items.templates());
        items.map(|item| (item.source_name.clone(), item.kind, item.key.clone())).collect()
    })
}

/// The tenants (sorted) whose view of the live catalog holds each of what `held` lists.
fn seen<K: Eq + Hash>(services: &Services, held: impl Fn(&TenantTools) -> Vec<K>) -> HashMap<K, Vec<String>> {
    let snapshot = services.catalog.snapshot();
    let mut seen: HashMap<K, Vec<String>> = HashMap::new();
    for view in snapshot.tenants() {
        for key in held(view) {
            seen.entry(key).or_default().push(view.slug.to_string());
        }
    }
    seen.values_mut().for_each(|slugs| slugs.sort());
    seen
}

/// Who authorized an OAuth server, and how each token is doing.
pub async fn authorizations(services: &Services, _: &Owner, name: &Name) -> Result<Vec<Authorization>> {
    store::authorizations::list(&services.pool, Some(name), None).await
}

/// Forgets one of a server's authorizations: its owner's calls need a new one.
pub async fn remove_authorization(services: &Services, owner: &Owner, name: &Name, id: Uuid) -> Result<()> {
    let found = store::authorizations::get(&services.pool, id).await?;
    if found.server != name.as_str() {
        return Err(crate::Error::not_found(format!("authorization {id} of server `{name}`")));
    }
    store::authorizations::remove(&services.pool, owner.actor(), id).await
}
