//! Toolgate as the OAuth 2.1 authorization server of its endpoints, at the HTTP level: the
//! discovery a client follows from a 401, registration (dynamic and by metadata document),
//! the authorization code flow with PKCE and `resource` through sign-in and consent, tokens
//! bound to one tenant's endpoint, rotation and revocation — and every refusal, which changes
//! nothing and never sends the browser somewhere it should not go.

mod common;

use std::time::Duration;

use common::{PASSWORD, TestApp, client_with_origin, json_of};
use engine::model::TenantSlug;
use engine::service::members::{self, Credential};
use engine::store::{self, Actor};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// RFC 7636 appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// Tenants `acme` and `globex`, and member `ann` of acme (password [`PASSWORD`]).
async fn tenants_and_member(app: &TestApp, pool: &PgPool) {
    for slug in ["acme", "globex"] {
        let slug = TenantSlug::parse(slug).unwrap();
        store::tenants::create(pool, &Actor::system(), &slug, "Tenant").await.unwrap();
    }
    let admin = engine::service::Admin::signed_in("admin", engine::admin::Scope::Everything);
    let services = app.services();
    members::add(&services, &admin.tenant("acme").unwrap(), "ann", Credential::Password(PASSWORD.into()))
        .await
        .unwrap();
}

/// A browser of `person`: signed in to Toolgate, it follows an authorization to its consent.
struct Browser {
    http: reqwest::Client,
}

impl Browser {
    async fn signed_in(app: &TestApp, person: &str) -> Self {
        let http = client_with_origin(&app.url(""));
        let signed = http
            .post(app.url("/api/login"))
            .form(&[("username", person), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert!(signed.status().is_success() || signed.status().is_redirection(), "{}", signed.status());
        Browser { http }
    }

    /// Opens the authorization URL; the answer (a redirect to consent, or back to the client).
    async fn authorize(&self, app: &TestApp, query: &[(&str, &str)]) -> reqwest::Response {
        self.http.get(app.url("/oauth/authorize")).query(query).send().await.unwrap()
    }

    /// Answers the consent page the answer led to: the URL it sends the browser to (at once
    /// when the person allowed this app before).
    async fn consent(&self, app: &TestApp, authorized: reqwest::Response, approve: bool) -> String {
        assert_eq!(authorized.status(), StatusCode::SEE_OTHER, "{:?}", authorized.text().await);
        let page = location(&authorized);
        let Some(id) = page.strip_prefix("/authorize/") else { return page };
        let decided = self.decide(app, id, approve).await;
        assert_eq!(decided.status(), StatusCode::OK, "{:?}", decided.text().await);
        decided.json::<String>().await.unwrap()
    }

    /// What the consent page the answer led to shows, and its request's id.
    async fn consent_page(&self, app: &TestApp, authorized: &reqwest::Response) -> (String, Value) {
        let id = location(authorized).strip_prefix("/authorize/").unwrap().to_string();
        let page = json_of(self.http.post(app.url("/api/consent")).form(&[("id", id.as_str())])).await;
        (id, page)
    }

    /// Allows (or declines) the request `id` as the consent page's buttons do.
    async fn decide(&self, app: &TestApp, id: &str, approve: bool) -> reqwest::Response {
        let approve = approve.to_string();
        self.http
            .post(app.url("/api/decide"))
            .form(&[("id", id), ("approve", &approve)])
            .send()
            .await
            .unwrap()
    }
}

fn location(answer: &reqwest::Response) -> String {
    answer.headers().get("location").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default()
}

fn query_of(url: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

fn param(url: &str, name: &str) -> Option<String> {
    query_of(url).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Registers a public client dynamically; its id.
async fn register(app: &TestApp) -> String {
    let registered = reqwest::Client::new()
        .post(app.url("/oauth/register"))
        .json(&json!({"client_name": "Test agent", "redirect_uris": [REDIRECT],
                      "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), StatusCode::CREATED);
    let registered: Value = registered.json().await.unwrap();
    assert_eq!(registered["token_endpoint_auth_method"], "none");
    assert_eq!(registered["redirect_uris"], json!([REDIRECT]));
    assert!(registered.get("client_secret").is_none());
    registered["client_id"].as_str().unwrap().to_string()
}

/// The authorization request of `client` for `resource`.
fn authorization<'a>(client: &'a str, resource: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", REDIRECT),
        ("state", "xyz"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", resource),
        ("scope", "tools"),
    ]
}

async fn token(app: &TestApp, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let answer = reqwest::Client::new().post(app.url("/oauth/token")).form(form).send().await.unwrap();
    let status = answer.status();
    assert_eq!(answer.headers().get("cache-control").unwrap(), "no-store");
    (status, answer.json().await.unwrap())
}

async fn exchange(app: &TestApp, client: &str, code: &str, resource: &str) -> (StatusCode, Value) {
    token(
        app,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client),
            ("code_verifier", VERIFIER),
            ("resource", resource),
        ],
    )
    .await
}

/// A whole flow for `person` and acme's endpoint: the tokens.
async fn tokens_for(app: &TestApp, person: &str) -> (String, Value) {
    let client = register(app).await;
    let resource = app.url("/mcp/acme");
    let browser = Browser::signed_in(app, person).await;
    let back =
        browser.consent(app, browser.authorize(app, &authorization(&client, &resource)).await, true).await;
    let code = param(&back, "code").unwrap();
    let (status, tokens) = exchange(app, &client, &code, &resource).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    (client, tokens)
}

/// `tools/list` on `tenant`'s endpoint (revision 2026-07-28, no session) with `token`: the
/// status, and the `WWW-Authenticate` of a refusal.
async fn list_tools(app: &TestApp, tenant: &str, token: &str) -> (StatusCode, String) {
    let answer = reqwest::Client::new()
        .post(app.url(&format!("/mcp/{tenant}")))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}))
        .send()
        .await
        .unwrap();
    let challenge = answer.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_string());
    (answer.status(), challenge.unwrap_or_default())
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_refused_request_says_where_to_sign_in_and_the_metadata_leads_there(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (status, challenge) = list_tools(&app, "acme", "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let metadata_url = app.url("/.well-known/oauth-protected-resource/mcp/acme");
    assert_eq!(challenge, format!(r#"Bearer resource_metadata="{metadata_url}", scope="tools""#));
    // A GET (how mcp-remote probes) gets the same challenge, not a 405.
    let probe = reqwest::Client::new().get(app.url("/mcp/acme")).send().await.unwrap();
    assert_eq!(probe.status(), StatusCode::UNAUTHORIZED);
    assert!(probe.headers()["www-authenticate"].to_str().unwrap().contains("resource_metadata="));

    let resource: Value = json_of(reqwest::Client::new().get(&metadata_url)).await;
    assert_eq!(resource["resource"], app.url("/mcp/acme"));
    assert_eq!(resource["authorization_servers"], json!([app.url("")]));
    assert_eq!(resource["scopes_supported"], json!(["tools"]));
    // No host-wide resource: a client would otherwise ask for a token for everything.
    let root = reqwest::get(app.url("/.well-known/oauth-protected-resource")).await.unwrap();
    assert_eq!(root.status(), StatusCode::NOT_FOUND);

    let server: Value =
        json_of(reqwest::Client::new().get(app.url("/.well-known/oauth-authorization-server"))).await;
    assert_eq!(server["issuer"], app.url(""));
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(server["client_id_metadata_document_supported"], true);
    assert_eq!(server["token_endpoint"], app.url("/oauth/token"));
    assert_eq!(server["authorization_response_iss_parameter_supported"], true);
    // Toolgate issues no ID tokens: it offers no OpenID discovery document.
    let openid = reqwest::get(app.url("/.well-known/openid-configuration")).await.unwrap();
    assert_eq!(openid.status(), StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_member_authorizes_an_app_that_then_reaches_only_its_tenants_endpoint(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let client = register(&app).await;
    let resource = app.url("/mcp/acme");
    let browser = Browser::signed_in(&app, "ann").await;
    let back =
        browser.consent(&app, browser.authorize(&app, &authorization(&client, &resource)).await, true).await;
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("xyz"));
    assert_eq!(param(&back, "iss"), Some(app.url("")));
    let code = param(&back, "code").unwrap();

    let (status, tokens) = exchange(&app, &client, &code, &resource).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!((tokens["token_type"].as_str(), tokens["scope"].as_str()), (Some("Bearer"), Some("tools")));
    assert_eq!(tokens["expires_in"], 3600);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", access).await.0, StatusCode::OK);

    // Bound to acme's MCP endpoint: refused by globex's and by the REST API.
    let (status, challenge) = list_tools(&app, "globex", access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.starts_with(r#"Bearer error="invalid_token""#), "{challenge}");
    assert!(challenge.contains("/.well-known/oauth-protected-resource/mcp/globex"), "{challenge}");
    let rest = reqwest::Client::new().get(app.url("/api/v1/tools")).bearer_auth(access).send().await.unwrap();
    assert_eq!(rest.status(), StatusCode::UNAUTHORIZED);

    // The call is recorded as the person's, through the app.
    let granted =
        engine::service::apps::of_tenant(&app.services(), &admin_of("acme").tenant("acme").unwrap())
            .await
            .unwrap();
    assert_eq!(
        (granted.len(), granted[0].username.as_str(), granted[0].client_name.as_str()),
        (1, "ann", "Test agent")
    );
}

fn admin_of(_tenant: &str) -> engine::service::Admin {
    engine::service::Admin::signed_in("admin", engine::admin::Scope::Everything)
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn bad_authorization_requests_are_refused_without_going_anywhere_unsafe(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let client = register(&app).await;
    let resource = app.url("/mcp/acme");
    let browser = Browser::signed_in(&app, "ann").await;
    let with = |changes: &[(&'static str, &'static str)]| {
        let mut query: Vec<(&str, String)> =
            authorization(&client, &resource).into_iter().map(|(k, v)| (k, v.to_string())).collect();
        for (name, value) in changes {
            query.retain(|(k, _)| k != name);
            if !value.is_empty() {
                query.push((name, value.to_string()));
            }
        }
        query
    };
    let ask = async |query: Vec<(&str, String)>| {
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        browser.authorize(&app, &query).await
    };

    // An unknown client or a redirect it did not register: a page, never a redirect.
    for changes in [
        &[("client_id", "tgd_nobody")][..],
        &[("redirect_uri", "http://127.0.0.1:9/other")],
        &[("redirect_uri", "https://evil.example/cb")],
    ] {
        let refused = ask(with(changes)).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{changes:?}");
        assert!(refused.headers().get("location").is_none());
        assert!(refused.text().await.unwrap().contains("refused"));
    }
    // A loopback redirect may change its port.
    let other_port = ask(with(&[("redirect_uri", "http://127.0.0.1:4567/callback")])).await;
    assert_eq!(other_port.status(), StatusCode::SEE_OTHER);
    assert!(location(&other_port).starts_with("/authorize/"));

    // The rest goes back to the client with the error.
    for (changes, error) in [
        (&[("code_challenge", ""), ("code_challenge_method", "")][..], "invalid_request"),
        (&[("code_challenge_method", "plain")], "invalid_request"),
        (&[("resource", "")], "invalid_request"),
        (&[("resource", "http://evil.example/mcp/acme")], "invalid_target"),
        (&[("response_type", "token")], "unsupported_response_type"),
    ] {
        let refused = ask(with(changes)).await;
        assert_eq!(refused.status(), StatusCode::SEE_OTHER, "{changes:?}");
        let back = location(&refused);
        assert!(back.starts_with(REDIRECT), "{back}");
        assert_eq!(param(&back, "error").as_deref(), Some(error), "{changes:?}: {back}");
        assert_eq!(param(&back, "state").as_deref(), Some("xyz"));
    }
    // Whether a tenant exists is told only to a person signed in: a stranger's request for
    // an unknown tenant is answered as one for a tenant they may not use, at consent.
    let nobody = format!("{}/mcp/nobody", app.url(""));
    let query: Vec<(&str, &str)> = authorization(&client, &nobody);
    let stranger = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let asked = stranger.get(app.url("/oauth/authorize")).query(&query).send().await.unwrap();
    assert_eq!(asked.status(), StatusCode::SEE_OTHER);
    assert!(location(&asked).starts_with("/authorize/"));
    let refused = browser.authorize(&app, &query).await;
    let (id, consent) = browser.consent_page(&app, &refused).await;
    assert_eq!(consent["allowed"], false);
    let decided = browser.decide(&app, &id, true).await;
    assert_eq!(decided.status(), StatusCode::FORBIDDEN);

    // From another site's page, a page of this site takes the browser on to consent, so the
    // SameSite=Strict session comes along.
    let query: Vec<(&str, &str)> = authorization(&client, &resource);
    let across = browser
        .http
        .get(app.url("/oauth/authorize"))
        .query(&query)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(across.status(), StatusCode::OK);
    assert!(
        across.text().await.unwrap().contains(r#"<meta http-equiv="refresh" content="0;url=/authorize/"#)
    );

    // Denying sends the person back with access_denied.
    let denied =
        browser.consent(&app, browser.authorize(&app, &authorization(&client, &resource)).await, false).await;
    assert_eq!(param(&denied, "error").as_deref(), Some("access_denied"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn only_a_member_of_the_tenant_may_authorize_for_it(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let client = register(&app).await;
    let globex = app.url("/mcp/globex");
    let browser = Browser::signed_in(&app, "ann").await;
    let asked = browser.authorize(&app, &authorization(&client, &globex)).await;
    let (id, consent) = browser.consent_page(&app, &asked).await;
    assert_eq!(consent["allowed"], false);
    assert_eq!(consent["tenant"], "globex");
    let decided = browser.decide(&app, &id, true).await;
    assert_eq!(decided.status(), StatusCode::FORBIDDEN);
    assert!(decided.text().await.unwrap().contains("may not authorize apps for tenant `globex`"));
    let grants: i64 = sqlx::query_scalar("select count(*) from oauth_grant").fetch_one(&pool).await.unwrap();
    assert_eq!(grants, 0);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn bad_token_requests_are_refused_and_a_reused_code_revokes_its_grant(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let client = register(&app).await;
    let resource = app.url("/mcp/acme");
    let browser = Browser::signed_in(&app, "ann").await;
    let code = async || {
        let back = browser
            .consent(&app, browser.authorize(&app, &authorization(&client, &resource)).await, true)
            .await;
        param(&back, "code").unwrap()
    };

    let first = code().await;
    let wrong_verifier = "a".repeat(43);
    let form = |code: &str, verifier: &str| {
        vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code.to_string()),
            ("redirect_uri", REDIRECT.to_string()),
            ("client_id", client.clone()),
            ("code_verifier", verifier.to_string()),
        ]
    };
    let post = async |form: Vec<(&str, String)>| {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        token(&app, &form).await
    };
    let (status, refused) = post(form(&first, &wrong_verifier)).await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    // A short verifier is refused as well (not a crash).
    let (status, refused) = post(form(&code().await, "short")).await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    let mut no_verifier = form(&code().await, VERIFIER);
    no_verifier.retain(|(k, _)| *k != "code_verifier");
    assert_eq!(post(no_verifier).await.1["error"], "invalid_request");
    let (status, refused) = exchange(&app, "tgd_nobody", &code().await, &resource).await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_client")));
    assert_eq!(
        exchange(&app, &client, &code().await, &app.url("/mcp/globex")).await.1["error"],
        "invalid_target"
    );
    assert_eq!(
        post(vec![("grant_type", "password".into()), ("client_id", client.clone())]).await.1["error"],
        "unsupported_grant_type"
    );

    // A code works once; its second use revokes what the first gave.
    let code = code().await;
    let (status, tokens) = exchange(&app, &client, &code, &resource).await;
    assert_eq!(status, StatusCode::OK);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", access).await.0, StatusCode::OK);
    let (status, reused) = exchange(&app, &client, &code, &resource).await;
    assert_eq!((status, reused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert!(reused["error_description"].as_str().unwrap().contains("revoked"));
    until_refused(&app, access).await;
}

/// Waits until `access` is refused by acme's endpoint (the revocation reaches the catalog).
async fn until_refused(app: &TestApp, access: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (status, challenge) = list_tools(app, "acme", access).await;
        if status == StatusCode::UNAUTHORIZED {
            assert!(challenge.contains(r#"error="invalid_token""#), "{challenge}");
            return challenge;
        }
        assert!(std::time::Instant::now() < deadline, "the token still works");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn refresh_tokens_rotate_and_a_reused_one_revokes_the_whole_grant(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    let refresh = |token: &str| {
        vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", token.to_string()),
            ("client_id", client.clone()),
        ]
    };
    let post = async |form: Vec<(&str, String)>| {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        token(&app, &form).await
    };
    let first_refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, second) = post(refresh(first_refresh)).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(second["refresh_token"], tokens["refresh_token"]);
    let access = second["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", access).await.0, StatusCode::OK);
    assert_eq!(
        post(vec![
            ("grant_type", "refresh_token".into()),
            ("refresh_token", second["refresh_token"].as_str().unwrap().into()),
            ("client_id", client.clone()),
            ("scope", "tools admin".into())
        ])
        .await
        .1["error"],
        "invalid_scope"
    );

    // The first refresh token again at once: a retry of the client (its answer was lost), not
    // a theft — answered with new tokens, and what its first use bought is dropped (one chain
    // of tokens lives on, whoever presented it first).
    let (status, retried) = post(refresh(first_refresh)).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    until_refused(&app, access).await;
    let access = retried["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", access).await.0, StatusCode::OK);
    // Again a minute later: somebody else may hold it — every token of the grant goes.
    sqlx::query("update oauth_token set used_at = now() - interval '1 minute' where used_at is not null")
        .execute(&pool)
        .await
        .unwrap();
    let (status, reused) = post(refresh(first_refresh)).await;
    assert_eq!((status, reused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    until_refused(&app, access).await;
    assert_eq!(post(refresh(second["refresh_token"].as_str().unwrap())).await.1["error"], "invalid_grant");
    let revoked: bool =
        sqlx::query_scalar("select revoked_at is not null from oauth_grant").fetch_one(&pool).await.unwrap();
    assert!(revoked);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_expired_token_is_refused_as_invalid_and_revocation_works_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap();
    sqlx::query("update oauth_token set expires_at = now() - interval '1 second' where kind = 'access'")
        .execute(&pool)
        .await
        .unwrap();
    let (status, challenge) = list_tools(&app, "acme", access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge.contains("expired"), "{challenge}");

    // RFC 7009: the refresh token revokes the grant; the answer is 200 whatever the token.
    let refreshed = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await
    .1;
    let fresh = refreshed["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", fresh).await.0, StatusCode::OK);
    let revoke = |token: String| {
        let client = client.clone();
        let app = &app;
        async move {
            reqwest::Client::new()
                .post(app.url("/oauth/revoke"))
                .form(&[("token", token.as_str()), ("client_id", client.as_str())])
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(revoke("tgr_unknown".into()).await, StatusCode::OK);
    assert_eq!(revoke(refreshed["refresh_token"].as_str().unwrap().into()).await, StatusCode::OK);
    until_refused(&app, fresh).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn consent_is_remembered_until_the_person_revokes_the_app(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    let browser = Browser::signed_in(&app, "ann").await;
    let resource = app.url("/mcp/acme");
    let again = browser.authorize(&app, &authorization(&client, &resource)).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    assert!(location(&again).starts_with(REDIRECT), "asked again: {}", location(&again));

    // "Connected apps": the person revokes it; its tokens stop, and consent is asked again.
    let account = engine::admin::find(&pool, ann_id(&pool).await).await.unwrap().unwrap();
    let mine = engine::service::apps::mine(&app.services(), &account).await.unwrap();
    assert_eq!(mine.len(), 1);
    engine::service::apps::revoke_mine(&app.services(), &account, mine[0].id).await.unwrap();
    until_refused(&app, tokens["access_token"].as_str().unwrap()).await;
    let asked = browser.authorize(&app, &authorization(&client, &resource)).await;
    assert!(location(&asked).starts_with("/authorize/"));
}

async fn ann_id(pool: &PgPool) -> uuid::Uuid {
    sqlx::query_scalar("select id from admin_user where username = 'ann'").fetch_one(pool).await.unwrap()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_disabled_member_and_a_tenant_without_oauth_are_refused_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap();
    let admin = admin_of("acme");
    members::set_disabled(&app.services(), &admin.tenant("acme").unwrap(), "ann", true).await.unwrap();
    until_refused(&app, access).await;
    let signed = app
        .client
        .post(app.url("/api/login"))
        .form(&[("username", "ann"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), StatusCode::FORBIDDEN);
    members::set_disabled(&app.services(), &admin.tenant("acme").unwrap(), "ann", false).await.unwrap();

    let (_, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap();
    let off = store::tenants::TenantUpdate { oauth: Some(false), ..Default::default() };
    engine::service::tenants::update(&app.services(), &admin.tenant("acme").unwrap(), off).await.unwrap();
    until_refused(&app, access).await;
    let browser = Browser::signed_in(&app, "ann").await;
    let asked = browser.authorize(&app, &authorization(&client, &app.url("/mcp/acme"))).await;
    let (_, consent) = browser.consent_page(&app, &asked).await;
    assert_eq!(consent["allowed"], false, "a tenant without OAuth takes no app");
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn api_keys_can_be_turned_off_for_a_tenant(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = common::tenant_key(&app, &pool).await;
    let off = store::tenants::TenantUpdate { api_keys: Some(false), ..Default::default() };
    engine::service::tenants::update(&app.services(), &admin_of("acme").tenant("acme").unwrap(), off)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let refused =
            reqwest::Client::new().get(app.url("/api/v1/tools")).bearer_auth(&key).send().await.unwrap();
        if refused.status() == StatusCode::UNAUTHORIZED {
            assert!(refused.text().await.unwrap().contains("does not accept API keys"));
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn an_account_taken_off_a_tenant_loses_the_apps_it_authorized_there(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (_, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(list_tools(&app, "acme", access).await.0, StatusCode::OK);
    let owner = admin_of("acme").owner().unwrap();
    let ann = engine::admin::Username::parse("ann").unwrap();
    engine::service::accounts::set_tenants(&app.services(), &owner, &ann, &["globex".into()]).await.unwrap();
    until_refused(&app, access).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_disabled_tenant_refuses_its_keys_and_access_tokens_until_it_is_enabled(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (_, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let slug = TenantSlug::parse("acme").unwrap();
    let key =
        store::keys::create(&pool, &Actor::system(), &slug, "ci", None, Default::default()).await.unwrap().1;
    let switch = |enabled: bool| {
        let services = app.services();
        async move {
            let update = store::tenants::TenantUpdate { enabled: Some(enabled), ..Default::default() };
            engine::service::tenants::update(&services, &admin_of("acme").tenant("acme").unwrap(), update)
                .await
                .unwrap();
        }
    };
    // Each way in, until it answers `wanted`.
    let until = |wanted: StatusCode| {
        let (key, access) = (key.clone(), access.clone());
        let app = &app;
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            loop {
                let rest = reqwest::Client::new()
                    .get(app.url("/api/v1/tools"))
                    .bearer_auth(&key)
                    .send()
                    .await
                    .unwrap();
                let (mcp, _) = list_tools(app, "acme", &access).await;
                if rest.status() == wanted && mcp == wanted {
                    return rest.text().await.unwrap();
                }
                assert!(std::time::Instant::now() < deadline, "{} and {mcp}, not {wanted}", rest.status());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    until(StatusCode::OK).await;
    switch(false).await;
    let refused = until(StatusCode::FORBIDDEN).await;
    assert!(refused.contains("tenant_disabled") && refused.contains("this tenant is disabled"), "{refused}");
    switch(true).await;
    until(StatusCode::OK).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_client_identified_by_its_metadata_document_is_fetched_and_checked(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (good, liar) = (format!("{base}/client.json"), format!("{base}/liar.json"));
    let documents = axum::Router::new()
        .route("/client.json", axum::routing::get({
            let id = good.clone();
            move || async move { axum::Json(json!({"client_id": id, "client_name": "Metadata agent", "redirect_uris": [REDIRECT]})) }
        }))
        .route("/liar.json", axum::routing::get(|| async {
            axum::Json(json!({"client_id": "https://someone.else/client.json", "redirect_uris": [REDIRECT]}))
        }));
    tokio::spawn(async move { axum::serve(listener, documents).await });

    let resource = app.url("/mcp/acme");
    let browser = Browser::signed_in(&app, "ann").await;
    let asked = browser.authorize(&app, &authorization(&good, &resource)).await;
    let back = browser.consent(&app, asked, true).await;
    let (status, tokens) = exchange(&app, &good, &param(&back, "code").unwrap(), &resource).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let name: String = sqlx::query_scalar("select name from oauth_client where id = $1")
        .bind(&good)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(name, "Metadata agent");

    let refused = browser.authorize(&app, &authorization(&liar, &resource)).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(refused.text().await.unwrap().contains("another client_id"));
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn dynamic_registration_is_checked_and_bounded(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let url = app.url("/oauth/register");
    let post = async |body: Value| reqwest::Client::new().post(&url).json(&body).send().await.unwrap();
    let bad = post(json!({"redirect_uris": ["http://evil.example/cb"]})).await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"], "invalid_redirect_uri");
    let bad = post(json!({"redirect_uris": [REDIRECT], "grant_types": ["implicit"]})).await;
    assert_eq!(bad.json::<Value>().await.unwrap()["error"], "invalid_client_metadata");
    // Left out, the method is RFC 7591's default: a confidential client, with its secret.
    let confidential: Value =
        post(json!({"redirect_uris": [REDIRECT], "software_id": "x"})).await.json().await.unwrap();
    assert_eq!(confidential["token_endpoint_auth_method"], "client_secret_basic");
    assert!(confidential["client_secret"].as_str().unwrap().starts_with("tgs_"));
    assert_eq!(confidential["software_id"], "x");
    for _ in 1..20 {
        assert_eq!(post(json!({"redirect_uris": [REDIRECT]})).await.status(), StatusCode::CREATED);
    }
    let limited = post(json!({"redirect_uris": [REDIRECT]})).await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn behind_a_trusted_proxy_registrations_count_by_the_forwarded_address(pool: PgPool) {
    let app = TestApp::spawn_configured(pool, |settings| {
        settings.trusted_proxies = "127.0.0.1,::1".parse().unwrap();
    })
    .await;
    let url = app.url("/oauth/register");
    let post = async |forwarded_for: &str| {
        let body = json!({"redirect_uris": [REDIRECT]});
        let answer = reqwest::Client::new()
            .post(&url)
            .header("x-forwarded-for", forwarded_for)
            .json(&body)
            .send()
            .await
            .unwrap();
        answer.status()
    };
    for _ in 0..20 {
        assert_eq!(post("203.0.113.7").await, StatusCode::CREATED);
    }
    assert_eq!(post("203.0.113.7").await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(post("203.0.113.8").await, StatusCode::CREATED);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_member_sees_only_their_connected_apps_in_the_panel(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let browser = Browser::signed_in(&app, "ann").await;
    for page in ["/", "/tenants", "/servers", "/sign-in"] {
        let answer = browser.http.get(app.url(page)).send().await.unwrap();
        assert_eq!((answer.status(), location(&answer).as_str()), (StatusCode::SEE_OTHER, "/apps"), "{page}");
    }
    assert_eq!(browser.http.get(app.url("/apps")).send().await.unwrap().status(), StatusCode::OK);
    // Its account manages nothing: the admin API refuses its session too.
    let refused = browser.http.get(app.url("/api/admin/v1/tenants")).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

/// POSTs `message` to acme's endpoint with `token` (and `session`); the status and the session
/// the answer names.
async fn post_mcp(
    app: &TestApp,
    token: &str,
    session: Option<&str>,
    message: Value,
) -> (StatusCode, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&message);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    let answer = request.send().await.unwrap();
    let session = answer.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    (answer.status(), session)
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_session_belongs_to_the_grant_a_refreshed_token_continues(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, session) = post_mcp(&app, tokens["access_token"].as_str().unwrap(), None, initialize).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    let (_, refreshed) = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", &client),
        ],
    )
    .await;
    let (status, _) =
        post_mcp(&app, refreshed["access_token"].as_str().unwrap(), Some(&session), ping.clone()).await;
    assert_eq!(status, StatusCode::OK, "a refreshed token continues its grant's session");
    // The same person through another app is someone else to the session.
    let (_, other) = tokens_for(&app, "ann").await;
    let (status, _) = post_mcp(&app, other["access_token"].as_str().unwrap(), Some(&session), ping).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn each_person_has_the_tenants_per_user_limit(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let admin = admin_of("acme");
    let limits = engine::model::CallLimits { per_day: std::num::NonZeroU32::new(1), ..Default::default() };
    let update = store::tenants::TenantUpdate { user_limits: Some(limits), ..Default::default() };
    engine::service::tenants::update(&app.services(), &admin.tenant("acme").unwrap(), update).await.unwrap();
    let (_, tokens) = tokens_for(&app, "ann").await;
    let access = tokens["access_token"].as_str().unwrap();
    let call = |n: u32| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "list_directory", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}})
    };
    let answer = async |n: u32| -> Value {
        reqwest::Client::new()
            .post(app.url("/mcp/acme"))
            .bearer_auth(access)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "list_directory")
            .json(&call(n))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    };
    let first = answer(1).await;
    assert_ne!(first["result"]["isError"], true, "{first}");
    let second = answer(2).await;
    assert_eq!(second["result"]["isError"], true, "{second}");
    assert!(
        second.to_string().contains("the limit of 1 calls per day for each person is reached"),
        "{second}"
    );
    // Records are written in batches: wait for the one call that ran.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let recorded: Vec<String> = loop {
        let recorded: Vec<String> =
            sqlx::query_scalar("select caller from invocation").fetch_all(&pool).await.unwrap();
        if !recorded.is_empty() || std::time::Instant::now() > deadline {
            break recorded;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(recorded, ["user:ann via Test agent"]);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_person_taken_off_the_tenant_loses_its_apps_there(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    tenants_and_member(&app, &pool).await;
    let (client, tokens) = tokens_for(&app, "ann").await;
    // As the OpenID provider's claims do at the next sign-in, or an owner's CLI: the person is
    // no longer of acme (a configuration change, which every replica hears of).
    sqlx::query("delete from admin_tenant").execute(&pool).await.unwrap();
    sqlx::query("select pg_notify('toolgate_config', 'account')").execute(&pool).await.unwrap();
    until_refused(&app, tokens["access_token"].as_str().unwrap()).await;
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
        ("client_id", client.as_str()),
    ];
    let (status, refused) = token(&app, &form).await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
}
