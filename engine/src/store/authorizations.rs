//! The tokens Toolgate holds for OAuth-protected upstream servers — the shared one, a
//! tenant's, a person's — sealed at rest, and the authorizations under way. Tokens are never
//! read back out of this module but to call the server they are for; lists show who
//! authorized, when, and until when, never a token.

use serde::Serialize;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Actor, Change, Error, Result, commit, notify_and_commit};
use crate::model::Name;
use crate::secret::{SecretBox, digest};

/// Whether an authorization's token works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Status {
    Active,
    /// Its refresh failed or was refused: someone must authorize again.
    NeedsAuthorization,
}

impl Status {
    /// How the panel shows it.
    pub fn label(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::NeedsAuthorization => "needs authorization",
        }
    }
}

/// An authorization as the panel and the admin API show it.
#[derive(Debug, Clone, Serialize)]
pub struct Authorization {
    pub id: Uuid,
    pub server: String,
    /// The tenant whose token it is (per-tenant mode).
    pub tenant: Option<String>,
    /// The person whose token it is (per-person mode).
    pub account: Option<String>,
    pub status: Status,
    /// Why it needs authorizing again.
    pub reason: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    pub authorized_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub authorized_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub refreshed_at: Option<OffsetDateTime>,
    /// The scopes the next authorization asks for, the server having wanted one its token
    /// lacked (empty: the usual ones).
    pub wanted_scopes: Vec<String>,
}

/// Whose authorization: the shared one, a tenant's, or a person's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Shared,
    Tenant(Uuid),
    Account(Uuid),
}

impl Owner {
    fn columns(self) -> (Option<Uuid>, Option<Uuid>) {
        match self {
            Owner::Shared => (None, None),
            Owner::Tenant(tenant) => (Some(tenant), None),
            Owner::Account(account) => (None, Some(account)),
        }
    }
}

/// Authorizations, of one server's and of one person's when given.
pub async fn list(pool: &PgPool, server: Option<&Name>, account: Option<Uuid>) -> Result<Vec<Authorization>> {
    select(pool, server, account, None).await
}

/// Authorizations, of one server's, one person's and with one id when given.
async fn select(
    pool: &PgPool,
    server: Option<&Name>,
    account: Option<Uuid>,
    id: Option<Uuid>,
) -> Result<Vec<Authorization>> {
    let rows = sqlx::query_as!(
        Authorization,
        r#"select a.id, s.name as server, t.slug as "tenant?", u.username as "account?",
                  a.status as "status: Status", a.reason, a.expires_at, a.authorized_by, a.authorized_at,
                  a.refreshed_at, a.wanted_scopes
           from mcp_authorization a
           join source s on s.id = a.source_id
           left join tenant t on t.id = a.tenant_id
           left join admin_user u on u.id = a.account_id
           where ($1::text is null or s.name = $1) and ($2::uuid is null or a.account_id = $2)
             and ($3::uuid is null or a.id = $3)
           order by s.name, t.slug nulls first, u.username nulls first"#,
        server.map(Name::as_str),
        account,
        id,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

/// One authorization, by id.
pub async fn get(pool: &PgPool, id: Uuid) -> Result<Authorization> {
    select(pool, None, None, Some(id))
        .await?
        .pop()
        .ok_or_else(|| Error::not_found(format!("authorization {id}")))
}

/// Forgets an authorization: its server's calls by its owner need a new one.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %id))]
pub async fn remove(pool: &PgPool, actor: &Actor, id: Uuid) -> Result<()> {
    let shown = get(pool, id).await?;
    let mut tx = pool.begin().await?;
    sqlx::query!("delete from mcp_authorization where id = $1", id).execute(&mut *tx).await?;
    commit(tx, actor, Change::new("remove", "authorization", id).before(&shown)).await
}

/// The sealed credentials of an active authorization; `None` once it needs authorizing again.
pub(crate) async fn credentials(pool: &PgPool, secrets: &SecretBox, id: Uuid) -> Result<Option<String>> {
    let sealed = sqlx::query_scalar!("select credentials from mcp_authorization where id = $1", id)
        .fetch_optional(pool)
        .await?
        .ok_or_else(|| Error::not_found(format!("authorization {id}")))?;
    sealed.map(|sealed| secrets.decrypt(&sealed).map_err(|e| Error::Invalid(e.to_string()))).transpose()
}

/// Stores refreshed credentials (JSON) of an authorization, sealed.
pub(crate) async fn refreshed(
    pool: &PgPool,
    secrets: &SecretBox,
    id: Uuid,
    credentials: &str,
    expires_at: Option<OffsetDateTime>,
) -> Result<()> {
    sqlx::query!(
        "update mcp_authorization
         set credentials = $2, expires_at = $3, refreshed_at = now(), status = 'active', reason = null
         where id = $1",
        id,
        secrets.encrypt(credentials),
        expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Marks an authorization as needing a new one, for `reason`, and tells every gateway.
pub(crate) async fn lost(pool: &PgPool, id: Uuid, reason: &str) -> Result<()> {
    mark_lost(pool, id, reason, None).await
}

/// Marks an authorization as needing a new one that asks for `scopes` (the server wants a
/// scope its token lacks), and tells every gateway.
pub(crate) async fn wants_scopes(pool: &PgPool, id: Uuid, reason: &str, scopes: &[String]) -> Result<()> {
    mark_lost(pool, id, reason, Some(scopes)).await
}

async fn mark_lost(pool: &PgPool, id: Uuid, reason: &str, scopes: Option<&[String]>) -> Result<()> {
    let mut tx = pool.begin().await?;
    let changed = sqlx::query!(
        "update mcp_authorization
         set credentials = null, status = 'needs_authorization', reason = $2,
             wanted_scopes = coalesce($3, wanted_scopes)
         where id = $1 and status = 'active'",
        id,
        reason,
        scopes as Option<&[String]>,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(());
    }
    tracing::warn!(authorization = %id, %reason, "an upstream authorization needs to be given again");
    notify_and_commit(tx, "authorization").await
}

/// The scopes `owner`'s authorization of the server must ask for, the server having wanted
/// more than an earlier one was granted: none, usually.
pub(crate) async fn wanted_scopes(pool: &PgPool, source_id: Uuid, owner: Owner) -> Result<Vec<String>> {
    let (tenant, account) = owner.columns();
    Ok(sqlx::query_scalar!(
        "select wanted_scopes from mcp_authorization
         where source_id = $1 and tenant_id is not distinct from $2 and account_id is not distinct from $3",
        source_id,
        tenant,
        account,
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or_default())
}

/// Stores what an authorization (or a client credentials exchange) gave: the owner's
/// authorization of the server is created, or replaced and working again.
pub(crate) async fn authorized(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    source_id: Uuid,
    owner: Owner,
    credentials: &str,
    expires_at: Option<OffsetDateTime>,
) -> Result<Uuid> {
    let (tenant, account) = owner.columns();
    let mut tx = pool.begin().await?;
    let id = sqlx::query_scalar!(
        "insert into mcp_authorization
            (source_id, tenant_id, account_id, credentials, expires_at, status, authorized_by)
         values ($1, $2, $3, $4, $5, 'active', $6)
         on conflict (source_id, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'),
                      coalesce(account_id, '00000000-0000-0000-0000-000000000000'))
         do update set credentials = excluded.credentials, expires_at = excluded.expires_at,
            status = 'active', reason = null, authorized_by = excluded.authorized_by,
            authorized_at = now(), refreshed_at = null
         returning id",
        source_id,
        tenant,
        account,
        secrets.encrypt(credentials),
        expires_at,
        actor.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    let shown = serde_json::json!({"source_id": source_id, "tenant_id": tenant, "account_id": account});
    commit(tx, actor, Change::new("authorize", "authorization", id).after(&shown)).await?;
    Ok(id)
}

/// An authorization under way, as it was started.
#[derive(Debug, Clone)]
pub struct Flow {
    pub source_id: Uuid,
    pub owner: Owner,
    pub started_by: Uuid,
    pub client_id: String,
    /// rmcp's stored authorization state (JSON).
    pub state: String,
    pub return_to: String,
}

/// How long a person has to finish an authorization.
const FLOW_LIFETIME_MINUTES: i32 = 10;

/// Records an authorization under way, under its `state` parameter (hashed); stale ones go.
pub(crate) async fn start_flow(
    pool: &PgPool,
    secrets: &SecretBox,
    state_param: &str,
    flow: &Flow,
) -> Result<()> {
    let (tenant, account) = flow.owner.columns();
    sqlx::query!(
        "delete from mcp_authorization_flow where created_at < now() - make_interval(mins => $1)",
        FLOW_LIFETIME_MINUTES
    )
    .execute(pool)
    .await?;
    sqlx::query!(
        "insert into mcp_authorization_flow
            (state_hash, source_id, tenant_id, account_id, started_by, client_id, state, return_to)
         values ($1, $2, $3, $4, $5, $6, $7, $8)",
        digest(state_param),
        flow.source_id,
        tenant,
        account,
        flow.started_by,
        flow.client_id,
        secrets.encrypt(&flow.state),
        flow.return_to,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The authorization under way with this `state` parameter, if it is not stale; it is
/// consumed (a callback is answered once).
pub(crate) async fn take_flow(pool: &PgPool, secrets: &SecretBox, state_param: &str) -> Result<Option<Flow>> {
    let row = sqlx::query!(
        "delete from mcp_authorization_flow where state_hash = $1
         returning source_id, tenant_id, account_id, started_by, client_id, state, return_to,
                   created_at > now() - make_interval(mins => $2) as \"fresh!\"",
        digest(state_param),
        FLOW_LIFETIME_MINUTES,
    )
    .fetch_optional(pool)
    .await?;
    let Some(row) = row.filter(|row| row.fresh) else { return Ok(None) };
    let owner = match (row.tenant_id, row.account_id) {
        (Some(tenant), _) => Owner::Tenant(tenant),
        (None, Some(account)) => Owner::Account(account),
        (None, None) => Owner::Shared,
    };
    Ok(Some(Flow {
        source_id: row.source_id,
        owner,
        started_by: row.started_by,
        client_id: row.client_id,
        state: secrets.decrypt(&row.state).map_err(|e| Error::Invalid(e.to_string()))?,
        return_to: row.return_to,
    }))
}

/// What Toolgate needs to be an OAuth-protected server's client.
#[derive(Clone)]
pub struct OAuthServer {
    pub name: String,
    pub url: String,
    pub mode: crate::store::servers::OAuthMode,
    pub grant: crate::store::servers::OAuthGrant,
    /// The client the admin gave, secret opened.
    pub client: Option<(String, Option<String>)>,
    pub scopes: Vec<String>,
    /// The client Toolgate registered itself.
    pub registered: Option<Registered>,
}

impl std::fmt::Debug for OAuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServer")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl OAuthServer {
    /// The secret of client `id`: the admin's client's, or the one Toolgate registered.
    pub fn secret_of(&self, id: &str) -> Option<String> {
        let given = self.client.as_ref().map(|(client, secret)| (client, secret));
        let registered = self.registered.as_ref().map(|r| (&r.client_id, &r.client_secret));
        given
            .into_iter()
            .chain(registered)
            .find(|(client, _)| *client == id)
            .and_then(|(_, secret)| secret.clone())
    }
}

/// An OAuth-protected server's client settings.
pub async fn oauth_server(pool: &PgPool, secrets: &SecretBox, source_id: Uuid) -> Result<OAuthServer> {
    let row = sqlx::query!(
        r#"select s.name, m.url as "url!", o.mode as "mode: crate::store::servers::OAuthMode",
                  o.grant_type as "grant: crate::store::servers::OAuthGrant", o.client_id, o.client_secret,
                  o.scopes, o.registered
           from mcp_oauth o join mcp_server m using (source_id) join source s on s.id = o.source_id
           where o.source_id = $1"#,
        source_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| Error::Invalid(format!("server {source_id} is not an OAuth server")))?;
    let open = |sealed: Option<&str>| {
        sealed.map(|sealed| secrets.decrypt(sealed).map_err(|e| Error::Invalid(e.to_string()))).transpose()
    };
    let registered = match &row.registered {
        Some(registered) => {
            let text = |field: &str| registered[field].as_str().unwrap_or_default().to_string();
            Some(Registered {
                issuer: text("issuer"),
                redirect_uri: text("redirect_uri"),
                client_id: text("client_id"),
                client_secret: open(registered["client_secret"].as_str())?,
            })
        }
        None => None,
    };
    let client = match row.client_id {
        Some(id) => Some((id, open(row.client_secret.as_deref())?)),
        None => None,
    };
    Ok(OAuthServer {
        name: row.name,
        url: row.url,
        mode: row.mode,
        grant: row.grant,
        client,
        scopes: row.scopes,
        registered,
    })
}

/// A client Toolgate registered dynamically for a server.
#[derive(Clone)]
pub struct Registered {
    /// The provider it is registered with.
    pub issuer: String,
    /// Toolgate's callback when it registered (its public URL may change).
    pub redirect_uri: String,
    pub client_id: String,
    pub client_secret: Option<String>,
}

/// Keeps the client Toolgate registered dynamically for a server, secret sealed.
pub(crate) async fn registered(
    pool: &PgPool,
    secrets: &SecretBox,
    source_id: Uuid,
    client: &Registered,
) -> Result<()> {
    let registered = serde_json::json!({
        "issuer": client.issuer,
        "redirect_uri": client.redirect_uri,
        "client_id": client.client_id,
        "client_secret": client.client_secret.as_deref().map(|secret| secrets.encrypt(secret)),
    });
    sqlx::query!("update mcp_oauth set registered = $2 where source_id = $1", source_id, registered)
        .execute(pool)
        .await?;
    Ok(())
}

/// A per-person server someone may connect their account of, and their authorization if any.
#[derive(Debug, Clone, Serialize)]
pub struct Connectable {
    pub server: String,
    pub authorization: Option<Authorization>,
}

/// The per-person servers `account` may use (shared ones, and its tenants'), each with its
/// authorization if it gave one.
pub async fn connectable(pool: &PgPool, account: Uuid, everything: bool) -> Result<Vec<Connectable>> {
    let servers = sqlx::query_scalar!(
        "select s.name from mcp_oauth o join source s on s.id = o.source_id
         where o.mode = 'user' and s.enabled
           and ($2 or s.tenant_id is null
                or s.tenant_id in (select tenant_id from admin_tenant where admin_id = $1))
         order by s.name",
        account,
        everything,
    )
    .fetch_all(pool)
    .await?;
    let mut mine = list(pool, None, Some(account)).await?;
    Ok(servers
        .into_iter()
        .map(|server| {
            let authorization = mine.iter().position(|a| a.server == server).map(|i| mine.remove(i));
            Connectable { server, authorization }
        })
        .collect())
}

/// The servers with an account per tenant that `tenant` uses (shared ones, and its own),
/// each with the tenant's authorization if one was given.
pub async fn tenant_connectable(pool: &PgPool, tenant: &str) -> Result<Vec<Connectable>> {
    let servers = sqlx::query_scalar!(
        "select s.name from mcp_oauth o join source s on s.id = o.source_id
         join tenant t on t.slug = $1
         where o.mode = 'tenant' and o.grant_type = 'authorization_code' and s.enabled
           and (s.tenant_id is null or s.tenant_id = t.id)
         order by s.name",
        tenant,
    )
    .fetch_all(pool)
    .await?;
    let mut theirs: Vec<Authorization> =
        list(pool, None, None).await?.into_iter().filter(|a| a.tenant.as_deref() == Some(tenant)).collect();
    Ok(servers
        .into_iter()
        .map(|server| {
            let authorization = theirs.iter().position(|a| a.server == server).map(|i| theirs.remove(i));
            Connectable { server, authorization }
        })
        .collect())
}

/// Forgets `account`'s own authorization `id`; whether it was theirs.
pub async fn remove_own(pool: &PgPool, actor: &Actor, account: Uuid, id: Uuid) -> Result<bool> {
    let owned = sqlx::query_scalar!("select account_id from mcp_authorization where id = $1", id)
        .fetch_optional(pool)
        .await?
        .flatten()
        == Some(account);
    if owned {
        remove(pool, actor, id).await?;
    }
    Ok(owned)
}
