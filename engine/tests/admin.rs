//! Administrator accounts and sign-in against a real PostgreSQL database (one per test).

use std::time::Duration;

use engine::admin::{self, AdminUser, LoginError, LoginPolicy, Password, Role, Username};
use engine::store::audit::AuditFilter;
use serde_json::json;
use sqlx::PgPool;

/// The default limits with negligible delays, so lockout tests stay quick.
fn quick_policy() -> LoginPolicy {
    LoginPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        ..LoginPolicy::default()
    }
}

async fn create(pool: &PgPool, name: &str, password: &str) {
    admin::create(
        pool,
        &Username::parse(name).unwrap(),
        Role::Owner,
        &Password::parse(password.into()).unwrap(),
    )
    .await
    .unwrap();
}

async fn change(
    pool: &PgPool,
    account: &AdminUser,
    current: &str,
    new: &str,
) -> Result<AdminUser, LoginError> {
    admin::change_password(pool, &quick_policy(), account, current, new.into(), "127.0.0.1").await
}

async fn store_tenant(pool: &PgPool, slug: &str) {
    let slug = engine::model::TenantSlug::parse(slug).unwrap();
    engine::store::tenants::create(pool, &engine::store::Actor::cli(), &slug, slug.as_str()).await.unwrap();
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn login_succeeds_with_the_right_password(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let user = admin::login(&pool, &quick_policy(), "alice", "alice-password-1", "10.0.0.1").await.unwrap();
    assert_eq!(user.username, "alice");
    assert_eq!(user.role, Role::Owner);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn wrong_password_and_unknown_user_fail_alike(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    let wrong = admin::login(&pool, &policy, "alice", "not-her-password", "10.0.0.1").await;
    let unknown = admin::login(&pool, &policy, "mallory", "alice-password-1", "10.0.0.2").await;
    assert!(matches!(wrong, Err(LoginError::InvalidCredentials)));
    assert!(matches!(unknown, Err(LoginError::InvalidCredentials)));
    assert_eq!(wrong.unwrap_err().to_string(), unknown.unwrap_err().to_string());
}

/// The audit log has each sign-in to an account and its first refusal from an address, with
/// the address; later guesses from there and guesses at names that are no account are only
/// counted.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn sign_ins_and_refused_sign_ins_of_an_account_are_audited(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    admin::login(&pool, &policy, "alice", "not-her-password", "10.0.0.1").await.unwrap_err();
    // Guesses after the first from one address are counted, not written to the log.
    admin::login(&pool, &policy, "alice", "nor-this-one", "10.0.0.1").await.unwrap_err();
    admin::login(&pool, &policy, "mallory", "alice-password-1", "10.0.0.2").await.unwrap_err();
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.3").await.unwrap();

    let filter = AuditFilter { entity_kind: Some("account".into()), ..Default::default() };
    let events = engine::store::audit::list(&pool, &filter).await.unwrap();
    let seen: Vec<_> =
        events.iter().map(|e| (e.action.as_str(), e.actor.as_str(), e.after.clone())).collect();
    assert_eq!(
        seen,
        [
            ("sign_in", "admin:alice", Some(json!({"with": "password", "address": "10.0.0.3"}))),
            (
                "sign_in_refused",
                "system",
                Some(json!({"with": "password", "address": "10.0.0.1", "reason": "wrong password"}))
            ),
        ]
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn repeated_failures_lock_the_account_from_that_address_even_for_the_right_password(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    for _ in 0..policy.max_failures_per_user {
        let result = admin::login(&pool, &policy, "alice", "guess", "10.6.6.6").await;
        assert!(matches!(result, Err(LoginError::InvalidCredentials)));
    }
    let locked = admin::login(&pool, &policy, "alice", "alice-password-1", "10.6.6.6").await;
    let Err(LoginError::Locked { retry_after }) = locked else {
        panic!("expected a lockout, got {locked:?}");
    };
    assert!(retry_after <= policy.window && retry_after > Duration::ZERO);
    let message = locked.unwrap_err().to_string();
    assert!(message.contains("try again in 15 minute") && message.contains("reset-password"), "{message}");
    // The owner, elsewhere, is not locked out by a stranger's guesses.
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await.unwrap();
}

/// Strangers guessing one account from many addresses slow its sign-in down but cannot
/// lock its owner out.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn guesses_from_many_addresses_do_not_lock_the_owner_out(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    for attempt in 0..policy.max_failures_per_user * 2 {
        let result = admin::login(&pool, &policy, "alice", "guess", &format!("10.0.1.{attempt}")).await;
        assert!(matches!(result, Err(LoginError::InvalidCredentials)), "{result:?}");
    }
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await.unwrap();
}

/// Attempts are recorded before the password is checked: guesses sent all at once count each
/// other, so no more are checked than the limit allows.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn parallel_guesses_cannot_race_the_limit(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    let guesses: Vec<_> = (0..20)
        .map(|i| {
            let (pool, policy) = (pool.clone(), policy.clone());
            tokio::spawn(async move {
                admin::login(&pool, &policy, "alice", &format!("guess-{i}"), "10.6.6.6").await
            })
        })
        .collect();
    let mut checked = 0;
    for guess in guesses {
        match guess.await.unwrap() {
            Err(LoginError::InvalidCredentials) => checked += 1,
            Err(LoginError::Locked { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(checked <= policy.max_failures_per_user, "{checked} of 20 parallel guesses were checked");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn lockout_ends_when_the_window_has_passed(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = LoginPolicy { window: Duration::from_millis(1500), ..quick_policy() };
    for _ in 0..policy.max_failures_per_user {
        let _ = admin::login(&pool, &policy, "alice", "guess", "10.0.0.1").await;
    }
    assert!(matches!(
        admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await,
        Err(LoginError::Locked { .. })
    ));
    tokio::time::sleep(policy.window).await;
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1")
        .await
        .expect("the lock lifts once the failures leave the window");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn one_address_guessing_many_names_is_locked_out(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    for n in 0..policy.max_failures_per_address {
        let _ = admin::login(&pool, &policy, &format!("user{n}"), "guess", "10.6.6.6").await;
    }
    let result = admin::login(&pool, &policy, "alice", "alice-password-1", "10.6.6.6").await;
    assert!(matches!(result, Err(LoginError::Locked { .. })));
    // Another address is unaffected.
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await.unwrap();
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn success_clears_earlier_failures(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let policy = quick_policy();
    for _ in 0..policy.max_failures_per_user - 1 {
        let _ = admin::login(&pool, &policy, "alice", "guess", "10.0.0.1").await;
    }
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await.unwrap();
    for _ in 0..policy.max_failures_per_user - 1 {
        let _ = admin::login(&pool, &policy, "alice", "guess", "10.0.0.1").await;
    }
    admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1")
        .await
        .expect("the earlier failures were forgotten at the last success");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn first_start_creates_one_owner_with_a_working_password(pool: PgPool) {
    let password = admin::ensure_owner(&pool).await.unwrap().expect("a new owner");
    assert!(admin::ensure_owner(&pool).await.unwrap().is_none(), "created only once");
    let owner = admin::login(&pool, &quick_policy(), "admin", password.expose(), "127.0.0.1").await.unwrap();
    assert_eq!(owner.role, Role::Owner);
}

/// The first owner's printed password is for one sign-in: the account must choose its own, which
/// ends the sessions opened before; a reset to a generated password is one-time again.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_one_time_password_is_replaced_by_the_accounts_own(pool: PgPool) {
    let policy = quick_policy();
    let printed = admin::ensure_owner(&pool).await.unwrap().expect("a new owner");
    let owner = admin::login(&pool, &policy, "admin", printed.expose(), "127.0.0.1").await.unwrap();
    assert!(owner.password_temporary, "the printed password must be replaced");
    let once = printed.expose();
    assert!(matches!(
        change(&pool, &owner, "not-the-password", "mine-and-long-enough").await,
        Err(LoginError::InvalidCredentials)
    ));
    let refused = |result: Result<_, LoginError>, says: &str| match result {
        Err(LoginError::Failed(engine::Error::Invalid(message))) => {
            assert!(message.contains(says), "{message}")
        }
        Err(err) => panic!("{err}"),
        Ok(_) => panic!("accepted; {says} expected"),
    };
    refused(change(&pool, &owner, once, once).await, "must differ");
    refused(change(&pool, &owner, once, "short").await, "at least 12 characters");

    let changed = change(&pool, &owner, once, "mine-and-long-enough").await.unwrap();
    assert!(!changed.password_temporary);
    assert_ne!(changed.password_stamp, owner.password_stamp, "the sessions opened before end");
    assert!(matches!(
        admin::login(&pool, &policy, "admin", once, "127.0.0.1").await,
        Err(LoginError::InvalidCredentials)
    ));
    let again = admin::login(&pool, &policy, "admin", "mine-and-long-enough", "127.0.0.1").await.unwrap();
    assert!(!again.password_temporary);
    let audited: Vec<String> =
        sqlx::query_scalar("select actor from audit_event where action = 'change_password'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(audited, ["admin:admin"]);

    let name = Username::parse("admin").unwrap();
    let reset = Password::generate();
    admin::set_password(&pool, &name, &reset).await.unwrap();
    let reset_in = admin::login(&pool, &policy, "admin", reset.expose(), "127.0.0.1").await.unwrap();
    assert!(reset_in.password_temporary, "a generated reset is for one sign-in too");
}

/// Owners manage every account: made with its tenants all or nothing, reset to a one-time
/// password, given another role, disabled, deleted, each audited; nobody takes away their own account or the last
/// enabled owner.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn accounts_are_managed_without_locking_everyone_out(pool: PgPool) {
    use engine::store::Actor;
    let policy = quick_policy();
    create(&pool, "root", "root-password-1").await;
    store_tenant(&pool, "acme").await;
    let (root, kim) = (Username::parse("root").unwrap(), Username::parse("kim").unwrap());
    let by_root = Actor::admin("root");
    let once = Password::generate();
    let unknown =
        admin::create_account(&pool, &by_root, &kim, Role::TenantAdmin, &["nope".into()], &once).await;
    assert!(matches!(unknown, Err(engine::Error::NotFound(_))), "{unknown:?}");
    admin::create_account(&pool, &by_root, &kim, Role::TenantAdmin, &["acme".into()], &once).await.unwrap();
    let listed = admin::accounts(&pool).await.unwrap();
    let shown: Vec<_> =
        listed.iter().map(|a| (a.username.as_str(), a.tenants.clone(), a.signs_in())).collect();
    assert_eq!(shown, [("kim", vec!["acme".to_string()], "one-time password"), ("root", vec![], "password")]);

    // Her tenants change all at once or not at all; an owner has none to change.
    store_tenant(&pool, "globex").await;
    let tenants_of_kim = || async { admin::accounts(&pool).await.unwrap()[0].tenants.clone() };
    let unknown = admin::set_tenants(&pool, &by_root, &kim, &["globex".into(), "nope".into()]).await;
    assert!(matches!(unknown, Err(engine::Error::NotFound(_))), "{unknown:?}");
    assert_eq!(tenants_of_kim().await, ["acme"]);
    admin::set_tenants(&pool, &by_root, &kim, &["globex".into()]).await.unwrap();
    assert_eq!(tenants_of_kim().await, ["globex"]);
    let owner = admin::set_tenants(&pool, &by_root, &root, &["acme".into()]).await;
    assert!(matches!(owner, Err(engine::Error::Invalid(_))), "{owner:?}");

    let reset = admin::reset_password(&pool, &by_root, &kim).await.unwrap();
    assert!(admin::login(&pool, &policy, "kim", once.expose(), "10.0.0.1").await.is_err());
    assert!(
        admin::login(&pool, &policy, "kim", reset.expose(), "10.0.0.1").await.unwrap().password_temporary
    );

    let refused = |result: engine::Result<()>, says: &str| match result {
        Err(engine::Error::Conflict(message)) => assert!(message.contains(says), "{message}"),
        other => panic!("{other:?}: {says} expected"),
    };
    refused(admin::delete(&pool, &by_root, &root).await, "your own account");
    refused(admin::set_role(&pool, &by_root, &root, Role::Member).await, "your own account");
    refused(admin::set_role(&pool, &Actor::cli(), &root, Role::TenantAdmin).await, "the last enabled owner");
    admin::set_role(&pool, &by_root, &kim, Role::Member).await.unwrap();
    assert_eq!(admin::accounts(&pool).await.unwrap()[0].role, Role::Member);
    refused(admin::set_disabled(&pool, &Actor::cli(), &root, true).await, "the last enabled owner");
    refused(admin::delete(&pool, &Actor::cli(), &root).await, "the last enabled owner");
    admin::set_disabled(&pool, &by_root, &kim, true).await.unwrap();
    assert!(matches!(
        admin::login(&pool, &policy, "kim", reset.expose(), "10.0.0.1").await,
        Err(LoginError::Disabled)
    ));
    admin::delete(&pool, &by_root, &kim).await.unwrap();
    assert_eq!(admin::accounts(&pool).await.unwrap().len(), 1);
    let actions: Vec<String> =
        sqlx::query_scalar("select action from audit_event where entity_kind = 'account' order by id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(
        actions,
        [
            "create_account",
            "set_account_tenants",
            "reset_password",
            "sign_in_refused",
            "sign_in",
            "set_account_role",
            "set_account_disabled",
            "sign_in_refused",
            "delete_account"
        ]
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn taken_username_is_refused(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let again =
        admin::create(&pool, &Username::parse("alice").unwrap(), Role::TenantAdmin, &Password::generate())
            .await;
    assert!(matches!(again, Err(engine::Error::Conflict(message)) if message.contains("`alice`")));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn reset_password_replaces_the_old_one(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let alice = Username::parse("alice").unwrap();
    let new = Password::parse("alice-password-2".into()).unwrap();
    admin::set_password(&pool, &alice, &new).await.unwrap();
    let policy = quick_policy();
    assert!(admin::login(&pool, &policy, "alice", "alice-password-1", "10.0.0.1").await.is_err());
    admin::login(&pool, &policy, "alice", "alice-password-2", "10.0.0.1").await.unwrap();
    let nobody = Username::parse("nobody").unwrap();
    assert!(matches!(admin::set_password(&pool, &nobody, &new).await, Err(engine::Error::NotFound(_))));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn stored_hash_is_argon2id_not_the_password(pool: PgPool) {
    create(&pool, "alice", "alice-password-1").await;
    let stored: String =
        sqlx::query_scalar("select password_hash from admin_user").fetch_one(&pool).await.unwrap();
    assert!(stored.starts_with("$argon2id$"));
    assert!(!stored.contains("alice-password-1"));
}
