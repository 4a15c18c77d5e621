//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, its server
//! scenarios, under the Node 22 it needs) judging a tenant's `/mcp/<tenant>`. The tools its
//! scenarios call — text, image, audio and resource results, logging, progress, errors,
//! sampling, elicitation — and its prompts, resources and completions are served by an
//! upstream written to the scenarios' descriptions (`tests/python/conformance_server.py`, the
//! Python SDK 1.x, which knows only the handshake era), registered with the prefix "" so that
//! their names reach the suite unchanged. What Toolgate is expected to fail, and why:
//! `tests/conformance/expected-failures.yml`; the suite fails on any other failure and on any
//! expected one that passes.
//!
//! What each revision requires (the suite 0.2's `--requirements`) is run direct and through
//! Toolgate in the same test, in front of that revision's reference — the one above for
//! 2025-11-25, `tests/python/conformance_server_2026.py` (the Python SDK 2.x) for 2026-07-28 —
//! and, for both revisions, in front of `tests/conformance/reference-server-2026.mjs`, their twin
//! written with the TypeScript SDK 2.4, which serves both eras.
//!
//! Its client auth scenarios (0.2.0-alpha.12) judge Toolgate as an upstream's OAuth client: each
//! starts a protected server and its authorization server, and `oauth-upstream-client.mjs`
//! registers the server in a running `toolgate serve`, authorizes it as its owner would in the
//! browser, and runs its tool.

mod common;

use common::{PASSWORD, TestApp, tenant_key, venv_program_of};
use engine::admin::{self, Password, Role, Username};
use engine::model::{Name, TenantSlug};
use engine::store::servers::ServerConfig;
use engine::store::{self, Actor};
use std::collections::BTreeMap;

use rmcp::model::GetPromptRequestParams;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use sqlx::PgPool;
use tokio::process::Command;

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");

/// A server the suite's scenarios run against, written to their descriptions.
#[derive(Clone, Copy)]
struct Reference {
    /// What it is written with.
    sdk: &'static str,
    /// What runs it.
    program: Program,
    /// Its file, in the folder its program says; also names its sections of the
    /// expected-failures file.
    script: &'static str,
    /// A tool it serves, to know it is listed.
    tool: &'static str,
}

/// What runs a reference.
#[derive(Clone, Copy)]
enum Program {
    /// `tests/python/<script>`, under the Python of this virtualenv variant (`venv_program_of`).
    Python(&'static str),
    /// `tests/conformance/<script>`, under the suite's Node.
    Node,
}

impl Reference {
    /// Started on a free port; killed when dropped.
    async fn start(self) -> (tokio::process::Child, u16) {
        match self.program {
            Program::Python(venv) => {
                common::python_server(venv_program_of(venv, "python"), self.script, &[]).await
            }
            Program::Node => {
                let node = format!("{SUITE}/node_modules/.bin/node");
                common::script_server(node.into(), &format!("{SUITE}/{}", self.script), &[]).await
            }
        }
    }
}

/// The reference of the handshake era written with the Python SDK 1.x.
const PYTHON_1: Reference = Reference {
    sdk: "the Python SDK 1.x",
    program: Program::Python("mcp1"),
    script: "conformance_server.py",
    tool: "test_tool_with_logging",
};

/// The reference of both eras written with the Python SDK 2.x.
const PYTHON_2: Reference = Reference {
    sdk: "the Python SDK 2.x",
    program: Program::Python(""),
    script: "conformance_server_2026.py",
    tool: "test_input_required_result_elicitation",
};

/// The reference of both eras written with the TypeScript SDK 2.4.
const TYPESCRIPT_2: Reference = Reference {
    sdk: "the TypeScript SDK 2.4",
    program: Program::Node,
    script: "reference-server-2026.mjs",
    tool: "test_input_required_result_elicitation",
};

/// `reference` started, and its port, and a Toolgate serving it to tenant `acme` under the
/// prefix "" with the tenant's key, once listed.
async fn behind_toolgate(
    pool: &PgPool,
    reference: Reference,
) -> (tokio::process::Child, u16, TestApp, String) {
    let (upstream, port) = reference.start().await;
    // At its public URL, as deployed: the suite's requests for a valid host come from there.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let app = TestApp::spawn_configured(pool.clone(), |settings| {
        settings.addr = free;
        settings.public_url = Some(format!("http://{free}"));
    })
    .await;
    let key = tenant_key(&app, pool).await;
    let mut server =
        ServerConfig::http(Name::parse("reference").unwrap(), format!("http://127.0.0.1:{port}/mcp"));
    server.prefix = Some(String::new());
    // Its list-change triggers add tools, which the tenant sees at once only when the server's
    // new tools are served unreviewed.
    server.new_tools_enabled = true;
    store::servers::create(pool, &common::secret_box(), &Actor::system(), &server).await.unwrap();
    common::until_listed(&app.url(""), &key, reference.tool).await;
    (upstream, port, app, key)
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_conformance_suites_server_scenarios_pass(pool: PgPool) {
    let (_upstream, _, app, key) = behind_toolgate(&pool, PYTHON_1).await;

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

/// Each check of the scenarios revision `revision` requires (the suite 0.2's frozen list, run
/// with `--requirements`) against the MCP server at `url`, by scenario and check, with its
/// worst status of the run (`SUCCESS`, `INFO` for what the specification leaves open,
/// `WARNING`, `FAILURE`); `key` goes with every request the suite sends with `fetch`.
async fn required_checks(url: &str, revision: &str, key: Option<&str>) -> BTreeMap<(String, String), String> {
    let results = std::env::temp_dir().join(format!("toolgate-requirements-{}", uuid::Uuid::new_v4()));
    let mut suite = Command::new(format!("{SUITE}/node_modules/.bin/node"));
    if let Some(key) = key {
        suite.args(["--import", &format!("{SUITE}/bearer-fetch.mjs")]).env("TOOLGATE_KEY", key);
    }
    let output = suite
        .arg(format!("{SUITE}/node_modules/conformance-client/dist/index.js"))
        .args(["server", "--url", url, "--requirements", revision, "--output-dir"])
        .arg(&results)
        .output()
        .await
        .unwrap();
    let mut checks = BTreeMap::new();
    for run in std::fs::read_dir(&results).unwrap_or_else(|e| panic!("no results ({e}): {output:?}")) {
        let run = run.unwrap().path();
        // `server-<scenario>-<ISO time>`.
        let name = run.file_name().unwrap().to_string_lossy().to_string();
        let scenario = name.strip_prefix("server-").and_then(|rest| rest.rsplitn(7, '-').nth(6)).unwrap();
        let found: Vec<Value> =
            serde_json::from_slice(&std::fs::read(run.join("checks.json")).unwrap()).unwrap();
        for check in found {
            let id = (scenario.to_string(), check["id"].as_str().unwrap_or_default().to_string());
            let status = check["status"].as_str().unwrap_or_default().to_string();
            let worst = checks.entry(id).or_insert_with(|| status.clone());
            if ["FAILURE", "WARNING"].contains(&status.as_str()) && *worst != "FAILURE" {
                *worst = status;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&results);
    checks
}

/// A server of the handshake era that asks for a sample in a call whose client did not declare
/// sampling is not answered by that client; the call, failing, is answered -32021 naming
/// sampling, as a server on 2026-07-28 answers it (HTTP 400). Main relayed the refusal as the
/// server's tool error.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_handshake_servers_sampling_of_a_caller_that_cannot_sample_is_answered_32021(pool: PgPool) {
    let (_upstream, _, app, key) = behind_toolgate(&pool, PYTHON_1).await;
    let declared = serde_json::json!({"elicitation": {}});
    let prompt = serde_json::json!({"arguments": {"prompt": "Hi"}});
    let (status, answer) = common::call_2026(&app, &key, "test_sampling", declared, prompt).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        serde_json::json!({"sampling": {}}),
        "{answer}"
    );
}

/// The suite 0.2's requirements of `revision`, direct and through Toolgate in the same run, in
/// front of `reference`: no required check that passes direct fails or warns through Toolgate,
/// but in the scenarios `requirements-expected-failures.yml` names for the revision, each with
/// its reason.
async fn requirements_pass_through_toolgate(pool: PgPool, revision: &str, reference: Reference) {
    let (_upstream, port, app, key) = behind_toolgate(&pool, reference).await;

    let direct = required_checks(&format!("http://127.0.0.1:{port}/mcp"), revision, None).await;
    let through = required_checks(&app.url("/mcp/acme"), revision, Some(&key)).await;
    let expected = std::fs::read_to_string(format!("{SUITE}/requirements-expected-failures.yml")).unwrap();
    let section = expected.split(&format!("\n{revision} {}:\n", reference.script)).nth(1).unwrap_or_default();
    let excused: Vec<&str> = section
        .lines()
        .take_while(|line| line.starts_with(' '))
        .filter_map(|line| line.strip_prefix("  - "))
        .collect();
    let passed =
        |checks: &BTreeMap<(String, String), String>| checks.values().filter(|s| *s == "SUCCESS").count();
    let lost: Vec<&(String, String)> = direct
        .iter()
        .filter(|(check, status)| {
            *status == "SUCCESS"
                && through.get(*check).is_none_or(|there| ["FAILURE", "WARNING"].contains(&there.as_str()))
        })
        .map(|(check, _)| check)
        .filter(|(scenario, _)| !excused.contains(&scenario.as_str()))
        .collect();
    assert!(lost.is_empty(), "passed direct, not through Toolgate: {lost:?}\nthrough: {through:?}");
    // Every required scenario ran both ways (how many pass direct is the reference server's
    // business: under a loaded machine one of its scenarios may time out).
    let scenarios = |checks: &BTreeMap<(String, String), String>| {
        checks.keys().map(|(scenario, _)| scenario.clone()).collect::<std::collections::BTreeSet<_>>()
    };
    assert!(
        scenarios(&direct).len() >= 30 && scenarios(&direct) == scenarios(&through),
        "{direct:?}\n{through:?}"
    );
    println!(
        "{revision}, {}: {} checks pass direct, {} through Toolgate",
        reference.sdk,
        passed(&direct),
        passed(&through)
    );
    for (check, status) in &direct {
        if through.get(check) != Some(status) {
            println!("{check:?}: {status} direct, {:?} through Toolgate", through.get(check));
        }
    }
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn what_revision_2025_11_25_requires_passes_through_toolgate_in_front_of_the_python_sdk(pool: PgPool) {
    requirements_pass_through_toolgate(pool, "2025-11-25", PYTHON_1).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn what_revision_2026_07_28_requires_passes_through_toolgate_in_front_of_the_python_sdk(pool: PgPool) {
    requirements_pass_through_toolgate(pool, "2026-07-28", PYTHON_2).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn what_revision_2025_11_25_requires_passes_through_toolgate_in_front_of_the_typescript_sdk(
    pool: PgPool,
) {
    requirements_pass_through_toolgate(pool, "2025-11-25", TYPESCRIPT_2).await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn what_revision_2026_07_28_requires_passes_through_toolgate_in_front_of_the_typescript_sdk(
    pool: PgPool,
) {
    requirements_pass_through_toolgate(pool, "2026-07-28", TYPESCRIPT_2).await;
}

/// A prompt that asks for input first, as a server on 2026-07-28 may, reaches a client of that
/// revision as the server's question (the requirements above); REST and a session of the
/// handshake era, which cannot answer it, are told what it asks instead of failing on an
/// answer they cannot read.
#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn a_prompt_that_asks_first_is_refused_where_nobody_can_answer(pool: PgPool) {
    let (_upstream, _, app, key) = behind_toolgate(&pool, PYTHON_2).await;
    // Its prompts are listed apart from its tools, maybe a moment later.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let prompts =
        || common::json_of(reqwest::Client::new().get(app.url("/api/v1/prompts")).bearer_auth(&key));
    while !prompts().await.to_string().contains("test_input_required_result_prompt") {
        assert!(std::time::Instant::now() < deadline, "the prompt was never listed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let asks = "the prompt `test_input_required_result_prompt` asks for input first (user_context)";
    let path = "/api/v1/prompts/test_input_required_result_prompt/get";
    let (status, refused) = common::post(&app, &key, path, serde_json::json!({})).await;
    assert_eq!(status, 422, "{refused}");
    assert!(refused["detail"].as_str().unwrap_or_default().starts_with(asks), "{refused}");

    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp/acme")).auth_header(key);
    let transport = StreamableHttpClientTransport::from_config(config);
    let session = ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize).await.unwrap();
    let params = GetPromptRequestParams::new("test_input_required_result_prompt");
    let refused = session.get_prompt(params).await.unwrap_err();
    assert!(refused.to_string().contains(asks), "{refused}");
}

/// The client auth scenarios the specification revision `revision` requires (its frozen
/// requirements file, `client:` list).
fn required_auth_scenarios(revision: &str) -> Vec<String> {
    let path = format!("{SUITE}/node_modules/conformance-client/requirements/{revision}.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let client = text.split("\nclient:\n").nth(1).unwrap_or_else(|| panic!("{path} has no client list"));
    let listed = client.lines().map_while(|line| line.strip_prefix("  - "));
    listed.filter(|scenario| scenario.starts_with("auth/")).map(str::to_string).collect()
}

/// Runs the client auth scenarios `revision` requires, at its wire version, against Toolgate
/// as the OAuth client: each scenario is a run of the suite, all at once.
async fn client_auth_scenarios(pool: PgPool, revision: &str) {
    let toolgate = common::start_process("serve", &pool);
    let acme = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &acme, "Acme").await.unwrap();
    let owner = Username::parse("olive").unwrap();
    admin::create(&pool, &owner, Role::Owner, &Password::parse(PASSWORD.into()).unwrap()).await.unwrap();
    let token = common::admin_token(&pool, "conformance").await;
    let login = reqwest::Client::new()
        .post(format!("{}/api/login", toolgate.url))
        .header("origin", &toolgate.url)
        .form(&[("username", "olive"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert!(login.status().is_success(), "{:?}", login.text().await);
    let cookie: Vec<&str> = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok()?.split(';').next())
        .collect();
    let cookie = cookie.join("; ");

    let results = std::env::temp_dir().join(format!("toolgate-conformance-client-{}", uuid::Uuid::new_v4()));
    let scenarios = required_auth_scenarios(revision);
    assert!(scenarios.len() >= 14, "{scenarios:?}");
    let runs = scenarios.iter().map(|scenario| {
        Command::new(format!("{SUITE}/node_modules/.bin/node"))
            .arg(format!("{SUITE}/node_modules/conformance-client/dist/index.js"))
            .args(["client", "--scenario", scenario, "--spec-version", revision])
            .args(["--command", &format!("{SUITE}/node_modules/.bin/node {SUITE}/oauth-upstream-client.mjs")])
            .args(["--expected-failures", &format!("{SUITE}/expected-failures.yml")])
            .arg("--output-dir")
            .arg(&results)
            .envs([
                ("TOOLGATE_URL", toolgate.url.as_str()),
                ("TOOLGATE_TOKEN", &token),
                ("TOOLGATE_COOKIE", &cookie),
                ("TOOLGATE_TENANT", "acme"),
            ])
            .output()
    });
    let outputs = futures::future::join_all(runs).await;
    let _ = std::fs::remove_dir_all(&results);
    let failed: Vec<String> = scenarios
        .iter()
        .zip(outputs)
        .filter_map(|(scenario, output)| {
            let output = output.unwrap();
            let (stdout, stderr) =
                (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            (!output.status.success()).then(|| format!("{scenario}:\n{stdout}\n{stderr}"))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} scenarios failed:\n{}\n{}",
        failed.len(),
        failed.join("\n"),
        toolgate.log()
    );
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_conformance_suites_client_auth_scenarios_pass_on_2025_11_25(pool: PgPool) {
    client_auth_scenarios(pool, "2025-11-25").await;
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn the_conformance_suites_client_auth_scenarios_pass_on_2026_07_28(pool: PgPool) {
    client_auth_scenarios(pool, "2026-07-28").await;
}
