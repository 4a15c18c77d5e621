//! Accounts: owners, tenant administrators and tenant members; argon2id passwords and
//! throttled sign-in. (Accounts that sign in through an OpenID provider are made in [`crate::sso`].)
//!
//! Sign-in attempts are recorded in PostgreSQL before the password is checked (so parallel
//! guesses count each other) over a sliding window, and every replica applies the same limits:
//! after a few failures for an account each attempt is slowed; after more, the account is
//! refused from the address that failed (never from others: strangers cannot lock the owner
//! out), and an address failing for many accounts is refused altogether, until the window has
//! passed. At most [`CONCURRENT_HASHES`] argon2 computations (about 19 MiB each) run at once.

use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash as Phc;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

pub use crate::model::Role;
use crate::model::TenantSlug;
pub use crate::store::admins::AccountRow;
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

/// The rule a username keeps.
const USERNAME_RULE: &str = "a username is 1 to 64 characters: letters, digits, `_`, `.`, `@` or `-`, starting with a letter or digit";

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

pub const MIN_PASSWORD_LEN: usize = 12;

/// A validated administrator name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(name: &str) -> Result<Self> {
        let mut chars = name.chars();
        let valid = name.len() <= 64
            && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
        valid.then(|| Username(name.to_string())).ok_or_else(|| Error::Invalid(USERNAME_RULE.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A plaintext password on its way to being hashed; not `Debug`, not `Serialize`.
pub struct Password {
    text: String,
    /// Printed once for someone to sign in with: its account must then choose its own.
    one_time: bool,
}

impl Password {
    /// A password its account chose.
    pub fn parse(password: String) -> Result<Self> {
        if password.chars().count() < MIN_PASSWORD_LEN {
            return Err(Error::Invalid(format!("a password needs at least {MIN_PASSWORD_LEN} characters")));
        }
        Ok(Password { text: password, one_time: false })
    }

    /// A random 24-character one-time password, for first start and resets.
    pub fn generate() -> Self {
        Password { text: Alphanumeric.sample_string(&mut rand::rng(), 24), one_time: true }
    }

    pub fn expose(&self) -> &str {
        &self.text
    }

    pub fn one_time(&self) -> bool {
        self.one_time
    }
}

/// An argon2id PHC string. Deliberately neither `Serialize` nor `Debug`.
pub struct PasswordHash(String);

/// The most argon2 computations running at once; more wait.
pub const CONCURRENT_HASHES: usize = 2;

static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_HASHES);

/// What a session keeps of the password it was opened with: it changes with the password, so
/// a new password ends the sessions opened before.
fn password_stamp(hash: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(hash.unwrap_or("none").as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl PasswordHash {
    /// Hashes on a blocking thread: argon2id is deliberately slow.
    pub async fn new(password: &Password) -> Self {
        let _place = HASHING.acquire().await.expect("the hashing semaphore is never closed");
        let password = password.text.clone();
        tokio::task::spawn_blocking(move || {
            let hash = Argon2::default()
                .hash_password(password.as_bytes())
                .expect("argon2 with default parameters hashes any password");
            PasswordHash(hash.to_string())
        })
        .await
        .expect("password hashing task panicked")
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a password against this hash on a blocking thread.
    pub async fn verify(&self, password: &str) -> bool {
        let _place = HASHING.acquire().await.expect("the hashing semaphore is never closed");
        let (hash, password) = (self.0.clone(), password.to_string());
        tokio::task::spawn_blocking(move || {
            Phc::new(&hash)
                .is_ok_and(|phc| Argon2::default().verify_password(password.as_bytes(), &phc).is_ok())
        })
        .await
        .expect("password verification task panicked")
    }
}

/// An administrator as the rest of Toolgate sees it (no password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminUser {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    /// Changes with the password: a session opened under another stamp is no longer valid.
    #[serde(skip)]
    pub password_stamp: String,
    /// The account signs in with a password (not only through single sign-on).
    #[serde(skip)]
    pub has_password: bool,
    /// Its password was printed once: it may do nothing but choose its own.
    #[serde(skip)]
    pub password_temporary: bool,
}

/// Creates an administrator.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn create(
    db: impl PgExecutor<'_>,
    username: &Username,
    role: Role,
    password: &Password,
) -> Result<AdminUser> {
    let hash = PasswordHash::new(password).await;
    let id =
        store::admins::insert(db, username.as_str(), &hash.0, password.one_time, role).await?.ok_or_else(
            || Error::Conflict(format!("an administrator named `{}` already exists", username.as_str())),
        )?;
    Ok(AdminUser {
        id,
        username: username.as_str().to_string(),
        role,
        password_stamp: password_stamp(Some(&hash.0)),
        has_password: true,
        password_temporary: password.one_time,
    })
}

/// Replaces an administrator's password.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn set_password(db: impl PgExecutor<'_>, username: &Username, password: &Password) -> Result<()> {
    let hash = PasswordHash::new(password).await;
    if !store::admins::set_password_hash(db, username.as_str(), &hash.0, password.one_time).await? {
        return Err(Error::not_found(format!("administrator `{}`", username.as_str())));
    }
    Ok(())
}

impl From<store::admins::Account> for AdminUser {
    fn from(account: store::admins::Account) -> Self {
        AdminUser {
            id: account.id,
            username: account.username,
            role: account.role,
            password_stamp: password_stamp(account.password_hash.as_deref()),
            has_password: account.password_hash.is_some(),
            password_temporary: account.password_temporary,
        }
    }
}

/// The account with this id, if it still exists and is not disabled.
pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<AdminUser>> {
    Ok(store::admins::by_id(db, id).await?.filter(|a| a.disabled_at.is_none()).map(AdminUser::from))
}

/// Which tenants an administrator may see and manage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Owners: every tenant, and the global configuration.
    Everything,
    /// Tenant administrators: these tenants (slugs) only.
    Tenants(Vec<String>),
}

impl Scope {
    pub fn allows(&self, tenant: &str) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Tenants(slugs) => slugs.iter().any(|s| s == tenant),
        }
    }
}

/// What `admin` manages; a member manages nothing (it only authorizes clients).
pub async fn scope(db: impl PgExecutor<'_>, admin: &AdminUser) -> Result<Scope> {
    Ok(match admin.role {
        Role::Owner => Scope::Everything,
        Role::TenantAdmin => Scope::Tenants(store::admins::tenant_slugs(db, admin.id).await?),
        Role::Member => {
            return Err(Error::Forbidden(
                "members manage nothing in the panel but their connected apps".into(),
            ));
        }
    })
}

/// Lets the administrator `username` manage `tenant` (meaningful for tenant administrators).
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), tenant))]
pub async fn assign_tenant(db: impl PgExecutor<'_>, username: &Username, tenant: &str) -> Result<()> {
    store::admins::assign_tenant(db, username.as_str(), tenant).await
}

/// On first start: when no owner exists, creates `admin` as owner with a random password and
/// returns that password (to be shown once). Returns `None` when an owner exists.
#[tracing::instrument(skip_all, err)]
pub async fn ensure_owner(pool: &PgPool) -> Result<Option<Password>> {
    let mut tx = pool.begin().await?;
    if store::admins::lock_and_find_owner(&mut tx).await? {
        return Ok(None);
    }
    let password = Password::generate();
    create(&mut *tx, &Username::parse("admin")?, Role::Owner, &password).await?;
    tx.commit().await?;
    Ok(Some(password))
}

/// Creates an account with its tenants, all or nothing (an unknown tenant leaves no account),
/// and audits it.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn create_account(
    pool: &PgPool,
    actor: &Actor,
    username: &Username,
    role: Role,
    tenants: &[String],
    password: &Password,
) -> Result<()> {
    let mut tx = pool.begin().await?;
    create(&mut *tx, username, role, password).await?;
    for tenant in tenants {
        assign_tenant(&mut *tx, username, tenant).await?;
    }
    let what =
        serde_json::json!({"username": username.as_str(), "role": role.to_string(), "tenants": tenants});
    store::commit(tx, actor, Change::new("create_account", "account", username.as_str()).after(&what)).await
}

/// Every account, by name.
pub async fn accounts(db: impl PgExecutor<'_>) -> Result<Vec<AccountRow>> {
    store::admins::all(db).await
}

/// Gives `username` a new one-time password (returned, to be shown once): its sessions end,
/// and its next sign-in asks for a password of its own.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn reset_password(pool: &PgPool, actor: &Actor, username: &Username) -> Result<Password> {
    let password = Password::generate();
    let hash = PasswordHash::new(&password).await;
    let mut tx = pool.begin().await?;
    if !store::admins::set_password_hash(&mut *tx, username.as_str(), &hash.0, true).await? {
        return Err(Error::not_found(format!("account `{}`", username.as_str())));
    }
    store::commit(tx, actor, Change::new("reset_password", "account", username.as_str())).await?;
    Ok(password)
}

/// Disables `username` (it cannot sign in; its sessions and tokens stop working at once) or
/// enables it again.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), disabled))]
pub async fn set_disabled(pool: &PgPool, actor: &Actor, username: &Username, disabled: bool) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if disabled {
        may_lose(&mut tx, actor, &account).await?;
    }
    store::admins::set_disabled(&mut *tx, account.id, disabled).await?;
    let what = serde_json::json!({"disabled": disabled});
    store::commit(tx, actor, Change::new("set_account_disabled", "account", username.as_str()).after(&what))
        .await
}

/// Gives `username` another role (an owner no longer manages everything, a member then
/// manages nothing); never one's own, nor the last enabled owner's.
#[tracing::instrument(skip_all, err, fields(username = username.as_str(), %role))]
pub async fn set_role(pool: &PgPool, actor: &Actor, username: &Username, role: Role) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if account.role == role {
        return Ok(());
    }
    may_lose(&mut tx, actor, &account).await?;
    store::admins::set_role(&mut *tx, account.id, role).await?;
    let change = Change::new("set_account_role", "account", username.as_str())
        .before(&serde_json::json!({"role": account.role.to_string()}))
        .after(&serde_json::json!({"role": role.to_string()}));
    store::commit(tx, actor, change).await
}

/// Makes `tenants` the tenants `username` manages (or, for a member, connects apps to), all or
/// nothing: an unknown tenant changes nothing. The apps it authorized for a tenant it leaves
/// are revoked. An owner manages every tenant: it has none to set.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn set_tenants(
    pool: &PgPool,
    actor: &Actor,
    username: &Username,
    tenants: &[String],
) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    if account.role == Role::Owner {
        return Err(Error::Invalid(format!(
            "`{}` is an owner, who manages every tenant: give it another role first",
            username.as_str()
        )));
    }
    let before = store::admins::tenant_slugs(&mut *tx, account.id).await?;
    for left in before.iter().filter(|slug| !tenants.contains(slug)) {
        let tenant = store::tenants::get(&mut *tx, &TenantSlug::parse(left)?).await?;
        store::oauth::revoke_grants_of(&mut tx, account.id, Some(tenant.id)).await?;
        store::admins::unassign(&mut tx, account.id, tenant.id).await?;
    }
    for tenant in tenants {
        assign_tenant(&mut *tx, username, tenant).await?;
    }
    let after = store::admins::tenant_slugs(&mut *tx, account.id).await?;
    let change = Change::new("set_account_tenants", "account", username.as_str())
        .before(&serde_json::json!({"tenants": before}))
        .after(&serde_json::json!({"tenants": after}));
    store::commit(tx, actor, change).await
}

/// Deletes `username` with everything it authorized.
#[tracing::instrument(skip_all, err, fields(username = username.as_str()))]
pub async fn delete(pool: &PgPool, actor: &Actor, username: &Username) -> Result<()> {
    let mut tx = pool.begin().await?;
    let account = existing(&mut tx, username).await?;
    may_lose(&mut tx, actor, &account).await?;
    store::admins::delete(&mut *tx, account.id).await?;
    let what = serde_json::json!({"role": account.role.to_string()});
    store::commit(tx, actor, Change::new("delete_account", "account", username.as_str()).before(&what)).await
}

async fn existing(tx: &mut sqlx::PgConnection, username: &Username) -> Result<store::admins::Account> {
    store::admins::by_username(&mut *tx, username.as_str())
        .await?
        .ok_or_else(|| Error::not_found(format!("account `{}`", username.as_str())))
}

/// Refuses what could lock everyone out: an account taking itself away (or its own role), or
/// the last enabled owner going.
async fn may_lose(
    tx: &mut sqlx::PgConnection,
    actor: &Actor,
    account: &store::admins::Account,
) -> Result<()> {
    if *actor == Actor::admin(&account.username) {
        return Err(Error::Conflict(
            "you cannot disable, delete or change the role of your own account; another owner can".into(),
        ));
    }
    if account.role == Role::Owner
        && account.disabled_at.is_none()
        && !store::admins::another_owner(&mut *tx, account.id).await?
    {
        return Err(Error::Conflict(format!(
            "`{}` is the last enabled owner: make another account an owner first",
            account.username
        )));
    }
    Ok(())
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

    #[tokio::test]
    async fn hash_verifies_its_own_password_only() {
        let password = Password::parse("correct horse battery".into()).unwrap();
        let hash = PasswordHash::new(&password).await;
        assert!(hash.0.starts_with("$argon2id$"), "argon2id PHC string expected");
        assert!(hash.verify("correct horse battery").await);
        assert!(!hash.verify("correct horse battery!").await);
        assert!(!hash.verify("").await);
    }

    #[tokio::test]
    async fn same_password_hashes_differently_each_time() {
        let password = Password::parse("the same password".into()).unwrap();
        assert_ne!(PasswordHash::new(&password).await.0, PasswordHash::new(&password).await.0);
    }

    #[test]
    fn short_password_is_rejected() {
        assert!(matches!(Password::parse("short".into()), Err(Error::Invalid(_))));
        assert!(Password::parse("twelve chars".into()).is_ok());
    }

    #[test]
    fn generated_passwords_are_long_and_distinct() {
        let (a, b) = (Password::generate(), Password::generate());
        assert_eq!(a.expose().len(), 24);
        assert_ne!(a.expose(), b.expose());
    }

    #[test]
    fn username_pattern() {
        for ok in ["admin", "a", "jane.doe@example.com", "ops_team-1"] {
            assert!(Username::parse(ok).is_ok(), "{ok} should be valid");
        }
        for bad in ["", "-admin", "has space", "<script>", &"x".repeat(65)] {
            assert!(Username::parse(bad).is_err(), "{bad} should be invalid");
        }
    }

    #[test]
    fn delay_doubles_up_to_the_cap() {
        let policy = LoginPolicy::default();
        assert_eq!(policy.delay(2), Duration::from_millis(250));
        assert_eq!(policy.delay(3), Duration::from_millis(500));
        assert_eq!(policy.delay(4), Duration::from_secs(1));
        assert_eq!(policy.delay(40), Duration::from_secs(2));
    }
}
