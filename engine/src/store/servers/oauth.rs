//! An OAuth-protected server's settings: whose token a call uses (the mode), how Toolgate gets
//! one (the grant), and the client it is at the provider; and which stored authorization a
//! connection uses.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::sealing::StoredSecrets;
use super::{ServerConfig, Transport};
use crate::secret::SecretBox;
use crate::store::{Error, Result, SecretInput};

/// Whose token a call to an OAuth-protected server carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum OAuthMode {
    /// One authorization, an administrator's, for every tenant.
    Shared,
    /// Each tenant's own, given by a tenant administrator.
    Tenant,
    /// Each person's own: a call acts as the person who makes it.
    User,
}

impl OAuthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthMode::Shared => "shared",
            OAuthMode::Tenant => "tenant",
            OAuthMode::User => "user",
        }
    }
}

/// How Toolgate gets a token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person authorizes in their browser (PKCE); refreshed with the refresh token.
    #[default]
    AuthorizationCode,
    /// Machine to machine: Toolgate's own client id and secret, no person involved.
    ClientCredentials,
}

/// A server's OAuth settings as an admin gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    pub mode: OAuthMode,
    #[serde(default)]
    pub grant: OAuthGrant,
    /// A client registered with the provider beforehand; left out, Toolgate registers itself
    /// (its Client ID Metadata Document, or dynamic registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretInput>,
    /// Scopes to ask for; left out, the ones the server's metadata names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

impl OAuthSettings {
    pub(super) fn check(&self, config: &ServerConfig) -> Result<()> {
        if config.transport != Transport::StreamableHttp {
            return Err(Error::Invalid("OAuth is for streamable HTTP servers".into()));
        }
        if config.headers.keys().any(|name| name.eq_ignore_ascii_case("authorization")) {
            return Err(Error::Invalid(
                "an OAuth server's `Authorization` header is its token: leave that header out".into(),
            ));
        }
        if self.client_id.as_ref().is_some_and(|id| id.trim().is_empty() || id.len() > 2000) {
            return Err(Error::Invalid("the OAuth client id must be 1 to 2000 characters".into()));
        }
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err(Error::Invalid("an OAuth client secret needs its client id".into()));
        }
        if let Some(scope) = self.scopes.iter().find(|s| s.is_empty() || s.contains(char::is_whitespace)) {
            return Err(Error::Invalid(format!(
                "OAuth scope `{scope}` is empty or has spaces: give one scope each"
            )));
        }
        if self.grant == OAuthGrant::ClientCredentials
            && (self.client_secret.is_none() || self.mode != OAuthMode::Shared)
        {
            return Err(Error::Invalid(
                "the client_credentials grant needs a client id and secret, and the shared mode".into(),
            ));
        }
        Ok(())
    }

    /// The settings as a diff shows them: the client secret as `{set: true}`.
    pub(super) fn redacted(&self, stored_secret: Option<&str>) -> Result<Value> {
        let mut shown = serde_json::to_value(OAuthSettings { client_secret: None, ..self.clone() })
            .expect("settings serialise");
        if let Some(secret) = &self.client_secret {
            shown["client_secret"] = secret.redact("client_secret", stored_secret)?;
        }
        Ok(shown)
    }
}

/// Whose token a connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Credential {
    /// None: the server is not an OAuth one.
    None,
    /// The token of this stored authorization, of a server in this mode.
    OAuth { id: Uuid, mode: OAuthMode },
    /// An OAuth server with no usable authorization for this caller.
    Missing(OAuthMode),
}

/// Writes a server's OAuth settings inside the caller's transaction. Tokens never follow a
/// server to another target or client: they, and the client Toolgate registered, are dropped
/// then; a new mode drops the authorizations it does not use (the shared one stays: it
/// discovers a per-tenant or per-person server's tools).
pub(super) async fn write(
    tx: &mut Transaction<'_, Postgres>,
    secrets: &SecretBox,
    source_id: Uuid,
    config: &ServerConfig,
    stored: &StoredSecrets,
) -> Result<()> {
    let Some(oauth) = &config.oauth else {
        sqlx::query!("delete from mcp_oauth where source_id = $1", source_id).execute(&mut **tx).await?;
        return Ok(());
    };
    let secret = oauth
        .client_secret
        .as_ref()
        .map(|secret| secret.seal(secrets, "client_secret", stored.client_secret.as_deref()))
        .transpose()?;
    let previous_client =
        sqlx::query_scalar!("select client_id from mcp_oauth where source_id = $1", source_id)
            .fetch_optional(&mut **tx)
            .await?;
    sqlx::query!(
        "insert into mcp_oauth (source_id, mode, grant_type, client_id, client_secret, scopes)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (source_id) do update set
            mode = excluded.mode, grant_type = excluded.grant_type, client_id = excluded.client_id,
            client_secret = excluded.client_secret, scopes = excluded.scopes",
        source_id,
        oauth.mode as OAuthMode,
        oauth.grant as OAuthGrant,
        oauth.client_id,
        secret,
        &oauth.scopes,
    )
    .execute(&mut **tx)
    .await?;
    let new_client = previous_client.is_some_and(|previous| previous != oauth.client_id);
    if new_client || stored.moved(config) {
        sqlx::query!("update mcp_oauth set registered = null where source_id = $1", source_id)
            .execute(&mut **tx)
            .await?;
        sqlx::query!("delete from mcp_authorization where source_id = $1", source_id)
            .execute(&mut **tx)
            .await?;
    }
    sqlx::query!(
        "delete from mcp_authorization
         where source_id = $1 and (tenant_id is not null or account_id is not null)
           and not (($2 = 'tenant' and tenant_id is not null) or ($2 = 'user' and account_id is not null))",
        source_id,
        oauth.mode.as_str(),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The authorization a call of `tenant`'s, by `account` when a person makes it, uses.
pub(super) async fn credential(
    pool: &PgPool,
    source_id: Uuid,
    mode: OAuthMode,
    tenant: Uuid,
    account: Option<Uuid>,
) -> Result<Credential> {
    let (tenant, account) = match (mode, account) {
        (OAuthMode::Shared, _) => (None, None),
        (OAuthMode::Tenant, _) => (Some(tenant), None),
        (OAuthMode::User, Some(account)) => (None, Some(account)),
        (OAuthMode::User, None) => return Ok(Credential::Missing(mode)),
    };
    let id = sqlx::query_scalar!(
        "select id from mcp_authorization
         where source_id = $1 and tenant_id is not distinct from $2 and account_id is not distinct from $3
           and status = 'active'",
        source_id,
        tenant,
        account,
    )
    .fetch_optional(pool)
    .await?;
    Ok(id.map_or(Credential::Missing(mode), |id| Credential::OAuth { id, mode }))
}

/// For each OAuth server with a usable authorization, the one that discovers its tools: the
/// shared one, else the oldest.
pub(super) async fn discovering(pool: &PgPool) -> Result<HashMap<Uuid, Uuid>> {
    let rows = sqlx::query!(
        "select distinct on (source_id) source_id, id from mcp_authorization
         where status = 'active'
         order by source_id, (tenant_id is null and account_id is null) desc, authorized_at"
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|row| (row.source_id, row.id)).collect())
}
