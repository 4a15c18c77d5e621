//! Managing accounts: creating them (the first owner too), finding them, changing their password,
//! role, tenants and whether they are enabled, deleting them, all audited; and which tenants an
//! account manages ([`Scope`]). None may lock everyone out.

use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::password::password_stamp;
use super::{AccountRow, AdminUser, Password, PasswordHash, Username};
use crate::model::{Role, TenantSlug};
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

/// Creates an administrator.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn create(
    db: impl PgExecutor<'_>,
    username: &Username,
    role: Role,
    password: &Password,
) -> Result<AdminUser> {
    let hash = PasswordHash::new(password).await;
    let id =
        store::admins::insert(db, username.as_str(), &hash.0, password.one_time, role).await?.ok_or_else(
            || Error::Conflict(format!("an administrator named `{}` already exists", username.as_str())),
        )?;
    Ok(AdminUser {
        id,
        username: username.as_str().to_string(),
        role,
        password_stamp: password_stamp(Some(&hash.0)),
        has_password: true,
        password_temporary: password.one_time,
    })
}

/// Replaces an administrator's password.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn set_password(db: impl PgExecutor<'_>, username: &Username, password: &Password) -> Result<()> {
    let hash = PasswordHash::new(password).await;
    if !store::admins::set_password_hash(db, username.as_str(), &hash.0, password.one_time).await? {
        return Err(Error::not_found(format!("administrator `{}`", username.as_str())));
    }
    Ok(())
}

/// The account with this id, if it still exists and is not disabled.
pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<AdminUser>> {
    Ok(store::admins::by_id(db, id).await?.filter(|a| a.disabled_at.is_none()).map(AdminUser::from))
}

/// Which tenants an administrator may see and manage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Owners: every tenant, and the global configuration.
    Everything,
    /// Tenant administrators: these tenants (slugs) only.
    Tenants(Vec<String>),
}

impl Scope {
    pub fn allows(&self, tenant: &str) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Tenants(slugs) => slugs.iter().any(|s| s == tenant),
        }
    }
}

/// What `admin` manages; a member manages nothing (it only authorizes clients).
pub async fn scope(db: impl PgExecutor<'_>, admin: &AdminUser) -> Result<Scope> {
    Ok(match admin.role {
        Role::Owner => Scope::Everything,
        Role::TenantAdmin => Scope::Tenants(store::admins::tenant_slugs(db, admin.id).await?),
        Role::Member => {
            return Err(Error::Forbidden(
                "members manage nothing in the panel but their connected apps".into(),
            ));
        }
    })
}

/// Lets the administrator `username` manage `tenant` (meaningful for tenant administrators).
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), tenant))]
pub async fn assign_tenant(db: impl PgExecutor<'_>, username: &Username, tenant: &str) -> Result<()> {
    store::admins::assign_tenant(db, username.as_str(), tenant).await
}

/// On first start: when no owner exists, creates `admin` as owner with a random password and
/// returns that password (to be shown once). Returns `None` when an owner exists.
#[tracing::instrument(skip_all, err)]
pub async fn ensure_owner(pool: &PgPool) -> Result<Option<Password>> {
    let mut tx = pool.begin().await?;
    if store::admins::lock_and_find_owner(&mut tx).await? {
        return Ok(None);
    }
    let password = Password::generate();
    create(&mut *tx, &Username::parse("admin")?, Role::Owner, &password).await?;
    tx.commit().await?;
    Ok(Some(password))
}

/// Creates an account with its tenants, all or nothing (an unknown tenant leaves no account),
/// and audits it.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn create_account(
    pool: &PgPool,
    actor: &Actor,
    username: &Username,
    role: Role,
    tenants: &[String],
    password: &Password,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    create(&mut *tx, username, role, password).await?;
    for tenant in tenants {
        assign_tenant(&mut *tx, username, tenant).await?;
    }
    let what =
        serde_json::json!({"username": username.as_str(), "role": role.to_string(), "tenants": tenants});
    store::commit(tx, actor, Change::new("create_account", "account", username.as_str()).after(&what)).await
}

/// Every account, by name.
pub async fn accounts(db: impl PgExecutor<'_>) -> Result<Vec<AccountRow>> {
    store::admins::all(db).await
}

/// Gives `username` a new one-time password (returned, to be shown once): its sessions end,
/// and its next sign-in asks for a password of its own.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn reset_password(pool: &PgPool, actor: &Actor, username: &Username) -> Result<Password> {
    let password = Password::generate();
    let hash = PasswordHash::new(&password).await;
    let mut tx = pool.begin().await?;
    if !store::admins::set_password_hash(&mut *tx, username.as_str(), &hash.0, true).await? {
        return Err(Error::not_found(format!("account `{}`", username.as_str())));
    }
    store::commit(tx, actor, Change::new("reset_password", "account", username.as_str())).await?;
    Ok(password)
}

/// Disables `username` (it cannot sign in; its sessions and tokens stop working at once) or
/// enables it again.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), disabled))]
pub async fn set_disabled(pool: &PgPool, actor: &Actor, username: &Username, disabled: bool) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if disabled {
        may_lose(&mut tx, actor, &account).await?;
    }
    store::admins::set_disabled(&mut *tx, account.id, disabled).await?;
    let what = serde_json::json!({"disabled": disabled});
    store::commit(tx, actor, Change::new("set_account_disabled", "account", username.as_str()).after(&what))
        .await
}

/// Gives `username` another role (an owner no longer manages everything, a member then
/// manages nothing); never one's own, nor the last enabled owner's.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn set_role(pool: &PgPool, actor: &Actor, username: &Username, role: Role) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if account.role == role {
        return Ok(());
    }
    may_lose(&mut tx, actor, &account).await?;
    store::admins::set_role(&mut *tx, account.id, role).await?;
    let change = Change::new("set_account_role", "account", username.as_str())
        .before(&serde_json::json!({"role": account.role.to_string()}))
        .after(&serde_json::json!({"role": role.to_string()}));
    store::commit(tx, actor, change).await
}

/// Makes `tenants` the tenants `username` manages (or, for a member, connects apps to), all or
/// nothing: an unknown tenant changes nothing. The apps it authorized for a tenant it leaves
/// are revoked. An owner manages every tenant: it has none to set.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn set_tenants(
    pool: &PgPool,
    actor: &Actor,
    username: &Username,
    tenants: &[String],
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if account.role == Role::Owner {
        return Err(Error::Invalid(format!(
            "`{}` is an owner, who manages every tenant: give it another role first",
            username.as_str()
        )));
    }
    let before = store::admins::tenant_slugs(&mut *tx, account.id).await?;
    for left in before.iter().filter(|slug| !tenants.contains(slug)) {
        let tenant = store::tenants::get(&mut *tx, &TenantSlug::parse(left)?).await?;
        store::oauth::revoke_grants_of(&mut tx, account.id, Some(tenant.id)).await?;
        store::admins::unassign(&mut tx, account.id, tenant.id).await?;
    }
    for tenant in tenants {
        assign_tenant(&mut *tx, username, tenant).await?;
    }
    let after = store::admins::tenant_slugs(&mut *tx, account.id).await?;
    let change = Change::new("set_account_tenants", "account", username.as_str())
        .before(&serde_json::json!({"tenants": before}))
        .after(&serde_json::json!({"tenants": after}));
    store::commit(tx, actor, change).await
}

/// Deletes `username` with everything it authorized.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn delete(pool: &PgPool, actor: &Actor, username: &Username) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    may_lose(&mut tx, actor, &account).await?;
    store::admins::delete(&mut *tx, account.id).await?;
    let what = serde_json::json!({"role": account.role.to_string()});
    store::commit(tx, actor, Change::new("delete_account", "account", username.as_str()).before(&what)).await
}

async fn existing(tx: &mut sqlx::PgConnection, username: &Username) -> Result<store::admins::Account> {
    store::admins::by_username(&mut *tx, username.as_str())
        .await?
        .ok_or_else(|| Error::not_found(format!("account `{}`", username.as_str())))
}

/// Refuses what could lock everyone out: an account taking itself away (or its own role), or
/// the last enabled owner going.
async fn may_lose(
    tx: &mut sqlx::PgConnection,
    actor: &Actor,
    account: &store::admins::Account,
) -> Result<()> {
    if *actor == Actor::admin(&account.username) {
        return Err(Error::Conflict(
            "you cannot disable, delete or change the role of your own account; another owner can".into(),
        ));
    }
    if account.role == Role::Owner
        && account.disabled_at.is_none()
        && !store::admins::another_owner(&mut *tx, account.id).await?
    {
        return Err(Error::Conflict(format!(
            "`{}` is the last enabled owner: make another account an owner first",
            account.username
        )));
    }
    Ok(())
}
