//! Toolgate as the client of upstream MCP servers: its connections' settings and state, and
//! an account's authorization at a server that signs its users in with OAuth (`upstream`
//! connects).

use sqlx::PgPool;
use uuid::Uuid;

pub use crate::upstream::oauth;
pub use crate::upstream::{ConnectionStatus, UpstreamConfig, Upstreams, connect_link};

use crate::admin::{self, AdminUser, Role};
use crate::model::{Name, TenantSlug};
use crate::store::authorizations::Owner;
use crate::store::servers::OAuthMode;
use crate::{Error, Result, store};

/// Whose authorization `account` may give of a server, from a request's `for`: `me` (a
/// per-person server), `shared` (owners), or `tenant:<slug>` (a per-tenant server, by an
/// administrator of that tenant).
pub async fn owner_for(
    pool: &PgPool,
    account: &AdminUser,
    server: &Name,
    wanted: &str,
) -> Result<(Uuid, Owner)> {
    let found = store::servers::get(pool, server).await?;
    let mode = found
        .oauth
        .map(|oauth| oauth.mode)
        .ok_or_else(|| Error::Invalid(format!("server `{server}` does not use OAuth")))?;
    let owner = match wanted.split_once(':') {
        None if wanted == "shared" => {
            if account.role != Role::Owner {
                return Err(Error::Forbidden("only owners authorize a server for every tenant".into()));
            }
            Owner::Shared
        }
        None if wanted == "me" && mode == OAuthMode::User => Owner::Account(account.id),
        Some(("tenant", slug)) if mode == OAuthMode::Tenant => {
            if !admin::scope(pool, account).await?.allows(slug) {
                return Err(Error::Forbidden(format!("only administrators of tenant `{slug}` authorize it")));
            }
            Owner::Tenant(store::tenants::get(pool, &TenantSlug::parse(slug)?).await?.id)
        }
        _ => {
            return Err(Error::Invalid(format!(
                "server `{server}` takes {} authorizations, not `{wanted}`",
                match mode {
                    OAuthMode::Shared => "shared (`shared`)",
                    OAuthMode::Tenant => "per-tenant (`tenant:<slug>`) and shared",
                    OAuthMode::User => "per-person (`me`) and shared",
                }
            )));
        }
    };
    Ok((found.source.id, owner))
}
