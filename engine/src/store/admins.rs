//! Administrator accounts, the tenants a tenant administrator manages, and the record of
//! failed sign-ins. The rules (password hashing, sign-in limits) are [`crate::admin`]'s.

use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use super::{Error, Result};
use crate::admin::Role;

/// An account as stored.
pub(crate) struct Account {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    pub password_hash: String,
}

/// Adds an account; `None` when the name is taken.
pub(crate) async fn insert(
    db: impl PgExecutor<'_>,
    username: &str,
    password_hash: &str,
    role: Role,
) -> Result<Option<Uuid>> {
    let id = sqlx::query_scalar!(
        "insert into admin_user (username, password_hash, role) values ($1, $2, $3)
         on conflict (username) do nothing
         returning id",
        username,
        password_hash,
        role as Role,
    )
    .fetch_optional(db)
    .await?;
    Ok(id)
}

/// Replaces an account's password hash; whether the account exists.
pub(crate) async fn set_password_hash(db: impl PgExecutor<'_>, username: &str, hash: &str) -> Result<bool> {
    let updated =
        sqlx::query!("update admin_user set password_hash = $2 where username = $1", username, hash)
            .execute(db)
            .await?
            .rows_affected();
    Ok(updated > 0)
}

pub(crate) async fn by_id(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Account>> {
    let account = sqlx::query_as!(
        Account,
        r#"select id, username, role as "role: Role", password_hash from admin_user where id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?;
    Ok(account)
}

pub(crate) async fn by_username(db: impl PgExecutor<'_>, username: &str) -> Result<Option<Account>> {
    let account = sqlx::query_as!(
        Account,
        r#"select id, username, role as "role: Role", password_hash from admin_user where username = $1"#,
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

/// Lets the account `username` manage `tenant` (again: assigning twice changes nothing).
pub(crate) async fn assign_tenant(pool: &PgPool, username: &str, tenant: &str) -> Result<()> {
    let admin_id = sqlx::query_scalar!("select id from admin_user where username = $1", username)
        .fetch_optional(pool)
        .await?
        .ok_or_else(|| Error::not_found(format!("administrator `{username}`")))?;
    let tenant_id = sqlx::query_scalar!("select id from tenant where slug = $1", tenant)
        .fetch_optional(pool)
        .await?
        .ok_or_else(|| Error::not_found(format!("tenant `{tenant}`")))?;
    sqlx::query!(
        "insert into admin_tenant (admin_id, tenant_id) values ($1, $2) on conflict do nothing",
        admin_id,
        tenant_id
    )
    .execute(pool)
    .await?;
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
