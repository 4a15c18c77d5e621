//! A Toolgate server on a loopback port over a test database, and an HTTP client for it.
// Each test binary uses only part of these helpers.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use engine::admin::{self, LoginPolicy, Password, Role, Username};
use reqwest::header::{HeaderMap, HeaderValue, ORIGIN};
use sqlx::PgPool;
use toolgate::settings::{
    DatabaseSettings, LimitSettings, OAuthSettings, RetentionSettings, ServeSettings, ToolSettings,
};
use toolgate::startup::{Application, Surfaces};

pub const PASSWORD: &str = "a-long-test-password";

pub struct TestApp {
    pub address: SocketAddr,
    /// Keeps cookies, never follows redirects, sends our own Origin on every request.
    pub client: reqwest::Client,
    services: engine::service::Services,
    /// Stops the server (and its database listeners) when the test ends.
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl TestApp {
    pub async fn spawn(pool: PgPool) -> Self {
        Self::spawn_with(pool, 3600).await
    }

    pub async fn spawn_with(pool: PgPool, session_idle_seconds: u64) -> Self {
        Self::spawn_configured(pool, |settings| settings.session_idle_seconds = session_idle_seconds).await
    }

    /// A server with the test settings as `configure` changes them.
    pub async fn spawn_configured(pool: PgPool, configure: impl FnOnce(&mut ServeSettings)) -> Self {
        let site = std::env::temp_dir().join("toolgate-test-site");
        let mut settings = ServeSettings {
            addr: "127.0.0.1:0".parse().unwrap(),
            site_root: Some(site.clone()),
            public_url: None,
            mcp_allowed_origins: vec![],
            trusted_proxies: Default::default(),
            secret_key: None,
            metrics_token: None,
            tools_enabled: true,
            tools: ToolSettings {
                files_root: None,
                files_quota_bytes: 1024 * 1024,
                shell_allow: vec!["sleep".parse().unwrap()],
                stdio_commands: vec![],
                shell_timeout_seconds: 30,
                output_cap_bytes: 1024 * 1024,
                description_cap_bytes: 8 * 1024,
                parallel_calls: true,
            },
            limits: LimitSettings {
                mcp_sessions_per_key: 64,
                batch_calls: 128,
                concurrent_calls_per_tenant: 128,
                concurrent_calls_per_key: 32,
                input_waits_per_key: 16,
                pending_calls_per_tenant: 1000,
                limit_sync_ms: 100,
                private_connections: 1000,
                record_buffer_records: 100_000,
                record_buffer_mb: 64,
                private_idle_seconds: 600,
            },
            retention: RetentionSettings {
                keep_invocations_days: 30,
                keep_pending_calls_days: 7,
                keep_audit_days: 365,
            },
            oauth: OAuthSettings {
                access_token_seconds: 3600,
                refresh_token_days: 30,
                allow_private_client_metadata: true,
                registrations_per_hour: 20,
            },
            session_idle_seconds: 3600,
            database: DatabaseSettings { database_url: None, data_dir: site },
        };
        configure(&mut settings);
        let policy = LoginPolicy {
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            ..LoginPolicy::default()
        };
        // Several servers may share one test database and its owner.
        let owner = admin::create(
            &pool,
            &Username::parse("admin").unwrap(),
            Role::Owner,
            &Password::parse(PASSWORD.into()).unwrap(),
        )
        .await;
        assert!(matches!(owner, Ok(_) | Err(engine::Error::Conflict(_))), "{owner:?}");
        let app = Application::build(&settings, pool, policy, Surfaces::All).await.unwrap();
        let address = app.address();
        let services = app.services();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(app.run_until(async move {
            let _ = stop.await;
        }));
        TestApp {
            address,
            client: client_with_origin(&format!("http://{address}")),
            services,
            _shutdown: shutdown,
        }
    }

    /// The server's services, to act as an administrator or a person would.
    pub fn services(&self) -> engine::service::Services {
        self.services.clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub async fn login(&self, password: &str) -> reqwest::Response {
        self.client
            .post(self.url("/api/login"))
            .form(&[("username", "admin"), ("password", password)])
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }
}

pub fn client_with_origin(origin: &str) -> reqwest::Client {
    let mut headers = HeaderMap::new();
    headers.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .unwrap()
}

/// An upstream's tool list: one tool without parameters.
pub fn one_tool(
    name: &'static str,
    description: &'static str,
) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
    let schema = serde_json::json!({"type": "object"}).as_object().cloned().unwrap();
    let tool = rmcp::model::Tool::new(name, description, std::sync::Arc::new(schema));
    Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
}

/// Waits, if the UTC minute ends within 10 s, for the next one: a test of a per-minute limit
/// then runs within one window.
pub async fn within_one_minute() {
    let second = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 60;
    if second >= 50 {
        tokio::time::sleep(Duration::from_secs(61 - second)).await;
    }
}

/// Sends `request` and reads its answer as JSON.
pub async fn json_of(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// A `tools/call` of `tool` on 2026-07-28 to tenant `acme`, declaring `capabilities`, with `more`
/// params (`arguments`, a retry's `inputResponses` and `requestState`): its status and JSON body.
pub async fn call_2026(
    app: &TestApp,
    key: &str,
    tool: &str,
    capabilities: serde_json::Value,
    more: serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": tool, "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities
        }
    }});
    body["params"].as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
    let answer = reqwest::Client::new()
        .post(app.url("/mcp/acme"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap())
}

/// Creates a tenant as the tests use it: with the built-in shell tools, which a new tenant
/// starts without, allowed.
pub async fn create_tenant(pool: &PgPool, slug: &engine::model::TenantSlug, name: &str) {
    use engine::model::Ceiling;
    use engine::store::Actor;
    use engine::store::tenants::{self, TenantUpdate};
    tenants::create(pool, &Actor::system(), slug, name).await.unwrap();
    let shell = TenantUpdate { ceiling: Some(Ceiling::default()), ..Default::default() };
    tenants::update(pool, &Actor::system(), slug, shell).await.unwrap();
}

/// POSTs `body` as JSON to `path` with the bearer `key`; the answer's status and JSON body.
pub async fn post(
    app: &TestApp,
    key: &str,
    path: &str,
    body: serde_json::Value,
) -> (reqwest::StatusCode, serde_json::Value) {
    let response =
        reqwest::Client::new().post(app.url(path)).bearer_auth(key).json(&body).send().await.unwrap();
    (response.status(), response.json().await.unwrap())
}

/// Creates tenant `acme` and a key of it; returns the key once the gateway accepts it.
pub async fn tenant_key(app: &TestApp, pool: &PgPool) -> String {
    use engine::model::TenantSlug;
    use engine::store::{self, Actor};
    let slug = TenantSlug::parse("acme").unwrap();
    create_tenant(pool, &slug, "Acme").await;
    let key =
        store::keys::create(pool, &Actor::system(), &slug, "test", None, Default::default()).await.unwrap().1;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while reqwest::Client::new()
        .get(app.url("/api/v1/tools"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .status()
        != 200
    {
        assert!(std::time::Instant::now() < deadline, "key not accepted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    key
}

/// An MCP client that counts `notifications/tools/list_changed` (and the prompts' and
/// resources').
#[derive(Clone, Default)]
pub struct ListChangedCounter {
    pub list_changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub prompts_changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub resources_changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The URIs of `notifications/resources/updated`, in order.
    pub resources_updated: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for ListChangedCounter {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::default()
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::service::RoleClient>) {
        self.list_changed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::service::RoleClient>) {
        self.prompts_changed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_resource_list_changed(
        &self,
        _: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        self.resources_changed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        self.resources_updated.lock().unwrap().push(params.uri);
    }
}

/// The URL of the test's own database, for child processes.
pub fn database_url(pool: &PgPool) -> String {
    let base = std::env::var("DATABASE_URL").expect("the tests run with DATABASE_URL");
    let mut url = reqwest::Url::parse(&base).unwrap();
    url.set_path(pool.connect_options().get_database().expect("the test database has a name"));
    url.to_string()
}

/// A `toolgate <command>` process (the real binary) on the test's database.
pub fn start_process(command: &str, pool: &PgPool) -> toolgate_bench::ToolgateProcess {
    start_process_with_env(command, pool, &[])
}

/// The same, with the environment variables `env` besides.
pub fn start_process_with_env(
    command: &str,
    pool: &PgPool,
    env: &[(&str, &str)],
) -> toolgate_bench::ToolgateProcess {
    let data = std::env::temp_dir().join(format!("toolgate-process-{}", uuid::Uuid::new_v4()));
    let bin = env!("CARGO_BIN_EXE_toolgate");
    toolgate_bench::ToolgateProcess::start_with_env(bin, command, &data, Some(&database_url(pool)), env)
        .unwrap()
}

/// A program of the test virtualenv (`TOOLGATE_VENV`, installed by `make test`).
pub fn venv_program(name: &str) -> std::path::PathBuf {
    venv_program_of("", name)
}

/// A program of the virtualenv `<TOOLGATE_VENV>-<variant>` (one per Python package line that
/// cannot share the main one; `""` is the main one), installed by `make test`.
pub fn venv_program_of(variant: &str, name: &str) -> std::path::PathBuf {
    let venv = std::env::var("TOOLGATE_VENV")
        .unwrap_or_else(|_| format!("{}/.cache/toolgate/venv", std::env::var("HOME").unwrap()));
    let venv = if variant.is_empty() { venv } else { format!("{venv}-{variant}") };
    let program = std::path::PathBuf::from(venv).join("bin").join(name);
    assert!(
        program.exists(),
        "{} is missing: `make test` installs it (scripts/install-deps.sh --test)",
        program.display()
    );
    program
}

/// Sets `tenant`'s override of `tool` as the system does, with the catalog's presets rule.
pub async fn set_override(
    pool: &PgPool,
    tenant: &engine::model::TenantSlug,
    tool: uuid::Uuid,
    input: &engine::store::overrides::OverrideInput,
) -> engine::store::Result<engine::store::overrides::Override> {
    let system = engine::store::Actor::system();
    engine::store::overrides::set(
        pool,
        &secret_box(),
        &system,
        tenant,
        tool,
        input,
        engine::catalog::check_presets,
    )
    .await
}

/// An admin API token with every right, as `toolgate admin token create` makes one.
pub async fn admin_token(pool: &PgPool, name: &str) -> String {
    let new = engine::store::tokens::NewToken { name: name.into(), ..Default::default() };
    engine::store::tokens::create(pool, &engine::store::Actor::cli(), &new).await.unwrap().1
}

/// A secret box for registering servers from a test: any key does, as their configurations
/// carry no secrets.
pub fn secret_box() -> engine::secret::SecretBox {
    engine::secret::SecretBox::from_key(&[0; 32]).unwrap()
}

/// Waits until the tenant of `key` lists `tool` over REST at Toolgate's `url`.
pub async fn until_listed(url: &str, key: &str, tool: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed =
            reqwest::Client::new().get(format!("{url}/api/v1/tools")).bearer_auth(key).send().await.unwrap();
        if listed.status() == 200 && listed.text().await.unwrap().contains(tool) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{tool} was never listed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Starts the MCP server `tests/python/<script>` with `python`, its arguments `args` and a free
/// port last; returns it (killed when dropped) once it listens, and the port.
pub async fn python_server(
    python: std::path::PathBuf,
    script: &str,
    args: &[&str],
) -> (tokio::process::Child, u16) {
    let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    script_server(python, &script, args).await
}

/// Starts the MCP server `script` (a path) with `program`, its arguments `args` and a free port
/// last; returns it (killed when dropped) once it listens, and the port.
pub async fn script_server(
    program: std::path::PathBuf,
    script: &str,
    args: &[&str],
) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = tokio::process::Command::new(program)
        .arg(script)
        .args(args)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(std::time::Instant::now() < deadline, "{script} never listened on {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (server, port)
}

/// Puts the built-in `run_command` (recorded once a Toolgate has started) into group `ops`,
/// inactive by default, and turns the meta tool on for `tenant`; returns the tool's id.
pub async fn ops_group_and_meta_tool(pool: &PgPool, tenant: &engine::model::TenantSlug) -> uuid::Uuid {
    use engine::store::{self, Actor};
    let ops = engine::model::Name::parse("ops").unwrap();
    store::groups::write(pool, &Actor::system(), &ops, "Run programs", false, true).await.unwrap();
    let run_command = tool_id(pool, "run_command").await;
    store::groups::set_members(pool, &Actor::system(), &ops, &[run_command]).await.unwrap();
    let meta = store::tenants::TenantUpdate { meta_tool: Some(true), ..Default::default() };
    store::tenants::update(pool, &Actor::system(), tenant, meta).await.unwrap();
    run_command
}

/// The id of the tool its source names `upstream_name`.
pub async fn tool_id(pool: &PgPool, upstream_name: &str) -> uuid::Uuid {
    sqlx::query_scalar("select id from tool where upstream_name = $1")
        .bind(upstream_name)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Serves `handler` over streamable HTTP on loopback and registers it as server `name`.
pub async fn register_upstream<S: rmcp::ServerHandler + Clone>(
    pool: &PgPool,
    name: &str,
    handler: S,
) -> String {
    register_upstream_with(pool, name, handler, Default::default()).await
}

/// The same with `config`; returns the server's URL.
pub async fn register_upstream_with<S: rmcp::ServerHandler + Clone>(
    pool: &PgPool,
    name: &str,
    handler: S,
    config: rmcp::transport::streamable_http_server::StreamableHttpServerConfig,
) -> String {
    let service: rmcp::transport::streamable_http_server::StreamableHttpService<S, _> =
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            move || Ok(handler.clone()),
            rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default().into(),
            config,
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await },
    );
    let server = engine::store::servers::ServerConfig::http(engine::model::Name::parse(name).unwrap(), &url);
    engine::store::servers::create(pool, &secret_box(), &engine::store::Actor::system(), &server)
        .await
        .unwrap();
    url
}
