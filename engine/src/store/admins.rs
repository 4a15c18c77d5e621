//! Accounts, the tenants each belongs to (that a tenant administrator manages, that a member
//! authorizes clients for), invitations, and the record of failed sign-ins. The rules
//! (password hashing, sign-in limits) are [`crate::admin`]'s.

use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::{Error, Result};
use crate::model::Role;

/// An account as stored.
pub(crate) struct Account {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    pub password_hash: Option<String>,
    /// The password was printed once: the account must choose its own.
    pub password_temporary: bool,
    pub disabled_at: Option<time::OffsetDateTime>,
}

/// Adds an account; `None` when the name is taken.
pub(crate) async fn insert(
    db: impl PgExecutor<'_>,
    username: &str,
    password_hash: &str,
    password_temporary: bool,
    role: Role,
) -> Result<Option<Uuid>> {
    let id = sqlx::query_scalar!(
        "insert into admin_user (username, password_hash, password_temporary, role) values ($1, $2, $3, $4)
         on conflict (username) do nothing
         returning id",
        username,
        password_hash,
        password_temporary,
        role as Role,
    )
    .fetch_optional(db)
    .await?;
    Ok(id)
}

/// Records a successful sign-in.
pub(crate) async fn signed_in(db: impl PgExecutor<'_>, id: Uuid) -> Result<()> {
    sqlx::query!("update admin_user set signed_in_at = now() where id = $1", id).execute(db).await?;
    Ok(())
}

/// Replaces an account's password hash; whether the account exists.
pub(crate) async fn set_password_hash(
    db: impl PgExecutor<'_>,
    username: &str,
    hash: &str,
    temporary: bool,
) -> Result<bool> {
    let updated = sqlx::query!(
        "update admin_user set password_hash = $2, password_temporary = $3 where username = $1",
        username,
        hash,
        temporary
    )
    .execute(db)
    .await?
    .rows_affected();
    Ok(updated > 0)
}

pub(crate) async fn by_id(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Account>> {
    let account = sqlx::query_as!(
        Account,
        r#"select id, username, role as "role: Role", password_hash, password_temporary, disabled_at from admin_user where id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(account)
}

pub(crate) async fn by_username(db: impl PgExecutor<'_>, username: &str) -> Result<Option<Account>> {
    let account = sqlx::query_as!(
        Account,
        r#"select id, username, role as "role: Role", password_hash, password_temporary, disabled_at
           from admin_user where username = $1"#,
        username
    )
    .fetch_optional(db)
    .await?;
    Ok(account)
}

/// The slugs of the tenants the account `admin_id` is assigned to, in order.
pub(crate) async fn tenant_slugs(db: impl PgExecutor<'_>, admin_id: Uuid) -> Result<Vec<String>> {
    let slugs = sqlx::query_scalar!(
        "select t.slug from admin_tenant a join tenant t on t.id = a.tenant_id where a.admin_id = $1 order by 1",
        admin_id
    )
    .fetch_all(db)
    .await?;
    Ok(slugs)
}

/// Lets the account `username` manage `tenant` (again: assigning twice changes nothing). One
/// statement, so it joins the transaction that made the account.
pub(crate) async fn assign_tenant(db: impl PgExecutor<'_>, username: &str, tenant: &str) -> Result<()> {
    let found = sqlx::query!(
        r#"with account as (select id from admin_user where username = $1),
                chosen as (select id from tenant where slug = $2),
                assigned as (
                    insert into admin_tenant (admin_id, tenant_id)
                    select account.id, chosen.id from account, chosen
                    on conflict do nothing)
           select exists (select from account) as "account!", exists (select from chosen) as "tenant!""#,
        username,
        tenant
    )
    .fetch_one(db)
    .await?;
    if !found.account {
        return Err(Error::not_found(format!("administrator `{username}`")));
    }
    if !found.tenant {
        return Err(Error::not_found(format!("tenant `{tenant}`")));
    }
    Ok(())
}

/// Whether an owner exists, holding a lock on the accounts until `tx` ends: two processes
/// starting together must not both create the first owner.
pub(crate) async fn lock_and_find_owner(tx: &mut sqlx::PgConnection) -> Result<bool> {
    sqlx::query!("lock table admin_user in share row exclusive mode").execute(&mut *tx).await?;
    let exists =
        sqlx::query_scalar!(r#"select exists (select from admin_user where role = 'owner') as "exists!""#)
            .fetch_one(&mut *tx)
            .await?;
    Ok(exists)
}

/// Failed sign-ins within the window, counted for one attempt (which is among them).
pub(crate) struct RecentFailures {
    pub by_user: i64,
    pub by_user_here: i64,
    pub by_address: i64,
    pub oldest_by_user_here: Option<time::OffsetDateTime>,
    pub oldest_by_address: Option<time::OffsetDateTime>,
}

/// Records a sign-in attempt as failed (it is forgotten if it succeeds) after dropping the
/// attempts older than `window_secs`; returns its id and the failures it is counted with.
pub(crate) async fn record_attempt(
    pool: &PgPool,
    username: &str,
    address: &str,
    window_secs: f64,
) -> Result<(i64, RecentFailures)> {
    sqlx::query!(
        "delete from login_failure where failed_at < now() - make_interval(secs => $1)",
        window_secs
    )
    .execute(pool)
    .await?;
    let attempt = sqlx::query_scalar!(
        "insert into login_failure (username, address) values ($1, $2) returning id",
        username,
        address
    )
    .fetch_one(pool)
    .await?;
    let recent = sqlx::query_as!(
        RecentFailures,
        r#"select
             count(*) filter (where username = $1) as "by_user!",
             count(*) filter (where username = $1 and address = $2) as "by_user_here!",
             count(*) filter (where address = $2) as "by_address!",
             min(failed_at) filter (where username = $1 and address = $2) as oldest_by_user_here,
             min(failed_at) filter (where address = $2) as oldest_by_address
           from login_failure
           where (username = $1 or address = $2)
             and failed_at > now() - make_interval(secs => $3)"#,
        username,
        address,
        window_secs,
    )
    .fetch_one(pool)
    .await?;
    Ok((attempt, recent))
}

/// Forgets one attempt: it was refused unchecked, so it is no failure of its own.
pub(crate) async fn forget_attempt(pool: &PgPool, attempt: i64) -> Result<()> {
    sqlx::query!("delete from login_failure where id = $1", attempt).execute(pool).await?;
    Ok(())
}

/// Forgets the failures of `username`: it has signed in.
pub(crate) async fn forget_failures(pool: &PgPool, username: &str) -> Result<()> {
    sqlx::query!("delete from login_failure where username = $1", username).execute(pool).await?;
    Ok(())
}

/// An account of a tenant, as its member list shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemberRow {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    pub email: Option<String>,
    /// Signs in with a password (else through the OpenID provider, or not yet: invited).
    pub has_password: bool,
    pub sso: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<time::OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub signed_in_at: Option<time::OffsetDateTime>,
    /// Clients the account has authorized for this tenant.
    pub apps: i64,
}

/// The accounts assigned to tenant `tenant_id`, by name.
pub(crate) async fn members(db: impl PgExecutor<'_>, tenant_id: Uuid) -> Result<Vec<MemberRow>> {
    Ok(sqlx::query_as!(
        MemberRow,
        r#"select a.id, a.username, a.role as "role: Role", a.email, a.password_hash is not null as "has_password!",
                  a.sso_subject is not null as "sso!", a.disabled_at, a.signed_in_at,
                  (select count(*) from oauth_grant g
                   where g.account_id = a.id and g.tenant_id = $1 and g.revoked_at is null) as "apps!"
           from admin_user a join admin_tenant m on m.admin_id = a.id
           where m.tenant_id = $1 order by a.username"#,
        tenant_id
    )
    .fetch_all(db)
    .await?)
}

/// An account as the owners' list shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AccountRow {
    pub username: String,
    pub role: Role,
    pub email: Option<String>,
    /// Signs in with a password (else through the OpenID provider, or not yet: invited).
    pub has_password: bool,
    /// Its password was printed once and not replaced yet.
    pub password_temporary: bool,
    pub sso: bool,
    /// The slugs of its tenants, in order.
    pub tenants: Vec<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<time::OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub signed_in_at: Option<time::OffsetDateTime>,
}

impl AccountRow {
    /// How the account signs in, in words.
    pub fn signs_in(&self) -> &'static str {
        match (self.has_password, self.password_temporary, self.sso) {
            (true, true, _) => "one-time password",
            (true, false, _) => "password",
            (false, _, true) => "single sign-on",
            (false, _, false) => "invited",
        }
    }
}

/// Every account, by name.
pub(crate) async fn all(db: impl PgExecutor<'_>) -> Result<Vec<AccountRow>> {
    Ok(sqlx::query_as!(
        AccountRow,
        r#"select a.username, a.role as "role: Role", a.email, a.password_hash is not null as "has_password!",
                  a.password_temporary, a.sso_subject is not null as "sso!",
                  array(select t.slug from admin_tenant m join tenant t on t.id = m.tenant_id
                        where m.admin_id = a.id order by t.slug) as "tenants!",
                  a.disabled_at, a.signed_in_at
           from admin_user a order by a.username"#
    )
    .fetch_all(db)
    .await?)
}

/// Whether another enabled owner than `admin_id` exists (the last one is never disabled or
/// deleted: nobody could manage Toolgate then).
pub(crate) async fn another_owner(db: impl PgExecutor<'_>, admin_id: Uuid) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"select exists (select from admin_user where role = 'owner' and disabled_at is null and id <> $1) as "exists!""#,
        admin_id
    )
    .fetch_one(db)
    .await?)
}

/// The account `username` with its role, if it exists.
pub(crate) async fn role_of(db: impl PgExecutor<'_>, username: &str) -> Result<Option<(Uuid, Role)>> {
    Ok(sqlx::query!(r#"select id, role as "role: Role" from admin_user where username = $1"#, username)
        .fetch_optional(db)
        .await?
        .map(|r| (r.id, r.role)))
}

/// Adds an account without a password yet (invited, or signing in through the OpenID
/// provider); `None` when the name is taken.
pub(crate) async fn insert_without_password(
    db: impl PgExecutor<'_>,
    username: &str,
    role: Role,
    email: Option<&str>,
    sso: Option<(&str, &str)>,
) -> Result<Option<Uuid>> {
    Ok(sqlx::query_scalar!(
        "insert into admin_user (username, role, email, sso_issuer, sso_subject) values ($1, $2, $3, $4, $5)
         on conflict (username) do nothing returning id",
        username,
        role as Role,
        email,
        sso.map(|(issuer, _)| issuer),
        sso.map(|(_, subject)| subject),
    )
    .fetch_optional(db)
    .await?)
}

/// Assigns `admin_id` to `tenant_id` (again: nothing changes).
pub(crate) async fn assign(db: impl PgExecutor<'_>, admin_id: Uuid, tenant_id: Uuid) -> Result<()> {
    sqlx::query!(
        "insert into admin_tenant (admin_id, tenant_id) values ($1, $2) on conflict do nothing",
        admin_id,
        tenant_id
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Takes `admin_id` off `tenant_id`; how many tenants it still has.
pub(crate) async fn unassign(tx: &mut sqlx::PgConnection, admin_id: Uuid, tenant_id: Uuid) -> Result<i64> {
    sqlx::query!("delete from admin_tenant where admin_id = $1 and tenant_id = $2", admin_id, tenant_id)
        .execute(&mut *tx)
        .await?;
    Ok(sqlx::query_scalar!(r#"select count(*) as "n!" from admin_tenant where admin_id = $1"#, admin_id)
        .fetch_one(&mut *tx)
        .await?)
}

pub(crate) async fn set_disabled(db: impl PgExecutor<'_>, admin_id: Uuid, disabled: bool) -> Result<()> {
    sqlx::query!(
        "update admin_user set disabled_at = case when $2 then coalesce(disabled_at, now()) end where id = $1",
        admin_id,
        disabled
    )
    .execute(db)
    .await?;
    Ok(())
}

pub(crate) async fn set_role(db: impl PgExecutor<'_>, admin_id: Uuid, role: Role) -> Result<()> {
    sqlx::query!("update admin_user set role = $2 where id = $1", admin_id, role as Role).execute(db).await?;
    Ok(())
}

pub(crate) async fn delete(db: impl PgExecutor<'_>, admin_id: Uuid) -> Result<()> {
    sqlx::query!("delete from admin_user where id = $1", admin_id).execute(db).await?;
    Ok(())
}

/// Replaces the invitations of `admin_id` with one.
pub(crate) async fn invite(
    tx: &mut sqlx::PgConnection,
    admin_id: Uuid,
    token_hash: &[u8],
    expires_at: time::OffsetDateTime,
) -> Result<()> {
    sqlx::query!("delete from account_invite where admin_id = $1", admin_id).execute(&mut *tx).await?;
    sqlx::query!(
        "insert into account_invite (token_hash, admin_id, expires_at) values ($1, $2, $3)",
        token_hash,
        admin_id,
        expires_at
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The account an unexpired invitation is for, by the hash of its token.
pub(crate) async fn invited(db: impl PgExecutor<'_>, token_hash: &[u8]) -> Result<Option<(Uuid, String)>> {
    Ok(sqlx::query!(
        "select a.id, a.username from account_invite i join admin_user a on a.id = i.admin_id
         where i.token_hash = $1 and i.expires_at > now() and a.disabled_at is null",
        token_hash
    )
    .fetch_optional(db)
    .await?
    .map(|r| (r.id, r.username)))
}

/// Ends the invitations of `admin_id`.
pub(crate) async fn forget_invites(db: impl PgExecutor<'_>, admin_id: Uuid) -> Result<()> {
    sqlx::query!("delete from account_invite where admin_id = $1", admin_id).execute(db).await?;
    Ok(())
}

/// Sets the password hash of the account `admin_id`: a password it chose (or was given to keep).
pub(crate) async fn set_password_hash_of(db: impl PgExecutor<'_>, admin_id: Uuid, hash: &str) -> Result<()> {
    sqlx::query!(
        "update admin_user set password_hash = $2, password_temporary = false where id = $1",
        admin_id,
        hash
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The account signed in through the OpenID provider `issuer` as `subject`.
pub(crate) async fn by_sso(db: impl PgExecutor<'_>, issuer: &str, subject: &str) -> Result<Option<Account>> {
    Ok(sqlx::query_as!(
        Account,
        r#"select id, username, role as "role: Role", password_hash, password_temporary, disabled_at
           from admin_user where sso_issuer = $1 and sso_subject = $2"#,
        issuer,
        subject
    )
    .fetch_optional(db)
    .await?)
}

/// Sets what the OpenID provider's claims say of an account: its role, email and tenants. (A
/// grant for a tenant it leaves stops working: tokens are accepted only for an owner or a
/// person still of the grant's tenant.)
pub(crate) async fn set_from_claims(
    tx: &mut sqlx::PgConnection,
    admin_id: Uuid,
    role: Role,
    email: Option<&str>,
    tenants: &[Uuid],
) -> Result<()> {
    sqlx::query!(
        "update admin_user set role = $2, email = $3, signed_in_at = now() where id = $1",
        admin_id,
        role as Role,
        email
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("delete from admin_tenant where admin_id = $1 and tenant_id <> all($2)", admin_id, tenants)
        .execute(&mut *tx)
        .await?;
    sqlx::query!(
        "insert into admin_tenant (admin_id, tenant_id) select $1, unnest($2::uuid[]) on conflict do nothing",
        admin_id,
        tenants
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}
