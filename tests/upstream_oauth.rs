//! OAuth-protected upstream servers, with real parts only: `oidc-provider` as their
//! authorization server (dynamic registration, rotating refresh tokens, client credentials,
//! JWT access tokens for the resource, revocation), FastMCP servers that verify those tokens
//! and answer with the `sub` they saw, and a real `toolgate serve`. The person's browser is
//! played over HTTP with cookies: Toolgate's sign-in, the provider's sign-in form, back to
//! Toolgate's callback.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{PASSWORD, client_with_origin, start_process_with_env, venv_program};
use engine::admin::{self, Password, Role, Username};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the provider's access tokens live: short, so tests see them refreshed.
const TOKEN_SECONDS: u64 = 4;

/// The key `toolgate_bench::ToolgateProcess` gives every process it starts.
const PROCESS_KEY: &[u8] = b"benchmark-key-not-for-production";

/// A running child and the URL it printed.
struct Part {
    _child: Child,
    url: String,
}

/// Starts `command`, and reads its first line of output with `read`.
async fn start(mut command: Command, read: impl Fn(&str) -> Option<String>) -> Part {
    let mut child = command.stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first =
        tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.unwrap().unwrap().unwrap();
    let url = read(&first).unwrap_or_else(|| panic!("unexpected first line: {first}"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Part { _child: child, url }
}

/// The test OpenID provider as an authorization server of MCP servers, with the client
/// `machine` (client credentials).
async fn provider() -> Part {
    let config = json!({
        "resources": {"accessTokenSeconds": TOKEN_SECONDS},
        "clients": [{
            "client_id": "machine", "client_secret": "machine-secret", "grant_types": ["client_credentials"],
            "response_types": [], "redirect_uris": [],
        }],
    });
    let mut command = Command::new("node");
    command
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/end2end/support/openid-provider.mjs"))
        .arg(config.to_string());
    start(command, |line| serde_json::from_str::<Value>(line).ok()?["issuer"].as_str().map(str::to_string))
        .await
}

/// A FastMCP server whose tokens `issuer` gives.
async fn protected_server(issuer: &str) -> Part {
    let mut command = Command::new(venv_program("python"));
    command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/protected_server.py")).args([issuer, "0"]);
    start(command, |line| line.strip_prefix("listening ").map(str::to_string)).await
}

/// `toolgate serve` with tenant acme and its administrators ann and bob; it logs everything
/// (so tests can look for tokens in its log).
async fn toolgate(pool: &PgPool) -> toolgate_bench::ToolgateProcess {
    let toolgate = start_process_with_env("serve", pool, &[("RUST_LOG", "debug")]);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(pool, &Actor::system(), &acme, "Acme").await.unwrap();
    for name in ["ann", "bob"] {
        let username = Username::parse(name).unwrap();
        admin::create(pool, &username, Role::TenantAdmin, &Password::parse(PASSWORD.into()).unwrap())
            .await
            .unwrap();
        admin::assign_tenant(pool, &username, "acme").await.unwrap();
    }
    toolgate
}

/// A browser signed in to Toolgate at `base` as `username`.
async fn signed_in(base: &str, username: &str) -> reqwest::Client {
    let browser = client_with_origin(base);
    let login = browser
        .post(format!("{base}/api/login"))
        .form(&[("username", username), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert!(login.status().is_success(), "{:?}", login.text().await);
    browser
}

/// Plays `browser` from Toolgate's `start` link through the provider's sign-in as `login` and
/// back: the path of the Toolgate page it ends on.
async fn authorize(browser: &reqwest::Client, start: &str, login: &str) -> String {
    let mut url = reqwest::Url::parse(start).unwrap();
    for _ in 0..20 {
        let mut response = browser.get(url.clone()).send().await.unwrap();
        if url.path().starts_with("/interaction/") && response.status().is_success() {
            // The provider's sign-in form (any password).
            let form = [("prompt", "login"), ("login", login), ("password", "any")];
            response = browser.post(url.clone()).form(&form).send().await.unwrap();
        }
        match response.headers().get("location") {
            Some(location) if response.status().is_redirection() => {
                url = url.join(location.to_str().unwrap()).unwrap();
            }
            _ => {
                let page = response.url().path().to_string();
                let body = response.text().await.unwrap();
                assert!(!body.contains("did not go through"), "the authorization failed: {body}");
                return page;
            }
        }
    }
    panic!("too many redirects from {start}");
}

/// Registers `server` at `url` with OAuth `settings`, as an owner's token does.
async fn register(base: &str, token: &str, server: &str, url: &str, oauth: Value) {
    let body = json!({"name": server, "transport": "streamable_http", "url": url, "oauth": oauth, "new_tools_enabled": true});
    let created = reqwest::Client::new()
        .post(format!("{base}/api/admin/v1/servers"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "{:?}", created.text().await);
}

/// What `whoami` of `server` answers a test invocation by the admin API's `token`.
async fn whoami_as_owner(base: &str, token: &str, server: &str) -> Value {
    let tool = format!("{server}_whoami");
    for _ in 0..100 {
        let answer: Value = reqwest::Client::new()
            .post(format!("{base}/api/admin/v1/tenants/acme/invoke"))
            .bearer_auth(token)
            .json(&json!({"tool": tool, "arguments": {}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        // Until the discovery that the authorization starts has listed the tool.
        if answer.to_string().contains("unknown tool") {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        return answer;
    }
    panic!("`{tool}` was never listed");
}

/// The text a call's output carries.
fn text(answer: &Value) -> String {
    answer.pointer("/output/content/0/text").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The server's authorizations, as the admin API lists them.
async fn authorizations(base: &str, token: &str, server: &str) -> Vec<Value> {
    reqwest::Client::new()
        .get(format!("{base}/api/admin/v1/servers/{server}/authorizations"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_shared_authorization_is_refreshed_and_given_again_once_its_refresh_token_is_revoked(pool: PgPool) {
    let provider = provider().await;
    let upstream = protected_server(&provider.url).await;
    let toolgate = toolgate(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    register(&toolgate.url, &token, "crm", &upstream.url, json!({"mode": "shared"})).await;

    // The owner authorizes it in the browser: Toolgate registers itself at the provider.
    let owner = Username::parse("olive").unwrap();
    admin::create(&pool, &owner, Role::Owner, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    let browser = signed_in(&toolgate.url, "olive").await;
    let start = format!("{}/oauth/upstream/start?server=crm&for=shared", toolgate.url);
    assert_eq!(authorize(&browser, &start, "olive@crm.test").await, "/servers/crm");
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "crm").await), "olive@crm.test");

    // After the access token expires, a refresh gets a new one.
    tokio::time::sleep(Duration::from_secs(TOKEN_SECONDS)).await;
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "crm").await), "olive@crm.test");
    let listed = authorizations(&toolgate.url, &token, "crm").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "active");
    assert!(listed[0]["refreshed_at"].is_string(), "refreshed: {listed:?}");

    // The provider revokes the refresh token: once the access token expires, the authorization
    // needs giving again, and calls say so.
    let sealed: String =
        sqlx::query_scalar("select credentials from mcp_authorization").fetch_one(&pool).await.unwrap();
    let stored: Value = serde_json::from_str(
        &engine::secret::SecretBox::from_key(PROCESS_KEY).unwrap().decrypt(&sealed).unwrap(),
    )
    .unwrap();
    let refresh = stored["token_response"]["refresh_token"].as_str().unwrap();
    let access = stored["token_response"]["access_token"].as_str().unwrap().to_string();
    let revoked = reqwest::Client::new()
        .post(format!("{}/token/revocation", provider.url))
        .form(&[("token", refresh), ("client_id", stored["client_id"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success(), "{:?}", revoked.text().await);
    tokio::time::sleep(Duration::from_secs(TOKEN_SECONDS)).await;
    let failed = whoami_as_owner(&toolgate.url, &token, "crm").await;
    assert_ne!(text(&failed), "olive@crm.test", "{failed}");
    let listed = authorizations(&toolgate.url, &token, "crm").await;
    assert_eq!(listed[0]["status"], "needs_authorization", "{listed:?}");
    assert!(listed[0]["reason"].as_str().unwrap().contains("refresh token"), "{listed:?}");

    // Authorized again in the browser, it works again.
    assert_eq!(authorize(&browser, &start, "olive@crm.test").await, "/servers/crm");
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "crm").await), "olive@crm.test");

    // No token in the audit log, the configuration document or the admin API.
    let audit: Vec<Value> =
        sqlx::query_scalar("select to_jsonb(a) from audit_event a").fetch_all(&pool).await.unwrap();
    let shown = [
        serde_json::to_string(&audit).unwrap(),
        reqwest::Client::new()
            .get(format!("{}/api/admin/v1/config", toolgate.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        serde_json::to_string(&authorizations(&toolgate.url, &token, "crm").await).unwrap(),
    ];
    let log = toolgate.log();
    assert!(log.contains("upstream connected"), "the log is read: {log}");
    let shown = shown.into_iter().chain([log]);
    for (what, text) in ["audit log", "configuration", "authorizations", "log"].iter().zip(shown) {
        assert!(!text.contains(refresh) && !text.contains(&access), "a token in the {what}: {text}");
    }
}

/// Runs `whoami` of `server` in `tenant`'s playground, as the person `browser` is signed in as.
async fn whoami_in_playground(base: &str, browser: &reqwest::Client, tenant: &str, server: &str) -> String {
    let form = [("tenant", tenant), ("tool", &format!("{server}_whoami")), ("arguments", "{}")];
    let answer =
        browser.post(format!("{base}/api/run_tool")).form(&form).send().await.unwrap().text().await.unwrap();
    let done = answer
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .next_back()
        .unwrap_or_default();
    match done.pointer("/Done/output/content/0/text") {
        Some(Value::String(sub)) => sub.clone(),
        _ => done.to_string(),
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn each_person_calls_a_per_person_server_as_themselves(pool: PgPool) {
    let provider = provider().await;
    let upstream = protected_server(&provider.url).await;
    let toolgate = toolgate(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    register(&toolgate.url, &token, "mail", &upstream.url, json!({"mode": "user"})).await;

    // Ann connects her account: the server's tools are discovered with it.
    let ann = signed_in(&toolgate.url, "ann").await;
    let start = format!("{}/oauth/upstream/start?server=mail", toolgate.url);
    assert_eq!(authorize(&ann, &start, "ann@mail.test").await, "/connections");
    let mut answer = String::new();
    for _ in 0..100 {
        answer = whoami_in_playground(&toolgate.url, &ann, "acme", "mail").await;
        if !answer.contains("unknown tool") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer, "ann@mail.test");

    // Bob has not connected his: his call says where to, and never runs as ann.
    let bob = signed_in(&toolgate.url, "bob").await;
    let refused = whoami_in_playground(&toolgate.url, &bob, "acme", "mail").await;
    assert!(refused.contains("/oauth/upstream/start?server=mail"), "{refused}");
    assert!(!refused.contains("ann@mail.test"), "{refused}");

    // Once he has, each sees their own account, again and again.
    assert_eq!(authorize(&bob, &start, "bob@mail.test").await, "/connections");
    for _ in 0..3 {
        assert_eq!(whoami_in_playground(&toolgate.url, &bob, "acme", "mail").await, "bob@mail.test");
        assert_eq!(whoami_in_playground(&toolgate.url, &ann, "acme", "mail").await, "ann@mail.test");
    }
    let listed = authorizations(&toolgate.url, &token, "mail").await;
    let people: Vec<&str> = listed.iter().filter_map(|a| a["account"].as_str()).collect();
    assert_eq!(people, ["ann", "bob"]);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_machine_to_machine_server_gets_its_token_with_client_credentials(pool: PgPool) {
    let provider = provider().await;
    let upstream = protected_server(&provider.url).await;
    let toolgate = toolgate(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    let oauth = json!({
        "mode": "shared", "grant": "client_credentials", "client_id": "machine", "client_secret": "machine-secret",
    });
    register(&toolgate.url, &token, "batch", &upstream.url, oauth).await;
    let owner = Username::parse("olive").unwrap();
    admin::create(&pool, &owner, Role::Owner, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    let browser = signed_in(&toolgate.url, "olive").await;
    let start = format!("{}/oauth/upstream/start?server=batch&for=shared", toolgate.url);
    // No browser step: Toolgate exchanges its own credentials.
    assert_eq!(authorize(&browser, &start, "nobody").await, "/servers/batch");
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "batch").await), "machine");
    // Past the token's life, a new one is fetched the same way.
    tokio::time::sleep(Duration::from_secs(TOKEN_SECONDS + 1)).await;
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "batch").await), "machine");
    // The configuration document shows the secret as set, never its value.
    let config = reqwest::Client::new()
        .get(format!("{}/api/admin/v1/config", toolgate.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!config.contains("machine-secret"), "{config}");
}

/// A person signed in to Toolgate with OAuth (the Python SDK) calls a per-person server they
/// have not connected: the call asks them, through their client, to connect (a URL-mode
/// elicitation), this test plays their browser, and the call goes on as them.
async fn connect_on_first_use(pool: PgPool, mode: &str) {
    let provider = provider().await;
    let upstream = protected_server(&provider.url).await;
    let toolgate = toolgate(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    register(&toolgate.url, &token, "mail", &upstream.url, json!({"mode": "user"})).await;
    let carol = Username::parse("carol").unwrap();
    admin::create(&pool, &carol, Role::Member, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    admin::assign_tenant(&pool, &carol, "acme").await.unwrap();
    // An owner's own account discovers the server's tools.
    let owner = Username::parse("olive").unwrap();
    admin::create(&pool, &owner, Role::Owner, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    let olive = signed_in(&toolgate.url, "olive").await;
    let start = format!("{}/oauth/upstream/start?server=mail", toolgate.url);
    assert_eq!(authorize(&olive, &start, "olive@mail.test").await, "/connections");
    let refused = whoami_as_owner(&toolgate.url, &token, "mail").await;
    assert!(refused.to_string().contains("acts as you"), "an admin token is no person: {refused}");

    let mut client = Command::new(venv_program("python"))
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/connect_client.py"))
        .args([mode, &format!("{}/mcp/acme", toolgate.url), "carol", PASSWORD, "mail_whoami"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = client.stdin.take().unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(Duration::from_secs(90), lines.next_line()).await {
        if let Some(link) = line.strip_prefix("connect ") {
            assert!(link.starts_with(&start), "{link}");
            let carol = signed_in(&toolgate.url, "carol").await;
            assert_eq!(authorize(&carol, link, "carol@mail.test").await, "/connections");
            tokio::io::AsyncWriteExt::write_all(&mut stdin, b"connected\n").await.unwrap();
        }
        said.push(line);
    }
    let output = client.wait_with_output().await.unwrap();
    let (stdout, stderr) = (said.join("\n"), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the client failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("result carol@mail.test") && stdout.contains("again carol@mail.test"),
        "{stdout}"
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_person_connects_on_first_use_when_their_client_opens_the_link_on_2026_07_28(pool: PgPool) {
    connect_on_first_use(pool, "auto").await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_person_connects_on_first_use_when_their_client_opens_the_link_in_a_session(pool: PgPool) {
    connect_on_first_use(pool, "legacy").await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_per_tenant_server_uses_the_account_its_tenants_administrator_authorized(pool: PgPool) {
    let provider = provider().await;
    let upstream = protected_server(&provider.url).await;
    let toolgate = toolgate(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    register(&toolgate.url, &token, "desk", &upstream.url, json!({"mode": "tenant"})).await;

    // The tenant's page lists it as waiting for the tenant's account.
    let listed = || store::authorizations::tenant_connectable(&pool, "acme");
    let waiting = listed().await.unwrap();
    assert_eq!(
        waiting.iter().map(|c| (c.server.as_str(), c.authorization.is_some())).collect::<Vec<_>>(),
        [("desk", false)]
    );

    // Ann authorizes it for acme; every call of acme's uses that account, whoever makes it.
    let ann = signed_in(&toolgate.url, "ann").await;
    let start = format!("{}/oauth/upstream/start?server=desk&for=tenant:acme", toolgate.url);
    // She is a tenant administrator: back to her tenant's page, not to the owners' server page.
    assert_eq!(authorize(&ann, &start, "acme-team@desk.test").await, "/tenants/acme");
    let authorized = listed().await.unwrap().remove(0).authorization.expect("listed as authorized");
    assert_eq!(authorized.tenant.as_deref(), Some("acme"));
    assert_eq!(text(&whoami_as_owner(&toolgate.url, &token, "desk").await), "acme-team@desk.test");
    let bob = signed_in(&toolgate.url, "bob").await;
    assert_eq!(whoami_in_playground(&toolgate.url, &bob, "acme", "desk").await, "acme-team@desk.test");

    // Another tenant's calls are not acme's, and its administrator cannot authorize for acme.
    let globex = TenantSlug::parse("globex").unwrap();
    store::tenants::create(&pool, &Actor::system(), &globex, "Globex").await.unwrap();
    let gary = Username::parse("gary").unwrap();
    admin::create(&pool, &gary, Role::TenantAdmin, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    admin::assign_tenant(&pool, &gary, "globex").await.unwrap();
    let gary = signed_in(&toolgate.url, "gary").await;
    let unauthorized = whoami_in_playground(&toolgate.url, &gary, "globex", "desk").await;
    assert!(unauthorized.contains("not authorized for tenant `globex`"), "{unauthorized}");
    let refused = gary.get(&start).send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("only administrators of tenant `acme`"));
    let listed = authorizations(&toolgate.url, &token, "desk").await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["tenant"], "acme");
}
