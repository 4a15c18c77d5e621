//! Upstream MCP servers: how to reach them (credentials encrypted), and what they publish,
//! with each tool's definition pinned against tool poisoning: a changed description or schema
//! waits for an admin's approval while the pinned definition is served (or the tool is held).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::sources::{self, NewSource, Source};
use super::{Actor, Change, Error, Result, SecretInput, commit};
use crate::model::{Name, SourceKind, TenantSlug};
use crate::secret::SecretBox;

mod config;
mod oauth;
mod pinning;
mod sealing;

pub use config::{EnvValue, OnDefinitionChange, ServerConfig, Transport};
pub use oauth::{Credential, OAuthGrant, OAuthMode, OAuthSettings};
pub use pinning::{DiscoveryReport, PendingChange, approve, pending_changes, record_discovery, reject};
pub(crate) use sealing::StoredSecrets;
pub(crate) use sealing::given_for_target;
use sealing::{Target, drop_given_for_target, open, seal_env, seal_headers};

/// A server as it is read back: secrets appear only as the names that are set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Server {
    pub source: Source,
    pub transport: Transport,
    pub url: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    /// Plain values shown; secret ones as `{"set": true}`.
    pub env: BTreeMap<String, EnvValue>,
    pub header_names: Vec<String>,
    /// Its OAuth settings, the client secret as `{"set": true}`.
    pub oauth: Option<OAuthSettings>,
    pub on_definition_change: OnDefinitionChange,
    pub new_tools_enabled: bool,
}

/// Everything needed to open a connection, secrets decrypted. Only the upstream module
/// builds these, right before connecting.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub transport: Transport,
    pub url: Option<String>,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    /// Whose OAuth token the connection carries.
    pub credential: Credential,
}

pub(crate) struct ServerRow {
    source_id: Uuid,
    transport: Transport,
    url: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    cwd: Option<String>,
    env: Value,
    headers: Value,
    pub(crate) on_definition_change: OnDefinitionChange,
    new_tools_enabled: bool,
    oauth_mode: Option<OAuthMode>,
    oauth_grant: Option<OAuthGrant>,
    oauth_client_id: Option<String>,
    oauth_client_secret: Option<String>,
    oauth_scopes: Option<Vec<String>>,
}

impl ServerRow {
    /// How to connect, with `headers` (a tenant's own credentials) replacing the server's, and
    /// `credential`'s token.
    fn endpoint(
        self,
        secrets: &SecretBox,
        headers: Option<Value>,
        credential: Credential,
    ) -> Result<Endpoint> {
        Ok(Endpoint {
            transport: self.transport,
            env: open(secrets, &self.env)?,
            headers: open(secrets, headers.as_ref().unwrap_or(&self.headers))?,
            url: self.url,
            command: self.command,
            args: self.args,
            cwd: self.cwd,
            credential,
        })
    }

    /// The OAuth settings as reads show them, the client secret as `{set: true}`.
    fn shown_oauth(&self) -> Option<OAuthSettings> {
        Some(OAuthSettings {
            mode: self.oauth_mode?,
            grant: self.oauth_grant.unwrap_or_default(),
            client_id: self.oauth_client_id.clone(),
            client_secret: self.oauth_client_secret.as_ref().map(|_| SecretInput::SET),
            scopes: self.oauth_scopes.clone().unwrap_or_default(),
        })
    }

    /// The environment as reads show it: plain values, and secrets as `{set: true}`.
    fn shown_env(&self) -> BTreeMap<String, EnvValue> {
        let shown = |value: &Value| match value {
            Value::String(plain) => EnvValue::Plain(plain.clone()),
            _ => EnvValue::Secret(SecretInput::SET),
        };
        self.env.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), shown(v))).collect()
    }

    pub(crate) fn secrets(&self) -> StoredSecrets {
        let target = Some(Target::of(&self.url, &self.command, &self.args, &self.cwd));
        StoredSecrets {
            env: self.env.clone(),
            headers: self.headers.clone(),
            client_secret: self.oauth_client_secret.clone(),
            target,
        }
    }

    /// The server as the configuration document shows it, secrets as `{set: true}`.
    pub(crate) fn config(&self, source: &Source, tenant: Option<TenantSlug>) -> Result<ServerConfig> {
        let env = self.shown_env();
        let headers = self
            .headers
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| (k.clone(), SecretInput::SET))
            .collect();
        Ok(ServerConfig {
            name: Name::parse(&source.name)?,
            prefix: Some(source.prefix.clone()),
            transport: self.transport,
            url: self.url.clone(),
            command: self.command.clone(),
            args: self.args.clone(),
            cwd: self.cwd.clone(),
            env,
            headers,
            oauth: self.shown_oauth(),
            tenant,
            tags: crate::model::parse_tags(&source.tags)?,
            enabled: source.enabled,
            on_definition_change: self.on_definition_change,
            new_tools_enabled: self.new_tools_enabled,
        })
    }

    fn into_server(self, source: Source) -> Server {
        let env = self.shown_env();
        let oauth = self.shown_oauth();
        Server {
            oauth,
            source,
            transport: self.transport,
            on_definition_change: self.on_definition_change,
            url: self.url,
            command: self.command,
            args: self.args,
            cwd: self.cwd,
            env,
            header_names: self.headers.as_object().map(|h| h.keys().cloned().collect()).unwrap_or_default(),
            new_tools_enabled: self.new_tools_enabled,
        }
    }
}

pub(crate) async fn row(db: impl PgExecutor<'_>, source_id: Uuid) -> Result<ServerRow> {
    sqlx::query_as!(
        ServerRow,
        r#"select s.source_id as "source_id!", transport as "transport!: Transport", url, command, args as "args!", cwd,
                env as "env!", headers as "headers!",
                on_definition_change as "on_definition_change!: OnDefinitionChange",
                new_tools_enabled as "new_tools_enabled!",
                o.mode as "oauth_mode?: OAuthMode", o.grant_type as "oauth_grant?: OAuthGrant",
                o.client_id as oauth_client_id, o.client_secret as oauth_client_secret,
                o.scopes as "oauth_scopes?"
         from mcp_server s left join mcp_oauth o on o.source_id = s.source_id where s.source_id = $1"#,
        source_id
    )
    .fetch_optional(db)
    .await?
    .ok_or_else(|| Error::not_found(format!("MCP server {source_id}")))
}

/// Refuses a prefix another source that the same tenants see has already: their tools would
/// go by the same names, and a name several sources claim is served by none. (An empty prefix
/// keeps the upstream's names, which may or may not meet; the tenant page shows any conflict.)
async fn refuse_shared_prefix(
    tx: &mut Transaction<'_, Postgres>,
    source_id: Uuid,
    prefix: &str,
    tenant_id: Option<Uuid>,
) -> Result<()> {
    let other = sqlx::query_scalar!(
        "select name from source
         where id <> $1 and prefix = $2 and $2 <> ''
           and (tenant_id is null or $3::uuid is null or tenant_id = $3)
         order by name limit 1",
        source_id,
        prefix,
        tenant_id as Option<Uuid>,
    )
    .fetch_optional(&mut **tx)
    .await?;
    match other {
        Some(other) => Err(Error::Conflict(format!(
            "the server `{other}` has the prefix `{prefix}` already: both servers' tools would be named \
             `{prefix}_…` and a name two servers claim is served by neither; choose another prefix"
        ))),
        None => Ok(()),
    }
}

/// Writes `config` inside the caller's transaction as the server `existing` (a new one when
/// `None`). Secrets given as `{set: true}` keep their stored values. Returns its source id and
/// what tenants had given it that a move to a new target dropped (audited).
pub(crate) async fn write(
    tx: &mut Transaction<'_, Postgres>,
    secrets: &SecretBox,
    actor: &Actor,
    config: &ServerConfig,
    existing: Option<Uuid>,
) -> Result<(Uuid, Vec<String>)> {
    config.check()?;
    let tenant_id = match &config.tenant {
        Some(slug) => Some(super::tenants::get(&mut **tx, slug).await?.id),
        None => None,
    };
    let (source_id, stored) = match existing {
        Some(id) => (id, row(&mut **tx, id).await?.secrets()),
        None => {
            let new = NewSource {
                kind: SourceKind::Mcp,
                name: config.name.clone(),
                prefix: config.prefix().to_owned(),
                tags: config.tags.clone(),
                tenant: config.tenant.clone(),
            };
            (sources::insert(tx, &new).await?.id, StoredSecrets::default())
        }
    };
    sqlx::query!(
        "update source set prefix = $2, tags = $3, enabled = $4, tenant_id = $5 where id = $1",
        source_id,
        config.prefix(),
        &crate::model::tag_strings(&config.tags),
        config.enabled,
        tenant_id,
    )
    .execute(&mut **tx)
    .await?;
    refuse_shared_prefix(tx, source_id, config.prefix(), tenant_id).await?;
    let stored = stored.kept_for(config)?;
    let mut dropped = Vec::new();
    if stored.moved(config) {
        dropped = given_for_target(tx, source_id).await?;
        drop_given_for_target(tx, source_id).await?;
        if !dropped.is_empty() {
            let change = Change::new("drop_given_secrets", "server", &config.name)
                .after(&json!({"dropped": dropped, "reason": "the server's target changed"}));
            super::record(&mut **tx, actor, &change).await?;
        }
    }
    sqlx::query!(
        "insert into mcp_server (source_id, transport, url, command, args, cwd, env, headers,
                                 on_definition_change, new_tools_enabled)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         on conflict (source_id) do update set
            transport = excluded.transport, url = excluded.url, command = excluded.command,
            args = excluded.args, cwd = excluded.cwd, env = excluded.env, headers = excluded.headers,
            on_definition_change = excluded.on_definition_change,
            new_tools_enabled = excluded.new_tools_enabled",
        source_id,
        config.transport as Transport,
        config.url,
        config.command,
        &config.args,
        config.cwd,
        seal_env(secrets, &config.env, stored)?,
        seal_headers(secrets, &config.headers, stored)?,
        config.on_definition_change as OnDefinitionChange,
        config.new_tools_enabled,
    )
    .execute(&mut **tx)
    .await?;
    oauth::write(tx, secrets, source_id, config, stored).await?;
    Ok((source_id, dropped))
}

/// How to connect to a server that is not saved yet (to test it): every secret must be given
/// as a value.
pub fn probe_endpoint(config: &ServerConfig) -> Result<Endpoint> {
    config.check()?;
    let plain = |name: &str, secret: &SecretInput| {
        secret
            .new_value()
            .map(str::to_owned)
            .ok_or_else(|| Error::Invalid(format!("secret `{name}`: give its value to test the connection")))
    };
    let env = config
        .env
        .iter()
        .map(|(name, value)| match value {
            EnvValue::Plain(plain) => Ok((name.clone(), plain.clone())),
            EnvValue::Secret(secret) => Ok((name.clone(), plain(name, secret)?)),
        })
        .collect::<Result<_>>()?;
    let headers = config
        .headers
        .iter()
        .map(|(name, secret)| Ok((name.clone(), plain(name, secret)?)))
        .collect::<Result<_>>()?;
    Ok(Endpoint {
        transport: config.transport,
        url: config.url.clone(),
        command: config.command.clone(),
        args: config.args.clone(),
        cwd: config.cwd.clone(),
        env,
        headers,
        // An OAuth server is tested for what it answers without a token.
        credential: Credential::None,
    })
}

/// Registers a server: its source and connection settings, in one transaction.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), name = %config.name))]
pub async fn create(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    config: &ServerConfig,
) -> Result<Server> {
    let mut tx = pool.begin().await?;
    write(&mut tx, secrets, actor, config, None).await?;
    let server = load(&mut tx, &config.name).await?;
    commit(tx, actor, Change::new("create", "server", &config.name).after(&server)).await?;
    Ok(server)
}

/// A server as an update leaves it, with what its move to a new target dropped.
#[derive(Debug, Clone, Serialize)]
pub struct Updated {
    #[serde(flatten)]
    pub server: Server,
    /// What tenants had given the server for its old URL, command or working directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
}

/// Replaces a server's settings; secrets given as `{set: true}` keep their stored values.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), name = %config.name))]
pub async fn update(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    config: &ServerConfig,
) -> Result<Updated> {
    let mut tx = pool.begin().await?;
    let before = load(&mut tx, &config.name).await?;
    let (_, dropped) = write(&mut tx, secrets, actor, config, Some(before.source.id)).await?;
    let after = load(&mut tx, &config.name).await?;
    commit(tx, actor, Change::new("update", "server", &config.name).before(&before).after(&after)).await?;
    Ok(Updated { server: after, dropped })
}

/// A server as it is read back, by name.
async fn load(conn: &mut sqlx::PgConnection, name: &Name) -> Result<Server> {
    let source = sources::get(&mut *conn, name).await?;
    Ok(row(&mut *conn, source.id).await?.into_server(source))
}

pub async fn get(pool: &PgPool, name: &Name) -> Result<Server> {
    load(&mut *pool.acquire().await?, name).await
}

/// Every server's settings, by source id, in one query.
pub(crate) async fn rows(db: impl PgExecutor<'_>) -> Result<HashMap<Uuid, ServerRow>> {
    let rows = sqlx::query_as!(
        ServerRow,
        r#"select s.source_id as "source_id!", transport as "transport!: Transport", url, command, args as "args!", cwd,
                env as "env!", headers as "headers!",
                on_definition_change as "on_definition_change!: OnDefinitionChange",
                new_tools_enabled as "new_tools_enabled!",
                o.mode as "oauth_mode?: OAuthMode", o.grant_type as "oauth_grant?: OAuthGrant",
                o.client_id as oauth_client_id, o.client_secret as oauth_client_secret,
                o.scopes as "oauth_scopes?"
         from mcp_server s left join mcp_oauth o on o.source_id = s.source_id"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.source_id, r)).collect())
}

/// Every server with its source, in two queries however many there are.
async fn with_sources(pool: &PgPool) -> Result<Vec<(Source, ServerRow)>> {
    let mut rows = rows(pool).await?;
    let sources = sources::list(pool).await?;
    Ok(sources
        .into_iter()
        .filter_map(|source| {
            let row = rows.remove(&source.id)?;
            Some((source, row))
        })
        .collect())
}

pub async fn list(pool: &PgPool) -> Result<Vec<Server>> {
    Ok(with_sources(pool).await?.into_iter().map(|(source, row)| row.into_server(source)).collect())
}

/// Sets a tenant's own credentials (headers) for a shared server; `{set: true}` keeps a
/// stored value.
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), %server, %tenant))]
pub async fn set_credentials(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    server: &Name,
    tenant: &TenantSlug,
    headers: &BTreeMap<String, SecretInput>,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let source = sources::get(&mut *tx, server).await?;
    let tenant_id = super::tenants::get(&mut *tx, tenant).await?.id;
    let stored = sqlx::query_scalar!(
        "select headers from mcp_credential where source_id = $1 and tenant_id = $2",
        source.id,
        tenant_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    let stored = StoredSecrets { headers: stored.unwrap_or_default(), ..Default::default() };
    sqlx::query!(
        "insert into mcp_credential (source_id, tenant_id, headers) values ($1, $2, $3)
         on conflict (source_id, tenant_id) do update set headers = excluded.headers",
        source.id,
        tenant_id,
        seal_headers(secrets, headers, &stored)?,
    )
    .execute(&mut *tx)
    .await?;
    let names: Vec<&String> = headers.keys().collect();
    let change =
        Change::new("set_credentials", "server", server).after(&json!({"tenant": tenant, "headers": names}));
    commit(tx, actor, change).await
}

/// How to connect to a server for a call of `tenant`'s, by `account` when a person makes it: a
/// tenant's own credentials replace the server's headers (and make the connection private to
/// that tenant); an OAuth server's token is the one its mode says.
pub async fn endpoint(
    pool: &PgPool,
    secrets: &SecretBox,
    source_id: Uuid,
    tenant: Uuid,
    account: Option<Uuid>,
) -> Result<Endpoint> {
    let server = row(pool, source_id).await?;
    let credential = match server.oauth_mode {
        Some(mode) => oauth::credential(pool, source_id, mode, tenant, account).await?,
        None => Credential::None,
    };
    let tenant = Some(tenant);
    let tenant_headers: Option<Value> = match tenant {
        Some(tenant) => {
            sqlx::query_scalar!(
                "select headers from mcp_credential where source_id = $1 and tenant_id = $2",
                source_id,
                tenant
            )
            .fetch_optional(pool)
            .await?
        }
        None => None,
    };
    server.endpoint(secrets, tenant_headers, credential)
}

/// Every enabled server's name, source id and own endpoint: the one that discovers its tools,
/// with the first authorization available for an OAuth server (the shared one, else the
/// oldest).
pub async fn enabled_endpoints(pool: &PgPool, secrets: &SecretBox) -> Result<Vec<(String, Uuid, Endpoint)>> {
    let mut discovering = oauth::discovering(pool).await?;
    with_sources(pool)
        .await?
        .into_iter()
        .filter(|(source, _)| source.enabled)
        .map(|(source, row)| {
            let credential = match row.oauth_mode {
                Some(mode) => discovering
                    .remove(&source.id)
                    .map_or(Credential::Missing(mode), |id| Credential::OAuth { id, mode }),
                None => Credential::None,
            };
            Ok((source.name, source.id, row.endpoint(secrets, None, credential)?))
        })
        .collect()
}
