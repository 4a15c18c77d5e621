//! Toolgate against independent Python tools, installed by `make test` into a virtualenv
//! (`TOOLGATE_VENV`): the official MCP Python SDK as a client of `/mcp/{tenant}`, and
//! schemathesis fuzzing the REST API from its own OpenAPI document (no answer may be a 5xx).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{TestApp, start_process, tenant_key};
use engine::model::{Name, Tag, TenantSlug};
use engine::secret::SecretBox;
use engine::store::servers::ServerConfig;
use engine::store::tenants::TenantUpdate;
use serde_json::Value;
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};

fn venv_program(name: &str) -> PathBuf {
    let venv = std::env::var("TOOLGATE_VENV")
        .unwrap_or_else(|_| format!("{}/.cache/toolgate/venv", std::env::var("HOME").unwrap()));
    let program = PathBuf::from(venv).join("bin").join(name);
    assert!(
        program.exists(),
        "{} is missing: `make test` installs it (scripts/install-deps.sh --test)",
        program.display()
    );
    program
}

/// Runs a program to its end off the async threads (the server under test runs on them).
async fn run(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

/// The public reference server, from `end2end/node_modules` (installed by `make test`).
fn server_everything() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/end2end/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    )
    .to_string()
}

/// One row of the client compatibility matrix: `tests/python/mcp_client.py` in the SDK's
/// `mode` against a `toolgate serve` process whose tenant has the built-ins and server-everything
/// over stdio (prefix `ev`); when the client says it is listening, an admin change (the tenant
/// keeps only the `files` tag, so `run_command` goes) must reach it as `tools/list_changed`.
async fn python_client_passes(mode: &str, pool: PgPool) {
    use engine::store::{self, Actor};
    let toolgate = start_process("serve", &pool);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key = store::keys::create(&pool, &Actor::system(), &acme, "test", None).await.unwrap().1;
    let everything =
        ServerConfig::stdio(Name::parse("ev").unwrap(), "node", vec![server_everything(), "stdio".into()]);
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    store::servers::create(&pool, &secrets, &Actor::system(), &everything).await.unwrap();
    until_listed(&toolgate.url, &key, "ev_echo").await;

    let mut client = tokio::process::Command::new(venv_program("python"))
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/mcp_client.py"))
        .arg(format!("{}/mcp/acme", toolgate.url))
        .arg(&key)
        .arg(mode)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line == "listening" {
            let only_files = TenantUpdate {
                enabled_tags: Some(Some(vec![Tag::parse("files").unwrap()])),
                ..Default::default()
            };
            store::tenants::update(&pool, &Actor::system(), &acme, only_files).await.unwrap();
        }
        said.push(line);
    }
    let output = client.wait_with_output().await.unwrap();
    let (stdout, stderr) = (said.join("\n"), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the Python client ({mode} mode) failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("\nok: "), "{stdout}");
}

/// Waits until the tenant of `key` lists `tool` over REST.
async fn until_listed(url: &str, key: &str, tool: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed =
            reqwest::Client::new().get(format!("{url}/api/v1/tools")).bearer_auth(key).send().await.unwrap();
        if listed.status() == 200 && listed.text().await.unwrap().contains(tool) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{tool} was never listed");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The SDK's default: `server/discover`, then revision 2026-07-28 (no session; input requests
/// as rounds of the call, `subscriptions/listen`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_python_mcp_sdk_in_auto_mode_passes_every_cell(pool: PgPool) {
    python_client_passes("auto", pool).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_python_mcp_sdk_in_legacy_mode_passes_every_cell(pool: PgPool) {
    python_client_passes("legacy", pool).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_openapi_document_holds_and_fuzzing_finds_no_server_error(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let document: Value = reqwest::get(app.url("/api/v1/openapi.json")).await.unwrap().json().await.unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        ["/api/v1/calls/{id}/resume", "/api/v1/tool_calls", "/api/v1/tools", "/api/v1/tools/{name}/invoke"]
    );

    let mut command = Command::new(venv_program("schemathesis"));
    command
        .args(["run", &app.url("/api/v1/openapi.json"), "--url", &app.url("")])
        .args(["--header", &format!("Authorization: Bearer {key}")])
        .args(["--checks", "not_a_server_error", "--max-examples", "40", "--workers", "1"])
        .env("SCHEMATHESIS_HOOKS", "")
        .env("NO_COLOR", "1")
        // It keeps a cache of what it found in its working directory: not in the clone.
        .current_dir(std::env::temp_dir());
    let output = run(command).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
