//! The owners' global configuration and oversight: the configuration document, settings, tool
//! groups, admin tokens, the audit log and recent activity.

pub use crate::store::audit::AuditFilter;
pub use crate::store::invocations::{Latency, LossReason, Window};
pub use crate::store::retention::{Retention, keep as keep_pruning};
pub use crate::store::tokens::{Grant as TokenGrant, NewToken, authenticate as authenticate_token};

use uuid::Uuid;

use super::{Admin, Owner, Services};
use crate::Result;
use crate::admin::Scope;
use crate::config::{self, Document};
use crate::model::{Name, Tag};
use crate::store;
use crate::store::audit::AuditEvent;
use crate::store::groups::Group;
use crate::store::invocations::Activity;
use crate::store::item_overrides::ItemRef;
use crate::store::items::OfferedItem;
use crate::store::settings::Settings;
use crate::store::tokens::AdminToken;

/// The whole configuration, secrets as `{set: true}`.
pub async fn export_config(services: &Services, _: &Owner) -> Result<Document> {
    config::export(&services.pool).await
}

/// Applies `document` as the whole configuration in one transaction, or with `dry_run` only
/// says what would change. Every stdio server in it must name a program
/// `TOOLGATE_STDIO_COMMANDS` allows.
pub async fn apply_config(
    services: &Services,
    owner: &Owner,
    document: &Document,
    dry_run: bool,
) -> Result<Vec<config::Change>> {
    document.check_stdio_commands(services.upstreams.stdio_commands())?;
    config::apply(&services.pool, &services.secrets, owner.actor(), document, dry_run).await
}

pub async fn settings(services: &Services, _: &Owner) -> Result<Settings> {
    store::settings::get(&services.pool).await
}

pub async fn update_settings(
    services: &Services,
    owner: &Owner,
    tools_enabled: bool,
    default_tags: &[Tag],
) -> Result<Settings> {
    store::settings::update(&services.pool, owner.actor(), tools_enabled, default_tags).await
}

pub async fn groups(services: &Services, _: &Owner) -> Result<Vec<Group>> {
    store::groups::list(&services.pool).await
}

/// Creates the group, or (with `replace`) updates its description and default; without it, a
/// group of that name is refused, never changed.
pub async fn put_group(
    services: &Services,
    owner: &Owner,
    name: &Name,
    description: &str,
    active_by_default: bool,
    replace: bool,
) -> Result<Group> {
    store::groups::write(&services.pool, owner.actor(), name, description, active_by_default, replace).await
}

pub async fn delete_group(services: &Services, owner: &Owner, name: &Name) -> Result<()> {
    store::groups::delete(&services.pool, owner.actor(), name).await
}

/// Makes the group's members exactly `tools`.
pub async fn set_members(services: &Services, owner: &Owner, name: &Name, tools: &[Uuid]) -> Result<()> {
    store::groups::set_members(&services.pool, owner.actor(), name, tools).await
}

/// Every group's prompts, resources and templates, by group name.
pub async fn group_items(services: &Services, _: &Owner) -> Result<Vec<(String, ItemRef)>> {
    store::groups::item_members(&services.pool).await
}

/// The group's prompts, resources and templates.
pub async fn items_of_group(services: &Services, _: &Owner, name: &Name) -> Result<Vec<ItemRef>> {
    let group = store::groups::get(&services.pool, name).await?;
    let all = store::groups::item_members(&services.pool).await?;
    Ok(all.into_iter().filter(|(g, _)| *g == group.name).map(|(_, item)| item).collect())
}

/// Makes the group's prompts, resources and templates exactly `items`.
pub async fn set_item_members(
    services: &Services,
    owner: &Owner,
    name: &Name,
    items: &[ItemRef],
) -> Result<()> {
    store::groups::set_item_members(&services.pool, owner.actor(), name, items).await
}

/// Every prompt, resource and template the servers offer, by server, kind and key.
pub async fn offered_items(services: &Services, _: &Owner) -> Result<Vec<OfferedItem>> {
    store::items::offered(&services.pool).await
}

/// Adds `tools` to the group, keeping its members; how many were new.
pub async fn add_members(services: &Services, owner: &Owner, name: &Name, tools: &[Uuid]) -> Result<u64> {
    store::groups::add_members(&services.pool, owner.actor(), name, tools).await
}

pub async fn tokens(services: &Services, _: &Owner) -> Result<Vec<AdminToken>> {
    store::tokens::list(&services.pool).await
}

/// A new admin token, and the token itself: the only time it is shown.
pub async fn create_token(
    services: &Services,
    owner: &Owner,
    new: &NewToken,
) -> Result<(AdminToken, String)> {
    store::tokens::create(&services.pool, owner.actor(), new).await
}

pub async fn revoke_token(services: &Services, owner: &Owner, id: Uuid) -> Result<AdminToken> {
    store::tokens::revoke(&services.pool, owner.actor(), id).await
}

/// The audit events matching `filter` that `admin` may see: every one for an owner, a
/// tenant administrator those of their tenants.
pub async fn audit(services: &Services, admin: &Admin, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
    let tenants = match admin.scope() {
        Scope::Everything => None,
        Scope::Tenants(slugs) => Some(slugs.clone()),
    };
    store::audit::list(&services.pool, &AuditFilter { tenants, ..filter.clone() }).await
}

/// The calls of `window` that `admin` may see: of `tenant` alone when given (one of theirs),
/// else of every tenant in their scope.
pub async fn activity(
    services: &Services,
    admin: &Admin,
    window: Window,
    tenant: Option<&str>,
) -> Result<Activity> {
    let tenants = match (tenant, admin.scope()) {
        (Some(slug), _) => Some(vec![admin.tenant(slug)?.slug().to_string()]),
        (None, Scope::Everything) => None,
        (None, Scope::Tenants(slugs)) => Some(slugs.clone()),
    };
    store::invocations::activity(&services.pool, window, tenants.as_deref(), None).await
}
