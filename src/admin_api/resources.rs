//! The resources the panel manages: settings, tenants (tags, groups, overrides, keys, the
//! effective tool list), servers (health, refresh, test connection, pending definitions),
//! the tool catalog, groups, and the audit log.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post, put};
use axum::{Extension, Json, Router};
use engine::model::CallLimits;
use engine::model::Ceiling;
use engine::model::{Tag, TenantSlug};
use engine::service::SecretInput;
use engine::service::global::AuditFilter;
use engine::service::servers::ServerConfig;
use engine::service::tenants::OverrideInput;
use engine::service::tenants::{ItemOverrideInput, ItemRef};
use engine::service::tenants::{TenantUpdate, ToolDiscovery};
use engine::service::{Admin, Services, global, servers, tenants};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use uuid::Uuid;

use super::{Answer, Failure, name, tenant_slug};
use crate::gateway::{Body, problem};

pub(super) fn router() -> Router<Services> {
    Router::new()
        .route("/api/admin/v1/settings", get(settings).put(update_settings))
        .route("/api/admin/v1/tenants", get(tenants).post(create_tenant))
        .route("/api/admin/v1/tenants/{slug}", get(tenant).patch(update_tenant).delete(delete_tenant))
        .route("/api/admin/v1/tenants/{slug}/groups/{group}", put(set_group))
        .route("/api/admin/v1/tenants/{slug}/tools/{id}", put(set_override).delete(clear_override))
        .route("/api/admin/v1/tenants/{slug}/items", put(set_item_override).delete(clear_item_override))
        .route("/api/admin/v1/servers", get(servers).post(create_server))
        .route("/api/admin/v1/servers/test", post(test_server))
        .route("/api/admin/v1/servers/{name}", get(server).put(update_server).delete(delete_server))
        .route("/api/admin/v1/servers/{name}/refresh", post(refresh_server))
        .route("/api/admin/v1/servers/{name}/credentials/{slug}", put(set_credentials))
        .route("/api/admin/v1/servers/{name}/authorizations", get(authorizations))
        .route("/api/admin/v1/servers/{name}/authorizations/{id}", delete(remove_authorization))
        .route("/api/admin/v1/servers/{name}/prompts/{prompt}/approve", post(approve_prompt))
        .route("/api/admin/v1/servers/{name}/prompts/{prompt}/reject", post(reject_prompt))
        .route("/api/admin/v1/tools", get(tools))
        .route("/api/admin/v1/tools/{id}/approve", post(approve))
        .route("/api/admin/v1/tools/{id}/reject", post(reject))
        .route("/api/admin/v1/groups", get(groups))
        .route("/api/admin/v1/groups/{name}", put(put_group).delete(delete_group))
        .route("/api/admin/v1/groups/{name}/tools", put(set_members))
        .route("/api/admin/v1/groups/{name}/items", get(group_items).put(set_item_members))
        .route("/api/admin/v1/audit", get(audit))
}

pub(super) fn ok(value: impl serde::Serialize) -> Answer {
    Ok(Json(value).into_response())
}

pub(super) fn created(value: impl serde::Serialize) -> Answer {
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

pub(super) fn no_content() -> Answer {
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn settings(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(global::settings(&state, &admin.owner()?).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsInput {
    tools_enabled: bool,
    #[serde(default)]
    default_tags: Vec<Tag>,
}

async fn update_settings(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(body): Body<SettingsInput>,
) -> Answer {
    ok(global::update_settings(&state, &admin.owner()?, body.tools_enabled, &body.default_tags).await?)
}

async fn tenants(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(tenants::list(&state, &admin).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTenant {
    slug: TenantSlug,
    name: String,
}

async fn create_tenant(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(body): Body<NewTenant>,
) -> Answer {
    created(tenants::create(&state, &admin.owner()?, &body.slug, &body.name).await?)
}

/// A tenant with everything the panel shows of it, including exactly what its LLM sees.
async fn tenant(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
) -> Answer {
    ok(tenants::detail(&state, &admin.tenant(&slug)?).await?)
}

/// A tenant edit: fields left out stay; `enabled_tags: null` returns to the default tags.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantEdit {
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    enabled_tags: Option<Option<Vec<Tag>>>,
    meta_tool: Option<bool>,
    /// The owner's limit on the tags, sources and groups the tenant may use.
    ceiling: Option<Ceiling>,
    /// The owner's limits on all of the tenant's calls.
    limits: Option<CallLimits>,
    /// The owner's limits on single tools' calls, by default exposed name (the whole map).
    tool_limits: Option<BTreeMap<String, CallLimits>>,
    /// The owner's limits on each signed-in person's calls.
    user_limits: Option<CallLimits>,
    /// Whether the gateway accepts the tenant's API keys, and people's access tokens.
    api_keys: Option<bool>,
    oauth: Option<bool>,
    /// The owner's switch: a disabled tenant is served nothing.
    enabled: Option<bool>,
    /// MCP clients get portable (normalised) schemas instead of the schemas as published.
    portable_mcp_schemas: Option<bool>,
    /// How the tools reach the LLM: `list` or `search`.
    tool_discovery: Option<ToolDiscovery>,
    /// With `search`: the tools listed all the same, by default exposed name (the whole list).
    pinned_tools: Option<Vec<String>>,
}

/// Tells a key given as `null` (`Some(None)`) from a key left out (`None`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

async fn update_tenant(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
    Body(body): Body<TenantEdit>,
) -> Answer {
    let update = TenantUpdate {
        name: body.name,
        enabled_tags: body.enabled_tags,
        meta_tool: body.meta_tool,
        ceiling: body.ceiling,
        limits: body.limits,
        tool_limits: body.tool_limits,
        user_limits: body.user_limits,
        api_keys: body.api_keys,
        oauth: body.oauth,
        enabled: body.enabled,
        portable_mcp_schemas: body.portable_mcp_schemas,
        tool_discovery: body.tool_discovery,
        pinned_tools: body.pinned_tools,
    };
    ok(tenants::update(&state, &admin.tenant(&slug)?, update).await?)
}

async fn delete_tenant(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
) -> Answer {
    tenants::delete(&state, &admin.tenant(&slug)?).await?;
    no_content()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Activation {
    /// `null` returns to the group's default.
    active: Option<bool>,
}

async fn set_group(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, group)): Path<(String, String)>,
    Body(body): Body<Activation>,
) -> Answer {
    tenants::set_group(&state, &admin.tenant(&slug)?, &name(&group)?, body.active).await?;
    no_content()
}

async fn set_override(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, id)): Path<(String, Uuid)>,
    Body(body): Body<OverrideInput>,
) -> Answer {
    ok(tenants::set_override(&state, &admin.tenant(&slug)?, id, &body).await?)
}

async fn clear_override(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((slug, id)): Path<(String, Uuid)>,
) -> Answer {
    tenants::clear_override(&state, &admin.tenant(&slug)?, id).await?;
    no_content()
}

/// `PUT /api/admin/v1/tenants/{slug}/items?server=…&kind=…&key=…`: the tenant's choice for
/// one prompt, resource or template of a server.
async fn set_item_override(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
    Query(item): Query<ItemRef>,
    Body(body): Body<ItemOverrideInput>,
) -> Answer {
    ok(tenants::set_item_override(&state, &admin.tenant(&slug)?, &item, &body).await?)
}

async fn clear_item_override(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
    Query(item): Query<ItemRef>,
) -> Answer {
    tenants::clear_item_override(&state, &admin.tenant(&slug)?, &item).await?;
    no_content()
}

/// `GET /api/admin/v1/tenants/{slug}/keys`: the tenant's keys (prefixes, never the keys).
pub(super) async fn list_keys(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(slug): Path<String>,
) -> Answer {
    ok(tenants::keys(&state, &admin.tenant(&slug)?).await?)
}

/// Every server with the health of its connections in this process.
async fn servers(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(servers::list(&state, &admin.owner()?).await?)
}

async fn create_server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(body): Body<ServerConfig>,
) -> Answer {
    created(servers::create(&state, &admin.owner()?, &body).await?)
}

/// A server, its connections, its tools and the definition changes awaiting approval.
async fn server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(server): Path<String>,
) -> Answer {
    ok(servers::detail(&state, &admin.owner()?, &name(&server)?).await?)
}

async fn update_server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(server): Path<String>,
    Body(body): Body<ServerConfig>,
) -> Answer {
    if body.name.as_str() != server {
        let detail = "the body's name must be the server's; rename by creating a new server";
        return Err(Failure::new(problem(StatusCode::UNPROCESSABLE_ENTITY, "invalid", detail)));
    }
    ok(servers::update(&state, &admin.owner()?, &body).await?)
}

async fn delete_server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(server): Path<String>,
) -> Answer {
    servers::delete(&state, &admin.owner()?, &name(&server)?).await?;
    no_content()
}

/// Discovers the server's tools now.
async fn refresh_server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(server): Path<String>,
) -> Answer {
    ok(servers::refresh(&state, &admin.owner()?, &name(&server)?).await?)
}

/// Connects to a server that is not saved yet: its info and tool count, or what failed.
async fn test_server(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Body(body): Body<ServerConfig>,
) -> Answer {
    match servers::probe(&state, &admin.owner()?, &body).await? {
        Ok(probe) => ok(json!({
            "ok": true,
            "server_info": probe.server_info,
            "tool_count": probe.tools.len(),
            "tools": probe.tools,
            "authorization_server": probe.authorization_server,
        })),
        Err(err) => ok(json!({"ok": false, "error": err.to_string()})),
    }
}

async fn set_credentials(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((server, slug)): Path<(String, String)>,
    Body(headers): Body<BTreeMap<String, SecretInput>>,
) -> Answer {
    let (server, slug) = (name(&server)?, tenant_slug(&slug)?);
    servers::set_credentials(&state, &admin.owner()?, &server, &slug, &headers).await?;
    no_content()
}

/// Who authorized an OAuth server, and how each token is doing (never a token).
async fn authorizations(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(server): Path<String>,
) -> Answer {
    ok(servers::authorizations(&state, &admin.owner()?, &name(&server)?).await?)
}

async fn remove_authorization(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((server, id)): Path<(String, Uuid)>,
) -> Answer {
    servers::remove_authorization(&state, &admin.owner()?, &name(&server)?, id).await?;
    no_content()
}

async fn tools(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(servers::tools(&state, &admin.owner()?).await?)
}

async fn approve(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(id): Path<Uuid>,
) -> Answer {
    servers::approve(&state, &admin.owner()?, id).await?;
    no_content()
}

async fn reject(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(id): Path<Uuid>,
) -> Answer {
    servers::reject(&state, &admin.owner()?, id).await?;
    no_content()
}

async fn approve_prompt(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((server, prompt)): Path<(String, String)>,
) -> Answer {
    servers::approve_prompt(&state, &admin.owner()?, &name(&server)?, &prompt).await?;
    no_content()
}

async fn reject_prompt(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path((server, prompt)): Path<(String, String)>,
) -> Answer {
    servers::reject_prompt(&state, &admin.owner()?, &name(&server)?, &prompt).await?;
    no_content()
}

async fn groups(State(state): State<Services>, Extension(admin): Extension<Admin>) -> Answer {
    ok(global::groups(&state, &admin.owner()?).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupInput {
    #[serde(default)]
    description: String,
    #[serde(default = "yes")]
    active_by_default: bool,
}

fn yes() -> bool {
    true
}

async fn put_group(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(group): Path<String>,
    Body(body): Body<GroupInput>,
) -> Answer {
    let group = name(&group)?;
    ok(global::put_group(&state, &admin.owner()?, &group, &body.description, body.active_by_default, true)
        .await?)
}

async fn delete_group(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(group): Path<String>,
) -> Answer {
    global::delete_group(&state, &admin.owner()?, &name(&group)?).await?;
    no_content()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Members {
    tools: Vec<Uuid>,
}

async fn set_members(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(group): Path<String>,
    Body(body): Body<Members>,
) -> Answer {
    global::set_members(&state, &admin.owner()?, &name(&group)?, &body.tools).await?;
    no_content()
}

/// `GET /api/admin/v1/groups/{name}/items`: the group's prompts, resources and templates.
async fn group_items(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(group): Path<String>,
) -> Answer {
    ok(global::items_of_group(&state, &admin.owner()?, &name(&group)?).await?)
}

/// `PUT /api/admin/v1/groups/{name}/items` `[{server, kind, key}]`.
async fn set_item_members(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Path(group): Path<String>,
    Body(items): Body<Vec<ItemRef>>,
) -> Answer {
    global::set_item_members(&state, &admin.owner()?, &name(&group)?, &items).await?;
    no_content()
}

async fn audit(
    State(state): State<Services>,
    Extension(admin): Extension<Admin>,
    Query(filter): Query<AuditFilter>,
) -> Answer {
    ok(global::audit(&state, &admin, &filter).await?)
}
