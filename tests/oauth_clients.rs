//! Real OAuth clients doing the whole MCP authorization flow against a real `toolgate serve`
//! (access tokens live 10 s): the Python SDK's `OAuthClientProvider` in both protocol eras —
//! discovery from the 401, dynamic registration, PKCE, sign-in and consent, calls, a refresh
//! after expiry, refusal once the person revokes the app — and `mcp-remote`'s client, whose
//! browser step this test plays over HTTP.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{PASSWORD, client_with_origin, start_process_with_env, venv_program};
use engine::admin::{self, Password, Role, Username};
use engine::model::TenantSlug;
use engine::store::{self, Actor};
use serde_json::Value;
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// A `toolgate serve` whose tokens live 10 s, with tenant acme and its member ann.
async fn serve_with_member(pool: &PgPool) -> toolgate_bench::ToolgateProcess {
    let toolgate = start_process_with_env("serve", pool, &[("TOOLGATE_OAUTH_ACCESS_TOKEN_SECONDS", "10")]);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let ann = Username::parse("ann").unwrap();
    admin::create(pool, &ann, Role::Member, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    admin::assign_tenant(pool, &ann, "acme").await.unwrap();
    toolgate
}

/// Plays the person at the browser for `authorization_url`: signs in as ann, approves; the
/// URL the consent sends the browser back to.
async fn approve(base: &str, authorization_url: &str) -> String {
    let browser = client_with_origin(base);
    let asked = browser.get(authorization_url).send().await.unwrap();
    let consent = asked.headers()["location"].to_str().unwrap().to_string();
    let id = consent.strip_prefix("/authorize/").unwrap_or_else(|| panic!("not the consent page: {consent}"));
    browser
        .post(format!("{base}/api/login"))
        .form(&[("username", "ann"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    let decided = browser
        .post(format!("{base}/api/decide"))
        .form(&[("id", id), ("approve", "true")])
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200, "{:?}", decided.text().await);
    decided.json::<String>().await.unwrap()
}

async fn python_sdk_row(pool: PgPool, mode: &str) {
    let toolgate = serve_with_member(&pool).await;
    let token = common::admin_token(&pool, "ci").await;
    let mut client = Command::new(venv_program("python"))
        .arg(format!("{}/tests/python/oauth_client.py", env!("CARGO_MANIFEST_DIR")))
        .args([mode, &format!("{}/mcp/acme", toolgate.url), "ann", PASSWORD])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = client.stdin.take().unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line == "revoke-me" {
            // What an administrator does under the tenant's Connected apps (the admin API).
            let grants: Vec<uuid::Uuid> =
                sqlx::query_scalar("select id from oauth_grant where revoked_at is null")
                    .fetch_all(&pool)
                    .await
                    .unwrap();
            assert_eq!(grants.len(), 1);
            let revoked = reqwest::Client::new()
                .delete(format!("{}/api/admin/v1/tenants/acme/apps/{}", toolgate.url, grants[0]))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            assert_eq!(revoked.status(), 204);
            stdin.write_all(b"revoked\n").await.unwrap();
        }
        said.push(line);
    }
    let output = client.wait_with_output().await.unwrap();
    let (stdout, stderr) = (said.join("\n"), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("ok: "), "{stdout}");
    // Its calls are recorded as the person's, through the app.
    let callers: Vec<String> =
        sqlx::query_scalar("select distinct caller from invocation").fetch_all(&pool).await.unwrap();
    assert_eq!(callers, [format!("user:ann via Python SDK ({mode})")]);
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_python_sdk_signs_in_on_2026_07_28(pool: PgPool) {
    python_sdk_row(pool, "auto").await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_python_sdk_signs_in_in_a_session(pool: PgPool) {
    python_sdk_row(pool, "legacy").await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn mcp_remote_signs_in_and_lists_the_tools(pool: PgPool) {
    let toolgate = serve_with_member(&pool).await;
    let config = std::env::temp_dir().join(format!("toolgate-mcp-remote-{}", uuid::Uuid::new_v4()));
    let bin = concat!(env!("CARGO_MANIFEST_DIR"), "/end2end/node_modules/.bin/mcp-remote-client");
    let mut client = Command::new(bin)
        .args([&format!("{}/mcp/acme", toolgate.url), "--host", "127.0.0.1", "--transport", "http-only"])
        // The browser step is this test's (below): no browser is started.
        .env("BROWSER", "true")
        .env("MCP_REMOTE_CONFIG_DIR", &config)
        // It shuts down when its stdin ends: held open until it is done.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _stdin = client.stdin.take().unwrap();
    let stdout = client.stdout.take().unwrap();
    let printed = tokio::spawn(async move {
        let mut all = String::new();
        let mut lines = BufReader::new(stdout).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut logged = BufReader::new(client.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let authorization = loop {
        let line = tokio::time::timeout(Duration::from_secs(60), logged.next_line())
            .await
            .unwrap_or_else(|_| panic!("mcp-remote asked for no authorization:\n{log}"))
            .unwrap()
            .unwrap_or_else(|| panic!("mcp-remote ended:\n{log}"));
        log.push_str(&line);
        log.push('\n');
        if let Some(at) = line.find("http").filter(|_| line.contains("/oauth/authorize?")) {
            break line[at..].trim().to_string();
        }
    };
    let callback = approve(&toolgate.url, &authorization).await;
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    // The browser lands on mcp-remote's own callback server, which takes the code.
    reqwest::get(&callback).await.unwrap();
    let rest = tokio::spawn(async move {
        let mut rest = String::new();
        while let Ok(Some(line)) = logged.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    });
    let status = tokio::time::timeout(Duration::from_secs(60), client.wait())
        .await
        .expect("mcp-remote did not end")
        .unwrap();
    let (printed, rest) = (printed.await.unwrap(), rest.await.unwrap());
    let all = format!("{log}{rest}{printed}");
    assert!(status.success(), "mcp-remote failed:\n{all}");
    assert!(all.contains("write_text_file") && all.contains("Exiting OK"), "{all}");
    let client: Value = sqlx::query_scalar::<_, String>("select name from oauth_client")
        .fetch_one(&pool)
        .await
        .map(Value::String)
        .unwrap();
    assert!(client.as_str().unwrap().to_lowercase().contains("mcp"), "{client}");
    let _ = std::fs::remove_dir_all(&config);
}
