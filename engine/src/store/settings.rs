//! Global settings: the tools switch and the default tag whitelist.

use serde::Serialize;
use sqlx::{PgExecutor, PgPool};

use super::{Actor, Change, Result, commit};
use crate::model::{Tag, tag_strings};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settings {
    pub tools_enabled: bool,
    /// Enabled tags of a tenant that sets none.
    pub default_tags: Vec<String>,
}

pub async fn get(db: impl PgExecutor<'_>) -> Result<Settings> {
    Ok(sqlx::query_as!(Settings, "select tools_enabled, default_tags from setting").fetch_one(db).await?)
}

#[tracing::instrument(skip_all, err, fields(actor = actor.as_str()))]
pub async fn update(
    pool: &PgPool,
    actor: &Actor,
    tools_enabled: bool,
    default_tags: &[Tag],
) -> Result<Settings> {
    let mut tx = pool.begin().await?;
    let before = sqlx::query_as!(Settings, "select tools_enabled, default_tags from setting for update")
        .fetch_one(&mut *tx)
        .await?;
    let after = Settings { tools_enabled, default_tags: tag_strings(default_tags) };
    write(&mut *tx, &after).await?;
    commit(tx, actor, Change::new("update", "settings", "global").before(&before).after(&after)).await?;
    Ok(after)
}

/// Writes the settings, unaudited: the caller's transaction records the change.
pub(crate) async fn write(db: impl PgExecutor<'_>, settings: &Settings) -> Result<()> {
    sqlx::query!(
        "update setting set tools_enabled = $1, default_tags = $2",
        settings.tools_enabled,
        &settings.default_tags,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Locks the settings row until the caller's transaction ends: whole-configuration applies
/// take it, so they run one at a time.
pub(crate) async fn lock(db: impl PgExecutor<'_>) -> Result<()> {
    sqlx::query!("select id from setting for update").fetch_one(db).await?;
    Ok(())
}

/// How people sign in with a password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SignInSettings {
    /// `false`: only [`Self::break_glass_owner`] signs in with a password; everyone else
    /// through the OpenID provider.
    pub local_passwords: bool,
    /// The owner account kept for emergencies while local passwords are off.
    pub break_glass_owner: Option<String>,
}

pub async fn sign_in(db: impl PgExecutor<'_>) -> Result<SignInSettings> {
    Ok(sqlx::query_as!(SignInSettings, "select local_passwords, break_glass_owner from setting")
        .fetch_one(db)
        .await?)
}

/// Sets how people sign in, unaudited (the caller's transaction records the change).
pub(crate) async fn write_sign_in(db: impl PgExecutor<'_>, sign_in: &SignInSettings) -> Result<()> {
    sqlx::query!(
        "update setting set local_passwords = $1, break_glass_owner = $2",
        sign_in.local_passwords,
        sign_in.break_glass_owner,
    )
    .execute(db)
    .await?;
    Ok(())
}
