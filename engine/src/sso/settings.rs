//! How people sign in, as configured: local passwords on or off (and the break-glass owner), and
//! the OpenID provider with its claim rules; read, checked, written and audited.

use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use crate::model::{Role, TenantSlug};
use crate::secret::SecretBox;
use crate::store::settings::SignInSettings;
use crate::store::sso::SsoConfig;
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

/// How people sign in: the configuration document's `sign_in`, the admin API's and the
/// panel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInConfig {
    /// `false`: only `break_glass_owner` signs in with a password.
    #[serde(default = "crate::model::yes")]
    pub local_passwords: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_glass_owner: Option<String>,
    /// The OpenID provider; none: no single sign-on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso: Option<SsoConfig>,
}

/// What the sign-in pages offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignInOptions {
    /// The provider's name on the "Sign in with …" button.
    pub sso: Option<String>,
    pub local_passwords: bool,
}

/// How people sign in now (the provider's secret as `{set: true}`).
pub async fn current(db: &mut sqlx::PgConnection) -> Result<SignInConfig> {
    let settings = store::settings::sign_in(&mut *db).await?;
    let sso = store::sso::get(&mut *db).await?.map(|stored| stored.config);
    Ok(SignInConfig {
        local_passwords: settings.local_passwords,
        break_glass_owner: settings.break_glass_owner,
        sso,
    })
}

/// `config` as a diff shows it: the provider's secret as `{set: true}` (with `changed` when a
/// value is given), never its value.
pub(crate) fn redacted(config: &SignInConfig, stored_secret: Option<&str>) -> Result<serde_json::Value> {
    let mut view = serde_json::to_value(config).expect("sign-in settings serialise");
    if let Some(secret) = config.sso.as_ref().and_then(|sso| sso.client_secret.as_ref()) {
        view["sso"]["client_secret"] = secret.redact("sso.client_secret", stored_secret)?;
    }
    Ok(view)
}

/// The sealed secret of the stored provider, for [`redacted`].
pub(crate) async fn stored_secret(db: impl sqlx::PgExecutor<'_>) -> Result<Option<String>> {
    Ok(store::sso::get(db).await?.and_then(|stored| stored.sealed_secret))
}

/// What the sign-in pages offer, for anyone.
pub async fn options(pool: &PgPool) -> Result<SignInOptions> {
    let mut db = pool.acquire().await?;
    let config = current(&mut db).await?;
    Ok(SignInOptions { sso: config.sso.map(|sso| sso.display_name), local_passwords: config.local_passwords })
}

/// Checks `config`'s rules; the message says what is wrong and where. Rules name tenants of
/// `tenants` when given (a configuration document's), else of the database.
async fn check(
    db: &mut sqlx::PgConnection,
    config: &SignInConfig,
    tenants: Option<&[&TenantSlug]>,
) -> Result<()> {
    if !config.local_passwords {
        if config.sso.is_none() {
            return Err(Error::Invalid(
                "local passwords can be turned off only with an OpenID provider to sign in with".into(),
            ));
        }
        let owner = config.break_glass_owner.as_deref().ok_or_else(|| {
            Error::Invalid("with local passwords off, name the break-glass owner who keeps a password".into())
        })?;
        let account = store::admins::by_username(&mut *db, owner).await?;
        if !account
            .is_some_and(|a| a.role == Role::Owner && a.password_hash.is_some() && a.disabled_at.is_none())
        {
            return Err(Error::Invalid(format!(
                "break_glass_owner: `{owner}` is not an owner with a password"
            )));
        }
    }
    let Some(sso) = &config.sso else { return Ok(()) };
    let place = |field: &str, why: &str| Error::Invalid(format!("sso.{field}: {why}"));
    if !(1..=100).contains(&sso.display_name.trim().chars().count()) {
        return Err(place("display_name", "1 to 100 characters"));
    }
    let issuer = reqwest::Url::parse(&sso.issuer).map_err(|_| place("issuer", "not a URL"))?;
    if !matches!(issuer.scheme(), "https" | "http") {
        return Err(place("issuer", "an https URL"));
    }
    if sso.client_id.trim().is_empty() {
        return Err(place("client_id", "required"));
    }
    if sso.groups_claim.trim().is_empty() {
        return Err(place("groups_claim", "the name of a claim, such as `groups`"));
    }
    if !sso.scopes.iter().any(|s| s == "openid") {
        return Err(place("scopes", "must include `openid`"));
    }
    for (i, rule) in sso.rules.iter().enumerate() {
        let at = |why: String| Error::Invalid(format!("sso.rules[{i}]: {why}"));
        match (&rule.email_domain, &rule.group) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => return Err(at("give exactly one of `email_domain` and `group`".into())),
        }
        if rule.email_domain.as_deref().is_some_and(|d| d.is_empty() || d.contains('@')) {
            return Err(at("`email_domain` is a domain such as `acme.com`".into()));
        }
        match (rule.role, &rule.tenant) {
            (Role::Owner, Some(_)) => {
                return Err(at("an owner rule names no tenant (owners have every tenant)".into()));
            }
            (Role::Owner, None) => {}
            (_, None) => return Err(at(format!("a {} rule names its tenant", rule.role))),
            (_, Some(slug)) => {
                let known = match tenants {
                    Some(tenants) => tenants.contains(&slug),
                    None => store::tenants::get(&mut *db, slug).await.is_ok(),
                };
                if !known {
                    return Err(at(format!("no tenant `{slug}`")));
                }
            }
        }
    }
    Ok(())
}

/// Writes `config` in the caller's transaction (unaudited: the caller records it); with
/// `dry_run`, only checks it. The provider's secret follows the rule of every stored secret.
/// `tenants`: see [`check`].
pub(crate) async fn write(
    tx: &mut sqlx::PgTransaction<'_>,
    secrets: &SecretBox,
    config: &SignInConfig,
    tenants: Option<&[&TenantSlug]>,
    dry_run: bool,
) -> Result<()> {
    check(tx, config, tenants).await?;
    let stored = store::sso::get(&mut **tx).await?;
    let sealed = match (&config.sso, &stored) {
        (Some(sso), stored) => {
            // A secret never follows its provider to another issuer or client.
            let kept = stored
                .as_ref()
                .filter(|s| s.config.issuer == sso.issuer && s.config.client_id == sso.client_id)
                .and_then(|s| s.sealed_secret.as_deref());
            match &sso.client_secret {
                Some(secret) => Some(secret.seal(secrets, "sso.client_secret", kept)?),
                None => None,
            }
        }
        (None, _) => None,
    };
    if dry_run {
        return Ok(());
    }
    let settings = SignInSettings {
        local_passwords: config.local_passwords,
        break_glass_owner: config.break_glass_owner.clone(),
    };
    store::settings::write_sign_in(&mut **tx, &settings).await?;
    match &config.sso {
        Some(sso) => store::sso::put(&mut **tx, sso, sealed.as_deref()).await,
        None => store::sso::delete(&mut **tx).await,
    }
}

/// Sets how people sign in, audited.
pub async fn update(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    config: &SignInConfig,
) -> Result<SignInConfig> {
    let mut tx = pool.begin().await?;
    let before = current(&mut tx).await?;
    write(&mut tx, secrets, config, None, false).await?;
    let after = current(&mut tx).await?;
    store::commit(tx, actor, Change::new("update", "sign_in", "global").before(&before).after(&after))
        .await?;
    Ok(after)
}
