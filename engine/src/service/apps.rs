//! Connected apps: the clients people authorized (OAuth grants). Each person sees and revokes
//! their own; a tenant's administrators see and revoke every one of the tenant's; owners
//! register clients that cannot register themselves.

pub use crate::store::oauth::{ClientKind, Grant};

use uuid::Uuid;

use super::Services;
use super::access::{ManagedTenant, Owner};
use crate::admin::AdminUser;
use crate::store::authorizations::Connectable;
use crate::store::oauth::Client;
use crate::store::{self, Actor};
use crate::{Error, Result};

/// The apps `account` authorized, for every tenant.
pub async fn mine(services: &Services, account: &AdminUser) -> Result<Vec<Grant>> {
    store::oauth::grants(&services.pool, Some(account.id), None).await
}

/// The tenants `account` may connect apps to (those that accept OAuth).
pub async fn tenants_of(services: &Services, account: &AdminUser) -> Result<Vec<String>> {
    services.oauth.tenants_for(account).await
}

/// Revokes one of `account`'s apps: its tokens stop working on every replica at once.
pub async fn revoke_mine(services: &Services, account: &AdminUser, grant: Uuid) -> Result<()> {
    let actor = Actor::admin(&account.username);
    if !store::oauth::revoke_grant(&services.pool, &actor, grant, Some(account.id), None).await? {
        return Err(Error::not_found("connected app"));
    }
    services.oauth.revoked();
    Ok(())
}

/// Every app authorized for the tenant, by anyone.
pub async fn of_tenant(services: &Services, tenant: &ManagedTenant<'_>) -> Result<Vec<Grant>> {
    let id = store::tenants::get(&services.pool, tenant.slug()).await?.id;
    store::oauth::grants(&services.pool, None, Some(id)).await
}

/// Revokes an app authorized for the tenant.
pub async fn revoke_of_tenant(services: &Services, tenant: &ManagedTenant<'_>, grant: Uuid) -> Result<()> {
    let id = store::tenants::get(&services.pool, tenant.slug()).await?.id;
    if !store::oauth::revoke_grant(&services.pool, tenant.actor(), grant, None, Some(id)).await? {
        return Err(Error::not_found("connected app"));
    }
    services.oauth.revoked();
    Ok(())
}

/// The clients owners registered.
pub async fn clients(services: &Services, _: &Owner) -> Result<Vec<Client>> {
    store::oauth::preregistered(&services.pool).await
}

/// Registers a client: its id, and its secret when `confidential` (shown only now).
pub async fn register_client(
    services: &Services,
    owner: &Owner,
    name: &str,
    redirect_uris: Vec<String>,
    confidential: bool,
) -> Result<(String, Option<String>)> {
    services.oauth.preregister(owner.actor(), name, redirect_uris, confidential).await
}

/// Removes a registered client with every grant and token it holds.
pub async fn delete_client(services: &Services, owner: &Owner, id: &str) -> Result<()> {
    if !store::oauth::delete_preregistered(&services.pool, owner.actor(), id).await? {
        return Err(Error::not_found(format!("client `{id}`")));
    }
    services.oauth.revoked();
    Ok(())
}

/// The per-person servers `account` may connect its own account of, with its authorizations.
pub async fn connectable(services: &Services, account: &AdminUser) -> Result<Vec<Connectable>> {
    let everything = account.role == crate::admin::Role::Owner;
    store::authorizations::connectable(&services.pool, account.id, everything).await
}

/// Disconnects one of `account`'s own upstream accounts.
pub async fn disconnect(services: &Services, account: &AdminUser, id: Uuid) -> Result<()> {
    let actor = Actor::admin(&account.username);
    if !store::authorizations::remove_own(&services.pool, &actor, account.id, id).await? {
        return Err(Error::not_found("connected account"));
    }
    Ok(())
}
