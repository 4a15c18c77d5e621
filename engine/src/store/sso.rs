//! The external OpenID Connect provider people sign in through (at most one), with its client
//! secret sealed like every secret, and the rules that map its people to tenants and roles.

use serde::{Deserialize, Serialize};
use sqlx::PgExecutor;
use sqlx::types::Json;

use super::{Result, SecretInput};
use crate::model::{Role, TenantSlug};

/// How Toolgate authenticates to the provider's token endpoint (providers differ: Google and
/// Entra take either, some only one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum SsoAuthMethod {
    #[default]
    ClientSecretBasic,
    ClientSecretPost,
}

/// Who a rule matches, and what it makes of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRule {
    /// People whose verified email address is at this domain (`acme.com`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_domain: Option<String>,
    /// People whose groups claim holds this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The tenant they join; none for owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<TenantSlug>,
    pub role: Role,
}

fn default_groups_claim() -> String {
    "groups".into()
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(String::from).to_vec()
}

/// The provider as the panel, the admin API and the configuration document write it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsoConfig {
    /// On the sign-in button: "Sign in with …".
    pub display_name: String,
    /// The issuer URL, whose `/.well-known/openid-configuration` is read.
    pub issuer: String,
    pub client_id: String,
    /// Left out: a public client (PKCE only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretInput>,
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub auth_method: SsoAuthMethod,
    /// Email-domain rules apply only to addresses the provider marks `email_verified`.
    #[serde(default = "crate::model::yes")]
    pub require_verified_email: bool,
    /// The ID token claim that lists the person's groups.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    #[serde(default)]
    pub rules: Vec<ClaimRule>,
}

/// The provider as stored: its secret sealed.
pub(crate) struct StoredSso {
    pub config: SsoConfig,
    pub sealed_secret: Option<String>,
}

pub(crate) async fn get(db: impl PgExecutor<'_>) -> Result<Option<StoredSso>> {
    let row = sqlx::query!(
        r#"select display_name, issuer, client_id, client_secret, scopes,
                  auth_method as "auth_method: SsoAuthMethod", require_verified_email, groups_claim,
                  rules as "rules: Json<Vec<ClaimRule>>"
           from sso_provider"#
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|row| StoredSso {
        config: SsoConfig {
            display_name: row.display_name,
            issuer: row.issuer,
            client_id: row.client_id,
            client_secret: row.client_secret.as_ref().map(|_| SecretInput::SET),
            scopes: row.scopes,
            auth_method: row.auth_method,
            require_verified_email: row.require_verified_email,
            groups_claim: row.groups_claim,
            rules: row.rules.0,
        },
        sealed_secret: row.client_secret,
    }))
}

/// Writes the provider (its secret already sealed), unaudited: the caller records it.
pub(crate) async fn put(
    db: impl PgExecutor<'_>,
    config: &SsoConfig,
    sealed_secret: Option<&str>,
) -> Result<()> {
    sqlx::query!(
        "insert into sso_provider (id, display_name, issuer, client_id, client_secret, scopes, auth_method,
                                   require_verified_email, rules, groups_claim)
         values (true, $1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (id) do update set display_name = excluded.display_name, issuer = excluded.issuer,
             client_id = excluded.client_id, client_secret = excluded.client_secret, scopes = excluded.scopes,
             auth_method = excluded.auth_method, require_verified_email = excluded.require_verified_email,
             rules = excluded.rules, groups_claim = excluded.groups_claim",
        config.display_name,
        config.issuer,
        config.client_id,
        sealed_secret,
        &config.scopes,
        config.auth_method as SsoAuthMethod,
        config.require_verified_email,
        Json(&config.rules) as _,
        config.groups_claim,
    )
    .execute(db)
    .await?;
    Ok(())
}

pub(crate) async fn delete(db: impl PgExecutor<'_>) -> Result<()> {
    sqlx::query!("delete from sso_provider").execute(db).await?;
    Ok(())
}
