//! How people sign in, as owners set it: the OpenID provider and its rules in the admin API
//! and the configuration document (secret kept as `{set: true}`, never shown), local passwords
//! off for everyone but the break-glass owner, and a tenant's members managed in the admin API.

mod common;

use common::{PASSWORD, TestApp, admin_token, json_of};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

fn provider() -> Value {
    json!({
        "display_name": "Acme ID",
        "issuer": "https://id.acme.test",
        "client_id": "toolgate",
        "client_secret": {"secret": "provider-secret"},
        "rules": [{"email_domain": "acme.test", "tenant": "acme", "role": "member"},
                  {"group": "toolgate-owners", "role": "owner"}],
    })
}

async fn api(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request =
        reqwest::Client::new().request(method, app.url(&format!("/api/admin/v1{path}"))).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_provider_is_set_in_the_admin_api_and_the_document_without_showing_its_secret(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let token = admin_token(&pool, "ci").await;
    let put = reqwest::Method::PUT;
    api(&app, &token, reqwest::Method::POST, "/tenants", Some(json!({"slug": "acme", "name": "Acme"}))).await;

    // Rules are checked: a member rule names its tenant, which must exist.
    let mut bad = provider();
    bad["rules"] = json!([{"email_domain": "acme.test", "role": "member"}]);
    let (status, refused) = api(&app, &token, put.clone(), "/sign_in", Some(json!({"sso": bad}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        refused["detail"].as_str().unwrap().contains("rules[0]: a member rule names its tenant"),
        "{refused}"
    );
    bad["rules"] = json!([{"email_domain": "acme.test", "tenant": "nope", "role": "member"}]);
    let (_, refused) = api(&app, &token, put.clone(), "/sign_in", Some(json!({"sso": bad}))).await;
    assert!(refused["detail"].as_str().unwrap().contains("no tenant `nope`"), "{refused}");

    let (status, set) = api(&app, &token, put.clone(), "/sign_in", Some(json!({"sso": provider()}))).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["sso"]["client_secret"], json!({"set": true}));
    assert!(!set.to_string().contains("provider-secret"));
    let sealed: String =
        sqlx::query_scalar("select client_secret from sso_provider").fetch_one(&pool).await.unwrap();
    assert!(sealed.starts_with("v1:") && !sealed.contains("provider-secret"));

    // The document carries it with the secret as {set: true}; applied again, nothing changes.
    let document: Value =
        json_of(reqwest::Client::new().get(app.url("/api/admin/v1/config")).bearer_auth(&token)).await;
    assert_eq!(document["sign_in"]["sso"]["client_secret"], json!({"set": true}));
    assert_eq!(document["sign_in"]["sso"]["groups_claim"], "groups");
    let (status, answer) =
        api(&app, &token, put.clone(), "/config?dry_run=true", Some(document.clone())).await;
    assert_eq!((status, answer["changes"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{answer}");
    // A document without `sign_in` (written before it existed) leaves it as it is.
    let mut older = document.clone();
    older.as_object_mut().unwrap().remove("sign_in");
    let (status, answer) = api(&app, &token, put.clone(), "/config", Some(older)).await;
    assert_eq!((status, answer["changes"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{answer}");
    // Another issuer with `{set: true}`: the secret does not follow the provider to it.
    let mut moved = document.clone();
    moved["sign_in"]["sso"]["issuer"] = json!("https://evil.example");
    let (status, refused) = api(&app, &token, put.clone(), "/config?dry_run=true", Some(moved)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("sign_in: secret `sso.client_secret` has no stored value to keep"),
        "{refused}"
    );
    // A new secret shows as changed in a dry run, never as its value.
    let mut new_secret = document;
    new_secret["sign_in"]["sso"]["client_secret"] = json!({"secret": "another"});
    let (_, answer) = api(&app, &token, put, "/config?dry_run=true", Some(new_secret)).await;
    let changes = &answer["changes"];
    assert_eq!(changes[0]["kind"], "sign_in");
    assert_eq!(changes[0]["after"]["sso"]["client_secret"], json!({"set": true, "changed": true}));
    assert!(!changes.to_string().contains("another"));

    // What the sign-in page offers, to anyone.
    let offered: Value = json_of(app.client.post(app.url("/api/sign_in_choices"))).await;
    assert_eq!(offered, json!({"sso": "Acme ID", "local_passwords": true}));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn with_local_passwords_off_only_the_break_glass_owner_signs_in_with_one(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let token = admin_token(&pool, "ci").await;
    api(&app, &token, reqwest::Method::POST, "/tenants", Some(json!({"slug": "acme", "name": "Acme"}))).await;
    let (status, _) = api(
        &app,
        &token,
        reqwest::Method::POST,
        "/tenants/acme/members",
        Some(json!({"username": "ann", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);

    let off = |owner: &str| json!({"local_passwords": false, "break_glass_owner": owner, "sso": provider()});
    let (status, refused) =
        api(&app, &token, reqwest::Method::PUT, "/sign_in", Some(json!({"local_passwords": false}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused["detail"].as_str().unwrap().contains("only with an OpenID provider"), "{refused}");
    let (_, refused) = api(&app, &token, reqwest::Method::PUT, "/sign_in", Some(off("ann"))).await;
    assert!(
        refused["detail"].as_str().unwrap().contains("`ann` is not an owner with a password"),
        "{refused}"
    );
    let (status, _) = api(&app, &token, reqwest::Method::PUT, "/sign_in", Some(off("admin"))).await;
    assert_eq!(status, StatusCode::OK);

    let login = |username: &'static str| {
        let client = common::client_with_origin(&app.url(""));
        let url = app.url("/api/login");
        async move {
            client.post(url).form(&[("username", username), ("password", PASSWORD)]).send().await.unwrap()
        }
    };
    let refused = login("ann").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(refused.text().await.unwrap().contains("sign-in with a password is turned off"));
    let owner = login("admin").await.status();
    assert!(owner.is_redirection() || owner.is_success(), "{owner}");
    // Adding a member with a password is refused too; an invitation is not offered either way.
    let (status, refused) = api(
        &app,
        &token,
        reqwest::Method::POST,
        "/tenants/acme/members",
        Some(json!({"username": "bob", "password": PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused["detail"].as_str().unwrap().contains("passwords are turned off"), "{refused}");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_members_are_managed_in_the_admin_api(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let token = admin_token(&pool, "ci").await;
    let post = reqwest::Method::POST;
    api(&app, &token, post.clone(), "/tenants", Some(json!({"slug": "acme", "name": "Acme"}))).await;
    let (status, invited) =
        api(&app, &token, post.clone(), "/tenants/acme/members", Some(json!({"username": "cat"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(invited["invitation"].as_str().unwrap().starts_with("tgi_"));
    let (_, again) =
        api(&app, &token, post.clone(), "/tenants/acme/members", Some(json!({"username": "cat"}))).await;
    assert!(again["detail"].as_str().unwrap().contains("a member of this tenant already"), "{again}");
    let (_, short) = api(
        &app,
        &token,
        post.clone(),
        "/tenants/acme/members",
        Some(json!({"username": "dan", "password": "short"})),
    )
    .await;
    assert!(short["detail"].as_str().unwrap().contains("at least 12 characters"), "{short}");

    let (_, members) = api(&app, &token, reqwest::Method::GET, "/tenants/acme/members", None).await;
    assert_eq!(members.as_array().unwrap().len(), 1);
    assert_eq!(
        (members[0]["username"].as_str(), members[0]["has_password"].as_bool()),
        (Some("cat"), Some(false))
    );

    // The invitation sets a password once; a new link ends the old one.
    let first = invited["invitation"].as_str().unwrap().to_string();
    let (_, renewed) = api(&app, &token, post, "/tenants/acme/members/cat/invitation", None).await;
    let second = renewed["invitation"].as_str().unwrap().to_string();
    let services = app.services();
    assert!(engine::service::members::accept(&services, &first, PASSWORD.into()).await.is_err());
    let cat = engine::service::members::accept(&services, &second, PASSWORD.into()).await.unwrap();
    assert_eq!(cat.username, "cat");
    assert!(engine::service::members::accept(&services, &second, PASSWORD.into()).await.is_err());

    let (status, _) = api(
        &app,
        &token,
        reqwest::Method::PATCH,
        "/tenants/acme/members/cat",
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api(&app, &token, reqwest::Method::DELETE, "/tenants/acme/members/cat", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let gone: i64 = sqlx::query_scalar("select count(*) from admin_user where username = 'cat'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(gone, 0, "a member of no tenant is deleted");
    let audited: Vec<String> = sqlx::query_scalar(
        "select action from audit_event where entity_kind = 'tenant' and action like '%member%' order by id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(audited, ["add_member", "invite_member", "disable_member", "remove_member"]);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_tenants_administrator_cannot_take_over_a_member_of_other_tenants(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let token = admin_token(&pool, "ci").await;
    let post = reqwest::Method::POST;
    for slug in ["acme", "globex"] {
        api(&app, &token, post.clone(), "/tenants", Some(json!({"slug": slug, "name": slug}))).await;
    }
    api(
        &app,
        &token,
        post.clone(),
        "/tenants/acme/members",
        Some(json!({"username": "xan", "password": PASSWORD})),
    )
    .await;
    // The owner adds the same person to globex (keeping how they sign in).
    let (status, added) =
        api(&app, &token, post.clone(), "/tenants/globex/members", Some(json!({"username": "xan"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["invitation"], Value::Null);

    // Acme's own token may not reset or disable them (they are globex's too); it may take them
    // off acme, which leaves globex's member as it was.
    let new = engine::store::tokens::NewToken {
        name: "acme-ci".into(),
        tenant: Some(engine::model::TenantSlug::parse("acme").unwrap()),
        ..Default::default()
    };
    let acme = engine::store::tokens::create(&pool, &engine::store::Actor::cli(), &new).await.unwrap().1;
    let (status, refused) = api(&app, &acme, post, "/tenants/acme/members/xan/invitation", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(refused["detail"].as_str().unwrap().contains("member of other tenants too"), "{refused}");
    let (status, _) = api(
        &app,
        &acme,
        reqwest::Method::PATCH,
        "/tenants/acme/members/xan",
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = api(&app, &acme, reqwest::Method::DELETE, "/tenants/acme/members/xan", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, members) = api(&app, &token, reqwest::Method::GET, "/tenants/globex/members", None).await;
    assert_eq!(members[0]["username"], "xan", "{members}");
}
