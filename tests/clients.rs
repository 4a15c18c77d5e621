//! The client compatibility matrix: MCP clients people use, each against a `toolgate serve`
//! process whose tenant has the built-in tools and server-everything over stdio (prefix `ev`).
//! Each row lists, calls (a file written and read back), reads structured content, gets
//! progress, answers an elicitation and a sampling request relayed from the upstream, and hears
//! `tools/list_changed` after an admin change (the tenant keeps only the `files` tag, so
//! `run_command` goes). The clients are scripts (`tests/python/mcp_client.py`, `mcp1_client.py`,
//! `end2end/support/mcp-client-*.mjs`) that print `listening` when they wait for that change
//! and `ok: ...` when every cell passed.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{start_process, venv_program, venv_program_of};
use engine::model::{Name, Tag, TenantSlug};
use engine::secret::SecretBox;
use engine::store::servers::ServerConfig;
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// The public reference server, from `end2end/node_modules` (installed by `make test`).
fn server_everything() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/end2end/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    )
    .to_string()
}

/// Runs one row: `client` gets the tenant's endpoint URL and key as its last two arguments.
async fn row_passes(pool: PgPool, mut client: Command) {
    let toolgate = start_process("serve", &pool);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let key = store::keys::create(&pool, &Actor::system(), &acme, "test", None).await.unwrap().1;
    let everything =
        ServerConfig::stdio(Name::parse("ev").unwrap(), "node", vec![server_everything(), "stdio".into()]);
    let secrets = SecretBox::from_key(&[0; 32]).unwrap();
    store::servers::create(&pool, &secrets, &Actor::system(), &everything).await.unwrap();
    until_listed(&toolgate.url, &key, "ev_echo").await;

    let mut client = client
        .arg(format!("{}/mcp/acme", toolgate.url))
        .arg(&key)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    assert!(output.status.success(), "the client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("\nok: "), "{stdout}");
}

/// Waits until the tenant of `key` lists `tool` over REST.
async fn until_listed(url: &str, key: &str, tool: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed =
            reqwest::Client::new().get(format!("{url}/api/v1/tools")).bearer_auth(key).send().await.unwrap();
        if listed.status() == 200 && listed.text().await.unwrap().contains(tool) {
            return;
        }
        assert!(Instant::now() < deadline, "{tool} was never listed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The official Python SDK (`mcp` 2.x) in `mode`.
fn python(mode: &str) -> Command {
    let mut command = Command::new(venv_program("python"));
    command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/mcp_client.py")).arg(mode);
    command
}

/// A Node script of `end2end/support`.
fn node(script: &str) -> Command {
    let mut command = Command::new("node");
    command.arg(format!("{}/end2end/support/{script}", env!("CARGO_MANIFEST_DIR")));
    command
}

/// The SDK's default: `server/discover`, then revision 2026-07-28 (no session; input requests
/// as rounds of the call, `subscriptions/listen`).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn python_mcp_2_in_auto_mode(pool: PgPool) {
    row_passes(pool, python("auto")).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn python_mcp_2_in_legacy_mode(pool: PgPool) {
    row_passes(pool, python("legacy")).await;
}

/// The 1.x line (`mcp` 1.30), still the most installed: the handshake era only.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn python_mcp_1(pool: PgPool) {
    let mut command = Command::new(venv_program_of("mcp1", "python"));
    command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/mcp1_client.py"));
    row_passes(pool, command).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn typescript_sdk_1(pool: PgPool) {
    row_passes(pool, node("mcp-client-sdk1.mjs")).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn typescript_client_2_in_auto_mode(pool: PgPool) {
    let mut client = node("mcp-client-2.mjs");
    client.arg("auto");
    row_passes(pool, client).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn typescript_client_2_in_legacy_mode(pool: PgPool) {
    let mut client = node("mcp-client-2.mjs");
    client.arg("legacy");
    row_passes(pool, client).await;
}
