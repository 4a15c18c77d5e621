//! The client compatibility matrix: MCP clients people use, each against a `toolgate serve`
//! process whose tenant has the built-in tools and server-everything over stdio (prefix `ev`).
//! Each row lists, calls (a file written and read back), reads structured content, gets
//! progress, answers an elicitation and a sampling request relayed from the upstream, and hears
//! `tools/list_changed` after an admin change (the tenant keeps only the `files` tag, so
//! `run_command` goes); a client that offers no way to answer or to listen gets a clear refusal
//! and sees the change in its next listing. The clients are scripts (`tests/python/*_client.py`,
//! `end2end/support/mcp-client-*.mjs`) that print `listening` when they wait for that change
//! and `ok: ...` when every cell passed.

mod common;

use std::process::Stdio;

use common::{start_process, venv_program, venv_program_of};
use engine::model::{Name, Tag, TenantSlug};
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
    common::create_tenant(&pool, &acme, "Acme").await;
    let key = store::keys::create(&pool, &Actor::system(), &acme, "test", None, Default::default())
        .await
        .unwrap()
        .1;
    let everything =
        ServerConfig::stdio(Name::parse("ev").unwrap(), "node", vec![server_everything(), "stdio".into()]);
    store::servers::create(&pool, &common::secret_box(), &Actor::system(), &everything).await.unwrap();
    common::until_listed(&toolgate.url, &key, "ev_echo").await;

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

/// A script of `tests/python` run by `python`.
fn python_script(python: std::path::PathBuf, script: &str) -> Command {
    let mut command = Command::new(python);
    command.arg(format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR")));
    command
}

/// The official Python SDK (`mcp` 2.x) in `mode`.
fn python(mode: &str) -> Command {
    let mut command = python_script(venv_program("python"), "mcp_client.py");
    command.arg(mode);
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
    row_passes(pool, python_script(venv_program_of("mcp1", "python"), "mcp1_client.py")).await;
}

/// The OpenAI Agents SDK (`openai-agents`) as agent applications use it: an agent run by its
/// `Runner`, over the SDK's default (`mcp` 2.x in auto mode: revision 2026-07-28).
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn openai_agents(pool: PgPool) {
    row_passes(pool, python_script(venv_program("python"), "openai_agents_client.py")).await;
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
