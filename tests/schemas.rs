//! What Toolgate serves in each provider's format, judged by the providers' own SDK types.
//!
//! The corpus: the public MCP servers listed in `tests/corpus/servers.json` (installed from npm
//! and PyPI by `make test`), each registered as a stdio upstream of a real Toolgate server, plus
//! the built-in tools. Every tool a tenant sees is listed through the REST API in each format
//! (and rendered for OpenAI strict mode), must be clean under Toolgate's own lint, and must
//! validate with `openai`, `anthropic`, `google-genai` and `mcp` types without losing anything
//! (`tests/python/provider_sdks.py`). Then the tenant's tools are found by search: a tool of the
//! corpus is found by what it is for and called.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{TestApp, json_of, tenant_key};
use engine::model::Name;
use engine::schema::render::{ToolView, input_schema, render};
use engine::schema::{JsonText, Provider, lint};
use engine::secret::SecretBox;
use engine::store::servers::{EnvValue, ServerConfig};
use engine::store::tenants::{TenantUpdate, ToolDiscovery};
use engine::store::{self, Actor};
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;

/// One corpus server, as `tests/corpus/servers.json` starts it.
#[derive(Deserialize)]
struct CorpusServer {
    name: String,
    command: String,
    /// Paths relative to `tests/corpus/`.
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// The command is a program of the test virtualenv (a Python server).
    #[serde(default)]
    venv: bool,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn venv() -> PathBuf {
    let home = std::env::var("HOME").unwrap();
    PathBuf::from(std::env::var("TOOLGATE_VENV").unwrap_or_else(|_| format!("{home}/.cache/toolgate/venv")))
}

fn corpus() -> Vec<CorpusServer> {
    let listed = std::fs::read_to_string(corpus_dir().join("servers.json")).unwrap();
    serde_json::from_str(&listed).unwrap()
}

/// The server as a stdio upstream of Toolgate.
fn upstream(server: &CorpusServer) -> ServerConfig {
    let dir = corpus_dir();
    let command = if server.venv {
        venv().join("bin").join(&server.command).to_string_lossy().into_owned()
    } else {
        server.command.clone()
    };
    let args = server
        .args
        .iter()
        .map(|arg| {
            let path = dir.join(arg);
            if arg.contains('/') && path.exists() { path.to_string_lossy().into_owned() } else { arg.clone() }
        })
        .collect();
    let mut config = ServerConfig::stdio(Name::parse(&server.name).unwrap(), command, args);
    config.env = server.env.iter().map(|(k, v)| (k.clone(), EnvValue::Plain(v.clone()))).collect();
    config
}

#[sqlx::test(migrator = "engine::db::MIGRATOR")]
async fn every_provider_sdk_accepts_every_tool_of_the_corpus(pool: PgPool) {
    let app = TestApp::spawn(pool.clone()).await;
    let key = tenant_key(&app, &pool).await;
    let secrets = SecretBox::from_key(&[7; 32]).unwrap();
    let servers = corpus();
    for server in &servers {
        store::servers::create(&pool, &secrets, &Actor::system(), &upstream(server)).await.unwrap();
    }

    // Discovery runs in the background: wait until every server has published its tools in the
    // catalog the REST API serves (another process's catalog may be a rebuild ahead of it).
    let catalog = app.services().catalog;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let snapshot = catalog.snapshot();
        let tools = snapshot.tenant("acme").unwrap().tools();
        let missing: Vec<&str> = servers
            .iter()
            .map(|s| s.name.as_str())
            .filter(|name| !tools.iter().any(|t| t.source_name == *name))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no tools discovered from {missing:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let snapshot = catalog.snapshot();
    let tools = snapshot.tenant("acme").unwrap().tools();
    let upstream_tools = tools.iter().filter(|t| servers.iter().any(|s| s.name == t.source_name)).count();
    assert!(upstream_tools >= 150, "the corpus has only {upstream_tools} tools");

    // What the REST API serves, per format; OpenAI strict mode rendered for every tool.
    let mut renderings = serde_json::Map::new();
    for provider in Provider::ALL {
        let listing = json_of(
            reqwest::Client::new()
                .get(app.url(&format!("/api/v1/tools?format={}", provider.as_str())))
                .bearer_auth(&key),
        )
        .await;
        let listed = listing["tools"].as_array().unwrap().clone();
        let unserved: Vec<String> = tools
            .iter()
            .filter(|t| !listed.iter().any(|l| l.to_string().contains(&format!("\"{}\"", t.exposed_name))))
            .map(|t| format!("{}: {:?}", t.exposed_name, t.render(provider).err()))
            .collect();
        assert!(unserved.is_empty(), "{}: tools not served: {unserved:#?}", provider.as_str());
        renderings.insert(provider.as_str().into(), Value::Array(listed));
    }
    let mut strict = Vec::new();
    let mut findings = Vec::new();
    for tool in tools {
        for (provider, strict_mode) in
            Provider::ALL.into_iter().map(|p| (p, false)).chain([(Provider::OpenAi, true)])
        {
            let (input, output) =
                (tool.input_schema.value(), tool.output_schema.as_ref().map(JsonText::value));
            let view = ToolView {
                name: &tool.exposed_name,
                description: &tool.description,
                input_schema: &input,
                output_schema: output.as_ref(),
                annotations: &tool.annotations.value(),
                meta: tool.meta.as_deref(),
                strict: strict_mode,
            };
            let rendered = render(&view, provider).unwrap();
            // `parametersJsonSchema` is full JSON Schema: judged as MCP's is.
            let json_schema = rendered.get("parametersJsonSchema").is_some();
            let rules = if json_schema { Provider::Mcp } else { provider };
            let schema = input_schema(&rendered, provider);
            for finding in lint::lint_tool(&tool.exposed_name, schema, rules, strict_mode) {
                findings.push(format!("{} {}: {finding:?}", provider.as_str(), tool.exposed_name));
            }
            if strict_mode {
                strict.push(rendered);
            }
        }
    }
    assert!(
        findings.is_empty(),
        "{} lint findings in served schemas:\n{}",
        findings.len(),
        findings.join("\n")
    );
    renderings.insert("openai_strict".into(), json!(strict));

    let file = std::env::temp_dir().join(format!("toolgate-renderings-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, serde_json::to_vec(&renderings).unwrap()).unwrap();
    let mut oracle = std::process::Command::new(venv().join("bin/python"));
    oracle.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/provider_sdks.py")).arg(&file);
    let output = tokio::task::spawn_blocking(move || oracle.output().unwrap()).await.unwrap();
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the providers' SDK types rejected tools:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let as_json_schema = renderings["gemini"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("parametersJsonSchema").is_some())
        .count();
    println!(
        "{} tools ({upstream_tools} from {} corpus servers; {as_json_schema} served to Gemini as parametersJsonSchema):\n{stdout}",
        tools.len(),
        servers.len()
    );

    // The same catalog found by search: the key is listed the search tool alone, finds a tool
    // by what it is for, and calls it.
    let searching = TenantUpdate { tool_discovery: Some(ToolDiscovery::Search), ..Default::default() };
    let acme = engine::model::TenantSlug::parse("acme").unwrap();
    store::tenants::update(&pool, &Actor::system(), &acme, searching).await.unwrap();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while json_of(http.get(app.url("/api/v1/tools")).bearer_auth(&key)).await["tools"]
        .as_array()
        .unwrap()
        .len()
        != 1
    {
        assert!(Instant::now() < deadline, "search mode never reached the gateway");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let query = json!({"arguments": {"query": "read the entire knowledge graph"}});
    let found =
        json_of(http.post(app.url("/api/v1/tools/search_tools/invoke")).bearer_auth(&key).json(&query)).await;
    let names: Vec<&str> = found["output"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    let graph = names.iter().find(|name| name.ends_with("read_graph")).unwrap_or_else(|| panic!("{names:?}"));
    let path = format!("/api/v1/tools/{graph}/invoke");
    let called = json_of(http.post(app.url(&path)).bearer_auth(&key).json(&json!({"arguments": {}}))).await;
    assert_eq!(called["status"], "ok", "{called}");
}
