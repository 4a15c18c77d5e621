//! Tenant API keys: shown once at creation, stored only as a SHA-256 hash with a short
//! visible prefix, revocable, optionally expiring, optionally limited in their calls. Gateways check keys against the live catalog snapshot, so a
//! revocation reaches every replica with the next reload.

use serde::Serialize;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

use super::{Actor, Change, Error, Result, commit};
use crate::model::CallLimits;
use crate::model::TenantSlug;

/// Characters of the key kept visible, to tell keys apart.
pub(super) const PREFIX_LEN: usize = 10;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: time::OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<time::OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<time::OffsetDateTime>,
    /// After this the gateway refuses the key.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
    /// The limits on the key's calls.
    pub limits: Json<CallLimits>,
}

pub use crate::secret::digest as hash;

/// Creates a key, valid until `expires_at` when given, under `limits`; the returned string is
/// the only time the key exists in the clear.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %tenant))]
pub async fn create(
    pool: &PgPool,
    actor: &Actor,
    tenant: &TenantSlug,
    name: &str,
    expires_at: Option<time::OffsetDateTime>,
    limits: CallLimits,
) -> Result<(ApiKey, String)> {
    if !(1..=100).contains(&name.chars().count()) {
        return Err(Error::Invalid("a key name is 1 to 100 characters".into()));
    }
    if expires_at.is_some_and(|at| at <= time::OffsetDateTime::now_utc()) {
        return Err(Error::Invalid("a key's expiry must be in the future".into()));
    }
    let secret = crate::secret::random_token("tg_");
    let mut tx = pool.begin().await?;
    let tenant_id = super::tenants::get(&mut *tx, tenant).await?.id;
    let key = sqlx::query_as!(
        ApiKey,
        r#"insert into api_key (tenant_id, name, prefix, key_hash, expires_at, limits)
           values ($1, $2, $3, $4, $5, $6)
           returning id, name, prefix, created_at, last_used_at, revoked_at, expires_at,
                     limits as "limits: Json<CallLimits>""#,
        tenant_id,
        name,
        &secret[..PREFIX_LEN],
        hash(&secret),
        expires_at,
        Json(limits) as _,
    )
    .fetch_one(&mut *tx)
    .await?;
    commit(tx, actor, Change::new("create_key", "tenant", tenant).after(&key)).await?;
    Ok((key, secret))
}

/// How many active (unrevoked) keys each tenant has, by tenant id, in one query.
pub async fn active_counts(pool: &PgPool) -> Result<std::collections::HashMap<Uuid, i64>> {
    let rows = sqlx::query!(
        r#"select tenant_id, count(*) as "count!" from api_key where revoked_at is null group by tenant_id"#
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.tenant_id, r.count)).collect())
}

pub async fn list(pool: &PgPool, tenant: &TenantSlug) -> Result<Vec<ApiKey>> {
    Ok(sqlx::query_as!(
        ApiKey,
        r#"select k.id, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at, k.expires_at,
                  k.limits as "limits: Json<CallLimits>"
           from api_key k join tenant t on t.id = k.tenant_id where t.slug = $1 order by k.created_at"#,
        tenant.as_str()
    )
    .fetch_all(pool)
    .await?)
}

/// Every active key with limits, with its tenant's id.
pub async fn limited(pool: &PgPool) -> Result<Vec<(Uuid, ApiKey)>> {
    let rows = sqlx::query!(
        r#"select tenant_id, id, name, prefix, created_at, last_used_at, revoked_at, expires_at,
                  limits as "limits: Json<CallLimits>"
           from api_key where revoked_at is null and limits <> '{}' order by created_at"#
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let key = ApiKey {
                id: r.id,
                name: r.name,
                prefix: r.prefix,
                created_at: r.created_at,
                last_used_at: r.last_used_at,
                revoked_at: r.revoked_at,
                expires_at: r.expires_at,
                limits: r.limits,
            };
            (r.tenant_id, key)
        })
        .collect())
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %tenant, %id))]
pub async fn revoke(pool: &PgPool, actor: &Actor, tenant: &TenantSlug, id: Uuid) -> Result<()> {
    let mut tx = pool.begin().await?;
    let revoked = sqlx::query_as!(
        ApiKey,
        r#"update api_key k set revoked_at = now() from tenant t
           where k.id = $1 and k.tenant_id = t.id and t.slug = $2 and k.revoked_at is null
           returning k.id, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at, k.expires_at,
                     k.limits as "limits: Json<CallLimits>""#,
        id,
        tenant.as_str()
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("active key {id} of `{tenant}`")))?;
    // Only an active key is revoked: before, it was the same key without a revocation time.
    let before = ApiKey { revoked_at: None, ..revoked.clone() };
    commit(tx, actor, Change::new("revoke_key", "tenant", tenant).before(&before).after(&revoked)).await
}

/// Sets the limits on an active key's calls. Unless `may_loosen` (an owner's change), they may
/// only tighten the key's: each limit it has stays, no higher.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %tenant, %id))]
pub async fn set_limits(
    pool: &PgPool,
    actor: &Actor,
    tenant: &TenantSlug,
    id: Uuid,
    limits: CallLimits,
    may_loosen: bool,
) -> Result<ApiKey> {
    let mut tx = pool.begin().await?;
    let before = sqlx::query_scalar!(
        r#"select k.limits as "limits: Json<CallLimits>" from api_key k join tenant t on t.id = k.tenant_id
           where k.id = $1 and t.slug = $2 and k.revoked_at is null for update of k"#,
        id,
        tenant.as_str()
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("active key {id} of `{tenant}`")))?;
    // Checked under the row's lock: a concurrent change cannot slip between check and write.
    if !may_loosen && let Some(refusal) = loosening(&before.0, &limits) {
        return Err(Error::Forbidden(refusal));
    }
    let key = sqlx::query_as!(
        ApiKey,
        r#"update api_key set limits = $2 where id = $1
           returning id, name, prefix, created_at, last_used_at, revoked_at, expires_at,
                     limits as "limits: Json<CallLimits>""#,
        id,
        Json(limits) as _,
    )
    .fetch_one(&mut *tx)
    .await?;
    let change = Change::new("set_key_limits", "tenant", tenant)
        .before(&serde_json::json!({ "key": id, "limits": before }))
        .after(&serde_json::json!({ "key": id, "limits": key.limits }));
    commit(tx, actor, change).await?;
    Ok(key)
}

/// Why `after` loosens the limits `before` (a limit removed or raised), if it does, naming
/// each limit with the most it may be.
fn loosening(before: &CallLimits, after: &CallLimits) -> Option<String> {
    let limits = [
        ("per_minute", before.per_minute, after.per_minute),
        ("per_day", before.per_day, after.per_day),
        ("concurrent", before.concurrent, after.concurrent),
    ];
    let loosened: Vec<String> = limits
        .into_iter()
        .filter_map(|(name, was, now)| {
            let max = was?;
            now.is_none_or(|now| now > max).then(|| format!("{name} at most {max}"))
        })
        .collect();
    (!loosened.is_empty())
        .then(|| format!("only an owner may remove or raise a key's limits: keep {}", loosened.join(", ")))
}

/// Records that a key was used; at most once a minute per key, so the hot path rarely writes.
pub async fn touch(pool: &PgPool, id: Uuid) -> Result<()> {
    sqlx::query!(
        "update api_key set last_used_at = now()
         where id = $1 and (last_used_at is null or last_used_at < now() - interval '1 minute')",
        id
    )
    .execute(pool)
    .await?;
    Ok(())
}
