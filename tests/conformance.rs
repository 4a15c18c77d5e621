//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, its server
//! scenarios, under the Node 22 it needs) judging a tenant's `/mcp/<tenant>`. The tools its
//! scenarios call — text, image, audio and resource results, logging, progress, errors,
//! sampling, elicitation — and its prompts, resources and completions are served by an upstream written to the scenarios' descriptions
//! (`tests/python/conformance_server.py`, the Python SDK 1.x, which knows only the handshake
//! era), registered with the prefix "" so that their names reach the suite unchanged. What
//! Toolgate is expected to fail, and why: `tests/conformance/expected-failures.yml`; the suite
//! fails on any other failure and on any expected one that passes.

mod common;

use common::{TestApp, tenant_key, venv_program_of};
use engine::model::Name;
use engine::store::servers::ServerConfig;
use engine::store::{self, Actor};
use sqlx::PgPool;
use tokio::process::Command;

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_conformance_suites_server_scenarios_pass(pool: PgPool) {
    let (_upstream, port) =
        common::python_server(venv_program_of("mcp1", "python"), "conformance_server.py", &[]).await;
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let mut reference =
        ServerConfig::http(Name::parse("reference").unwrap(), format!("http://127.0.0.1:{port}/mcp"));
    reference.prefix = Some(String::new());
    store::servers::create(&pool, &common::secret_box(), &Actor::system(), &reference).await.unwrap();
    common::until_listed(&app.url(""), &key, "test_tool_with_logging").await;

    let results = std::env::temp_dir().join(format!("toolgate-conformance-{}", std::process::id()));
    let output = Command::new(format!("{SUITE}/node_modules/.bin/node"))
        // The suite's CLI cannot be told to send a header: the key comes with every fetch.
        .args(["--import", &format!("{SUITE}/bearer-fetch.mjs")])
        .arg(format!("{SUITE}/node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", &app.url("/mcp/acme")])
        .args(["--expected-failures", &format!("{SUITE}/expected-failures.yml")])
        .arg("--output-dir")
        .arg(&results)
        .env("TOOLGATE_KEY", &key)
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&results);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the conformance suite failed:\n{stdout}\n{stderr}");
    for scenario in [
        "tools-call-with-logging",
        "logging-set-level",
        "prompts-get-with-args",
        "resources-templates-read",
        "completion-complete",
    ] {
        assert!(stdout.contains(scenario), "{scenario} did not run:\n{stdout}");
    }
}
