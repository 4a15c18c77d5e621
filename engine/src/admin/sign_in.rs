//! Signing in with a password: the limits on failed attempts ([`LoginPolicy`]), the check itself
//! (recorded before the password is, timed alike for unknown names) and the change of one's own
//! password, which is checked like a sign-in.

use std::time::Duration;

use sqlx::PgPool;

use super::{AdminUser, Password, PasswordHash, find};
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

/// Why a sign-in was refused. Deliberately does not say whether the username exists.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Wrong username or password.
    #[error("invalid username or password")]
    InvalidCredentials,
    /// Too many recent failures for this account from this address, or from this address.
    #[error(
        "too many failed sign-in attempts from this address; try again in {} minute(s) (other addresses \
         are not affected; an owner can set a new password with `toolgate admin reset-password <name>`)",
        retry_after.as_secs().div_ceil(60).max(1)
    )]
    Locked { retry_after: Duration },
    /// The right password of an account an administrator disabled.
    #[error("this account is disabled; ask an administrator of your tenant")]
    Disabled,
    /// Password sign-in is off for this account: it signs in through the OpenID provider.
    #[error("sign-in with a password is turned off; use the single sign-on button")]
    PasswordsOff,
    /// Toolgate's own fault (the database); logged, never shown to a client.
    #[error(transparent)]
    Failed(#[from] Error),
}

/// Limits on failed sign-ins.
#[derive(Debug, Clone)]
pub struct LoginPolicy {
    /// Failures counted over this sliding window.
    pub window: Duration,
    /// Failures for one username within the window before it is refused.
    pub max_failures_per_user: i64,
    /// Failures from one address within the window before it is refused.
    pub max_failures_per_address: i64,
    /// Failures after which each attempt is delayed (doubling from `base_delay`).
    pub slow_after: i64,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for LoginPolicy {
    fn default() -> Self {
        LoginPolicy {
            window: Duration::from_secs(15 * 60),
            max_failures_per_user: 5,
            max_failures_per_address: 20,
            slow_after: 2,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl LoginPolicy {
    fn delay(&self, failures: i64) -> Duration {
        let doublings = u32::try_from(failures - self.slow_after).unwrap_or(0).min(16);
        (self.base_delay * 2u32.pow(doublings)).min(self.max_delay)
    }
}

/// Verifies a sign-in, applying the policy's limits. `address` is the client's IP address.
#[tracing::instrument(skip_all, fields(username, address))]
pub async fn login(
    pool: &PgPool,
    policy: &LoginPolicy,
    username: &str,
    password: &str,
    address: &str,
) -> Result<AdminUser, LoginError> {
    // Recorded before anything is checked: a guess sent in parallel with others counts them.
    let (attempt, recent) =
        store::admins::record_attempt(pool, username, address, policy.window.as_secs_f64()).await?;
    // The counts include this attempt.
    let locked_since = if recent.by_user_here > policy.max_failures_per_user {
        recent.oldest_by_user_here
    } else if recent.by_address > policy.max_failures_per_address {
        recent.oldest_by_address
    } else {
        None
    };
    if let Some(since) = locked_since {
        store::admins::forget_attempt(pool, attempt).await?;
        let elapsed = (time::OffsetDateTime::now_utc() - since).unsigned_abs();
        let retry_after = policy.window.saturating_sub(elapsed);
        tracing::warn!(username, address, "sign-in refused: too many failures");
        return Err(LoginError::Locked { retry_after });
    }
    let failures = recent.by_user.max(recent.by_address) - 1;
    if failures >= policy.slow_after {
        tokio::time::sleep(policy.delay(failures)).await;
    }

    let passwords = store::settings::sign_in(pool).await?;
    if !passwords.local_passwords && passwords.break_glass_owner.as_deref() != Some(username) {
        store::admins::forget_attempt(pool, attempt).await?;
        return Err(LoginError::PasswordsOff);
    }
    let account = store::admins::by_username(pool, username).await?;
    // Verify against a real hash even for unknown users (and accounts without a password),
    // so timing does not reveal which exist.
    let (user, hash) = match account {
        Some(account) if account.password_hash.is_some() => {
            let hash = PasswordHash(account.password_hash.clone().expect("checked"));
            (Some(account), hash)
        }
        _ => (None, dummy_hash().await),
    };
    let verified = hash.verify(password).await;
    // The audit log has each sign-in to an account and its refusals: a wrong password once per
    // address and window (the guesses after it are only counted, above, as are guesses at
    // names that are no account), so that guessing from many addresses cannot bury the log.
    let audit = |action, actor: Actor, reason: Option<&str>| {
        let mut what = serde_json::json!({"with": "password", "address": address});
        if let Some(reason) = reason {
            what["reason"] = reason.into();
        }
        let change = Change::new(action, "account", username).after(&what);
        async move { store::record(pool, &actor, &change).await }
    };
    match (verified, user) {
        (true, Some(account)) if account.disabled_at.is_some() => {
            audit("sign_in_refused", Actor::system(), Some("the account is disabled")).await?;
            Err(LoginError::Disabled)
        }
        (true, Some(account)) => {
            store::admins::forget_failures(pool, username).await?;
            store::admins::signed_in(pool, account.id).await?;
            audit("sign_in", Actor::admin(username), None).await?;
            tracing::info!(username, "account signed in");
            Ok(AdminUser::from(account))
        }
        (false, Some(_)) => {
            if recent.by_user_here == 1 {
                audit("sign_in_refused", Actor::system(), Some("wrong password")).await?;
            }
            tracing::info!(username, address, "sign-in failed");
            Err(LoginError::InvalidCredentials)
        }
        (_, None) => {
            tracing::info!(username, address, "sign-in failed");
            Err(LoginError::InvalidCredentials)
        }
    }
}

/// `account` replaces its password (a one-time one, or one it wants to change): the current
/// password is checked like a sign-in (the same limits apply to guesses), and the new one must
/// differ from it. Returns the account as it now is; its sessions opened before end.
#[tracing::instrument(skip_all, fields(username = account.username))]
pub async fn change_password(
    pool: &PgPool,
    policy: &LoginPolicy,
    account: &AdminUser,
    current: &str,
    new: String,
    address: &str,
) -> Result<AdminUser, LoginError> {
    if !account.has_password {
        return Err(Error::Invalid(
            "you sign in through single sign-on: there is no password to change".into(),
        )
        .into());
    }
    let new = Password::parse(new)?;
    if new.expose() == current {
        return Err(Error::Invalid("the new password must differ from the current one".into()).into());
    }
    login(pool, policy, &account.username, current, address).await?;
    let hash = PasswordHash::new(&new).await;
    let mut tx = pool.begin().await.map_err(Error::from)?;
    store::admins::set_password_hash_of(&mut *tx, account.id, &hash.0).await?;
    let change = Change::new("change_password", "account", &account.username);
    store::record(&mut *tx, &Actor::admin(&account.username), &change).await?;
    tx.commit().await.map_err(Error::from)?;
    find(pool, account.id)
        .await?
        .ok_or_else(|| Error::not_found(format!("account `{}`", account.username)).into())
}

/// A hash of a random password, computed once, to verify against for unknown usernames.
async fn dummy_hash() -> PasswordHash {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let hash = DUMMY.get_or_init(|| async { PasswordHash::new(&Password::generate()).await.0 }).await;
    PasswordHash(hash.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_doubles_up_to_the_cap() {
        let policy = LoginPolicy::default();
        assert_eq!(policy.delay(2), Duration::from_millis(250));
        assert_eq!(policy.delay(3), Duration::from_millis(500));
        assert_eq!(policy.delay(4), Duration::from_secs(1));
        assert_eq!(policy.delay(40), Duration::from_secs(2));
    }
}
