//! `loadgen`: Toolgate under load, end to end, as LLM applications use it.
//!
//! Starts an rmcp upstream (`echo`, `add`; streamable HTTP, in this process), the Python SDK's
//! high-level server as a second upstream (`echo`), an rmcp upstream with 5,000 tools, a
//! release `toolgate serve` on the given PostgreSQL, configures it through the admin API
//! (config as code, tenant keys), then drives `tools/call` over MCP at several concurrencies,
//! with real rmcp clients and with a raw HTTP/1.1 keep-alive client (Nagle left on, as most
//! non-rmcp clients): each upstream directly and through Toolgate, and a built-in tool.
//! Reports latency percentiles, throughput, Toolgate's CPU time per call and its RSS (idle and
//! loaded), `tools/list` latency for a tenant with 5,000 tools, and the time a configuration
//! change takes to reach a second, `toolgate gateway` process. Prints Markdown tables.
//!
//! Environment: `TOOLGATE_BIN` (the release binary), `DATABASE_URL`; optional
//! `BENCH_SECONDS` (per scenario, default 5) and `TOOLGATE_PYTHON` (a Python with the `mcp`
//! package; without it the Python upstream is left out).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::{CallToolRequestParams, ProtocolVersion, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolgate_bench::ToolgateProcess;
use toolgate_bench::raw::RawMcp;
use toolgate_bench::upstream::{self, MANY, Upstream};

/// The Python SDK's server (`tools/python/mcpserver_upstream.py`) on a free loopback port,
/// killed when dropped, and its URL once it answers.
struct PythonUpstream(std::process::Child);

impl Drop for PythonUpstream {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn start_python_upstream(python: &str) -> Result<(PythonUpstream, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/python/mcpserver_upstream.py");
    let child = Command::new(python).arg(script).arg(port.to_string()).spawn()?;
    let process = PythonUpstream(child);
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..100 {
        if let Ok(c) = client(&url, None).await {
            c.cancel().await.ok();
            return Ok((process, url));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the Python upstream did not start on port {port}")
}

/// Resident memory of a process, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// CPU time a process has used (user + system), in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0 // utime, stime; USER_HZ is 100 on Linux
}

async fn client(url: &str, key: Option<&str>) -> Result<RunningService<RoleClient, ()>> {
    client_in(url, key, ClientLifecycleMode::Initialize).await
}

/// An rmcp client in the protocol era `lifecycle` chooses.
async fn client_in(
    url: &str,
    key: Option<&str>,
    lifecycle: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, ()>> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(key) = key {
        config = config.auth_header(key.to_string());
    }
    Ok(().serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle).await?)
}

/// One kind of call to measure: where, as whom, which tool, and whose CPU to count.
struct Scenario<'a> {
    name: &'static str,
    url: &'a str,
    key: Option<&'a str>,
    tool: &'static str,
    args: Value,
    pid: Option<u32>,
}

/// Every scenario runs with each driver.
const DRIVERS: [Driver; 3] = [Driver::Rmcp, Driver::RmcpStateless, Driver::Raw];

/// How a scenario's clients talk to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    /// rmcp's client (reqwest; sets `TCP_NODELAY`), handshake era: one session.
    Rmcp,
    /// rmcp's client on revision 2026-07-28: no session, every request stands alone.
    RmcpStateless,
    /// One plain HTTP/1.1 keep-alive connection per client, Nagle left on (like wrk, curl and
    /// most HTTP libraries).
    Raw,
}

impl Driver {
    fn as_str(self) -> &'static str {
        match self {
            Driver::Rmcp => "rmcp",
            Driver::RmcpStateless => "rmcp, 2026-07-28",
            Driver::Raw => "raw keep-alive",
        }
    }
}

/// One MCP session of either driver.
enum Client {
    Rmcp(RunningService<RoleClient, ()>),
    Raw(RawMcp),
}

impl Client {
    async fn open(driver: Driver, url: &str, key: Option<&str>) -> Result<Self> {
        Ok(match driver {
            Driver::Rmcp => Client::Rmcp(client(url, key).await?),
            Driver::RmcpStateless => {
                let modern =
                    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
                Client::Rmcp(client_in(url, key, modern).await?)
            }
            Driver::Raw => Client::Raw(RawMcp::connect(url, key).await?),
        })
    }

    /// Calls `tool`; a tool error is an error.
    async fn call(&mut self, tool: &str, arguments: &Value) -> Result<()> {
        let failed = match self {
            Client::Rmcp(c) => {
                let params = CallToolRequestParams::new(tool.to_string())
                    .with_arguments(arguments.as_object().cloned().unwrap_or_default());
                c.call_tool(params).await?.is_error == Some(true)
            }
            Client::Raw(c) => c.call(tool, arguments).await?["isError"] == true,
        };
        if failed {
            bail!("{tool} answered with a tool error");
        }
        Ok(())
    }

    async fn close(self) {
        if let Client::Rmcp(c) = self {
            c.cancel().await.ok();
        }
    }
}

struct Measured {
    calls: usize,
    p50: Duration,
    p99: Duration,
    per_second: f64,
    cpu_per_call_us: Option<f64>,
    rss_mib: Option<f64>,
}

/// `concurrency` clients call `tool` in a loop for `seconds`.
#[allow(clippy::too_many_arguments)]
async fn measure(
    driver: Driver,
    url: &str,
    key: Option<&str>,
    tool: &str,
    arguments: Value,
    concurrency: usize,
    seconds: f64,
    toolgate_pid: Option<u32>,
) -> Result<Measured> {
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        let mut c = Client::open(driver, url, key).await?;
        // Warm up each session.
        for _ in 0..20 {
            c.call(tool, &arguments).await?;
        }
        clients.push(c);
    }
    let cpu_before = toolgate_pid.map(cpu_seconds);
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let mut workers = Vec::new();
    for mut c in clients {
        let (tool, arguments) = (tool.to_string(), arguments.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < until {
                let t = Instant::now();
                c.call(&tool, &arguments).await?;
                latencies.push(t.elapsed());
            }
            c.close().await;
            anyhow::Ok(latencies)
        }));
    }
    let mut rss = toolgate_pid.map(rss_mib);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let (Some(pid), Some(max)) = (toolgate_pid, rss.as_mut()) {
            *max = max.max(rss_mib(pid));
        }
    }
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
    Ok(Measured {
        calls: all.len(),
        p50: at(0.50),
        p99: at(0.99),
        per_second: all.len() as f64 / elapsed,
        cpu_per_call_us: toolgate_pid
            .zip(cpu_before)
            .map(|(pid, before)| (cpu_seconds(pid) - before) * 1e6 / all.len() as f64),
        rss_mib: rss,
    })
}

/// Waits until the tenant's MCP `tools/list` satisfies `done`.
async fn wait_for_tools(endpoint: &str, key: &str, done: impl Fn(&[Tool]) -> bool) {
    loop {
        if let Ok(c) = client(endpoint, Some(key)).await {
            let ready = c.list_all_tools().await.is_ok_and(|tools| done(&tools));
            c.cancel().await.ok();
            if ready {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn admin(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Result<Value> {
    let response =
        http.request(method, format!("{base}{path}")).bearer_auth(token).json(&body).send().await?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("{path}: {status} {body}");
    }
    Ok(body)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> Result<()> {
    let bin = std::env::var("TOOLGATE_BIN").context("TOOLGATE_BIN names the release toolgate binary")?;
    let seconds: f64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let data = std::env::temp_dir().join(format!("toolgate-loadgen-{}", std::process::id()));
    std::fs::create_dir_all(&data)?;

    let upstream = upstream::serve(Upstream::echo_and_add()).await?.url;
    let many = upstream::serve(Upstream::many()).await?.url;
    let python = match std::env::var("TOOLGATE_PYTHON") {
        Ok(python) => Some(start_python_upstream(&python).await?),
        Err(_) => {
            eprintln!("TOOLGATE_PYTHON is not set: the Python SDK upstream is left out");
            None
        }
    };
    let serve = ToolgateProcess::start(&bin, "serve", &data, None)?;
    let token_out = Command::new(&bin)
        .args(["admin", "token", "create", "--name", "loadgen"])
        .env("TOOLGATE_DATA_DIR", &data)
        .output()?;
    let token =
        String::from_utf8(token_out.stdout)?.lines().last().context("no admin token printed")?.to_string();
    let http = reqwest::Client::new();
    let server = |name: &str, url: &str| json!({"name": name, "transport": "streamable_http", "url": url, "tags": ["bench"]});
    let mut servers = vec![server("up", &upstream)];
    if let Some((_, url)) = &python {
        servers.push(server("py", url));
    }
    // The 5,000 tools belong to a tenant of their own, so the other scenarios do not list them.
    servers.push(json!({"name": "many", "transport": "streamable_http", "url": many, "tenant": "big"}));
    let document = json!({
        "servers": servers,
        "tenants": [
            {"slug": "bench", "name": "Benchmark", "enabled_tags": []},
            {"slug": "big", "name": "Five thousand tools", "enabled_tags": []}
        ]
    });
    admin(&http, &serve.url, &token, reqwest::Method::PUT, "/api/admin/v1/config", document).await?;
    let new_key = |tenant: &'static str| {
        let (http, url, token) = (http.clone(), serve.url.clone(), token.clone());
        async move {
            let path = format!("/api/admin/v1/tenants/{tenant}/keys");
            let created =
                admin(&http, &url, &token, reqwest::Method::POST, &path, json!({"name": "loadgen"})).await?;
            anyhow::Ok(created["key"].as_str().context("no key")?.to_string())
        }
    };
    let key = new_key("bench").await?;
    let big_key = new_key("big").await?;
    let endpoint = format!("{}/mcp/bench", serve.url);
    let big_endpoint = format!("{}/mcp/big", serve.url);
    let wanted = if python.is_some() { 2 } else { 1 };
    wait_for_tools(&endpoint, &key, |tools| {
        tools.iter().filter(|t| t.name == "up_echo" || t.name == "py_echo").count() == wanted
    })
    .await;
    wait_for_tools(&big_endpoint, &big_key, |tools| tools.len() >= MANY).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = rss_mib(serve.pid());

    println!(
        "| scenario | client | c | calls | throughput | p50 | p99 | Toolgate CPU/call | Toolgate RSS (max) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let echo = json!({"message": "hello"});
    let direct = |name, url| Scenario { name, url, key: None, tool: "echo", args: echo.clone(), pid: None };
    let through = |name, tool, args| Scenario {
        name,
        url: &endpoint,
        key: Some(&key),
        tool,
        args,
        pid: Some(serve.pid()),
    };
    let mut scenarios = vec![
        direct("Rust upstream directly", &upstream),
        through("Rust upstream through Toolgate", "up_echo", echo.clone()),
    ];
    if let Some((_, url)) = &python {
        scenarios.push(direct("Python upstream directly", url));
        scenarios.push(through("Python upstream through Toolgate", "py_echo", echo.clone()));
    }
    scenarios.push(through("built-in tool through Toolgate", "list_directory", json!({"path": ""})));
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let mut results = Vec::new();
    for Scenario { name, url, key, tool, args, pid } in scenarios {
        for (driver, concurrency) in DRIVERS.iter().flat_map(|d| [(*d, 1), (*d, 16)]) {
            if !format!("{name} {} {concurrency}", driver.as_str()).contains(&only) {
                continue;
            }
            eprintln!("measuring: {name}, {}, c={concurrency}", driver.as_str());
            let m = measure(driver, url, key, tool, args.clone(), concurrency, seconds, pid).await?;
            println!(
                "| {name} | {} | {concurrency} | {} | {:.0}/s | {} | {} | {} | {} |",
                driver.as_str(),
                m.calls,
                m.per_second,
                ms(m.p50),
                ms(m.p99),
                m.cpu_per_call_us.map(|us| format!("{us:.0} µs")).unwrap_or_else(|| "—".into()),
                m.rss_mib.map(|r| format!("{r:.1} MiB")).unwrap_or_else(|| "—".into()),
            );
            results.push((name, driver, concurrency, m));
        }
    }

    // Through Toolgate against the same upstream directly, with the same client.
    println!("\n| upstream | client | c | throughput through / direct | p50 added by Toolgate |");
    println!("| --- | --- | --- | --- | --- |");
    for upstream in ["Rust", "Python"] {
        for (driver, concurrency) in DRIVERS.iter().flat_map(|d| [(*d, 1), (*d, 16)]) {
            let find = |how: &str| {
                let name = format!("{upstream} upstream {how}");
                results
                    .iter()
                    .find(|(n, d, c, _)| *n == name && *d == driver && *c == concurrency)
                    .map(|(.., m)| m)
            };
            if let (Some(direct), Some(through)) = (find("directly"), find("through Toolgate")) {
                println!(
                    "| {upstream} | {} | {concurrency} | {:.2} | {} |",
                    driver.as_str(),
                    through.per_second / direct.per_second,
                    ms(through.p50.saturating_sub(direct.p50))
                );
            }
        }
    }

    // tools/list for a tenant with 5,000 tools, over MCP.
    let lister = client(&big_endpoint, Some(&big_key)).await?;
    let mut listings = Vec::new();
    let mut count = 0;
    for _ in 0..50 {
        let started = Instant::now();
        count = lister.list_all_tools().await?.len();
        listings.push(started.elapsed());
    }
    lister.cancel().await.ok();
    listings.sort();
    println!(
        "\ntools/list over MCP for a tenant with {count} tools (50 listings): p50 {}, p99 {}",
        ms(listings[listings.len() / 2]),
        ms(listings[listings.len() * 99 / 100])
    );
    println!("\nToolgate idle RSS after start-up and configuration: {idle_rss:.1} MiB");

    // Propagation: a change through `serve` reaching a `gateway` replica's MCP tools/list.
    let gateway = ToolgateProcess::start(&bin, "gateway", &data, None)?;
    let replica = client(&format!("{}/mcp/bench", gateway.url), Some(&key)).await?;
    let mut samples = Vec::new();
    for i in 0..20 {
        // Untagged tools are always visible, so the upstream's are tagged `bench`.
        let tags = if i % 2 == 0 { json!(["files"]) } else { json!([]) };
        let want_echo = i % 2 == 1;
        let started = Instant::now();
        admin(
            &http,
            &serve.url,
            &token,
            reqwest::Method::PATCH,
            "/api/admin/v1/tenants/bench",
            json!({"enabled_tags": tags}),
        )
        .await?;
        loop {
            let has_echo = replica.list_all_tools().await?.iter().any(|t| t.name == "up_echo");
            if has_echo == want_echo {
                break;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        samples.push(started.elapsed());
    }
    samples.sort();
    println!(
        "Commit-to-visible in a second process (admin PATCH on serve -> tools/list on gateway, 20 changes): p50 {}, max {}",
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1])
    );
    replica.cancel().await.ok();
    drop(gateway);
    drop(serve);
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}
