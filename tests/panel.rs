//! The panel's HTTP surface end to end: a real server on a loopback port, a real PostgreSQL
//! database (one per test), a cookie-keeping HTTP client.

mod common;

use std::time::Duration;

use common::{PASSWORD, TestApp, client_with_origin, json_of};
use engine::admin::LoginPolicy;
use reqwest::StatusCode;
use reqwest::header::{LOCATION, SET_COOKIE};
use sqlx::PgPool;

fn location(response: &reqwest::Response) -> &str {
    response.headers().get(LOCATION).unwrap().to_str().unwrap()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn pages_redirect_to_login_without_a_session(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // Sign-in brings the person back to the page they asked for.
    for (path, login) in [
        ("/", "/login"),
        ("/servers", "/login?next=%2Fservers"),
        ("/tenants?x=1", "/login?next=%2Ftenants%3Fx%3D1"),
        ("/audit", "/login?next=%2Faudit"),
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(location(&response), login, "{path}");
    }
    let login_page = app.get("/login").await;
    assert_eq!(login_page.status(), StatusCode::OK);
    assert!(login_page.text().await.unwrap().contains("Sign in"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn server_functions_answer_401_without_a_session(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.client.post(app.url("/api/me")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn login_sets_a_strict_http_only_cookie_and_opens_the_dashboard(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.login(PASSWORD).await;
    assert!(response.status().is_success(), "{}", response.status());
    let cookie = response.headers().get(SET_COOKIE).unwrap().to_str().unwrap().to_string();
    assert!(cookie.starts_with("toolgate_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain http must not mark the cookie Secure");

    let dashboard = app.get("/").await;
    assert_eq!(dashboard.status(), StatusCode::OK);
    let me = app.client.post(app.url("/api/me")).send().await.unwrap();
    assert_eq!(me.status(), StatusCode::OK);
    assert_eq!(
        me.text().await.unwrap(),
        r#"{"username":"admin","role":"owner","owner":true,"member":false,"has_password":true,"password_temporary":false}"#
    );
    // Signed in, the login page leads to the dashboard.
    let login_page = app.get("/login").await;
    assert_eq!(location(&login_page), "/");
}

/// Records that could not be written (the database away longer than the buffer held) are
/// shown on the dashboard: how many, between when, and why.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_dashboard_says_how_many_call_records_were_lost_and_when(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let acme = engine::model::TenantSlug::parse("acme").unwrap();
    let tenant =
        engine::store::tenants::create(&pool, &engine::store::Actor::system(), &acme, "Acme").await.unwrap();
    sqlx::query(
        "insert into invocation_loss (tenant_id, reason, count, first_at, last_at)
         values ($1, 'overflow', 1200, now() - interval '20 minutes', now() - interval '10 minutes')",
    )
    .bind(tenant.id)
    .execute(&pool)
    .await
    .unwrap();
    assert!(app.login(PASSWORD).await.status().is_success());
    let page = app.get("/").await.text().await.unwrap();
    assert!(
        page.contains("1200 call records could not be written between")
            && page.contains("the database was away longer than the buffer of unwritten records could hold"),
        "{page}"
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn login_rotates_the_session_id(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let first = app.login(PASSWORD).await;
    let second = app.login(PASSWORD).await;
    let id = |r: &reqwest::Response| r.headers().get(SET_COOKIE).unwrap().to_str().unwrap().to_string();
    assert_ne!(id(&first), id(&second));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn wrong_password_is_refused_with_a_clear_message(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.login("not-the-password").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().get(SET_COOKIE).is_none());
    assert!(response.text().await.unwrap().contains("invalid username or password"));
    assert_eq!(app.get("/").await.status(), StatusCode::SEE_OTHER);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn repeated_failures_lock_sign_in(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for _ in 0..LoginPolicy::default().max_failures_per_user {
        assert_eq!(app.login("guess-again").await.status(), StatusCode::UNAUTHORIZED);
    }
    let locked = app.login(PASSWORD).await;
    assert_eq!(locked.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(locked.text().await.unwrap().contains("too many failed sign-in attempts"));
}

/// Signs in as `admin` through a proxy that says the request came from `forwarded_for`.
async fn login_forwarded_for(app: &TestApp, forwarded_for: &str, password: &str) -> StatusCode {
    let client = client_with_origin(&app.url(""));
    let answer = client
        .post(app.url("/api/login"))
        .header("x-forwarded-for", forwarded_for)
        .form(&[("username", "admin"), ("password", password)])
        .send()
        .await
        .unwrap();
    answer.status()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn behind_a_trusted_proxy_failures_lock_out_the_forwarded_address_only(pool: PgPool) {
    let app = TestApp::spawn_configured(pool, |settings| {
        settings.trusted_proxies = "127.0.0.1,::1".parse().unwrap();
    })
    .await;
    for _ in 0..LoginPolicy::default().max_failures_per_user {
        let failed = login_forwarded_for(&app, "203.0.113.7", "guess-again").await;
        assert_eq!(failed, StatusCode::UNAUTHORIZED);
    }
    // What the client itself puts left of the proxy's entry changes nothing.
    let spoofed = login_forwarded_for(&app, "198.51.100.9, 203.0.113.7", PASSWORD).await;
    assert_eq!(spoofed, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(login_forwarded_for(&app, "203.0.113.7", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
    // Everyone else behind the same proxy still signs in.
    let other = login_forwarded_for(&app, "203.0.113.8", PASSWORD).await;
    assert!(other.is_success() || other.is_redirection(), "{other}");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn without_trusted_proxies_x_forwarded_for_is_ignored(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for _ in 0..LoginPolicy::default().max_failures_per_user {
        let failed = login_forwarded_for(&app, "203.0.113.7", "guess-again").await;
        assert_eq!(failed, StatusCode::UNAUTHORIZED);
    }
    // The failures counted against the peer (this test), whatever the header claimed.
    assert_eq!(login_forwarded_for(&app, "203.0.113.8", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(app.login(PASSWORD).await.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn logout_ends_the_session_for_good(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let login = app.login(PASSWORD).await;
    let cookie = login.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    let session_cookie = cookie.split(';').next().unwrap().to_string();

    assert!(app.client.post(app.url("/api/logout")).send().await.unwrap().status().is_success());
    assert_eq!(location(&app.get("/").await), "/login");

    // Replaying the old cookie does not bring the session back: it was deleted server-side.
    let replay = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(app.url("/"))
        .header("cookie", session_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), StatusCode::SEE_OTHER);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn session_expires_after_inactivity(pool: PgPool) {
    let app = TestApp::spawn_with(pool, 1).await;
    app.login(PASSWORD).await;
    assert_eq!(app.get("/").await.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let response = app.get("/").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&response), "/login");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn cross_site_writes_are_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let evil = client_with_origin("http://evil.example");
    let response = evil
        .post(app.url("/api/login"))
        .form(&[("username", "admin"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let no_origin = reqwest::Client::new()
        .post(app.url("/api/login"))
        .form(&[("username", "admin"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status(), StatusCode::FORBIDDEN);
}

/// A new password (an owner's `toolgate admin reset-password`) ends the sessions opened with
/// the old one.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_password_reset_ends_the_accounts_sessions(pool: PgPool) {
    use engine::admin::{Password, Username};
    let app = TestApp::spawn(pool.clone()).await;
    assert!(app.login(PASSWORD).await.status().is_success());
    assert!(app.client.post(app.url("/api/me")).send().await.unwrap().status().is_success());
    let new = "a-brand-new-password";
    engine::admin::set_password(
        &pool,
        &Username::parse("admin").unwrap(),
        &Password::parse(new.into()).unwrap(),
    )
    .await
    .unwrap();
    let me = app.client.post(app.url("/api/me")).send().await.unwrap();
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED, "the old session still works");
    assert!(app.login(new).await.status().is_success());
    assert!(app.client.post(app.url("/api/me")).send().await.unwrap().status().is_success());
}

/// A printed password is for one sign-in (issue 35): signed in with it, the account is sent to
/// choose its own (and then on where it was going), while every page, server function and the
/// admin API wait for that; its own password then opens everything and the printed one nothing.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_one_time_password_leads_to_choosing_ones_own_first(pool: PgPool) {
    use engine::admin::{Password, Username};
    let app = TestApp::spawn(pool.clone()).await;
    let once = Password::generate();
    engine::admin::set_password(&pool, &Username::parse("admin").unwrap(), &once).await.unwrap();
    let signed_in = app
        .client
        .post(app.url("/api/login"))
        .form(&[("username", "admin"), ("password", once.expose()), ("next", "/servers")])
        .send()
        .await
        .unwrap();
    let location = |response: &reqwest::Response| {
        response.headers().get(LOCATION).map(|l| l.to_str().unwrap().to_string())
    };
    assert_eq!(location(&signed_in).as_deref(), Some("/account?next=%2Fservers"));
    let page = app.get("/tenants?x=1").await;
    assert_eq!(location(&page).as_deref(), Some("/account?next=%2Ftenants%3Fx%3D1"), "{}", page.status());
    let owners_page = app.get("/accounts").await;
    assert_eq!(location(&owners_page).as_deref(), Some("/account?next=%2Faccounts"), "not one's own page");
    assert!(app.get("/account").await.status().is_success());
    let me = json_of(app.client.post(app.url("/api/me"))).await;
    assert_eq!(me["password_temporary"], true, "{me}");
    let consent = || app.client.post(app.url("/api/consent")).form(&[("id", "not-a-request")]).send();
    let refused = consent().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(refused.text().await.unwrap().contains("one-time password"));
    let api = app.get("/api/admin/v1/tenants").await;
    assert_eq!(api.status(), StatusCode::FORBIDDEN);

    let change = |current: &str, password: &str, again: &str| {
        app.client
            .post(app.url("/api/change_password"))
            .form(&[("current", current), ("password", password), ("again", again), ("next", "/servers")])
            .send()
    };
    let differ = change(once.expose(), "mine-and-long-enough", "mine-and-long-enougH").await.unwrap();
    assert!(differ.text().await.unwrap().contains("the two new passwords differ"));
    let wrong = change("not-the-password", "mine-and-long-enough", "mine-and-long-enough").await.unwrap();
    assert!(wrong.text().await.unwrap().contains("the current password is not right"));
    let changed = change(once.expose(), "mine-and-long-enough", "mine-and-long-enough").await.unwrap();
    assert_eq!(location(&changed).as_deref(), Some("/servers"), "{}", changed.text().await.unwrap());
    assert!(app.get("/tenants").await.status().is_success(), "still signed in, in a new session");
    let answered = consent().await.unwrap().text().await.unwrap();
    assert!(answered.contains("this sign-in request does not exist"), "{answered}");
    assert_eq!(app.get("/api/admin/v1/tenants").await.status(), StatusCode::OK);
    let old = client_with_origin(&app.url(""));
    let again = old
        .post(app.url("/api/login"))
        .form(&[("username", "admin"), ("password", once.expose())])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::UNAUTHORIZED, "the one-time password works no more");
}

/// An `Authorization` header used to skip the origin check even when the session cookie
/// authenticated the request.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_session_cookie_needs_the_origin_whatever_else_the_request_carries(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    assert!(app.login(PASSWORD).await.status().is_success());
    let forged = app
        .client
        .post(app.url("/api/logout"))
        .header(reqwest::header::ORIGIN, "http://evil.example")
        .header(reqwest::header::AUTHORIZATION, "Bearer anything")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(
        app.client.post(app.url("/api/me")).send().await.unwrap().status().is_success(),
        "still signed in"
    );

    // An admin token alone is not a browser's: it needs no origin.
    let token = common::admin_token(&pool, "script").await;
    let created = reqwest::Client::new()
        .post(app.url("/api/admin/v1/tenants"))
        .header(reqwest::header::ORIGIN, "http://evil.example")
        .bearer_auth(&token)
        .json(&serde_json::json!({"slug": "initech", "name": "Initech"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn healthz_reports_the_database(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app.get("/healthz").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "ok");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), StatusCode::OK);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!((body["ready"].as_bool(), body["database"].as_str()), (Some(true), Some("ok")));
    assert!(body["snapshot_version"].as_u64().unwrap() >= 1);
}

fn header<'r>(response: &'r reqwest::Response, name: &str) -> Option<&'r str> {
    response.headers().get(name).map(|value| value.to_str().unwrap())
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn pages_admit_only_their_own_scripts_and_every_answer_carries_the_security_headers(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let login_page = app.get("/login").await;
    let policy = header(&login_page, "content-security-policy").expect("the page's policy").to_string();
    for directive in
        ["default-src 'none'", "script-src 'self' 'nonce-", "'wasm-unsafe-eval'", "frame-ancestors 'none'"]
    {
        assert!(policy.contains(directive), "{directive} missing from {policy}");
    }
    let nonce = policy.split("'nonce-").nth(1).unwrap().split('\'').next().unwrap().to_string();
    let html = login_page.text().await.unwrap();
    assert!(html.contains(&format!("nonce=\"{nonce}\"")), "the hydration script carries the policy's nonce");
    let next_page = app.get("/login").await;
    assert!(
        !header(&next_page, "content-security-policy").unwrap().contains(&nonce),
        "a nonce serves one page"
    );

    let refused = app.client.post(app.url("/api/me")).send().await.unwrap();
    for answer in [&next_page, &refused, &app.get("/healthz").await, &app.get("/api/v1/tools").await] {
        let url = answer.url().path();
        assert_eq!(header(answer, "x-content-type-options"), Some("nosniff"), "{url}");
        assert_eq!(header(answer, "x-frame-options"), Some("DENY"), "{url}");
        assert_eq!(header(answer, "referrer-policy"), Some("same-origin"), "{url}");
        assert!(
            header(answer, "content-security-policy").unwrap().contains("frame-ancestors 'none'"),
            "{url}"
        );
        assert_eq!(header(answer, "strict-transport-security"), None, "plain http: no HSTS ({url})");
    }
    assert_eq!(
        header(&refused, "content-security-policy"),
        Some("default-src 'none'; frame-ancestors 'none'")
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_https_public_url_turns_on_hsts(pool: PgPool) {
    let app = TestApp::spawn_configured(pool, |settings| {
        settings.public_url = Some("https://gate.example.com".into());
    })
    .await;
    let answer = app.get("/login").await;
    assert_eq!(header(&answer, "strict-transport-security"), Some("max-age=31536000"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_tenant_page_streams_to_its_end_every_time(pool: PgPool) {
    // Its members card loads after the tenant: a resource made inside the tenant's `Transition`
    // left some answers open for good (leptos-rs/leptos#4866), and the browser waiting forever.
    use engine::model::TenantSlug;
    use engine::store::{self, Actor};
    let app = TestApp::spawn(pool.clone()).await;
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    app.login(PASSWORD).await;
    let pages = (0..40).map(|_| async {
        let page = tokio::time::timeout(Duration::from_secs(20), async {
            app.get("/tenants/acme").await.text().await
        })
        .await
        .expect("the page never finished")
        .unwrap();
        assert!(page.contains("No member yet."), "{page}");
    });
    futures::future::join_all(pages).await;
}
