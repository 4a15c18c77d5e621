//! Old records are pruned by age, whichever process prunes, and recent ones stay.

use std::time::Duration;

use engine::model::TenantSlug;
use engine::store::retention::{Retention, prune};
use engine::store::{self, Actor};
use sqlx::PgPool;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// One row of each kind `days` old.
async fn records_aged(pool: &PgPool, tenant: uuid::Uuid, days: i32) {
    let at = format!("now() - make_interval(days => {days})");
    for statement in [
        format!(
            "insert into invocation (at, tenant_id, tool_name, caller, status, latency_us, result_bytes) values ({at}, $1, 't', 'admin:x', 'ok', 1, 1)"
        ),
        format!(
            "insert into pending_call (created_at, tenant_id, tool_name, arguments) values ({at}, $1, 't', '{{}}')"
        ),
        format!(
            "insert into audit_event (at, actor, action, entity_kind, entity_id) select {at}, 'system', 'test', 'tenant', $1::text"
        ),
        format!("insert into login_failure (failed_at, username, address) select {at}, 'admin', $1::text"),
        format!(
            "insert into call_usage (subject, span, window_start, calls) values ($1, 'day', date_trunc('day', {at}), 1)"
        ),
        format!(
            "insert into invocation_loss (tenant_id, reason, count, first_at, last_at) values ($1, 'overflow', 1, {at}, {at})"
        ),
        format!(
            "insert into tool_find (tenant_id, owner_id, tool, found_at) values ($1, gen_random_uuid(), 't', {at})"
        ),
    ] {
        sqlx::query(&statement).bind(tenant).execute(pool).await.unwrap();
    }
}

async fn counts(pool: &PgPool) -> Vec<i64> {
    let mut counts = Vec::new();
    for table in [
        "invocation",
        "pending_call",
        "audit_event",
        "login_failure",
        "call_usage",
        "invocation_loss",
        "tool_find",
    ] {
        let count =
            sqlx::query_scalar(&format!("select count(*) from {table}")).fetch_one(pool).await.unwrap();
        counts.push(count);
    }
    counts
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn records_past_their_age_are_pruned_and_others_kept(pool: PgPool) {
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    sqlx::query("delete from audit_event").execute(&pool).await.unwrap();
    let tenant: uuid::Uuid = sqlx::query_scalar("select id from tenant").fetch_one(&pool).await.unwrap();
    for days in [400, 40, 10, 0] {
        records_aged(&pool, tenant, days).await;
    }
    let retention = Retention {
        invocations: Some(30 * DAY),
        pending_calls: Some(7 * DAY),
        audit_events: Some(365 * DAY),
    };

    // Two replicas pruning at once delete each row once, without an error.
    let (first, second) = tokio::join!(prune(&pool, &retention), prune(&pool, &retention));
    let deleted: Vec<u64> =
        first.unwrap().iter().zip(second.unwrap()).map(|((_, a), (_, b))| a + b).collect();
    assert_eq!(
        deleted[..7],
        [2, 3, 1, 3, 3, 2, 3],
        "invocation, pending_call, audit_event, login_failure, call_usage, invocation_loss, tool_find"
    );
    assert_eq!(counts(&pool).await, [2, 1, 3, 1, 1, 2, 1]);

    let forever = Retention { invocations: None, pending_calls: None, audit_events: None };
    records_aged(&pool, tenant, 4000).await;
    prune(&pool, &forever).await.unwrap();
    assert_eq!(
        counts(&pool).await,
        [3, 2, 4, 1, 1, 3, 1],
        "without an age only sign-in failures, call counts and tools found go"
    );
}

/// A person's app: an account, a tenant and a client registered `days` ago, with a grant when
/// `authorized`; the client's id.
async fn client_aged(pool: &PgPool, days: i32, authorized: bool) -> String {
    let id = format!("tgd_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(
        "insert into oauth_client (id, kind, name, redirect_uris, auth_method, created_at)
         values ($1, 'dynamic', 'app', '{http://127.0.0.1/cb}', 'none', now() - make_interval(days => $2))",
    )
    .bind(&id)
    .bind(days)
    .execute(pool)
    .await
    .unwrap();
    if authorized {
        sqlx::query(
            "insert into oauth_grant (account_id, client_id, tenant_id, resource, scopes)
             select a.id, $1, t.id, 'http://h/mcp/acme', '{tools}' from admin_user a, tenant t limit 1",
        )
        .bind(&id)
        .execute(pool)
        .await
        .unwrap();
    }
    id
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn expired_sign_in_secrets_and_clients_nobody_authorized_are_pruned(pool: PgPool) {
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    sqlx::query("insert into admin_user (username, role) values ('ann', 'member')")
        .execute(&pool)
        .await
        .unwrap();
    let unused_old = client_aged(&pool, 2, false).await;
    let unused_new = client_aged(&pool, 0, false).await;
    let used_old = client_aged(&pool, 2, true).await;
    let grant: uuid::Uuid = sqlx::query_scalar("select id from oauth_grant").fetch_one(&pool).await.unwrap();
    for (hash, expires) in
        [("expired", "now() - interval '1 second'"), ("valid", "now() + interval '1 hour'")]
    {
        for statement in [
            format!(
                "insert into oauth_token (token_hash, grant_id, kind, expires_at) values ('{hash}', $1, 'access', {expires})"
            ),
            format!(
                "insert into oauth_code (code_hash, grant_id, redirect_uri, code_challenge, expires_at) values ('{hash}', $1, 'r', 'c', {expires})"
            ),
        ] {
            sqlx::query(&statement).bind(grant).execute(&pool).await.unwrap();
        }
    }
    let forever = Retention { invocations: None, pending_calls: None, audit_events: None };
    let pruned = prune(&pool, &forever).await.unwrap();
    let of = |table: &str| pruned.iter().find(|(t, _)| *t == table).unwrap().1;
    assert_eq!((of("oauth_token"), of("oauth_code"), of("oauth_client")), (1, 1, 1));
    let clients: Vec<String> =
        sqlx::query_scalar("select id from oauth_client order by id").fetch_all(&pool).await.unwrap();
    let mut kept = vec![unused_new, used_old];
    kept.sort();
    assert_eq!(clients, kept);
    assert!(!clients.contains(&unused_old));
    let left: i64 = sqlx::query_scalar("select count(*) from oauth_token").fetch_one(&pool).await.unwrap();
    assert_eq!(left, 1);
}
