//! A tenant's members: the people who authorize MCP clients (agents) for it. Owners and the
//! tenant's administrators add them — with a password they give, or an invitation link the
//! person opens to choose one — disable them (their sessions and tokens stop at once), and
//! remove them (with every app they authorized for the tenant).

use serde::Serialize;
use time::OffsetDateTime;

use super::Services;
use super::access::ManagedTenant;
use crate::admin::{AdminUser, Password, PasswordHash, Username};
use crate::model::Role;
use crate::store::admins::MemberRow;
use crate::store::{self, Change};
use crate::{Error, Result};

/// How long an invitation link works.
pub const INVITE_DAYS: i64 = 7;

/// A tenant's accounts, as its member list shows them.
pub async fn list(services: &Services, tenant: &ManagedTenant<'_>) -> Result<Vec<MemberRow>> {
    let id = store::tenants::get(&services.pool, tenant.slug()).await?.id;
    store::admins::members(&services.pool, id).await
}

/// How a new member gets in.
pub enum Credential {
    /// A password the administrator gives the person.
    Password(String),
    /// A link the person opens to choose one.
    Invitation,
}

/// What adding a member gives back to show once.
#[derive(Debug, Clone, Serialize)]
pub struct Added {
    pub username: String,
    /// The invitation link's token (the link is `/invite/<token>`), when invited.
    pub invitation: Option<String>,
}

/// Adds `username` as a member of the tenant. An existing account is added only by an owner
/// (a tenant administrator may not reach into other tenants' people).
#[tracing::instrument(skip_all, err, fields(tenant = %tenant.slug(), username))]
pub async fn add(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    username: &str,
    credential: Credential,
) -> Result<Added> {
    let name = Username::parse(username.trim())?;
    passwords_on(services).await?;
    let password = match &credential {
        Credential::Password(password) => Some(PasswordHash::new(&Password::parse(password.clone())?).await),
        Credential::Invitation => None,
    };
    let mut tx = services.pool.begin().await?;
    let tenant_id = store::tenants::get(&mut *tx, tenant.slug()).await?.id;
    let existing = store::admins::role_of(&mut *tx, name.as_str()).await?;
    if let Some((id, _)) = existing
        && store::admins::members(&mut *tx, tenant_id).await?.iter().any(|m| m.id == id)
    {
        return Err(Error::Conflict(format!("`{}` is a member of this tenant already", name.as_str())));
    }
    let id = match existing {
        // Another tenant's member joins this one too (an administrator would become one here),
        // keeping how it signs in.
        Some((_, Role::Member)) if tenant.owner().is_ok() && password.is_some() => {
            return Err(Error::Conflict(format!(
                "`{}` exists already with its own way to sign in: add it without a password",
                name.as_str()
            )));
        }
        Some((id, Role::Member)) if tenant.owner().is_ok() => id,
        Some(_) => {
            return Err(Error::Conflict(format!(
                "an account named `{name}` exists already; choose another name",
                name = name.as_str()
            )));
        }
        None => {
            let id =
                store::admins::insert_without_password(&mut *tx, name.as_str(), Role::Member, None, None)
                    .await?
                    .ok_or_else(|| {
                        Error::Conflict(format!("an account named `{}` exists already", name.as_str()))
                    })?;
            if let Some(hash) = &password {
                store::admins::set_password_hash_of(&mut *tx, id, hash.as_str()).await?;
            }
            id
        }
    };
    store::admins::assign(&mut *tx, id, tenant_id).await?;
    let invitation = match (credential, existing) {
        (Credential::Invitation, None) => Some(invite_in(&mut tx, id).await?),
        _ => None,
    };
    let what = serde_json::json!({"username": name.as_str(), "tenant": tenant.slug(), "invited": invitation.is_some()});
    store::record(&mut *tx, tenant.actor(), &Change::new("add_member", "tenant", tenant.slug()).after(&what))
        .await?;
    tx.commit().await?;
    Ok(Added { username: name.as_str().to_string(), invitation })
}

/// Members choose passwords (given, or through an invitation) only while local passwords are
/// on; otherwise everyone but the break-glass owner signs in through the OpenID provider.
async fn passwords_on(services: &Services) -> Result<()> {
    if store::settings::sign_in(&services.pool).await?.local_passwords {
        return Ok(());
    }
    Err(Error::Invalid("passwords are turned off: members sign in through the OpenID provider".into()))
}

async fn invite_in(tx: &mut sqlx::PgTransaction<'_>, id: uuid::Uuid) -> Result<String> {
    let token = crate::secret::random_token("tgi_");
    let expires = OffsetDateTime::now_utc() + time::Duration::days(INVITE_DAYS);
    store::admins::invite(tx, id, &crate::secret::digest(&token), expires).await?;
    Ok(token)
}

/// The member `username` of this tenant, as its row; refuses accounts that are not a member
/// here, or whose role is above what a tenant's page manages (members only).
async fn member(
    tx: &mut sqlx::PgConnection,
    tenant: &ManagedTenant<'_>,
    username: &str,
) -> Result<(MemberRow, uuid::Uuid)> {
    let tenant_id = store::tenants::get(&mut *tx, tenant.slug()).await?.id;
    let not_member = || Error::not_found(format!("member `{username}` of this tenant"));
    let members = store::admins::members(&mut *tx, tenant_id).await?;
    let row = members.into_iter().find(|m| m.username == username).ok_or_else(not_member)?;
    if row.role != Role::Member {
        return Err(Error::Forbidden(format!(
            "`{username}` is a {}: only members are managed here (owners manage administrators)",
            row.role
        )));
    }
    Ok((row, tenant_id))
}

/// The same, for what acts on the whole account (its password, disabling it): refused when it
/// belongs to a tenant the caller does not manage too (that tenant's administrators' business
/// as well: only an owner acts on such an account).
async fn whole_account(
    tx: &mut sqlx::PgConnection,
    tenant: &ManagedTenant<'_>,
    username: &str,
) -> Result<MemberRow> {
    let (row, _) = member(&mut *tx, tenant, username).await?;
    if !tenant.manages_all(&store::admins::tenant_slugs(&mut *tx, row.id).await?) {
        return Err(Error::Forbidden(format!(
            "`{username}` is a member of other tenants too: an owner manages this account"
        )));
    }
    Ok(row)
}

/// A new invitation link for a member (the earlier ones stop working): how a member who forgot
/// their password gets back in.
pub async fn invite(services: &Services, tenant: &ManagedTenant<'_>, username: &str) -> Result<String> {
    passwords_on(services).await?;
    let mut tx = services.pool.begin().await?;
    let row = whole_account(&mut tx, tenant, username).await?;
    if row.sso {
        return Err(Error::Invalid(format!(
            "`{username}` signs in through the OpenID provider: there is no password to choose"
        )));
    }
    let token = invite_in(&mut tx, row.id).await?;
    let what = serde_json::json!({"username": username});
    store::record(
        &mut *tx,
        tenant.actor(),
        &Change::new("invite_member", "tenant", tenant.slug()).after(&what),
    )
    .await?;
    tx.commit().await?;
    Ok(token)
}

/// Disables (or enables again) a member: a disabled one cannot sign in, and its sessions and
/// tokens (access and refresh) stop working on every replica at once.
pub async fn set_disabled(
    services: &Services,
    tenant: &ManagedTenant<'_>,
    username: &str,
    disabled: bool,
) -> Result<()> {
    let mut tx = services.pool.begin().await?;
    let row = whole_account(&mut tx, tenant, username).await?;
    store::admins::set_disabled(&mut *tx, row.id, disabled).await?;
    let what = serde_json::json!({"username": username, "disabled": disabled});
    store::commit(tx, tenant.actor(), Change::new("disable_member", "tenant", tenant.slug()).after(&what))
        .await?;
    services.oauth.revoked();
    Ok(())
}

/// Takes a member off the tenant and revokes every app it authorized for it; an account left
/// with no tenant is deleted.
pub async fn remove(services: &Services, tenant: &ManagedTenant<'_>, username: &str) -> Result<()> {
    let mut tx = services.pool.begin().await?;
    let (row, tenant_id) = member(&mut tx, tenant, username).await?;
    store::oauth::revoke_grants_of(&mut tx, row.id, Some(tenant_id)).await?;
    if store::admins::unassign(&mut tx, row.id, tenant_id).await? == 0 {
        store::admins::delete(&mut *tx, row.id).await?;
    }
    let what = serde_json::json!({"username": username});
    store::commit(tx, tenant.actor(), Change::new("remove_member", "tenant", tenant.slug()).before(&what))
        .await?;
    services.oauth.revoked();
    Ok(())
}

/// The account an invitation link is for, if the link still works.
pub async fn invitation(services: &Services, token: &str) -> Result<Option<String>> {
    Ok(store::admins::invited(&services.pool, &crate::secret::digest(token)).await?.map(|(_, name)| name))
}

/// Takes an invitation: sets the account's password; the signed-in account.
#[tracing::instrument(skip_all, err)]
pub async fn accept(services: &Services, token: &str, password: String) -> Result<AdminUser> {
    passwords_on(services).await?;
    let password = Password::parse(password)?;
    let hash = PasswordHash::new(&password).await;
    let mut tx = services.pool.begin().await?;
    let (id, username) =
        store::admins::invited(&mut *tx, &crate::secret::digest(token)).await?.ok_or_else(|| {
            Error::Invalid("this invitation link has expired or was used; ask for a new one".into())
        })?;
    store::admins::set_password_hash_of(&mut *tx, id, hash.as_str()).await?;
    store::admins::forget_invites(&mut *tx, id).await?;
    store::admins::signed_in(&mut *tx, id).await?;
    let what = serde_json::json!({"username": username});
    store::record(
        &mut *tx,
        &store::Actor::admin(&username),
        &Change::new("accept_invitation", "account", &username).after(&what),
    )
    .await?;
    tx.commit().await?;
    crate::admin::find(&services.pool, id)
        .await?
        .ok_or_else(|| Error::not_found(format!("account `{username}`")))
}
