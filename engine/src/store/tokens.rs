//! Admin API tokens for scripts: shown once at creation, stored only as a SHA-256 hash,
//! revocable, optionally expiring, optionally limited to reading or to one tenant.

use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::keys::{PREFIX_LEN, hash};
use super::{Actor, Change, Error, Result, commit};
use crate::model::TenantSlug;

/// What a new token may do.
#[derive(Debug, Clone, Default)]
pub struct NewToken {
    pub name: String,
    pub expires_at: Option<OffsetDateTime>,
    /// Only reads (GET) in the admin API.
    pub read_only: bool,
    /// Only this tenant's part of the admin API.
    pub tenant: Option<TenantSlug>,
}

/// A token as listed: never the token itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdminToken {
    pub id: Uuid,
    pub name: String,
    /// Its first characters (none for a token made before they were kept).
    pub prefix: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    pub read_only: bool,
    /// The one tenant it may manage, if limited to one.
    pub tenant: Option<String>,
}

impl AdminToken {
    /// What it may do, in words: `owner`, `read-only`, `tenant acme`, `read-only, tenant acme`.
    pub fn limits(&self) -> String {
        match (self.read_only, &self.tenant) {
            (false, None) => "owner".into(),
            (true, None) => "read-only".into(),
            (false, Some(tenant)) => format!("tenant {tenant}"),
            (true, Some(tenant)) => format!("read-only, tenant {tenant}"),
        }
    }
}

/// What an active token presented with a request may do.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub name: String,
    pub read_only: bool,
    pub tenant: Option<TenantSlug>,
}

/// Creates a token; the returned string is the only time it exists in the clear.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), name = new.name))]
pub async fn create(pool: &PgPool, actor: &Actor, new: &NewToken) -> Result<(AdminToken, String)> {
    if !(1..=100).contains(&new.name.chars().count()) {
        return Err(Error::Invalid("a token name is 1 to 100 characters".into()));
    }
    if new.expires_at.is_some_and(|at| at <= OffsetDateTime::now_utc()) {
        return Err(Error::Invalid("a token's expiry must be in the future".into()));
    }
    let secret = crate::secret::random_token("tga_");
    let mut tx = pool.begin().await?;
    let tenant_id = match &new.tenant {
        Some(slug) => Some(super::tenants::get(&mut *tx, slug).await?.id),
        None => None,
    };
    let made = sqlx::query!(
        "insert into admin_token (name, prefix, token_hash, expires_at, read_only, tenant_id)
         values ($1, $2, $3, $4, $5, $6) returning id, created_at",
        new.name,
        &secret[..PREFIX_LEN],
        hash(&secret),
        new.expires_at,
        new.read_only,
        tenant_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    let token = AdminToken {
        id: made.id,
        name: new.name.clone(),
        prefix: Some(secret[..PREFIX_LEN].to_string()),
        created_at: made.created_at,
        expires_at: new.expires_at,
        last_used_at: None,
        revoked_at: None,
        read_only: new.read_only,
        tenant: new.tenant.as_ref().map(TenantSlug::to_string),
    };
    commit(tx, actor, Change::new("create_admin_token", "admin_token", token.id).after(&token)).await?;
    Ok((token, secret))
}

/// Every token, newest first.
pub async fn list(pool: &PgPool) -> Result<Vec<AdminToken>> {
    Ok(sqlx::query_as!(
        AdminToken,
        r#"select k.id, k.name, k.prefix, k.created_at, k.expires_at, k.last_used_at, k.revoked_at, k.read_only,
                  t.slug as "tenant?"
           from admin_token k left join tenant t on t.id = k.tenant_id
           order by k.created_at desc"#
    )
    .fetch_all(pool)
    .await?)
}

async fn get(db: impl sqlx::PgExecutor<'_>, id: Uuid) -> Result<AdminToken> {
    sqlx::query_as!(
        AdminToken,
        r#"select k.id, k.name, k.prefix, k.created_at, k.expires_at, k.last_used_at, k.revoked_at, k.read_only,
                  t.slug as "tenant?"
           from admin_token k left join tenant t on t.id = k.tenant_id where k.id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?
    .ok_or_else(|| Error::not_found(format!("admin token {id}")))
}

/// Revokes the active token `id`; its next request is refused.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %id))]
pub async fn revoke(pool: &PgPool, actor: &Actor, id: Uuid) -> Result<AdminToken> {
    let mut tx = pool.begin().await?;
    let before = get(&mut *tx, id).await?;
    let revoked_at = sqlx::query_scalar!(
        r#"update admin_token set revoked_at = now() where id = $1 and revoked_at is null
           returning revoked_at as "revoked_at!""#,
        id
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("active admin token {id}")))?;
    let after = AdminToken { revoked_at: Some(revoked_at), ..before.clone() };
    commit(tx, actor, Change::new("revoke_admin_token", "admin_token", id).before(&before).after(&after))
        .await?;
    Ok(after)
}

/// What `token` may do, if it is an active (unrevoked, unexpired) token. Records its use at
/// most once a minute.
pub async fn authenticate(pool: &PgPool, token: &str) -> Result<Option<Grant>> {
    let Some(found) = sqlx::query!(
        r#"select k.id, k.name, k.read_only, t.slug as "tenant?",
                  (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as "stale!"
           from admin_token k left join tenant t on t.id = k.tenant_id
           where k.token_hash = $1 and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())"#,
        hash(token)
    )
    .fetch_optional(pool)
    .await?
    else {
        return Ok(None);
    };
    if found.stale {
        sqlx::query!("update admin_token set last_used_at = now() where id = $1", found.id)
            .execute(pool)
            .await?;
    }
    let tenant = found.tenant.map(|slug| TenantSlug::parse(&slug)).transpose()?;
    Ok(Some(Grant { name: found.name, read_only: found.read_only, tenant }))
}
