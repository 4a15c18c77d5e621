//! Toolgate's OAuth authorization server in PostgreSQL: clients, authorizations waiting for
//! consent, grants (a person's consent to a client, per tenant endpoint), one-use codes and
//! tokens. Codes and tokens are stored as SHA-256 like API keys. The rules are
//! [`crate::oauth`]'s; revocations that must reach every replica at once commit with the
//! configuration notification (the gateways' token caches are bound to the snapshot version).

use sqlx::{PgExecutor, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Actor, Change, Result, commit};

/// How a client identifies itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum ClientKind {
    /// Its id is the URL of its Client ID Metadata Document.
    MetadataDocument,
    /// Registered through RFC 7591 dynamic registration.
    Dynamic,
    /// Registered by an owner in the panel or the admin API.
    Preregistered,
}

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: PKCE only.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Client {
    pub id: String,
    pub kind: ClientKind,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub client_uri: Option<String>,
    pub auth_method: AuthMethod,
    #[serde(skip)]
    pub secret_hash: Option<Vec<u8>>,
    /// Metadata documents: when to fetch it again.
    #[serde(skip)]
    pub fresh_until: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

pub async fn client(db: impl PgExecutor<'_>, id: &str) -> Result<Option<Client>> {
    Ok(sqlx::query_as!(
        Client,
        r#"select id, kind as "kind: ClientKind", name, redirect_uris, client_uri,
                  auth_method as "auth_method: AuthMethod", secret_hash, fresh_until, created_at
           from oauth_client where id = $1"#,
        id
    )
    .fetch_optional(db)
    .await?)
}

/// The clients an owner registered.
pub async fn preregistered(db: impl PgExecutor<'_>) -> Result<Vec<Client>> {
    Ok(sqlx::query_as!(
        Client,
        r#"select id, kind as "kind: ClientKind", name, redirect_uris, client_uri,
                  auth_method as "auth_method: AuthMethod", secret_hash, fresh_until, created_at
           from oauth_client where kind = 'preregistered' order by created_at"#
    )
    .fetch_all(db)
    .await?)
}

/// Records (or refreshes) a client as its metadata document describes it.
pub(crate) async fn save_fetched(db: impl PgExecutor<'_>, client: &Client) -> Result<()> {
    sqlx::query!(
        "insert into oauth_client (id, kind, name, redirect_uris, client_uri, auth_method, fresh_until)
         values ($1, 'metadata_document', $2, $3, $4, $5, $6)
         on conflict (id) do update set name = excluded.name, redirect_uris = excluded.redirect_uris,
             client_uri = excluded.client_uri, auth_method = excluded.auth_method,
             fresh_until = excluded.fresh_until",
        client.id,
        client.name,
        &client.redirect_uris,
        client.client_uri,
        client.auth_method as AuthMethod,
        client.fresh_until,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Adds a client (registered dynamically or by an owner).
pub(crate) async fn insert(db: impl PgExecutor<'_>, client: &Client, from: Option<&str>) -> Result<()> {
    sqlx::query!(
        "insert into oauth_client (id, kind, name, redirect_uris, client_uri, auth_method, secret_hash,
                                   registered_from)
         values ($1, $2, $3, $4, $5, $6, $7, $8)",
        client.id,
        client.kind as ClientKind,
        client.name,
        &client.redirect_uris,
        client.client_uri,
        client.auth_method as AuthMethod,
        client.secret_hash,
        from,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Registers a client an owner entered, audited.
pub async fn create_preregistered(pool: &PgPool, actor: &Actor, client: &Client) -> Result<()> {
    let mut tx = pool.begin().await?;
    insert(&mut *tx, client, None).await?;
    commit(tx, actor, Change::new("create", "oauth_client", &client.id).after(client)).await
}

/// Removes a client an owner registered, and with it every grant and token it holds.
pub async fn delete_preregistered(pool: &PgPool, actor: &Actor, id: &str) -> Result<bool> {
    let mut tx = pool.begin().await?;
    let Some(before) = client(&mut *tx, id).await?.filter(|c| c.kind == ClientKind::Preregistered) else {
        return Ok(false);
    };
    sqlx::query!("delete from oauth_client where id = $1", id).execute(&mut *tx).await?;
    commit(tx, actor, Change::new("delete", "oauth_client", id).before(&before)).await?;
    Ok(true)
}

/// How many clients registered dynamically from `address` within the last `window`, and how
/// many dynamic clients no grant uses yet (from anywhere).
pub(crate) async fn recent_registrations(
    db: impl PgExecutor<'_>,
    address: &str,
    window: std::time::Duration,
) -> Result<(i64, i64)> {
    let counts = sqlx::query!(
        r#"select count(*) filter (where registered_from = $1
                                   and created_at > now() - make_interval(secs => $2)) as "from_here!",
                  count(*) filter (where not exists (select from oauth_grant g where g.client_id = c.id))
                      as "unused!"
           from oauth_client c where kind = 'dynamic'"#,
        address,
        window.as_secs_f64(),
    )
    .fetch_one(db)
    .await?;
    Ok((counts.from_here, counts.unused))
}

/// An authorization request, checked and waiting for its person's consent.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: Uuid,
    pub client_id: String,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: String,
    /// The slug of the endpoint's tenant, unchecked; `None` for the REST API (the person
    /// picks the tenant).
    pub tenant: Option<String>,
    pub scopes: Vec<String>,
    pub expires_at: OffsetDateTime,
}

pub(crate) async fn insert_request(db: impl PgExecutor<'_>, request: &Request) -> Result<()> {
    sqlx::query!(
        "insert into oauth_request (id, client_id, redirect_uri, state, code_challenge, resource, tenant,
                                    scopes, expires_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        request.id,
        request.client_id,
        request.redirect_uri,
        request.state,
        request.code_challenge,
        request.resource,
        request.tenant,
        &request.scopes,
        request.expires_at,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The request `id`, unless it expired.
pub(crate) async fn request(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Request>> {
    Ok(sqlx::query_as!(
        Request,
        "select id, client_id, redirect_uri, state, code_challenge, resource, tenant, scopes, expires_at
         from oauth_request where id = $1 and expires_at > now()",
        id
    )
    .fetch_optional(db)
    .await?)
}

/// Takes the request `id` (it is answered once), unless it expired.
pub(crate) async fn take_request(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Request>> {
    Ok(sqlx::query_as!(
        Request,
        "delete from oauth_request where id = $1 and expires_at > now()
         returning id, client_id, redirect_uri, state, code_challenge, resource, tenant, scopes, expires_at",
        id
    )
    .fetch_optional(db)
    .await?)
}

/// A person's consent to a client for one tenant endpoint, with its names for showing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    pub id: Uuid,
    pub account_id: Uuid,
    pub username: String,
    pub client_id: String,
    pub client_name: String,
    pub client_kind: ClientKind,
    pub tenant_id: Uuid,
    pub tenant: String,
    pub resource: String,
    pub scopes: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
}

/// The grant of these four, if one is active.
pub(crate) async fn active_grant(
    db: impl PgExecutor<'_>,
    account: Uuid,
    client: &str,
    tenant: Uuid,
    resource: &str,
) -> Result<Option<Grant>> {
    let grants = grants(db, Some(account), Some(tenant)).await?;
    Ok(grants.into_iter().find(|g| g.client_id == client && g.resource == resource))
}

/// The active grants of an account, or of a tenant, newest first.
pub async fn grants(
    db: impl PgExecutor<'_>,
    account: Option<Uuid>,
    tenant: Option<Uuid>,
) -> Result<Vec<Grant>> {
    Ok(sqlx::query_as!(
        Grant,
        r#"select g.id, g.account_id, a.username, g.client_id, c.name as client_name,
                  c.kind as "client_kind: ClientKind", g.tenant_id, t.slug as tenant, g.resource, g.scopes,
                  g.created_at, g.last_used_at
           from oauth_grant g join admin_user a on a.id = g.account_id join oauth_client c on c.id = g.client_id
                join tenant t on t.id = g.tenant_id
           where g.revoked_at is null and ($1::uuid is null or g.account_id = $1)
             and ($2::uuid is null or g.tenant_id = $2)
           order by g.created_at desc"#,
        account,
        tenant
    )
    .fetch_all(db)
    .await?)
}

/// Makes (or widens to `scopes`) the active grant of these four; its id.
pub(crate) async fn put_grant(
    db: impl PgExecutor<'_>,
    account: Uuid,
    client: &str,
    tenant: Uuid,
    resource: &str,
    scopes: &[String],
) -> Result<Uuid> {
    Ok(sqlx::query_scalar!(
        "insert into oauth_grant (account_id, client_id, tenant_id, resource, scopes)
         values ($1, $2, $3, $4, $5)
         on conflict (account_id, client_id, tenant_id, resource) where revoked_at is null
             do update set scopes = (select array(select distinct unnest(oauth_grant.scopes || excluded.scopes)
                                                  order by 1))
         returning id",
        account,
        client,
        tenant,
        resource,
        scopes
    )
    .fetch_one(db)
    .await?)
}

/// Revokes the grant `id` (if `account` or `tenant` is given, only one of theirs) and deletes
/// its codes and tokens; audited, and every replica drops its tokens at once. Whether there
/// was one to revoke.
pub async fn revoke_grant(
    pool: &PgPool,
    actor: &Actor,
    id: Uuid,
    account: Option<Uuid>,
    tenant: Option<Uuid>,
) -> Result<bool> {
    let mut tx = pool.begin().await?;
    let revoked = sqlx::query!(
        "update oauth_grant set revoked_at = now()
         where id = $1 and revoked_at is null and ($2::uuid is null or account_id = $2)
           and ($3::uuid is null or tenant_id = $3)
         returning client_id, account_id, tenant_id",
        id,
        account,
        tenant
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(revoked) = revoked else { return Ok(false) };
    forget_grant_secrets(&mut tx, &[id]).await?;
    let what = serde_json::json!({
        "client_id": revoked.client_id, "account_id": revoked.account_id, "tenant_id": revoked.tenant_id,
    });
    commit(tx, actor, Change::new("revoke", "oauth_grant", id).before(&what)).await?;
    Ok(true)
}

/// Revokes the active grants of `account` (for `tenant`, or every tenant), unaudited: the
/// caller's transaction records why.
pub(crate) async fn revoke_grants_of(
    tx: &mut sqlx::PgTransaction<'_>,
    account: Uuid,
    tenant: Option<Uuid>,
) -> Result<()> {
    let ids = sqlx::query_scalar!(
        "update oauth_grant set revoked_at = now()
         where account_id = $1 and revoked_at is null and ($2::uuid is null or tenant_id = $2) returning id",
        account,
        tenant
    )
    .fetch_all(&mut **tx)
    .await?;
    forget_grant_secrets(tx, &ids).await
}

async fn forget_grant_secrets(tx: &mut sqlx::PgTransaction<'_>, grants: &[Uuid]) -> Result<()> {
    sqlx::query!("delete from oauth_token where grant_id = any($1)", grants).execute(&mut **tx).await?;
    sqlx::query!("delete from oauth_code where grant_id = any($1)", grants).execute(&mut **tx).await?;
    Ok(())
}

/// Revokes grant `id` because one of its one-use secrets (a code, a refresh token) was
/// presented twice: somebody else may hold it. Audited as the system's doing.
pub(crate) async fn revoke_for_reuse(pool: &PgPool, id: Uuid, what: &str) -> Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query!("update oauth_grant set revoked_at = now() where id = $1 and revoked_at is null", id)
        .execute(&mut *tx)
        .await?;
    forget_grant_secrets(&mut tx, &[id]).await?;
    let reason = serde_json::json!({"reason": format!("{what} presented a second time")});
    commit(tx, &Actor::system(), Change::new("revoke", "oauth_grant", id).after(&reason)).await
}

pub(crate) async fn insert_code(
    db: impl PgExecutor<'_>,
    code_hash: &[u8],
    grant: Uuid,
    redirect_uri: &str,
    code_challenge: &str,
    expires_at: OffsetDateTime,
) -> Result<()> {
    sqlx::query!(
        "insert into oauth_code (code_hash, grant_id, redirect_uri, code_challenge, expires_at)
         values ($1, $2, $3, $4, $5)",
        code_hash,
        grant,
        redirect_uri,
        code_challenge,
        expires_at,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A code or refresh token as presented, marked used by this very read. Only one of an active
/// grant whose person may still reach its tenant is found.
#[derive(Debug, Clone)]
pub(crate) struct Spent {
    pub grant_id: Uuid,
    pub client_id: String,
    pub resource: String,
    pub scopes: Vec<String>,
    /// When it had been used before: a second presentation.
    pub used_before: Option<OffsetDateTime>,
    /// A refresh token's second presentation within the retry window (the database's clock).
    pub retry: bool,
    pub expired: bool,
    /// Codes only.
    pub redirect_uri: Option<String>,
    pub code_challenge: Option<String>,
}

/// Marks the code used and returns it as it was, if it exists for an active grant.
pub(crate) async fn spend_code(db: impl PgExecutor<'_>, code_hash: &[u8]) -> Result<Option<Spent>> {
    Ok(sqlx::query_as!(
        Spent,
        r#"with old as (select * from oauth_code where code_hash = $1 for update)
           update oauth_code c set used_at = coalesce(c.used_at, now())
           from old, oauth_grant g
           where c.code_hash = old.code_hash and g.id = old.grant_id and g.revoked_at is null
             and grant_usable(g.account_id, g.tenant_id)
           returning g.id as grant_id, g.client_id, g.resource, g.scopes, old.used_at as used_before,
                     false as "retry!", old.expires_at <= now() as "expired!", old.redirect_uri as "redirect_uri?",
                     old.code_challenge as "code_challenge?""#,
        code_hash
    )
    .fetch_optional(db)
    .await?)
}

/// Marks the refresh token used and returns it as it was, if it exists for an active grant; a
/// second use within `retry_window` is a retry.
pub(crate) async fn spend_refresh_token(
    db: impl PgExecutor<'_>,
    token_hash: &[u8],
    retry_window: time::Duration,
) -> Result<Option<Spent>> {
    Ok(sqlx::query_as!(
        Spent,
        r#"with old as (select * from oauth_token where token_hash = $1 and kind = 'refresh' for update)
           update oauth_token t set used_at = coalesce(t.used_at, now())
           from old, oauth_grant g
           where t.token_hash = old.token_hash and g.id = old.grant_id and g.revoked_at is null
             and grant_usable(g.account_id, g.tenant_id)
           returning g.id as grant_id, g.client_id, g.resource, g.scopes, old.used_at as used_before,
                     coalesce(old.used_at > now() - make_interval(secs => $2), false) as "retry!",
                     old.expires_at <= now() as "expired!", null::text as "redirect_uri?",
                     null::text as "code_challenge?""#,
        token_hash,
        retry_window.as_seconds_f64()
    )
    .fetch_optional(db)
    .await?)
}

/// Deletes the tokens of `grant` issued since `first_use`: those a refresh token's first use
/// bought, when its retry gets new ones (one chain of tokens lives on).
pub(crate) async fn drop_tokens_since(
    db: impl PgExecutor<'_>,
    grant: Uuid,
    first_use: OffsetDateTime,
) -> Result<()> {
    sqlx::query!("delete from oauth_token where grant_id = $1 and created_at >= $2", grant, first_use)
        .execute(db)
        .await?;
    Ok(())
}

/// Issues an access token and a refresh token of `grant`.
pub(crate) async fn insert_tokens(
    db: impl PgExecutor<'_>,
    grant: Uuid,
    access: (&[u8], OffsetDateTime),
    refresh: (&[u8], OffsetDateTime),
) -> Result<()> {
    sqlx::query!(
        "insert into oauth_token (token_hash, grant_id, kind, expires_at)
         values ($1, $3, 'access', $2), ($4, $3, 'refresh', $5)",
        access.0,
        access.1,
        grant,
        refresh.0,
        refresh.1,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// What an access token stands for, read for the gateway.
#[derive(Debug, Clone)]
pub(crate) struct AccessRow {
    pub grant_id: Uuid,
    pub account_id: Uuid,
    pub username: String,
    pub client_name: String,
    pub tenant: String,
    pub resource: String,
    pub scopes: Vec<String>,
    pub expires_at: OffsetDateTime,
}

/// The access token of this hash, if its grant is active and its account enabled and still
/// of the grant's tenant (an owner, or assigned to it); it may have expired: the caller says so.
pub(crate) async fn access(db: impl PgExecutor<'_>, token_hash: &[u8]) -> Result<Option<AccessRow>> {
    Ok(sqlx::query_as!(
        AccessRow,
        "select g.id as grant_id, a.id as account_id, a.username, c.name as client_name, t.slug as tenant,
                g.resource, g.scopes, k.expires_at
         from oauth_token k join oauth_grant g on g.id = k.grant_id join admin_user a on a.id = g.account_id
              join oauth_client c on c.id = g.client_id join tenant t on t.id = g.tenant_id
         where k.token_hash = $1 and k.kind = 'access' and g.revoked_at is null
           and grant_usable(g.account_id, g.tenant_id)",
        token_hash
    )
    .fetch_optional(db)
    .await?)
}

/// Deletes one token (RFC 7009 revocation of an access token); whether it existed for `client`.
pub(crate) async fn delete_access_token(
    db: impl PgExecutor<'_>,
    token_hash: &[u8],
    client: &str,
) -> Result<bool> {
    let deleted = sqlx::query!(
        "delete from oauth_token k using oauth_grant g
         where k.token_hash = $1 and k.kind = 'access' and g.id = k.grant_id and g.client_id = $2",
        token_hash,
        client
    )
    .execute(db)
    .await?;
    Ok(deleted.rows_affected() > 0)
}

/// The grant a refresh token belongs to, if it is `client`'s.
pub(crate) async fn refresh_token_grant(
    db: impl PgExecutor<'_>,
    token_hash: &[u8],
    client: &str,
) -> Result<Option<Uuid>> {
    Ok(sqlx::query_scalar!(
        "select g.id from oauth_token k join oauth_grant g on g.id = k.grant_id
         where k.token_hash = $1 and k.kind = 'refresh' and g.client_id = $2 and g.revoked_at is null",
        token_hash,
        client
    )
    .fetch_optional(db)
    .await?)
}

/// Records that grants were used (at most once a minute each, by the caller).
pub(crate) async fn touch_grants(db: impl PgExecutor<'_>, ids: &[Uuid]) -> Result<()> {
    sqlx::query!("update oauth_grant set last_used_at = now() where id = any($1)", ids).execute(db).await?;
    Ok(())
}
